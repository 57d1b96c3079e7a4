"""The columns stage 2 reads and writes: the aggregate, audit and run-metadata tables."""

from __future__ import annotations

from pyspark.sql import types as T

__all__ = [
    "AGGREGATE_COLUMNS",
    "AGGREGATE_LEGACY",
    "AUDIT_LEGACY",
    "AUDIT_COLUMNS",
    "GROUP_KEYS",
    "INTERVAL_COLUMNS",
    "PER_REQUEST_INPUTS",
    "INPUT_READ_SCHEMA",
    "RUN_METADATA_SCHEMA",
    "STAMP_COLUMNS",
]

#: What one aggregate row is "per" (besides the slice): never pooled across any of these. A
#: ``metric`` is a declared metric or one of its what-ifs (:func:`measures`).
GROUP_KEYS = ("run_id", "contract_fingerprint", "pool_version", "system", "k", "metric")

#: The per-request columns stage 2 reads (besides each metric's, and the slice columns of its spec).
PER_REQUEST_INPUTS = (
    "run_id",
    "contract_fingerprint",
    "pool_version",
    "system",
    "request_id",
    "k",
    "empty_ideal",
    "n_candidates",
    "n_unjudged_in_top_k",
    "weight",
)

#: The bootstrap interval bounds of both means (null without replicates).
INTERVAL_COLUMNS = ("macro_ci_low", "macro_ci_high", "weighted_ci_low", "weighted_ci_high")

#: What an aggregate row was computed under and when, carried on to the audit.
STAMP_COLUMNS = ("min_eligible", "ci_level", "code_version", "created_at")

#: The aggregate's columns from before the ``metric`` column, on the rows of the metric it held (null on
#: the others): legacy column -> (the column it copies, the ``metric`` of the row it copies it from)
#: (:mod:`ndcg_spark.legacy`).
AGGREGATE_LEGACY = {
    "macro_ndcg": ("macro", "ndcg"),
    "weighted_ndcg": ("weighted", "ndcg"),
    "macro_ndcg_unjudged_low": ("macro", "ndcg_unjudged_low"),
    "macro_ndcg_unjudged_high": ("macro", "ndcg_unjudged_high"),
    "weighted_ndcg_unjudged_low": ("weighted", "ndcg_unjudged_low"),
    "weighted_ndcg_unjudged_high": ("weighted", "ndcg_unjudged_high"),
}

#: The columns of the aggregate table, in order.
AGGREGATE_COLUMNS = (
    "run_id",
    "system",
    "pool_version",
    "k",
    "metric",
    "slice_dimension",
    "slice_value",
    "macro",
    "macro_ci_low",
    "macro_ci_high",
    "weighted",
    "weighted_ci_low",
    "weighted_ci_high",
    "n_eligible",
    "n_empty_ideal",
    "n_no_results",
    "n_requests",
    "weight_eligible",
    "weight_all",
    "unjudged_share",
    "below_min_eligible",
    "min_eligible",
    "ci_level",
    "contract_fingerprint",
    "code_version",
    "created_at",
    *AGGREGATE_LEGACY,
)

#: The audit's columns from before the ``metric`` column (as :data:`AGGREGATE_LEGACY`, same row).
AUDIT_LEGACY = {"worst_macro_ndcg": ("worst_macro", "ndcg"), "overall_macro_ndcg": ("overall_macro", "ndcg")}

#: The columns of the audit table, in order.
AUDIT_COLUMNS = (
    "run_id",
    "system",
    "pool_version",
    "k",
    "metric",
    "slice_dimension",
    "n_slices",
    "n_slices_ranked",
    "worst_slice_value",
    "worst_macro",
    "worst_ci_low",
    "worst_ci_high",
    "worst_n_eligible",
    "overall_macro",
    "gap_to_overall",
    "ci_below_overall",
    "min_eligible",
    "ci_level",
    "contract_fingerprint",
    "code_version",
    "created_at",
    *AUDIT_LEGACY,
)

#: One input as a run read it (the run-metadata table's ``inputs``; ``ndcg_spark.job.lineage``).
INPUT_READ_SCHEMA = T.StructType(
    [
        T.StructField("role", T.StringType(), False),
        T.StructField("source", T.StringType(), False),
        T.StructField("table", T.StringType(), True),
        T.StructField("path", T.StringType(), True),
        T.StructField("format", T.StringType(), False),
        T.StructField("version", T.LongType(), True),
        T.StructField("fingerprint", T.StringType(), True),
        T.StructField("files", T.LongType(), True),
        T.StructField("bytes", T.LongType(), True),
    ]
)

#: The run-metadata table: one row per run.
RUN_METADATA_SCHEMA = T.StructType(
    [
        T.StructField("run_id", T.StringType(), False),
        T.StructField("contract_fingerprint", T.StringType(), False),
        T.StructField("contract", T.StringType(), False),
        T.StructField("aggregate_spec", T.StringType(), False),
        T.StructField("row_counts", T.MapType(T.StringType(), T.LongType(), False), False),
        T.StructField("code_version", T.StringType(), False),
        T.StructField("created_at", T.TimestampType(), False),
        T.StructField("inputs", T.ArrayType(INPUT_READ_SCHEMA, False), True),
    ]
)
