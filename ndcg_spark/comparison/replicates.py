"""The paired bootstrap interval and the sign-flip test of a comparison, from exact replicate sums.

Each resampling unit -- a paired request, or by default a random group of a slice cell's paired
requests (``buckets``, as in the aggregates) -- carries its summed deltas at every K and metric side by side,
and is weighed in each of ``max(replicates, permutations)`` replicates by its Poisson count
(bootstrap) and its sign (sign-flip test) -- pure functions of ``(seed, replicate, unit)``
(:func:`~ndcg_spark.metrics.resampling.replicate_sums`). The sums of a replicate are exact
fixed-point sums (:class:`~ndcg_spark.metrics.exact.FixedPoint`), taken per finest slice cell and
rolled up to every slice as they are drawn, so the resampling is
repeated neither per K, per metric nor per slice dimension, and the intervals and p-values are the same bits
under any partitioning.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.config.compare_spec import CompareSpec
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.exact import FixedPoint
from ndcg_spark.metrics.resampling import random_group_units, replicate_sums
from ndcg_spark.metrics.slices import percentile_interval

__all__ = ["EXTREME_TOLERANCE", "RESAMPLED_COLUMNS", "UNIT_SUM", "resampled_statistics"]

# A permuted statistic counts as "at least as extreme" when |T*| >= |T| - EXTREME_TOLERANCE * sum|d|:
# T and T* are sums of the same |d_i| with signs; exact sums make T* of the all-plus signs equal T.
EXTREME_TOLERANCE = 1e-9

#: every metric, its deltas and pool recall lie in [-1, 1]: the scale of their exact sums
UNIT_SUM = FixedPoint.for_bound(1.0)

#: what :func:`resampled_statistics` adds per slice × K
RESAMPLED_COLUMNS = ("macro_interval", "weighted_interval", "macro_extremes", "weighted_extremes")

_GROUP = ("slice_dimension", "slice_value", "k", "metric")
#: one series of the comparison: a K and a metric
Series = tuple[int, str]


def resampled_statistics(
    rows: DataFrame,
    point: DataFrame,
    spec: CompareSpec,
    slices: Sequence[str],
    series: Sequence[Series],
    weight_sum: FixedPoint,
) -> DataFrame:
    """Per slice × K × metric: the percentile intervals of both mean deltas and the number of sign
    flips at least as extreme as the observed statistics (:data:`RESAMPLED_COLUMNS`).

    Parameters
    ----------
    rows : per request × K × metric (``request_id, k, metric, weight, paired, delta`` and slice ``i``
        as ``slice_i``).
    point : the point estimates per slice × K × metric, with the observed statistics ``observed_macro``
        (sum of the deltas), ``observed_weighted`` (of weight × delta) and their scales
        ``scale_macro`` and ``scale_weighted`` (sums of the absolute values).
    spec : ``replicates`` bootstrap replicates, ``permutations`` sign flips, the ``seed``, the level.
    slices : the slice dimensions, in the order of the ``slice_i`` columns.
    series : every (K, metric) of the comparison.
    weight_sum : the scale of the weighted sums (from the largest weight).
    """
    per_replicate = _replicate_sums(rows, spec, slices, series, weight_sum)
    observed = point.select(*_GROUP, "observed_macro", "observed_weighted", "scale_macro", "scale_weighted")
    statistics = []
    if spec.replicates:
        within = F.col("replicate") <= spec.replicates
        macro = F.col("drawn_scored")
        macro_mean = F.when(within & (macro > 0), UNIT_SUM.value("drawn_delta") / macro)
        weight = weight_sum.value("drawn_weight")
        weighted_mean = F.when(within & (weight > 0), weight_sum.value("drawn_weighted_delta") / weight)
        statistics += [percentile_interval(macro_mean, spec.ci_level).alias("macro_interval"),
                       percentile_interval(weighted_mean, spec.ci_level).alias("weighted_interval")]
    if spec.permutations:
        statistics += [
            _extremes(UNIT_SUM.value("flipped_delta"), "observed_macro", "scale_macro", spec).alias("macro_extremes"),
            _extremes(weight_sum.value("flipped_weighted_delta"), "observed_weighted", "scale_weighted", spec).alias(
                "weighted_extremes"
            ),
        ]
    found = join_null_safe(per_replicate, F.broadcast(observed), _GROUP).groupBy(*_GROUP).agg(*statistics)
    return found.select(*_GROUP, *[
        F.col(name) if name in found.columns else F.lit(None).alias(name) for name in RESAMPLED_COLUMNS
    ])


def _extremes(flipped: Column, observed: str, scale: str, spec: CompareSpec) -> Column:
    """How many sign flips give a statistic at least as far from 0 as the observed one."""
    extreme = F.abs(flipped) >= F.abs(F.col(observed)) - F.lit(EXTREME_TOLERANCE) * F.col(scale)
    return F.count(F.when((F.col("replicate") <= spec.permutations) & extreme, True))


def _resampling_units(
    rows: DataFrame, spec: CompareSpec, n_slices: int, series: Sequence[Series], weight_sum: FixedPoint
) -> DataFrame:
    """One row per resampling unit (column ``unit``): per series (K and metric, index ``i``) how many
    of its requests are scored there and the sums of their fixed-point delta, weight and weighted
    delta. The unit is a paired request (``spec.buckets`` 0) or a random group of a slice cell's
    paired requests."""
    slice_cols = [f"slice_{i}" for i in range(n_slices)]
    requests, term_names = _request_terms(rows, slice_cols, series, weight_sum)
    if not spec.buckets:
        return requests
    return random_group_units(requests, "unit", spec.seed, spec.buckets, slice_cols, term_names)


def _request_terms(
    rows: DataFrame, slice_cols: list[str], series: Sequence[Series], weight_sum: FixedPoint
) -> tuple[DataFrame, list[str]]:
    """One row per paired request (its id as ``unit``): per series (index ``i``) whether it is scored
    there and its fixed-point delta, weight and weighted delta; and the names of those terms."""
    at = [(F.col("k") == k) & (F.col("metric") == metric) for k, metric in series]
    by_request = (
        rows.filter(F.col("paired"))
        .groupBy("request_id", *slice_cols)
        .agg(F.max("weight").alias("weight"),
             *[F.max(F.when(here, F.col("delta"))).alias(f"delta_{i}") for i, here in enumerate(at)])
    )
    weight, terms, names = F.col("weight"), [], []
    for i in range(len(series)):
        delta = F.col(f"delta_{i}")
        terms += [
            F.when(delta.isNotNull(), F.lit(1)).alias(f"scored_{i}"),
            *UNIT_SUM.parts(delta, f"delta_{i}"),
            *weight_sum.parts(F.when(delta.isNotNull(), weight), f"weight_{i}"),
            *weight_sum.parts(weight * delta, f"weighted_delta_{i}"),
        ]
        names += [f"scored_{i}", *[n for term in ("delta", "weight", "weighted_delta")
                                   for n in FixedPoint.names(f"{term}_{i}")]]
    return by_request.select(F.col("request_id").alias("unit"), *slice_cols, *terms), names


def _replicate_sums(
    rows: DataFrame, spec: CompareSpec, slices: Sequence[str], series: Sequence[Series], weight_sum: FixedPoint
) -> DataFrame:
    """Per slice × K × metric × replicate: the exact bootstrap sums (``drawn_*``) and sign-flip sums
    (``flipped_*``)."""
    slice_cols = [f"slice_{i}" for i in range(len(slices))]
    sums_at = [_sums_at(i, spec) for i in range(len(series))]
    rolled = replicate_sums(
        _resampling_units(rows, spec, len(slices), series, weight_sum), "unit", spec.seed, slices, slice_cols,
        drawn=[term for at in sums_at for kind, term in at.values() if kind == "drawn"],
        flipped=[term for at in sums_at for kind, term in at.values() if kind == "flipped"],
        bootstrap=spec.replicates, sign_flips=spec.permutations, replicate="replicate",
    )
    # the K, the metric and its sums under the same field names for every series: named by one cast,
    # not an alias per field (pyspark 4 makes each Column call several JVM round trips)
    at_k_type = T.StructType([T.StructField("k", T.IntegerType()), T.StructField("metric", T.StringType()),
                              *[T.StructField(name, T.LongType()) for name in sums_at[0]]])
    per_k = [F.struct(F.lit(k), F.lit(metric), *[f"{kind}_{term}" for kind, term in at.values()]).cast(at_k_type)
             for (k, metric), at in zip(series, sums_at)]
    at_k = F.explode(F.array(*per_k)).alias("at_k")
    return rolled.select("slice_dimension", "slice_value", "replicate", at_k).select(
        "slice_dimension", "slice_value", "at_k.*", "replicate"
    )


def _sums_at(i: int, spec: CompareSpec) -> dict[str, tuple[str, str]]:
    """The replicate sums of the series of index ``i``: each name -> how its term of
    :func:`_request_terms` is weighed (``drawn`` by the Poisson count, ``flipped`` by the sign) and
    that term."""
    sums: dict[str, tuple[str, str]] = {}
    if spec.replicates:
        sums["drawn_scored"] = ("drawn", f"scored_{i}")
        for term in ("delta", "weight", "weighted_delta"):
            for part, source in zip(FixedPoint.names(f"drawn_{term}"), FixedPoint.names(f"{term}_{i}")):
                sums[part] = ("drawn", source)
    if spec.permutations:
        for term in ("delta", "weighted_delta"):
            for part, source in zip(FixedPoint.names(f"flipped_{term}"), FixedPoint.names(f"{term}_{i}")):
                sums[part] = ("flipped", source)
    return sums
