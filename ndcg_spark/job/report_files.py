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

from ndcg_spark.errors import ContractError
from ndcg_spark.job.config import JobConfig
from ndcg_spark.report.data import ReportSources, collect_report_data
from ndcg_spark.report.format import safe_name
from ndcg_spark.report.html import RUN_PAGE, render_pages

__all__ = ["report_configured", "report_dir", "report_sources", "write_report"]


def report_configured(config: JobConfig) -> bool:
    """Whether the job has the tables a report is built from (``outputs.aggregate``, stage 2)."""
    return config.writes_stage2()


def report_dir(config: JobConfig) -> Path:
    """``outputs.report_dir`` (relative to the checkout like every path), default ``<checkout>/reports``."""
    base = config.section("base")
    value = (config.section("outputs") or {}).get("report_dir", "reports")
    if not isinstance(value, str) or not value or "://" in value:
        raise ContractError("outputs.report_dir", f"must be a local folder path, got {value!r}")
    path = Path(value)
    return path if path.is_absolute() or not base else Path(base) / path


def report_sources(config: JobConfig) -> ReportSources:
    """The run's tables named in the job's ``outputs`` (``aggregate`` and ``per_request`` are required)."""
    aggregate = config.output("aggregate")
    if aggregate is None:
        raise ContractError("outputs.aggregate", "is required for a report (the aggregate table of stage 2)")
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required for a report (its histograms)")
    return ReportSources(
        aggregate=aggregate,
        per_request=config.per_request,
        audit=config.output("audit"),  # None when the job writes no audit table
        run_metadata=config.output("run_metadata"),
        comparison=config.output("comparison"),
        run_status=config.run_status(),
    )


def write_report(spark: SparkSession, config: JobConfig, run_id: str) -> Path:
    """Write the run's report (and one page per comparison); returns the run report's path."""
    spec = config.report_spec()
    data = collect_report_data(spark, report_sources(config), run_id, spec, contract=config.contract,
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
