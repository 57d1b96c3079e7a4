"""The per-request table's columns: what stage 1 writes and every later stage reads (pure Python).

The columns depend on the contract's metrics (:mod:`ndcg_spark.measures`): each metric's components
and value, and its two what-ifs, in the places below; with the default ``[ndcg]`` they are the
table's columns from before metrics were declared. They are declared, with their types and
meanings, in :func:`ndcg_spark.config.schemas.per_request_schema`; this module names them for the
code. Below both stage 1 (:mod:`ndcg_spark.scoring`) and what checks its inputs
(:mod:`ndcg_spark.validation`): a request attribute must not take one of these names
(:class:`~ndcg_spark.config.attributes.Attributes`).

>>> per_request_columns(("ndcg",))[4:10]
('k', 'dcg', 'idcg', 'ndcg', 'empty_ideal', 'no_results')
>>> per_request_columns(("ndcg", "recall"))[5:11]
('dcg', 'idcg', 'relevant_in_top_k', 'n_relevant', 'ndcg', 'recall')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ndcg_spark.config import schemas
from ndcg_spark.config.schemas import component_names, names
from ndcg_spark.measures import LEGACY_METRIC, METRICS, what_if_names

__all__ = ["PER_REQUEST_COLUMNS", "REQUEST_KEYS", "PER_REQUEST_STAMPS", "RESERVED_COLUMNS", "component_names",
           "metrics_in", "per_k_fields", "per_request_columns"]

#: What makes a request: nothing is ever ranked across two of them.
REQUEST_KEYS = names(schemas.REQUEST_KEYS)
#: After the slice columns.
PER_REQUEST_STAMPS = schemas.per_request_schema(()).around_slices[1]
#: A request's flags and counts, after the metrics' values (the same whatever the metrics).
FLAGS_AND_COUNTS = names(schemas.REQUEST_FLAGS)


def per_k_fields(metrics: Sequence[str]) -> tuple[str, ...]:
    """The fields a plan computes per K (before the rows multiply by K): the components, the unjudged
    in the top K and every metric's what-ifs."""
    return (*component_names(metrics), "n_unjudged_in_top_k", *[w for m in metrics for w in what_if_names(m)])


def per_request_columns(metrics: Sequence[str]) -> tuple[str, ...]:
    """The per-request table's columns, in order, for these metrics (slice columns follow ``weight``)."""
    return schemas.per_request_schema(metrics).around_slices[0]


def metrics_in(columns: Iterable[str]) -> tuple[str, ...]:
    """The metrics a per-request table holds: those whose value is one of its columns, in its order.

    >>> metrics_in(["run_id", "dcg", "ndcg", "recall", "weight"])
    ('ndcg', 'recall')
    """
    return tuple(c for c in columns if c in METRICS)


#: The per-request table's columns under the default metrics (``[ndcg]``).
PER_REQUEST_COLUMNS = per_request_columns((LEGACY_METRIC,))
#: Every name a per-request table can hold, whatever its metrics: no request attribute may take one.
RESERVED_COLUMNS = frozenset(per_request_columns(tuple(METRICS))) | set(PER_REQUEST_STAMPS)
