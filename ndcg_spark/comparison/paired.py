"""Comparing two rankers honestly: paired deltas, a significance test, and a candidate-pool guard.

"Is ranker B better than ranker A?" is answered on the requests **both** can score, request by
request: the delta ``candidate − baseline`` of each request's metric at K -- every metric of the
per-request table (NDCG, recall ...) and, in a reranker comparison, its what-ifs -- its mean (macro:
each request once; weighted: by traffic weight), a paired bootstrap interval, a paired randomization
(sign-flip) test and win / tie / loss counts — overall and per slice, a row per metric.

A higher NDCG can come from a different candidate *pool* rather than a better ranking: ranker B
may simply have been handed the relevant documents. So :func:`compare` first checks the pools:

- the two sides carry the same ``pool_version`` **and** rank the same documents for every
  request they share → a ``reranker`` comparison (the per-request NDCG as scored in stage 1);
- otherwise → an ``end_to_end`` comparison: each side's metrics are recomputed against **one shared
  ideal from the judgments** (every judged document of the request, retrieved or not: NDCG's IDCG,
  recall's relevant documents), and each side's **pool recall** (positives in its pool ÷ all known
  positives) is reported beside it.
  Asked for a reranker comparison (``kind: reranker``, the default) across different pools, it
  refuses with :class:`~ndcg_spark.comparison.guard.PoolMismatchError` unless the caller opts in
  with ``kind: end_to_end`` (or ``auto``: label whichever it is).

The pool check needs the candidates themselves: :func:`~ndcg_spark.comparison.pools.pool_summary` reduces them (and the
judgments) to one row per system × pool version × request × K — a hash of the request's sorted
doc ids, pool size, known positives and each metric's ideal over every judged document (the
positives *in* each pool are the per-request table's ``n_positive``).

Everything is native Spark: the bootstrap and the sign-flip test are Spark aggregations over
replicates whose Poisson counts and signs are pure functions of ``(seed, replicate, request_id)``
(``xxhash64``), and every sum -- the means, the observed and the permuted statistics, the
replicate sums -- is an exact fixed-point sum (:class:`~ndcg_spark.metrics.exact.FixedPoint`), so
the same seed and data give the same bits whatever the partitioning, like the aggregates. No
per-request row is collected to the driver.

The pieces: :mod:`~ndcg_spark.comparison.pools` (the pool summary),
:mod:`~ndcg_spark.comparison.sides` (the two sides, joined), :mod:`~ndcg_spark.comparison.guard`
(the pool guard), this module (per-request deltas, point estimates, the table) and
:mod:`~ndcg_spark.comparison.replicates` (interval and sign-flip test).

Examples
--------
>>> from ndcg_spark import CompareSpec, Contract, pool_summary, score_requests
>>> cands = spark.createDataFrame(
...     [("q1", "a", "A", 1), ("q1", "b", "A", 2), ("q1", "c", "A", 3),
...      ("q1", "a", "B", 2), ("q1", "b", "B", 3), ("q1", "c", "B", 1),
...      ("q2", "d", "A", 1), ("q2", "e", "A", 2), ("q2", "d", "B", 2), ("q2", "e", "B", 1),
...      ("q3", "f", "A", 1), ("q3", "f", "B", 1)],
...     "request_id string, doc_id string, system string, position int")
>>> judgments = spark.createDataFrame(
...     [("q1", "a", 1.0), ("q1", "b", 0.0), ("q1", "c", 3.0), ("q2", "d", 0.0), ("q2", "e", 2.0),
...      ("q3", "f", 0.0)], "request_id string, doc_id string, grade double")
>>> contract = Contract(k=[3])
>>> per_request = score_requests(cands, judgments, contract)
>>> pools = pool_summary(cands, judgments, contract)
>>> spec = CompareSpec(baseline="A", candidate="B", replicates=50, permutations=50)
>>> out = compare(per_request, pools, spec)
>>> out.select("comparison_kind", "metric", "k", "n_paired", "n_neither", F.round("delta_macro", 4).alias("delta"),
...            "wins", "ties", "losses").show()
+---------------+------+---+--------+---------+------+----+----+------+
|comparison_kind|metric|  k|n_paired|n_neither| delta|wins|ties|losses|
+---------------+------+---+--------+---------+------+----+----+------+
|       reranker|  ndcg|  3|       2|        1|0.3897|   2|   0|     0|
+---------------+------+---+--------+---------+------+----+----+------+
<BLANKLINE>
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.comparison.columns import COMPARISON_COLUMNS, COMPARISON_LEGACY, PER_REQUEST_INPUTS, known, pool_columns
from ndcg_spark.comparison.guard import PoolCheck, check_pools
from ndcg_spark.comparison.replicates import RESAMPLED_COLUMNS, UNIT_SUM, resampled_statistics
from ndcg_spark.comparison.sides import Sides, describe_sides, join_sides, slice_columns
from ndcg_spark.config.compare_spec import CompareSpec, Side
from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import InputError
from ndcg_spark.frames import nulls_first, persist_coalesced, shuffles_sized_to
from ndcg_spark.legacy import with_legacy_columns
from ndcg_spark.measures import COMPONENTS, METRICS, Metric
from ndcg_spark.metrics.exact import FixedPoint
from ndcg_spark.metrics.slices import OVERALL, roll_up
from ndcg_spark.version import __version__

__all__ = ["compare"]

_GROUP = ("slice_dimension", "slice_value", "k", "metric")
#: per-request flags counted per slice × K: output column -> flag column of :func:`_paired_rows`
_COUNTED = {
    "n_paired": "paired",
    "n_only_baseline_missing": "only_baseline_missing",
    "n_only_baseline_empty": "only_baseline_empty",
    "n_only_candidate_missing": "only_candidate_missing",
    "n_only_candidate_empty": "only_candidate_empty",
    "n_neither": "neither",
    "n_baseline_no_results": "baseline_no_results",
    "n_candidate_no_results": "candidate_no_results",
    "n_pool_differs": "pool_differs",
    "wins": "win",
    "ties": "tie",
    "losses": "loss",
    "n_pool_recall_requests": "pool_recall_known",
    "n_baseline_pool_recall": "has_baseline_pool_recall",
    "n_candidate_pool_recall": "has_candidate_pool_recall",
}


def _table_order(measures: tuple[str, ...]):
    """The comparison table's row order: the overall rows first, then by slice, K and metric (in the
    per-request table's order)."""
    def order(row: Row) -> tuple:
        rank = measures.index(row.metric) if row.metric in measures else len(measures)
        return nulls_first(row.slice_dimension != OVERALL, row.slice_dimension, row.slice_value, row.k, rank)
    return order


def compare(
    per_request: DataFrame,
    pools: DataFrame,
    spec: CompareSpec | None = None,
    *,
    baseline: str | Side | None = None,
    candidate: str | Side | None = None,
    created_at: dt.datetime | None = None,
    code_version: str | None = None,
    contract: Contract | None = None,
    **options: Any,
) -> DataFrame:
    """Compare ``spec.candidate`` with ``spec.baseline``: one row per slice × K
    (:data:`~ndcg_spark.comparison.columns.COMPARISON_COLUMNS`).

    Parameters
    ----------
    per_request : the per-request table of one run (stage 1), both systems under one contract.
    pools : :func:`~ndcg_spark.comparison.pools.pool_summary` of the same candidates and judgments.
    spec : what to compare and how (:class:`~ndcg_spark.config.compare_spec.CompareSpec`); or,
        instead, ``baseline=``, ``candidate=`` and any other ``CompareSpec`` field as keywords.
    created_at : stamped on every row (default: now, UTC).
    code_version : stamped on every row (default: the package version, as in the aggregates).
    contract : the run's contract: its metrics' parameters (recall's denominator), which an
        end-to-end comparison needs to recompute them over the shared ideal (None: each metric's
        defaults, refused for a metric with parameters when the comparison is end to end).

    Returns
    -------
    DataFrame
        The overall row (``slice_dimension = 'overall'``, ``slice_value = 'all'``) and one row per
        value of each slice column, for each K and metric. A request is *paired* when both sides can
        score it (a row on each side, neither an empty ideal: the same requests for every metric of the
        contract; a what-if: both have a value); deltas, intervals, p-values and win / tie / loss are
        over paired requests; the ``n_only_*`` and ``n_neither`` columns count the rest. The NDCG rows
        also carry the table's columns from before the ``metric`` column (``baseline_ndcg_macro`` ...).

    Raises
    ------
    PoolMismatchError
        ``spec.kind == 'reranker'`` and the sides differ in pool version or in the candidate
        set of a request they share.
    InputError
        a side is missing, spans several pool versions / runs / contracts, or the pool summary
        does not match the per-request table.

    Notes
    -----
    *Interval*: percentile interval of ``spec.replicates`` paired Poisson-bootstrap
    replicates (each unit drawn with a Poisson(1) count, the same for both sides; the unit is a
    random group of a slice cell's paired requests, ``spec.buckets`` per cell, or with
    ``buckets=0`` a single request).
    *p-value*: two-sided sign-flip randomization test of "the two sides are exchangeable within a
    request": ``(1 + #{r : |T_r| >= |T|}) / (R + 1)`` with ``T = sum(d_i)`` (macro) or
    ``sum(w_i d_i)`` (weighted) and ``T_r`` the same sum with each unit's deltas multiplied by a
    random sign; ties up to :data:`~ndcg_spark.comparison.replicates.EXTREME_TOLERANCE` × sum |d_i|
    count as extreme.
    *Pool recall*: over the requests present on both sides that have a known positive.
    *Exact*: every sum is an exact fixed-point sum; metrics, deltas and pool recall are summed on a grid of
    2^-55, weighted terms on a grid of 2^-55 of the largest weight (read by the pool guard), so
    the table is the same bits under any partitioning.
    *Eager*: unlike most functions here, ``compare`` runs its Spark jobs when called (the pool
    guard must decide before anything is computed, and its cached inputs are released before it
    returns); the result is a small DataFrame of one row per slice × K built from the collected
    rows. Nothing per request is collected.
    """

    if spec is None:
        spec = CompareSpec(baseline=baseline, candidate=candidate, **options)
    elif baseline is not None or candidate is not None or options:
        raise TypeError("compare: give either spec or baseline=/candidate=/options, not both")
    _require_inputs(per_request, pools)
    created_at = created_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    with shuffles_sized_to(per_request, pools):  # every job of the call: few partitions for a small input
        sides = describe_sides(per_request, spec)
        slices = slice_columns(per_request, spec)
        metrics = _declared(sides, contract)
        # Used by the guard, the point estimates and the replicates: computed once, released below.
        joined = persist_coalesced(join_sides(per_request, pools, spec, sides, slices))
        try:
            check = check_pools(joined, spec, sides)
            measures = _compared(sides, check, metrics)
            table = _comparison(joined, spec, sides, check, slices, metrics, measures)
            stamped = with_legacy_columns(table.select(*_stamps(spec, sides, check, created_at,
                                                                code_version or __version__)), COMPARISON_LEGACY, [])
            stamped = stamped.select(*COMPARISON_COLUMNS)
            # One row per slice x K x metric: small. Materialise it so the cached inputs can be released.
            rows = sorted(stamped.collect(), key=_table_order(measures))  # in Python: a sort in Spark is a job more
            return joined.sparkSession.createDataFrame(rows, schema=stamped.schema)
        finally:
            joined.unpersist()


def _declared(sides: Sides, contract: Contract | None) -> dict[str, Metric]:
    """The per-request table's metrics as declared: the contract's (its fingerprint must be the run's),
    or without one each metric's defaults."""
    if contract is None:
        return {name: METRICS[name]() for name in sides.metrics}
    scored = [c for c in contract.resolutions() if c.fingerprint == sides.contract_fingerprint]
    if not scored:
        given = " or ".join(c.fingerprint for c in contract.resolutions())
        raise InputError(f"compare: the per-request rows were scored under contract {sides.contract_fingerprint}, "
                         f"but the contract given is {given}; pass the run's contract")
    return {name: scored[0].metric(name) for name in sides.metrics}


def _compared(sides: Sides, check: PoolCheck, metrics: dict[str, Metric]) -> tuple[str, ...]:
    """What the comparison has a row for: every metric, and in a reranker comparison each what-if
    with a value (an end-to-end comparison recomputes the metrics over the shared ideal; a what-if's
    ideal is each side's own)."""
    if check.kind == "end_to_end":
        return sides.metrics
    return tuple(m for m in sides.measures if m in metrics or m in check.valued_what_ifs)


def _require_inputs(per_request: DataFrame, pools: DataFrame) -> None:
    for name in PER_REQUEST_INPUTS:
        if name not in per_request.columns:
            raise InputError(f"compare: the per-request table has no column {name!r} (is it a stage-1 table?)")
    for name in pool_columns(()):  # each metric's shared ideal is checked with the sides
        if name not in pools.columns:
            raise InputError(f"compare: the pool summary has no column {name!r} (build it with pool_summary())")


def _comparison(
    joined: DataFrame, spec: CompareSpec, sides: Sides, check: PoolCheck, slices: tuple[str, ...],
    metrics: dict[str, Metric], measures: tuple[str, ...],
) -> DataFrame:
    """Per slice × K × metric: the point estimates, and the interval and sign-flip counts when asked for."""
    weight_sum = FixedPoint.for_bound(check.weight_bound)
    rows = _paired_rows(joined, check.kind, metrics, measures, len(slices), spec.tie_tolerance)
    point = _point_estimates(rows, slices, weight_sum)
    if not max(spec.replicates, spec.permutations):
        return point.select("*", *[F.lit(None).alias(name) for name in RESAMPLED_COLUMNS])
    # One row per slice x K each, so computed once and put together on the driver: as one plan,
    # the point estimates were computed twice (the observed statistics' side of a join, and the
    # table's), each a job of its own.
    spark = joined.sparkSession
    point_rows = point.collect()
    point = spark.createDataFrame(point_rows, schema=point.schema)
    series = [(k, m) for k in sides.ks for m in measures]
    resampled = resampled_statistics(rows, point, spec, slices, series, weight_sum)
    found = {tuple(r[c] for c in _GROUP): r for r in resampled.collect()}
    schema = T.StructType([*point.schema.fields, *[resampled.schema[c] for c in RESAMPLED_COLUMNS]])
    missing = dict.fromkeys(RESAMPLED_COLUMNS)
    return spark.createDataFrame(
        [(*r, *[found.get(tuple(r[c] for c in _GROUP), missing)[c] for c in RESAMPLED_COLUMNS])
         for r in point_rows],
        schema=schema,
    )


def _paired_rows(joined: DataFrame, kind: str, metrics: dict[str, Metric], measures: tuple[str, ...],
                 n_slices: int, tie_tolerance: float) -> DataFrame:
    """Per request × K × metric: each side's value under the comparison's ideal, the delta of a
    paired request, which of the categories the request falls in, and each side's pool recall."""
    baseline_in, candidate_in = F.col("baseline_in"), F.col("candidate_in")
    known = F.coalesce(F.col("baseline_n_known_positive"), F.col("candidate_n_known_positive"))
    # pool recall compares pools: over the requests both sides returned something for
    answered = baseline_in & candidate_in & ~F.col("baseline_no_results") & ~F.col("candidate_no_results")
    recall_known = answered & (known > 0)
    pool_recall = {side: F.when(recall_known, F.col(f"{side}_n_positive") / known) for side in ("baseline", "candidate")}
    tolerance = F.lit(tie_tolerance)
    # one small struct per measure (its two values) exploded, the categories derived once after it:
    # derived per measure inside the array, six metrics' code outgrew Java's 64 KB method limit
    per_metric = [F.struct(F.lit(measure).alias("metric"),
                           *[_score(side, measure, kind, metrics).alias(f"_{side}") for side in ("baseline", "candidate")])
                  for measure in measures]
    rows = joined.select(
        "request_id",
        "k",
        *[F.coalesce(F.col(f"baseline_slice_{i}"), F.col(f"candidate_slice_{i}")).cast("string").alias(f"slice_{i}")
          for i in range(n_slices)],
        F.coalesce(F.col("baseline_weight"), F.col("candidate_weight")).alias("weight"),
        (baseline_in & F.col("baseline_no_results")).alias("baseline_no_results"),
        (candidate_in & F.col("candidate_no_results")).alias("candidate_no_results"),
        baseline_in.alias("_baseline_in"),
        candidate_in.alias("_candidate_in"),
        "pool_differs",
        recall_known.alias("pool_recall_known"),
        *[value.alias(f"{side}_pool_recall") for side, value in pool_recall.items()],
        *[value.isNotNull().alias(f"has_{side}_pool_recall") for side, value in pool_recall.items()],
        F.explode(F.array(*per_metric)).alias("_m"),
    )
    score = {side: F.col(f"_m._{side}") for side in ("baseline", "candidate")}
    side_in = {side: F.col(f"_{side}_in") for side in ("baseline", "candidate")}

    def nothing(side: str) -> Column:
        """The side has a row, flagged no_results, and it is set aside (no value)."""
        return F.col(f"{side}_no_results") & score[side].isNull()

    baseline_ok = side_in["baseline"] & score["baseline"].isNotNull()
    candidate_ok = side_in["candidate"] & score["candidate"].isNotNull()
    paired = baseline_ok & candidate_ok
    delta = F.when(paired, score["candidate"] - score["baseline"])
    kept = [c for c in rows.columns if c not in ("_m", "_baseline_in", "_candidate_in")]
    return rows.select(
        *kept,
        F.col("_m.metric").alias("metric"),
        paired.alias("paired"),
        F.when(paired, score["baseline"]).alias("baseline"),
        F.when(paired, score["candidate"]).alias("candidate"),
        delta.alias("delta"),
        (delta > tolerance).alias("win"),
        (F.abs(delta) <= tolerance).alias("tie"),
        (delta < -tolerance).alias("loss"),
        # "missing": the other side has no row, or returned nothing and that request is set aside
        (baseline_ok & (~side_in["candidate"] | nothing("candidate"))).alias("only_baseline_missing"),
        (baseline_ok & side_in["candidate"] & ~candidate_ok & ~nothing("candidate")).alias("only_baseline_empty"),
        (candidate_ok & (~side_in["baseline"] | nothing("baseline"))).alias("only_candidate_missing"),
        (candidate_ok & side_in["baseline"] & ~baseline_ok & ~nothing("baseline")).alias("only_candidate_empty"),
        (~baseline_ok & ~candidate_ok).alias("neither"),
    )


def _score(side: str, measure: str, kind: str, metrics: dict[str, Metric]) -> Column:
    """One side's value of ``measure`` as the comparison reads it (null: not scored). A metric is
    scored where the request has an ideal (the same requests for every metric: ``empty_ideal``); end
    to end it is recomputed over the shared ideal of every judged document of the request (the pool
    summary's ``<component>_known``), for every metric only where each of them has one. A what-if is
    its value. A request the side returned nothing for has its value under the contract's
    ``no_results`` (0, or set aside), over the ideal of the request's judged documents either way."""
    value = F.col(f"{side}_{measure}")
    if measure not in metrics:  # a what-if: its own ideal, set aside (null) where the contract does
        return value
    has_ideal = ~F.col(f"{side}_empty_ideal")
    if kind == "end_to_end":
        def shared(metric: Metric):
            return lambda name: F.col(f"{side}_{known(name)}" if COMPONENTS[name].ideal else f"{side}_{name}")

        every_ideal = functools.reduce(operator.and_, [m.has_ideal(shared(m)) for m in metrics.values()])
        scored = F.when(every_ideal, metrics[measure].value(shared(metrics[measure]), F.col("k")))
    else:
        scored = F.when(has_ideal, value)
    return F.when(F.col(f"{side}_no_results"), F.when(has_ideal, value)).otherwise(scored)


def _point_estimates(rows: DataFrame, slices: tuple[str, ...], weight_sum: FixedPoint) -> DataFrame:
    """Per slice × K × metric: the counts, and the means from exact sums (with the observed sign-flip
    statistics ``observed_*`` and their scales ``scale_*``)."""
    slice_cols = [f"slice_{i}" for i in range(len(slices))]
    terms = _point_terms(weight_sum)
    counts = {"n_requests": F.count(F.lit(1)),
              **{name: F.count(F.when(F.col(flag), True)) for name, flag in _COUNTED.items()}}
    sums = {part: F.sum(part) for name in terms for part in FixedPoint.names(name)}
    term_parts = [part for name, (scale, term) in terms.items() for part in scale.parts(term, name)]
    summed = roll_up(rows.select("k", "metric", *slice_cols, *_COUNTED.values(), *term_parts), ["k", "metric"],
                     slices, slice_cols, {**counts, **sums})
    return summed.select(*_GROUP, *counts, *_means(weight_sum))


def _point_terms(weight_sum: FixedPoint) -> dict[str, tuple[FixedPoint, Column]]:
    """Every exact sum of the point estimates: name -> (its scale, the per-request term)."""
    weight, delta = F.col("weight"), F.col("delta")
    unit = {name: F.col(name) for name in ("baseline", "candidate", "delta", "baseline_pool_recall",
                                           "candidate_pool_recall")}
    weighted = {
        "paired_weight": F.when(F.col("paired"), weight),
        **{f"weighted_{name}": weight * F.col(name) for name in unit},
        "abs_weighted_delta": F.abs(weight * delta),
        **{f"{side}_pool_recall_weight": F.when(F.col(f"has_{side}_pool_recall"), weight)
           for side in ("baseline", "candidate")},
    }
    unit["abs_delta"] = F.abs(delta)
    return {**{n: (UNIT_SUM, t) for n, t in unit.items()}, **{n: (weight_sum, t) for n, t in weighted.items()}}


def _means(weight_sum: FixedPoint) -> list[Column]:
    """The point estimates from the sums of :func:`_point_terms`."""
    paired, paired_weight = F.col("n_paired"), weight_sum.value("paired_weight")

    def mean(name: str, count: Column) -> Column:
        return F.when(count > 0, UNIT_SUM.value(name) / count)

    def weighted_mean(name: str, weight: Column) -> Column:
        return F.when(weight > 0, weight_sum.value(f"weighted_{name}") / weight)

    recall = {side: (f"{side}_pool_recall", F.col(f"n_{side}_pool_recall"),
                     weight_sum.value(f"{side}_pool_recall_weight")) for side in ("baseline", "candidate")}
    return [
        paired_weight.alias("paired_weight"),
        mean("baseline", paired).alias("baseline_macro"),
        mean("candidate", paired).alias("candidate_macro"),
        mean("delta", paired).alias("delta_macro"),
        weighted_mean("baseline", paired_weight).alias("baseline_weighted"),
        weighted_mean("candidate", paired_weight).alias("candidate_weighted"),
        weighted_mean("delta", paired_weight).alias("delta_weighted"),
        *[mean(name, count).alias(f"{name}_macro") for name, count, _ in recall.values()],
        *[weighted_mean(name, weight).alias(f"{name}_weighted") for name, _, weight in recall.values()],
        UNIT_SUM.value("delta").alias("observed_macro"),
        weight_sum.value("weighted_delta").alias("observed_weighted"),
        UNIT_SUM.value("abs_delta").alias("scale_macro"),
        weight_sum.value("abs_weighted_delta").alias("scale_weighted"),
    ]


def _stamps(
    spec: CompareSpec, sides: Sides, check: PoolCheck, created_at: dt.datetime, code_version: str
) -> list[Column]:
    """The comparison table's columns, in order: what was computed, and what it was computed under."""
    replicates, permutations = spec.replicates, spec.permutations

    def p_value(extremes: str) -> Column:
        if permutations == 0:
            return F.lit(None).cast("double")
        return F.when(F.col("n_paired") > 0,
                      (F.lit(1.0) + F.coalesce(F.col(extremes), F.lit(0))) / F.lit(permutations + 1.0))

    def bound(interval: str, i: int) -> Column:
        return F.lit(None).cast("double") if replicates == 0 else F.col(interval).getItem(i).cast("double")

    stamps = {
        "run_id": F.lit(sides.run_id).cast("string"),
        "baseline": F.lit(spec.baseline.system),
        "candidate": F.lit(spec.candidate.system),
        "comparison_kind": F.lit(check.kind),
        "baseline_pool_version": F.lit(sides.baseline_pool).cast("string"),
        "candidate_pool_version": F.lit(sides.candidate_pool).cast("string"),
        "pools_differ": F.lit(check.pools_differ),
        "ideal": F.lit("judgments" if check.kind == "end_to_end" else "contract"),
        "delta_macro_ci_low": bound("macro_interval", 0),
        "delta_macro_ci_high": bound("macro_interval", 1),
        "p_value_macro": p_value("macro_extremes"),
        "delta_weighted_ci_low": bound("weighted_interval", 0),
        "delta_weighted_ci_high": bound("weighted_interval", 1),
        "p_value_weighted": p_value("weighted_extremes"),
        "below_min_paired": F.col("n_paired") < F.lit(spec.min_paired),
        "min_paired": F.lit(spec.min_paired).cast("int"),
        "tie_tolerance": F.lit(spec.tie_tolerance).cast("double"),
        "ci_level": F.lit(spec.ci_level if replicates else None).cast("double"),
        "bootstrap_replicates": F.lit(replicates).cast("int"),
        "permutations": F.lit(permutations).cast("int"),
        "seed": F.lit(spec.seed).cast("long"),
        "bootstrap_buckets": F.lit(spec.buckets).cast("int"),
        "contract_fingerprint": F.lit(sides.contract_fingerprint),
        "code_version": F.lit(code_version),
        "created_at": F.lit(created_at).cast("timestamp"),
    }
    return [stamps[c].alias(c) if c in stamps else F.col(c) for c in COMPARISON_COLUMNS if c not in COMPARISON_LEGACY]
