"""The pool guard: a reranker comparison only when both sides ranked the same candidates.

One small aggregation over the joined sides decides it (and checks that the pool summary
belongs to the run); it also reads the largest traffic weight, the scale of the comparison's
exact weighted sums, so that costs no extra Spark job. It counts rows, not distinct requests:
the distinct counts a refusal names are read only when it refuses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from ndcg_spark.comparison.sides import Sides
from ndcg_spark.config.compare_spec import CompareSpec
from ndcg_spark.errors import InputError, NdcgError

__all__ = ["PoolCheck", "PoolMismatchError", "check_pools"]


class PoolMismatchError(NdcgError):
    """A reranker comparison was asked for, but the two sides ranked different candidate pools."""


@dataclass(frozen=True)
class PoolCheck:
    """What the guard decided, and the scale it read on the way."""

    #: ``reranker`` or ``end_to_end``: what the comparison is
    kind: str
    #: the pool versions differ, or a shared request's candidate set does
    pools_differ: bool
    #: the largest absolute traffic weight of either side (0.0 when there is none)
    weight_bound: float
    #: what-ifs (``ndcg_unjudged_low`` ...) either side has a value for: compared when the kind is reranker
    valued_what_ifs: tuple[str, ...] = ()


def check_pools(joined: DataFrame, spec: CompareSpec, sides: Sides) -> PoolCheck:
    """Decide the comparison's kind from :func:`~ndcg_spark.comparison.sides.join_sides`'s rows.

    Raises
    ------
    InputError
        the pool summary was built under another contract, misses a row of the per-request
        table or counts another number of candidates; or a weight is NaN or infinite.
    PoolMismatchError
        ``spec.kind == 'reranker'`` and the pools differ (in version, or in a shared request's
        candidate set).
    """
    what_ifs = [m for m in sides.measures if m not in sides.metrics]
    found = _pool_counts(joined, what_ifs)
    _require_summary_of_the_run(joined, found, sides.contract_fingerprint)
    weight_bound = found["weight_bound"] if found["weight_bound"] is not None else 0.0
    if not math.isfinite(weight_bound):
        raise InputError(
            "compare: the per-request table has a NaN or infinite weight (rule: weight_invalid); stage 1 "
            "refuses such weights (is this a per-request table written by stage 1?)"
        )
    versions_differ = sides.baseline_pool != sides.candidate_pool
    pools_differ = versions_differ or found["rows_differ"] > 0
    if pools_differ and spec.kind == "reranker":
        raise PoolMismatchError(_refusal(joined, found, spec, sides, versions_differ))
    kind = "end_to_end" if spec.kind == "end_to_end" or pools_differ else "reranker"
    valued = tuple(w for i, w in enumerate(what_ifs) if found[f"_valued_{i}"])
    return PoolCheck(kind=kind, pools_differ=pools_differ, weight_bound=weight_bound, valued_what_ifs=valued)


def _pool_counts(joined: DataFrame, what_ifs: list[str]) -> Row:
    """The one aggregation of the guard, to the driver: counts, extremes and a maximum only (no
    distinct count, no set), so one pass; what only an error message needs is read when it is raised.
    It also counts the values of each of ``what_ifs`` (none without a declared scale)."""
    # a request a side returned nothing for has no pool row of that side's (nor candidates)
    baseline_in = F.col("baseline_in") & ~F.col("baseline_no_results")
    candidate_in = F.col("candidate_in") & ~F.col("candidate_no_results")
    no_pool = (baseline_in & F.col("baseline_has_pool").isNull()) | (
        candidate_in & F.col("candidate_has_pool").isNull()
    )
    size_mismatch = (baseline_in & (F.col("baseline_n_pool") != F.col("baseline_n_candidates"))) | (
        candidate_in & (F.col("candidate_n_pool") != F.col("candidate_n_candidates"))
    )
    fingerprint = _pool_fingerprint()
    return joined.agg(
        F.count(F.when(no_pool, 1)).alias("no_pool"),
        F.count(F.when(size_mismatch, 1)).alias("size_mismatch"),
        F.count(F.when(F.col("pool_differs"), 1)).alias("rows_differ"),
        F.min(fingerprint).alias("min_fingerprint"),
        F.max(fingerprint).alias("max_fingerprint"),
        F.max(F.abs(F.coalesce(F.col("baseline_weight"), F.col("candidate_weight")))).alias("weight_bound"),
        *[F.count(F.coalesce(F.col(f"baseline_{w}"), F.col(f"candidate_{w}"))).alias(f"_valued_{i}")
          for i, w in enumerate(what_ifs)],
    ).first()


def _pool_fingerprint() -> Column:
    """The contract the pool summary's row was built under (either side's)."""
    return F.coalesce(F.col("baseline_pool_fingerprint"), F.col("candidate_pool_fingerprint"))


def _require_summary_of_the_run(joined: DataFrame, found: Row, fingerprint: str) -> None:
    lowest, highest = found["min_fingerprint"], found["max_fingerprint"]
    if lowest is not None and not lowest == highest == fingerprint:  # a contract of another run: say which
        prints = {r[0] for r in joined.select(_pool_fingerprint()).distinct().limit(50).collect()} - {None}
        others = ", ".join(sorted(prints - {fingerprint}))
        raise InputError(
            f"compare: the per-request rows were scored under contract {fingerprint} but the pool summary was "
            f"built under {others}; build it with the run's contract (did the config change since the run?)"
        )
    if found["no_pool"] or found["size_mismatch"]:
        raise InputError(
            f"compare: the pool summary does not match the per-request table ({found['no_pool']} row(s) without a "
            f"pool, {found['size_mismatch']} with another candidate count): build it from the same candidates, "
            "judgments and contract as the run (did the inputs change since the run?)"
        )


def _refusal(joined: DataFrame, found: Row, spec: CompareSpec, sides: Sides, versions_differ: bool) -> str:
    reasons = []
    if versions_differ:
        reasons.append(f"their pool versions differ ({sides.baseline_pool} vs {sides.candidate_pool})")
    if found["rows_differ"]:
        shared = joined.agg(
            F.countDistinct(F.when(F.col("pool_differs"), F.col("request_id"))).alias("differ"),
            F.countDistinct(F.when(F.col("baseline_in") & F.col("candidate_in"), F.col("request_id"))).alias("common"),
            F.min(F.when(F.col("pool_differs"), F.col("request_id"))).alias("example"),
        ).first()
        reasons.append(
            f"{shared['differ']:,} of the {shared['common']:,} requests they share have different "
            f"candidate sets (e.g. request {shared['example']!r})"
        )
    return (
        f"compare: refusing a reranker comparison of {spec.candidate.describe()} against "
        f"{spec.baseline.describe()}: {' and '.join(reasons)}. A reranker comparison assumes both ranked the "
        "same candidates; here a difference in NDCG can come from the pool (what was retrieved) rather than "
        "from the ranking. Set compare.kind: end_to_end to compare them end to end — NDCG against one "
        "shared ideal from the judgments, with each side's pool recall reported — or compare two "
        "rankings of the same pool."
    )
