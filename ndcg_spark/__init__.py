"""ndcg-spark: NDCG@K per search request, with every choice that moves the number declared.

Importing this package is instant and starts nothing: the Spark-facing functions are loaded on
first use, so ``import ndcg_spark`` in a pyspark shell costs nothing until you call one.

>>> import ndcg_spark
>>> ndcg_spark.Contract().k
(1, 3, 5, 10)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ndcg_spark.version import __version__

# public name -> module that defines it (imported lazily, PEP 562)
_EXPORTS = {
    "Contract": "ndcg_spark.config.contract",
    "GainMapping": "ndcg_spark.config.gain",
    "ColumnMapping": "ndcg_spark.config.contract",
    "NdcgError": "ndcg_spark.errors",
    "ContractError": "ndcg_spark.errors",
    "InputError": "ndcg_spark.errors",
    "EmptyIdealError": "ndcg_spark.errors",
    "score_requests": "ndcg_spark.scoring.score",
    "gain": "ndcg_spark.metrics.gain",
    "Attributes": "ndcg_spark.config.attributes",
    "JobConfig": "ndcg_spark.config.job",
    "AggregateSpec": "ndcg_spark.config.aggregate_spec",
    "aggregate": "ndcg_spark.aggregation.means",
    "audit": "ndcg_spark.aggregation.worst_slice",
    "run_metadata": "ndcg_spark.aggregation.metadata",
    "ValidationError": "ndcg_spark.errors",
    "ValidationSpec": "ndcg_spark.config.validation_spec",
    "validate_inputs": "ndcg_spark.validation.validate",
    "RowAccounting": "ndcg_spark.validation.accounting",
    "compare": "ndcg_spark.comparison.paired",
    "pool_summary": "ndcg_spark.comparison.pools",
    "CompareSpec": "ndcg_spark.config.compare_spec",
    "PoolMismatchError": "ndcg_spark.comparison.guard",
    "GuardrailSpec": "ndcg_spark.config.guardrail_spec",
    "guardrail_table": "ndcg_spark.guardrails.table",
    "read_trec_run": "ndcg_spark.formats.trec",
    "read_trec_qrels": "ndcg_spark.formats.trec",
    "JudgingSpec": "ndcg_spark.config.judging_spec",
    "judge_next": "ndcg_spark.judging.plan",
    "judging_swings": "ndcg_spark.judging.swings",
    "AgreementSpec": "ndcg_spark.config.agreement_spec",
    "experiment_history": "ndcg_spark.agreement.history",
    "agreement_summary": "ndcg_spark.agreement.summary",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from ndcg_spark.aggregation.means import aggregate
    from ndcg_spark.aggregation.metadata import run_metadata
    from ndcg_spark.aggregation.worst_slice import audit
    from ndcg_spark.config.aggregate_spec import AggregateSpec
    from ndcg_spark.config.job import JobConfig
    from ndcg_spark.config.contract import ColumnMapping, Contract
    from ndcg_spark.config.gain import GainMapping
    from ndcg_spark.errors import ContractError, EmptyIdealError, InputError, NdcgError, ValidationError
    from ndcg_spark.metrics.gain import gain
    from ndcg_spark.config.attributes import Attributes
    from ndcg_spark.scoring.score import score_requests
    from ndcg_spark.config.validation_spec import ValidationSpec
    from ndcg_spark.validation.accounting import RowAccounting
    from ndcg_spark.validation.validate import validate_inputs
    from ndcg_spark.comparison.guard import PoolMismatchError
    from ndcg_spark.comparison.paired import compare
    from ndcg_spark.comparison.pools import pool_summary
    from ndcg_spark.config.compare_spec import CompareSpec
    from ndcg_spark.config.guardrail_spec import GuardrailSpec
    from ndcg_spark.guardrails.table import guardrail_table
    from ndcg_spark.formats.trec import read_trec_qrels, read_trec_run
    from ndcg_spark.config.judging_spec import JudgingSpec
    from ndcg_spark.judging.plan import judge_next
    from ndcg_spark.judging.swings import judging_swings
    from ndcg_spark.config.agreement_spec import AgreementSpec
    from ndcg_spark.agreement.history import experiment_history
    from ndcg_spark.agreement.summary import agreement_summary


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ndcg_spark' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
