"""The columns of the trend (``ndcg-spark trend``, ``outputs.trend``).

The table is declared, with its types and meanings, in :data:`ndcg_spark.config.schemas.TREND`
(each flag's columns from :data:`~ndcg_spark.config.trend_spec.TREND_FLAGS`); this module names
it for the trend, with the groups of columns the trend takes from an aggregate row.

>>> TREND_COLUMNS[:8] == (*RUN_AND_GROUP, "contract_fingerprint")
True
"""

from __future__ import annotations

from ndcg_spark.config.schemas import TREND, TREND_LEGACY

__all__ = ["MEANS_AND_DENOMINATORS", "RUN_AND_GROUP", "SERIES_KEYS", "TREND_COLUMNS", "TREND_LEGACY"]

#: One series: a system's metric at one K in one slice, night after night.
SERIES_KEYS = ("system", "k", "metric", "slice_dimension", "slice_value")

#: The aggregate row's means, intervals and denominators, carried as they are.
MEANS_AND_DENOMINATORS = ("macro", "macro_ci_low", "macro_ci_high", "weighted", "weighted_ci_low", "weighted_ci_high",
                          "n_eligible", "n_empty_ideal", "n_no_results", "n_requests")

#: The aggregate row's run and group, first on a trend row too.
RUN_AND_GROUP = ("run_id", "system", "pool_version", "k", "metric", "slice_dimension", "slice_value")

#: The columns of the trend, in order (the legacy columns, :data:`TREND_LEGACY`, last).
TREND_COLUMNS = TREND.names
