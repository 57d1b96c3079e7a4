"""The two sides of a comparison: which per-request rows each one is, checked to belong together,
and joined request by request with their pool summaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from ndcg_spark.comparison.columns import known
from ndcg_spark.config.compare_spec import CompareSpec, Side
from ndcg_spark.config.per_request import RESERVED_COLUMNS, component_names, metrics_in
from ndcg_spark.errors import InputError
from ndcg_spark.measures import COMPONENTS, LEGACY_METRIC, what_if_names
from ndcg_spark.scoring.no_results import no_results_flag

__all__ = ["Sides", "describe_sides", "join_sides", "slice_columns"]


@dataclass(frozen=True)
class Sides:
    """What the two sides' per-request rows say about themselves (read from a handful of distinct rows)."""

    baseline_pool: Any
    candidate_pool: Any
    run_id: str
    contract_fingerprint: str
    #: every K either side was scored at, ascending
    ks: tuple[int, ...]
    #: the metrics of the per-request table (``ndcg``, ``recall`` ...), in its order
    metrics: tuple[str, ...] = (LEGACY_METRIC,)
    #: what is compared: each metric, and its what-ifs where the table has them (not end to end)
    measures: tuple[str, ...] = (LEGACY_METRIC,)


def describe_sides(per_request: DataFrame, spec: CompareSpec) -> Sides:
    """Pool version, contract and run of each side; fail unless each is one of each, and the two agree."""
    distinct = (
        per_request.filter(F.col("system").isin(spec.baseline.system, spec.candidate.system))
        .select("system", "pool_version", "contract_fingerprint", "run_id", "k")
        .distinct()
        .limit(10_000)
        .collect()
    )
    base = _describe_side(per_request, distinct, "baseline", spec.baseline)
    cand = _describe_side(per_request, distinct, "candidate", spec.candidate)
    if base["contract_fingerprint"] != cand["contract_fingerprint"]:
        raise InputError(
            f"compare: the two sides were scored under different contracts ({base['contract_fingerprint']} vs "
            f"{cand['contract_fingerprint']}); NDCGs of different contracts are different numbers — score both "
            "under one contract"
        )
    if base["run_id"] != cand["run_id"]:
        raise InputError(f"compare: the two sides come from different runs ({base['run_id']} vs {cand['run_id']})")
    metrics = metrics_in(per_request.columns)
    if not metrics:
        raise InputError("compare: the per-request table has no metric column (ndcg, recall ...): is it a stage-1 table?")
    present = set(per_request.columns)
    what_ifs = [w for m in metrics for w in what_if_names(m) if w in present]
    return Sides(
        baseline_pool=base["pool_version"],
        candidate_pool=cand["pool_version"],
        run_id=base["run_id"],
        contract_fingerprint=base["contract_fingerprint"],
        ks=tuple(sorted(base["ks"] | cand["ks"])),
        metrics=metrics,
        measures=(*metrics, *what_ifs),
    )


def _describe_side(per_request: DataFrame, distinct: list[Row], name: str, side: Side) -> dict[str, Any]:
    found = [
        r for r in distinct
        if r.system == side.system and (side.pool_version is None or r.pool_version == side.pool_version)
    ]
    if not found:
        present = sorted(
            f"{r.system} (pool {r.pool_version})" if r.pool_version is not None else f"{r.system} (no pool version)"
            for r in per_request.select("system", "pool_version").distinct().limit(50).collect()
        )
        raise InputError(
            f"compare.{name}: no per-request rows for {side.describe()}; present: {', '.join(present) or 'none'}"
        )
    pools = sorted({r.pool_version for r in found}, key=str)
    if len(pools) > 1:
        raise InputError(
            f"compare.{name}: {side.system} was scored over several pool versions ({', '.join(map(str, pools))}); "
            f"pick one with compare.{name}: {{system: {side.system}, pool_version: …}}"
        )
    runs = sorted({r.run_id for r in found}, key=str)
    if len(runs) > 1:
        raise InputError(f"compare: the per-request rows span several runs ({', '.join(runs)}); pass one run")
    prints = sorted({r.contract_fingerprint for r in found}, key=str)
    if len(prints) > 1:
        raise InputError(f"compare.{name}: rows of several contracts ({', '.join(prints)}); pass one contract's rows")
    return {"pool_version": pools[0], "run_id": runs[0], "contract_fingerprint": prints[0], "ks": {r.k for r in found}}


def slice_columns(per_request: DataFrame, spec: CompareSpec) -> tuple[str, ...]:
    """The slice columns to break the comparison down by: ``spec.slices``, or every column of the
    per-request table that is not one of stage 1's own."""
    known = RESERVED_COLUMNS
    if spec.slices is None:
        return tuple(c for c in per_request.columns if c not in known)
    for i, s in enumerate(spec.slices):
        if s not in per_request.columns:
            raise InputError(f"compare.slices[{i}]: the per-request table has no column {s!r}")
        if s in known:
            raise InputError(f"compare.slices[{i}]: {s!r} is a per-request table column, not a slice")
    return spec.slices


def join_sides(
    per_request: DataFrame, pools: DataFrame, spec: CompareSpec, sides: Sides, slices: tuple[str, ...]
) -> DataFrame:
    """One row per request × K present on either side: each side's per-request and pool columns
    prefixed ``baseline_`` / ``candidate_`` (slice ``i`` as ``<side>_slice_<i>``), whether each side
    has the row (``baseline_in``, ``candidate_in``) and whether a shared request's pools differ."""
    base = _side_with_pool(per_request, pools, spec.baseline, sides, sides.baseline_pool, "baseline_", slices)
    cand = _side_with_pool(per_request, pools, spec.candidate, sides, sides.candidate_pool, "candidate_", slices)
    both = base.join(cand, ["request_id", "k"], "full")
    baseline_in, candidate_in = F.col("baseline_empty_ideal").isNotNull(), F.col("candidate_empty_ideal").isNotNull()
    # a request one side returned nothing for has no pool of that side's: not a different pool, a failure
    answered = baseline_in & candidate_in & ~F.col("baseline_no_results") & ~F.col("candidate_no_results")
    differs = answered & (
        ~F.col("baseline_pool_hash").eqNullSafe(F.col("candidate_pool_hash"))
        | ~F.col("baseline_n_pool").eqNullSafe(F.col("candidate_n_pool"))
    )
    return both.select(
        "*", baseline_in.alias("baseline_in"), candidate_in.alias("candidate_in"), differs.alias("pool_differs")
    )


def _side_with_pool(
    per_request: DataFrame, pools: DataFrame, side: Side, sides: Sides, pool_version: Any, prefix: str,
    slices: tuple[str, ...],
) -> DataFrame:
    """One side's rows joined to its pool summary, every column but the keys prefixed: each measure's
    value, each metric's components and their shared ideal (``<component>_known``)."""
    components = component_names(sides.metrics)
    # a list's own components (an end-to-end comparison rescores them over the shared ideal); the ideal's are the pool's
    own = [c for c in components if not COMPONENTS[c].ideal]
    rows = per_request.filter(_is_side(side)).select(
        "request_id", "k", *own, *sides.measures, "empty_ideal", no_results_flag(per_request).alias("no_results"),
        "n_candidates", "n_positive", "weight",
        *[F.col(s).alias(f"slice_{i}") for i, s in enumerate(slices)],
    )
    shared = [known(c) for c in components if COMPONENTS[c].ideal]
    missing = [c for c in shared if c not in pools.columns]
    if missing:
        raise InputError(f"compare: the pool summary has no column {missing[0]!r}: build it with pool_summary() under "
                         "the run's contract (its metrics)")
    in_pool = F.col("pool_version").isNull() if pool_version is None else F.col("pool_version") == F.lit(pool_version)
    pool = pools.filter((F.col("system") == F.lit(side.system)) & in_pool).select(
        "request_id", "k", "pool_hash", "n_pool", "n_known_positive", *shared,
        F.col("contract_fingerprint").alias("pool_fingerprint"), F.lit(True).alias("has_pool"),
    )
    joined = rows.join(pool, ["request_id", "k"], "left")
    keys = ("request_id", "k")
    return joined.withColumnsRenamed({c: f"{prefix}{c}" for c in joined.columns if c not in keys})


def _is_side(side: Side) -> Column:
    condition = F.col("system") == F.lit(side.system)
    if side.pool_version is not None:
        condition = condition & (F.col("pool_version") == F.lit(side.pool_version))
    return condition
