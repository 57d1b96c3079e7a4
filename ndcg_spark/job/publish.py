"""Publishing a run atomically: a run-status row written last, and readers that filter on it.

A nightly write replaces only its own ``run_id`` partitions (dynamic partition overwrite), so the
previous night is never deleted. That alone does not stop a reader from seeing *half* a run: a
driver killed while the per-request table is being committed, or between the per-request and the
aggregate write, leaves some of the run's partitions on disk. So every run goes through

1. :func:`mark_run` ``status = 'running'`` — written *first*; a re-run of a published run id
   hides the old copy of that run while it is being replaced;
2. the data writes (every stage);
3. :func:`mark_run` ``status = 'complete'`` — written *last*, one row.

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
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.job.config import Source

RUNNING = "running"
COMPLETE = "complete"
RUN_STATUS_SCHEMA = "run_id string, status string, updated_at timestamp, code_version string"


def mark_run(spark: SparkSession, target: Source, run_id: str, status: str) -> None:
    """Replace the status row of ``run_id`` with ``status`` (its own partition; other runs untouched)."""
    from ndcg_spark import __version__
    from ndcg_spark.job.io import write_run_partitioned

    row = spark.createDataFrame(
        [(run_id, status, dt.datetime.now(dt.timezone.utc).replace(tzinfo=None), __version__)], RUN_STATUS_SCHEMA
    )
    write_run_partitioned(row.coalesce(1), target)


@contextlib.contextmanager
def publishing(spark: SparkSession, status: Source, run_id: str) -> Iterator[Source]:
    """Bracket a run's writes: ``running`` before, ``complete`` after — only if the block succeeded::

        with publishing(spark, config.run_status(), run_id):
            score_stage(spark, config, run_id)
            ...  # every later stage of the run

    ``status`` is the run-status table; the block gets it back (to say where the run was published).
    """
    from ndcg_spark.job.steps import step

    with step(spark, run_id, "unpublish", level=logging.DEBUG):
        mark_run(spark, status, run_id, RUNNING)
    yield status
    with step(spark, run_id, "publish"):
        mark_run(spark, status, run_id, COMPLETE)


def published_runs(spark: SparkSession, status: Source) -> DataFrame:
    """The run ids whose status row says ``complete`` (empty if nothing was ever published)."""
    from ndcg_spark.job.io import output_exists, read_run

    if not output_exists(spark, status):  # no status table yet: nothing is published
        return spark.createDataFrame([], "run_id string")
    return read_run(spark, status).filter(F.col("status") == COMPLETE).select("run_id").distinct()


def read_published(spark: SparkSession, target: Source, status: Source, run_id: str | None = None) -> DataFrame:
    """Read an output keeping only published (``complete``) runs, optionally one run.

    A run that is being written, or whose driver died before publishing, is invisible here even
    though some of its partitions may be on disk.
    """
    from ndcg_spark.job.io import read_run

    return read_run(spark, target, run_id).join(published_runs(spark, status), "run_id", "left_semi")
