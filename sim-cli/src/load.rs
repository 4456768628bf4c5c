//! Loading experiment files: YAML in, a checked experiment out, or errors
//! that name the file, line, column and field path, say what was found and
//! what is allowed.
//!
//! Order of work, each step before anything runs:
//! 1. size limit, then each file of the `extends` chain parsed on its own
//!    against the full schema (types, units, unknown fields), so errors
//!    point into the file that has them;
//! 2. files merged, child over base (mappings merge key by key; anything
//!    else is replaced);
//! 3. `client.preset` expanded: the preset's policy, with the fields
//!    written beside it on top;
//! 4. the result checked as a whole (`WorldConfig::validate`), each problem
//!    located in the file that sets it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sim_models::config::{
    ClientConfig, ClockConfig, GatewayConfig, LoadConfig, NetworkConfig, ServiceConfig,
    UpstreamConfig, WorldConfig, WorldLimits,
};
use sim_models::kpi::{Objective, RecoveryConfig};
use sim_models::policy::presets;
use sim_models::timeline::TimelineEntry;
use yaml_serde::{Mapping, Value};

use crate::locate::{Index, Location, locate};
use crate::sweep::SweepSpec;

/// Parses YAML text into `T`, enums written as single-key maps
/// (`latency: { log_normal: { median: 50ms, p99: 200ms } }`).
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, yaml_serde::Error> {
    yaml_serde::with::singleton_map_recursive::deserialize(yaml_serde::Deserializer::from_str(text))
}

/// Converts a YAML value into `T`, enums as single-key maps.
pub fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, yaml_serde::Error> {
    // Values carry no positions, so record the field path on the way down.
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(v, &mut track);
    yaml_serde::with::singleton_map_recursive::deserialize(de).map_err(|e: yaml_serde::Error| {
        let path = track.path().to_string();
        if path.is_empty() || path == "?" {
            e
        } else {
            <yaml_serde::Error as serde::de::Error>::custom(format!("{path}: {e}"))
        }
    })
}

/// Converts `t` into a YAML value, enums as single-key maps.
pub fn to_value<T: Serialize>(t: &T) -> Value {
    yaml_serde::with::singleton_map_recursive::serialize(t, yaml_serde::value::Serializer)
        .expect("config types serialise")
}

/// Writes `t` as YAML text, enums as single-key maps.
pub fn to_string<T: Serialize>(t: &T) -> Result<String, yaml_serde::Error> {
    let mut out = Vec::new();
    yaml_serde::with::singleton_map_recursive::serialize(
        t,
        &mut yaml_serde::Serializer::new(&mut out),
    )?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Limits checked before any work, each with the flag that raises it.
#[derive(Clone, Copy, Debug)]
pub struct InputLimits {
    /// Largest experiment file, bytes (`--max-file-size`).
    pub max_file_bytes: u64,
    /// Most cells a sweep may have, replications included (`--max-cells`).
    pub max_cells: u64,
    /// Most requests one run may simulate (`--max-requests`).
    pub max_requests: f64,
}

impl InputLimits {
    /// Checks the limits themselves (they come from flags).
    pub fn validate(&self) -> Result<(), String> {
        if !(self.max_requests.is_finite() && self.max_requests > 0.0) {
            return Err(format!(
                "--max-requests must be a number above 0, found {}",
                self.max_requests
            ));
        }
        if self.max_cells == 0 {
            return Err("--max-cells must be at least 1".into());
        }
        Ok(())
    }
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            max_file_bytes: 10 * 1024 * 1024,
            max_cells: 100_000,
            max_requests: 1e9,
        }
    }
}

/// What the outputs should contain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSpec {
    /// Fraction of requests whose attempts are written to the `attempts`
    /// table (default 0: no table).
    pub attempts: f64,
    /// How recovery and metastability are judged in the summary.
    pub recovery: RecoveryConfig,
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            attempts: 0.0,
            recovery: RecoveryConfig::default(),
        }
    }
}

/// One experiment file as written: the world's sections, all optional,
/// plus the experiment's own.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read for its checks; the merged Value carries the data
struct Doc {
    name: Option<String>,
    description: Option<String>,
    extends: Option<String>,
    sweep: Option<SweepSpec>,
    outputs: Option<OutputSpec>,
    objective: Option<Objective>,
    calibrate: Option<crate::calibrate::CalibrateSpec>,
    boundary: Option<crate::boundary::BoundarySpec>,
    seed: Option<u64>,
    clock: Option<ClockConfig>,
    load: Option<LoadConfig>,
    gateway: Option<GatewayConfig>,
    service: Option<ServiceConfig>,
    network: Option<NetworkConfig>,
    upstream: Option<UpstreamConfig>,
    client: Option<ClientConfig>,
    timeline: Option<Vec<TimelineEntry>>,
    limits: Option<WorldLimits>,
    services: Option<std::collections::BTreeMap<String, ServiceConfig>>,
    dependencies: Option<std::collections::BTreeMap<String, UpstreamConfig>>,
    entry: Option<String>,
}

/// Top-level keys that are the experiment's, not the world's.
const EXPERIMENT_KEYS: [&str; 8] = [
    "name",
    "description",
    "extends",
    "sweep",
    "outputs",
    "objective",
    "calibrate",
    "boundary",
];

/// An input problem, located.
#[derive(Clone, Debug, PartialEq)]
pub struct InputError {
    /// The file.
    pub file: PathBuf,
    /// Line and column, when known.
    pub at: Option<(usize, usize)>,
    /// The field path, when known.
    pub path: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some((l, c)) = self.at {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": ")?;
        if let Some(p) = &self.path {
            write!(f, "{p}: ")?;
        }
        write!(f, "{}", self.message)
    }
}

/// All the problems found in an input.
#[derive(Clone, Debug, PartialEq)]
pub struct InputErrors(pub Vec<InputError>);

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InputErrors {}

impl InputErrors {
    fn one(
        file: &Path,
        at: Option<(usize, usize)>,
        path: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        InputErrors(vec![InputError {
            file: file.to_path_buf(),
            at,
            path,
            message: message.into(),
        }])
    }
}

/// A loaded file of the `extends` chain.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Its path.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// Where each field path is written in it.
    pub index: Index,
}

/// A checked experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The file given.
    pub path: PathBuf,
    /// The `extends` chain, the given file first.
    pub sources: Vec<SourceFile>,
    /// Its name (the file stem when not given).
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// The merged world as written (presets not yet expanded), as a YAML
    /// value: sweep cells are variations of it.
    pub world_value: Value,
    /// The merged world, typed and validated.
    pub world: WorldConfig,
    /// The sweep, if any.
    pub sweep: Option<SweepSpec>,
    /// The outputs wanted.
    pub outputs: OutputSpec,
    /// What good means: SLO targets and the ranking's order.
    pub objective: Option<Objective>,
    /// What is allowed but probably not meant, located.
    pub warnings: Vec<InputError>,
    /// The fit to make (`stormsim calibrate`).
    pub calibrate: Option<crate::calibrate::CalibrateSpec>,
    /// The edge to find (`stormsim boundary`).
    pub boundary: Option<crate::boundary::BoundarySpec>,
    /// The whole merged document (the `extends` chain flattened, the
    /// experiment's own keys included): what a calibrated file rewrites.
    pub document: Value,
}

impl Experiment {
    /// Whether a file of the chain writes the field at `path` (a default
    /// filled in is not written).
    pub fn writes(&self, path: &str) -> bool {
        self.sources
            .iter()
            .any(|src| matches!(src.index.find(path), Some((_, true))))
    }

    /// Locates a field path in the chain: the first file that writes it
    /// (or its deepest ancestor).
    pub fn error_at(&self, path: &str, message: impl Into<String>) -> InputError {
        let message = message.into();
        for src in &self.sources {
            if let Some((loc, true)) = src.index.find(path) {
                return InputError {
                    file: src.path.clone(),
                    at: Some((loc.line, loc.column)),
                    path: Some(path.to_string()),
                    message,
                };
            }
        }
        let (file, at) = match self.sources.first() {
            Some(src) => (
                src.path.clone(),
                src.index.find(path).map(|(l, _)| (l.line, l.column)),
            ),
            None => (self.path.clone(), None),
        };
        InputError {
            file,
            at,
            path: Some(path.to_string()),
            message,
        }
    }
}

/// Turns a yaml_serde error into an input error: the location it carries,
/// the field path at the front of its message, and a "did you mean" for an
/// unknown field.
fn yaml_error(file: &Path, text_of_file: &str, e: &yaml_serde::Error) -> InputError {
    let mut text = e.to_string();
    if let Some(i) = text.rfind(" at line ") {
        text.truncate(i);
    }
    let (path, mut message) = match text.split_once(": ") {
        Some((p, m)) if !p.contains(' ') && !p.is_empty() && p != "." => {
            (Some(p.to_string()), m.to_string())
        }
        _ => (None, text.clone()),
    };
    message = plain_message(&message);
    if let Some(rest) = message.strip_prefix("invalid type: integer `")
        && let Some((n, _)) = rest.split_once("` as u128")
    {
        message = format!(
            "the number {n} is too large: whole numbers go up to {} here",
            u64::MAX
        );
    }
    // A number past f64's range is read as text by the YAML parser.
    if let Some(rest) = message.strip_prefix("invalid type: string \"")
        && let Some((n, _)) = rest.split_once("\", expected a number")
        && n.parse::<f64>().is_ok_and(f64::is_infinite)
    {
        message = format!("the number {n} is out of range: numbers go up to about 1.8e308");
    }
    // The YAML parser stops 128 levels down, to keep its stack.
    if message == "recursion limit exceeded" {
        message = "nested more than 128 levels deep: an experiment needs a few".into();
    }
    let mut at = e.location().map(|l| (l.line(), l.column()));
    let mut path = path;
    // The parser places a duplicate key at its mapping: point at the
    // second one instead, name its field, and say where the first is.
    if let Some(key) = message
        .strip_prefix("duplicate entry with key \"")
        .and_then(|k| k.strip_suffix('"'))
        && let Some((line, column)) = at
        && let Some([first, second]) =
            crate::locate::duplicate_key(text_of_file, Location { line, column }, key)
    {
        at = Some((second.line, second.column));
        path = Some(match path {
            Some(p) => format!("{p}.{key}"),
            None => key.to_string(),
        });
        message = format!(
            "given twice in one mapping (first at line {}, column {}): write it once",
            first.line, first.column
        );
    }
    if message.contains("more than one document") {
        // Where the second document starts: a `---` after some content.
        let mut content = false;
        for (i, line) in text_of_file.lines().enumerate() {
            let t = line.trim_end();
            if (t == "---" || t.starts_with("--- ")) && content {
                at = Some((i + 1, 1));
                break;
            }
            content |= !t.trim_start().is_empty() && !t.trim_start().starts_with('#') && t != "---";
        }
        message = "a second YAML document starts here (`---`): an experiment is one document; put each experiment in its own file, or vary one with a sweep".into();
    }
    if let Some((line, _)) = at
        && text_of_file
            .lines()
            .nth(line - 1)
            .is_some_and(|l| l.contains('\t'))
    {
        message.push_str(" (a tab: YAML indents with spaces)");
    }
    InputError {
        file: file.to_path_buf(),
        at,
        path,
        message,
    }
}

/// The expected kind of a mismatched value in the file's words, not
/// Rust's: "expected u32" becomes "expected a whole number from 0 to
/// 4294967295", "expected struct ClockConfig" a mapping of fields.
fn plain_expected(message: &str) -> String {
    let Some((head, expected)) = message.rsplit_once(", expected ") else {
        return message.to_string();
    };
    let whole = |max: u64| format!("a whole number from 0 to {max}");
    let plain = match expected {
        "u8" => whole(u8::MAX.into()),
        "u16" => whole(u16::MAX.into()),
        "u32" => whole(u32::MAX.into()),
        "u64" | "usize" => whole(u64::MAX),
        "i32" | "i64" | "isize" => "a whole number".to_string(),
        "f32" | "f64" => "a number".to_string(),
        "a boolean" => "true or false".to_string(),
        "a sequence" => "a list (`[a, b]`, or `- ` items)".to_string(),
        "a map" => "a mapping (`{ name: value, ... }`)".to_string(),
        e if e.starts_with("struct ") => "a mapping of its fields (`{ name: value, ... }`)".into(),
        e if e.starts_with("enum ") => match enum_variants(&e["enum ".len()..]) {
            Some(names) => format!("one of `{}`", names.join("`, `")),
            None => "one of its named kinds (`kind: { ... }` or a name)".into(),
        },
        _ => return message.to_string(),
    };
    format!("{head}, expected {plain}")
}

/// For "unknown field `x`, expected one of `a`, `b`" (or "unknown
/// variant"), the closest name.
fn did_you_mean(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))?;
    let (found, expected) = rest.split_once('`')?;
    closest(found, expected.split('`').skip(1).step_by(2)).map(String::from)
}

/// The candidate closest to `found` by edit distance, if any is close;
/// among equals, the one sharing the longest start (`max_retry` is
/// `max_retries`, not `fast_retry`).
pub fn closest<'a>(found: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let common = |cand: &str| {
        found
            .chars()
            .zip(cand.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    candidates
        .map(|cand| (distance(found, cand), std::cmp::Reverse(common(cand)), cand))
        .filter(|(d, _, cand)| *d <= 2.max(cand.len() / 3))
        .min()
        .map(|(_, _, c)| c)
}

/// A serde message in the file's words, with a "did you mean" for a
/// misspelt name.
fn plain_message(message: &str) -> String {
    // serde names an untagged enum's type, not what its forms look like.
    let untagged = "data did not match any variant of untagged enum ";
    if let Some(name) = message.strip_prefix(untagged) {
        let forms = match name.trim() {
            "SeedsSpec" => "a count of seeds (`5`) or a list of them (`[1, 2, 3]`)",
            _ => return message.to_string(),
        };
        return format!("expected {forms}");
    }
    let mut message = plain_expected(message);
    if let Some(hint) = did_you_mean(&message) {
        message.push_str(&format!("; did you mean `{hint}`?"));
    }
    message
}

/// Levenshtein distance.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Reads one file of the chain, within the size limit: counted on the
/// bytes read, so a device or a growing file cannot slip past it. A UTF-8
/// byte order mark (which YAML allows) is dropped.
fn read(path: &Path, limits: &InputLimits) -> Result<String, InputErrors> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        InputErrors::one(path, None, None, format!("cannot read the file: {e}"))
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(limits.max_file_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(InputErrors::one(
            path,
            None,
            None,
            format!(
                "the file is over the limit of {} bytes (raise it with --max-file-size)",
                limits.max_file_bytes
            ),
        ));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let column = at
            - bytes[..at]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
            + 1;
        InputErrors::one(
            path,
            Some((line, column)),
            None,
            "the file is not UTF-8 text (an experiment is YAML written in UTF-8)",
        )
    })
}

/// Most files an `extends` chain may have.
const MAX_CHAIN: usize = 8;
/// Most nodes a parsed file may have (an alias bomb that slips under the
/// YAML parser's own repetition limit stops here).
const MAX_NODES: usize = 1_000_000;

fn count_nodes(v: &Value) -> usize {
    match v {
        Value::Sequence(s) => 1 + s.iter().map(count_nodes).sum::<usize>(),
        Value::Mapping(m) => {
            1 + m
                .iter()
                .map(|(k, v)| count_nodes(k) + count_nodes(v))
                .sum::<usize>()
        }
        Value::Tagged(t) => 1 + count_nodes(&t.value),
        _ => 1,
    }
}

/// Parses and checks one file alone; returns its value.
fn parse_one(path: &Path, text: &str) -> Result<(Doc, Value), InputErrors> {
    let value: Value =
        yaml_serde::from_str(text).map_err(|e| InputErrors(vec![yaml_error(path, text, &e)]))?;
    if count_nodes(&value) > MAX_NODES {
        return Err(InputErrors::one(
            path,
            None,
            None,
            format!("the document expands to more than {MAX_NODES} nodes (aliases?)"),
        ));
    }
    if let Some(at) = first_tag(&value, "") {
        let loc = Index::build(text)
            .find(&at)
            .map(|(l, _)| (l.line, l.column));
        return Err(InputErrors::one(
            path,
            loc,
            (!at.is_empty()).then_some(at),
            "YAML tags (`!name`) are not part of the experiment format: write the plain value",
        ));
    }
    for key in ["name", "description", "extends"] {
        if let Some(v) = value.get(key)
            && !v.is_string()
        {
            let loc = Index::build(text)
                .find(key)
                .map(|(l, _)| (l.line, l.column));
            return Err(InputErrors::one(
                path,
                loc,
                Some(key.to_string()),
                format!("must be a string, found {}", kind(v)),
            ));
        }
    }
    let value = match value {
        Value::Null => Value::Mapping(Mapping::new()),
        Value::Mapping(_) => value,
        other => {
            return Err(InputErrors::one(
                path,
                Some((1, 1)),
                None,
                format!(
                    "an experiment is a mapping of sections (clock, load, ...), found {}",
                    kind(&other)
                ),
            ));
        }
    };
    let doc: Doc = from_str(text).map_err(|e| InputErrors(vec![yaml_error(path, text, &e)]))?;
    Ok((doc, value))
}

/// The field path of the first tagged value (`!tag x`) in `v`.
fn first_tag(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::Tagged(_) => Some(path.to_string()),
        Value::Sequence(s) => s
            .iter()
            .enumerate()
            .find_map(|(i, x)| first_tag(x, &format!("{path}[{i}]"))),
        Value::Mapping(m) => m.iter().find_map(|(k, x)| {
            if matches!(k, Value::Tagged(_)) {
                return Some(path.to_string());
            }
            let key = k.as_str().map_or_else(|| format!("{k:?}"), String::from);
            let p = if path.is_empty() {
                key
            } else {
                format!("{path}.{key}")
            };
            first_tag(x, &p)
        }),
        _ => None,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The names of the kinds a value can be written as: distributions, load
/// laws, pushback, backoff, jitter, breakers, budgets and throttles
/// (`{ log_normal: {...} }`, `{ exponential: {...} }`, ...), read from
/// those enums' own serde definitions, so a new variant is known at once.
fn kinds() -> &'static [&'static str] {
    use sim_models::config::{LoadLaw, PushbackConfig};
    use sim_models::policy::{backoff, breaker, budget, throttle};
    static KINDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KINDS.get_or_init(|| {
        let mut all: Vec<&'static str> = [
            variants::<sim_core::dist::DistSpec>(),
            variants::<LoadLaw>(),
            variants::<PushbackConfig>(),
            variants::<backoff::Backoff>(),
            variants::<backoff::Jitter>(),
            variants::<breaker::BreakerSpec>(),
            variants::<budget::BudgetSpec>(),
            variants::<throttle::ThrottleSpec>(),
        ]
        .concat();
        all.sort_unstable();
        all.dedup();
        all
    })
}

/// The names a configuration enum is written as, by its Rust name (the
/// `X` of serde's "expected enum X"), for a value of the wrong type.
fn enum_variants(rust_name: &str) -> Option<&'static [&'static str]> {
    use sim_models::client::{RetryAfterMode, Scope, TimeoutStart};
    use sim_models::config::{LoadLaw, PushbackConfig};
    use sim_models::dependency::{AppliesAt, OverflowAction};
    use sim_models::policy::{backoff, breaker, budget, throttle};
    type Names = (&'static str, &'static [&'static str]);
    fn names<T: serde::de::DeserializeOwned>() -> Names {
        let full = std::any::type_name::<T>();
        (full.rsplit("::").next().unwrap_or(full), variants::<T>())
    }
    static ALL: std::sync::OnceLock<Vec<Names>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        vec![
            names::<sim_core::dist::DistSpec>(),
            names::<LoadLaw>(),
            names::<PushbackConfig>(),
            // Read through its private spec enum: serde names that one.
            ("BackoffSpec", variants::<backoff::Backoff>()),
            names::<backoff::Jitter>(),
            names::<breaker::BreakerSpec>(),
            names::<budget::BudgetSpec>(),
            names::<throttle::ThrottleSpec>(),
            names::<RetryAfterMode>(),
            names::<Scope>(),
            names::<TimeoutStart>(),
            names::<AppliesAt>(),
            names::<OverflowAction>(),
            names::<crate::sweep::Mode>(),
            names::<crate::sweep::Seeds>(),
        ]
    })
    .iter()
    .find(|(name, names)| *name == rust_name && !names.is_empty())
    .map(|(_, names)| *names)
}

/// The variant names serde reads for the enum `T` (its renames applied),
/// asked of its `Deserialize` implementation itself.
fn variants<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    #[derive(Debug)]
    struct Stop;
    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("variant names taken")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    /// A deserializer that only answers "which variants?".
    struct Names<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Names<'_> {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = variants;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map struct identifier ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Names(&mut names));
    names
}

/// The kind a mapping of one key names, if it is one.
fn kind_of(m: &Mapping) -> Option<&str> {
    let (k, _) = m.iter().next().filter(|_| m.len() == 1)?;
    k.as_str().filter(|k| kinds().contains(k))
}

/// Merges `over` onto `base`: mappings key by key, anything else replaced.
/// A value of another kind replaces the base's whole (a log-normal delay
/// over a constant one is a log-normal delay, not both).
pub fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Mapping(b), Value::Mapping(o))
            if kind_of(b).is_some_and(|kb| kind_of(&o).is_some_and(|ko| ko != kb)) =>
        {
            *b = o;
        }
        (Value::Mapping(b), Value::Mapping(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Loads, merges, expands and checks an experiment file.
pub fn load(path: &Path, limits: &InputLimits) -> Result<Experiment, InputErrors> {
    limits
        .validate()
        .map_err(|m| InputErrors::one(path, None, None, m))?;
    let mut sources = Vec::new();
    let mut values = Vec::new();
    let mut docs = Vec::new();
    let mut next = Some(path.to_path_buf());
    while let Some(p) = next.take() {
        if sources.len() >= MAX_CHAIN {
            return Err(InputErrors::one(
                &p,
                None,
                Some("extends".into()),
                format!("more than {MAX_CHAIN} files extend each other"),
            ));
        }
        if let Some(first) = sources.iter().position(|s: &SourceFile| s.path == p) {
            // Told at the file whose `extends` closes the cycle, with the
            // cycle's files in order.
            let last = sources.last().unwrap_or(&sources[first]);
            let chain: Vec<String> = sources[first..]
                .iter()
                .map(|s| s.path.display().to_string())
                .chain([p.display().to_string()])
                .collect();
            return Err(InputErrors::one(
                &last.path,
                last.index.find("extends").map(|(l, _)| (l.line, l.column)),
                Some("extends".into()),
                format!("files extend each other in a cycle: {}", chain.join(" -> ")),
            ));
        }
        let text = read(&p, limits)?;
        let (doc, value) = parse_one(&p, &text)?;
        if let Some(base) = &doc.extends {
            let resolved = p.parent().unwrap_or(Path::new(".")).join(base);
            if !resolved.is_file() {
                let at = locate(&text, "extends").map(|l| (l.line, l.column));
                return Err(InputErrors::one(
                    &p,
                    at,
                    Some("extends".into()),
                    format!(
                        "{base:?} is not a file (paths are relative to {})",
                        p.display()
                    ),
                ));
            }
            next = Some(resolved);
        }
        let index = Index::build(&text);
        sources.push(SourceFile {
            path: p,
            text,
            index,
        });
        values.push(value);
        docs.push(doc);
    }
    // Merge: the root base first, each child over it. A file that names a
    // `client.preset` starts its client over: the preset on top of what it
    // inherits, the file's own fields on top of the preset.
    let mut merged = Value::Mapping(Mapping::new());
    let mut replaced: Vec<(String, String)> = Vec::new();
    let files: Vec<PathBuf> = sources.iter().rev().map(|s| s.path.clone()).collect();
    for (i, v) in values.into_iter().rev().enumerate() {
        if i > 0
            && let Some(name) = v
                .get("client")
                .and_then(|c| c.get("preset"))
                .and_then(Value::as_str)
        {
            let dropped = drop_inherited_client(&mut merged, name, &v);
            if !dropped.is_empty() {
                replaced.push((
                    "client.preset".to_string(),
                    format!(
                        "preset {name:?} replaces client fields inherited from {}: {} (the preset applies on top of what a file inherits, the file's own fields on top of the preset; write them in this file to keep them)",
                        files[..i].iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
                        dropped.join(", ")
                    ),
                ));
            }
        }
        merge(&mut merged, v);
    }
    let document = merged.clone();
    let take = |m: &mut Value, key: &str| match m {
        Value::Mapping(map) => map.remove(key),
        _ => None,
    };
    let name = take(&mut merged, "name").and_then(|v| v.as_str().map(String::from));
    let description = take(&mut merged, "description").and_then(|v| v.as_str().map(String::from));
    take(&mut merged, "extends");
    let sweep_value = take(&mut merged, "sweep");
    let outputs_value = take(&mut merged, "outputs");
    let objective_value = take(&mut merged, "objective");
    let calibrate_value = take(&mut merged, "calibrate");
    let boundary_value = take(&mut merged, "boundary");
    debug_assert!(EXPERIMENT_KEYS.iter().all(|k| merged.get(*k).is_none()));
    let stub = Experiment {
        path: path.to_path_buf(),
        sources: sources.clone(),
        name: name.unwrap_or_else(|| {
            path.file_stem()
                .map_or("experiment".into(), |s| s.to_string_lossy().into_owned())
        }),
        description,
        world_value: Value::Null,
        world: WorldConfig::default(),
        sweep: None,
        outputs: OutputSpec::default(),
        objective: None,
        warnings: Vec::new(),
        calibrate: None,
        boundary: None,
        document,
    };
    let world =
        resolve(merged.clone()).map_err(|(p, m)| InputErrors(vec![stub.error_at(&p, m)]))?;
    let world_value = merged;
    let sweep: Option<SweepSpec> = match sweep_value {
        Some(v) => Some(
            from_value(v).map_err(|e| InputErrors(vec![stub.error_at("sweep", e.to_string())]))?,
        ),
        None => None,
    };
    let outputs: OutputSpec = match outputs_value {
        Some(v) => {
            from_value(v).map_err(|e| InputErrors(vec![stub.error_at("outputs", e.to_string())]))?
        }
        None => OutputSpec::default(),
    };
    let objective: Option<Objective> = match objective_value {
        Some(v) => Some(
            from_value(v)
                .map_err(|e| InputErrors(vec![stub.error_at("objective", e.to_string())]))?,
        ),
        None => None,
    };
    let calibrate = match calibrate_value {
        Some(v) => Some(
            from_value(v)
                .map_err(|e| InputErrors(vec![stub.error_at("calibrate", e.to_string())]))?,
        ),
        None => None,
    };
    let boundary = match boundary_value {
        Some(v) => Some(
            from_value(v)
                .map_err(|e| InputErrors(vec![stub.error_at("boundary", e.to_string())]))?,
        ),
        None => None,
    };
    let exp = Experiment {
        world_value,
        world,
        sweep,
        outputs,
        objective,
        calibrate,
        boundary,
        ..stub
    };
    check(&exp, limits)?;
    let mut exp = exp;
    exp.warnings = replaced
        .into_iter()
        .map(|(p, m)| exp.error_at(&p, m))
        .chain(warnings(&exp))
        .collect();
    Ok(exp)
}

/// Removes the client fields (and, when the preset owns one, the pool)
/// `merged` holds before the file `own` that names preset `name` is
/// merged over it; returns the paths of those the file does not write
/// itself (the ones it loses), for the warning.
fn drop_inherited_client(merged: &mut Value, name: &str, own: &Value) -> Vec<String> {
    fn leaves(v: &Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            Value::Mapping(m) if !m.is_empty() && kind_of(m).is_none() => {
                for (k, x) in m {
                    let key = k.as_str().unwrap_or("?");
                    leaves(x, &format!("{prefix}.{key}"), out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }
    let mut dropped = Vec::new();
    let Value::Mapping(root) = merged else {
        return dropped;
    };
    if let Some(client) = root.remove("client") {
        leaves(&client, "client", &mut dropped);
        dropped.retain(|p| p != "client.preset");
    }
    if presets::get(name).is_some_and(|p| p.pool.is_some())
        && let Some(Value::Mapping(service)) = root.get_mut("service")
        && let Some(pool) = service.remove("pool")
    {
        leaves(&pool, "service.pool", &mut dropped);
    }
    let mut written = Vec::new();
    if let Some(client) = own.get("client") {
        leaves(client, "client", &mut written);
    }
    if let Some(pool) = own.get("service").and_then(|s| s.get("pool")) {
        leaves(pool, "service.pool", &mut written);
    }
    // A field the file writes, or whose whole section it writes, is kept.
    dropped.retain(|p| {
        !written.iter().any(|w| {
            p == w
                || p.strip_prefix(w.as_str())
                    .is_some_and(|r| r.starts_with('.'))
        })
    });
    dropped
}

/// Settings that are valid but cannot do what they are for.
fn warnings(exp: &Experiment) -> Vec<InputError> {
    let mut out = Vec::new();
    // Presets once named after the write-ups' numbers.
    let renamed = |v: &Value| {
        v.as_str()
            .and_then(|old| presets::renamed(old).map(|new| (old.to_string(), new)))
    };
    if let Some((old, new)) = exp
        .world_value
        .get("client")
        .and_then(|c| c.get("preset"))
        .and_then(renamed)
    {
        out.push(exp.error_at(
            "client.preset",
            format!("preset {old:?} is now called {new:?}; the old name still works but will go"),
        ));
    }
    if let Some(sweep) = &exp.sweep {
        for (i, axis) in sweep.axes.iter().enumerate() {
            if axis.path != "client.preset" {
                continue;
            }
            for (_, v) in axis.labelled_values().unwrap_or_default() {
                if let Some((old, new)) = renamed(&v) {
                    out.push(exp.error_at(
                        &format!("sweep.axes[{i}].values"),
                        format!(
                            "preset {old:?} is now called {new:?}; the old name still works but will go"
                        ),
                    ));
                }
            }
        }
    }
    let w = &exp.world;
    out.extend(unreached_nodes(w).into_iter().map(|(path, what)| {
        exp.error_at(
            &path,
            format!("no call from the entry reaches this {what}: it is simulated without traffic from the graph; call it, or remove it"),
        )
    }));
    let services: Vec<(String, &sim_models::pods::ServiceConfig)> = if w.entry.is_some() {
        w.services
            .iter()
            .map(|(n, s)| (format!("services.{n}"), s))
            .collect()
    } else {
        vec![("service".to_string(), &w.service)]
    };
    for (at, s) in services {
        if let (Some(n), None) = (s.cores, &s.work) {
            out.push(exp.error_at(
                &format!("{at}.cores"),
                format!("{n} cores limit the service's own work, and it has none: they change nothing (give it `work`, or remove `cores`)"),
            ));
        }
        if let Some(a) = &s.autoscaling
            && let Some(hook) = a.pre_stop.filter(|&h| h >= a.termination_grace)
        {
            out.push(exp.error_at(
                &format!("{at}.autoscaling.pre_stop"),
                format!("a preStop of {hook} reaches the termination grace of {}: each removed pod serves until the grace and what it holds then fails, as Kubernetes kills it (shorten `pre_stop`, or lengthen `termination_grace`)", a.termination_grace),
            ));
        }
        let line = format!("{at}.worker_queue");
        if s.workers.is_none() && exp.writes(&line) {
            out.push(exp.error_at(
                &line,
                "the line for a worker, and the service's workers are unbounded (no `workers`): nobody ever waits in it (give it `workers`, or remove `worker_queue`)",
            ));
        }
    }
    if w.gateway.cancel_service_on_deadline && w.gateway.deadline.is_none() {
        out.push(exp.error_at(
            "gateway.cancel_service_on_deadline",
            "cancels the service's work when the user's deadline passes, and the gateway has none: it changes nothing (give `gateway.deadline`, or remove it)",
        ));
    }
    out.extend(deadlines_never_set(w).into_iter().map(|path| {
        exp.error_at(
            &path,
            "sends the call's deadline with each attempt, and the call has none: no attempt timeout, no total deadline, and none from the request's caller; it changes nothing (set `attempt_timeout` or `total_deadline`, or remove it)",
        )
    }));
    let r = &exp.outputs.recovery;
    let steps = sim_models::timeline::resolve(w);
    let run_end = sim_core::time::SimTime::ZERO.saturating_add(w.clock.duration);
    if let Some(end) = sim_models::timeline::last_trigger_end(&steps)
        && end.saturating_add(r.horizon).saturating_add(r.sustain) > run_end
    {
        let left = run_end.saturating_since(end);
        out.push(exp.error_at(
            "outputs.recovery.horizon",
            format!(
                "the run ends {left} after the last trigger ends, but judging recovery needs horizon ({}) + sustain ({}) after it: a run not recovered by the end is reported as not judged, never metastable (lengthen clock.duration, or shorten outputs.recovery.horizon or sustain)",
                r.horizon, r.sustain
            ),
        ));
    }
    out
}

/// The `propagate_deadline` fields (as field paths) of calls that never
/// have a deadline to send: no attempt timeout, no total deadline, and a
/// calling service whose requests never carry one (no call to it sends
/// one), in the file's client and in every client the timeline deploys on
/// them (any of those that could send one counts, so a call warned of
/// sends nothing in any of them). Deadlines flow down the graph, so the
/// services that may get one are found by passes until none is added (a
/// graph has no cycles: at most one pass a service).
fn deadlines_never_set(w: &WorldConfig) -> Vec<String> {
    use sim_models::config::ClientConfig;
    use sim_models::graph::{Target, Topology};

    let Ok(topo) = Topology::of(w) else {
        return Vec::new();
    };
    // Each edge's clients: the file's, then those deployed on it.
    let clients = |path: &str| -> Vec<&ClientConfig> {
        let deployed = w
            .timeline
            .iter()
            .filter_map(|t| t.deploy.as_ref())
            .filter_map(|d| {
                let at = d.call.as_deref().unwrap_or("client");
                (at == path).then_some(d.client.as_ref()).flatten()
            });
        deployed.collect()
    };
    let own = |c: &ClientConfig| c.attempt_timeout.is_some() || c.total_deadline.is_some();
    // Per edge: whether some client of it propagates, and has its own.
    let edges: Vec<(bool, bool)> = topo
        .edges
        .iter()
        .map(|e| {
            let all: Vec<&ClientConfig> =
                std::iter::once(&e.client).chain(clients(&e.path)).collect();
            (
                all.iter().any(|c| c.propagate_deadline),
                all.iter().any(|c| own(c)),
            )
        })
        .collect();
    let mut gets = vec![false; topo.services.len()];
    loop {
        let mut added = false;
        for (e, &(propagates, owns)) in topo.edges.iter().zip(&edges) {
            if let Target::Service(to) = e.to
                && propagates
                && (owns || gets[e.from as usize])
                && !gets[to as usize]
            {
                gets[to as usize] = true;
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    topo.edges
        .iter()
        .zip(&edges)
        .filter(|(e, (_, owns))| e.client.propagate_deadline && !owns && !gets[e.from as usize])
        .map(|(e, _)| match e.path.as_str() {
            "client" => "client.propagate_deadline".to_string(),
            path => format!("{path}.client.propagate_deadline"),
        })
        .collect()
}

/// The services and dependencies of a graph no call from the entry
/// reaches (a name left over, or a call forgotten), as (field path, kind).
fn unreached_nodes(w: &WorldConfig) -> Vec<(String, &'static str)> {
    let Some(entry) = &w.entry else {
        return Vec::new();
    };
    let mut reached = std::collections::BTreeSet::new();
    let mut todo = vec![entry.as_str()];
    while let Some(name) = todo.pop() {
        if !reached.insert(name) {
            continue;
        }
        let mut calls: Vec<&sim_models::pods::CallSpec> = w
            .services
            .get(name)
            .map(|s| s.calls.iter().collect())
            .unwrap_or_default();
        while let Some(c) = calls.pop() {
            calls.extend(c.parallel.iter());
            if !c.to.is_empty() {
                todo.push(c.to.as_str());
            }
        }
    }
    let services = w.services.keys().map(|n| (n, "services", "service"));
    let dependencies = w
        .dependencies
        .keys()
        .map(|n| (n, "dependencies", "dependency"));
    services
        .chain(dependencies)
        .filter(|(n, _, _)| !reached.contains(n.as_str()))
        .map(|(n, section, what)| (format!("{section}.{n}"), what))
        .collect()
}

impl Experiment {
    /// Prints the warnings to stderr, each `warning: FILE:LINE:COL: ...`.
    pub fn print_warnings(&self) {
        for w in &self.warnings {
            eprintln!("warning: {w}");
        }
    }
}

/// The typed world of a written value: presets expanded, defaults filled
/// in. `Err((path, message))`.
pub fn resolve(mut written: Value) -> Result<WorldConfig, (String, String)> {
    expand_deploys(&mut written)?;
    expand_call_presets(&mut written)?;
    let expanded = expand_preset(written)?;
    from_value(expanded).map_err(|e| {
        let text = e.to_string();
        let (path, message) = match text.split_once(": ") {
            Some((p, m)) if !p.contains(' ') => (p.to_string(), m.to_string()),
            _ => ("client".to_string(), text),
        };
        (path, plain_message(&message))
    })
}

/// Completes each timeline `deploy`: the `client` and `upstream` written
/// there merged over the client and upstream as the file and the deploys
/// before it in the timeline leave them (a preset named in a deployed
/// client expanded), so the world gets whole configurations.
fn expand_deploys(world: &mut Value) -> Result<(), (String, String)> {
    let empty = || Value::Mapping(Mapping::new());
    // What each client and upstream is as the file and the deploys so far
    // leave it: the single tier's, or in a graph a call's (by its path)
    // and a dependency's (by its name).
    let written_at = |path: &str| value_at(world, path).cloned().unwrap_or_else(empty);
    let mut clients: BTreeMap<String, Value> = BTreeMap::new();
    let mut upstreams: BTreeMap<String, Value> = BTreeMap::new();
    let Some(Value::Sequence(entries)) = world.get("timeline") else {
        return Ok(());
    };
    for entry in entries {
        let Some(deploy) = entry.get("deploy") else {
            continue;
        };
        let call = deploy.get("call").and_then(Value::as_str);
        let client_path = call.map_or("client".to_string(), |c| format!("{c}.client"));
        clients
            .entry(client_path.clone())
            .or_insert_with(|| written_at(&client_path));
        let dep = deploy.get("dependency").and_then(Value::as_str);
        let upstream_path = dep.map_or("upstream".to_string(), |d| format!("dependencies.{d}"));
        upstreams
            .entry(upstream_path.clone())
            .or_insert_with(|| written_at(&upstream_path));
    }
    let Some(Value::Sequence(entries)) = world.get_mut("timeline") else {
        return Ok(());
    };
    for (i, entry) in entries.iter_mut().enumerate() {
        let Some(Value::Mapping(deploy)) = entry.get_mut("deploy") else {
            continue;
        };
        let call = deploy.get("call").and_then(Value::as_str);
        let client_path = call.map_or("client".to_string(), |c| format!("{c}.client"));
        let dep = deploy.get("dependency").and_then(Value::as_str);
        let upstream_path = dep.map_or("upstream".to_string(), |d| format!("dependencies.{d}"));
        if let Some(written) = deploy.remove("client") {
            let client_live = clients.entry(client_path).or_insert_with(empty);
            // A preset starts the client over; fields beside it apply on top.
            let mut client = match written.get("preset") {
                Some(_) => empty(),
                None => client_live.clone(),
            };
            merge(&mut client, written);
            *client_live = client.clone();
            let mut alone = Mapping::new();
            alone.insert(Value::from("client"), client);
            let expanded = expand_preset(Value::Mapping(alone))
                .map_err(|(p, m)| (format!("timeline[{i}].deploy.{p}"), m))?;
            let client = expanded.get("client").cloned().unwrap_or(Value::Null);
            deploy.insert(Value::from("client"), client);
        }
        if let Some(written) = deploy.remove("upstream") {
            let upstream_live = upstreams.entry(upstream_path).or_insert_with(empty);
            let mut upstream = upstream_live.clone();
            merge(&mut upstream, written);
            *upstream_live = upstream.clone();
            deploy.insert(Value::from("upstream"), upstream);
        }
    }
    Ok(())
}

/// The value at a field path (`services.orders.calls[0].client`), if the
/// document has one.
fn value_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for part in path.split('.') {
        let (name, indices) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        cur = cur.get(name)?;
        for i in indices.split('[').filter(|x| !x.is_empty()) {
            cur = cur.get(i.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(cur)
}

/// Expands the preset named in each call of a graph
/// (`services.orders.calls[0].client.preset`, a parallel group's calls
/// too) as [`expand_preset`] does the single tier's: its client, and its
/// pool as the call's, the fields written beside them on top.
fn expand_call_presets(world: &mut Value) -> Result<(), (String, String)> {
    let Some(Value::Mapping(services)) = world.get_mut("services") else {
        return Ok(());
    };
    for (name, service) in services.iter_mut() {
        let name = name.as_str().unwrap_or_default().to_string();
        let Some(Value::Sequence(calls)) = service.get_mut("calls") else {
            continue;
        };
        for (i, call) in calls.iter_mut().enumerate() {
            let at = format!("services.{name}.calls[{i}]");
            expand_call_preset(call, &at)?;
            if let Some(Value::Sequence(group)) = call.get_mut("parallel") {
                for (j, c) in group.iter_mut().enumerate() {
                    expand_call_preset(c, &format!("{at}.parallel[{j}]"))?;
                }
            }
        }
    }
    Ok(())
}

/// Expands one call's `client.preset`, `at` its path.
fn expand_call_preset(call: &mut Value, at: &str) -> Result<(), (String, String)> {
    let Value::Mapping(m) = call else {
        return Ok(());
    };
    let Some(client) = m.get("client") else {
        return Ok(());
    };
    if client.get("preset").is_none() {
        return Ok(());
    }
    let mut alone = Mapping::new();
    alone.insert(Value::from("client"), client.clone());
    if let Some(pool) = m.get("pool") {
        let mut service = Mapping::new();
        service.insert(Value::from("pool"), pool.clone());
        alone.insert(Value::from("service"), Value::Mapping(service));
    }
    let expanded =
        expand_preset(Value::Mapping(alone)).map_err(|(p, msg)| (format!("{at}.{p}"), msg))?;
    if let Some(c) = expanded.get("client") {
        m.insert(Value::from("client"), c.clone());
    }
    if let Some(pool) = expanded.get("service").and_then(|s| s.get("pool")) {
        m.insert(Value::from("pool"), pool.clone());
    }
    Ok(())
}

/// Expands `client.preset`: the preset's client policy (and pool, where
/// the library owns it) with the fields written beside it on top.
fn expand_preset(mut world: Value) -> Result<Value, (String, String)> {
    let preset_name = world
        .get("client")
        .and_then(|c| c.get("preset"))
        .map(|p| {
            p.as_str().map(String::from).ok_or_else(|| {
                (
                    "client.preset".to_string(),
                    "must be a preset name".to_string(),
                )
            })
        })
        .transpose()?;
    let Some(name) = preset_name else {
        return Ok(world);
    };
    let preset = presets::get(&name).ok_or_else(|| {
        let hint = match presets::closest(&name) {
            Some(c) => format!("unknown preset {name:?}; did you mean {c:?}?"),
            None => format!(
                "unknown preset {name:?}; expected one of {}",
                presets::NAMES.join(", ")
            ),
        };
        ("client.preset".to_string(), hint)
    })?;
    let mut client = to_value(&preset.client);
    let Value::Mapping(world_map) = &mut world else {
        return Ok(world);
    };
    if let Some(mut written) = world_map.remove("client") {
        if let Value::Mapping(m) = &mut written {
            m.remove("preset");
        }
        merge(&mut client, written);
    }
    world_map.insert(Value::from("client"), client);
    if let Some(pool) = &preset.pool {
        let mut pool_value = to_value(pool);
        let service = world_map
            .entry(Value::from("service"))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if let Value::Mapping(s) = service {
            if let Some(written) = s.remove("pool") {
                merge(&mut pool_value, written);
            }
            s.insert(Value::from("pool"), pool_value);
        }
    }
    Ok(world)
}

/// Checks the whole: the world's own validation, the sweep's axes (each
/// cell's config is built and validated), the output spec, and the
/// limits on work.
fn check(exp: &Experiment, limits: &InputLimits) -> Result<(), InputErrors> {
    let mut errors = Vec::new();
    if let Err(es) = exp.world.validate() {
        errors.extend(es.into_iter().map(|e| exp.error_at(&e.path, e.message)));
    }
    if !(0.0..=1.0).contains(&exp.outputs.attempts) {
        errors.push(exp.error_at(
            "outputs.attempts",
            format!(
                "must be a fraction between 0 and 1, found {}",
                exp.outputs.attempts
            ),
        ));
    }
    for (field, m) in exp.outputs.recovery.validate() {
        errors.push(exp.error_at(&format!("outputs.recovery.{field}"), m));
    }
    for (field, m) in exp
        .objective
        .as_ref()
        .map(Objective::validate)
        .unwrap_or_default()
    {
        errors.push(exp.error_at(&format!("objective.{field}"), m));
    }
    if !errors.is_empty() {
        return Err(InputErrors(errors));
    }
    if let Some(sweep) = &exp.sweep {
        sweep.check(exp, limits)?;
    }
    check_work(&exp.world, limits).map_err(|(p, m)| InputErrors(vec![exp.error_at(&p, m)]))
}

/// A rate for messages: as written when short, else in scientific form.
fn rate(r: f64) -> String {
    if r.abs() >= 1e6 {
        format!("{r:.3e}")
    } else {
        r.to_string()
    }
}

/// Events per request at the least (its arrival and its answer), for the
/// up-front estimate of a run's events.
const MIN_EVENTS_PER_REQUEST: f64 = 2.0;

/// The pre-run checks on work every cell's resolved configuration gets:
/// requests within `--max-requests`, and the events its generators make
/// at the least within `limits.max_events`, so that a run the event limit
/// would stop is refused in milliseconds, naming what generates the
/// events. `Err((field path, message))`.
pub fn check_work(w: &WorldConfig, limits: &InputLimits) -> Result<(), (String, String)> {
    let topo = sim_models::graph::Topology::of(w).map_err(|e| {
        let first = &e[0];
        (first.path.clone(), first.message.clone())
    })?;
    let secs = w.clock.duration.as_secs_f64();
    let users = w.load.closed_loop.as_ref().map_or(0, |c| c.users);
    let steps = sim_models::timeline::resolve(w);
    let sources = rate_sources(w, &topo, &steps);
    let requests = total_requests(&sources, |s| s.requests, w);
    if requests > limits.max_requests {
        let mut parts: Vec<String> = sources
            .iter()
            .filter(|s| s.path == "load.rate" || s.initial > 0.0 || s.requests > 0.0)
            .map(RateSource::describe)
            .collect();
        if users > 0 {
            parts.push(format!(
                "{users} closed-loop users (counted at 1 request/s each)"
            ));
        }
        // A timeline that raises a rate past what the file starts with is
        // where to look, when the rates as written would be within it.
        let as_written = total_requests(&sources, |s| s.initial * secs, w);
        let path = match highest_rate_step(w, &steps) {
            Some(field) if as_written <= limits.max_requests => field,
            _ => "clock.duration".to_string(),
        };
        return Err((
            path,
            format!(
                "one run would simulate about {:.3e} requests ({} of {}), over the limit of {:.0e} (raise it with --max-requests)",
                requests.min(f64::MAX),
                w.clock.duration,
                parts.join(", "),
                limits.max_requests
            ),
        ));
    }
    let mut generators: Vec<(f64, String, String)> = sources
        .iter()
        .map(|s| {
            (
                s.requests * MIN_EVENTS_PER_REQUEST,
                s.path.clone(),
                format!("{} for {}", s.describe(), w.clock.duration),
            )
        })
        .collect();
    for (i, s) in topo.services.iter().enumerate() {
        if let Some(h) = &s.cfg.health {
            // Probes of every pod the service has, as the timeline sets
            // their number.
            let pods = sim_models::timeline::integral_over_run(
                w,
                &steps,
                sim_models::timeline::Param::ServicePods,
                i as u32,
                f64::from(s.cfg.pods),
            );
            generators.push((
                pods / h.period.as_secs_f64().max(1e-9),
                format!("{}.health.period", s.path),
                format!(
                    "health probes of {} pods{} every {} for {}",
                    s.cfg.pods,
                    match moved(pods / secs.max(1e-9), f64::from(s.cfg.pods)) {
                        None => String::new(),
                        Some(mean) => format!(" ({mean:.0} on average as the timeline sets them)"),
                    },
                    h.period,
                    w.clock.duration
                ),
            ));
        }
    }
    let total: f64 = generators.iter().map(|g| g.0).sum();
    let max = w.limits.max_events as f64;
    if total > max {
        generators.sort_by(|a, b| b.0.total_cmp(&a.0));
        let (n, field, what) = &generators[0];
        return Err((
            field.to_string(),
            format!(
                "{what} make at least {n:.2e} events, and the run at least {total:.2e}: over limits.max_events ({max:.0e}); change {field}, or raise limits.max_events"
            ),
        ));
    }
    Ok(())
}

/// About how many requests a run simulates: open loop and background,
/// each rate as the timeline moves it, and closed-loop users at one
/// request a second each.
pub fn requests_per_run(w: &WorldConfig) -> f64 {
    let Ok(topo) = sim_models::graph::Topology::of(w) else {
        return 0.0;
    };
    let steps = sim_models::timeline::resolve(w);
    total_requests(&rate_sources(w, &topo, &steps), |s| s.requests, w)
}

/// The requests of `sources`, each counted by `requests`, and of the
/// closed-loop users at one request a second each.
fn total_requests(
    sources: &[RateSource],
    requests: impl Fn(&RateSource) -> f64,
    w: &WorldConfig,
) -> f64 {
    let users = w
        .load
        .closed_loop
        .as_ref()
        .map_or(0.0, |c| f64::from(c.users));
    sources.iter().map(requests).sum::<f64>() + users * w.clock.duration.as_secs_f64()
}

/// The mean a timeline gives a value written as `initial`, when it
/// differs from it (beyond the rounding of its integral).
fn moved(mean: f64, initial: f64) -> Option<f64> {
    ((mean - initial).abs() > 1e-9 * initial.max(1.0)).then_some(mean)
}

/// A rate that makes requests: the open loop's, or a dependency's
/// background.
struct RateSource {
    /// Its field (`load.rate`, `dependencies.db.background_rps`).
    path: String,
    /// `open loop`, `background`.
    name: &'static str,
    /// ` at db` for a graph's dependency, else empty.
    at: String,
    /// Requests per second as written.
    initial: f64,
    /// Requests over the run, the timeline's changes included.
    requests: f64,
    /// Seconds the run lasts.
    secs: f64,
}

impl RateSource {
    /// `open loop 80 requests/s`, with its mean when the timeline moves it.
    fn describe(&self) -> String {
        let written = format!("{} {} requests/s{}", self.name, rate(self.initial), self.at);
        match moved(self.requests / self.secs.max(1e-9), self.initial) {
            None => written,
            Some(mean) => format!(
                "{written}, {} on average as the timeline sets it",
                rate(mean.min(f64::MAX))
            ),
        }
    }
}

/// The world's request rates: the open loop's, then each dependency's
/// background, each integrated over the run along its timeline.
fn rate_sources(
    w: &WorldConfig,
    topo: &sim_models::graph::Topology,
    steps: &[sim_models::timeline::Step],
) -> Vec<RateSource> {
    use sim_models::timeline::{Param, integral_over_run};
    let secs = w.clock.duration.as_secs_f64();
    let mut out = vec![RateSource {
        path: "load.rate".into(),
        name: "open loop",
        at: String::new(),
        initial: w.load.rate,
        requests: integral_over_run(w, steps, Param::LoadRate, 0, w.load.rate),
        secs,
    }];
    for (i, d) in topo.dependencies.iter().enumerate() {
        let initial = d.cfg.background_rps;
        out.push(RateSource {
            path: format!("{}.background_rps", d.path),
            name: "background",
            at: match topo.dependencies.len() {
                1 => String::new(),
                _ => format!(" at {}", d.name),
            },
            initial,
            requests: integral_over_run(w, steps, Param::UpstreamBackgroundRps, i as u32, initial),
            secs,
        });
    }
    out
}

/// The field of the timeline entry whose `steps` set a request rate
/// highest (`timeline[2].ramp.to`), if any sets one.
fn highest_rate_step(w: &WorldConfig, steps: &[sim_models::timeline::Step]) -> Option<String> {
    use sim_models::timeline::{Param, StepAction};
    let (entry, _) = steps
        .iter()
        .filter_map(|s| match s.action {
            StepAction::Set(Param::LoadRate | Param::UpstreamBackgroundRps, _, v) => {
                Some((s.entry, v))
            }
            _ => None,
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    let e = &w.timeline[entry];
    let field = if e.ramp.is_some() {
        "ramp.to"
    } else if e.pulse.is_some() {
        "pulse.value"
    } else {
        "set.value"
    };
    Some(format!("timeline[{entry}].{field}"))
}

#[cfg(test)]
mod kind_tests {
    #[test]
    fn the_kinds_come_from_the_enums_themselves() {
        let k = super::kinds();
        for name in [
            "log_normal",
            "empirical",
            "usl",
            "dont_retry",
            "exponential",
            "envoy",
            "decorrelated",
            "polly_v2",
            "resilience4j",
            "aws_quota",
            "sre",
            "aws_adaptive",
        ] {
            assert!(k.contains(&name), "{name} missing from {k:?}");
        }
        assert!(k.len() >= 29, "{k:?}");
    }

    #[test]
    fn an_enum_named_by_serde_is_answered_with_its_names() {
        // serde's "expected enum X" names the type it reads; a rename of
        // one of these would leave its message without the names.
        for (rust, one) in [
            ("DistSpec", "log_normal"),
            ("LoadLaw", "usl"),
            ("PushbackConfig", "dont_retry"),
            ("BackoffSpec", "envoy"),
            ("Jitter", "decorrelated"),
            ("BreakerSpec", "polly"),
            ("BudgetSpec", "retry_breaker"),
            ("ThrottleSpec", "sre"),
            ("RetryAfterMode", "ignore"),
            ("Scope", "global"),
            ("TimeoutStart", "connection_acquired"),
            ("AppliesAt", "admission"),
            ("OverflowAction", "drop"),
            ("Mode", "zip"),
        ] {
            let names = super::enum_variants(rust).unwrap_or_default();
            assert!(names.contains(&one), "{rust}: {names:?}");
        }
        assert_eq!(super::enum_variants("NoSuchEnum"), None);
        let text = super::plain_expected("invalid type: integer `5`, expected enum OverflowAction");
        assert_eq!(
            text,
            "invalid type: integer `5`, expected one of `reject`, `drop`"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(base: &str, over: &str) -> Value {
        let mut b: Value = yaml_serde::from_str(base).unwrap();
        merge(&mut b, yaml_serde::from_str(over).unwrap());
        b
    }

    fn yaml(s: &str) -> Value {
        yaml_serde::from_str(s).unwrap()
    }

    #[test]
    fn mappings_merge_key_by_key() {
        assert_eq!(
            merged("clock: { duration: 5m }", "clock: { bucket: 1s }"),
            yaml("clock: { duration: 5m, bucket: 1s }")
        );
        // The same kind merges too: one field of a distribution changed.
        assert_eq!(
            merged(
                "latency: { log_normal: { median: 2s, p99: 4s } }",
                "latency: { log_normal: { p99: 5s } }"
            ),
            yaml("latency: { log_normal: { median: 2s, p99: 5s } }")
        );
    }

    #[test]
    fn a_value_of_another_kind_replaces_the_base() {
        assert_eq!(
            merged(
                "network: { pod_to_upstream: { constant: 10ms } }",
                "network: { pod_to_upstream: { log_normal: { median: 30ms, p99: 100ms } } }"
            ),
            yaml("network: { pod_to_upstream: { log_normal: { median: 30ms, p99: 100ms } } }")
        );
        assert_eq!(
            merged(
                "backoff: { fixed: 1s }",
                "backoff: { exponential: { base: 1s, multiplier: 2 } }"
            ),
            yaml("backoff: { exponential: { base: 1s, multiplier: 2 } }")
        );
    }

    #[test]
    fn an_experiment_extending_the_replay_can_change_a_distributions_kind() {
        let dir = std::env::temp_dir().join(format!("stormsim-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let base = root.join("experiments/incidents/llm-api-1402.yaml");
        let file = dir.join("wan.yaml");
        std::fs::write(
            &file,
            format!(
                "extends: {}\nnetwork:\n  pod_to_upstream: {{ log_normal: {{ median: 30ms, p99: 100ms }} }}\nclient:\n  preset: incident-1402-before\n  retry: {{ backoff: {{ exponential: {{ base: 1s, multiplier: 2 }} }} }}\n",
                base.display()
            ),
        )
        .unwrap();
        let exp = load(&file, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            exp.world.network.pod_to_upstream,
            Some(sim_core::dist::DistSpec::LogNormal { .. })
        ));
        // Over the preset's fixed 1 s backoff.
        assert!(matches!(
            exp.world.client.retry.backoff.kind,
            sim_models::policy::backoff::BackoffKind::Exponential { .. }
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_deploy_changes_one_field_or_swaps_the_whole_client() {
        let dir = std::env::temp_dir().join(format!("stormsim-deploy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("deploy.yaml");
        std::fs::write(
            &file,
            "client:\n  attempt_timeout: 3s\n  retry: { max_retries: 3 }\ntimeline:\n  - at: 10s\n    deploy: { client: { retry: { max_retries: 0 } } }\n  - at: 20s\n    deploy: { client: { preset: incident-1402-after } }\n  - at: 30s\n    deploy: { client: { attempt_timeout: 1s } }\n",
        )
        .unwrap();
        let exp = load(&file, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        let deployed = |i: usize| {
            exp.world.timeline[i]
                .deploy
                .clone()
                .unwrap()
                .client
                .unwrap()
        };
        let three = Some(sim_core::time::SimDuration::from_secs(3));
        // One field: the rest as the file wrote it.
        assert_eq!(deployed(0).retry.max_retries, 0);
        assert_eq!(deployed(0).attempt_timeout, three);
        // A preset: the whole client swapped.
        assert_eq!(
            deployed(1),
            presets::get("incident-1402-after").unwrap().client
        );
        // And the next deploy builds on the one before.
        let mut after = presets::get("incident-1402-after").unwrap().client;
        after.attempt_timeout = Some(sim_core::time::SimDuration::from_secs(1));
        assert_eq!(deployed(2), after);

        std::fs::write(
            &file,
            "upstream: { capacity: 7 }\ntimeline:\n  - at: 10s\n    deploy: { upstream: { latency: { constant: 200ms } } }\n",
        )
        .unwrap();
        let exp = load(&file, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        let deployed = exp.world.timeline[0].deploy.clone().unwrap();
        let upstream = deployed.upstream.expect("an upstream");
        assert_eq!(upstream.capacity, 7, "the rest as the file wrote it");
        assert!(deployed.client.is_none());

        std::fs::write(
            &file,
            "timeline:\n  - at: 10s\n    deploy: { client: { retry: { max_retries: 1, backoff: { fixed: { delay: 0s } } }, hedging: { max_attempts: 2, delay: 1s } } }\n",
        )
        .unwrap();
        let err = match load(&file, &InputLimits::default()) {
            Ok(_) => panic!("a deploy with retries and hedging is refused"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains("timeline[0].deploy.client.hedging") && err.contains("deploy.yaml:3:"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_presets_old_name_works_with_a_warning_naming_the_new_one() {
        let dir = std::env::temp_dir().join(format!("stormsim-renamed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("old.yaml");
        std::fs::write(
            &file,
            "client:\n  preset: seed-004-httpclient-fix\nsweep:\n  axes:\n    - path: client.preset\n      values: [seed-003-budget, grpc-a6]\n",
        )
        .unwrap();
        let exp = load(&file, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            exp.world.client,
            presets::get("httpclient-fix").unwrap().client
        );
        let text: Vec<String> = exp.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(
            text[0].contains("old.yaml:2:") && text[0].contains("\"httpclient-fix\""),
            "{}",
            text[0]
        );
        assert!(text[1].contains("\"go-db-retry-budget\""), "{}", text[1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_service_or_dependency_no_call_reaches_is_warned_of_where_it_is_written() {
        let dir = std::env::temp_dir().join(format!("stormsim-unreached-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("graph.yaml");
        std::fs::write(
            &file,
            "entry: a\nservices:\n  a: { calls: [{ parallel: [{ to: b }, { to: d }] }] }\n  b: {}\n  lone: { calls: [{ to: e }] }\ndependencies:\n  d: {}\n  e: {}\n",
        )
        .unwrap();
        let exp = load(&file, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        let w: Vec<String> = exp.warnings.iter().map(|w| w.to_string()).collect();
        // Reached through a parallel group: b and d. Not reached: lone,
        // and e, which only lone calls.
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains(
                "graph.yaml:5:3: services.lone: no call from the entry reaches this service"
            ),
            "{w:?}"
        );
        assert!(
            w[1].contains(
                "graph.yaml:8:3: dependencies.e: no call from the entry reaches this dependency"
            ),
            "{w:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn settings_that_change_nothing_are_warned_of_where_they_are_written() {
        let dir = std::env::temp_dir().join(format!("stormsim-cores-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (
                "graph.yaml",
                "entry: a\nservices:\n  a: { cores: 4, calls: [{ to: b }] }\n  b: { cores: 2, work: { constant: 1ms } }\ndependencies: {}\n",
                "graph.yaml:3:8: services.a.cores: 4 cores limit the service's own work, and it has none",
            ),
            (
                "tier.yaml",
                "service:\n  pods: 2\n  cores: 8\n",
                "tier.yaml:3:3: service.cores: 8 cores limit the service's own work, and it has none",
            ),
            (
                "line.yaml",
                "entry: a\nservices:\n  a: { worker_queue: 10, calls: [{ to: b }] }\n  b: { workers: 2, worker_queue: 10, calls: [{ to: d }] }\ndependencies: { d: {} }\n",
                "line.yaml:3:8: services.a.worker_queue: the line for a worker, and the service's workers are unbounded",
            ),
            (
                "hook.yaml",
                "service:\n  autoscaling: { max_replicas: 4, metric: in_flight, target: 5, termination_grace: 10s, pre_stop: 10s }\n",
                "hook.yaml:2:89: service.autoscaling.pre_stop: a preStop of 10s reaches the termination grace of 10s",
            ),
            (
                "propagate.yaml",
                "client:\n  attempt_timeout: null\n  propagate_deadline: true\n",
                "propagate.yaml:3:3: client.propagate_deadline: sends the call's deadline with each attempt, and the call has none",
            ),
            (
                // c's requests carry a's deadline; b's none.
                "chain.yaml",
                "entry: a\nservices:\n  a: { calls: [{ to: b }, { to: c, client: { propagate_deadline: true } }] }\n  b: { calls: [{ to: d, client: { attempt_timeout: null, propagate_deadline: true } }] }\n  c: { calls: [{ to: d, client: { attempt_timeout: null, propagate_deadline: true } }] }\ndependencies: { d: {} }\n",
                "chain.yaml:4:58: services.b.calls[0].client.propagate_deadline: sends the call's deadline",
            ),
            (
                // The deploy gives b's call a deadline from 5 s: only
                // the entry's call, which never has one, is warned of.
                "deployed.yaml",
                "clock: { duration: 10m }\nentry: a\nservices:\n  a: { calls: [{ to: b, client: { attempt_timeout: null, propagate_deadline: true } }] }\n  b: { calls: [{ to: d, client: { attempt_timeout: null, propagate_deadline: true } }] }\ndependencies: { d: {} }\ntimeline:\n  - at: 5s\n    deploy: { call: \"services.b.calls[0]\", client: { attempt_timeout: 1s, propagate_deadline: true } }\n",
                "deployed.yaml:4:58: services.a.calls[0].client.propagate_deadline: sends the call's deadline",
            ),
            (
                "gateway.yaml",
                "gateway:\n  cancel_service_on_deadline: true\n",
                "gateway.yaml:2:3: gateway.cancel_service_on_deadline: cancels the service's work when the user's deadline passes, and the gateway has none",
            ),
        ];
        for (name, text, expected) in cases {
            let file = dir.join(name);
            std::fs::write(&file, text).unwrap();
            let exp = load(&file, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
            let w: Vec<String> = exp.warnings.iter().map(|w| w.to_string()).collect();
            assert_eq!(w.len(), 1, "{name}: {w:?}");
            assert!(w[0].contains(expected), "{w:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_preset_named_in_a_child_applies_over_what_it_inherits() {
        let dir = std::env::temp_dir().join(format!("stormsim-preset-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("base.yaml"),
            "client:\n  attempt_timeout: 3s\n  retry: { max_retries: 9 }\n",
        )
        .unwrap();
        let child = dir.join("child.yaml");
        std::fs::write(
            &child,
            "extends: base.yaml\nclient:\n  preset: grpc-a6\n  total_deadline: 20s\n",
        )
        .unwrap();
        // A child writing an inherited field itself keeps it: not named.
        let keeps = dir.join("keeps.yaml");
        std::fs::write(
            &keeps,
            "extends: base.yaml\nclient:\n  preset: grpc-a6\n  attempt_timeout: 3s\n",
        )
        .unwrap();
        let exp = load(&child, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        let preset = presets::get("grpc-a6").unwrap().client;
        // The preset's fields over the inherited ones, the child's own on top.
        assert_eq!(exp.world.client.retry.max_retries, preset.retry.max_retries);
        assert_eq!(exp.world.client.attempt_timeout, preset.attempt_timeout);
        assert_eq!(
            exp.world.client.total_deadline,
            Some(sim_core::time::SimDuration::from_secs(20))
        );
        let w: Vec<String> = exp.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("child.yaml:3:3: client.preset")
                && w[0].contains("client.attempt_timeout, client.retry.max_retries"),
            "{w:?}"
        );
        let exp = load(&keeps, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
        let w: Vec<String> = exp.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains(": client.retry.max_retries ("), "{w:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
