"""Reads a stormsim dataset with polars, pandas/pyarrow and DuckDB, each
table as one table, and checks that they agree.

    python notebooks/check_dataset.py OUT_DIR

Exits non-zero (with the reason) when a reader fails or the readers
disagree; prints one line per table otherwise.
"""

import glob
import os
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow.parquet as pq


def main(out: str) -> None:
    tables = [t for t in ("summary", "timeseries", "pod_groups", "events", "attempts", "nodes") if os.path.isdir(os.path.join(out, t))]
    assert "summary" in tables and "timeseries" in tables, f"{out} has no summary/timeseries tables"
    for table in tables:
        files = sorted(glob.glob(os.path.join(out, table, "cell=*", "part-0.parquet")))
        assert files, f"no files for {table}"
        by_polars = pl.read_parquet(os.path.join(out, table, "**", "*.parquet"), hive_partitioning=True)
        by_pandas = pd.read_parquet(os.path.join(out, table))
        by_duckdb = duckdb.sql(
            f"select * from read_parquet('{os.path.join(out, table)}/*/*.parquet', hive_partitioning = true)"
        ).df()
        rows = sum(pq.read_metadata(f).num_rows for f in files)
        assert len(by_polars) == len(by_pandas) == len(by_duckdb) == rows, (
            table, len(by_polars), len(by_pandas), len(by_duckdb), rows)
        # The hive partition column and the in-file run id agree.
        assert (by_polars["cell"].cast(pl.Utf8) == by_polars["run_id"]).all(), table
        assert set(by_pandas["run_id"]) == set(by_duckdb["run_id"]) == set(by_polars["run_id"])
        # Every file names its run and its configuration's hash; the
        # summary, the run's record, also holds the configuration itself.
        for f in files:
            meta = pq.read_metadata(f).metadata
            for key in (b"stormsim.version", b"stormsim.cell", b"stormsim.seed", b"stormsim.config_hash"):
                assert key in meta, f"{f}: metadata {key!r} missing"
            summary = os.path.join(out, "summary", f"cell={meta[b'stormsim.cell'].decode()}", "part-0.parquet")
            record = pq.read_metadata(summary).metadata
            assert record[b"stormsim.config_hash"] == meta[b"stormsim.config_hash"], f"{f}: not its summary's configuration"
            assert (b"stormsim.config" in meta) == (table == "summary"), f"{f}: stormsim.config"
        print(f"{table}: {rows} rows in {len(files)} files, {len(by_polars.columns)} columns; polars, pandas and duckdb agree")
    summary = pl.read_parquet(os.path.join(out, "summary", "**", "*.parquet"), hive_partitioning=True)
    assert summary["success_rate"].is_between(0, 1).all()
    ts = pl.read_parquet(os.path.join(out, "timeseries", "**", "*.parquet"), hive_partitioning=True)
    offered = ts.group_by("run_id").agg(pl.col("offered").sum()).sort("run_id")
    joined = offered.join(summary.select("run_id", pl.col("offered").alias("total")), on="run_id")
    assert (joined["offered"] == joined["total"]).all(), "timeseries and summary disagree on offered load"


if __name__ == "__main__":
    main(sys.argv[1])
