"""The shell's input check (:data:`~ndcg_spark.validation.validate.SHELL_CHECK`), run once per cached input.

``score_requests``, ``pool_summary`` and ``guardrail_table`` check their raw inputs before they
use them. An analyst asks many questions of the same inputs, read once and cached; once they
passed, checking them again reads every row only to give the same answer (on the sample, a Spark
job of 1-2 s and some 4,400 round trips to the JVM to build it: docs/benchmarks.md). So a check
that passed is remembered with the input DataFrames themselves -- the same Python objects, whose
plans cannot change -- and answered from memory while every one of them is still cached, under
the same system and pool literals, attributes and what the rules read of the contract (its
columns, gains, ``max_grade``, order and ``negative_grades``: another K or empty-ideal policy is the same
check).

Anything else runs the check: an input that is not cached (its source could change between two
reads), another DataFrame of the same rows, an input unpersisted since. A check that failed is
not remembered: it fails again. The latest :data:`REMEMBERED` checks are kept.

>>> from ndcg_spark import Contract
>>> cands = spark.createDataFrame([("q1", "a", 1, 1.0), ("q1", "b", 2, 0.0)],
...                               "request_id string, doc_id string, position int, grade double")
>>> first = shell_check(cands.cache(), None, Contract(k=[3]))
>>> shell_check(cands, None, Contract(k=[5])).accounting is first.accounting  # from memory
True
>>> shell_check(cands.unpersist(), None, Contract(k=[5])).accounting is first.accounting  # checked again
False
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.attributes import Attributes
from ndcg_spark.validation.accounting import ValidatedInputs
from ndcg_spark.validation.validate import SHELL_CHECK, validate_inputs

#: How many passed checks are remembered (the latest; each holds its input DataFrames).
REMEMBERED = 8
#: ``(inputs, key, result)`` of the checks that passed, the latest last.
_passed: list[tuple[tuple[DataFrame | None, ...], tuple, ValidatedInputs]] = []


def rules_read(contract: Contract) -> tuple:
    """What the input rules read of a resolved contract (tests/test_shell_check.py holds the
    validation package to it)."""
    return contract.columns, contract.gain, contract.max_grade, contract.order, contract.negative_grades


def shell_check(
    candidates: DataFrame,
    judgments: DataFrame | None,
    contract: Contract,
    *,
    attributes: Attributes | None = None,
    system: str | None = None,
    pool_version: str | None = None,
) -> ValidatedInputs:
    """``validate_inputs(candidates, judgments, contract, SHELL_CHECK, ...)``, answered from memory
    when the same cached inputs passed it before (see the module docstring); the result's
    ``contract`` is this call's, resolved."""
    contract = contract.resolve(candidates.columns)
    attributes = attributes or Attributes()
    inputs = (candidates, judgments, attributes.table)
    all_cached = all(df is None or _cached(df) for df in inputs)
    key = (rules_read(contract), replace(attributes, table=None), system, pool_version)
    if all_cached:
        for seen, seen_key, validated in reversed(_passed):
            if seen_key == key and all(a is b for a, b in zip(seen, inputs)):
                return replace(validated, contract=contract)
    # under SHELL_CHECK every broken rule raises, so what returns passed and cached nothing of its own
    validated = validate_inputs(candidates, judgments, contract, SHELL_CHECK, attributes=attributes, system=system,
                                pool_version=pool_version)
    if all_cached:
        _passed.append((inputs, key, validated))
        del _passed[:-REMEMBERED]
    return validated


def _cached(df: DataFrame) -> bool:
    """Whether ``df``'s plan is cached (by this object or another of the same plan)."""
    level = df.storageLevel
    return level.useMemory or level.useDisk


__all__ = ["REMEMBERED", "rules_read", "shell_check"]
