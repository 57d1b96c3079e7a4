"""The sequence of a run, in one function: what ``ndcg-spark <command>`` and the spark-submit entry do.

:func:`run_job` is the order of a night, and nothing else:

1. **pre-checks** that touch no output: stage 2's plan (the ``aggregate:`` section, the output
   tables) before anything is scored or unpublished; under ``aggregate``, that the run was
   scored (under this contract); under ``compare``, the ``report:`` section and folder and the
   ``guardrails:`` section before the comparison is written;
2. **the publishing bracket** (:func:`~ndcg_spark.publishing.lease.publishing`): the attempt takes the
   run's lease (refused, or waited for, while another live attempt is running it;
   :mod:`ndcg_spark.publishing.lease`), the run-status row says ``running`` first and ``complete`` last
   (``failed`` with the reason when a stage fails or a signal ends it), around stage 1 (``score``,
   ``run``) and stage 2 (``aggregate``, and ``run`` when the job has ``outputs.aggregate``), the
   lease checked at every step boundary and its heartbeat rewritten on a timer meanwhile; the
   attempt's own row in the run-attempts table says how far it got and how it ended;
3. **the comparison** (``compare``: published runs only, so outside the bracket), then the
   guardrails of the same two systems when the job declares ``guardrails:``;
4. **the report** (``run`` and ``compare`` when the job has an aggregate table; ``report`` always).

It returns a :class:`RunOutcome`: what was written, with the rows the closing lines summarize
(plain Python rows; :mod:`ndcg_spark.report.text` turns them into text). For example::

    config = JobConfig.from_yaml("conf/local.yaml")
    outcome = run_job(spark, config, "run", "2026-11-29")
    outcome.aggregated.row_counts        # {'per_request': 160000, 'aggregate': 88, 'audit': 24, ...}
    outcome.report.path                  # <checkout>/reports/2026-11-29/report.html
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from ndcg_spark.errors import InputError
from ndcg_spark.frames import collect_sorted
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.job.guardrails import GuardrailResult, guardrail_plan, guardrail_stage
from ndcg_spark.storage.io import read_run
from ndcg_spark.publishing.lease import publishing
from ndcg_spark.storage.lineage import Replay, replay_plan
from ndcg_spark.job.report_files import report_configured, report_dir, write_report
from ndcg_spark.publishing.steps import planned, step
from ndcg_spark.job.trends import TrendResult, trend_stage
from ndcg_spark.metrics.slices import overall_rows
from ndcg_spark.job.stages import (
    AggregateResult,
    CompareResult,
    StageResult,
    aggregate_stage,
    compare_stage,
    score_stage,
    stage2_input,
    stage2_plan,
    resolved_contract,
    stage2_summary,
    summarize_per_request,
)

__all__ = ["COMMANDS", "ReportOutcome", "RunOutcome", "run_job"]

COMMANDS = ("score", "run", "aggregate", "compare", "report")
"""What a run can be asked to do (the console script's commands that read a job YAML)."""

_REPORTING = ("run", "compare", "report")
"""The commands that write the HTML report."""


@dataclass(frozen=True)
class ReportOutcome:
    """The run's HTML report: where it was written and how long it took, or why it was not."""

    #: ``<report_dir>/<run_id>/report.html``, or None when not written
    path: Path | None
    seconds: float
    #: why there is no report (``compare`` on a run that has no aggregate rows yet)
    not_written: str | None = None


@dataclass(frozen=True)
class RunOutcome:
    """What one :func:`run_job` did: the stages' results and the rows of its closing summary."""

    command: str
    run_id: str
    #: the contract's metrics, in its order: the summaries show the first as the headline
    metrics: tuple[str, ...] = ()
    #: the run-status table that says this run is complete (the commands that write stages)
    published: Source | None = None
    #: the attempt that wrote and published the run (its id on the run-status row)
    attempt_id: str | None = None
    #: stage 1 (``score``, ``run``)
    scored: StageResult | None = None
    #: the per-request table summarized per system x K (when stage 2 did not run)
    per_request_means: tuple[dict[str, Any], ...] = ()
    #: stage 2 (``aggregate``, ``run`` with ``outputs.aggregate``)
    aggregated: AggregateResult | None = None
    #: the overall rows of the aggregate table, and the worst slice per dimension (audit rows)
    overall: tuple[dict[str, Any], ...] = ()
    worst_slices: tuple[dict[str, Any], ...] = ()
    #: this run's rows of the trend table (``outputs.trend``, written with stage 2)
    trended: TrendResult | None = None
    #: this run's overall trend rows: the change from the previous comparable night, flags, breaks
    trend_overall: tuple[dict[str, Any], ...] = ()
    #: the comparison (``compare``)
    compared: CompareResult | None = None
    #: the guardrails of the same two systems (``compare``, when the job declares ``guardrails:``)
    guarded: GuardrailResult | None = None
    #: the HTML report, or None when the command writes none
    report: ReportOutcome | None = None


def run_job(
    spark: SparkSession,
    config: JobConfig,
    command: str,
    run_id: str,
    *,
    before_report: Callable[[RunOutcome], None] | None = None,
    take_over: bool = False,
    wait: dt.timedelta | None = None,
    replay: str | None = None,
) -> RunOutcome:
    """Run ``command`` (one of :data:`COMMANDS`) of the job ``config`` for ``run_id``.

    Parameters
    ----------
    spark : the session (local, or the cluster's under spark-submit).
    config : the job.
    command : ``score`` (stage 1), ``aggregate`` (stage 2 of a scored run), ``run`` (stage 1,
        then stage 2 when the job has ``outputs.aggregate``, then the report), ``compare`` (two
        rankers of a published run, then the report) or ``report``.
    run_id : the run to write (or read).
    before_report : called with the outcome once the stages are done and before the report is
        written, e.g. to print the stages' lines first; the report then comes in the returned
        outcome.
    take_over, wait : while another attempt is running the run: take it over at once, or wait
        up to ``wait`` for it to end or go stale (:func:`~ndcg_spark.publishing.lease.acquire`).
    replay : (``score``, ``run``) a run whose recorded inputs stage 1 reads instead of the YAML's
        current ones, exactly as that run read them (:mod:`ndcg_spark.storage.lineage`); checked
        before anything is written.

    Returns
    -------
    RunOutcome
        What was written. Deliberate failures raise :class:`~ndcg_spark.errors.NdcgError`
        before anything is written where the order above allows it.
    """
    if command not in COMMANDS:
        raise ValueError(f"command: must be one of {', '.join(COMMANDS)}, got {command!r}")
    if replay is not None and command not in ("score", "run"):
        raise ValueError(f"replay: only score and run read inputs, not {command}")
    stage2 = command == "aggregate" or (command == "run" and config.writes_stage2())
    with planned(_step_names(config, command, stage2=stage2)):
        return _run_steps(spark, config, command, run_id, stage2=stage2, before_report=before_report,
                          take_over=take_over, wait=wait, replay=replay)


def _step_names(config: JobConfig, command: str, *, stage2: bool) -> tuple[str, ...]:
    """The steps ``command`` announces, in order: what ``step 2 of 5`` counts."""
    if command == "compare":
        steps = ("compare", *(("guardrails",) if guardrail_plan(config) is not None else ()))
    elif command == "report":
        steps = ()
    else:
        steps = (*(("score",) if command != "aggregate" else ()), *(("aggregate",) if stage2 else ()),
                 *(("trend",) if stage2 and config.output("trend") is not None else ()), "publish")
    reports = command == "report" or (command in _REPORTING and report_configured(config))
    return (*steps, *(("report",) if reports else ()))


def _run_steps(spark: SparkSession, config: JobConfig, command: str, run_id: str, *, stage2: bool,
               before_report: Callable[[RunOutcome], None] | None, take_over: bool, wait: dt.timedelta | None,
               replay: str | None) -> RunOutcome:
    """:func:`run_job`'s steps, in its order."""
    with step(spark, run_id, "checks", level=logging.DEBUG):
        _check_before_writing(spark, config, command, run_id, stage2=stage2)
        plan = None if replay is None else _replay(spark, config, replay)
    if command == "compare":
        with step(spark, run_id, "compare"):
            compared = compare_stage(spark, config, run_id)
        guarded = None
        if guardrail_plan(config) is not None:  # the job declares guardrails
            with step(spark, run_id, "guardrails"):
                guarded = guardrail_stage(spark, config, run_id)
        outcome = RunOutcome(command, run_id, config.contract.metric_names, compared=compared, guarded=guarded)
    elif command == "report":
        outcome = RunOutcome(command, run_id, config.contract.metric_names)
    else:
        outcome = _published_stages(spark, config, command, run_id, stage2=stage2, take_over=take_over, wait=wait,
                                    replay=plan)
    if before_report is not None:
        before_report(outcome)
    return replace(outcome, report=_report(spark, config, command, run_id))


def _check_before_writing(spark: SparkSession, config: JobConfig, command: str, run_id: str, *, stage2: bool) -> None:
    """Refuse what would fail later, before anything is unpublished, scored or written: a bad
    ``aggregate:`` section or missing stage-2 output, an unscored run under ``aggregate``, a bad
    ``report:`` section or folder under ``compare``."""
    if stage2:
        stage2_plan(config)
        config.trend_spec()
        if command == "aggregate":
            stage2_input(spark, config, run_id)
    if command == "compare":
        guardrail_plan(config)
    if command == "compare" and report_configured(config):
        config.report_spec()
        report_dir(config)


def _replay(spark: SparkSession, config: JobConfig, replay: str) -> Replay:
    """The replay of run ``replay``: its inputs checked, and the YAML's contract the one it ran under."""
    plan = replay_plan(spark, config, replay)
    resolved_contract(config.contract, plan.contract_fingerprint)
    return plan


def _published_stages(
    spark: SparkSession, config: JobConfig, command: str, run_id: str, *, stage2: bool, take_over: bool,
    wait: dt.timedelta | None,
    replay: Replay | None = None,
) -> RunOutcome:
    """Stage 1 (unless ``aggregate``) and stage 2 (if asked) inside the publishing bracket, the
    lease renewed before each step (its heartbeat beats meanwhile), then the rows of the closing
    summary read back."""
    scored = aggregated = trended = None
    bracket = publishing(spark, config.run_status(), run_id, spec=config.publishing(), take_over=take_over, wait=wait,
                         outputs=_outputs(config), attempts=config.run_attempts(), command=command)
    with bracket as lease:  # 'running' first, 'complete' written last, by the attempt holding the run
        if command != "aggregate":  # the lease was just taken: no check needed before stage 1
            lease.reached("score")
            with step(spark, run_id, "score"):
                scored = score_stage(spark, config, run_id, replay=replay)
        if stage2:
            counts = scored.metadata_counts() if scored is not None else {}
            lease.renew("aggregate")
            with step(spark, run_id, "aggregate"):
                aggregated = aggregate_stage(spark, config, run_id, row_counts=counts,
                                             inputs=scored.inputs if scored is not None else None)
            if config.output("trend") is not None:
                lease.renew("trend")
                with step(spark, run_id, "trend"):
                    trended = trend_stage(spark, config, run_id)
    outcome = RunOutcome(command, run_id, config.contract.metric_names, published=lease.status,
                         attempt_id=lease.attempt.attempt_id, scored=scored, aggregated=aggregated, trended=trended)
    with step(spark, run_id, "summary", level=logging.DEBUG):
        return _summary(spark, outcome)


def _outputs(config: JobConfig) -> tuple[Source, ...]:
    """The tables a run writes inside the bracket (a file of theirs that vanishes is the run's own)."""
    names = ("quarantine", "aggregate", "audit", "run_metadata", "trend")
    own = (config.per_request, *map(config.output, names), config.run_status(), config.run_attempts())
    return tuple(s for s in own if s is not None)


def _summary(spark: SparkSession, outcome: RunOutcome) -> RunOutcome:
    """The rows of the closing lines, read back from what the stages wrote."""
    scored, aggregated, trended, run_id = outcome.scored, outcome.aggregated, outcome.trended, outcome.run_id
    if aggregated is None:
        means = summarize_per_request(read_run(spark, scored.target, run_id))
        return replace(outcome, per_request_means=tuple(means))
    overall, audit = stage2_summary(spark, aggregated)
    outcome = replace(outcome, overall=tuple(overall), worst_slices=tuple(audit))
    if trended is None:
        return outcome
    night = overall_rows(read_run(spark, trended.target, run_id))
    return replace(outcome, trend_overall=tuple(r.asDict() for r in collect_sorted(night, "system", "pool_version", "k",
                                                                                   "metric")))


def _report(spark: SparkSession, config: JobConfig, command: str, run_id: str) -> ReportOutcome | None:
    """Write the run's HTML report. ``run`` and ``compare`` write it when the job has an aggregate
    table (``outputs.aggregate``, stage 2); ``report`` requires one. ``compare`` needs stage 1
    only: on a run without aggregate rows yet it gets no report, and the reason, not a failure."""
    if command not in _REPORTING or (command != "report" and not report_configured(config)):
        return None
    started = time.perf_counter()
    try:
        with step(spark, run_id, "report"):
            path = write_report(spark, config, run_id)
    except InputError as exc:
        if command != "compare":
            raise
        return ReportOutcome(None, time.perf_counter() - started, not_written=str(exc))
    return ReportOutcome(path, time.perf_counter() - started)
