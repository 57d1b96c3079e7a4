"""The column lists of the comparison's two tables: the comparison table and the pool summary.

Both are declared, with their types and meanings, in :mod:`ndcg_spark.config.schemas`
(:data:`~ndcg_spark.config.schemas.COMPARISON`, :func:`~ndcg_spark.config.schemas.pool_summary_schema`);
this module names them for the comparison.

>>> pool_columns(("ndcg", "recall"))[-3:]
('idcg_known', 'n_relevant_known', 'contract_fingerprint')
"""

from __future__ import annotations

from collections.abc import Sequence

from ndcg_spark.config.schemas import COMPARISON, COMPARISON_LEGACY, COMPARISON_RENAMED, known, pool_summary_schema
from ndcg_spark.measures import LEGACY_METRIC

__all__ = ["COMPARISON_COLUMNS", "COMPARISON_LEGACY", "COMPARISON_RENAMED", "PER_REQUEST_INPUTS", "POOL_COLUMNS",
           "known", "pool_columns"]


def pool_columns(metrics: Sequence[str]) -> tuple[str, ...]:
    """Columns of :func:`~ndcg_spark.comparison.pools.pool_summary` for these metrics, in order: the
    shared ideal's component of each (``idcg_known`` for NDCG, ``n_relevant_known`` for recall)."""
    return pool_summary_schema(metrics).names


#: Columns of :func:`~ndcg_spark.comparison.pools.pool_summary` under the default metrics, in order.
POOL_COLUMNS = pool_columns((LEGACY_METRIC,))

#: Columns of the comparison table, in order (``run_id`` first; it is the partition column), the
#: legacy columns (:data:`COMPARISON_LEGACY`) last.
COMPARISON_COLUMNS = COMPARISON.names

#: The per-request (stage 1) columns :func:`~ndcg_spark.comparison.paired.compare` reads (and every
#: metric's value and components).
PER_REQUEST_INPUTS = (
    "system",
    "pool_version",
    "request_id",
    "k",
    "empty_ideal",
    "n_candidates",
    "n_positive",
    "weight",
    "run_id",
    "contract_fingerprint",
)
