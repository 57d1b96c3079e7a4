"""The job's guardrails: after ``compare``, the guardrail table of the same two systems.

:func:`guardrail_stage` reads the run's published per-request rows, the release's outcomes
(``guardrails.release.outcomes``) and, for offline guardrails, the candidates, judgments and
documents (``guardrails.documents``); it hands them to
:func:`~ndcg_spark.guardrails.table.guardrail_table` and writes ``outputs.guardrails``, replacing
only this run's partition for this baseline and candidate, like the comparison table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from ndcg_spark.config.guardrail_spec import GuardrailSpec
from ndcg_spark.errors import ContractError, spark_errors_as_input_errors
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.storage.io import read_source, write_run_partitioned
from ndcg_spark.publishing.status import read_published

__all__ = ["GuardrailResult", "guardrail_plan", "guardrail_stage"]


@dataclass(frozen=True)
class GuardrailResult:
    run_id: str
    #: the guardrail table (``outputs.guardrails``)
    target: Source
    #: this comparison's rows (one per guardrail x K x slice: small)
    rows: list[dict[str, Any]]
    overall_verdict: str
    seconds: float


def guardrail_plan(config: JobConfig) -> tuple[GuardrailSpec, Source] | None:
    """The ``guardrails:`` section and its output, checked before Spark is touched; None when the
    job declares no guardrails."""
    spec = config.guardrail_spec()
    if spec is None:
        return None
    target = config.output("guardrails")
    if target is None:
        raise ContractError("outputs.guardrails", "is required (a path or a table) when the job declares guardrails")
    outcomes, _ = config.guardrail_sources(spec)
    if spec.release_checks and outcomes is None:
        raise ContractError("guardrails.release.outcomes", "is required (a path or a table) by release guardrails")
    return spec, target


def guardrail_stage(spark: SparkSession, config: JobConfig, run_id: str) -> GuardrailResult | None:
    """Compute and write the guardrails of ``compare.candidate`` against ``compare.baseline`` for
    the published run ``run_id``; None when the job declares no guardrails."""
    from ndcg_spark.guardrails.table import guardrail_table

    plan = guardrail_plan(config)
    if plan is None:
        return None
    spec, target = plan
    compare = config.compare_spec()
    outcomes_source, documents_source = config.guardrail_sources(spec)
    started = time.perf_counter()
    with spark_errors_as_input_errors("guardrails"):
        per_request = read_published(spark, config.per_request, config.run_status(), run_id)
        offline = bool(spec.offline_checks)
        table = guardrail_table(
            per_request, spec, compare,
            outcomes=read_source(spark, outcomes_source, "guardrails.release.outcomes") if outcomes_source else None,
            candidates=read_source(spark, config.candidates, "inputs.candidates") if offline else None,
            judgments=read_source(spark, config.judgments, "inputs.judgments") if offline and config.judgments else None,
            documents=read_source(spark, documents_source, "guardrails.documents") if documents_source else None,
            contract=config.contract, system=config.system, pool_version=config.pool_version,
            validate=False,  # stage 1 validated these inputs under the declared handling
        )
        write_run_partitioned(table, target, partition_by=("run_id", "baseline", "candidate"))
    rows = [r.asDict() for r in table.collect()]
    verdict = rows[0]["overall_verdict"] if rows else "inconclusive"
    return GuardrailResult(run_id, target, rows, verdict, time.perf_counter() - started)
