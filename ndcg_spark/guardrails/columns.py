"""The guardrail table's columns: one row per run x comparison x guardrail x K x slice."""

from __future__ import annotations

__all__ = ["ARM_FIELDS", "GUARDRAIL_COLUMNS", "GUARDRAIL_SCHEMA", "VERDICTS"]

#: a guardrail's verdict: the interval of "how much worse" clear of the margin, wholly beyond it, or neither
VERDICTS = ("pass", "fail", "inconclusive")

#: per arm (prefixed ``baseline_`` / ``candidate_``)
ARM_FIELDS = ("n", "n_observed", "observed_share", "value", "ci_low", "ci_high")

GUARDRAIL_COLUMNS = (
    "run_id",
    "baseline",
    "candidate",
    "guardrail",
    "source",
    "statistic",
    "better",
    "margin_kind",
    "margin",
    "design",
    "k",
    "slice_dimension",
    "slice_value",
    *[f"baseline_{name}" for name in ARM_FIELDS],
    *[f"candidate_{name}" for name in ARM_FIELDS],
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "relative_difference",
    "relative_ci_low",
    "relative_ci_high",
    "observed_share_difference",
    "below_min_observed",
    "verdict",
    "overall_verdict",
    "rows_read",
    "rows_set_aside",
    "min_observed",
    "ci_level",
    "bootstrap_replicates",
    "seed",
    "declaration",
    "guardrail_fingerprint",
    "contract_fingerprint",
    "code_version",
    "created_at",
)

_TYPES = {
    "k": "int", "margin": "double", "rows_read": "bigint", "rows_set_aside": "bigint", "ci_level": "double",
    "bootstrap_replicates": "int", "seed": "bigint", "created_at": "timestamp", "below_min_observed": "boolean",
    "min_observed": "int",
    **{f"{arm}_{name}": "bigint" for arm in ("baseline", "candidate") for name in ("n", "n_observed")},
    **{f"{arm}_{name}": "double" for arm in ("baseline", "candidate")
       for name in ("observed_share", "value", "ci_low", "ci_high")},
    **{name: "double" for name in ("difference", "difference_ci_low", "difference_ci_high", "relative_difference",
                                   "relative_ci_low", "relative_ci_high", "observed_share_difference")},
}
#: the table's schema as Spark DDL (every column not typed above is a string)
GUARDRAIL_SCHEMA = ", ".join(f"{name} {_TYPES.get(name, 'string')}" for name in GUARDRAIL_COLUMNS)
