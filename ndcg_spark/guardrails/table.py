"""The guardrail table of one comparison: :func:`guardrail_table`.

Examples
--------
A release in which the candidate completes as many tasks but is slower at the 95th percentile:

>>> from ndcg_spark import CompareSpec, Contract, GuardrailSpec, score_requests
>>> cands = spark.createDataFrame([(f"q{i}", "d", s, 1) for i in range(40) for s in ("A", "B")],
...                               "request_id string, doc_id string, system string, position int")
>>> per_request = score_requests(cands, None, Contract(k=[1], columns={"grade": "position"}))
>>> outcomes = spark.createDataFrame(
...     [(f"s{i}", "A" if i % 2 else "B", i % 3 > 0, 100.0 + i % 50 * (1.0 if i % 2 else 2.0)) for i in range(400)],
...     "session_id string, arm string, done boolean, latency_ms double")
>>> spec = GuardrailSpec.from_dict({
...     "release": {"outcomes": {"path": "-"}, "arm": "arm", "unit": "session_id"},
...     "bootstrap": {"replicates": 200},
...     "checks": [{"name": "completion", "column": "done", "statistic": "rate", "better": "higher",
...                 "margin": {"absolute": 0.1}},
...                {"name": "latency_p95", "column": "latency_ms", "statistic": "p95", "better": "lower",
...                 "margin": {"relative": 0.1}}]})
>>> table = guardrail_table(per_request, spec, CompareSpec(baseline="A", candidate="B"), outcomes=outcomes)
>>> table.select("guardrail", F.round("baseline_value", 3).alias("A"), F.round("candidate_value", 3).alias("B"),
...              "verdict", "overall_verdict").show()
+-----------+-----+-----+-------+---------------+
|  guardrail|    A|    B|verdict|overall_verdict|
+-----------+-----+-----+-------+---------------+
| completion|0.665|0.665|   pass|           fail|
|latency_p95|147.0|192.0|   fail|           fail|
+-----------+-----+-----+-------+---------------+
<BLANKLINE>
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.comparison.sides import describe_sides, slice_columns
from ndcg_spark.config.compare_spec import CompareSpec
from ndcg_spark.config.contract import Contract
from ndcg_spark.config.guardrail_spec import Guardrail, GuardrailSpec
from ndcg_spark.errors import InputError
from ndcg_spark.frames import shuffles_sized_to
from ndcg_spark.guardrails.columns import GUARDRAIL_COLUMNS, GUARDRAIL_SCHEMA
from ndcg_spark.guardrails.offline import offline_rows
from ndcg_spark.guardrails.release import release_rows
from ndcg_spark.guardrails.statistics import arm_statistics
from ndcg_spark.guardrails.verdicts import overall_verdict, verdict
from ndcg_spark.metrics.slices import OVERALL
from ndcg_spark.validation.shell_check import shell_check
from ndcg_spark.version import __version__

__all__ = ["guardrail_table"]


def guardrail_table(
    per_request: DataFrame,
    spec: GuardrailSpec,
    compare: CompareSpec,
    *,
    outcomes: DataFrame | None = None,
    candidates: DataFrame | None = None,
    judgments: DataFrame | None = None,
    documents: DataFrame | None = None,
    contract: Contract | None = None,
    system: str | None = None,
    pool_version: str | None = None,
    created_at: dt.datetime | None = None,
    code_version: str | None = None,
    validate: bool = True,
) -> DataFrame:
    """Every guardrail of ``spec`` for ``compare.candidate`` against ``compare.baseline``: one row
    per guardrail x K x slice (:data:`~ndcg_spark.guardrails.columns.GUARDRAIL_COLUMNS`).

    Parameters
    ----------
    per_request : the run's per-request table (stage 1): the run, the contract fingerprint, the
        requests each system scored and their slices (offline guardrails).
    spec : the guardrails (:class:`~ndcg_spark.config.guardrail_spec.GuardrailSpec`).
    compare : the two sides (and the per-request slices the offline guardrails break down by).
    outcomes : the release's outcomes table (required by ``source: release`` guardrails); the
        arms are the sides' system names.
    candidates, judgments, documents, contract, system, pool_version : what the offline
        guardrails read (:func:`~ndcg_spark.guardrails.offline.offline_rows`).
    created_at, code_version : stamped on every row (default: now, the package version).
    validate : when the offline guardrails read the candidates (and judgments), check them first
        against the named rules, as :func:`~ndcg_spark.scoring.score.score_requests` does (every
        rule ``error``); ``False`` for inputs already validated (the job's stage 1 did).

    Returns
    -------
    DataFrame
        Small (a row per guardrail x K x slice), built from collected rows: the Spark work runs
        when this is called. Release guardrails are broken down by ``release.slices``, offline
        ones by the comparison's slices; ``verdict`` per row, ``overall_verdict`` over the
        overall rows of every guardrail (and every K).
    """

    if compare.baseline.system == compare.candidate.system:
        raise InputError("guardrails: the two sides must be different systems (the arms are system names)")
    with shuffles_sized_to(per_request, outcomes, candidates, judgments, documents):  # few partitions when small
        sides = describe_sides(per_request, compare)
        arms = (compare.baseline.system, compare.candidate.system)
        found = []
        if spec.release_checks:
            if outcomes is None:
                raise InputError(
                    "guardrails: release guardrails need the release's outcomes table (guardrails.release.outcomes)"
                )
            found += _release(outcomes, spec, arms)
        if spec.offline_checks:
            if candidates is None:
                raise InputError("guardrails: offline guardrails need the candidates (inputs.candidates)")
            if validate:
                checked = shell_check(candidates, judgments, contract or Contract(), system=system,
                                      pool_version=pool_version)
                candidates, judgments = checked.candidates, checked.judgments
            scored = per_request.filter(
                ((F.col("system") == arms[0]) & F.col("pool_version").eqNullSafe(F.lit(sides.baseline_pool)))
                | ((F.col("system") == arms[1]) & F.col("pool_version").eqNullSafe(F.lit(sides.candidate_pool))))
            found += _offline(scored, candidates, spec, compare, slice_columns(per_request, compare),
                              contract or Contract(), judgments, documents, system, pool_version)
    overall = overall_verdict(row["verdict"] for row in found if row["slice_dimension"] == OVERALL)
    stamps = {
        "run_id": sides.run_id, "baseline": arms[0], "candidate": arms[1], "overall_verdict": overall,
        "ci_level": spec.ci_level if spec.replicates else None, "bootstrap_replicates": spec.replicates,
        "seed": spec.seed, "min_observed": spec.min_observed, "guardrail_fingerprint": spec.fingerprint,
        **dict(zip(("headline_metric", "headline_k"), spec.headline(contract or Contract()))),
        "contract_fingerprint": sides.contract_fingerprint,
        "code_version": code_version or __version__,
        "created_at": (created_at or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0),
    }
    rows = [tuple({**row, **stamps}[c] for c in GUARDRAIL_COLUMNS) for row in found]
    return per_request.sparkSession.createDataFrame(rows, GUARDRAIL_SCHEMA).orderBy(*_ordering(spec))


def _ordering(spec: GuardrailSpec) -> list[Column | str]:
    """Declaration order, then K, then the overall slice first."""
    positions = F.create_map(*[F.lit(x) for i, g in enumerate(spec.checks) for x in (g.name, i)])
    order = positions[F.col("guardrail")]
    return [order, F.col("k").asc_nulls_first(), F.col("slice_dimension") != F.lit(OVERALL), "slice_dimension",
            "slice_value"]


def _release(outcomes: DataFrame, spec: GuardrailSpec, arms: tuple[str, str]) -> list[dict[str, Any]]:
    prepared = release_rows(outcomes, spec, arms)
    stats = arm_statistics(prepared.rows, prepared.measures, arms, spec.release.slices, replicates=spec.replicates,
                           ci_level=spec.ci_level, seed=spec.seed)
    counts = {"rows_read": prepared.rows_read, "rows_set_aside": prepared.rows_set_aside}
    return [_row(spec.release_checks[s["measure"]], None, s, spec, counts) for s in stats]


def _offline(per_request: DataFrame, candidates: DataFrame, spec: GuardrailSpec, compare: CompareSpec,
             slices: tuple[str, ...], contract: Contract, judgments: DataFrame | None, documents: DataFrame | None,
             system: str | None, pool_version: str | None) -> list[dict[str, Any]]:
    rows, measures = offline_rows(per_request, candidates, spec.offline_checks, (compare.baseline, compare.candidate),
                                  contract, slices, judgments=judgments, documents=documents, system=system,
                                  pool_version=pool_version)
    arms = (compare.baseline.system, compare.candidate.system)
    stats = arm_statistics(rows, [m for _, _, m in measures], arms, slices, replicates=spec.replicates,
                           ci_level=spec.ci_level, seed=spec.seed)
    counts = {"rows_read": None, "rows_set_aside": None}
    return [_row(measures[s["measure"]][0], measures[s["measure"]][1], s, spec, counts) for s in stats]


def _row(g: Guardrail, k: int | None, stats: dict[str, Any], spec: GuardrailSpec,
         counts: dict[str, Any]) -> dict[str, Any]:
    """One guardrail row (without the comparison's stamps)."""
    row = {"guardrail": g.name, "source": g.source, "statistic": g.statistic.name, "better": g.better,
           "margin_kind": g.margin_kind, "margin": g.margin, "k": k,
           "design": spec.release.design if g.source == "release" else "paired",
           "slice_dimension": stats["slice_dimension"], "slice_value": stats["slice_value"],
           "declaration": g.to_json(), **counts}
    for arm in ("baseline", "candidate"):
        n, observed, interval = stats[f"{arm}_n"], stats[f"{arm}_n_observed"], stats[f"{arm}_interval"]
        row.update({f"{arm}_n": n, f"{arm}_n_observed": observed,
                    f"{arm}_observed_share": observed / n if n else None, f"{arm}_value": stats[f"{arm}_value"],
                    f"{arm}_ci_low": interval[0] if interval else None,
                    f"{arm}_ci_high": interval[1] if interval else None})
    for name, key in (("difference", "difference"), ("relative_difference", "relative")):
        interval = stats[f"{key}_interval"]
        row.update({name: stats[key], f"{key}_ci_low": interval[0] if interval else None,
                    f"{key}_ci_high": interval[1] if interval else None})
    shares = (row["baseline_observed_share"], row["candidate_observed_share"])
    row["observed_share_difference"] = None if None in shares else shares[1] - shares[0]
    row["verdict"] = verdict(g.better, g.margin_kind, g.margin, difference_interval=stats["difference_interval"],
                             relative_interval=stats["relative_interval"])
    row["below_min_observed"] = min(row["baseline_n_observed"], row["candidate_n_observed"]) < spec.min_observed
    if g.statistic.of_flags and row["baseline_value"] == row["candidate_value"] in (0.0, 1.0):
        row["verdict"] = "inconclusive"  # no event (or only events) in either arm: the bootstrap cannot bound it
    if row["below_min_observed"]:
        row["verdict"] = "inconclusive"
    return row
