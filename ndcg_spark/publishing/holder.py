"""Who holds a run, and whether the next attempt may take it over (:func:`~ndcg_spark.publishing.lease.acquire`).

The holder is the attempt a ``running`` row of the run-status table names; its last heartbeat
is the later of that row's ``updated_at`` and its own row's in the run-attempts table (every beat
rewrites the latter). It may be taken over when it ran on this host and its process no longer
exists, when that heartbeat is older than ``stale_after``, or when the user says so
(``--take-over``); else it is alive, and the next attempt waits for it or is refused.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

from pyspark.sql import SparkSession

from ndcg_spark.config.publishing_spec import PublishingSpec
from ndcg_spark.errors import RunInProgress
from ndcg_spark.publishing import attempts as record
from ndcg_spark.publishing.attempts import utc_now
from ndcg_spark.config.job import Source
from ndcg_spark.publishing.status import RUNNING, describe_attempt, duration, status_row, when

__all__ = ["last_beat", "wait_until_free"]

logger = logging.getLogger(__name__)


def wait_until_free(
    spark: SparkSession, status: Source, run_id: str, spec: PublishingSpec, take_over: bool,
    wait: dt.timedelta | None, attempts: Source | None,
) -> tuple[float, dict[str, Any] | None, dict[str, Any] | None, str]:
    """Read the row until no live attempt holds the run (or ``wait`` is over: RunInProgress).
    Returns when the last read began, the row, its holder's row in ``attempts`` (None: none) and
    why that holder may be taken over ('' when the run is free)."""
    deadline = time.monotonic() + (wait.total_seconds() if wait else 0.0)
    waiting = False
    while True:
        began = time.monotonic()
        row = status_row(spark, status, run_id)
        holder = _holder_record(spark, row, attempts)
        why = _takeover_reason(row, holder, spec, take_over)
        if why is not None:
            return began, row, holder, why
        left = deadline - time.monotonic()
        if left <= 0:
            raise RunInProgress(_held(row, holder, status, spec, wait))
        if not waiting:
            logger.info("run %s: waiting up to %s for %s to end or go stale", run_id, duration(wait),
                        describe_attempt(row))
            waiting = True
        time.sleep(min(spec.heartbeat_seconds, left))


def last_beat(row: dict[str, Any], holder: dict[str, Any] | None) -> dt.datetime | None:
    """The holder's last heartbeat: its own row's (every beat rewrites it), else the status row's."""
    beats = [t for t in (row["updated_at"], holder["updated_at"] if holder else None) if t is not None]
    return max(beats, default=None)


def _takeover_reason(
    row: dict[str, Any] | None, holder: dict[str, Any] | None, spec: PublishingSpec, take_over: bool,
) -> str | None:
    """'' when the run is free, why its holder may be taken over, or None: a live attempt holds it."""
    if row is None or row["status"] != RUNNING:
        return ""
    if holder is not None and record.process_gone(holder["host"], holder["pid"]):  # provably dead
        return f"its process {holder['pid']} on {holder['host']} no longer exists"
    beat = last_beat(row, holder)
    if beat is not None and utc_now() - beat > spec.stale_after:
        return f"its last heartbeat was {duration(utc_now() - beat)} old (stale after {duration(spec.stale_after)})"
    return "--take-over" if take_over else None


def _holder_record(spark: SparkSession, row: dict[str, Any] | None, attempts: Source | None) -> dict[str, Any] | None:
    """The row of the attempt a ``running`` status row names, in ``attempts`` (None: none there)."""
    if attempts is None or row is None or row["status"] != RUNNING or not row.get("attempt_id"):
        return None
    return record.attempt_row(spark, attempts, row["run_id"], row["attempt_id"])


def _held(row: dict[str, Any], holder: dict[str, Any] | None, status: Source, spec: PublishingSpec,
          wait: dt.timedelta | None) -> str:
    waited = f" waited {duration(wait)} and" if wait else ""
    return (
        f"run {row['run_id']}: another attempt is running it: {describe_attempt(row)}, last heartbeat "
        f"{when(last_beat(row, holder))} ({status.describe()}). This attempt{waited} wrote nothing. Wait for that one "
        f"to end (--wait MINUTES waits for it); if it is dead (its driver was killed), take over with --take-over, or "
        f"wait until its heartbeat is older than publishing.stale_after_minutes ({spec.stale_after_minutes:g})."
    )
