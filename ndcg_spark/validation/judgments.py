"""Judgment rows under validation: the grade rules, and the ``judgment_conflict`` of a (request, doc).

Identical duplicates (same request, doc and grade, no rule broken) are not a rule: they are marked
(``__v_dup``) and merged into one row.

>>> from ndcg_spark import Contract
>>> judgments = InputTable(spark.createDataFrame(
...     [("q1", "a", 3.0), ("q1", "a", 1.0), ("q1", "b", -1.0), ("q2", "a", 2.0), ("q2", "a", 2.0)],
...     "request_id string, doc_id string, grade double"), "judgments")
>>> flagged = judgment_groups(judgment_rows(judgments, Contract(k=[3])))
>>> columns = ["request_id", "doc_id", "grade", "__v_rules", "__v_dup"]
>>> flagged.select(*columns).orderBy(*columns[:3], "__v_dup").show()
+----------+------+-----+-------------------+-------+
|request_id|doc_id|grade|          __v_rules|__v_dup|
+----------+------+-----+-------------------+-------+
|        q1|     a|  1.0|[judgment_conflict]|  false|
|        q1|     a|  3.0|[judgment_conflict]|  false|
|        q1|     b| -1.0|   [grade_negative]|  false|
|        q2|     a|  2.0|                 []|  false|
|        q2|     a|  2.0|                 []|   true|
+----------+------+-----+-------------------+-------+
<BLANKLINE>
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.gain import MAX_GAIN
from ndcg_spark.metrics.gain import gain
from ndcg_spark.validation.flags import JUDGED_PAIR, Flag, flag_rows, with_rules
from ndcg_spark.validation.input_table import InputTable, is_blank, not_finite


def grade_flags(grade: Column, not_numeric: Column, contract: Contract) -> list[Flag]:
    """The grade rules of a grade column (of the judgments, or of pre-joined candidates), as the
    contract's gain mapping reads a grade: its gain must be finite, a table must list it, and it
    must lie on the declared scale (``contract.max_grade``)."""
    mapping = contract.gain
    g = gain(grade, mapping)
    number = grade.isNotNull() & ~F.isnan(grade)
    flags = [("grade_not_numeric", not_numeric)]
    if not mapping.negative_as_zero:  # else judged, gain 0 (contract.negative_grades: zero), and counted
        flags.append(("grade_negative", grade < 0))
    # NaN or infinite, or a gain too large to sum (inf, NaN and numbers above MAX_GAIN: NaN is the largest)
    flags.append(("grade_not_finite", not_finite(grade) | (F.abs(g) > F.lit(MAX_GAIN))))
    if mapping.lists_grades:
        flags.append(("grade_not_in_gain_table", number & g.isNull()))
    if contract.max_grade is not None:
        flags.append(("grade_above_max_grade", number & ~not_finite(grade) & (grade > F.lit(contract.max_grade))))
    return flags


def judgment_rows(table: InputTable, contract: Contract) -> DataFrame:
    """Judgments with their normalized keys and the row rules each row breaks by itself."""
    cols = contract.columns
    rid = table.identifier(cols.request_id, "request_id")
    did = table.identifier(cols.doc_id, "doc_id")
    grade, grade_bad = table.number(cols.grade, "grade")
    flags = [("request_id_missing", is_blank(rid)), ("doc_id_missing", is_blank(did))]
    derived = {"__v_rid": F.when(~is_blank(rid), rid), "__v_did": F.when(~is_blank(did), did), "__v_grade": grade}
    return flag_rows(table, derived, flags + grade_flags(grade, grade_bad, contract))


def conflict(n: Column, n_graded: Column, low: Column, high: Column) -> Column:
    """Rows of one (request, doc) disagree: different grades, or graded and ungraded rows."""
    return (n > 1) & ((low != high) | ((n_graded > 0) & (n_graded < n)))


def judgment_groups(df: DataFrame) -> DataFrame:
    """Flag every row of a conflicting (request, doc) and mark identical duplicates (windows)."""
    pair = Window.partitionBy(*JUDGED_PAIR)
    keyed = F.col("__v_rid").isNotNull() & F.col("__v_did").isNotNull()
    df = df.select(
        "*",
        F.count(F.lit(1)).over(pair).alias("__v_n"),
        F.count("__v_grade").over(pair).alias("__v_n_graded"),
        F.min("__v_grade").over(pair).alias("__v_min"),
        F.max("__v_grade").over(pair).alias("__v_max"),
    )
    is_conflict = conflict(F.col("__v_n"), F.col("__v_n_graded"), F.col("__v_min"), F.col("__v_max"))
    df = with_rules(df, [("judgment_conflict", keyed & is_conflict)], append=True)
    # Identical duplicates (same request, doc and grade, no rule broken) are merged into one row.
    order = Window.partitionBy(*JUDGED_PAIR).orderBy(F.col("__v_grade").asc_nulls_first())
    return df.withColumn("__v_dup", keyed & F.col("__v_first").isNull() & (F.row_number().over(order) > 1))


__all__ = ["conflict", "grade_flags", "judgment_groups", "judgment_rows"]
