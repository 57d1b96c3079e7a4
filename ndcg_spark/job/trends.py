"""The job's trend: the published runs of its aggregate table, night over night.

:func:`trend_rows` reads the job's aggregate and run-metadata tables through the run-status table
(only ``complete`` runs) and hands them to :func:`ndcg_spark.trend.series.trend`. Inside a run's
publishing bracket the run being published is added explicitly (it says ``running`` until the
bracket closes): :func:`trend_stage` writes that run's trend rows to ``outputs.trend`` -- its own
partition only, like every table -- so the table becomes visible with the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.config.trend_spec import TrendSpec
from ndcg_spark.errors import ContractError, InputError, spark_errors_as_input_errors
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.storage.io import read_run, read_written, write_run_partitioned
from ndcg_spark.publishing.status import published_runs
from ndcg_spark.trend.series import trend

__all__ = ["TrendResult", "trend_rows", "trend_stage"]


@dataclass(frozen=True)
class TrendResult:
    run_id: str
    #: the trend table (``outputs.trend``)
    target: Source
    rows_written: int
    seconds: float


def trend_rows(
    spark: SparkSession,
    config: JobConfig,
    spec: TrendSpec | None = None,
    *,
    including: str | None = None,
    up_to: str | None = None,
) -> DataFrame:
    """The trend of the job's published runs (:func:`~ndcg_spark.trend.series.trend`).

    Parameters
    ----------
    spec : the runs to show and the empty-ideal shift; default the YAML's ``trend:`` section.
    including : a run being published (inside its bracket), taken as if it were complete.
    up_to : leave out the runs after this run id (a report of an older night).
    """
    spec = config.trend_spec() if spec is None else spec
    aggregate = config.output("aggregate")
    if aggregate is None:
        raise ContractError("outputs.aggregate", "is required for a trend (the aggregate table of stage 2)")
    every_aggregate = read_written(spark, aggregate)
    if every_aggregate is None:
        raise InputError(f"trend: no aggregate table at {aggregate.describe()}; run stage 2 first (ndcg-spark run)")
    with spark_errors_as_input_errors("trend"):
        published = published_runs(spark, config.run_status())
        aggregates = _published(every_aggregate, published, including)
        metadata_table = config.output("run_metadata")
        every_metadata = None if metadata_table is None else read_written(spark, metadata_table)
        metadata = None if every_metadata is None else _published(every_metadata, published, including)
        if up_to is not None:
            aggregates = aggregates.filter(F.col("run_id") <= F.lit(up_to))
        return trend(aggregates, spec, metadata)


def trend_stage(spark: SparkSession, config: JobConfig, run_id: str) -> TrendResult | None:
    """Write the trend rows of ``run_id`` (being published) to ``outputs.trend``; None when not configured."""
    target = config.output("trend")
    if target is None:
        return None
    started = time.perf_counter()
    rows = trend_rows(spark, config, config.trend_spec(), including=run_id, up_to=run_id)
    with spark_errors_as_input_errors("trend"):
        write_run_partitioned(rows.filter(F.col("run_id") == F.lit(run_id)), target)
        written = read_run(spark, target, run_id).count()
    return TrendResult(run_id, target, written, time.perf_counter() - started)


def _published(rows: DataFrame, published: DataFrame, including: str | None) -> DataFrame:
    """Of a table's ``rows``, those of every ``published`` run, plus those of ``including``."""
    kept = rows.join(published, "run_id", "left_semi")
    if including is not None:
        run = F.col("run_id") == F.lit(including)
        kept = kept.filter(~run).unionByName(rows.filter(run))
    return kept
