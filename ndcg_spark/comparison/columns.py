"""The column lists of the comparison's two tables (the documented schemas are checked against them)."""

from __future__ import annotations

from collections.abc import Sequence

from ndcg_spark.config.per_request import component_names
from ndcg_spark.measures import COMPONENTS, LEGACY_METRIC

__all__ = ["COMPARISON_COLUMNS", "COMPARISON_LEGACY", "COMPARISON_RENAMED", "PER_REQUEST_INPUTS", "POOL_COLUMNS",
           "known", "pool_columns"]


def known(component: str) -> str:
    """The pool summary's column of an ideal component computed over every judged document of the
    request (the shared ideal of an end-to-end comparison): ``idcg`` -> ``idcg_known``."""
    return f"{component}_known"


def pool_columns(metrics: Sequence[str]) -> tuple[str, ...]:
    """Columns of :func:`~ndcg_spark.comparison.pools.pool_summary` for these metrics, in order: the
    shared ideal's component of each (``idcg_known`` for NDCG, ``n_relevant_known`` for recall)."""
    shared = [known(c) for c in component_names(metrics) if COMPONENTS[c].ideal]
    return ("system", "pool_version", "request_id", "k", "pool_hash", "n_pool", "n_known_positive", *shared,
            "contract_fingerprint")


#: Columns of :func:`~ndcg_spark.comparison.pools.pool_summary` under the default metrics, in order.
POOL_COLUMNS = pool_columns((LEGACY_METRIC,))

#: The comparison's columns from before the ``metric`` column, on the NDCG rows (:mod:`ndcg_spark.legacy`).
COMPARISON_LEGACY = {
    "ndcg_ideal": ("ideal", "ndcg"),
    "baseline_ndcg_macro": ("baseline_macro", "ndcg"),
    "candidate_ndcg_macro": ("candidate_macro", "ndcg"),
    "baseline_ndcg_weighted": ("baseline_weighted", "ndcg"),
    "candidate_ndcg_weighted": ("candidate_weighted", "ndcg"),
}

#: Columns renamed when ``recall`` became a metric (current -> old name): the candidate *pool's*
#: recall. A table written before keeps the old columns, null from then on (``RETIRED_COLUMNS``).
COMPARISON_RENAMED = {
    "n_pool_recall_requests": "n_recall_requests",
    "baseline_pool_recall_macro": "baseline_recall_macro",
    "candidate_pool_recall_macro": "candidate_recall_macro",
    "baseline_pool_recall_weighted": "baseline_recall_weighted",
    "candidate_pool_recall_weighted": "candidate_recall_weighted",
}

#: Columns of the comparison table, in order (``run_id`` first; it is the partition column).
COMPARISON_COLUMNS = (
    "run_id",
    "baseline",
    "candidate",
    "comparison_kind",
    "baseline_pool_version",
    "candidate_pool_version",
    "pools_differ",
    "ideal",
    "metric",
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
    "n_baseline_no_results",
    "n_candidate_no_results",
    "n_pool_differs",
    "paired_weight",
    "baseline_macro",
    "candidate_macro",
    "delta_macro",
    "delta_macro_ci_low",
    "delta_macro_ci_high",
    "p_value_macro",
    "baseline_weighted",
    "candidate_weighted",
    "delta_weighted",
    "delta_weighted_ci_low",
    "delta_weighted_ci_high",
    "p_value_weighted",
    "wins",
    "ties",
    "losses",
    "n_pool_recall_requests",
    "baseline_pool_recall_macro",
    "candidate_pool_recall_macro",
    "baseline_pool_recall_weighted",
    "candidate_pool_recall_weighted",
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
    *COMPARISON_LEGACY,
)

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
