"""The columns of the trend (``ndcg-spark trend``, ``outputs.trend``)."""

from __future__ import annotations

from ndcg_spark.aggregation.columns import AGGREGATE_COLUMNS
from ndcg_spark.config.trend_spec import SHIFTS, TREND_FLAGS

__all__ = ["MEANS_AND_DENOMINATORS", "RUN_AND_GROUP", "SERIES_KEYS", "TREND_COLUMNS"]

#: One series: a system's NDCG at one K in one slice, night after night.
SERIES_KEYS = ("system", "k", "slice_dimension", "slice_value")

#: The aggregate row's means, intervals and denominators (``macro_ndcg`` … ``n_requests``), carried as they are.
MEANS_AND_DENOMINATORS = AGGREGATE_COLUMNS[
    AGGREGATE_COLUMNS.index("macro_ndcg"): AGGREGATE_COLUMNS.index("n_requests") + 1
]

#: The aggregate row's run and group (``run_id`` … ``slice_value``), first on a trend row too.
RUN_AND_GROUP = AGGREGATE_COLUMNS[: AGGREGATE_COLUMNS.index("macro_ndcg")]

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
)
