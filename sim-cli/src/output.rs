//! The Parquet dataset: its schema (an API: `experiments/README.md`
//! documents every column) and atomic writes.
//!
//! Layout, hive-partitioned by cell so a whole sweep reads as one table:
//!
//! ```text
//! OUT/manifest.json
//! OUT/summary/cell=<id>/part-0.parquet      one row per run
//! OUT/timeseries/cell=<id>/part-0.parquet   one row per run and bucket
//! OUT/pod_groups/cell=<id>/part-0.parquet   one row per run, bucket and pod group
//! OUT/events/cell=<id>/part-0.parquet       timeline actions, breaker transitions, pod restarts
//! OUT/attempts/cell=<id>/part-0.parquet     one row per attempt (opt-in, sampled)
//! OUT/nodes/cell=<id>/part-0.parquet        one row per run, bucket and node (service, edge, dependency)
//! ```
//!
//! Every file is written to a temporary name of its writer's and renamed
//! into place (`dataset.rs`), and a cell's summary is written last: a cell
//! with a summary is complete. The bucket tables, attempts and events are
//! streamed as the run goes, a row group at a time.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use polars::frame::chunk_df_for_writing;
use polars::io::parquet::write::BatchedWriter;
use polars::prelude::*;
use polars_parquet::write::ZstdLevel;
use sim_core::metrics::GaugeBucket;
use sim_core::time::{SimDuration, WallClock};
use sim_models::kpi::{KpiRow, Kpis};
use sim_models::outcome::Reason;
use sim_models::recorder::{
    AttemptRecord, BucketRow, Count, GroupRow, Latency, LatencySummary, Level, NodeRow, RowSink,
    WorldEvent,
};
use yaml_serde::Value;

use crate::columns::{self, Dictionary, Encoded, IndexedKeys};
use crate::dataset::{Writer, create_dir, io_error};
use crate::sweep::{Cell, canonical};

/// The tables of the dataset.
pub const TABLES: [&str; 6] = [
    "summary",
    "timeseries",
    "pod_groups",
    "events",
    "attempts",
    "nodes",
];

/// Bucket rows held as structs before they are turned into columns.
const BUCKET_CHUNK: usize = 256;
/// Event records held before they are turned into columns.
const RECORD_CHUNK: usize = 16_384;
/// Rows of the bucket tables gathered in columns before they are written
/// out as one row group, at first: see [`TableStream::group_rows`].
const BUCKET_ROW_GROUP: usize = 1_024;
/// Rows of the attempts and events tables per row group (attempts are
/// held in their columns until a row group's worth, about 7 MB, has
/// come).
const RECORD_ROW_GROUP: usize = 131_072;

/// What a cell's tables need to turn rows into columns.
#[derive(Clone, Debug)]
pub struct CellContext {
    /// The cell.
    pub cell: Cell,
    /// The experiment's name.
    pub experiment: String,
    /// The swept parameters' columns.
    pub kinds: Vec<(String, ParamKind)>,
    /// Wall-clock labels.
    pub clock: WallClock,
    /// Each pod group's first and last pod.
    pub spans: Vec<(u32, u32)>,
    /// The edges' names, by index (the attempts table's `edge`).
    pub edges: Vec<String>,
    /// Key-value metadata of every file.
    pub meta: Vec<(String, String)>,
    /// How many buckets the run closes: room for every bucket's key
    /// figures is taken once (up to 2^20 buckets), not grown by doubling
    /// (which can leave half of it unused).
    pub buckets: u64,
}

/// A table's temporary file, buffered: polars writes a page's header and
/// body, and a file's footer, in many small writes (a bucket table's
/// averaged 3 bytes each), each a system call without it. The footer's
/// end flushes the buffer, so a failed write is an error of `finish`.
type TableFile = BufWriter<Chunked<fs::File>>;

/// The most a table's file is handed in one write, and its buffer: a few
/// of the small tables' pages.
const WRITE_BUFFER: usize = 16 << 10;

/// A table's file opened for writing, buffered ([`TableFile`]).
fn table_file<W: Write>(file: W) -> BufWriter<Chunked<W>> {
    BufWriter::with_capacity(WRITE_BUFFER, Chunked(file))
}

/// Hands its writer at most [`WRITE_BUFFER`] bytes a write. On the
/// 2-core machine the benchmarks run on, a virtual machine that hands
/// free memory back to its host, writes of whole 1 MB pages cost the
/// kernel several times what the same bytes cost in small writes (most
/// likely the page cache's folios are sized by the write, and large ones
/// come from memory the host backs afresh as it is touched; measured,
/// the cause not proven). Written 16 KiB at a
/// time, the storm's attempts table (83 MB) took 0.22 s of system CPU
/// instead of 0.59 s; 64 KiB at a time, about 0.25 s ("Tables written
/// through a buffer" in the benchmarks' README).
struct Chunked<W>(W);

impl<W: Write> Write for Chunked<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(&buf[..buf.len().min(WRITE_BUFFER)])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// One table of one cell, streamed to its temporary file in row groups
/// and moved into place by [`TableStream::finish`].
struct TableStream {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<BatchedWriter<TableFile>>,
    /// Rows gathered for the next row group.
    pending: Option<DataFrame>,
    /// Rows of the first row group (see [`TableStream::group_rows`]).
    row_group: usize,
    /// Rows written in row groups so far.
    written: usize,
    /// Compresses the pages of the row groups written column by column.
    compressor: columns::PageCompressor,
}

impl TableStream {
    fn new(out: &Path, table: &str, id: &str, writer: &Writer, row_group: usize) -> Self {
        let path = table_path(out, table, id);
        let tmp = writer.temp_path(&path);
        TableStream {
            path,
            tmp,
            writer: None,
            pending: None,
            row_group,
            written: 0,
            compressor: columns::PageCompressor::default(),
        }
    }

    /// Appends `df`'s rows, writing a row group whenever enough gathered.
    fn write(&mut self, df: DataFrame, meta: &[(String, String)]) -> Result<(), String> {
        match &mut self.pending {
            Some(p) => {
                p.vstack_mut_owned(df)
                    .map_err(|e| format!("cannot write {}: {e}", self.tmp.display()))?;
            }
            None => self.pending = Some(df),
        }
        let due = self.group_rows();
        if self.pending.as_ref().is_some_and(|p| p.height() >= due) {
            self.flush(meta)?;
        }
        Ok(())
    }

    /// Rows of the next row group: `row_group` at first, then 16 × the
    /// square root of the rows written so far, up to 16 × `row_group`.
    ///
    /// A Parquet writer keeps every column chunk's metadata until the
    /// footer (about 2 kB each in memory; the timeseries has 155 columns,
    /// so 1,024-row groups kept 0.6 kB a bucket, as much as the run's key
    /// figures), while the rows gathered cost about 8 bytes a value until
    /// their group is written. Growing the groups with the square root of
    /// the rows balances the two: both grow as that root, not with the
    /// run's length, and a table of up to 4,096 rows is laid out as with
    /// fixed groups. A simulated week of 1 s buckets peaked at 214 MB
    /// (645 MB with fixed 1,024-row groups; the rest is mostly the key
    /// figures' 128 bytes a bucket) and ran in a third of the time.
    fn group_rows(&self) -> usize {
        (16 * self.written.isqrt()).clamp(self.row_group, 16 * self.row_group)
    }

    /// Writes the gathered rows as one row group.
    fn flush(&mut self, meta: &[(String, String)]) -> Result<(), String> {
        let Some(mut df) = self.pending.take() else {
            return Ok(());
        };
        self.written += df.height();
        df.rechunk_mut();
        self.write_group(&df, meta)
    }

    /// Appends `df` as a row group (creating the file with `df`'s schema
    /// at the first one).
    fn write_group(&mut self, df: &DataFrame, meta: &[(String, String)]) -> Result<(), String> {
        let tmp = self.tmp.display().to_string();
        self.open(df.schema(), meta)?;
        let w = self.writer.as_mut().expect("opened above");
        columns::write_frame(w, df, &mut self.compressor)
            .map_err(|e| format!("cannot write {tmp}: {e}"))
    }

    /// Appends `rows` rows of `columns`, encoded as each says, as one row
    /// group (creating the file with their schema at the first one).
    fn write_encoded(
        &mut self,
        rows: usize,
        columns: Vec<Encoded>,
        meta: &[(String, String)],
    ) -> Result<(), String> {
        let tmp = self.tmp.display().to_string();
        self.open(&columns::schema(&columns), meta)?;
        let w = self.writer.as_mut().expect("opened above");
        columns::write_row_group(w, rows, columns, &mut self.compressor)
            .map_err(|e| format!("cannot write {tmp}: {e}"))
    }

    /// The table's writer, its file created with `schema` if not yet.
    fn open(
        &mut self,
        schema: &Schema,
        meta: &[(String, String)],
    ) -> Result<&mut BatchedWriter<TableFile>, String> {
        if self.writer.is_none() {
            let dir = self.path.parent().ok_or("no parent directory")?;
            create_dir(dir)?;
            let file = fs::File::create(&self.tmp).map_err(|e| io_error("create", &self.tmp, e))?;
            let file = table_file(file);
            let w = parquet_writer(file, meta)
                .batched(schema)
                .map_err(|e| format!("cannot write {}: {e}", self.tmp.display()))?;
            self.writer = Some(w);
        }
        Ok(self.writer.as_mut().expect("created above"))
    }

    /// Ends the file and moves it into place; `empty` gives the table's
    /// schema when no row was ever written.
    fn finish(
        mut self,
        empty: impl FnOnce() -> PolarsResult<DataFrame>,
        meta: &[(String, String)],
        writer: &Writer,
    ) -> Result<(), String> {
        self.flush(meta)?;
        if self.writer.is_none() {
            let df = empty().map_err(|e| e.to_string())?;
            self.write_group(&df, meta)?;
        }
        let w = self.writer.take().expect("written above");
        w.finish()
            .map_err(|e| format!("cannot write {}: {e}", self.tmp.display()))?;
        drop(w);
        writer.commit(&self.tmp, &self.path)
    }

    /// Removes the temporary file of a cell that failed.
    fn abandon(self) {}
}

impl Drop for TableStream {
    /// A table dropped before [`TableStream::finish`] moved it into place
    /// (its run failed) leaves no temporary file behind.
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// One run's output: the bucket tables, attempts and events streamed to
/// Parquet as they come (only a chunk of rows is ever held), and the few
/// figures per bucket the summary needs.
pub struct CellSink<'w> {
    ctx: CellContext,
    writer: &'w Writer,
    /// The key figures' view of every bucket.
    pub kpi_rows: Vec<KpiRow>,
    rows: Vec<BucketRow>,
    attempts: AttemptRows,
    events: Vec<WorldEvent>,
    timeseries: TableStream,
    pod_groups: TableStream,
    attempts_table: Option<TableStream>,
    events_table: TableStream,
    nodes: Vec<(NodeRow, u64)>,
    node_names: Vec<String>,
    nodes_table: TableStream,
    /// Users' requests offered in the last bucket closed (the nodes'
    /// rows of a bucket follow its bucket row).
    last_offered: u64,
    sample: f64,
    error: Option<String>,
}

impl<'w> CellSink<'w> {
    /// A sink writing `ctx`'s tables under `out`; the attempts table only
    /// when `sample` is above 0.
    pub fn new(out: &Path, ctx: CellContext, sample: f64, writer: &'w Writer) -> Self {
        let id = ctx.cell.id.clone();
        // Up to the default `limits.max_buckets`: a raised limit may
        // admit more buckets than could ever be reserved at once.
        let buckets = usize::try_from(ctx.buckets.min(1 << 20)).unwrap_or(0);
        CellSink {
            timeseries: TableStream::new(out, "timeseries", &id, writer, BUCKET_ROW_GROUP),
            pod_groups: TableStream::new(out, "pod_groups", &id, writer, BUCKET_ROW_GROUP),
            attempts_table: (sample > 0.0)
                .then(|| TableStream::new(out, "attempts", &id, writer, RECORD_ROW_GROUP)),
            events_table: TableStream::new(out, "events", &id, writer, RECORD_ROW_GROUP),
            nodes_table: TableStream::new(out, "nodes", &id, writer, BUCKET_ROW_GROUP),
            nodes: Vec::new(),
            node_names: Vec::new(),
            last_offered: 0,
            ctx,
            writer,
            kpi_rows: Vec::with_capacity(buckets),
            rows: Vec::with_capacity(BUCKET_CHUNK),
            attempts: AttemptRows::default(),
            events: Vec::new(),
            sample,
            error: None,
        }
    }

    fn keep(&mut self, r: Result<(), String>) {
        if let Err(e) = r
            && self.error.is_none()
        {
            self.error = Some(e);
        }
    }

    fn flush_rows(&mut self) {
        if self.rows.is_empty() || self.error.is_some() {
            self.rows.clear();
            return;
        }
        let c = &self.ctx;
        let r = timeseries_frame(&c.cell, &c.experiment, &c.kinds, &self.rows, &c.clock)
            .map_err(|e| e.to_string())
            .and_then(|df| self.timeseries.write(df, &c.meta))
            .and_then(|()| {
                pod_groups_frame(
                    &c.cell,
                    &c.experiment,
                    &c.kinds,
                    &self.rows,
                    &c.clock,
                    &c.spans,
                )
                .map_err(|e| e.to_string())
            })
            .and_then(|df| self.pod_groups.write(df, &c.meta));
        self.rows.clear();
        self.keep(r);
    }

    fn flush_attempts(&mut self) {
        let Some(table) = self.attempts_table.as_mut() else {
            return;
        };
        if self.attempts.is_empty() || self.error.is_some() {
            self.attempts = AttemptRows::default();
            return;
        }
        let c = &self.ctx;
        let rows = self.attempts.len();
        let full = self.attempts.take();
        let columns = attempt_columns(&c.cell, &c.experiment, full, &c.edges);
        let r = table.write_encoded(rows, columns, &c.meta);
        self.keep(r);
    }

    fn flush_nodes(&mut self) {
        if self.nodes.is_empty() || self.error.is_some() {
            self.nodes.clear();
            return;
        }
        let c = &self.ctx;
        let r = nodes_frame(
            &c.cell,
            &c.experiment,
            &c.kinds,
            &self.nodes,
            &self.node_names,
            &c.clock,
        )
        .map_err(|e| e.to_string())
        .and_then(|df| self.nodes_table.write(df, &c.meta));
        self.nodes.clear();
        self.keep(r);
    }

    fn flush_events(&mut self) {
        if self.events.is_empty() || self.error.is_some() {
            self.events.clear();
            return;
        }
        let c = &self.ctx;
        let r = events_frame(&c.cell, &c.experiment, &self.events, &c.clock)
            .map_err(|e| e.to_string())
            .and_then(|df| self.events_table.write(df, &c.meta));
        self.events.clear();
        self.keep(r);
    }

    /// Writes what is buffered and moves every table of the cell into
    /// place (the summary is the caller's, last). On an error, removes the
    /// cell's temporary files and names the path that failed.
    pub fn finish(mut self) -> Result<Vec<KpiRow>, String> {
        self.flush_rows();
        self.flush_attempts();
        self.flush_events();
        self.flush_nodes();
        let CellSink {
            ctx: c,
            writer,
            kpi_rows,
            timeseries,
            pod_groups,
            attempts_table,
            events_table,
            nodes_table,
            node_names,
            error,
            ..
        } = self;
        if let Some(e) = error {
            timeseries.abandon();
            pod_groups.abandon();
            events_table.abandon();
            nodes_table.abandon();
            if let Some(a) = attempts_table {
                a.abandon();
            }
            return Err(e);
        }
        let (cell, name, kinds, clock) = (&c.cell, c.experiment.as_str(), &c.kinds, &c.clock);
        timeseries.finish(
            || timeseries_frame(cell, name, kinds, &[], clock),
            &c.meta,
            writer,
        )?;
        pod_groups.finish(
            || pod_groups_frame(cell, name, kinds, &[], clock, &c.spans),
            &c.meta,
            writer,
        )?;
        events_table.finish(|| events_frame(cell, name, &[], clock), &c.meta, writer)?;
        nodes_table.finish(
            || nodes_frame(cell, name, kinds, &[], &node_names, clock),
            &c.meta,
            writer,
        )?;
        if let Some(a) = attempts_table {
            a.finish(
                || {
                    let empty = attempt_columns(cell, name, AttemptRows::default(), &c.edges);
                    Ok(DataFrame::empty_with_schema(&columns::schema(&empty)))
                },
                &c.meta,
                writer,
            )?;
        }
        Ok(kpi_rows)
    }
}

impl RowSink for CellSink<'_> {
    fn push(&mut self, row: BucketRow) {
        self.last_offered = row.count(Count::Offered);
        self.kpi_rows.push(KpiRow::of(&row));
        self.rows.push(row);
        if self.rows.len() >= BUCKET_CHUNK {
            self.flush_rows();
        }
    }
    fn attempt_sample(&self) -> f64 {
        self.sample
    }
    fn attempt(&mut self, record: AttemptRecord) {
        self.attempts.push(&record);
        if self.attempts.len() >= RECORD_ROW_GROUP {
            self.flush_attempts();
        }
    }
    fn event(&mut self, event: WorldEvent) {
        self.events.push(event);
        if self.events.len() >= RECORD_CHUNK {
            self.flush_events();
        }
    }
    fn wants_nodes(&self) -> bool {
        true
    }
    fn node(&mut self, row: NodeRow, names: &[String]) {
        if self.node_names.is_empty() {
            self.node_names = names.to_vec();
        }
        self.nodes.push((row, self.last_offered));
        if self.nodes.len() >= BUCKET_CHUNK {
            self.flush_nodes();
        }
    }
}

/// The `nodes` table: one row per bucket and node (services, edges,
/// dependencies; `experiments/README.md` documents the columns).
/// `per_request` is the node's own count (a service's requests, an edge's
/// attempts, a dependency's arrivals) per user request offered in the
/// bucket: the amplification at that tier.
pub fn nodes_frame(
    cell: &Cell,
    experiment: &str,
    kinds: &[(String, ParamKind)],
    rows: &[(NodeRow, u64)],
    names: &[String],
    clock: &WallClock,
) -> PolarsResult<DataFrame> {
    use sim_models::recorder::NodeKind;
    let n = rows.len();
    let mut cols = id_columns(cell, experiment, n);
    cols.extend(param_columns(cell, kinds, n));
    let name_of = |r: &NodeRow| names.get(r.slot as usize).cloned().unwrap_or_default();
    let u = |f: fn(&NodeRow) -> u64| rows.iter().map(|(r, _)| f(r)).collect::<Vec<u64>>();
    let col = |name: &str, v: Vec<u64>| Column::new(name.into(), v);
    cols.push(col("bucket", u(|r| r.bucket)));
    cols.push(Column::new(
        "t_s".into(),
        rows.iter()
            .map(|(r, _)| r.start.as_secs_f64())
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "label".into(),
        rows.iter()
            .map(|(r, _)| clock.label(r.start))
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "kind".into(),
        rows.iter().map(|(r, _)| r.kind.name()).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "node".into(),
        rows.iter().map(|(r, _)| name_of(r)).collect::<Vec<_>>(),
    ));
    cols.push(col("offered", u(|r| r.offered)));
    cols.push(col("attempts", u(|r| r.attempts)));
    cols.push(col("retries", u(|r| r.retries)));
    cols.push(col("answered", u(|r| r.answered)));
    cols.push(col("failed", u(|r| r.failed)));
    cols.push(col("timeouts", u(|r| r.timeouts)));
    cols.push(col("calls_retried", u(|r| r.calls_retried)));
    cols.push(col("calls_rescued", u(|r| r.calls_rescued)));
    cols.push(Column::new(
        "per_request".into(),
        rows.iter()
            .map(|(r, users)| {
                let own = match r.kind {
                    NodeKind::Edge => r.attempts,
                    _ => r.offered,
                };
                (*users > 0).then(|| own as f64 / *users as f64)
            })
            .collect::<Vec<_>>(),
    ));
    cols.push(col("latency_count", u(|r| r.latency.count)));
    for (name, q) in [
        (
            "latency_p50_s",
            (|l| l.p50) as fn(&LatencySummary) -> Option<u64>,
        ),
        ("latency_p99_s", |l| l.p99),
    ] {
        cols.push(Column::new(
            name.into(),
            rows.iter()
                .map(|(r, _)| secs(q(&r.latency)))
                .collect::<Vec<_>>(),
        ));
    }
    cols.push(Column::new(
        "latency_mean_s".into(),
        rows.iter()
            .map(|(r, _)| r.latency.mean.map(|m| m / 1e9))
            .collect::<Vec<_>>(),
    ));
    for (name, level) in [
        ("busy", (|r| &r.busy) as fn(&NodeRow) -> &GaugeBucket),
        ("waiting", |r| &r.waiting),
        ("bulkhead_waiting", |r| &r.bulkhead_waiting),
        ("ejected", |r| &r.ejected),
        ("bulkhead_limit", |r| &r.bulkhead_limit),
        ("replicas", |r| &r.replicas),
    ] {
        cols.push(Column::new(
            format!("{name}_mean").as_str().into(),
            rows.iter().map(|(r, _)| level(r).mean).collect::<Vec<_>>(),
        ));
        cols.push(Column::new(
            format!("{name}_max").as_str().into(),
            rows.iter().map(|(r, _)| level(r).max).collect::<Vec<_>>(),
        ));
    }
    DataFrame::new(n, cols)
}

/// How a swept parameter becomes a column: numbers and durations as
/// floats (durations in seconds), anything else as text.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// Numbers.
    Number,
    /// Durations, written in seconds.
    Seconds,
    /// Anything else, in canonical text.
    Text,
}

impl ParamKind {
    /// The kind fitting every value of an axis.
    pub fn of(values: &[Value]) -> ParamKind {
        if values.iter().all(|v| v.as_f64().is_some()) {
            ParamKind::Number
        } else if values
            .iter()
            .all(|v| v.as_str().is_some_and(|s| s.parse::<SimDuration>().is_ok()))
        {
            ParamKind::Seconds
        } else {
            ParamKind::Text
        }
    }
}

/// The swept parameters' columns for `n` rows of one cell.
fn param_columns(cell: &Cell, kinds: &[(String, ParamKind)], n: usize) -> Vec<Column> {
    kinds
        .iter()
        .map(|(path, kind)| {
            let v = cell
                .params
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, v)| v.clone())
                .unwrap_or(Value::Null);
            match kind {
                ParamKind::Number => Column::new(path.as_str().into(), vec![v.as_f64(); n]),
                ParamKind::Seconds => {
                    let s = v
                        .as_str()
                        .and_then(|s| s.parse::<SimDuration>().ok())
                        .map(|d| d.as_secs_f64());
                    Column::new(path.as_str().into(), vec![s; n])
                }
                ParamKind::Text => Column::new(path.as_str().into(), vec![canonical(&v); n]),
            }
        })
        .collect()
}

/// The columns that name the run, the same on every row: scalar columns,
/// so a million attempt rows do not allocate a million copies of each.
fn id_columns(cell: &Cell, experiment: &str, n: usize) -> Vec<Column> {
    let text = |name: &str, v: String| {
        Column::new_scalar(
            name.into(),
            Scalar::new(DataType::String, AnyValue::StringOwned(v.into())),
            n,
        )
    };
    vec![
        text("run_id", cell.id.clone()),
        text("variant", cell.name()),
        text("experiment", experiment.to_string()),
        Column::new_scalar(
            "seed".into(),
            Scalar::new(DataType::UInt64, AnyValue::UInt64(cell.seed)),
            n,
        ),
        Column::new_scalar(
            "replication".into(),
            Scalar::new(DataType::UInt32, AnyValue::UInt32(cell.replication)),
            n,
        ),
    ]
}

fn secs(ns: Option<u64>) -> Option<f64> {
    ns.map(|v| v as f64 / 1e9)
}

/// The summary columns that hold a run's incident figures, in the order
/// `stormsim replay` prints them and the report tabulates them: p99 and
/// error rate at their trailing-window peak and just before the first
/// trigger, the peak attempt rate, calls in flight and pool wait, the
/// storm's onset times, the peak backlog, 429s, retry share, retries per
/// request and the share of retried calls the retries rescued.
pub const FIGURE_COLUMNS: [&str; 14] = [
    "peak_e2e_p99_s",
    "baseline_e2e_p99_s",
    "peak_error_rate",
    "baseline_error_rate",
    "peak_attempts_per_s",
    "peak_calls_in_flight",
    "peak_pool_wait_p99_s",
    "storm_visible_s",
    "pools_exhausted_s",
    "peak_backlog",
    "rate_limited",
    "retry_share",
    "retries_per_request",
    "rescue_rate",
];

/// The `summary` table: one row.
pub fn summary_frame(
    cell: &Cell,
    experiment: &str,
    kinds: &[(String, ParamKind)],
    k: &Kpis,
    events: u64,
) -> PolarsResult<DataFrame> {
    let mut cols = id_columns(cell, experiment, 1);
    cols.extend(param_columns(cell, kinds, 1));
    let f = |name: &str, v: f64| Column::new(name.into(), vec![v]);
    let o = |name: &str, v: Option<f64>| Column::new(name.into(), vec![v]);
    cols.extend([
        Column::new("offered".into(), vec![k.offered]),
        Column::new("finished".into(), vec![k.finished]),
        f("success_rate", k.success_rate),
        f("degraded_rate", k.degraded_rate),
        f("error_rate", k.error_rate),
        f("peak_error_rate", k.peak_error_rate),
        o("baseline_error_rate", k.baseline_error_rate),
        f("amplification_mean", k.amplification_mean),
        f("amplification_peak", k.amplification_peak),
        f("fan_out", k.fan_out),
        f("peak_attempts_per_s", k.peak_attempts_per_s),
        o("e2e_p99_s", k.e2e_p99_s),
        o("peak_e2e_p99_s", k.peak_e2e_p99_s),
        o("baseline_e2e_p99_s", k.baseline_e2e_p99_s),
        f("peak_calls_in_flight", k.peak_calls_in_flight),
        o("peak_pool_wait_p99_s", k.peak_pool_wait_p99_s),
        o("storm_visible_s", k.storm_visible_s),
        o("pools_exhausted_s", k.pools_exhausted_s),
        f("wasted_fraction", k.wasted_fraction),
        f("retry_share", k.retry_share),
        o("trigger_end_s", k.trigger_end_s),
        o("time_to_recover_s", k.time_to_recover_s),
        o("recover_goodput_s", k.recover_goodput_s),
        o("recover_backlog_s", k.recover_backlog_s),
        o("recover_p99_s", k.recover_p99_s),
        Column::new(
            "recovery_held_by".into(),
            vec![k.recovery_held_by.map(String::from)],
        ),
        Column::new("recovery_judged".into(), vec![k.recovery_judged]),
        Column::new("metastable".into(), vec![k.metastable]),
        f("peak_backlog", k.peak_backlog),
        Column::new("rate_limited".into(), vec![k.rate_limited]),
        Column::new("pod_restarts".into(), vec![k.pod_restarts]),
        Column::new("probes_failed".into(), vec![k.probes_failed]),
        f("retries_per_request", k.retries_per_request),
        o("rescue_rate", k.rescue_rate),
        Column::new("unrescued_edge".into(), vec![k.unrescued_edge.clone()]),
        o("unrescued_edge_rescue_rate", k.unrescued_edge_rescue_rate),
        f("slo_violation_s", k.slo_violation_s),
        f("slo_error_rate", k.slo_error_rate),
        o("slo_p99_s", k.slo_p99_s),
        o("cost_total", k.cost_total),
        o("cost_wasted", k.cost_wasted),
        o("cost_per_request", k.cost_per_request),
        Column::new("events".into(), vec![events]),
    ]);
    DataFrame::new(1, cols)
}

/// The `timeseries` table: one row per bucket.
pub fn timeseries_frame(
    cell: &Cell,
    experiment: &str,
    kinds: &[(String, ParamKind)],
    rows: &[BucketRow],
    clock: &WallClock,
) -> PolarsResult<DataFrame> {
    let n = rows.len();
    let mut cols = id_columns(cell, experiment, n);
    cols.extend(param_columns(cell, kinds, n));
    cols.push(Column::new(
        "bucket".into(),
        rows.iter().map(|r| r.index).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "t_s".into(),
        rows.iter()
            .map(|r| r.start.as_secs_f64())
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "label".into(),
        rows.iter()
            .map(|r| clock.label(r.start))
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "span_s".into(),
        rows.iter()
            .map(|r| r.span.as_secs_f64())
            .collect::<Vec<_>>(),
    ));
    for &c in Count::ALL {
        cols.push(Column::new(
            c.name().into(),
            rows.iter().map(|r| r.count(c)).collect::<Vec<_>>(),
        ));
    }
    cols.push(Column::new(
        "attempts".into(),
        rows.iter().map(|r| r.attempts()).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "amplification".into(),
        rows.iter()
            .map(|r| {
                (r.count(Count::Offered) > 0)
                    .then(|| r.attempts() as f64 / r.count(Count::Offered) as f64)
            })
            .collect::<Vec<_>>(),
    ));
    // What the attempts that ended in the bucket cost, and of it the
    // attempts that served no answer (null when no cost is configured).
    cols.push(Column::new(
        "cost_total".into(),
        rows.iter()
            .map(|r| r.cost.map(|c| c.total))
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "cost_wasted".into(),
        rows.iter()
            .map(|r| r.cost.map(|c| c.wasted))
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "finished".into(),
        rows.iter().map(|r| r.finished()).collect::<Vec<_>>(),
    ));
    for reason in Reason::ALL {
        cols.push(Column::new(
            format!("outcome_{}", reason.name()).as_str().into(),
            rows.iter().map(|r| r.outcome(reason)).collect::<Vec<_>>(),
        ));
    }
    cols.push(Column::new(
        "goodput_per_s".into(),
        rows.iter().map(|r| r.goodput()).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "error_rate".into(),
        rows.iter()
            .map(|r| {
                let errors: u64 = Reason::ALL
                    .iter()
                    .filter(|x| x.is_error())
                    .map(|&x| r.outcome(x))
                    .sum();
                (r.finished() > 0).then(|| errors as f64 / r.finished() as f64)
            })
            .collect::<Vec<_>>(),
    ));
    for l in Level::ALL {
        let name = l.name();
        cols.push(Column::new(
            format!("{name}_mean").as_str().into(),
            rows.iter().map(|r| r.level(l).mean).collect::<Vec<_>>(),
        ));
        cols.push(Column::new(
            format!("{name}_min").as_str().into(),
            rows.iter().map(|r| r.level(l).min).collect::<Vec<_>>(),
        ));
        cols.push(Column::new(
            format!("{name}_max").as_str().into(),
            rows.iter().map(|r| r.level(l).max).collect::<Vec<_>>(),
        ));
        cols.push(Column::new(
            format!("{name}_last").as_str().into(),
            rows.iter().map(|r| r.level(l).last).collect::<Vec<_>>(),
        ));
    }
    for lat in Latency::ALL {
        let name = lat.name();
        let get = |f: fn(&LatencySummary) -> Option<u64>| {
            rows.iter()
                .map(|r| secs(f(&r.latency(lat))))
                .collect::<Vec<_>>()
        };
        cols.push(Column::new(
            format!("{name}_count").as_str().into(),
            rows.iter()
                .map(|r| r.latency(lat).count)
                .collect::<Vec<_>>(),
        ));
        cols.push(Column::new(
            format!("{name}_mean_s").as_str().into(),
            rows.iter()
                .map(|r| r.latency(lat).mean.map(|m| m / 1e9))
                .collect::<Vec<_>>(),
        ));
        cols.push(Column::new(
            format!("{name}_p50_s").as_str().into(),
            get(|s| s.p50),
        ));
        cols.push(Column::new(
            format!("{name}_p90_s").as_str().into(),
            get(|s| s.p90),
        ));
        cols.push(Column::new(
            format!("{name}_p99_s").as_str().into(),
            get(|s| s.p99),
        ));
        cols.push(Column::new(
            format!("{name}_p999_s").as_str().into(),
            get(|s| s.p999),
        ));
        cols.push(Column::new(
            format!("{name}_max_s").as_str().into(),
            get(|s| s.max),
        ));
    }
    type Pick = fn(&LatencySummary) -> Option<u64>;
    let window: [(&str, Pick); 2] = [("p50", |s| s.p50), ("p99", |s| s.p99)];
    for (name, f) in window {
        cols.push(Column::new(
            format!("e2e_window_{name}_s").as_str().into(),
            rows.iter()
                .map(|r| secs(f(&r.e2e_window)))
                .collect::<Vec<_>>(),
        ));
    }
    DataFrame::new(n, cols)
}

/// The `pod_groups` table: one row per bucket and group of consecutive
/// pods (`spans` gives each group's first and last pod).
pub fn pod_groups_frame(
    cell: &Cell,
    experiment: &str,
    kinds: &[(String, ParamKind)],
    rows: &[BucketRow],
    clock: &WallClock,
    spans: &[(u32, u32)],
) -> PolarsResult<DataFrame> {
    let flat: Vec<(&BucketRow, usize)> = rows
        .iter()
        .flat_map(|r| (0..r.groups.len()).map(move |g| (r, g)))
        .collect();
    let n = flat.len();
    let mut cols = id_columns(cell, experiment, n);
    cols.extend(param_columns(cell, kinds, n));
    let col = |name: &str, v: Vec<_>| Column::new(name.into(), v);
    cols.push(col(
        "bucket",
        flat.iter().map(|(r, _)| r.index).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "t_s".into(),
        flat.iter()
            .map(|(r, _)| r.start.as_secs_f64())
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "label".into(),
        flat.iter()
            .map(|(r, _)| clock.label(r.start))
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "group".into(),
        flat.iter().map(|&(_, g)| g as u32).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "pods".into(),
        flat.iter()
            .map(|&(_, g)| match spans.get(g) {
                Some((a, b)) if a == b => a.to_string(),
                Some((a, b)) => format!("{a}-{b}"),
                None => String::new(),
            })
            .collect::<Vec<_>>(),
    ));
    for (name, level) in [
        (
            "pool_in_use",
            (|g| &g.in_use) as fn(&GroupRow) -> &GaugeBucket,
        ),
        ("pool_waiters", |g| &g.waiters),
    ] {
        cols.push(Column::new(
            format!("{name}_mean").as_str().into(),
            flat.iter()
                .map(|&(r, g)| level(&r.groups[g]).mean)
                .collect::<Vec<_>>(),
        ));
        cols.push(Column::new(
            format!("{name}_max").as_str().into(),
            flat.iter()
                .map(|&(r, g)| level(&r.groups[g]).max)
                .collect::<Vec<_>>(),
        ));
    }
    cols.push(Column::new(
        "pool_wait_count".into(),
        flat.iter()
            .map(|&(r, g)| r.groups[g].wait.count)
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "pool_wait_p99_s".into(),
        flat.iter()
            .map(|&(r, g)| secs(r.groups[g].wait.p99))
            .collect::<Vec<_>>(),
    ));
    DataFrame::new(n, cols)
}

/// The `events` table.
pub fn events_frame(
    cell: &Cell,
    experiment: &str,
    events: &[WorldEvent],
    clock: &WallClock,
) -> PolarsResult<DataFrame> {
    let n = events.len();
    let mut cols = id_columns(cell, experiment, n);
    cols.push(Column::new(
        "t_s".into(),
        events
            .iter()
            .map(|e| e.at.as_secs_f64())
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "label".into(),
        events.iter().map(|e| clock.label(e.at)).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "kind".into(),
        events
            .iter()
            .map(|e| e.kind.to_string())
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "detail".into(),
        events.iter().map(|e| e.detail.clone()).collect::<Vec<_>>(),
    ));
    DataFrame::new(n, cols)
}

/// The attempts of the open row group, held column by column: each
/// attempt's fields go to their columns as it ends. Held as records
/// instead, a row group was 11 MB of 88-byte records written once and
/// then read again for each column, every read strided over them.
#[derive(Default)]
pub struct AttemptRows {
    request: Vec<u64>,
    attempt: Vec<u32>,
    hedge: Vec<bool>,
    pod: Vec<u32>,
    start: Vec<f64>,
    end: Vec<f64>,
    pool_wait: Vec<f64>,
    outcome: Dictionary<'static>,
    late: Vec<bool>,
    /// Each row's price, from the first priced attempt on: empty while
    /// none has been (most worlds price none, and 16 bytes of absence
    /// written per attempt took the storm's caches for nothing).
    cost: Vec<Option<f64>>,
    /// The edges by index, named when the row group is written.
    edge: Vec<u32>,
}

impl AttemptRows {
    /// Appends `a`'s row.
    #[inline]
    pub fn push(&mut self, a: &AttemptRecord) {
        let row = self.len();
        if a.cost.is_some() || !self.cost.is_empty() {
            self.cost.resize(row, None);
            self.cost.push(a.cost);
        }
        self.request.push(a.request);
        self.attempt.push(a.attempt);
        self.hedge.push(a.hedge);
        self.pod.push(a.pod);
        self.start.push(a.start.as_secs_f64());
        self.end.push(a.end.as_secs_f64());
        self.pool_wait.push(a.pool_wait.as_secs_f64());
        self.outcome.push(a.outcome);
        self.late.push(a.late);
        self.edge.push(a.edge);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.request.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.request.is_empty()
    }

    /// The rows held, leaving room for a row group in their place when
    /// they were one (in a storm, a full row group is followed by
    /// another; the last, partial one by none).
    fn take(&mut self) -> AttemptRows {
        let rows = if self.len() >= RECORD_ROW_GROUP {
            RECORD_ROW_GROUP
        } else {
            0
        };
        std::mem::replace(
            self,
            AttemptRows {
                request: Vec::with_capacity(rows),
                attempt: Vec::with_capacity(rows),
                hedge: Vec::with_capacity(rows),
                pod: Vec::with_capacity(rows),
                start: Vec::with_capacity(rows),
                end: Vec::with_capacity(rows),
                pool_wait: Vec::with_capacity(rows),
                outcome: Dictionary::with_capacity(rows),
                late: Vec::with_capacity(rows),
                cost: Vec::new(),
                edge: Vec::with_capacity(rows),
            },
        )
    }
}

/// The `attempts` table's columns for `rows`, each with the encoding its
/// values call for (`columns.rs`: a million rows a minute in a storm, so
/// nothing is guessed per row).
pub fn attempt_columns(
    cell: &Cell,
    experiment: &str,
    rows: AttemptRows,
    edges: &[String],
) -> Vec<Encoded> {
    let n = rows.len();
    let cost = match rows.cost {
        c if c.is_empty() => Encoded::missing_floats("cost", n),
        mut c => {
            c.resize(n, None);
            Encoded::optional_floats("cost", &c)
        }
    };
    let mut edge_names = Dictionary::with_capacity(n);
    let mut edge_keys = IndexedKeys::default();
    for &e in &rows.edge {
        edge_names.push_indexed(e as usize, edges, &mut edge_keys);
    }
    vec![
        Encoded::constant_text("run_id", &cell.id, n),
        Encoded::constant_text("variant", &cell.name(), n),
        Encoded::constant_text("experiment", experiment, n),
        Encoded::constant("seed", DataType::UInt64, cell.seed, n),
        Encoded::constant("replication", DataType::UInt32, cell.replication, n),
        Encoded::rising("request", DataType::UInt64, rows.request),
        Encoded::ints("attempt", rows.attempt),
        Encoded::bools("hedge", &rows.hedge),
        Encoded::ints("pod", rows.pod),
        Encoded::floats("start_s", rows.start),
        Encoded::floats("end_s", rows.end),
        Encoded::floats("pool_wait_s", rows.pool_wait),
        Encoded::text("outcome", rows.outcome),
        Encoded::bools("late", &rows.late),
        cost,
        Encoded::text("edge", edge_names),
    ]
}

/// The file of `table` for cell `id` under `out`.
pub fn table_path(out: &Path, table: &str, id: &str) -> PathBuf {
    out.join(table)
        .join(format!("cell={id}"))
        .join("part-0.parquet")
}

/// The Parquet writer every table uses: zstd at level 1 (the attempts
/// table's byte-stream split pages at −1: `columns::SPLIT_LEVEL`), one
/// thread, the run's key-value metadata.
fn parquet_writer<W: Write>(file: W, meta: &[(String, String)]) -> ParquetWriter<W> {
    // Level 1 rather than zstd's default 3: on the attempts table it
    // compresses within 1.3 % of the size in two thirds of zstd's
    // instructions.
    let zstd = ZstdLevel::try_new(1).expect("1 is a zstd level");
    ParquetWriter::new(file)
        // One thread per write: parallelism comes from running cells side
        // by side, and a `--threads 1` sweep really uses one core.
        .set_parallel(false)
        .with_compression(ParquetCompression::Zstd(Some(zstd)))
        .with_key_value_metadata(Some(KeyValueMetadata::from_static(meta.to_vec())))
}

/// Frames of fewer rows than this are written uncompressed: zstd saves
/// next to nothing on a page of a few values, and a reader makes a
/// decoder for every compressed page it reads (the report of a
/// 10,000-cell sweep spent half its time making decoders for the
/// one-row summaries' 46 columns).
const COMPRESSED_FROM_ROWS: usize = 1024;

/// Writes `df` to `path` atomically (a temporary file of `writer`'s, then
/// a rename), with `meta` as key-value metadata: zstd compressed, unless
/// it has fewer than [`COMPRESSED_FROM_ROWS`] rows (a summary's one).
/// The file polars' `ParquetWriter::finish` writes (its row groups, its
/// encodings), its frame written by [`columns::write_frame`], which
/// spares a summary of one row polars' estimate of each column's
/// distinct values.
pub fn write_parquet(
    path: &Path,
    df: &mut DataFrame,
    meta: &[(String, String)],
    writer: &Writer,
) -> Result<(), String> {
    /// polars' row group size when none is set (`ParquetWriter::finish`).
    const ROW_GROUP: usize = 512 * 512;
    writer.write_with(path, |f, tmp| {
        let failed = |e: PolarsError| format!("cannot write {}: {e}", tmp.display());
        let w = parquet_writer(table_file(f), meta);
        let w = if df.height() < COMPRESSED_FROM_ROWS {
            w.with_compression(ParquetCompression::Uncompressed)
        } else {
            w
        };
        let df = chunk_df_for_writing(df, ROW_GROUP).map_err(failed)?;
        let mut w = w.batched(df.schema()).map_err(failed)?;
        columns::write_frame(&mut w, &df, &mut columns::PageCompressor::default())
            .map_err(failed)?;
        w.finish().map(|_| ()).map_err(failed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer is flushed by the file's end, so a write the disk
    /// refuses is an error there, not lost when the buffer is dropped.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_refused_write_is_an_error_of_the_buffered_table() {
        let df = DataFrame::new(3, vec![Column::new("x".into(), &[1u64, 2, 3])]).unwrap();
        let full = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut w = parquet_writer(table_file(full), &[])
            .batched(df.schema())
            .unwrap();
        w.write_batch(&df).expect("held in the buffer");
        let err = w.finish().expect_err("the disk is full");
        assert!(err.to_string().contains("No space left"), "{err}");
    }

    /// A frame of a few rows (a summary's one) is written uncompressed, a
    /// larger one with zstd; both read back the same.
    #[test]
    fn small_frames_are_written_uncompressed() {
        use polars_parquet::parquet::compression::Compression;
        let dir = std::env::temp_dir().join(format!("stormsim-small-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let writer = Writer::register(&dir).unwrap();
        for (rows, codec) in [
            (1, Compression::Uncompressed),
            (COMPRESSED_FROM_ROWS - 1, Compression::Uncompressed),
            (COMPRESSED_FROM_ROWS, Compression::Zstd),
        ] {
            let values: Vec<f64> = (0..rows).map(|i| i as f64 / 7.0).collect();
            let mut df = DataFrame::new(rows, vec![Column::new("x".into(), &values)]).unwrap();
            let path = dir.join(format!("{rows}.parquet"));
            write_parquet(&path, &mut df, &[], &writer).unwrap();
            let meta =
                polars_parquet::read::read_metadata(&mut fs::File::open(&path).unwrap()).unwrap();
            let c = &meta.row_groups[0].parquet_columns()[0];
            assert_eq!(c.compression(), codec, "{rows} rows");
            let back = ParquetReader::new(fs::File::open(&path).unwrap())
                .finish()
                .unwrap();
            assert!(back.equals(&df), "{rows} rows");
        }
        drop(writer);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// `write_parquet` writes the file polars' own `finish` writes, byte
    /// for byte: a summary's one row, and frames of several chunks,
    /// uncompressed and compressed, with the run's metadata.
    #[test]
    fn write_parquet_writes_polars_own_file() {
        let dir = std::env::temp_dir().join(format!("stormsim-polars-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let writer = Writer::register(&dir).unwrap();
        let meta = vec![("run".to_string(), "c0ffee".to_string())];
        let frame = |rows: usize, base: usize| {
            let n = |i: usize| (base + i) as f64 / 7.0;
            DataFrame::new(
                rows,
                vec![
                    Column::new("name".into(), vec!["steady"; rows]),
                    Column::new(
                        "id".into(),
                        (0..rows)
                            .map(|i| format!("r{}", base + i))
                            .collect::<Vec<_>>(),
                    ),
                    Column::new("x".into(), (0..rows).map(n).collect::<Vec<_>>()),
                    Column::new(
                        "p99".into(),
                        (0..rows)
                            .map(|i| (i % 3 != 0).then(|| n(i)))
                            .collect::<Vec<_>>(),
                    ),
                    Column::new(
                        "count".into(),
                        (0..rows as u64).map(|i| i % 5).collect::<Vec<_>>(),
                    ),
                    Column::new(
                        "up".into(),
                        (0..rows).map(|i| i % 2 == 0).collect::<Vec<_>>(),
                    ),
                ],
            )
            .unwrap()
        };
        for (chunks, rows) in [(1, 1), (3, 100), (3, 700), (2, COMPRESSED_FROM_ROWS)] {
            let mut df = frame(rows, 0);
            for c in 1..chunks {
                df.vstack_mut(&frame(rows, c * rows)).unwrap();
            }
            let ours = dir.join(format!("{chunks}x{rows}.parquet"));
            write_parquet(&ours, &mut df.clone(), &meta, &writer).unwrap();
            let mut polars = Vec::new();
            let mut file = parquet_writer(&mut polars, &meta);
            if df.height() < COMPRESSED_FROM_ROWS {
                file = file.with_compression(ParquetCompression::Uncompressed);
            }
            file.finish(&mut df).unwrap();
            assert!(
                fs::read(&ours).unwrap() == polars,
                "{chunks} chunks of {rows} rows"
            );
        }
        drop(writer);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Every byte reaches the file, in writes of at most `WRITE_BUFFER`.
    #[test]
    fn a_large_write_reaches_the_file_in_chunks() {
        struct Writes(Vec<usize>, Vec<u8>);
        impl Write for Writes {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.push(buf.len());
                self.1.extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let page: Vec<u8> = (0..5 * WRITE_BUFFER + 7).map(|i| i as u8).collect();
        let mut f = table_file(Writes(Vec::new(), Vec::new()));
        f.write_all(b"PAR1").unwrap();
        f.write_all(&page).unwrap();
        f.flush().unwrap();
        let Writes(sizes, bytes) = f.into_inner().map_err(|_| ()).unwrap().0;
        assert_eq!(bytes[..4], *b"PAR1");
        assert_eq!(bytes[4..], page[..]);
        assert!(sizes.iter().all(|&n| n <= WRITE_BUFFER), "{sizes:?}");
        assert!(sizes.len() <= 7, "{sizes:?}");
    }
}
