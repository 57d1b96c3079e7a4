"""Publishing a run atomically: a run-status row written last, and readers that filter on it.

A nightly write replaces only its own ``run_id`` partitions (dynamic partition overwrite), so the
previous night is never deleted. That alone does not stop a reader from seeing *half* a run: a
driver killed while the per-request table is being committed, or between the per-request and the
aggregate write, leaves some of the run's partitions on disk. So every run goes through

1. ``status = 'running'`` — written *first*, by the attempt that takes the run's lease
   (:func:`~ndcg_spark.job.lease.acquire`: refused while another attempt is running it); a re-run of
   a published run id hides the old copy of that run while it is being replaced;
2. the data writes (every stage), the lease checked at every step boundary;
3. ``status = 'complete'`` — written *last*, one row, only by the attempt that still holds the run;
   or ``failed`` with the reason, when the job catches a failure.

Readers go through :func:`read_published` (or the SQL in docs/operations.md), which keeps only the runs
whose status row says ``complete``. A crash anywhere before step 3 leaves the run invisible and
every other run untouched; re-running the run id replaces it and publishes it.

Every function takes the status table as a :class:`~ndcg_spark.job.config.Source`; a job's is
:meth:`JobConfig.run_status() <ndcg_spark.job.config.JobConfig.run_status>` (``outputs.run_status``
in the YAML, else beside the per-request table).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.errors import CommitConflict, LeaseLost
from ndcg_spark.job.config import Source

if TYPE_CHECKING:  # pragma: no cover
    from ndcg_spark.job.lease import Attempt, Lease

RUNNING = "running"
COMPLETE = "complete"
FAILED = "failed"
RUN_STATUS_SCHEMA = (
    "run_id string, status string, updated_at timestamp, code_version string, attempt_id string, "
    "started_at timestamp, ended_at timestamp, app_id string, host string, reason string"
)


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
    from ndcg_spark import __version__
    from ndcg_spark.job.io import write_run_partitioned

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


@contextlib.contextmanager
def publishing(
    spark: SparkSession, status: Source, run_id: str, *, stale_after: dt.timedelta | None = None,
    take_over: bool = False, outputs: Sequence[Source] = (),
) -> Iterator[Lease]:
    """Bracket a run's writes: take the run's lease (``running``), ``complete`` after — only if the
    block succeeded and this attempt still holds the run::

        with publishing(spark, config.run_status(), run_id) as lease:
            score_stage(spark, config, run_id)
            lease.renew()   # at a step boundary: still ours? (else LeaseLost) and a heartbeat
            ...             # every later stage of the run

    ``stale_after`` and ``take_over`` are :func:`~ndcg_spark.job.lease.acquire`'s. A failure in the
    block is recorded (``failed``, with its one-paragraph reason) while the attempt holds the run,
    then raised — as the honest error when a file of one of ``outputs`` (the run's own tables)
    vanished or another attempt took the run (:meth:`~ndcg_spark.job.lease.Lease.fail`). The block
    gets the :class:`~ndcg_spark.job.lease.Lease` (``lease.status`` says where the run is published).
    """
    from ndcg_spark.job.lease import DEFAULT_STALE_AFTER, acquire
    from ndcg_spark.job.steps import step

    with step(spark, run_id, "unpublish", level=logging.DEBUG):
        lease = acquire(spark, status, run_id, stale_after=stale_after or DEFAULT_STALE_AFTER, take_over=take_over)
    try:
        yield lease
    except LeaseLost:
        raise
    except (Exception, KeyboardInterrupt) as exc:
        error = lease.fail(exc, outputs)
        if error is exc:
            raise
        raise error from exc
    with step(spark, run_id, "publish"):
        lease.publish()


def published_runs(spark: SparkSession, status: Source) -> DataFrame:
    """The run ids whose status row says ``complete`` (empty if nothing was ever published)."""
    from ndcg_spark.job.io import read_written

    statuses = read_written(spark, status)
    if statuses is None:  # no status table yet: nothing is published
        return spark.createDataFrame([], "run_id string")
    return statuses.filter(F.col("status") == COMPLETE).select("run_id").distinct()


def read_published(spark: SparkSession, target: Source, status: Source, run_id: str | None = None) -> DataFrame:
    """Read an output keeping only published (``complete``) runs, optionally one run.

    A run that is being written, or whose driver died before publishing, is invisible here even
    though some of its partitions may be on disk.
    """
    from ndcg_spark.job.io import read_run

    return read_run(spark, target, run_id).join(published_runs(spark, status), "run_id", "left_semi")
