"""The request attributes a run carries onto the per-request table: traffic weight and slice columns.

Pure Python, below both stage 1 (which joins them on: :func:`ndcg_spark.scoring.attributes.attach_attributes`)
and validation (which checks them: :mod:`ndcg_spark.validation.attributes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ndcg_spark.config.checks import validate_identifier
from ndcg_spark.config.per_request import RESERVED_COLUMNS
from ndcg_spark.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Attributes:
    """Per-request attributes carried onto the per-request table.

    Parameters
    ----------
    table : a DataFrame keyed by the request id column (joined on request id), or ``None`` to take
        the columns from the candidates (their minimum per request, so the choice is deterministic).
    weight : name of the traffic-weight column, or ``None`` for weight 1.0 everywhere.
    default_weight : weight of a request with no weight value; ``None`` makes a missing weight an error.
    slices : slice column names to carry (e.g. ``equipment_rarity``).
    """

    table: DataFrame | None = None
    weight: str | None = None
    default_weight: float | None = 1.0
    slices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "slices", tuple(self.slices))
        if self.weight is not None:
            validate_identifier(self.weight, "attributes.weight")
        for i, s in enumerate(self.slices):
            validate_identifier(s, f"attributes.slices[{i}]")
            if s in RESERVED_COLUMNS:
                raise InputError(f"attributes.slices[{i}]: {s!r} collides with a per-request table column")


__all__ = ["Attributes"]
