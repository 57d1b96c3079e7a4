"""Rule flags on rows: which named rules each row breaks, in catalogue order.

Every flagged input carries, beside its own columns:

``__v_f_<rule>``
    boolean, one per rule checked on that input;
``__v_rules``
    the names of the rules the row breaks, in :data:`~ndcg_spark.config.validation_spec.RULES` order;
``__v_first``
    the index of the first of them (the row's primary rule), null when it breaks none;

and its normalized keys ``__v_rid`` (request id), ``__v_did`` (doc id), for candidates ``__v_sys``
and ``__v_pool`` (system, pool version).

>>> df = spark.createDataFrame([(1, -1.0), (2, 0.5), (3, float("nan"))], "id int, grade double")
>>> flagged = with_rules(df, [("grade_not_finite", F.isnan("grade")), ("grade_negative", F.col("grade") < 0)])
>>> flagged.select("id", "__v_rules", "__v_first").show()
+---+------------------+---------+
| id|         __v_rules|__v_first|
+---+------------------+---------+
|  1|  [grade_negative]|        9|
|  2|                []|     NULL|
|  3|[grade_not_finite]|       10|
+---+------------------+---------+
<BLANKLINE>
>>> flagged.filter("__v_first IS NOT NULL").select(rule_name(F.col("__v_first")).alias("primary")).collect()
[Row(primary='grade_negative'), Row(primary='grade_not_finite')]
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.validation_spec import RULE_INDEX, RULE_NAMES
from ndcg_spark.validation.input_table import TREC_RULE, InputTable

#: A request list: one system's candidates for one request (and pool version).
REQUEST_LIST = ["__v_sys", "__v_pool", "__v_rid"]
#: One judged (request, doc).
JUDGED_PAIR = ["__v_rid", "__v_did"]

#: ``(rule name, boolean Column: the row breaks it)``
Flag = tuple[str, Column]


def rule_name(index: Column) -> Column:
    """The name of the rule at ``index`` of the catalogue (``index`` must not be null)."""
    return F.element_at(F.array(*[F.lit(n) for n in RULE_NAMES]), index + 1)


def _rules_array(flags: list[Flag]) -> tuple[Column, Column]:
    """(array of broken rule names in catalog order, index of the first broken rule or null)."""
    flags = sorted(flags, key=lambda item: RULE_INDEX[item[0]])
    if not flags:
        return F.array().cast("array<string>"), F.lit(None).cast("int")
    names = F.array_compact(F.array(*[F.when(flag, F.lit(name)) for name, flag in flags]))
    first = F.coalesce(*[F.when(flag, F.lit(RULE_INDEX[name])) for name, flag in flags], F.lit(None).cast("int"))
    return names, first


def with_rules(df: DataFrame, flags: list[Flag], *, append: bool = False) -> DataFrame:
    """Set (or with ``append``, extend) ``__v_rules`` and ``__v_first`` from named boolean flags.

    Each flag is computed once, as a column ``__v_f_<rule>`` (kept: the detector sums it), then read
    by both the array and the first-rule index.
    """
    if not flags:
        return df
    df = df.select("*", *[F.coalesce(flag, F.lit(False)).alias(f"__v_f_{name}") for name, flag in flags])
    rules, first = _rules_array([(name, F.col(f"__v_f_{name}")) for name, _ in flags])
    if append:
        rules = F.concat(F.col("__v_rules"), rules)
        first = F.least(F.col("__v_first"), first)
    return df.withColumns({"__v_rules": rules, "__v_first": first})


def flag_rows(table: InputTable, derived: dict[str, Column], flags: list[Flag]) -> DataFrame:
    """``table``'s rows with the ``derived`` columns, its parsed numeric strings and the row ``flags``
    (with the TREC line rules of a table read from a TREC file: :func:`with_line_rules`)."""
    columns = {**derived, **table.parsed_columns()}
    return with_rules(table.df.select("*", *[c.alias(n) for n, c in columns.items()]), with_line_rules(table, flags))


def with_line_rules(table: InputTable, flags: list[Flag]) -> list[Flag]:
    """``flags`` plus ``trec_field_count`` and ``trec_not_numeric`` when ``table`` was read from a TREC
    file with ``keep_malformed=True`` (its ``trec_rule`` column, :mod:`ndcg_spark.formats.trec`). The
    other row rules are checked on well-formed lines only: a malformed line's fields are not what
    their places say, so it breaks its TREC rule alone."""
    if TREC_RULE not in table.types:
        return flags
    rule = F.col(TREC_RULE)
    malformed = rule.isNotNull()
    line_rules = [(name, malformed & (rule == F.lit(name))) for name in ("trec_field_count", "trec_not_numeric")]
    return [(name, flag & ~malformed) for name, flag in flags] + line_rules


__all__ = ["JUDGED_PAIR", "REQUEST_LIST", "Flag", "flag_rows", "rule_name", "with_line_rules", "with_rules"]
