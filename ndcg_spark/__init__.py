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

__version__ = "0.1.0"

# public name -> module that defines it (imported lazily, PEP 562)
_EXPORTS = {
    "Contract": "ndcg_spark.contract",
    "GainMapping": "ndcg_spark.contract",
    "ColumnMapping": "ndcg_spark.contract",
    "NdcgError": "ndcg_spark.errors",
    "ContractError": "ndcg_spark.errors",
    "InputError": "ndcg_spark.errors",
    "EmptyIdealError": "ndcg_spark.errors",
    "score_requests": "ndcg_spark.scoring",
    "gain": "ndcg_spark.scoring",
    "Attributes": "ndcg_spark.scoring",
    "JobConfig": "ndcg_spark.config",
    "AggregateSpec": "ndcg_spark.aggregate",
    "aggregate": "ndcg_spark.aggregate",
    "audit": "ndcg_spark.aggregate",
    "run_metadata": "ndcg_spark.aggregate",
    "ValidationError": "ndcg_spark.errors",
    "ValidationSpec": "ndcg_spark.validation",
    "validate_inputs": "ndcg_spark.validation",
    "RowAccounting": "ndcg_spark.validation",
    "compare": "ndcg_spark.comparison",
    "pool_summary": "ndcg_spark.comparison",
    "CompareSpec": "ndcg_spark.comparison",
    "PoolMismatchError": "ndcg_spark.comparison",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from ndcg_spark.aggregate import AggregateSpec, aggregate, audit, run_metadata
    from ndcg_spark.config import JobConfig
    from ndcg_spark.contract import ColumnMapping, Contract, GainMapping
    from ndcg_spark.errors import ContractError, EmptyIdealError, InputError, NdcgError, ValidationError
    from ndcg_spark.scoring import Attributes, gain, score_requests
    from ndcg_spark.validation import RowAccounting, ValidationSpec, validate_inputs
    from ndcg_spark.comparison import CompareSpec, PoolMismatchError, compare, pool_summary


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ndcg_spark' has no attribute {name!r}")
    loaded = import_module(module)
    # A callable module named like its function (``ndcg_spark.aggregate``) is returned itself, so
    # the name means the same thing whether or not the submodule was imported first.
    value = loaded if module == f"{__name__}.{name}" and callable(loaded) else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
