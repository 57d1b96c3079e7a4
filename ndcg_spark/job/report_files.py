"""A job's HTML report on disk: which tables it is read from, which folder it goes to, the files.

The report itself is library code (:mod:`ndcg_spark.report`: data from tables, pages from data);
this module is the job's side: the tables named in the YAML's ``outputs``, the folder
``outputs.report_dir``, and each page written to a temporary name and renamed, so a reader never
sees half a page. A run's pages are ``<report_dir>/<run_id>/report.html`` plus one
``comparison-<baseline>-vs-<candidate>.html`` per comparison of the run.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from ndcg_spark.errors import ContractError, InputError
from ndcg_spark.publishing.attempts import read_attempts
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.storage.io import read_run, read_written
from ndcg_spark.job.trends import trend_rows
from ndcg_spark.metrics.slices import overall_rows
from ndcg_spark.report.data import ReportSources, collect_report_data
from ndcg_spark.report.format import safe_name
from ndcg_spark.report.html import RUN_PAGE, render_pages

__all__ = ["report_configured", "report_dir", "report_sources", "write_report"]


def report_configured(config: JobConfig) -> bool:
    """Whether the job has the tables a report is built from (``outputs.aggregate``, stage 2)."""
    return config.writes_stage2()


def report_dir(config: JobConfig) -> Path:
    """``outputs.report_dir`` (resolved like every path), default ``reports`` beside the job's relative paths."""
    return config.output_folder("report_dir")


def report_sources(spark: SparkSession, config: JobConfig, run_id: str) -> ReportSources:
    """The run's rows of the tables named in the job's ``outputs`` (``aggregate`` and ``per_request``
    are required; an optional table not configured or not written yet is None)."""
    aggregate = config.output("aggregate")
    if aggregate is None:
        raise ContractError("outputs.aggregate", "is required for a report (the aggregate table of stage 2)")
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required for a report (its histograms)")
    aggregates = read_written(spark, aggregate, run_id)
    if aggregates is None:
        raise InputError(f"report: no aggregate table at {aggregate.describe()}; run stage 2 first (ndcg-spark run)")

    def written(target: Source | None, merge_schema: bool = False):
        return None if target is None else read_written(spark, target, run_id, merge_schema=merge_schema)

    return ReportSources(
        aggregate=aggregates,
        per_request=read_run(spark, config.per_request, run_id),
        audit=written(config.output("audit")),  # None: recomputed from the aggregate rows
        run_metadata=written(config.output("run_metadata")),
        comparison=written(config.output("comparison")),
        guardrails=written(config.output("guardrails")),
        judging=written(config.output("judging_plan")),
        **_latest_agreement(spark, config),
        run_status=written(config.run_status(), merge_schema=True),  # rows of older versions lack the reason
        attempts=read_attempts(spark, config.run_attempts(), run_id),
        trend=_report_trend(spark, config, run_id),
        where=aggregate.describe(),
    )


def _latest_agreement(spark: SparkSession, config: JobConfig) -> dict:
    """The latest ``ndcg-spark agreement`` run's summary and experiment rows (by when they were
    computed), or nothing when the job has no agreement table or it is empty."""
    from pyspark.sql import functions as F

    target = config.output("agreement")
    summary = None if target is None else read_written(spark, target)
    if summary is None:
        return {}
    latest = summary.orderBy(F.col("created_at").desc(), F.col("run_id").desc()).select("run_id").limit(1).collect()
    if not latest:
        return {}
    run = latest[0]["run_id"]
    history = read_written(spark, config.output("agreement_history"), run)
    return {"agreement": summary.filter(F.col("run_id") == run), "agreement_history": history}


#: runs a report's trend charts show when the YAML's ``trend.last`` does not say
REPORT_TREND_RUNS = 14


def _report_trend(spark: SparkSession, config: JobConfig, run_id: str):
    """The overall trend rows of the last runs up to ``run_id`` (the published ones, and this one)."""
    spec = config.trend_spec()
    spec = spec.narrowed(last=spec.last or REPORT_TREND_RUNS)
    return overall_rows(trend_rows(spark, config, spec, including=run_id, up_to=run_id))


def write_report(spark: SparkSession, config: JobConfig, run_id: str) -> Path:
    """Write the run's report (and one page per comparison); returns the run report's path."""
    spec = config.report_spec()
    data = collect_report_data(report_sources(spark, config, run_id), run_id, spec, contract=config.contract,
                               config_file=config.source_file)
    folder = report_dir(config) / safe_name(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    for name, page in render_pages(data).items():
        _write_atomic(folder / name, page)
    return folder / RUN_PAGE


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
