"""The columns stage 2 reads and writes: the aggregate, audit and run-metadata tables.

The tables are declared, with their types and meanings, in :mod:`ndcg_spark.config.schemas`; this
module names them for stage 2, with the groups of columns it computes together.

>>> AGGREGATE_COLUMNS[4:8], RUN_METADATA_SCHEMA["row_counts"].dataType.simpleString()
(('metric', 'slice_dimension', 'slice_value', 'macro'), 'map<string,bigint>')
"""

from __future__ import annotations

from ndcg_spark.config.schemas import AGGREGATE, AGGREGATE_LEGACY, AUDIT, AUDIT_LEGACY, INPUT_READ, RUN_METADATA

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
    "AGGREGATE_STAMPS",
]

#: What one aggregate row is "per" (besides the slice): never pooled across any of these. A
#: ``metric`` is a declared metric or one of its what-ifs (:mod:`ndcg_spark.measures`).
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
AGGREGATE_STAMPS = ("min_eligible", "ci_level", "code_version", "created_at")

#: The columns of the aggregate table, in order (declared in :data:`ndcg_spark.config.schemas.AGGREGATE`,
#: its legacy columns :data:`AGGREGATE_LEGACY` last).
AGGREGATE_COLUMNS = AGGREGATE.names

#: The columns of the audit table, in order (:data:`ndcg_spark.config.schemas.AUDIT`; :data:`AUDIT_LEGACY` last).
AUDIT_COLUMNS = AUDIT.names

#: One input as a run read it (the run-metadata table's ``inputs``; ``ndcg_spark.storage.lineage``).
INPUT_READ_SCHEMA = INPUT_READ.struct_type()

#: The run-metadata table: one row per run (:data:`ndcg_spark.config.schemas.RUN_METADATA`).
RUN_METADATA_SCHEMA = RUN_METADATA.struct_type()
