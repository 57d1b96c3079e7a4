"""The ``publishing:`` section of a job: how an attempt keeps its hold on a run (pure Python).

An attempt that holds a run rewrites its heartbeat every ``heartbeat_seconds`` while its stages
run; another attempt may take the run over once that heartbeat is older than
``stale_after_minutes`` (:mod:`ndcg_spark.publishing.lease`).

>>> spec = PublishingSpec.from_dict({"stale_after_minutes": 2, "heartbeat_seconds": 10})
>>> spec.stale_after, spec.heartbeat
(datetime.timedelta(seconds=120), datetime.timedelta(seconds=10))
>>> PublishingSpec.from_dict({"stale_after_minutes": 1, "heartbeat_seconds": 30})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: publishing.stale_after_minutes: must span at least 3 heartbeats (3 x publishing.heartbeat_seconds = 90 s), got 1 (60 s)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ndcg_spark.config.checks import require_mapping, require_number
from ndcg_spark.errors import ContractError

__all__ = ["DEFAULT_HEARTBEAT_SECONDS", "DEFAULT_STALE_AFTER_MINUTES", "PublishingSpec"]

#: how often a running attempt rewrites its heartbeat: a status read and a one-row write (a
#: second or less each), twice a minute
DEFAULT_HEARTBEAT_SECONDS = 30
#: how old a running attempt's heartbeat must be before another attempt may take the run over:
#: 20 heartbeats. A heartbeat is a one-task Spark job; under Spark's default FIFO scheduling it
#: waits for a free core behind the tasks a running stage has not started yet, so the threshold
#: covers a backlog of that length on a saturated cluster (docs/operations.md#one-night-one-writer)
DEFAULT_STALE_AFTER_MINUTES = 10
#: the fewest heartbeats ``stale_after`` must span: one late or failed write never makes a live
#: attempt look dead
MIN_BEATS_PER_STALE = 3


@dataclass(frozen=True)
class PublishingSpec:
    """The ``publishing:`` section of the job YAML:
    ``{stale_after_minutes: 10, heartbeat_seconds: 30}`` (both numbers > 0).

    Parameters
    ----------
    stale_after_minutes : float
        A ``running`` attempt whose heartbeat is older may be taken over by the next attempt.
    heartbeat_seconds : float
        How often the holder rewrites its heartbeat while its stages run; ``stale_after_minutes``
        must span at least 3 of them.
    """

    stale_after_minutes: float = DEFAULT_STALE_AFTER_MINUTES
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS

    def __post_init__(self) -> None:
        for name in ("stale_after_minutes", "heartbeat_seconds"):
            value = require_number(getattr(self, name), f"publishing.{name}")
            if value <= 0:
                raise ContractError(f"publishing.{name}", f"must be a number > 0, got {getattr(self, name)!r}")
        fewest = MIN_BEATS_PER_STALE * self.heartbeat_seconds
        if self.stale_after.total_seconds() < fewest:
            raise ContractError(
                "publishing.stale_after_minutes",
                f"must span at least {MIN_BEATS_PER_STALE} heartbeats ({MIN_BEATS_PER_STALE} x "
                f"publishing.heartbeat_seconds = {fewest:g} s), got {self.stale_after_minutes!r} "
                f"({self.stale_after.total_seconds():g} s)",
            )

    @classmethod
    def from_dict(cls, data: Any) -> PublishingSpec:
        """The spec of a YAML ``publishing:`` mapping; ``None`` (no section) gives the defaults."""
        return cls(**dict(require_mapping(data, "publishing", {"stale_after_minutes", "heartbeat_seconds"})))

    @property
    def stale_after(self) -> dt.timedelta:
        return dt.timedelta(minutes=self.stale_after_minutes)

    @property
    def heartbeat(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.heartbeat_seconds)
