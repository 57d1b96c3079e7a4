"""The ``report:`` section of a job: how the HTML report draws its charts (pure Python).

>>> ReportSpec.from_dict({"bins": 20})
ReportSpec(bins=20, k=None)
>>> ReportSpec.from_dict({"bins": 1})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: report.bins: must be an integer from 2 to 100, got 1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ndcg_spark.config.checks import is_int, require_mapping
from ndcg_spark.errors import ContractError

__all__ = ["DEFAULT_BINS", "ReportSpec"]

#: buckets of the per-request NDCG histogram: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0]
DEFAULT_BINS = 10


@dataclass(frozen=True)
class ReportSpec:
    """The ``report:`` section of the job YAML: ``{bins: 10, k: <a cutoff>}``.

    Parameters
    ----------
    bins : int
        Buckets of the per-request NDCG histogram, from 2 to 100.
    k : int, optional
        The cutoff the slice charts are drawn at (default: the largest); tables list every K.
    """

    bins: int = DEFAULT_BINS
    k: int | None = None

    def __post_init__(self) -> None:
        if not is_int(self.bins) or not 2 <= self.bins <= 100:
            raise ContractError("report.bins", f"must be an integer from 2 to 100, got {self.bins!r}")
        if self.k is not None and (not is_int(self.k) or self.k < 1):
            raise ContractError("report.k", f"must be an integer >= 1 (one of contract.k), got {self.k!r}")

    @classmethod
    def from_dict(cls, data: Any) -> ReportSpec:
        """The spec of a YAML ``report:`` mapping; ``None`` (no section) gives the defaults."""
        return cls(**dict(require_mapping(data, "report", {"bins", "k"})))
