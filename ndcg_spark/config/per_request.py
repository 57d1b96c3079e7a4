"""The per-request table's columns: what stage 1 writes and every later stage reads (pure Python).

Below both stage 1 (:mod:`ndcg_spark.scoring`) and what checks its inputs (:mod:`ndcg_spark.validation`):
a request attribute must not take one of these names (:class:`~ndcg_spark.config.attributes.Attributes`).
"""

from __future__ import annotations

#: The columns of the per-request table, in order (slice columns follow ``weight``).
PER_REQUEST_COLUMNS = (
    "run_id",
    "system",
    "pool_version",
    "request_id",
    "k",
    "dcg",
    "idcg",
    "ndcg",
    "empty_ideal",
    "no_results",
    "n_candidates",
    "n_judged",
    "n_positive",
    "n_unjudged_in_top_k",
    "ndcg_unjudged_low",
    "ndcg_unjudged_high",
    "weight",
)
STAMP_COLUMNS = ("contract_fingerprint",)
#: What makes a request: nothing is ever ranked across two of them.
REQUEST_KEYS = ("system", "pool_version", "request_id")

__all__ = ["PER_REQUEST_COLUMNS", "REQUEST_KEYS", "STAMP_COLUMNS"]
