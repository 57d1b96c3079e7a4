"""What the report shows, read from one run's tables: Spark in, plain Python rows out.

:func:`collect_report_data` reads the run's small tables -- aggregate, audit, run metadata,
comparison, guardrails, run status -- with ``.collect()`` (they are aggregates: systems x K x slices rows)
and reduces the per-request table to *bucketed counts* with :func:`histograms` (never raw rows).
The result is dicts, lists, numbers and strings, which
:func:`~ndcg_spark.report.html.render_html` turns into a page without Spark.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.aggregation.columns import AGGREGATE_LEGACY, AUDIT_LEGACY
from ndcg_spark.aggregation.worst_slice import audit
from ndcg_spark.comparison.columns import COMPARISON_LEGACY, COMPARISON_RENAMED
from ndcg_spark.config.contract import DEFAULT_METRICS, Contract
from ndcg_spark.config.judging_spec import MILESTONES
from ndcg_spark.config.report_spec import DEFAULT_BINS, ReportSpec
from ndcg_spark.errors import InputError
from ndcg_spark.legacy import as_current
from ndcg_spark.measures import LEGACY_METRIC
from ndcg_spark.report.panel import declared, metric_of, of_metric
from ndcg_spark.report.text_judging import HEAD
from ndcg_spark.trend.columns import TREND_LEGACY

__all__ = ["ReportSources", "collect_report_data", "histograms", "judging_rows"]


@dataclass(frozen=True)
class ReportSources:
    """One run's tables, as DataFrames holding that run's rows only: what a report is read from.

    Parameters
    ----------
    aggregate, per_request : DataFrame
        The rows of stage 2 (required: the report's numbers) and stage 1 (its histograms).
    audit : DataFrame, optional
        The worst-slice audit; when None it is recomputed from the aggregate rows.
    run_metadata, comparison : DataFrame, optional
        Shown when given (None: not configured or not written; the page says they are missing).
    run_status : DataFrame, optional
        The run's run-status rows: the page warns unless the run is published. None: not checked.
    attempts : DataFrame, optional
        The run's rows of the run-attempts table: the page says how many attempts the run took.
    trend : DataFrame, optional
        Trend rows (:func:`ndcg_spark.trend.series.trend`) of the overall slice for the last runs
        up to this one: the page's trend charts and the change from the previous comparable night.
    guardrails : DataFrame, optional
        The run's guardrail rows (:data:`ndcg_spark.guardrails.columns.GUARDRAIL_COLUMNS`, every
        slice): the Guardrails section and the overall verdict on the first screen. None or empty:
        the page is as without guardrails.
    agreement, agreement_history : DataFrame, optional
        One ``ndcg-spark agreement`` run's summary and experiment rows (the latest): the section
        "Does the offline metric predict the release?". None or empty: no section.
    judging : DataFrame, optional
        The run's judging plan (``ndcg-spark judge-next``): the "What to judge next" section reads
        its head, its rows at 100 / 500 / 1,000 documents and its last row. None or empty: no section.
    where : str
        Where the aggregate rows were read from, named in the error when they are empty.
    """

    aggregate: DataFrame
    per_request: DataFrame
    audit: DataFrame | None = None
    run_metadata: DataFrame | None = None
    comparison: DataFrame | None = None
    run_status: DataFrame | None = None
    attempts: DataFrame | None = None
    trend: DataFrame | None = None
    guardrails: DataFrame | None = None
    judging: DataFrame | None = None
    agreement: DataFrame | None = None
    agreement_history: DataFrame | None = None
    where: str = "the aggregate table"


def histograms(per_request: DataFrame, bins: int = DEFAULT_BINS, metric: str = LEGACY_METRIC) -> DataFrame:
    """Bucketed counts of a metric's per-request values (NDCG's by default) and of unjudged-in-top-K,
    per system x pool x K.

    Returns rows ``system, pool_version, k, metric, bucket, count``: ``metric = 'ndcg'`` (the metric's
    name) with ``bucket`` ``i`` for a value in ``[i / bins, (i + 1) / bins)`` (1.0 in the last bucket)
    and a null bucket for requests without a value (empty ideal under ``exclude``);
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
    value = F.col(metric).cast("double")
    bucket = F.when(value.isNotNull(), F.least(F.floor(value * bins).cast("int"), F.lit(bins - 1)))
    unjudged = F.col("n_unjudged_in_top_k").cast("int")
    both = per_request.select(
        *keys,
        F.explode(
            F.array(
                F.struct(F.lit(metric).alias("metric"), bucket.alias("bucket")),
                F.struct(F.lit("unjudged_in_top_k").alias("metric"), unjudged.alias("bucket")),
            )
        ).alias("_h"),
    )
    return (
        both.groupBy(*keys, F.col("_h.metric").alias("metric"), F.col("_h.bucket").alias("bucket"))
        .agg(F.count(F.lit(1)).alias("count"))
    )


def collect_report_data(
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
    sources : ReportSources
        The run's rows. The aggregate rows are required; the audit is recomputed from them with
        :func:`ndcg_spark.aggregation.worst_slice.audit` (same definition, a few rows) when
        ``sources.audit`` is None; run metadata, comparisons and run status are left out when None.
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
        When the aggregate rows are empty (the run was not aggregated).
    """
    every = _rows(as_current(sources.aggregate, AGGREGATE_LEGACY))
    if not every:
        raise InputError(
            f"report: run {run_id!r} has no rows in the aggregate table ({sources.where}); "
            "run it first (ndcg-spark run --run-id …)"
        )
    metadata = _rows(sources.run_metadata) if sources.run_metadata is not None else []
    metrics = declared(every, _declared_metrics(metadata[0] if metadata else None, contract))
    headline = metrics[0]
    audit_rows = _rows(as_current(sources.audit, AUDIT_LEGACY) if sources.audit is not None
                       else audit(sources.aggregate))
    comparisons = (_rows(as_current(sources.comparison, COMPARISON_LEGACY, COMPARISON_RENAMED))
                   if sources.comparison is not None else [])
    trend_rows = _rows(as_current(sources.trend, TREND_LEGACY)) if sources.trend is not None else []
    hist = _rows(histograms(sources.per_request, spec.bins, headline))
    data: dict[str, Any] = {"run_id": run_id}
    if sources.run_status is not None:
        wanted = [c for c in ("status", "reason", "ended_at") if c in sources.run_status.columns]
        statuses = sources.run_status.select(*wanted).collect()
        data["run_status"] = statuses[0]["status"] if statuses else None
        if statuses and statuses[0]["status"] == "failed":
            data["run_failure"] = {c: statuses[0][c] for c in wanted if c != "status"}
    if sources.attempts is not None:
        data["attempts"] = sorted((r.asDict() for r in sources.attempts.select("attempt_id", "outcome", "started_at").collect()),
                                  key=lambda r: (str(r["started_at"]), str(r["attempt_id"])))
    return data | {
        "bins": spec.bins,
        "chart_k": spec.k,
        # the headline metric's rows feed every section as NDCG's always did; the rest is the panel
        "metrics": list(metrics),
        "aggregates": of_metric(every, headline),
        "panel": [r for r in every if metric_of(r) != headline],
        "audit": of_metric(audit_rows, headline),
        "metadata": metadata[0] if metadata else None,
        "contract_from_config": None if contract is None else contract.to_dict(),
        "comparisons": comparisons,
        "trend": of_metric(trend_rows, headline),
        "guardrails": _rows(sources.guardrails) if sources.guardrails is not None else [],
        "judging": judging_rows(sources.judging) if sources.judging is not None else [],
        "agreement": _rows(sources.agreement) if sources.agreement is not None else [],
        "agreement_history": _rows(sources.agreement_history) if sources.agreement_history is not None else [],
        "agreement_headline": (headline, max(r["k"] for r in every)),
        "histograms": hist,
        "config_file": config_file,
        "generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def _declared_metrics(metadata: dict[str, Any] | None, contract: Contract | None) -> list[str] | None:
    """The run's metrics in the contract's order: its run-metadata contract's, else the config's."""
    if metadata and metadata.get("contract"):
        stamped = json.loads(metadata["contract"]).get("metrics", list(DEFAULT_METRICS))
        return [m if isinstance(m, str) else next(iter(m)) for m in stamped]
    return None if contract is None else list(contract.metric_names)


def judging_rows(plan: DataFrame) -> list[dict[str, Any]]:
    """The plan rows the report shows: its head, the rows at :data:`MILESTONES` documents, the last."""
    rank = F.col("plan_rank")
    last = plan.agg(F.max(rank)).first()[0]
    if last is None:
        return []
    return _rows(plan.filter((rank <= HEAD) | rank.isin(*MILESTONES) | (rank == last)))


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]
