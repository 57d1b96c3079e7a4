"""The resampling fields every stage spec shares (``bootstrap: {level, replicates, seed, buckets}``
and the comparison's ``permutations``): read and checked once, under the caller's dotted path.

>>> bootstrap_fields({"level": 0.9, "seed": 7}, "aggregate.bootstrap", ("level", "replicates", "seed"))
{'ci_level': 0.9, 'seed': 7}
>>> require_level(1.0, "compare.bootstrap.level")
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: compare.bootstrap.level: must be a number strictly between 0 and 1, got 1.0
>>> quantiles(0.9)
(0.04999999999999999, 0.95)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.config.checks import is_int
from ndcg_spark.errors import ContractError

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_LEVEL",
    "DEFAULT_PERMUTATIONS",
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "MAX_BUCKETS",
    "MAX_REPLICATES",
    "MIN_BUCKETS",
    "MIN_PERMUTATIONS",
    "MIN_REPLICATES",
    "bootstrap_fields",
    "quantiles",
    "require_buckets",
    "require_level",
    "require_replicates",
    "require_seed",
]

#: the defaults of every ``bootstrap:`` section (the aggregates', the comparison's, the guardrails'):
#: a 95% interval of 1000 replicates, seed 0, over 1024 random groups per slice cell where the stage
#: resamples groups; and the comparison's 1000 sign flips
DEFAULT_LEVEL, DEFAULT_REPLICATES, DEFAULT_SEED, DEFAULT_BUCKETS = 0.95, 1000, 0, 1024
DEFAULT_PERMUTATIONS = 1000
MAX_REPLICATES = 100_000
#: fewer replicates than this make a poor percentile interval
MIN_REPLICATES = 20
#: with 19 sign flips the smallest reportable p-value is 1 / 20 = 0.05
MIN_PERMUTATIONS = 19
#: fewer random groups than this would leave too few units for a percentile interval
MIN_BUCKETS = 16
MAX_BUCKETS = 1 << 20

#: YAML key of the ``bootstrap:`` section -> field name on the spec
_FIELDS = {"level": "ci_level", "replicates": "replicates", "seed": "seed", "buckets": "buckets"}


def bootstrap_fields(section: Any, path: str, keys: Sequence[str]) -> dict[str, Any]:
    """The spec fields given in a ``bootstrap:`` section whose known keys are ``keys``.

    ``None`` (or an empty section) gives no fields; a key outside ``keys`` or a section that is
    not a mapping raises :class:`~ndcg_spark.errors.ContractError` under ``path``.
    """
    section = section or {}
    if not isinstance(section, Mapping):
        raise ContractError(path, f"must be a mapping ({', '.join(keys)}), got {section!r}")
    for key in section:
        if key not in keys:
            raise ContractError(f"{path}.{key}", f"is not a known field; known: {', '.join(sorted(keys))}")
    return {_FIELDS[key]: section[key] for key in keys if key in section}


def require_level(value: Any, path: str) -> float:
    """A two-sided confidence level strictly between 0 and 1, as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise ContractError(path, f"must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def require_replicates(value: Any, path: str, *, minimum: int, maximum: int, zero_means: str) -> int:
    """0 (``zero_means``: what a run without replicates does) or an integer in ``[minimum, maximum]``."""
    if not is_int(value) or not (value == 0 or minimum <= value <= maximum):
        raise ContractError(
            path, f"must be 0 ({zero_means}) or an integer from {minimum} to {maximum}, got {value!r}"
        )
    return value


def require_buckets(value: Any, path: str) -> int:
    """The random groups per slice cell of a bootstrap: 0 (single requests) or an integer in
    ``[MIN_BUCKETS, MAX_BUCKETS]``."""
    return require_replicates(value, path, minimum=MIN_BUCKETS, maximum=MAX_BUCKETS,
                              zero_means="resample single requests")


def require_seed(value: Any, path: str) -> int:
    """A seed that fits a Spark ``bigint``."""
    if not is_int(value) or not -(2**63) <= value < 2**63:
        raise ContractError(path, f"must be a 64-bit integer, got {value!r}")
    return value


def quantiles(level: float) -> tuple[float, float]:
    """The lower and upper percentile of a two-sided ``level`` interval, e.g. (0.025, 0.975)."""
    tail = (1.0 - level) / 2.0
    return tail, 1.0 - tail
