"""What the report shows, read from one run's tables: Spark in, plain Python rows out.

:func:`collect_report_data` reads the run's small tables -- aggregate, audit, run metadata,
comparison, run status -- with ``.collect()`` (they are aggregates: systems x K x slices rows)
and reduces the per-request table to *bucketed counts* with :func:`histograms` (never raw rows).
The result is dicts, lists, numbers and strings, which
:func:`~ndcg_spark.report.html.render_html` turns into a page without Spark.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.report_spec import DEFAULT_BINS, ReportSpec
from ndcg_spark.errors import InputError
from ndcg_spark.job.config import Source
from ndcg_spark.job.io import read_run

__all__ = ["ReportSources", "collect_report_data", "histograms"]


@dataclass(frozen=True)
class ReportSources:
    """Where one run's tables are: what a report is read from.

    Parameters
    ----------
    aggregate, per_request : Source
        The tables of stage 2 (required: the report's numbers) and stage 1 (its histograms).
    audit : Source, optional
        The worst-slice audit; when None it is recomputed from the aggregate rows.
    run_metadata, comparison : Source, optional
        Shown when given and written (the page says when they are missing).
    run_status : Source, optional
        The run-status table: the page warns unless the run is published. None: not checked.
    """

    aggregate: Source
    per_request: Source
    audit: Source | None = None
    run_metadata: Source | None = None
    comparison: Source | None = None
    run_status: Source | None = None


def histograms(per_request: DataFrame, bins: int = DEFAULT_BINS) -> DataFrame:
    """Bucketed counts of per-request NDCG and of unjudged-in-top-K, per system x pool x K.

    Returns rows ``system, pool_version, k, metric, bucket, count``: ``metric = 'ndcg'`` with
    ``bucket`` ``i`` for NDCG in ``[i / bins, (i + 1) / bins)`` (1.0 in the last bucket) and a
    null bucket for requests without an NDCG (empty ideal under ``exclude``);
    ``metric = 'unjudged_in_top_k'`` with the count itself as the bucket (null under
    ``unjudged: zero``, which does not count them).

    Examples
    --------
    >>> pr = spark.createDataFrame([("s", "p", 3, 0.05, 0), ("s", "p", 3, 1.0, 2), ("s", "p", 3, None, 1)],
    ...     "system string, pool_version string, k int, ndcg double, n_unjudged_in_top_k int")
    >>> histograms(pr, bins=10).orderBy("metric", "bucket").select("metric", "bucket", "count").show()
    +-----------------+------+-----+
    |           metric|bucket|count|
    +-----------------+------+-----+
    |             ndcg|  NULL|    1|
    |             ndcg|     0|    1|
    |             ndcg|     9|    1|
    |unjudged_in_top_k|     0|    1|
    |unjudged_in_top_k|     1|    1|
    |unjudged_in_top_k|     2|    1|
    +-----------------+------+-----+
    <BLANKLINE>
    """
    keys = ["system", "pool_version", "k"]
    ndcg = F.col("ndcg").cast("double")
    bucket = F.when(ndcg.isNotNull(), F.least(F.floor(ndcg * bins).cast("int"), F.lit(bins - 1)))
    unjudged = F.col("n_unjudged_in_top_k").cast("int")
    both = per_request.select(
        *keys,
        F.explode(
            F.array(
                F.struct(F.lit("ndcg").alias("metric"), bucket.alias("bucket")),
                F.struct(F.lit("unjudged_in_top_k").alias("metric"), unjudged.alias("bucket")),
            )
        ).alias("_h"),
    )
    return (
        both.groupBy(*keys, F.col("_h.metric").alias("metric"), F.col("_h.bucket").alias("bucket"))
        .agg(F.count(F.lit(1)).alias("count"))
    )


def collect_report_data(
    spark: SparkSession,
    sources: ReportSources,
    run_id: str,
    spec: ReportSpec = ReportSpec(),
    *,
    contract: Contract | None = None,
    config_file: str | None = None,
) -> dict[str, Any]:
    """Everything the page shows for ``run_id``, as plain Python (see :func:`~ndcg_spark.report.html.render_html`).

    Parameters
    ----------
    spark : SparkSession
    sources : ReportSources
        The run's tables. The aggregate table is required and must hold the run; the audit is
        recomputed from the aggregate rows with :func:`ndcg_spark.aggregation.worst_slice.audit` (same
        definition, a few rows) when ``sources.audit`` is None; run metadata, comparisons and
        run status are left out when their table is not given or not written.
    run_id : str
    spec : ReportSpec
        Histogram buckets and the K the slice charts are drawn at.
    contract : Contract, optional
        The declared contract, shown when the run has no run-metadata row.
    config_file : str, optional
        The file the settings came from, shown on the page.

    Raises
    ------
    InputError
        When the aggregate table does not exist or has no rows for ``run_id``.
    """
    aggregates_df = _aggregate_rows(spark, sources.aggregate, run_id)
    aggregates = _rows(aggregates_df)
    if not aggregates:
        raise InputError(
            f"report: run {run_id!r} has no rows in the aggregate table ({sources.aggregate.describe()}); "
            "run it first (ndcg-spark run --run-id …)"
        )
    audit_rows = _audit_rows(spark, sources.audit, aggregates_df, run_id)
    metadata = _written_rows(spark, sources.run_metadata, run_id)
    comparisons = _written_rows(spark, sources.comparison, run_id)
    hist = _rows(histograms(read_run(spark, sources.per_request, run_id), spec.bins))
    data: dict[str, Any] = {"run_id": run_id}
    if sources.run_status is not None:
        data["run_status"] = _run_status(spark, sources.run_status, run_id)
    return data | {
        "bins": spec.bins,
        "chart_k": spec.k,
        "aggregates": aggregates,
        "audit": audit_rows,
        "metadata": metadata[0] if metadata else None,
        "contract_from_config": None if contract is None else contract.to_dict(),
        "comparisons": comparisons,
        "histograms": hist,
        "config_file": config_file,
        "generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _exists(spark: SparkSession, target: Source) -> bool:
    """Whether a table or a path has been written at all."""
    if target.table is not None:
        return spark.catalog.tableExists(target.table)
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(target.path)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path)


def _aggregate_rows(spark: SparkSession, target: Source, run_id: str) -> DataFrame:
    if not _exists(spark, target):
        raise InputError(f"report: no aggregate table at {target.describe()}; run stage 2 first (ndcg-spark run)")
    return read_run(spark, target, run_id)


def _audit_rows(spark: SparkSession, target: Source | None, aggregates: DataFrame, run_id: str) -> list[dict[str, Any]]:
    """The audit table's rows of the run, or the audit recomputed from its aggregate rows."""
    if target is not None:
        return _rows(read_run(spark, target, run_id))
    from ndcg_spark.aggregation.worst_slice import audit

    return _rows(audit(aggregates))


def _written_rows(spark: SparkSession, target: Source | None, run_id: str) -> list[dict[str, Any]]:
    """The run's rows of an optional table: none when it is not configured or not written yet."""
    if target is None or not _exists(spark, target):
        return []
    return _rows(read_run(spark, target, run_id))


def _run_status(spark: SparkSession, target: Source, run_id: str) -> str | None:
    """The run's publication status (:mod:`ndcg_spark.job.publish`): ``complete``, ``running`` or None."""
    if not _exists(spark, target):
        return None
    rows = read_run(spark, target, run_id).select("status").collect()
    return rows[0]["status"] if rows else None
