"""What a judging plan settles: its target, the target's sums, each document's swing on it, its spread.

A **target** is one system's mean NDCG at one K (``aggregate``) or the mean per-request delta
``candidate - baseline`` of two rankers at one K (``compare``: the requests both score, as a
reranker comparison pairs them), macro (each request once) or weighted (by traffic weight).

* A document's **swing on the target** is how far judging it alone moves the mean, over every
  grade of the scale: ``max - min`` of the mean recomputed with its request's NDCG (each side's)
  at each grade. The denominators move with it: a request whose ideal was empty can get one and
  join the mean (or the pairs), or lose it.
* The target's **unjudged spread** is the mean, over the target's requests (every request of
  the system; every request both rankers score), of the request's unjudged range -- how far the
  grades of its unjudged documents can move its term, over every grading
  (:mod:`ndcg_spark.judging.spread`; a Python function per request on the executors) --
  weighted like the target.

Every sum is exact -- the mean's a fixed-point sum in Spark (:class:`~ndcg_spark.metrics.exact.FixedPoint`),
the spread's ``math.fsum`` of the collected ranges: the same inputs give the same bits, so the same
plan, whatever the partitioning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.compare_spec import Side
from ndcg_spark.config.judging_spec import describe_target
from ndcg_spark.errors import InputError
from ndcg_spark.measures.ndcg import NDCG
from ndcg_spark.judging.spread import RequestLists, Scale, Shown, discounts, settle_bound, value_range
from ndcg_spark.metrics.exact import FixedPoint

__all__ = ["Spread", "Target", "TargetSums", "present", "request_lists_of", "request_ranges", "target_rows",
           "target_sums", "target_swings"]


@dataclass(frozen=True)
class Target:
    """A judging plan's target: ``kind`` (``aggregate`` or ``compare``), the cutoff ``k``, the mean
    (``macro`` or ``weighted``) and its sides, each a system and pool version (a comparison's
    candidate first, then its baseline)."""

    kind: str
    k: int
    mean: str
    sides: tuple[tuple[str, str | None], ...]

    @classmethod
    def resolve(cls, per_request: DataFrame, kind: str, k: int, mean: str, sides: tuple[Side, ...]) -> Target:
        """The target of ``sides`` (Side: a system, optionally a pool version) with each side's pool
        version read from the per-request rows (:meth:`of` their :func:`present` systems)."""
        return cls.of(present(per_request), kind, k, mean, sides)

    @classmethod
    def of(cls, present: list[Any], kind: str, k: int, mean: str, sides: tuple[Side, ...]) -> Target:
        """The target of ``sides`` among the ``present`` (system, pool version) rows; an
        :class:`InputError` names a system that is not there, or that was scored over several pool
        versions without one named."""
        resolved = []
        for side in sides:
            pools = sorted({r.pool_version for r in present if r.system == side.system
                            and (side.pool_version is None or r.pool_version == side.pool_version)}, key=str)
            if len(pools) != 1:
                found = ", ".join(sorted(r.system if r.pool_version is None else f"{r.system} (pool {r.pool_version})"
                                         for r in present)) or "none"
                what = "no per-request rows" if not pools else f"rows of several pool versions ({', '.join(map(str, pools))})"
                raise InputError(f"judging: {what} for {side.describe()}; present: {found}")
            resolved.append((side.system, pools[0]))
        return cls(kind, k, mean, tuple(resolved))

    def describe(self) -> str:
        """``hybrid's macro NDCG@10`` or ``the macro delta hybrid - bm25 of NDCG@10``."""
        return describe_target(self.kind, [system for system, _ in self.sides], self.mean, self.k)


def present(per_request: DataFrame) -> list[Any]:
    """The (system, pool version) pairs of a per-request table (one small job)."""
    return per_request.select("system", "pool_version").distinct().limit(1000).collect()


@dataclass(frozen=True)
class TargetSums:
    """The target's mean over the per-request rows (exact sums): its numerator and denominator, and
    how many requests the target has."""

    total: float
    count: float
    requests: int

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count > 0 else None


@dataclass(frozen=True)
class Spread:
    """The target's unjudged spread: the sum of its requests' ranges (weighted) and of their weights,
    and each request's range, bound and weight (:func:`request_ranges`, collected)."""

    total: float
    count: float
    ranges: dict[str, float]
    bounds: dict[str, float]
    weights: dict[str, float]

    @property
    def value(self) -> float:
        return self.total / self.count if self.count > 0 else 0.0

    @classmethod
    def of(cls, rows: list[Any]) -> Spread:
        """From the rows of :func:`request_ranges`: exact sums (``math.fsum``: any order, the same bits)."""
        return cls(math.fsum(r["weight"] * r["range"] for r in rows), math.fsum(r["weight"] for r in rows),
                   {r["request_id"]: r["range"] for r in rows},
                   {r["request_id"]: r["bound"] for r in rows if r["bound"] is not None and r["bound"] > 0},
                   {r["request_id"]: r["weight"] for r in rows})


def target_rows(per_request: DataFrame, target: Target, scores_no_results: bool = False) -> DataFrame:
    """One row per request of the target at its K: ``request_id``, ``weight`` (1 for a macro mean),
    per side ``i`` ``v{i}`` (the NDCG the mean counts: null when the request is not in the mean)
    and ``in_mean`` (whether it counts in the mean now). A mean counts the per-request NDCG as
    stage 2 does (0 for an empty ideal under ``empty_ideal: zero``); a comparison pairs the requests
    with an ideal on both sides, as :func:`~ndcg_spark.compare` does.

    A request a system returned nothing for (``no_results``) has no candidate to judge: under
    ``no_results: exclude`` it is no part of the mean, nor of the target; under ``zero``
    (``scores_no_results``) stage 2 counts it (0, or the empty-ideal policy's value), and so does the
    target -- a term of the mean whose range is 0 (no list of it to judge).
    """
    if "no_results" in per_request.columns and not scores_no_results:
        per_request = per_request.filter(~F.coalesce(F.col("no_results"), F.lit(False)))
    sides = []
    for i, (system, pool) in enumerate(target.sides):
        rows = per_request.filter((F.col("system") == system) & F.col("pool_version").eqNullSafe(F.lit(pool))
                                  & (F.col("k") == target.k))
        ndcg = F.col(NDCG.name).cast("double")  # a plan settles NDCG (judge_next refuses a contract without it)
        counted = ndcg if target.kind == "aggregate" else F.when(~F.col("empty_ideal"), ndcg)
        sides.append(rows.select(F.col("request_id").cast("string").alias("request_id"),
                                 F.col("weight").cast("double").alias(f"w{i}"), counted.alias(f"v{i}")))
    joined = sides[0] if len(sides) == 1 else sides[0].join(sides[1], "request_id")
    weight = F.col("w0") if len(sides) == 1 else F.coalesce(F.col("w1"), F.col("w0"))
    in_mean = F.col("v0").isNotNull() if len(sides) == 1 else F.col("v0").isNotNull() & F.col("v1").isNotNull()
    return joined.select("request_id", (weight if target.mean == "weighted" else F.lit(1.0)).alias("weight"),
                         *[F.col(f"v{i}") for i in range(len(sides))], in_mean.alias("in_mean"))


def request_lists_of(row: Any, target: Target, tie_aware: bool) -> RequestLists | None:
    """One row of :func:`ndcg_spark.judging.lists.request_lists` as the target sees it (None when a
    side has no list for the request): its sides' lists with each candidate's discount at the
    target's K, and under ``ideal_from: judgments`` the judged gains and the other unjudged documents."""
    if row["lists"] is None:  # no system showed the request anything (a request of the judgments only)
        return None
    by_side = {(entry["system"], entry["pool_version"]): entry["items"] for entry in row["lists"]}
    shown = []
    for side in target.sides:
        items = by_side.get(side)
        if items is None:
            return None
        weights = discounts(len(items), target.k, [it["o1"] for it in items] if tie_aware else None)
        shown.append(tuple(Shown(it["doc_id"], it["gain"] if it["judged"] else None, w) for it, w in zip(items, weights)))
    if row["judged_ideal"] is None:
        return RequestLists(row["request_id"], tuple(shown), None)
    mine = {s.doc_id for side in shown for s in side}
    others = sorted({it["doc_id"] for items in by_side.values() for it in items if not it["judged"]} - mine)
    return RequestLists(row["request_id"], tuple(shown), tuple(row["judged_ideal"]), tuple(others))


def request_ranges(rows: DataFrame, lists: DataFrame, target: Target, scale: Scale, tie_aware: bool,
                   swings: DataFrame | None = None) -> DataFrame:
    """``request_id, weight, range, bound`` for every request of the target (``rows``:
    :func:`target_rows`): its unjudged range (:func:`~ndcg_spark.judging.spread.value_range`) and,
    given the ``swings`` of its documents, an upper bound on what judging any first of them in swing
    order settles per document (:func:`~ndcg_spark.judging.spread.settle_bound`, weighted; null
    without ``swings``). One Python function per request on the executors, one pass over ``lists``."""
    def measured(request_id, lists_, judged_ideal, docs, weight):
        request = request_lists_of({"request_id": request_id, "lists": lists_, "judged_ideal": judged_ideal},
                                   target, tie_aware)
        if request is None or not request.unjudged():
            return 0.0, None
        low, high = value_range(request, scale)
        whole = high - low
        return whole, None if docs is None else weight * settle_bound(request, scale, list(docs), whole)

    reached = rows.select("request_id", "weight").join(lists, "request_id", "left")
    if swings is not None:
        order = swings.groupBy("request_id").agg(
            F.transform(F.array_sort(F.collect_list(F.struct((-F.col("swing")).alias("s"), "doc_id"))),
                        lambda x: x["doc_id"]).alias("docs"))
        reached = reached.join(order, "request_id", "left")
    else:
        reached = reached.withColumn("docs", F.lit(None).cast("array<string>"))
    udf = F.udf(measured, "struct<range: double, bound: double>")
    out = reached.select("request_id", "weight", udf("request_id", "lists", "judged_ideal", "docs", "weight").alias("m"))
    return out.select("request_id", "weight", "m.range", "m.bound")


def _value(target: Target) -> Column:
    """The term a request adds to the mean: its NDCG, or the delta of its two."""
    return F.col("v0") if len(target.sides) == 1 else F.col("v0") - F.col("v1")


def target_sums(rows: DataFrame, target: Target) -> TargetSums:
    """:class:`TargetSums` of :func:`target_rows`' ``rows``: two small jobs (the largest weight, to
    scale the exact sums; the sums). A weighted target refuses a missing or negative weight (the
    spread's weights are these too)."""
    invalid = F.col("weight").isNull() | F.isnan("weight") | (F.col("weight") < 0)
    stats = rows.agg(F.max("weight").alias("w"), F.count(F.when(invalid, 1)).alias("bad"), F.count("*").alias("n"),
                     F.min(F.when(invalid, F.col("request_id"))).alias("example")).first()
    if stats["bad"]:
        raise InputError(f"judging: {stats['bad']} request(s) of {target.describe()} have a missing, negative or NaN "
                         f"weight (rule: weight_invalid), e.g. request {stats['example']!r}; a weighted target "
                         "needs every weight (attributes.default_weight gives a missing one a value)")
    scale = FixedPoint.for_bound(2.0 * max(stats["w"] or 0.0, 1.0))
    weight, counted = F.col("weight"), F.col("in_mean")
    terms = {"total": F.when(counted, weight * _value(target)), "count": F.when(counted, weight)}
    parts = [p for name, term in terms.items() for p in scale.parts(term, name)]
    sums = rows.select(*parts).agg(*[F.sum(p).alias(p) for name in terms for p in FixedPoint.names(name)])
    row = sums.select(*[F.coalesce(scale.value(name), F.lit(0.0)).alias(name) for name in terms]).first()
    return TargetSums(**row.asDict(), requests=stats["n"])


def target_swings(graded: DataFrame, rows: DataFrame, target: Target, sums: TargetSums, empty_is_zero: bool,
                  n_gains: int) -> DataFrame:
    """The swing on the target of each document with a graded row on one of its sides, one row per
    request x document: ``request_id, doc_id, swing, shown_by`` (every system and pool version that
    shows it, with its rank there).

    ``graded``: rows of :func:`~ndcg_spark.judging.swings.graded_rows` with ``at``, the NDCG at the
    target's K at each gain (null: empty ideal); ``rows``: :func:`target_rows`.
    """
    shown = F.when(F.col("rank").isNotNull(), F.struct("system", "pool_version", "rank"))
    per_side = []
    for i, (system, pool) in enumerate(target.sides):
        mine = (F.col("system") == system) & F.col("pool_version").eqNullSafe(F.lit(pool))
        per_side.append(F.first(F.when(mine, F.col("at")), ignorenulls=True).alias(f"g{i}"))
    docs = graded.groupBy("request_id", "doc_id").agg(
        F.array_sort(F.filter(F.collect_list(shown), lambda s: s.isNotNull())).alias("shown_by"), *per_side)
    reached = F.col("g0").isNotNull() if len(per_side) == 1 else F.col("g0").isNotNull() | F.col("g1").isNotNull()
    docs = docs.filter(reached).join(rows, "request_id")

    def side_at(i: int, j: Column) -> Column:
        """Side ``i``'s NDCG as the mean counts it with the document at the ``j``-th gain."""
        graded_value = F.element_at(F.col(f"g{i}"), j)
        if empty_is_zero and target.kind == "aggregate":
            graded_value = F.coalesce(graded_value, F.lit(0.0))
        return F.when(F.col(f"g{i}").isNull(), F.col(f"v{i}")).otherwise(graded_value)

    def mean_at(j: Column) -> Column:
        values = [side_at(i, j) for i in range(len(target.sides))]
        value = values[0] if len(values) == 1 else values[0] - values[1]
        counted = values[0].isNotNull() if len(values) == 1 else values[0].isNotNull() & values[1].isNotNull()
        w = F.col("weight")
        now, now_in = _value(target), F.col("in_mean")
        total = F.lit(sums.total) - F.when(now_in, w * now).otherwise(0.0) + F.when(counted, w * value).otherwise(0.0)
        count = F.lit(sums.count) - F.when(now_in, w).otherwise(0.0) + F.when(counted, w).otherwise(0.0)
        return F.when(count > 0, total / count)

    means = F.transform(F.sequence(F.lit(1), F.lit(n_gains)), mean_at)
    return docs.select("request_id", "doc_id", (F.array_max(means) - F.array_min(means)).alias("swing"), "shown_by")
