"""The gain of a grade under the contract's gain mapping, as a Column function."""

from __future__ import annotations

import math

from pyspark.sql import Column
from pyspark.sql import functions as F

from ndcg_spark.config.contract import GainMapping


def gain(grade: Column, mapping: GainMapping) -> Column:
    """Map a grade to its gain; null stays null (unjudged).

    Parameters
    ----------
    grade : a numeric grade column (null: the document is unjudged).
    mapping : ``exponential`` (2^g - 1), ``linear`` (g), ``binary`` (1 if g > 0, else 0) or an
        explicit table grade -> gain (a grade the table does not list maps to null; validation
        rejects such grades first).

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
    if mapping.kind == "exponential":
        return F.pow(F.lit(2.0), grade) - F.lit(1.0)
    if mapping.kind == "linear":
        return grade.cast("double")
    if mapping.kind == "binary":
        return (grade > F.lit(0)).cast("double")  # null stays null
    # one comparison per listed grade (compiled to primitive compares; a map literal's lookup boxed
    # every key it compared, per row); no branch matches a null or unlisted grade: null
    value, (first, *rest) = grade.cast("double"), mapping.table
    table = F.when(value == F.lit(float(first[0])), F.lit(float(first[1])))
    for listed, gain_value in rest:
        table = table.when(value == F.lit(float(listed)), F.lit(float(gain_value)))
    return table


def may_be_negative_zero(mapping: GainMapping) -> bool:
    """Whether :func:`gain` can give -0.0: a linear gain (a grade of -0.0) or a table that lists
    -0.0. ``2^g - 1`` cannot (``1.0 - 1.0`` is +0.0), nor can ``binary``.

    >>> may_be_negative_zero(GainMapping("linear")), may_be_negative_zero(GainMapping())
    (True, False)
    >>> may_be_negative_zero(GainMapping("table", ((0.0, -0.0), (1.0, 1.0))))
    True
    """
    if mapping.kind == "linear":
        return True
    return mapping.kind == "table" and any(v == 0 and math.copysign(1.0, v) < 0 for _, v in mapping.table)
