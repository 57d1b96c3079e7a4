"""Every attempt at a run on the record: the run-attempts table.

Beside the run-status table's one row per run (the lease, :mod:`ndcg_spark.publishing.lease`), every
attempt that held a run keeps a row of its own here: its id, host, process id, Spark application,
start and end, how it ended (``outcome``) and why, and the last step it reached. The table is
partitioned by ``run_id`` and ``attempt_id``; an attempt writes only its own partition (when it
takes the run, as it reaches each step, when it ends), so no attempt ever rewrites another's row
-- except that the attempt taking over from a dead one records how that one ended
(``abandoned``), which the other, were it alive after all, overwrites with ``lost`` at its next
check. An attempt refused at the start (another one holds the run) wrote nothing and has no row.

Outcomes: ``running`` (still running, or it died without a word: a SIGKILL, a lost node, until
an attempt takes over), ``complete`` (it published the run), ``failed`` (a stage failed: the
reason is the paragraph the command printed), ``interrupted`` (a signal ended it: ``terminated by
SIGTERM``), ``lost`` (another attempt took the run over; it stopped without publishing),
``abandoned`` (a later attempt took the run over from it: its heartbeat was stale, its process
was gone, or ``--take-over``).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession

from ndcg_spark.config.schemas import RUN_ATTEMPTS
from ndcg_spark.errors import missing_file
from ndcg_spark.config.job import Source
from ndcg_spark.storage.io import read_with_schema, read_written, write_run_partitioned
from ndcg_spark.compat import application_id
from ndcg_spark.version import __version__

__all__ = ["OUTCOMES", "RUN_ATTEMPTS_SCHEMA", "Attempt", "AttemptRecord", "attempt_row", "process_gone",
           "read_attempts", "recent_attempts", "record_attempt", "run_attempts"]

#: the run-attempts table as Spark DDL (declared in :data:`ndcg_spark.config.schemas.RUN_ATTEMPTS`)
RUN_ATTEMPTS_SCHEMA = RUN_ATTEMPTS.ddl
RUNNING, COMPLETE, FAILED, INTERRUPTED, LOST, ABANDONED = (
    "running", "complete", "failed", "interrupted", "lost", "abandoned")
OUTCOMES = (RUNNING, COMPLETE, FAILED, INTERRUPTED, LOST, ABANDONED)
_COLUMNS = tuple(part.split()[0] for part in RUN_ATTEMPTS_SCHEMA.split(","))
_PARTITIONS = ("run_id", "attempt_id")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


T = TypeVar("T")


def read_again_if_rewritten(read: Callable[[], T]) -> T:
    """``read()`` a small table another process rewrites now and then (an attempt's row, a run's
    status row): a file listed and then replaced under the read (gone, or its footer unreadable)
    makes it read again, up to 10 times, half a second apart (a loaded driver's read can span a
    rewrite more than once; the tests beat every second)."""
    for tries_left in range(9, -1, -1):
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - only a rewritten file is read again
            rewritten = missing_file(exc) is not None or "CANNOT_READ_FILE_FOOTER" in str(exc)
            if tries_left == 0 or not rewritten:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")  # pragma: no cover


def utc(value: Any) -> dt.datetime | None:
    """A collected timestamp (naive, in this process's local time, as pyspark returns it; a CSV
    table's text) as an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.astimezone(dt.timezone.utc)


@dataclass(frozen=True)
class Attempt:
    """One attempt at a run: its id, the command, when and where it started (host, process id,
    Spark application)."""

    run_id: str
    attempt_id: str
    started_at: dt.datetime
    host: str
    app_id: str | None
    pid: int | None = None
    command: str | None = None

    @classmethod
    def start(cls, spark: SparkSession, run_id: str, command: str | None = None) -> Attempt:
        return cls(run_id, uuid.uuid4().hex[:12], utc_now(), socket.gethostname(), application_id(spark),
                   os.getpid(), command)


@dataclass(frozen=True)
class AttemptRecord:
    """An attempt's row: the attempt, and how far it got."""

    attempt: Attempt
    outcome: str = RUNNING
    last_step: str | None = None
    reason: str | None = None
    ended_at: dt.datetime | None = None

    def ended(self, outcome: str, reason: str | None = None, at: dt.datetime | None = None) -> AttemptRecord:
        return replace(self, outcome=outcome, reason=reason, ended_at=at or utc_now())

    def row(self) -> tuple:
        a = self.attempt
        return (a.run_id, a.attempt_id, a.command, a.host, a.pid, a.app_id, a.started_at, self.ended_at,
                self.outcome, self.reason, self.last_step, utc_now(), __version__)


def record_attempt(spark: SparkSession, target: Source, record: AttemptRecord) -> None:
    """Write ``record`` as its attempt's row (its own ``run_id``/``attempt_id`` partition, replaced)."""
    row = spark.createDataFrame([record.row()], RUN_ATTEMPTS_SCHEMA)
    write_run_partitioned(row.coalesce(1), target, partition_by=_PARTITIONS)


def run_attempts(spark: SparkSession, target: Source, run_id: str | None = None) -> list[dict[str, Any]]:
    """The rows of every attempt at ``run_id`` (None: at every run), oldest first; none: ``[]``."""
    def read() -> list:  # listed again on each try: the listing is the DataFrame's
        df = read_attempts(spark, target, run_id)
        return [] if df is None else df.collect()

    found = [complete_row(r.asDict(), _COLUMNS) for r in read_again_if_rewritten(read)]
    return sorted(found, key=lambda r: (r["started_at"] or _EPOCH, r["attempt_id"] or ""))


def read_attempts(spark: SparkSession, target: Source, run_id: str | None = None) -> DataFrame | None:
    """The table's rows (of ``run_id``; None: every run), or None when nothing was written yet. A
    path table is read with its schema given, so its partition values stay the strings they were
    written as (an attempt id of 12 digits is no number) and no job infers it."""
    if target.table_name is not None:
        return read_written(spark, target, run_id, merge_schema=True)
    return read_with_schema(spark, target, RUN_ATTEMPTS_SCHEMA, run_id)


def attempt_row(spark: SparkSession, target: Source, run_id: str, attempt_id: str) -> dict[str, Any] | None:
    """The row of one attempt, or None when it has none (an older ndcg-spark, a row marked by hand)."""
    return next((r for r in run_attempts(spark, target, run_id) if r["attempt_id"] == attempt_id), None)


def record_of(row: dict[str, Any]) -> AttemptRecord:
    """An attempt's row as a record (to write it again with another outcome)."""
    attempt = Attempt(row["run_id"], row["attempt_id"], row["started_at"], row["host"], row["app_id"], row["pid"],
                      row["command"])
    return AttemptRecord(attempt, row["outcome"], row["last_step"], row["reason"], row["ended_at"])


def recent_attempts(spark: SparkSession, target: Source, *, last: int = 10) -> list[dict[str, Any]]:
    """The attempts of the ``last`` runs whose attempts were written most recently: the newest run
    first, each run's attempts in the order they started."""
    rows = run_attempts(spark, target)
    latest: dict[str, dt.datetime] = {}
    for r in rows:
        latest[r["run_id"]] = max(latest.get(r["run_id"], _EPOCH), r["updated_at"] or _EPOCH)
    runs = sorted(latest, key=lambda run: (latest[run], run), reverse=True)[:last]
    order = {run: i for i, run in enumerate(runs)}
    return sorted((r for r in rows if r["run_id"] in order), key=lambda r: order[r["run_id"]])  # stable: by start


def process_gone(host: str | None, pid: int | None) -> bool:
    """Whether the process ``pid`` on ``host`` provably no longer exists: it ran on this host and
    no process has that id now. Unknown (another host, no pid recorded) is not gone, nor is an id
    some process has (a zombie not yet reaped, the id reused: then the heartbeat's age decides)."""
    if host != socket.gethostname() or pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process
        return False
    return False


_EPOCH = dt.datetime.min.replace(tzinfo=dt.timezone.utc)


def complete_row(row: dict[str, Any], columns) -> dict[str, Any]:
    """A collected row of the run-status or run-attempts table with every one of its ``columns``
    (those an older table lacks are None), its timestamps aware, in UTC."""
    out = {name: row.get(name) for name in columns}
    for name in ("started_at", "ended_at", "updated_at"):
        out[name] = utc(out[name])
    return out
