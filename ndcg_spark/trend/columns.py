"""The columns of the trend (``ndcg-spark trend``, ``outputs.trend``)."""

from __future__ import annotations

from ndcg_spark.config.trend_spec import SHIFTS, TREND_FLAGS

__all__ = ["MEANS_AND_DENOMINATORS", "RUN_AND_GROUP", "SERIES_KEYS", "TREND_COLUMNS", "TREND_LEGACY"]

#: One series: a system's metric at one K in one slice, night after night.
SERIES_KEYS = ("system", "k", "metric", "slice_dimension", "slice_value")

#: The aggregate row's means, intervals and denominators, carried as they are.
MEANS_AND_DENOMINATORS = ("macro", "macro_ci_low", "macro_ci_high", "weighted", "weighted_ci_low", "weighted_ci_high",
                          "n_eligible", "n_empty_ideal", "n_no_results", "n_requests")

#: The aggregate row's run and group, first on a trend row too.
RUN_AND_GROUP = ("run_id", "system", "pool_version", "k", "metric", "slice_dimension", "slice_value")

#: The trend's columns from before the ``metric`` column, on the NDCG rows (:mod:`ndcg_spark.legacy`).
TREND_LEGACY = {"macro_ndcg": ("macro", "ndcg"), "weighted_ndcg": ("weighted", "ndcg")}

#: The columns of the trend, in order.
TREND_COLUMNS = (
    *RUN_AND_GROUP,
    "contract_fingerprint",
    *MEANS_AND_DENOMINATORS,
    *[f.share for f in SHIFTS],
    "unjudged_share",
    "below_min_eligible",
    "previous_run_id",
    "comparable",
    "break_reason",
    "delta_macro",
    "delta_weighted",
    *[f.change for f in SHIFTS],
    "moved_macro",
    "moved_weighted",
    # the flags (config.trend_spec.TREND_FLAGS): a boolean each, the label derived from them, the thresholds
    *[f.column for f in TREND_FLAGS if f.kind == "shift"],
    "flag",
    *[f.threshold for f in SHIFTS],
    *[f.column for f in TREND_FLAGS if f.kind == "move"],
    *TREND_LEGACY,
)
