"""The guardrail table's columns: one row per run x comparison x guardrail x K x slice.

The table is declared, with its types and meanings, in :data:`ndcg_spark.config.schemas.GUARDRAILS`;
this module names it for the guardrails.

>>> GUARDRAIL_COLUMNS[13:15], GUARDRAIL_SCHEMA[:30]
(('baseline_n', 'baseline_n_observed'), 'run_id string, baseline string')
"""

from __future__ import annotations

from ndcg_spark.config.schemas import GUARDRAIL_ARM, GUARDRAILS, names

__all__ = ["ARM_FIELDS", "GUARDRAIL_COLUMNS", "GUARDRAIL_SCHEMA", "VERDICTS"]

#: a guardrail's verdict: the interval of "how much worse" clear of the margin, wholly beyond it, or neither
VERDICTS = ("pass", "fail", "inconclusive")

#: per arm (prefixed ``baseline_`` / ``candidate_``)
ARM_FIELDS = names(GUARDRAIL_ARM)

GUARDRAIL_COLUMNS = GUARDRAILS.names

#: the table's schema as Spark DDL
GUARDRAIL_SCHEMA = GUARDRAILS.ddl
