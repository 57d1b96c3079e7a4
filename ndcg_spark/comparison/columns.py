"""The column lists of the comparison's two tables (the documented schemas are checked against them)."""

from __future__ import annotations

__all__ = ["COMPARISON_COLUMNS", "PER_REQUEST_INPUTS", "POOL_COLUMNS"]

#: Columns of :func:`~ndcg_spark.comparison.pools.pool_summary`, in order.
POOL_COLUMNS = (
    "system",
    "pool_version",
    "request_id",
    "k",
    "pool_hash",
    "n_pool",
    "n_known_positive",
    "idcg_known",
    "contract_fingerprint",
)

#: Columns of the comparison table, in order (``run_id`` first; it is the partition column).
COMPARISON_COLUMNS = (
    "run_id",
    "baseline",
    "candidate",
    "comparison_kind",
    "baseline_pool_version",
    "candidate_pool_version",
    "pools_differ",
    "ndcg_ideal",
    "slice_dimension",
    "slice_value",
    "k",
    "n_requests",
    "n_paired",
    "n_only_baseline_missing",
    "n_only_baseline_empty",
    "n_only_candidate_missing",
    "n_only_candidate_empty",
    "n_neither",
    "n_pool_differs",
    "paired_weight",
    "baseline_ndcg_macro",
    "candidate_ndcg_macro",
    "delta_macro",
    "delta_macro_ci_low",
    "delta_macro_ci_high",
    "p_value_macro",
    "baseline_ndcg_weighted",
    "candidate_ndcg_weighted",
    "delta_weighted",
    "delta_weighted_ci_low",
    "delta_weighted_ci_high",
    "p_value_weighted",
    "wins",
    "ties",
    "losses",
    "n_recall_requests",
    "baseline_recall_macro",
    "candidate_recall_macro",
    "baseline_recall_weighted",
    "candidate_recall_weighted",
    "below_min_paired",
    "min_paired",
    "tie_tolerance",
    "ci_level",
    "bootstrap_replicates",
    "permutations",
    "seed",
    "bootstrap_buckets",
    "contract_fingerprint",
    "code_version",
    "created_at",
)

#: The per-request (stage 1) columns :func:`~ndcg_spark.comparison.paired.compare` reads.
PER_REQUEST_INPUTS = (
    "system",
    "pool_version",
    "request_id",
    "k",
    "dcg",
    "ndcg",
    "empty_ideal",
    "n_candidates",
    "n_positive",
    "weight",
    "run_id",
    "contract_fingerprint",
)
