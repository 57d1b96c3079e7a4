"""Candidate rows under validation: the row rules of ids, position or score (and the grade and weight
when the candidates carry them), and the rules of a request list (one system's candidates for one
request): ``doc_repeated``, ``position_repeated``, ``too_many_candidates``.

>>> from ndcg_spark import Contract
>>> from ndcg_spark.config.validation_spec import ValidationSpec
>>> table = InputTable(spark.createDataFrame(
...     [("q1", "a", 1), ("q1", "b", 1), ("q2", "a", 0), ("q2", "a", 2)],
...     "request_id string, doc_id string, position int"), "candidates")
>>> contract = Contract(k=[3]).resolve(table.original)
>>> rows = candidate_rows(table, contract, with_grade=False, with_attributes=False)
>>> flagged = candidate_groups(rows, contract, ValidationSpec(), requests=None, list_reason=False)
>>> flagged.select("request_id", "doc_id", "position", "__v_rules").orderBy("request_id", "position").show()
+----------+------+--------+--------------------+
|request_id|doc_id|position|           __v_rules|
+----------+------+--------+--------------------+
|        q1|     a|       1| [position_repeated]|
|        q1|     b|       1| [position_repeated]|
|        q2|     a|       0|[position_invalid...|
|        q2|     a|       2|      [doc_repeated]|
+----------+------+--------+--------------------+
<BLANKLINE>
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.validation_spec import ValidationSpec
from ndcg_spark.config.attributes import Attributes
from ndcg_spark.validation.attributes import attribute_flags
from ndcg_spark.validation.flags import REQUEST_LIST, Flag, flag_rows, with_rules
from ndcg_spark.validation.judgments import grade_flags
from ndcg_spark.validation.input_table import InputTable, is_blank, quoted


def _keys(
    table: InputTable, contract: Contract, system: str | None, pool_version: str | None
) -> tuple[dict[str, Column], list[Flag]]:
    """The request-list keys (system, pool version, request id) and the doc id, blank ids as null;
    the ``request_id_missing`` and ``doc_id_missing`` flags."""
    cols = contract.columns
    rid = table.identifier(cols.request_id, "request_id")
    did = table.identifier(cols.doc_id, "doc_id")
    sys_col = quoted(cols.system).cast("string") if cols.system in table.types else F.lit(system or "default")
    pool_col = (
        quoted(cols.pool_version).cast("string") if cols.pool_version in table.types else F.lit(pool_version)
    ).cast("string")
    keys = {
        "__v_sys": sys_col,
        "__v_pool": pool_col,
        "__v_rid": F.when(~is_blank(rid), rid),
        "__v_did": F.when(~is_blank(did), did),
    }
    return keys, [("request_id_missing", is_blank(rid)), ("doc_id_missing", is_blank(did))]


def _order_flag(table: InputTable, contract: Contract) -> tuple[str, Column, Flag]:
    """(internal column, value, flag) of the order column: ``position_invalid`` or ``score_invalid``."""
    cols = contract.columns
    if contract.order == "position":
        pos, pos_bad = table.number(cols.position, "position")
        invalid = pos_bad | pos.isNull() | F.isnan(pos) | (F.abs(pos) == F.lit(float("inf"))) | (pos < 1)
        return "__v_pos", pos, ("position_invalid", invalid)
    score, score_bad = table.number(cols.score, "score", _score_hint(table, contract))
    return "__v_score", score, ("score_invalid", score_bad | score.isNull() | F.isnan(score))


def _score_hint(table: InputTable, contract: Contract) -> str:
    """What to declare when the candidates have neither the score nor the position column: the
    list is ordered by score only because ``order: auto`` found no position column."""
    cols = contract.columns
    if cols.score in table.types or cols.position in table.types:
        return ""
    ranks = [c for c in table.original if any(word in c.lower() for word in ("rank", "pos"))]
    like = f" (e.g. {ranks[0]!r} here)" if ranks else ""
    return (f"nor is there a column {cols.position!r}: a column holding the displayed rank{like} is declared with "
            "contract.columns.position: <its name> (order auto or position), a score column with contract.columns.score")


def candidate_rows(
    table: InputTable,
    contract: Contract,
    *,
    with_grade: bool,
    with_attributes: bool,
    attributes: Attributes | None = None,
    system: str | None = None,
    pool_version: str | None = None,
) -> DataFrame:
    """Candidates with their normalized keys and the row rules each row breaks by itself.

    ``with_grade``: the candidates are pre-joined with their grades (no judgments table);
    ``with_attributes``: the request attributes come from the candidates (no attributes table).
    """
    cols = contract.columns
    derived, flags = _keys(table, contract, system, pool_version)
    order_column, order_value, order_flag = _order_flag(table, contract)
    derived[order_column] = order_value
    flags.append(order_flag)
    if with_grade:
        hint = "map it with contract.columns.grade, or give inputs.judgments"
        grade, grade_bad = table.number(cols.grade, "grade", hint)
        flags.extend(grade_flags(grade, grade_bad, contract))
        derived["__v_grade"] = grade
    if with_attributes:
        flags.extend(attribute_flags(table, attributes or Attributes()))
    return flag_rows(table, derived, flags)


def valid_position() -> Column:
    """The row's position is a number (the detector's and the windows' ``position_repeated``)."""
    return F.col("__v_pos").isNotNull() & ~F.isnan("__v_pos")


def candidate_groups(
    df: DataFrame, contract: Contract, spec: ValidationSpec, requests: DataFrame | None, list_reason: bool
) -> DataFrame:
    """Flag every row of the request rules (windows; used to quarantine rows or describe an error).

    ``requests``: the requests a judgment or attribute row takes out (``__v_rid``, ``__v_req_first``);
    ``list_reason``: add ``__v_list_first``, the first rule any row of the request list breaks.
    """
    if requests is not None:
        # Joined on request id before the windows, whose partitioning by request then reuses the join's.
        df = df.join(requests, "__v_rid", "left")
    # Whole-request rules. The first window (by request) fixes the partitioning; the finer ones reuse it.
    has_rid = F.col("__v_rid").isNotNull()
    df = df.withColumn("__v_n", F.count(F.lit(1)).over(Window.partitionBy(*REQUEST_LIST)))
    counts = [F.count(F.lit(1)).over(Window.partitionBy(*REQUEST_LIST, "__v_did")).alias("__v_n_doc")]
    if contract.order == "position":
        counts.append(F.count(F.lit(1)).over(Window.partitionBy(*REQUEST_LIST, "__v_pos")).alias("__v_n_pos"))
    df = df.select("*", *counts)
    group_flags: list[Flag] = [("doc_repeated", has_rid & F.col("__v_did").isNotNull() & (F.col("__v_n_doc") > 1))]
    if contract.order == "position":
        group_flags.append(("position_repeated", has_rid & valid_position() & (F.col("__v_n_pos") > 1)))
    if spec.max_candidates_per_request is not None:
        too_many = F.col("__v_n") > F.lit(spec.max_candidates_per_request)
        group_flags.append(("too_many_candidates", has_rid & too_many))
    df = with_rules(df, group_flags, append=True)
    if list_reason:
        # The first rule any row of the request list (system, pool version, request) breaks.
        list_first = F.min("__v_first").over(Window.partitionBy(*REQUEST_LIST))
        df = df.withColumn("__v_list_first", F.when(has_rid, list_first))
    return df


__all__ = ["candidate_groups", "candidate_rows", "valid_position"]
