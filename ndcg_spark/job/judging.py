"""``ndcg-spark judge-next``: a night's judging plan, written as a table and as the judges' files.

Wiring only: the job's inputs read and checked under its ``validation:`` section (as stage 1
checks them; quarantined rows are left out, not written again), :func:`~ndcg_spark.judging.plan.judge_next`
under the ``judging:`` section (the ``compare:`` section names a comparison's rankers), the plan
written to ``outputs.judging_plan`` (this run's partition replaced), the judges' files to
``<outputs.judging_dir>/<run_id>/`` (default ``judging/``, each written whole under a temporary name,
then renamed), and the run's report written again when the job has one, with its "What to judge
next" section.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.config.judging_spec import JudgingSpec
from ndcg_spark.errors import ContractError, InputError, spark_errors_as_input_errors
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.storage.io import read_source, write_run_partitioned
from ndcg_spark.job.report_files import report_configured, write_report
from ndcg_spark.judging.files import judging_csv, qrels_template
from ndcg_spark.judging.plan import judge_next
from ndcg_spark.judging.swings import scale_of
from ndcg_spark.report.text_judging import describe_plan
from ndcg_spark.report.format import safe_name
from ndcg_spark.validation.validate import validate_inputs

__all__ = ["CSV_FILE", "QRELS_FILE", "JudgingResult", "judging_dir", "judging_stage"]

#: the judges' files, in ``<outputs.judging_dir>/<run_id>/``
QRELS_FILE, CSV_FILE = "qrels-template.txt", "to-judge.csv"


@dataclass(frozen=True)
class JudgingResult:
    """What ``judge-next`` wrote: the table, the judges' files, the plan's rows, the report."""

    run_id: str
    target: Source
    rows: tuple[dict[str, Any], ...]
    seconds: float
    files: tuple[Path, ...]
    #: the run's report, written again with the plan (None: the job has no report, or see ``report_note``)
    report: Path | None = None
    report_note: str | None = None


def judging_dir(config: JobConfig) -> Path:
    """``outputs.judging_dir`` (resolved like every path), default ``judging`` beside the job's relative paths."""
    return config.output_folder("judging_dir")


def judging_stage(spark: SparkSession, config: JobConfig, run_id: str, spec: JudgingSpec) -> JudgingResult:
    """Plan what to judge next for ``run_id`` and write the plan and the judges' files (see the module docstring)."""
    started = time.perf_counter()
    target = config.output("judging_plan")
    if target is None:
        raise ContractError("outputs.judging_plan", "is required (a path or a table) to write a judging plan")
    scale_of(config.contract)  # a plan weighs every grade of the scale: refused before reading anything
    spec.cutoff(config.contract)
    sides = _rankers(config, spec)
    folder = judging_dir(config) / safe_name(run_id)
    validation, _ = config.validation()
    with spark_errors_as_input_errors("judge-next"):
        trailing = config.trailing_fields()  # read as stage 1 reads them, without its lineage listing
        candidates = read_source(spark, config.candidates, "inputs.candidates", trailing_fields=trailing)
        judgments = (read_source(spark, config.judgments, "inputs.judgments", trailing_fields=trailing)
                     if config.judgments else None)
        source = config.attributes.source
        attributes = config.attributes.of(read_source(spark, source, "attributes") if source else None)
        validated = validate_inputs(candidates, judgments, config.contract, validation, attributes=attributes,
                                    system=config.system, pool_version=config.pool_version, run_id=run_id)
        try:
            plan = judge_next(validated.candidates, validated.judgments, validated.contract, spec,
                              attributes=validated.attributes, system=config.system, pool_version=config.pool_version,
                              run_id=run_id, validate=False, **sides)
            rows = tuple(r.asDict(recursive=True) for r in plan.orderBy("plan_rank").collect())
            write_run_partitioned(plan, target)
            described = _attributes_of(validated.attributes.table, rows)
        finally:
            validated.unpersist()
    files = _write_files(folder, rows, described, validated.contract, run_id)
    report, note = _report_again(spark, config, run_id)
    return JudgingResult(run_id, target, rows, time.perf_counter() - started, files, report, note)


def _rankers(config: JobConfig, spec: JudgingSpec) -> dict[str, Any]:
    """The ``compare:`` section's rankers: a comparison's two sides, an aggregate's default system."""
    if config.compare is None:
        if spec.target == "compare":
            raise ContractError("compare", "is required for a judging plan of a comparison: it names the baseline "
                                "and the candidate")
        return {}
    compare = config.compare_spec()
    return {"baseline": compare.baseline, "candidate": compare.candidate}


def _attributes_of(table: DataFrame | None, rows: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The attribute rows of the plan's requests (none without an attributes table)."""
    if table is None or not rows:
        return []
    ids = table.sparkSession.createDataFrame([(r,) for r in sorted({row["request_id"] for row in rows})],
                                             "request_id string")
    request_id = F.col("request_id").cast("string")
    keyed = table.select(request_id.alias("request_id"), *[c for c in table.columns if c != "request_id"])
    return [r.asDict() for r in keyed.join(F.broadcast(ids), "request_id").collect()]


def _write_files(folder: Path, rows, attributes, contract, run_id: str) -> tuple[Path, ...]:
    """The qrels template and the CSV, each written whole under a temporary name, then renamed."""
    folder.mkdir(parents=True, exist_ok=True)
    what = f"{describe_plan(rows[0])}, run {run_id}" if rows else f"nothing unjudged to judge, run {run_id}"
    grades = [g for g, _ in scale_of(contract)]
    out = []
    for name, text in ((QRELS_FILE, qrels_template(rows, what, grades)), (CSV_FILE, judging_csv(rows, attributes))):
        path = folder / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        out.append(path)
    return tuple(out)


def _report_again(spark: SparkSession, config: JobConfig, run_id: str) -> tuple[Path | None, str | None]:
    """The run's report with the plan, when the job has one; a run not aggregated yet has none (noted)."""
    if not report_configured(config):
        return None, None
    try:
        return write_report(spark, config, run_id), None
    except InputError as exc:
        return None, str(exc)
