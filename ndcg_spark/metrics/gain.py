"""The gain of a grade under the contract's gain mapping, as a Column function."""

from __future__ import annotations

from pyspark.sql import Column

from ndcg_spark.config.gain import GainMapping


def gain(grade: Column, mapping: GainMapping) -> Column:
    """Map a grade to its gain; null stays null (unjudged).

    Parameters
    ----------
    grade : a numeric grade column (null: the document is unjudged).
    mapping : ``exponential`` (2^g - 1), ``linear`` (g), ``binary`` (1 if g > 0, else 0) or an
        explicit table grade -> gain (a grade the table does not list maps to null; validation
        rejects such grades first). What each kind means is the mapping's own
        (:meth:`GainMapping.column <ndcg_spark.config.gain.GainMapping.column>`).

    Returns
    -------
    Column of doubles.

    Examples
    --------
    >>> grades = spark.createDataFrame([(0.0,), (1.0,), (3.0,), (None,)], "grade double")
    >>> grades.select("grade", gain(F.col("grade"), GainMapping()).alias("exponential"),
    ...               gain(F.col("grade"), GainMapping("linear")).alias("linear"),
    ...               gain(F.col("grade"), GainMapping("binary")).alias("binary")).show()
    +-----+-----------+------+------+
    |grade|exponential|linear|binary|
    +-----+-----------+------+------+
    |  0.0|        0.0|   0.0|   0.0|
    |  1.0|        1.0|   1.0|   1.0|
    |  3.0|        7.0|   3.0|   1.0|
    | NULL|       NULL|  NULL|  NULL|
    +-----+-----------+------+------+
    <BLANKLINE>
    """
    return mapping.column(grade)
