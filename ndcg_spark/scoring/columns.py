"""The per-request table's columns, the request keys, and the metrics columns every plan builds."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.config.contract import Contract

# the per-request table's columns and keys, read here by both plans
from ndcg_spark.config.per_request import (  # noqa: F401 - re-exported
    PER_REQUEST_COLUMNS,
    REQUEST_KEYS,
    PER_REQUEST_STAMPS,
    component_names,
    per_k_fields,
)
from ndcg_spark.errors import InputError
from ndcg_spark.measures import COMPONENTS, Metric
from ndcg_spark.metrics.ranked_list import RankedList

INTEGRAL_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC_TYPES = (*INTEGRAL_TYPES, T.FloatType, T.DoubleType, T.DecimalType)


def require_column(df: DataFrame, name: str, role: str, table: str, numeric: bool = False) -> None:
    """Raise :class:`InputError` naming the rule when ``df`` lacks column ``name`` (the contract's
    ``role``) or, with ``numeric``, when its type is not a number."""
    fields = {f.name: f.dataType for f in df.schema.fields}
    if name not in fields:
        raise InputError(
            f"{table}: missing column {name!r} (the {role}; map it with contract.columns.{role}); "
            f"columns present: {', '.join(sorted(fields)) or 'none'} (rule column_missing)"
        )
    if numeric and not isinstance(fields[name], _NUMERIC_TYPES):
        raise InputError(
            f"{table}: column {name!r} (the {role}) must be numeric, found {fields[name].simpleString()} "
            "(rule column_type; the job's validation parses numeric strings first)"
        )


def metric_column(slot: int, field: str) -> str:
    """The column holding ``field`` of the contract's ``slot``-th K (0-based) before the rows per K."""
    return f"_m{slot}_{field}"


def metrics_columns(
    contract: Contract,
    ranked: RankedList,
    unjudged: Callable[[int], Column] | None,
    what_ifs: tuple[RankedList, RankedList] | None = None,
) -> list[Column]:
    """The fields of every K (:func:`~ndcg_spark.config.per_request.per_k_fields`), one column per K
    and field (:func:`metric_column`), from a request's ``ranked`` list: the components of the
    contract's metrics, the unjudged in the top k (``unjudged(k)``; null under ``unjudged: zero``,
    which does not count them) and each metric's two what-ifs, its value over the ``what_ifs`` lists
    (every unjudged candidate judged at the scale's lowest / highest grade; null without them). A
    what-if's own empty ideal is null, or 0 under ``empty_ideal: zero`` (as the metric is). Plain
    columns, not an array of structs: a reader that selects some of them (``agg(avg("ndcg"))``)
    leaves the others, and what only they need, uncomputed."""
    names = contract.metric_names
    components = component_names(names)
    out = []
    for slot, k in enumerate(contract.k):
        fields = {name: COMPONENTS[name].at(ranked, k, contract.max_k) for name in components}
        counted = contract.unjudged.counts and unjudged is not None
        fields["n_unjudged_in_top_k"] = (unjudged(k) if counted else F.lit(None)).cast("int")
        for metric in contract.metrics:
            for name, lst in zip(metric.what_ifs, what_ifs or (None, None)):
                fields[name] = F.lit(None).cast("double") if lst is None else scored(contract, metric, lst, k)
        out += [fields[name].alias(metric_column(slot, name)) for name in per_k_fields(names)]
    return out


def value_of(metric: Metric, ranked: RankedList, k: int, max_k: int) -> Column:
    """``metric`` of the list ``ranked`` at ``k`` (of a contract whose largest K is ``max_k``) from
    its components; null without an ideal."""
    def c(name: str) -> Column:
        return COMPONENTS[name].at(ranked, k, max_k)

    return F.when(metric.has_ideal(c), metric.value(c, k))


def scored(contract: Contract, metric: Metric, ranked: RankedList, k: int) -> Column:
    """``metric`` of ``ranked`` at ``k``, its own empty ideal scored as the contract's ``empty_ideal``
    says (null when it sets requests aside, else 0): a what-if's value."""
    return value_of(metric, ranked, k, contract.max_k).otherwise(contract.empty_ideal.column())


def doc_id_tie_break(contract: Contract, doc_id: Column) -> Column:
    """The sort order of ``doc_id`` that breaks ties of the contract's order: descending under
    ``order: score, ties: doc_id_desc`` (trec_eval's), else ascending."""
    return doc_id.desc() if by_doc_id_descending(contract) else doc_id.asc()


def by_doc_id_descending(contract: Contract) -> bool:
    """Whether score ties go to the larger doc id first (``ties: doc_id_desc`` under score order)."""
    return contract.order == "score" and contract.ties == "doc_id_desc"


def keys_as_strings(scored: DataFrame) -> DataFrame:
    """The request keys as strings (a request id may have been grouped on as an integer)."""
    rest = [c for c in scored.columns if c not in REQUEST_KEYS]
    return scored.select(*[F.col(c).cast("string").alias(c) for c in REQUEST_KEYS], *rest)


def keys_frame(rows: DataFrame, keys: list, names: tuple[str, ...] = REQUEST_KEYS) -> DataFrame:
    """A broadcast table of request keys (tuples of the ``names`` columns) typed like ``rows``'."""
    return F.broadcast(rows.sparkSession.createDataFrame(keys, rows.select(*names).schema))
