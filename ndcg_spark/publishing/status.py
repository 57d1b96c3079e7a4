"""Publishing a run atomically: a run-status row written last, and readers that filter on it.

A nightly write replaces only its own ``run_id`` partitions (dynamic partition overwrite), so the
previous night is never deleted. That alone does not stop a reader from seeing *half* a run: a
driver killed while the per-request table is being committed, or between the per-request and the
aggregate write, leaves some of the run's partitions on disk. So every run goes through

1. ``status = 'running'`` — written *first*, by the attempt that takes the run's lease
   (:func:`~ndcg_spark.publishing.lease.acquire`: refused while another attempt is running it); a re-run of
   a published run id hides the old copy of that run while it is being replaced;
2. the data writes (every stage), the lease checked at every step boundary and its heartbeat
   rewritten on a timer;
3. ``status = 'complete'`` — written *last*, one row, only by the attempt that still holds the run;
   or ``failed`` with the reason, when the job catches a failure or a signal ends it.

The bracket around a run's writes is :func:`ndcg_spark.publishing.lease.publishing`; this module is the
row and its readers.

Readers go through :func:`read_published` (or the SQL in docs/operations.md), which keeps only the runs
whose status row says ``complete``. A crash anywhere before step 3 leaves the run invisible and
every other run untouched; re-running the run id replaces it and publishes it.

Every function takes the status table as a :class:`~ndcg_spark.config.job.Source`; a job's is
:meth:`JobConfig.run_status() <ndcg_spark.config.job.JobConfig.run_status>` (``outputs.run_status``
in the YAML, else beside the per-request table).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.config.schemas import RUN_STATUS
from ndcg_spark.errors import CommitConflict, LeaseLost
from ndcg_spark.publishing.attempts import Attempt, complete_row, read_again_if_rewritten
from ndcg_spark.config.job import Source
from ndcg_spark.storage.io import read_run, read_run_folder, read_written, write_run_partitioned
from ndcg_spark.version import __version__

RUNNING = "running"
COMPLETE = "complete"
FAILED = "failed"
#: how many times status_row looks for a path table's run folder before saying the run has no row
ABSENT_READS = 3
#: the run-status table as Spark DDL (declared in :data:`ndcg_spark.config.schemas.RUN_STATUS`)
RUN_STATUS_SCHEMA = RUN_STATUS.ddl
STATUS_COLUMNS = tuple(part.split()[0] for part in RUN_STATUS_SCHEMA.split(","))


def mark_run(
    spark: SparkSession, target: Source, run_id: str, status: str, *, attempt: Attempt | None = None,
    reason: str | None = None,
) -> None:
    """Replace the status row of ``run_id`` with ``status`` (its own partition; other runs untouched).

    ``attempt`` is the attempt writing it (its id, start, host and Spark application; None: by
    hand); ``complete`` and ``failed`` rows get ``ended_at``, a ``failed`` one its ``reason``. On a
    Delta or Iceberg table the row is one commit; one that loses to another attempt's commit of the
    table is :class:`~ndcg_spark.errors.LeaseLost`: that attempt wrote the status table at the same
    moment, and this one stops (before any data write, when it was taking the run).
    """

    now = dt.datetime.now(dt.timezone.utc)
    ended = now if status in (COMPLETE, FAILED) else None
    who = (attempt.attempt_id, attempt.started_at, attempt.app_id, attempt.host) if attempt else (None,) * 4
    row = spark.createDataFrame(
        [(run_id, status, now, __version__, who[0], who[1], ended, who[2], who[3], reason)], RUN_STATUS_SCHEMA
    )
    try:
        write_run_partitioned(row.coalesce(1), target)
    except CommitConflict as exc:
        raise LeaseLost(
            f"run {run_id}: another attempt committed to the run-status table ({target.describe()}) at the same "
            f"moment as this attempt's '{status}' row, which is not in it: this attempt stops without publishing. {exc}"
        ) from exc


def published_runs(spark: SparkSession, status: Source) -> DataFrame:
    """The run ids whose status row says ``complete`` (empty if nothing was ever published)."""
    statuses = read_written(spark, status)
    if statuses is None:  # no status table yet: nothing is published
        return spark.createDataFrame([], "run_id string")
    return statuses.filter(F.col("status") == COMPLETE).select("run_id").distinct()


def read_published(spark: SparkSession, target: Source, status: Source, run_id: str | None = None) -> DataFrame:
    """Read an output keeping only published (``complete``) runs, optionally one run.

    A run that is being written, or whose driver died before publishing, is invisible here even
    though some of its partitions may be on disk.
    """
    return read_run(spark, target, run_id).join(published_runs(spark, status), "run_id", "left_semi")


def status_row(spark: SparkSession, status: Source, run_id: str) -> dict[str, Any] | None:
    """The run's status row as a dict of every column of ``RUN_STATUS_SCHEMA`` (those an older
    table lacks are None; timestamps aware, UTC), or None when the run has none.

    A concurrent write of the same row can delete the file being read: read again, up to 3 times.
    A path table's run folder found missing is looked for :data:`ABSENT_READS` times, 0.3 s apart:
    a rewrite (a heartbeat's) deletes it before moving the new one in, and a reader between the two
    would take a live run for one never started.
    """
    rows = read_again_if_rewritten(lambda: _read_row(spark, status, run_id))
    for _ in range(ABSENT_READS - 1):  # a path table's rewrite deletes the run's folder, then moves the new one in
        if rows or status.table_name is not None:
            break
        time.sleep(0.3)
        rows = read_again_if_rewritten(lambda: _read_row(spark, status, run_id))
    if not rows:
        return None
    found = [complete_row({**r.asDict(), "run_id": run_id}, STATUS_COLUMNS) for r in rows]
    return max(found, key=lambda r: r["updated_at"] or dt.datetime.min.replace(tzinfo=dt.timezone.utc))


def _read_row(spark: SparkSession, status: Source, run_id: str) -> list:
    """The rows of the run's partition: a path table's ``run_id=…`` folder alone (no other run's
    file is listed, and its own file's columns are the row's), a table's rows of the run."""
    if status.table_name is not None:
        rows = read_written(spark, status, run_id)
        return [] if rows is None else rows.collect()
    return read_run_folder(spark, status, run_id)


def recent_runs(spark: SparkSession, status: Source, *, last: int = 10, only: str | None = None) -> list[dict[str, Any]]:
    """The status rows of the ``last`` runs written most recently (``only``: of that status, e.g.
    ``failed``), newest first, as dicts of every column (those an older table lacks are None)."""
    df = read_written(spark, status, merge_schema=True)
    if df is None:
        return []
    if only is not None:
        df = df.filter(F.col("status") == F.lit(only))
    rows = df.orderBy(F.col("updated_at").desc_nulls_last(), "run_id").limit(last).collect()
    return [complete_row(r.asDict(), STATUS_COLUMNS) for r in rows]


def when(value: dt.datetime | None) -> str:
    return "(unknown)" if value is None else f"{value:%Y-%m-%d %H:%M:%S} UTC"


def duration(span: dt.timedelta) -> str:
    """``45 s``, ``20 min``, ``7.5 min``."""
    seconds = span.total_seconds()
    return f"{seconds:.0f} s" if seconds < 90 else f"{round(seconds / 60, 1):g} min"


def describe_attempt(row: dict[str, Any]) -> str:
    """``attempt 1a2b… (started … on host …, Spark application …)`` of a status row."""
    who = f"attempt {row['attempt_id']}" if row.get("attempt_id") else "an attempt with no id (marked by hand, or an older ndcg-spark)"
    return (f"{who} (started {when(row.get('started_at'))} on {row.get('host') or 'an unknown host'}, "
            f"Spark application {row.get('app_id') or 'unknown'})")
