"""Stage 2's inputs and point estimates: typed rows, the one eager check, the means per slice.

:func:`stage2_rows` selects and types what stage 2 reads; :func:`check_weights_and_ndcg` is the
only job :func:`~ndcg_spark.aggregation.means.aggregate` runs at once (the list of groups, a
check that every weight and NDCG is usable, the scale of the exact sums); :func:`point_estimates`
gives the means and their denominators per group x slice, summed in exact fixed point
(:class:`~ndcg_spark.metrics.exact.FixedPoint`) so they do not depend on partitioning.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from ndcg_spark.aggregation.columns import GROUP_KEYS, PER_REQUEST_INPUTS
from ndcg_spark.config.aggregate_spec import AggregateSpec
from ndcg_spark.errors import InputError
from ndcg_spark.frames import collect_sorted
from ndcg_spark.metrics.exact import FixedPoint
from ndcg_spark.metrics.slices import roll_up
from ndcg_spark.scoring.no_results import no_results_flag

__all__ = [
    "DUPLICATE_REQUEST", "Groups", "check_one_row_per_request", "check_weights_and_ndcg", "means", "point_estimates",
    "stage2_rows",
]

#: what a per-request table breaks when it holds a request twice for one group (after "request <id>")
DUPLICATE_REQUEST = (
    " has more than one row for one run, contract, pool version, system and K "
    "(rule: duplicate_request); the per-request table holds one row per request x system x K"
)

#: the fixed-point sums behind the point estimates (each two long columns, see FixedPoint.names)
_SUMMED = ("ndcg_sum", "weighted_ndcg_sum", "eligible_weight_sum", "weight_sum", "unjudged_sum")
#: the unjudged bounds (per-request columns, optional: null when a table has none) -> aggregate suffix
BOUNDS = ("ndcg_unjudged_low", "ndcg_unjudged_high")
_BOUND_SUMMED = tuple(f"{b}_{part}" for b in BOUNDS for part in ("sum", "weighted_sum", "weight_sum"))


@dataclass(frozen=True)
class Groups:
    """What the one eager job learns: the groups, in order, and how their exact sums are scaled."""

    #: the run x contract x pool version x system x K groups (values of ``GROUP_KEYS``), sorted
    keys: list[tuple[Any, ...]]
    #: the scale of sums of NDCG (and of the unjudged share): terms in [0, 1]
    ndcg_sum: FixedPoint
    #: the scale of sums of weights and of weight x NDCG: terms up to the largest weight
    weight_sum: FixedPoint
    #: every weight is the same positive number: the weighted mean *is* the macro mean
    uniform_weight: bool


def stage2_rows(per_request: DataFrame, spec: AggregateSpec) -> tuple[DataFrame, list[str]]:
    """The columns stage 2 needs, typed (a CSV per-request table arrives as strings), and the
    names of the slice columns: renamed ``_slice0, _slice1, ...`` (in the order of
    ``spec.slices``) so that no slice name can collide with a working column."""
    present = set(per_request.columns)
    missing = [c for c in (*PER_REQUEST_INPUTS, *spec.slices) if c not in present]
    if missing:
        raise InputError(
            f"per_request: missing column(s) {', '.join(missing)} (a stage-1 table carries "
            f"{', '.join(PER_REQUEST_INPUTS)} and the attributes.slices columns); columns present: "
            f"{', '.join(sorted(present)) or 'none'}"
        )
    weight = F.col("weight").cast("double")
    if spec.default_weight is not None:
        weight = F.coalesce(weight, F.lit(spec.default_weight))
    k = F.col("k").cast("int")
    slots = F.least(k, F.col("n_candidates").cast("long"))
    share = F.when(slots > 0, F.col("n_unjudged_in_top_k").cast("double") / slots)
    slice_cols = [f"_slice{i}" for i in range(len(spec.slices))]
    strings = [F.col(c).cast("string").alias(c) for c in ("run_id", "contract_fingerprint", "pool_version", "system")]
    rows = per_request.select(
        *strings,
        k.alias("k"),
        F.col("request_id").cast("string").alias("request_id"),
        F.col("ndcg").cast("double").alias("ndcg"),
        F.col("empty_ideal").cast("boolean").alias("empty_ideal"),
        no_results_flag(per_request).alias("no_results"),
        weight.alias("weight"),
        share.alias("unjudged"),
        *[(F.col(b).cast("double") if b in present else F.lit(None).cast("double")).alias(b) for b in BOUNDS],
        *[F.col(name).cast("string").alias(alias) for name, alias in zip(spec.slices, slice_cols)],
    )
    return rows, slice_cols


def check_weights_and_ndcg(rows: DataFrame) -> Groups:
    """List the groups of :func:`stage2_rows`' ``rows`` and scale their sums; fail on an unusable
    weight (null, negative, NaN) or NDCG (NaN, outside [0, 1]) with
    :class:`~ndcg_spark.errors.InputError`, naming one offending request."""
    weight, ndcg = F.col("weight"), F.col("ndcg")
    bad_weight = weight.isNull() | F.isnan(weight) | (weight < 0)
    bad_ndcg = ndcg.isNotNull() & (F.isnan(ndcg) | (ndcg < 0) | (ndcg > 1.0 + 1e-9))
    per_group = rows.groupBy(*GROUP_KEYS).agg(
        # numeric aggregates only: a string min here would turn the job into a sort of every
        # row (measured 10.7 s vs 2.8 s warm on 4M rows); the example is looked up on failure
        F.count(F.when(bad_weight, 1)).alias("n_bad_weight"),
        F.count(F.when(bad_ndcg, 1)).alias("n_bad_ndcg"),
        F.max(F.when(~bad_weight, weight)).alias("max_weight"),
        F.min(F.when(~bad_weight, weight)).alias("min_weight"),
    )
    stats = collect_sorted(per_group, *GROUP_KEYS)
    _raise_on_bad_rows(rows, stats, "weight", bad_weight, "weight_invalid",
                       "weights must be non-negative numbers; aggregate.default_weight gives a missing one a value")
    _raise_on_bad_rows(rows, stats, "ndcg", bad_ndcg, "ndcg_out_of_range",
                       "NDCG lies in [0, 1]; is this a per-request table written by stage 1?")
    max_weight = max((r["max_weight"] or 0.0 for r in stats), default=0.0)
    min_weight = min((r["min_weight"] or 0.0 for r in stats), default=0.0)
    return Groups(
        keys=[tuple(r[c] for c in GROUP_KEYS) for r in stats],
        ndcg_sum=FixedPoint.for_bound(1.0),
        weight_sum=FixedPoint.for_bound(max_weight),
        uniform_weight=0.0 < min_weight == max_weight,
    )


def check_one_row_per_request(rows: DataFrame) -> None:
    """Raise :class:`~ndcg_spark.errors.InputError` (rule ``duplicate_request``) when some request
    of :func:`stage2_rows`' ``rows`` has more than one row for one group, naming how many and the
    smallest. One job, a count per group and request: the bootstrap's pivot to one row per request
    fails its query on the same rule, so :func:`~ndcg_spark.aggregation.means.aggregate` asks this
    only when it computes no interval (the point estimates alone would count such a request twice)."""
    repeated = rows.groupBy(*GROUP_KEYS, "request_id").agg(F.count(F.lit(1)).alias("_rows")).filter(F.col("_rows") > 1)
    found = repeated.agg(F.count(F.lit(1)).alias("n"),
                         F.min(F.struct("request_id", "system", "k")).alias("first")).first()
    if found["n"]:
        first = found["first"]
        raise InputError(
            f"per_request: request {first['request_id']!r} of system {first['system']!r} at k={first['k']}"
            f"{DUPLICATE_REQUEST} ({found['n']} request(s) with a repeated row, counted per group)"
        )


def _raise_on_bad_rows(rows: DataFrame, stats: list[Row], what: str, bad: Column, rule: str, hint: str) -> None:
    """Raise when a group of ``stats`` counted rows with a bad ``what``; name the first group's
    smallest offending request (looked up only now, on failure)."""
    broken = [r for r in stats if r[f"n_bad_{what}"]]
    if not broken:
        return
    n, first = sum(r[f"n_bad_{what}"] for r in broken), broken[0]
    in_first = [F.col(c).eqNullSafe(F.lit(first[c])) for c in GROUP_KEYS]
    example = rows.filter(functools.reduce(operator.and_, in_first, bad)).agg(F.min("request_id")).first()[0]
    raise InputError(
        f"per_request.{what}: {n} row(s) have a missing, negative, NaN or out-of-range {what} "
        f"(rule: {rule}), e.g. request {example!r} of system {first['system']!r} "
        f"at k={first['k']}; {hint}"
    )


def means(groups: Groups, n_eligible: Column, ndcg_sum: str, weighted_ndcg_sum: str,
          eligible_weight_sum: str) -> tuple[Column, Column]:
    """The macro and the weighted mean NDCG from summed fixed-point columns (null when nothing
    is eligible): ``ndcg_sum / n_eligible`` and ``weighted_ndcg_sum / eligible_weight_sum``
    (the macro mean again when every weight is the same)."""
    macro = F.when(n_eligible > 0, groups.ndcg_sum.value(ndcg_sum) / n_eligible)
    if groups.uniform_weight:
        return macro, macro
    weights = groups.weight_sum.value(eligible_weight_sum)
    return macro, F.when(weights > 0, groups.weight_sum.value(weighted_ndcg_sum) / weights)


def point_estimates(rows: DataFrame, spec: AggregateSpec, slice_cols: list[str], groups: Groups) -> DataFrame:
    """Per group x slice: both means, the counts and summed weights behind them, the unjudged share.

    Each term is cut into fixed point once, summed per finest cell (group x every slice
    column) and the cells rolled up to each slice: integer sums make the two levels equal to
    one pass, and the expansion to slices runs on few rows.
    """
    ndcg, weight, unjudged = F.col("ndcg"), F.col("weight"), F.col("unjudged")
    x, w = groups.ndcg_sum, groups.weight_sum
    terms = rows.select(
        *GROUP_KEYS, *slice_cols, "ndcg", "empty_ideal", "no_results", "unjudged", *BOUNDS,
        *x.parts(ndcg, "ndcg_sum"),
        *w.parts(weight * ndcg, "weighted_ndcg_sum"),
        *w.parts(F.when(ndcg.isNotNull(), weight), "eligible_weight_sum"),
        *w.parts(weight, "weight_sum"),
        *x.parts(unjudged, "unjudged_sum"),
        *[part for b in BOUNDS for part in _bound_parts(groups, b)],
    )
    sums = {
        "n_requests": F.count(F.lit(1)),
        "n_eligible": F.count("ndcg"),
        "n_empty_ideal": F.count(F.when(F.col("empty_ideal"), 1)),
        "n_no_results": F.count(F.when(F.col("no_results"), 1)),
        "n_unjudged": F.count("unjudged"),
        **{f"n_{b}": F.count(b) for b in BOUNDS},
        **{part: F.sum(part) for name in (*_SUMMED, *_BOUND_SUMMED) for part in FixedPoint.names(name)},
    }
    rolled = roll_up(terms, GROUP_KEYS, spec.slices, slice_cols, sums)
    n_eligible, n_unjudged = F.col("n_eligible"), F.col("n_unjudged")
    macro, weighted = means(groups, n_eligible, "ndcg_sum", "weighted_ndcg_sum", "eligible_weight_sum")
    bounds = {b: means(groups, F.col(f"n_{b}"), f"{b}_sum", f"{b}_weighted_sum", f"{b}_weight_sum") for b in BOUNDS}
    return rolled.select(
        *GROUP_KEYS,
        "slice_dimension",
        "slice_value",
        macro.alias("macro_ndcg"),
        weighted.alias("weighted_ndcg"),
        "n_eligible",
        "n_empty_ideal",
        "n_no_results",
        "n_requests",
        F.coalesce(w.value("eligible_weight_sum"), F.lit(0.0)).alias("weight_eligible"),
        F.coalesce(w.value("weight_sum"), F.lit(0.0)).alias("weight_all"),
        F.when(n_unjudged > 0, x.value("unjudged_sum") / n_unjudged).alias("unjudged_share"),
        *[bounds[b][0].alias(f"macro_{b}") for b in BOUNDS],
        *[bounds[b][1].alias(f"weighted_{b}") for b in BOUNDS],
    )


def _bound_parts(groups: Groups, bound: str) -> list[Column]:
    """The fixed-point terms of one unjudged bound's two means (over the requests it is set for)."""
    value, weight = F.col(bound), F.col("weight")
    return [
        *groups.ndcg_sum.parts(value, f"{bound}_sum"),
        *groups.weight_sum.parts(weight * value, f"{bound}_weighted_sum"),
        *groups.weight_sum.parts(F.when(value.isNotNull(), weight), f"{bound}_weight_sum"),
    ]
