"""Slices: the overall row plus one row per value of each slice dimension, and their intervals.

A request belongs to the overall slice and to one slice of every dimension. Both stage 2 and
the comparison sum their terms once per *finest* slice cell (one combination of slice values),
then roll the few cells up to every slice (:func:`roll_up`): with exact integer sums the two
levels give the same bits as one pass, and the expansion to slices runs on few rows.

Examples
--------
>>> rows = spark.createDataFrame([("q1", "rare", 2), ("q2", "common", 3), ("q3", "rare", 4)],
...                              "request_id string, rarity string, x long")
>>> roll_up(rows, [], ["rarity"], ["rarity"], {"n": F.count(F.lit(1)), "x": F.sum("x")}).orderBy(
...     "slice_dimension", "slice_value").show()
+---------------+-----------+---+---+
|slice_dimension|slice_value|  n|  x|
+---------------+-----------+---+---+
|        overall|        all|  3|  9|
|         rarity|     common|  1|  3|
|         rarity|       rare|  2|  6|
+---------------+-----------+---+---+
<BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# OVERALL / OVERALL_VALUE: ``slice_dimension`` / ``slice_value`` of the row that covers every
# request of its group. Defined beside AggregateSpec (pure Python, which refuses a slice column
# named ``overall``); this is where the stages import them from.
from ndcg_spark.config.aggregate_spec import OVERALL, OVERALL_VALUE
from ndcg_spark.config.bootstrap import quantiles

__all__ = ["OVERALL", "OVERALL_VALUE", "overall_rows", "percentile_interval", "quantiles", "roll_up", "slice_memberships"]


def overall_rows(table: DataFrame) -> DataFrame:
    """The rows of a sliced table (aggregate, audit, trend) that cover every request of their group."""
    return table.filter(F.col("slice_dimension") == OVERALL)


def slice_memberships(dimensions: Sequence[str], columns: Sequence[str] | None = None) -> Column:
    """Explode a row into one ``(slice_dimension, slice_value)`` struct per slice it belongs to.

    The overall slice first, then one per dimension: ``dimensions`` name the slices, ``columns``
    (default: the same names) hold their values, read as strings.
    """
    columns = dimensions if columns is None else columns
    pairs = [F.struct(F.lit(OVERALL).alias("slice_dimension"), F.lit(OVERALL_VALUE).alias("slice_value"))]
    pairs += [
        F.struct(F.lit(name).alias("slice_dimension"), F.col(col).cast("string").alias("slice_value"))
        for name, col in zip(dimensions, columns)
    ]
    return F.explode(F.array(*pairs))


def roll_up(
    rows: DataFrame,
    keys: Sequence[str],
    dimensions: Sequence[str],
    columns: Sequence[str],
    cell_sums: Mapping[str, Column],
) -> DataFrame:
    """Per ``keys`` x slice: ``cell_sums`` taken per finest cell, then summed over each slice.

    Parameters
    ----------
    rows : one row per unit (a request, or a request in one replicate).
    keys : what a result row is "per" besides its slice (e.g. the group keys, the replicate).
    dimensions, columns : the slice dimensions and the columns that hold their values.
    cell_sums : name -> an additive aggregate (a count, or a sum of longs) over a cell's rows.

    Returns
    -------
    DataFrame of ``*keys, slice_dimension, slice_value`` and one column per ``cell_sums`` name.
    """
    names = list(cell_sums)
    # the cells' sums named by one toDF, not an alias each (a wide comparison has ~90 of them, and
    # pyspark 4 makes every Column call several JVM round trips); the result's by alias: toDF
    # would mark them as Spark's generated names, and that mark would be written with the tables
    cells = rows.groupBy(*keys, *columns).agg(*cell_sums.values()).toDF(*keys, *columns, *names)
    return (
        cells.select(*keys, slice_memberships(dimensions, columns).alias("_slice"), *names)
        .groupBy(*keys, F.col("_slice.slice_dimension").alias("slice_dimension"),
                 F.col("_slice.slice_value").alias("slice_value"))
        .agg(*[F.sum(name).alias(name) for name in names])
    )


def percentile_interval(values: Column, level: float) -> Column:
    """The two-sided ``level`` percentile interval of ``values``: an aggregate ``array(low, high)``
    (nulls left out)."""
    return F.percentile(values, list(quantiles(level)))
