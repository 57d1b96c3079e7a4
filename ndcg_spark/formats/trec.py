"""TREC run and qrels files as inputs: whitespace-separated lines, read natively by Spark.

A run line is ``qid Q0 docno rank score tag``; a qrels line is ``qid iter docno rel``. Each file
is read with ``spark.read.text`` and split on whitespace (no Python UDF). Blank lines and lines
starting with ``#`` are not rows (trec_eval skips them too). A line that is not well formed breaks
a named validation rule (:data:`~ndcg_spark.config.validation_spec.RULES`):

``trec_field_count``
    not exactly 6 (run) or 4 (qrels) fields. (trec_eval ignores fields after a run's tag; here
    they are an error by default, since they usually mean a tag or doc id with a space in it.
    ``trailing_fields="ignore"`` reads such a line as trec_eval does -- the job does so under the
    ``trec_eval`` preset -- and marks it ``trec_trailing``; the job counts those lines.)
``trec_not_numeric``
    the rank is not an integer, or the score or rel is not a number.

By default the readers refuse such lines (one pass over the file, at the call): the error names
the rule, how many lines break it and one of them. With ``keep_malformed=True`` every line is
returned with its raw text (``trec_line``) and the rule it breaks (``trec_rule``, null when well
formed); :func:`~ndcg_spark.validation.validate.validate_inputs` turns ``trec_rule`` into the
rule, handled as ``error`` or ``quarantine`` like any other (this is what the job does).

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "run.txt").write_text("q1 Q0 d1 1 2.5 bm25\\nq1 Q0 d2 2 2.5 bm25\\n\\nq2 Q0 d1 1 0.5 bm25\\n")
>>> read_trec_run(spark, str(folder / "run.txt")).orderBy("request_id", "position").show()
+----------+------+--------+-----+------+
|request_id|doc_id|position|score|system|
+----------+------+--------+-----+------+
|        q1|    d1|       1|  2.5|  bm25|
|        q1|    d2|       2|  2.5|  bm25|
|        q2|    d1|       1|  0.5|  bm25|
+----------+------+--------+-----+------+
<BLANKLINE>
>>> _ = (folder / "qrels.txt").write_text("q1 0 d1 2\\nq1 0 d9 high\\n")
>>> read_trec_qrels(spark, str(folder / "qrels.txt"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ndcg_spark.errors.ValidationError: ...
- trec_not_numeric: 1 judgments row (...), e.g. {"trec_line":"q1 0 d9 high"}
...
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.compat import try_cast_column
from ndcg_spark.config.validation_spec import ValidationSpec
from ndcg_spark.frames import whole_number_in
from ndcg_spark.validation.failures import raise_on_broken_rules

# the raw line of a row read with ``keep_malformed=True``, and the TREC rule it breaks (null when
# well formed): columns validation reads
from ndcg_spark.validation.input_table import TREC_LINE, TREC_RULE, TREC_TRAILING

#: Columns of :func:`read_trec_run`: qid, docno, rank, score, tag (the ``Q0`` field is dropped).
RUN_COLUMNS = ("request_id", "doc_id", "position", "score", "system")
#: Columns of :func:`read_trec_qrels`: qid, docno, rel (the iteration field is dropped).
QRELS_COLUMNS = ("request_id", "doc_id", "grade")

#: the largest rank read as an integer (a long holds up to 2^63 - 1; a double is whole beyond 2^53)
MAX_RANK = 2.0**53
_RUN_FIELDS = 6
_QRELS_FIELDS = 4


def _lines(spark: SparkSession, path: str, n_fields: int) -> DataFrame:
    """The file's content lines (``line``), their fields (``f``) and the first ``n_fields`` of
    them as columns of their own (null where a line has fewer); blank and ``#`` lines left out."""
    text = spark.read.text(path)
    line = F.trim(F.col("value"))
    fields = F.split(line, r"\s+")
    return text.filter((line != F.lit("")) & ~line.startswith("#")).select(
        F.col("value").alias(TREC_LINE), fields.alias("f"),
        *[F.try_element_at(fields, F.lit(i)).alias(_name(i)) for i in range(1, n_fields + 1)],
    )


def _name(i: int) -> str:
    return f"_trec_field_{i}"


def _field(i: int) -> Column:
    """The ``i``-th field (1-based), null when the line has fewer."""
    return F.col(_name(i))


def _number(i: int) -> Column:
    """The ``i``-th field as a double: null when it is not a number."""
    return try_cast_column(_name(i), "double")


TRAILING = ("refuse", "ignore")


def _rule(n_fields: int, not_numeric: Column, trailing_fields: str) -> Column:
    """The TREC rule a line breaks, or null (``trailing_fields``: whether more fields than
    ``n_fields`` break ``trec_field_count`` or are ignored)."""
    if trailing_fields not in TRAILING:
        raise ValueError(f"trailing_fields must be one of {', '.join(TRAILING)}, got {trailing_fields!r}")
    wrong = F.size("f") < F.lit(n_fields) if trailing_fields == "ignore" else F.size("f") != F.lit(n_fields)
    return (
        F.when(wrong, F.lit("trec_field_count"))
        .when(not_numeric, F.lit("trec_not_numeric"))
        .otherwise(F.lit(None).cast("string"))
    )


def _finish(
    lines: DataFrame, columns: dict[str, Column], rule: Column, keep_malformed: bool, what: str, n_fields: int
) -> DataFrame:
    """The parsed columns; with ``keep_malformed`` the raw line, its rule and whether fields past
    ``n_fields`` were ignored too, else refused first."""
    trailing = (F.size("f") > F.lit(n_fields)) & rule.isNull()
    parsed = lines.select(*[c.alias(n) for n, c in columns.items()], F.col(TREC_LINE), rule.alias(TREC_RULE),
                          trailing.alias(TREC_TRAILING))
    if keep_malformed:
        return parsed
    _refuse_malformed(parsed, what)
    return parsed.select(*columns)


def _refuse_malformed(parsed: DataFrame, what: str) -> None:
    """Raise :class:`~ndcg_spark.errors.ValidationError` (the validation message) when a line
    breaks a TREC rule: its rule, how many lines and one of them, per rule."""
    found = (
        parsed.filter(F.col(TREC_RULE).isNotNull())
        .groupBy(TREC_RULE)
        .agg(F.count(F.lit(1)).alias("n"), F.min(F.to_json(F.struct(TREC_LINE))).alias("example"))
        .collect()
    )
    counts = {(what, "rule", r[TREC_RULE]): (int(r["n"]), r["example"]) for r in found}
    raise_on_broken_rules(counts, ValidationSpec())


def read_trec_run(
    spark: SparkSession, path: str, *, keep_malformed: bool = False, trailing_fields: str = "refuse"
) -> DataFrame:
    """A TREC run file (``qid Q0 docno rank score tag``) as candidates.

    Parameters
    ----------
    path : a file or folder Spark can read as text (any Hadoop file system).
    keep_malformed : return every line with ``trec_line``, ``trec_rule`` and ``trec_trailing``
        (see the module docstring) instead of refusing malformed ones.
    trailing_fields : ``refuse`` (a line with more than 6 fields breaks ``trec_field_count``) or
        ``ignore`` (its fields past the tag are ignored, as trec_eval does).

    Returns
    -------
    DataFrame ``request_id, doc_id, position`` (the rank field, a long), ``score`` (a double),
    ``system`` (the tag). trec_eval ignores the rank and orders by score (``contract.order:
    score``, as in the ``trec_eval`` preset).

    Raises
    ------
    ValidationError
        a line breaks ``trec_field_count`` or ``trec_not_numeric`` (unless ``keep_malformed``).
    """
    lines = _lines(spark, path, _RUN_FIELDS)
    rank, score = _number(4), _number(5)
    whole = whole_number_in(rank, -MAX_RANK, MAX_RANK)
    not_numeric = rank.isNull() | ~whole | score.isNull()
    columns = {
        "request_id": _field(1),
        "doc_id": _field(3),
        "position": F.when(whole, rank).cast("long"),
        "score": score,
        "system": _field(6),
    }
    return _finish(lines, columns, _rule(_RUN_FIELDS, not_numeric, trailing_fields), keep_malformed, "candidates",
                   _RUN_FIELDS)


def read_trec_qrels(
    spark: SparkSession, path: str, *, keep_malformed: bool = False, trailing_fields: str = "refuse"
) -> DataFrame:
    """A TREC qrels file (``qid iter docno rel``) as judgments.

    Returns ``request_id, doc_id, grade`` (the rel, a double); see :func:`read_trec_run` for
    ``path``, ``keep_malformed``, ``trailing_fields`` (past the 4th field) and the errors. A negative
    rel (trec_eval: judged, gain 0 and left out of the ideal) breaks the rule ``grade_negative`` in
    validation, unless the contract reads it as trec_eval does (``negative_grades: zero``, the
    ``trec_eval`` preset's).
    """
    lines = _lines(spark, path, _QRELS_FIELDS)
    rel = _number(4)
    columns = {"request_id": _field(1), "doc_id": _field(3), "grade": rel}
    return _finish(lines, columns, _rule(_QRELS_FIELDS, rel.isNull(), trailing_fields), keep_malformed, "judgments",
                   _QRELS_FIELDS)


__all__ = ["QRELS_COLUMNS", "RUN_COLUMNS", "TREC_LINE", "TREC_RULE", "TREC_TRAILING", "read_trec_qrels",
           "read_trec_run"]
