"""The declared choices of stage 2: the ``aggregate:`` section of the job YAML (pure Python)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ndcg_spark.config.bootstrap import (
    DEFAULT_BUCKETS,
    DEFAULT_LEVEL,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MAX_REPLICATES,
    MIN_REPLICATES,
    bootstrap_fields,
    require_buckets,
    quantiles,
    require_level,
    require_replicates,
    require_seed,
)
from ndcg_spark.config.checks import require_int, require_mapping, validate_identifier
from ndcg_spark.errors import ContractError

__all__ = ["OVERALL", "OVERALL_VALUE", "AggregateSpec"]

#: ``slice_dimension`` / ``slice_value`` of the row that covers every request of its group (so
#: no slice column may be named ``overall``).
OVERALL = "overall"
OVERALL_VALUE = "all"

_KNOWN = frozenset({"slices", "min_eligible", "bootstrap", "default_weight"})
_BOOTSTRAP_KEYS = ("level", "replicates", "seed", "buckets")


@dataclass(frozen=True)
class AggregateSpec:
    """The declared choices of stage 2 (``aggregate:`` in the job YAML).

    Parameters
    ----------
    slices : slice dimensions to aggregate by, besides the overall slice; each must be a column
        of the per-request table (stage 1 carries ``attributes.slices``). In the YAML the
        default is every ``attributes.slices`` column.
    min_eligible : a slice with fewer eligible requests is still reported, flagged
        ``below_min_eligible``, and left out of the audit's worst-slice ranking.
    ci_level : two-sided confidence level of the intervals, e.g. 0.95.
    replicates : Poisson-bootstrap replicates (0: no interval; else at least 20).
    seed : the bootstrap seed; the same seed gives the same intervals.
    buckets : the resampling unit. ``0``: every request is drawn on its own (the plain request
        bootstrap; cost requests x replicates). ``B > 0``: within each slice cell the requests
        are hashed into ``B`` random groups and the groups are drawn (the random-group
        bootstrap; cost at most ``B`` x cells x replicates, whatever the number of requests).
        A cell with far fewer requests than ``B`` gets almost one request per group, so small
        slices are resampled request by request either way; a large slice gets ``B``
        independent units, ample for a percentile interval (see docs/statistics.md, *The resampling unit: random groups*).
    default_weight : weight of a per-request row whose ``weight`` is null; ``None`` makes a null
        weight an error. (Stage 1 already applies ``attributes.default_weight``, so this only
        matters for per-request tables built by hand.) A negative or NaN weight is always an error.

    Examples
    --------
    >>> AggregateSpec.from_dict({"bootstrap": {"level": 0.9, "replicates": 200}}, carried_slices=["rarity"])
    AggregateSpec(slices=('rarity',), min_eligible=30, ci_level=0.9, replicates=200, seed=0, buckets=1024, default_weight=None)
    >>> AggregateSpec.from_dict({"slices": ["region"]}, carried_slices=["rarity"])
    Traceback (most recent call last):
    ...
    ndcg_spark.errors.ContractError: aggregate.slices[0]: 'region' is not carried onto the per-request table; add it to attributes.slices (carried: rarity)
    """

    slices: tuple[str, ...] = ()
    min_eligible: int = 30
    ci_level: float = DEFAULT_LEVEL
    replicates: int = DEFAULT_REPLICATES
    seed: int = DEFAULT_SEED
    buckets: int = DEFAULT_BUCKETS
    default_weight: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "slices", _checked_slices(self.slices))
        require_int(self.min_eligible, "aggregate.min_eligible", minimum=1)
        object.__setattr__(self, "ci_level", require_level(self.ci_level, "aggregate.bootstrap.level"))
        require_replicates(self.replicates, "aggregate.bootstrap.replicates", minimum=MIN_REPLICATES,
                           maximum=MAX_REPLICATES, zero_means="no interval")
        require_seed(self.seed, "aggregate.bootstrap.seed")
        require_buckets(self.buckets, "aggregate.bootstrap.buckets")
        w = self.default_weight
        if w is not None:
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
                raise ContractError("aggregate.default_weight", f"must be a non-negative number or null, got {w!r}")
            object.__setattr__(self, "default_weight", float(w))

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any] | None,
        *,
        carried_slices: Sequence[str] | None = None,
        path: str = "aggregate",
    ) -> AggregateSpec:
        """Build from the ``aggregate:`` section of a job YAML.

        ``carried_slices`` are the slice columns stage 1 carries (``attributes.slices``): they are
        the default ``slices``, and a declared slice must be one of them.
        """
        data = require_mapping(data, path, _KNOWN)
        kwargs = bootstrap_fields(data.get("bootstrap"), f"{path}.bootstrap", _BOOTSTRAP_KEYS)
        if "slices" in data:
            slices = data["slices"] if data["slices"] is not None else []
            if not isinstance(slices, list):
                raise ContractError(f"{path}.slices", f"must be a list of column names, got {slices!r}")
            kwargs["slices"] = tuple(slices)
        elif carried_slices is not None:
            kwargs["slices"] = tuple(carried_slices)
        kwargs.update({key: data[key] for key in ("min_eligible", "default_weight") if key in data})
        spec = cls(**kwargs)
        if carried_slices is not None:
            for i, name in enumerate(spec.slices):
                if name not in carried_slices:
                    raise ContractError(
                        f"{path}.slices[{i}]",
                        f"{name!r} is not carried onto the per-request table; add it to attributes.slices "
                        f"(carried: {', '.join(carried_slices) or 'none'})",
                    )
        return spec

    def to_dict(self) -> dict[str, Any]:
        """The readable copy stamped into run metadata (the YAML's shape)."""
        return {
            "slices": list(self.slices),
            "min_eligible": self.min_eligible,
            "bootstrap": {"level": self.ci_level, "replicates": self.replicates, "seed": self.seed,
                          "buckets": self.buckets},
            "default_weight": self.default_weight,
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as compact JSON with sorted keys (the ``aggregate_spec`` of run metadata)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def quantiles(self) -> tuple[float, float]:
        """The lower and upper percentile of the bootstrap distribution, e.g. (0.025, 0.975)."""
        return quantiles(self.ci_level)


def _checked_slices(slices: Any) -> tuple[str, ...]:
    """Slice dimensions as a tuple of distinct identifiers, none named like the overall slice."""
    if isinstance(slices, (str, bytes)) or not isinstance(slices, Iterable):
        raise ContractError("aggregate.slices", f"must be a list of column names, got {slices!r}")
    slices = tuple(slices)
    for i, name in enumerate(slices):
        validate_identifier(name, f"aggregate.slices[{i}]")
        if name == OVERALL:
            raise ContractError(f"aggregate.slices[{i}]", f"{OVERALL!r} names the overall slice; rename the column")
        if name in slices[:i]:
            raise ContractError(f"aggregate.slices[{i}]", f"lists {name!r} twice")
    return slices
