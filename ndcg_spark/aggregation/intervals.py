"""Stage 2's bootstrap intervals: percentile intervals of both means from Poisson replicates.

The draws come from the shared statistics core (:mod:`ndcg_spark.metrics.resampling`): a unit's
Poisson count is a pure function of ``(seed, replicate, unit)``, and every sum is exact fixed
point, so the intervals are the same bits whatever the partitioning.

Layout: each group (run x contract x pool x system x K x metric) becomes a column index; the rows
of a request are pivoted into one row per request (its value and weight terms per group, already
in fixed point), and every replicate's sums of count x term are taken per finest slice cell at once
(:func:`~ndcg_spark.metrics.resampling.replicate_sums`: matrix products over a batch of units, no
row per unit x replicate, the cells rolled up to slices there too) -- so the draws cost requests x
replicates, not requests x systems x K x slices x replicates. The sums are then unpivoted back to
one row per group x slice x replicate (few rows), where the replicate means and their percentiles
are taken.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.aggregation.columns import GROUP_KEYS
from ndcg_spark.aggregation.point import DUPLICATE_REQUEST, Groups, means
from ndcg_spark.config.aggregate_spec import AggregateSpec
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.resampling import random_group_units, replicate_sums
from ndcg_spark.metrics.slices import percentile_interval

__all__ = ["GROUPS_PER_PASS", "bootstrap_intervals"]

#: bootstrap groups pivoted into columns per pass over the data. 8 kept the generated code of a
#: replicate expansion's loop under the JVM's 8 KB JIT limit, when Spark expanded the replicates; they
#: are summed in numpy now, and with a group per metric and what-if (2 systems x 4 K x 6 on the demo:
#: 48) every pass more read the rows again: stage 2 of the demo's night 62 s at 8, 20.5 s at 48, the
#: same bits (a group's sums do not depend on the others pivoted beside it)
GROUPS_PER_PASS = 64



def bootstrap_intervals(rows: DataFrame, spec: AggregateSpec, slice_cols: list[str], groups: Groups) -> DataFrame:
    """Per group x slice: ``macro_ci_low/high`` and ``weighted_ci_low/high`` from
    ``spec.replicates`` Poisson-bootstrap replicates (``rows`` and ``slice_cols`` as
    :func:`~ndcg_spark.aggregation.point.stage2_rows` gives them; ``groups.keys`` not empty).

    A replicate that draws no eligible request of a slice is left out of that slice's
    percentiles.
    """
    group_table = rows.sparkSession.createDataFrame(
        [(i, *key) for i, key in enumerate(groups.keys)],
        T.StructType([T.StructField("_group_index", T.IntegerType(), False),
                      *[rows.schema[c] for c in GROUP_KEYS]]),
    )
    indexed = join_null_safe(rows, F.broadcast(group_table), GROUP_KEYS, "inner")
    passes = []
    for start in range(0, len(groups.keys), GROUPS_PER_PASS):
        chunk = list(range(start, min(start + GROUPS_PER_PASS, len(groups.keys))))
        part = indexed.filter(F.col("_group_index").between(chunk[0], chunk[-1]))
        passes.append(_replicate_means(part, spec, slice_cols, chunk, groups))
    replicate_means = passes[0]
    for more in passes[1:]:
        replicate_means = replicate_means.unionByName(more)
    intervals = replicate_means.groupBy("_group_index", "slice_dimension", "slice_value").agg(
        percentile_interval(F.col("_macro"), spec.ci_level).alias("_macro_interval"),
        percentile_interval(F.col("_weighted"), spec.ci_level).alias("_weighted_interval"),
    )
    return intervals.join(F.broadcast(group_table), "_group_index").select(
        *GROUP_KEYS,
        "slice_dimension",
        "slice_value",
        F.col("_macro_interval")[0].alias("macro_ci_low"),
        F.col("_macro_interval")[1].alias("macro_ci_high"),
        F.col("_weighted_interval")[0].alias("weighted_ci_low"),
        F.col("_weighted_interval")[1].alias("weighted_ci_high"),
    )


def _replicate_means(
    part: DataFrame, spec: AggregateSpec, slice_cols: list[str], chunk: list[int], groups: Groups
) -> DataFrame:
    """One pass over the groups ``chunk``: per group x slice x replicate, the two means."""
    units, term_names = _fixed_point_terms(_one_row_per_request(part, slice_cols, chunk), slice_cols, chunk, groups)
    if spec.buckets:
        units = random_group_units(units, "_unit", spec.seed, spec.buckets, slice_cols, term_names)
    drawn = replicate_sums(units, "_unit", spec.seed, spec.slices, slice_cols, drawn=term_names,
                           bootstrap=spec.replicates)
    rolled = drawn.toDF(*[c.removeprefix("drawn_") for c in drawn.columns])
    replicate = []
    for i in chunk:
        macro, weighted = means(groups, F.col(f"eligible_{i}"), f"value_sum_{i}", f"weighted_value_sum_{i}",
                                f"eligible_weight_sum_{i}")
        replicate.append(F.struct(F.lit(i).alias("_group_index"), macro.alias("_macro"), weighted.alias("_weighted")))
    return rolled.select("slice_dimension", "slice_value", F.explode(F.array(*replicate)).alias("_means")).select(
        "_means._group_index", "slice_dimension", "slice_value", "_means._macro", "_means._weighted"
    )


def _one_row_per_request(part: DataFrame, slice_cols: list[str], chunk: list[int]) -> DataFrame:
    """One row per request (and slice cell): its value and weight in each group of ``chunk``
    (``value_{i}``, ``weight_{i}``; null when not eligible). A request listed twice for one group
    would be silently collapsed here, so the query fails instead (``_duplicate`` raises)."""
    index, eligible = F.col("_group_index"), F.col("value").isNotNull()
    duplicated = F.greatest(*[F.count(F.when(index == i, 1)) for i in chunk], F.lit(0)) > 1
    failure = F.raise_error(F.concat(F.lit("per_request: request "), F.col("request_id"), F.lit(DUPLICATE_REQUEST)))
    return part.groupBy("request_id", *slice_cols).agg(
        F.when(duplicated, failure).alias("_duplicate"),
        *[F.max(F.when((index == i) & eligible, F.col("value"))).alias(f"value_{i}") for i in chunk],
        *[F.max(F.when((index == i) & eligible, F.col("weight"))).alias(f"weight_{i}") for i in chunk],
    )


def _fixed_point_terms(
    wide: DataFrame, slice_cols: list[str], chunk: list[int], groups: Groups
) -> tuple[DataFrame, list[str]]:
    """Per request and group, once: eligibility and the fixed-point terms (so the per-replicate
    work is only count x term), with the request as the resampling unit ``_unit``; and the
    names of the term columns.

    ``_duplicate`` is null unless it raised; folding it into the unit keeps the check from being
    pruned away.
    """
    x, w = groups.value_sum, groups.weight_sum
    terms, term_names = [], []
    for i in chunk:
        value, weight = F.col(f"value_{i}"), F.col(f"weight_{i}")
        terms += [F.when(value.isNotNull(), F.lit(1)).alias(f"eligible_{i}"), *x.parts(value, f"value_sum_{i}")]
        term_names += [f"eligible_{i}", *x.names(f"value_sum_{i}")]
        if not groups.uniform_weight:
            terms += [*w.parts(weight * value, f"weighted_value_sum_{i}"), *w.parts(weight, f"eligible_weight_sum_{i}")]
            term_names += [*w.names(f"weighted_value_sum_{i}"), *w.names(f"eligible_weight_sum_{i}")]
    unit = F.coalesce(F.col("_duplicate").cast("string"), F.col("request_id")).alias("_unit")
    return wide.select(*slice_cols, *terms, unit), term_names
