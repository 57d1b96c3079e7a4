"""One input table under validation: its schema rules (``column_missing``, ``column_type``) and the
columns it is read through (ids as strings, numbers as doubles, numeric strings parsed).

>>> table = InputTable(spark.createDataFrame([("q1", " 2 "), ("q2", "high"), ("q3", None)],
...                                          "request_id string, grade string"), "judgments")
>>> grade, not_numeric = table.number("grade", "grade")
>>> table.df.select("request_id", grade.alias("grade"), not_numeric.alias("not_numeric")).show()
+----------+-----+-----------+
|request_id|grade|not_numeric|
+----------+-----+-----------+
|        q1|  2.0|      false|
|        q2| NULL|       true|
|        q3| NULL|      false|
+----------+-----+-----------+
<BLANKLINE>
>>> table.require("doc_id", "doc_id")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ndcg_spark.errors.ValidationError: judgments: missing column 'doc_id' ... (rule column_missing)
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.compat import try_cast_column
from ndcg_spark.errors import ValidationError

#: The raw line of a row read from a TREC file with ``keep_malformed=True`` (:mod:`ndcg_spark.formats.trec`).
TREC_LINE = "trec_line"
#: The TREC rule such a row breaks (``trec_field_count``, ``trec_not_numeric``; null when well formed):
#: validation flags it (:func:`ndcg_spark.validation.flags.with_line_rules`).
TREC_RULE = "trec_rule"
#: Whether such a row had fields past its format's, ignored as trec_eval ignores them (read with
#: ``trailing_fields="ignore"``): counted in the row accounting.
TREC_TRAILING = "trec_trailing"

_TEXT = (T.StringType, T.VarcharType, T.CharType)
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)
_INF = float("inf")


def quoted(name: str) -> Column:
    """The column ``name``, whatever characters it holds."""
    return F.col("`" + name.replace("`", "``") + "`")


def is_blank(c: Column) -> Column:
    """Null, empty or whitespace-only (as a string)."""
    return c.isNull() | (F.trim(c) == F.lit(""))


def not_finite(c: Column) -> Column:
    """NaN or infinite (a null is neither)."""
    return c.isNotNull() & (F.isnan(c) | (F.abs(c) == F.lit(_INF)))


def parsed_number(column: str) -> Column:
    """String column ``column`` as a double: null when blank or not a number."""
    raw = quoted(column)
    return F.when(is_blank(raw), F.lit(None).cast("double")).otherwise(try_cast_column(column, "double"))


def schema_error(table: str, problem: str, rule: str) -> ValidationError:
    return ValidationError(f"{table}: {problem} (rule {rule})", rule)


class InputTable:
    """One input under validation: its schema checks and its parsed role columns."""

    def __init__(self, df: DataFrame, name: str) -> None:
        self.df = df
        self.name = name
        self.types = {f.name: f.dataType for f in df.schema.fields}
        self.original = list(df.columns)
        self.parsed: dict[str, str] = {}  # original column -> internal parsed column (strings parsed to double)

    def require(self, column: str, role: str, hint: str = "") -> None:
        """Rule ``column_missing``: ``column`` (playing ``role``) must be present."""
        if column not in self.types:
            where = hint or f"map it with contract.columns.{role}"
            raise schema_error(
                self.name,
                f"missing column {column!r} (the {role}; {where}); columns present: "
                f"{', '.join(sorted(self.types)) or 'none'}",
                "column_missing",
            )

    def identifier(self, column: str, role: str) -> Column:
        """An id column as a string (rule ``column_type``: a string, integer or decimal)."""
        self.require(column, role)
        dtype = self.types[column]
        if not isinstance(dtype, (*_TEXT, *_INTEGRAL, T.DecimalType)):
            raise schema_error(
                self.name,
                f"column {column!r} (the {role}) must be a string or an integer, found {dtype.simpleString()}",
                "column_type",
            )
        return quoted(column).cast("string")

    def number(self, column: str, role: str, hint: str = "") -> tuple[Column, Column]:
        """(value as double, flag: a non-blank string that is not a number)."""
        self.require(column, role, hint)
        dtype = self.types[column]
        raw = quoted(column)
        if isinstance(dtype, _NUMERIC):
            return raw.cast("double"), F.lit(False)
        if isinstance(dtype, _TEXT):
            value = parsed_number(column)
            self.parsed[column] = f"__v_num_{column}"
            return value, raw.isNotNull() & ~is_blank(raw) & value.isNull()
        raise schema_error(
            self.name,
            f"column {column!r} (the {role}) must be numeric (or strings of numbers), found {dtype.simpleString()}",
            "column_type",
        )

    def parsed_columns(self) -> dict[str, Column]:
        """Internal column name -> the parsed double of each numeric column that arrived as strings."""
        return {internal: parsed_number(column) for column, internal in self.parsed.items()}

    def json_row(self) -> Column:
        """The original row as JSON (an example in a message, the ``row`` of a quarantine row)."""
        return F.to_json(F.struct(*[quoted(c) for c in self.original]))

    def output(self, df: DataFrame, columns: list[str] | None = None) -> DataFrame:
        """The original columns (or ``columns``), numeric strings replaced by their parsed doubles."""
        cols = columns or self.original
        return df.select(*[F.col(self.parsed[c]).alias(c) if c in self.parsed else quoted(c) for c in cols])

    def as_read(self, columns: list[str] | None = None) -> DataFrame:
        """:meth:`output` of the table as read (no flags), its numeric strings parsed."""
        parsed = self.parsed_columns()
        return self.output(self.df.select("*", *[c.alias(n) for n, c in parsed.items()]), columns)


__all__ = ["InputTable", "is_blank", "not_finite", "parsed_number", "quoted", "schema_error"]
