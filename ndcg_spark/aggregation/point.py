"""Stage 2's inputs and point estimates: typed rows, the one eager check, the means per slice.

:func:`stage2_rows` selects and types what stage 2 reads, one row per request x K x metric (each
declared metric, and its what-ifs: :func:`measures`); :func:`check_weights_and_values` is the only
job :func:`~ndcg_spark.aggregation.means.aggregate` runs at once (the list of groups, a check that
every weight and value is usable, the scale of the exact sums); :func:`point_estimates` gives the
means and their denominators per group x slice, summed in exact fixed point
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
from ndcg_spark.config.per_request import metrics_in
from ndcg_spark.errors import InputError
from ndcg_spark.frames import collect_sorted
from ndcg_spark.measures import what_if_names
from ndcg_spark.metrics.exact import FixedPoint
from ndcg_spark.metrics.slices import roll_up
from ndcg_spark.scoring.no_results import no_results_flag

__all__ = [
    "DUPLICATE_REQUEST", "Groups", "check_one_row_per_request", "check_weights_and_values", "means", "measures",
    "point_estimates", "stage2_rows",
]

#: what a per-request table breaks when it holds a request twice for one group (after "request <id>")
DUPLICATE_REQUEST = (
    " has more than one row for one run, contract, pool version, system and K "
    "(rule: duplicate_request); the per-request table holds one row per request x system x K"
)

#: the fixed-point sums behind the point estimates (each two long columns, see FixedPoint.names)
_SUMMED = ("value_sum", "weighted_value_sum", "eligible_weight_sum", "weight_sum", "unjudged_sum")


@dataclass(frozen=True)
class Groups:
    """What the one eager job learns: the groups, in order, and how their exact sums are scaled."""

    #: the run x contract x pool version x system x K x metric groups (values of ``GROUP_KEYS``), sorted
    keys: list[tuple[Any, ...]]
    #: the scale of sums of a metric's values (and of the unjudged share): terms in [0, 1]
    value_sum: FixedPoint
    #: the scale of sums of weights and of weight x NDCG: terms up to the largest weight
    weight_sum: FixedPoint
    #: every weight is the same positive number: the weighted mean *is* the macro mean
    uniform_weight: bool


def measures(per_request: DataFrame) -> tuple[str, ...]:
    """What stage 2 aggregates, each a ``metric`` of its rows: every metric of the per-request table
    (:func:`~ndcg_spark.config.per_request.metrics_in`), each followed by its what-ifs when the table
    has their columns (a what-if no request has a value for is dropped by
    :func:`check_weights_and_values`: the contract declared no scale)."""
    present = set(per_request.columns)
    out = []
    for metric in metrics_in(per_request.columns):
        out += [metric, *[w for w in what_if_names(metric) if w in present]]
    return tuple(out)


def stage2_rows(per_request: DataFrame, spec: AggregateSpec) -> tuple[DataFrame, list[str]]:
    """The columns stage 2 needs, typed (a CSV per-request table arrives as strings), one row per
    request x K x :func:`measures` (``metric`` and its ``value``), and the names of the slice
    columns: renamed ``_slice0, _slice1, ...`` (in the order of ``spec.slices``) so that no slice
    name can collide with a working column."""
    present = set(per_request.columns)
    missing = [c for c in (*PER_REQUEST_INPUTS, *spec.slices) if c not in present]
    names = measures(per_request)
    if missing or not names:
        raise InputError(
            f"per_request: missing column(s) {', '.join(missing) or 'of a metric'} (a stage-1 table carries "
            f"{', '.join(PER_REQUEST_INPUTS)}, a column per declared metric (e.g. ndcg) and the attributes.slices "
            f"columns); columns present: {', '.join(sorted(present)) or 'none'}"
        )
    weight = F.col("weight").cast("double")
    if spec.default_weight is not None:
        weight = F.coalesce(weight, F.lit(spec.default_weight))
    k = F.col("k").cast("int")
    slots = F.least(k, F.col("n_candidates").cast("long"))
    share = F.when(slots > 0, F.col("n_unjudged_in_top_k").cast("double") / slots)
    slice_cols = [f"_slice{i}" for i in range(len(spec.slices))]
    strings = [F.col(c).cast("string").alias(c) for c in ("run_id", "contract_fingerprint", "pool_version", "system")]
    each = F.explode(F.array(*[F.struct(F.lit(name).alias("metric"), F.col(name).cast("double").alias("value"))
                               for name in names])).alias("_measure")
    rows = per_request.select(
        *strings,
        k.alias("k"),
        F.col("request_id").cast("string").alias("request_id"),
        F.col("empty_ideal").cast("boolean").alias("empty_ideal"),
        no_results_flag(per_request).alias("no_results"),
        weight.alias("weight"),
        share.alias("unjudged"),
        *[F.col(name).cast("string").alias(alias) for name, alias in zip(spec.slices, slice_cols)],
        each,
    )
    rows = rows.select(*[c for c in rows.columns if c != "_measure"], "_measure.metric", "_measure.value")
    return rows, slice_cols


def check_weights_and_values(rows: DataFrame) -> Groups:
    """List the groups of :func:`stage2_rows`' ``rows`` and scale their sums; fail on an unusable
    weight (null, negative, NaN) or value (NaN, outside [0, 1]) with
    :class:`~ndcg_spark.errors.InputError`, naming one offending request. A what-if without a
    value in any group (no scale declared) has no group."""
    weight, value = F.col("weight"), F.col("value")
    bad_weight = weight.isNull() | F.isnan(weight) | (weight < 0)
    bad_value = value.isNotNull() & (F.isnan(value) | (value < 0) | (value > 1.0 + 1e-9))
    per_group = rows.groupBy(*GROUP_KEYS).agg(
        # numeric aggregates only: a string min here would turn the job into a sort of every
        # row (measured 10.7 s vs 2.8 s warm on 4M rows); the example is looked up on failure
        F.count(F.when(bad_weight, 1)).alias("n_bad_weight"),
        F.count(F.when(bad_value, 1)).alias("n_bad_value"),
        F.max(F.when(~bad_weight, weight)).alias("max_weight"),
        F.min(F.when(~bad_weight, weight)).alias("min_weight"),
        F.count(value).alias("n_values"),
    )
    stats = collect_sorted(per_group, *GROUP_KEYS)
    _raise_on_bad_rows(rows, stats, "weight", bad_weight, "weight_invalid",
                       "weights must be non-negative numbers; aggregate.default_weight gives a missing one a value")
    _raise_on_bad_rows(rows, stats, "value", bad_value, "metric_out_of_range",
                       "every metric lies in [0, 1]; is this a per-request table written by stage 1?")
    max_weight = max((r["max_weight"] or 0.0 for r in stats), default=0.0)
    min_weight = min((r["min_weight"] or 0.0 for r in stats), default=0.0)
    valued = {r["metric"] for r in stats if r["n_values"]}
    metrics = {r["metric"] for r in stats}
    what_ifs = {w for m in metrics for w in what_if_names(m)}
    return Groups(
        keys=[tuple(r[c] for c in GROUP_KEYS) for r in stats if r["metric"] not in what_ifs or r["metric"] in valued],
        value_sum=FixedPoint.for_bound(1.0),
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
        f"per_request.{first['metric'] if what == 'value' else what}: {n} row(s) have a missing, negative, NaN or "
        f"out-of-range {what} (rule: {rule}), e.g. request {example!r} of system {first['system']!r} "
        f"at k={first['k']}; {hint}"
    )


def means(groups: Groups, n_eligible: Column, value_sum: str, weighted_value_sum: str,
          eligible_weight_sum: str) -> tuple[Column, Column]:
    """The macro and the weighted mean from summed fixed-point columns (null when nothing is
    eligible): ``value_sum / n_eligible`` and ``weighted_value_sum / eligible_weight_sum`` (the macro
    mean again when every weight is the same)."""
    macro = F.when(n_eligible > 0, groups.value_sum.value(value_sum) / n_eligible)
    if groups.uniform_weight:
        return macro, macro
    weights = groups.weight_sum.value(eligible_weight_sum)
    return macro, F.when(weights > 0, groups.weight_sum.value(weighted_value_sum) / weights)


def point_estimates(rows: DataFrame, spec: AggregateSpec, slice_cols: list[str], groups: Groups) -> DataFrame:
    """Per group x slice: both means, the counts and summed weights behind them, the unjudged share.

    Each term is cut into fixed point once, summed per finest cell (group x every slice
    column) and the cells rolled up to each slice: integer sums make the two levels equal to
    one pass, and the expansion to slices runs on few rows.
    """
    value, weight, unjudged = F.col("value"), F.col("weight"), F.col("unjudged")
    x, w = groups.value_sum, groups.weight_sum
    terms = rows.select(
        *GROUP_KEYS, *slice_cols, "value", "empty_ideal", "no_results", "unjudged",
        *x.parts(value, "value_sum"),
        *w.parts(weight * value, "weighted_value_sum"),
        *w.parts(F.when(value.isNotNull(), weight), "eligible_weight_sum"),
        *w.parts(weight, "weight_sum"),
        *x.parts(unjudged, "unjudged_sum"),
    )
    sums = {
        "n_requests": F.count(F.lit(1)),
        "n_eligible": F.count("value"),
        "n_empty_ideal": F.count(F.when(F.col("empty_ideal"), 1)),
        "n_no_results": F.count(F.when(F.col("no_results"), 1)),
        "n_unjudged": F.count("unjudged"),
        **{part: F.sum(part) for name in _SUMMED for part in FixedPoint.names(name)},
    }
    rolled = roll_up(terms, GROUP_KEYS, spec.slices, slice_cols, sums)
    n_eligible, n_unjudged = F.col("n_eligible"), F.col("n_unjudged")
    macro, weighted = means(groups, n_eligible, "value_sum", "weighted_value_sum", "eligible_weight_sum")
    return rolled.select(
        *GROUP_KEYS,
        "slice_dimension",
        "slice_value",
        macro.alias("macro"),
        weighted.alias("weighted"),
        "n_eligible",
        "n_empty_ideal",
        "n_no_results",
        "n_requests",
        F.coalesce(w.value("eligible_weight_sum"), F.lit(0.0)).alias("weight_eligible"),
        F.coalesce(w.value("weight_sum"), F.lit(0.0)).alias("weight_all"),
        F.when(n_unjudged > 0, x.value("unjudged_sum") / n_unjudged).alias("unjudged_share"),
    )
