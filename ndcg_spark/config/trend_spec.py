"""The ``trend:`` section of a job: which published runs a trend shows, and when a night is flagged.

>>> TrendSpec.from_dict({"last": 14})
TrendSpec(last=14, since=None, max_empty_ideal_shift=0.02)
>>> TrendSpec.from_dict({"max_empty_ideal_shift": 2})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: trend.max_empty_ideal_shift: must be a number from 0 to 1 (a share), got 2
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ndcg_spark.config.checks import require_int, require_mapping, require_number, require_text
from ndcg_spark.errors import ContractError

__all__ = ["TrendSpec"]


@dataclass(frozen=True)
class TrendSpec:
    """The ``trend:`` section of the job YAML: ``{last: 14, since: "2026-11-01", max_empty_ideal_shift: 0.02}``.

    Parameters
    ----------
    last : int, optional
        Show the last ``last`` published runs (by run id; the default run id is the UTC date, so
        run-id order is night order). None: every run.
    since : str, optional
        Show the runs whose run id is ``>= since`` (e.g. a date ``2026-11-01``).
    max_empty_ideal_shift : float
        A night whose share of empty-ideal requests (no positive grade: no-answer traffic) moved by
        more than this (absolute, e.g. 0.02 = 2 points) from the previous comparable night is
        flagged, so a change in traffic is not read as a ranking change. Default 0.02.
    """

    last: int | None = None
    since: str | None = None
    max_empty_ideal_shift: float = 0.02

    def __post_init__(self) -> None:
        if self.last is not None:
            require_int(self.last, "trend.last", minimum=1)
        if self.since is not None:
            require_text(self.since, "trend.since")
        shift = require_number(self.max_empty_ideal_shift, "trend.max_empty_ideal_shift")
        if not 0 <= shift <= 1:
            raise ContractError(
                "trend.max_empty_ideal_shift", f"must be a number from 0 to 1 (a share), got {self.max_empty_ideal_shift!r}"
            )

    @classmethod
    def from_dict(cls, data: Any) -> TrendSpec:
        """The spec of a YAML ``trend:`` mapping; ``None`` (no section) gives the defaults."""
        section = dict(require_mapping(data, "trend", {"last", "since", "max_empty_ideal_shift"}))
        if section.get("since") is not None:
            section["since"] = str(section["since"])  # YAML reads 2026-11-01 as a date
        return cls(**section)

    def narrowed(self, last: int | None = None, since: str | None = None) -> TrendSpec:
        """This spec with the command line's ``--last`` / ``--since`` in place of the YAML's."""
        return replace(self, last=self.last if last is None else last, since=self.since if since is None else since)
