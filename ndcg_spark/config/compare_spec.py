"""What to compare and how: the ``compare:`` section of the job YAML (pure Python, no pyspark).

>>> CompareSpec.from_dict({"baseline": "bm25", "candidate": {"system": "dense", "pool_version": "p2"}}).candidate
Side(system='dense', pool_version='p2')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ndcg_spark.config.bootstrap import (
    DEFAULT_BUCKETS,
    DEFAULT_LEVEL,
    DEFAULT_PERMUTATIONS,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MAX_REPLICATES,
    MIN_PERMUTATIONS,
    MIN_REPLICATES,
    bootstrap_fields,
    require_buckets,
    require_level,
    require_replicates,
    require_seed,
)
from ndcg_spark.config.checks import (
    require_choice,
    require_int,
    require_mapping,
    require_number,
    require_text,
    validate_identifier,
)
from ndcg_spark.errors import ContractError

__all__ = ["KINDS", "CompareSpec", "Side"]

#: ``compare.kind``: what the comparison must be (``auto``: whichever the pools say, labelled).
KINDS = ("reranker", "end_to_end", "auto")
_KNOWN_FIELDS = frozenset({"baseline", "candidate", "kind", "tie_tolerance", "min_paired", "bootstrap", "permutations",
                           "slices"})


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a system, optionally pinned to one pool version."""

    system: str
    pool_version: str | None = None

    @classmethod
    def parse(cls, value: Any, path: str) -> Side:
        """``"bm25"`` or ``{system: bm25, pool_version: pool-2026-11-28}``."""
        if isinstance(value, Side):
            return value
        if isinstance(value, str):
            return cls(require_text(value, path))
        if isinstance(value, Mapping):
            require_mapping(value, path, {"system", "pool_version"})
            if "system" not in value:
                raise ContractError(f"{path}.system", "is required")
            pool = value.get("pool_version")
            return cls(
                require_text(value["system"], f"{path}.system"),
                None if pool is None else require_text(pool, f"{path}.pool_version"),
            )
        raise ContractError(path, f"must be a system name or {{system: …, pool_version: …}}, got {value!r}")

    def describe(self) -> str:
        return self.system if self.pool_version is None else f"{self.system} (pool {self.pool_version})"

    def to_yaml(self) -> Any:
        """The YAML shape: the system name alone, or ``{system, pool_version}``."""
        return self.system if self.pool_version is None else {"system": self.system, "pool_version": self.pool_version}


@dataclass(frozen=True)
class CompareSpec:
    """What to compare and how: the ``compare:`` section of the job YAML.

    Parameters
    ----------
    baseline, candidate : the two sides (:class:`Side`, or a system name); deltas are
        ``candidate − baseline``.
    kind : ``reranker`` (default: the two must have ranked the same candidate pool, else
        :class:`~ndcg_spark.comparison.guard.PoolMismatchError`), ``end_to_end`` (opt in: NDCG
        against one shared ideal from the judgments, with pool recall) or ``auto``
        (whichever the pools say, labelled).
    tie_tolerance : ``|delta| <= tie_tolerance`` is a tie (default 1e-9: float noise only).
    min_paired : slices with fewer paired requests are reported and flagged ``below_min_paired``.
    ci_level : two-sided level of the percentile bootstrap interval (YAML ``bootstrap.level``).
    replicates : paired Poisson-bootstrap replicates (YAML ``bootstrap.replicates``; 0: no interval,
        else at least 20).
    permutations : sign-flip replicates of the randomization test (0: no p-value, else at least
        19); the smallest reportable p-value is ``1 / (permutations + 1)``.
    seed : seeds both (YAML ``bootstrap.seed``); the same seed and data give the same numbers.
    slices : slice columns of the per-request table to break the comparison down by; ``None``
        (default) takes every slice column present.
    buckets : the resampling unit of both the bootstrap and the sign flips (YAML
        ``bootstrap.buckets``). ``0``: every paired request on its own; else (default 1024, at
        least 16) the requests of each slice cell hashed into that many random groups, as in the
        aggregates (docs/statistics.md, "The resampling unit: random groups").

    Examples
    --------
    >>> CompareSpec.from_dict({"baseline": "bm25", "candidate": "hybrid", "bootstrap": {"replicates": 200}}).replicates
    200
    >>> CompareSpec.from_dict({"baseline": "bm25", "candidate": "hybrid", "kind": "rerank"})
    Traceback (most recent call last):
    ...
    ndcg_spark.errors.ContractError: compare.kind: must be one of reranker, end_to_end, auto; got 'rerank'
    """

    baseline: Side
    candidate: Side
    kind: str = "reranker"
    tie_tolerance: float = 1e-9
    min_paired: int = 30
    ci_level: float = DEFAULT_LEVEL
    replicates: int = DEFAULT_REPLICATES
    permutations: int = DEFAULT_PERMUTATIONS
    seed: int = DEFAULT_SEED
    slices: tuple[str, ...] | None = None
    buckets: int = DEFAULT_BUCKETS

    def __post_init__(self) -> None:
        object.__setattr__(self, "baseline", Side.parse(self.baseline, "compare.baseline"))
        object.__setattr__(self, "candidate", Side.parse(self.candidate, "compare.candidate"))
        if self.baseline == self.candidate:
            raise ContractError(
                "compare.candidate", f"is the same side as compare.baseline ({self.baseline.describe()})"
            )
        require_choice(self.kind, KINDS, "compare.kind")
        tolerance = require_number(self.tie_tolerance, "compare.tie_tolerance")
        if tolerance < 0:
            raise ContractError("compare.tie_tolerance", f"must be a non-negative number, got {self.tie_tolerance!r}")
        object.__setattr__(self, "tie_tolerance", tolerance)
        require_int(self.min_paired, "compare.min_paired", minimum=0)
        self._check_resampling()
        if self.slices is not None:
            if isinstance(self.slices, (str, bytes)) or not isinstance(self.slices, Sequence):
                raise ContractError("compare.slices", f"must be a list of column names, got {self.slices!r}")
            object.__setattr__(
                self, "slices", tuple(validate_identifier(s, f"compare.slices[{i}]") for i, s in enumerate(self.slices))
            )

    def _check_resampling(self) -> None:
        """The bootstrap level, the replicate counts and the seed."""
        level = require_level(require_number(self.ci_level, "compare.bootstrap.level"), "compare.bootstrap.level")
        object.__setattr__(self, "ci_level", level)
        require_replicates(self.replicates, "compare.bootstrap.replicates", minimum=MIN_REPLICATES,
                           maximum=MAX_REPLICATES, zero_means="none")
        require_replicates(self.permutations, "compare.permutations", minimum=MIN_PERMUTATIONS,
                           maximum=MAX_REPLICATES, zero_means="none")
        require_seed(self.seed, "compare.bootstrap.seed")
        require_buckets(self.buckets, "compare.bootstrap.buckets")

    @classmethod
    def from_dict(cls, data: Any, path: str = "compare") -> CompareSpec:
        """Build from the ``compare:`` section (a mapping); every error names its dotted path."""
        if data is None:
            raise ContractError(path, "is required to compare: at least {baseline: …, candidate: …}")
        require_mapping(data, path, _KNOWN_FIELDS)
        for key in ("baseline", "candidate"):
            if key not in data:
                raise ContractError(f"{path}.{key}", "is required (a system name)")
        resampling = bootstrap_fields(data.get("bootstrap"), f"{path}.bootstrap",
                                      ("level", "replicates", "seed", "buckets"))
        kwargs = {k: data[k] for k in ("baseline", "candidate", "kind", "tie_tolerance", "min_paired", "permutations")
                  if k in data}
        if "slices" in data:
            slices = data["slices"]
            if not isinstance(slices, list):
                raise ContractError(f"{path}.slices", f"must be a list of column names, got {slices!r}")
            kwargs["slices"] = tuple(slices)
        return cls(**kwargs, **resampling)

    def to_dict(self) -> dict[str, Any]:
        """The readable copy, in the YAML's shape."""
        return {
            "baseline": self.baseline.to_yaml(),
            "candidate": self.candidate.to_yaml(),
            "kind": self.kind,
            "tie_tolerance": self.tie_tolerance,
            "min_paired": self.min_paired,
            "bootstrap": {"level": self.ci_level, "replicates": self.replicates, "seed": self.seed,
                          "buckets": self.buckets},
            "permutations": self.permutations,
            "slices": None if self.slices is None else list(self.slices),
        }
