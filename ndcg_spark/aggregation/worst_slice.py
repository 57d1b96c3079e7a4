"""The audit: per metric and slice dimension, the worst slice by macro mean and its gap to the overall mean."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.aggregation.columns import AGGREGATE_LEGACY, AGGREGATE_STAMPS, AUDIT_COLUMNS, AUDIT_LEGACY, GROUP_KEYS
from ndcg_spark.frames import join_null_safe
from ndcg_spark.legacy import as_current, with_legacy_columns
from ndcg_spark.metrics.slices import OVERALL

__all__ = ["audit"]

#: the type of each stamp an aggregate table read back may lack
_STAMP_TYPES = {"min_eligible": "int", "ci_level": "double", "code_version": "string", "created_at": "timestamp"}


def audit(aggregates: DataFrame) -> DataFrame:
    """Per metric and slice dimension, the worst slice by macro mean and its gap to the overall mean.

    Parameters
    ----------
    aggregates : the output of :func:`~ndcg_spark.aggregation.means.aggregate` (or the aggregate
        table read back; rows from before the ``metric`` column are NDCG's).

    Returns
    -------
    DataFrame with :data:`~ndcg_spark.aggregation.columns.AUDIT_COLUMNS`: one row per run x
    contract x pool version x system x K x metric x slice dimension. Only slices with at least
    ``min_eligible`` eligible requests are ranked (``n_slices_ranked`` of ``n_slices``); ties go
    to the smaller slice value. ``gap_to_overall`` is ``worst_macro - overall_macro``
    (negative: below the overall mean). ``ci_below_overall`` is true when the worst slice's whole
    interval lies below the overall mean. With no slice above the minimum the ``worst_*``
    columns are null.

    Notes
    -----
    The worst of several slices is selected *because* it is low, and it is part of the overall
    mean it is compared with; ``ci_below_overall`` is a screening flag, not a significance test.

    Examples
    --------
    >>> rows = [("r", "fp", "p", "s", 10, "ndcg", "overall", "all", 0.60, 0.58, 0.62, 300, False),
    ...         ("r", "fp", "p", "s", 10, "ndcg", "rarity", "common", 0.65, 0.62, 0.68, 200, False),
    ...         ("r", "fp", "p", "s", 10, "ndcg", "rarity", "rare", 0.50, 0.45, 0.55, 90, False),
    ...         ("r", "fp", "p", "s", 10, "ndcg", "rarity", "unknown", 0.10, 0.00, 0.40, 10, True)]
    >>> aggs = spark.createDataFrame(rows, "run_id string, contract_fingerprint string, "
    ...     "pool_version string, system string, k int, metric string, slice_dimension string, slice_value string, "
    ...     "macro double, macro_ci_low double, macro_ci_high double, n_eligible long, "
    ...     "below_min_eligible boolean")
    >>> audit(aggs).select("slice_dimension", "n_slices", "n_slices_ranked", "worst_slice_value",
    ...     F.round("gap_to_overall", 2).alias("gap"), "ci_below_overall").show()
    +---------------+--------+---------------+-----------------+----+----------------+
    |slice_dimension|n_slices|n_slices_ranked|worst_slice_value| gap|ci_below_overall|
    +---------------+--------+---------------+-----------------+----+----------------+
    |         rarity|       3|              2|             rare|-0.1|            true|
    +---------------+--------+---------------+-----------------+----+----------------+
    <BLANKLINE>
    """
    keys = list(GROUP_KEYS)
    aggregates = as_current(aggregates, AGGREGATE_LEGACY)
    stamps = [c for c in AGGREGATE_STAMPS if c in aggregates.columns]
    overall = aggregates.filter(F.col("slice_dimension") == OVERALL).select(
        *keys, F.col("macro").alias("overall_macro")
    )
    slices = aggregates.filter(F.col("slice_dimension") != OVERALL)
    ranked = ~F.col("below_min_eligible") & F.col("macro").isNotNull()
    counts = slices.groupBy(*keys, "slice_dimension").agg(
        F.count(F.lit(1)).alias("n_slices"),
        F.count(F.when(ranked, 1)).alias("n_slices_ranked"),
        *[F.max(c).alias(c) for c in stamps],
    )
    out = join_null_safe(counts, _worst_slices(slices.filter(ranked)), (*keys, "slice_dimension"), "left")
    out = join_null_safe(out, overall, keys, "left")
    for name, type_ in _STAMP_TYPES.items():
        if name not in stamps:
            out = out.withColumn(name, F.lit(None).cast(type_))
    out = out.withColumns({
        "gap_to_overall": F.col("worst_macro") - F.col("overall_macro"),
        "ci_below_overall": F.col("worst_ci_high") < F.col("overall_macro"),
    })
    return with_legacy_columns(out, AUDIT_LEGACY, []).select(*AUDIT_COLUMNS)


def _worst_slices(ranked: DataFrame) -> DataFrame:
    """Per group x slice dimension, the ranked slice of the lowest macro mean (ties: the smaller
    slice value), its interval and eligible count, as ``worst_*`` columns."""
    keys = [*GROUP_KEYS, "slice_dimension"]
    order = Window.partitionBy(*keys).orderBy(F.col("macro").asc(), F.col("slice_value").asc_nulls_last())
    return (
        ranked.withColumn("_rank", F.row_number().over(order))
        .filter(F.col("_rank") == 1)
        .select(
            *keys,
            F.col("slice_value").alias("worst_slice_value"),
            F.col("macro").alias("worst_macro"),
            F.col("macro_ci_low").alias("worst_ci_low"),
            F.col("macro_ci_high").alias("worst_ci_high"),
            F.col("n_eligible").alias("worst_n_eligible"),
        )
    )
