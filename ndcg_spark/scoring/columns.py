"""The per-request table's columns, the request keys, and the metrics columns both plans build."""

from __future__ import annotations

from typing import NamedTuple

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.config.contract import Contract

# the per-request table's columns and keys, read here by both plans
from ndcg_spark.config.per_request import PER_REQUEST_COLUMNS, REQUEST_KEYS, STAMP_COLUMNS  # noqa: F401 - re-exported
from ndcg_spark.errors import InputError

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


class KMetrics(NamedTuple):
    """The metrics of one K, by name: a column each per K (:func:`metrics_columns`), one field each
    of the row per K after :func:`ndcg_spark.scoring.score.rows_per_k`."""

    dcg: Column
    idcg: Column
    n_unjudged_in_top_k: Column
    ndcg_unjudged_low: Column
    ndcg_unjudged_high: Column


#: the fields of :class:`KMetrics`, in the per-request table's order
METRIC_FIELDS = KMetrics._fields


def metric_column(slot: int, field: str) -> str:
    """The column holding ``field`` of the contract's ``slot``-th K (0-based) before the rows per K."""
    return f"_m{slot}_{field}"


def metrics_columns(
    contract: Contract,
    per_k: list[tuple[int, Column, Column, Column]],
    bounds: list[tuple[Column, Column, Column, Column]] | None = None,
) -> list[Column]:
    """The metrics of every K, one column per K and field (:data:`METRIC_FIELDS`,
    :func:`metric_column`), from one ``(k, dcg, idcg, unjudged in the top k)`` per K; the unjudged
    count is null under ``unjudged: zero``, which does not count them. ``bounds``, one ``(dcg,
    idcg)`` pair of the low and one of the high bound per K
    (:func:`ndcg_spark.metrics.dcg.unjudged_bound_ideal`), give ``ndcg_unjudged_low`` / ``_high``
    (null without them). Plain columns, not an array of structs: a reader that selects some of
    them (``agg(avg("ndcg"))``) leaves the others, and what only they need, uncomputed."""
    if bounds is None:
        bounds = [None] * len(per_k)
    out = []
    for slot, ((_, shown, ideal, unjudged), bound) in enumerate(zip(per_k, bounds)):
        low, high = _bound_fields(contract, bound)
        metrics = KMetrics(
            dcg=shown,
            idcg=ideal,
            n_unjudged_in_top_k=(F.lit(None) if contract.unjudged == "zero" else unjudged).cast("int"),
            ndcg_unjudged_low=low,
            ndcg_unjudged_high=high,
        )
        out += [value.alias(metric_column(slot, name)) for name, value in metrics._asdict().items()]
    return out


def doc_id_tie_break(contract: Contract, doc_id: Column) -> Column:
    """The sort order of ``doc_id`` that breaks ties of the contract's order: descending under
    ``order: score, ties: doc_id_desc`` (trec_eval's), else ascending."""
    return doc_id.desc() if by_doc_id_descending(contract) else doc_id.asc()


def by_doc_id_descending(contract: Contract) -> bool:
    """Whether score ties go to the larger doc id first (``ties: doc_id_desc`` under score order)."""
    return contract.order == "score" and contract.ties == "doc_id_desc"


def _bound_fields(contract: Contract, bound: tuple[Column, Column, Column, Column] | None) -> tuple[Column, Column]:
    """``ndcg_unjudged_low`` and ``_high``: DCG / IDCG of each bound; an empty bound ideal
    (IDCG <= 0) is null, or 0 under ``empty_ideal: zero`` (as the NDCG is)."""
    if bound is None:
        return F.lit(None).cast("double"), F.lit(None).cast("double")
    on_empty = F.lit(0.0) if contract.empty_ideal == "zero" else F.lit(None).cast("double")
    low_dcg, low_idcg, high_dcg, high_idcg = bound
    return (F.when(low_idcg > 0, low_dcg / low_idcg).otherwise(on_empty),
            F.when(high_idcg > 0, high_dcg / high_idcg).otherwise(on_empty))


def keys_as_strings(scored: DataFrame) -> DataFrame:
    """The request keys as strings (a request id may have been grouped on as an integer)."""
    rest = [c for c in scored.columns if c not in REQUEST_KEYS]
    return scored.select(*[F.col(c).cast("string").alias(c) for c in REQUEST_KEYS], *rest)


def keys_frame(rows: DataFrame, keys: list, names: tuple[str, ...] = REQUEST_KEYS) -> DataFrame:
    """A broadcast table of request keys (tuples of the ``names`` columns) typed like ``rows``'."""
    return F.broadcast(rows.sparkSession.createDataFrame(keys, rows.select(*names).schema))
