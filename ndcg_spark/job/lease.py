"""Run attempts and their lease: one night, one writer.

Every invocation of a command that writes a run's stages (``score``, ``run``, ``aggregate``) is an
*attempt*, with its own id. The run's row in the run-status table (:mod:`ndcg_spark.job.publish`;
one row per run id, in the run's own partition) is its lease:

- :func:`acquire` reads the row first. When it says ``running`` for another attempt whose last
  heartbeat (``updated_at``) is more recent than ``stale_after`` ago, it refuses at once
  (:class:`~ndcg_spark.errors.RunInProgress`: that attempt's id, when and where it started, its
  Spark application) unless ``take_over``. Otherwise it writes ``running`` with a new attempt id,
  then reads the row back: another attempt's id there means two attempts passed the check
  together and the other wrote later, so this one stops before writing any data
  (:class:`~ndcg_spark.errors.LeaseLost`).
- :meth:`Lease.renew`, at every step boundary: the row must still carry this attempt's id (else
  LeaseLost: stop without publishing); ``running`` is rewritten with a new ``updated_at`` (the
  heartbeat) once a tenth of ``stale_after`` has passed since the last one.
- :meth:`Lease.publish`: the same check, then ``complete``; :meth:`Lease.fail`: ``failed`` with the
  one-paragraph reason, only while this attempt holds the run.

The storage offers no compare-and-swap (a path table's partition, a catalog table's partition):
each check is a read followed by a write, so two attempts that both read before either wrote
(within the second or so a status write takes) both go on; the later ``running`` write wins, and
the other attempt finds another id at its next check and stops without publishing -- after any
data write it had started. docs/operations.md#one-night-one-writer says what that means.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ndcg_spark.errors import LeaseLost, OutputChanged, RunInProgress, missing_file, one_paragraph
from ndcg_spark.job.config import DEFAULT_STALE_AFTER_MINUTES, Source
from ndcg_spark.job.io import read_written
from ndcg_spark.job.publish import COMPLETE, FAILED, RUN_STATUS_SCHEMA, RUNNING, mark_run
from ndcg_spark.job.session import application_id

__all__ = ["Attempt", "Lease", "acquire", "recent_runs", "status_row"]

logger = logging.getLogger(__name__)

DEFAULT_STALE_AFTER = dt.timedelta(minutes=DEFAULT_STALE_AFTER_MINUTES)
#: a holder rewrites its heartbeat once this share of ``stale_after`` has passed since the last
HEARTBEAT_SHARE = 0.1
#: after writing ``running``, an attempt waits this share of the time its check and write took
#: (at most MAX_SETTLE_SECONDS) before reading the row back: see :func:`acquire`
SETTLE_SHARE = 1.5
MAX_SETTLE_SECONDS = 10.0
STATUS_COLUMNS = tuple(part.split()[0] for part in RUN_STATUS_SCHEMA.split(","))


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class Attempt:
    """One attempt at a run: its id, when and where it started (host, Spark application)."""

    run_id: str
    attempt_id: str
    started_at: dt.datetime
    host: str
    app_id: str | None

    @classmethod
    def start(cls, spark: SparkSession, run_id: str) -> Attempt:
        return cls(run_id, uuid.uuid4().hex[:12], utc_now(), socket.gethostname(), application_id(spark))


def status_row(spark: SparkSession, status: Source, run_id: str) -> dict[str, Any] | None:
    """The run's status row as a dict of every column of ``RUN_STATUS_SCHEMA`` (those an older
    table lacks are None; timestamps aware, UTC), or None when the run has none.

    A concurrent write of the same row can delete the file being read: read again, up to 3 times.
    """
    for tries_left in (2, 1, 0):
        try:
            rows = _read_row(spark, status, run_id)
            break
        except Exception as exc:  # noqa: BLE001 - only a vanished file is retried
            if tries_left == 0 or missing_file(exc) is None:
                raise
            time.sleep(0.5)
    if not rows:
        return None
    found = [_complete({**r.asDict(), "run_id": run_id}) for r in rows]
    return max(found, key=lambda r: r["updated_at"] or dt.datetime.min.replace(tzinfo=dt.timezone.utc))


def _read_row(spark: SparkSession, status: Source, run_id: str) -> list:
    """The rows of the run's partition: a path table's ``run_id=…`` folder alone (no other run's
    file is listed, and its own file's columns are the row's), a table's rows of the run."""
    if status.table_name is not None:
        rows = read_written(spark, status, run_id)
        return [] if rows is None else rows.collect()
    folder = f"{status.path.rstrip('/')}/run_id={run_id}"
    try:
        return spark.read.option("header", True).format(status.format).load(folder).collect()
    except AnalysisException as exc:
        if any(word in str(exc) for word in ("PATH_NOT_FOUND", "does not exist", "UNABLE_TO_INFER_SCHEMA")):
            return []
        raise


def _complete(row: dict[str, Any]) -> dict[str, Any]:
    out = {name: row.get(name) for name in STATUS_COLUMNS}
    for name in ("updated_at", "started_at", "ended_at"):
        out[name] = _utc(out[name])
    return out


def _utc(value: Any) -> dt.datetime | None:
    """A collected timestamp (naive, in this process's local time, as pyspark returns it; a CSV
    table's text) as an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.astimezone(dt.timezone.utc)


def _when(value: dt.datetime | None) -> str:
    return "(unknown)" if value is None else f"{value:%Y-%m-%d %H:%M:%S} UTC"


def describe_attempt(row: dict[str, Any]) -> str:
    """``attempt 1a2b… (started … on host …, Spark application …)`` of a status row."""
    who = f"attempt {row['attempt_id']}" if row.get("attempt_id") else "an attempt with no id (marked by hand, or an older ndcg-spark)"
    return (f"{who} (started {_when(row.get('started_at'))} on {row.get('host') or 'an unknown host'}, "
            f"Spark application {row.get('app_id') or 'unknown'})")


def acquire(
    spark: SparkSession, status: Source, run_id: str, *, stale_after: dt.timedelta = DEFAULT_STALE_AFTER,
    take_over: bool = False,
) -> Lease:
    """Start an attempt at ``run_id``: refuse while another attempt is running it (not stale, no
    ``take_over``), else write ``running`` and confirm that the row is this attempt's.

    Two attempts that both read the row before either's ``running`` landed would both go on; so
    before confirming, an attempt waits 1.5 times as long as its own read and write took (at most
    10 s): a rival that passed its check in that window has written its row by then, the row shows
    the later writer, and the earlier one stops here (LeaseLost) before writing any data.
    """
    began = time.monotonic()
    row = status_row(spark, status, run_id)
    if row is not None and row["status"] == RUNNING:
        beat = row["updated_at"]
        stale = beat is not None and utc_now() - beat > stale_after
        if not (stale or take_over):
            raise RunInProgress(
                f"run {run_id}: another attempt is running it: {describe_attempt(row)}, last heartbeat "
                f"{_when(beat)} ({status.describe()}). This attempt wrote nothing. Wait for that one to end; "
                f"if it is dead (its driver was killed), take over with --take-over, or wait until its "
                f"heartbeat is older than publishing.stale_after_minutes ({stale_after.total_seconds() / 60:g})."
            )
        logger.warning("run %s: taking over from %s (%s)", run_id, describe_attempt(row),
                       f"stale: last heartbeat {_when(beat)}" if stale else "--take-over")
    attempt = Attempt.start(spark, run_id)
    mark_run(spark, status, run_id, RUNNING, attempt=attempt)
    lease = Lease(spark, status, attempt, stale_after, utc_now())
    # Another attempt that read the row before this one's write landed writes its own within about
    # the time this read and write took: wait that long, then the row says who won (the later write).
    time.sleep(min((time.monotonic() - began) * SETTLE_SHARE, MAX_SETTLE_SECONDS))
    lease.check()
    logger.debug("run %s: attempt %s holds the run", run_id, attempt.attempt_id)
    return lease


@dataclass
class Lease:
    """The run held by one attempt (from :func:`acquire`)."""

    spark: SparkSession
    status: Source
    attempt: Attempt
    stale_after: dt.timedelta
    beaten_at: dt.datetime

    def check(self) -> dict[str, Any]:
        """The run's row, if it is still this attempt's and says ``running``; else LeaseLost."""
        row = status_row(self.spark, self.status, self.attempt.run_id)
        if not self._ours(row):
            raise LeaseLost(self._lost(row))
        return row

    def renew(self) -> None:
        """At a step boundary: still ours (else LeaseLost), and a heartbeat when one is due."""
        self.check()
        if utc_now() - self.beaten_at >= self.stale_after * HEARTBEAT_SHARE:
            mark_run(self.spark, self.status, self.attempt.run_id, RUNNING, attempt=self.attempt)
            self.beaten_at = utc_now()

    def publish(self) -> None:
        """``complete``: the last write of the run, by the attempt that still holds it."""
        self.check()
        mark_run(self.spark, self.status, self.attempt.run_id, COMPLETE, attempt=self.attempt)

    def fail(self, exc: BaseException, outputs: Sequence[Source] = ()) -> BaseException:
        """Record ``exc`` (``failed``, its one-paragraph reason) while this attempt holds the run;
        returns the error to raise: LeaseLost when another attempt took the run, OutputChanged when
        a file of one of ``outputs`` vanished, else ``exc``."""
        try:
            row = status_row(self.spark, self.status, self.attempt.run_id)
        except Exception as read_error:  # noqa: BLE001 - the original failure matters more
            logger.warning("run %s: could not read the run-status row to record the failure: %s",
                           self.attempt.run_id, one_paragraph(read_error).splitlines()[0])
            return exc
        if not self._ours(row):
            return LeaseLost(self._lost(row, cause=exc))
        error = _output_changed(exc, self.attempt.run_id, outputs) or exc
        try:
            mark_run(self.spark, self.status, self.attempt.run_id, FAILED, attempt=self.attempt,
                     reason=one_paragraph(error))
        except Exception as write_error:  # noqa: BLE001
            logger.warning("run %s: could not record the failure: %s", self.attempt.run_id,
                           one_paragraph(write_error).splitlines()[0])
        return error

    def _ours(self, row: dict[str, Any] | None) -> bool:
        return row is not None and row["attempt_id"] == self.attempt.attempt_id and row["status"] == RUNNING

    def _lost(self, row: dict[str, Any] | None, cause: BaseException | None = None) -> str:
        run_id, mine = self.attempt.run_id, self.attempt.attempt_id
        if row is None:
            holder = "its run-status row is gone"
        elif row["attempt_id"] == mine:
            holder = f"its run-status row says {row['status']} (written {_when(row['updated_at'])})"
        else:
            holder = f"{describe_attempt(row)} took it over; the row says {row['status']} ({_when(row['updated_at'])})"
        text = f"run {run_id}: this attempt ({mine}) no longer holds the run: {holder}. It stops without publishing."
        if cause is not None:
            first = one_paragraph(cause).splitlines()[0]
            text += f" Its own failure came while the other attempt wrote the run's partitions: {first}"
        return text


def _output_changed(exc: BaseException, run_id: str, outputs: Sequence[Source]) -> OutputChanged | None:
    """An OutputChanged when the file whose absence caused ``exc`` lies in one of ``outputs``."""
    path = missing_file(exc)
    if path is None:
        return None
    source = next((o for o in outputs if _under(path, o, run_id)), None)
    if source is None:  # an input's file: FileVanished already says so
        return None
    return OutputChanged(
        f"run {run_id}: the file {path} of this run's own output ({source.describe()}) was gone when this "
        f"attempt read it: the partition run_id={run_id} was replaced or deleted under the attempt, and no other "
        "attempt of the run is on the run-status table -- another process, or a hand, wrote or deleted it. "
        "This attempt is recorded as failed; re-run it when nothing else writes the run.",
        path,
    )


def _under(path: str, source: Source, run_id: str) -> bool:
    """Whether the file ``path`` is in ``source`` (a path table: under its folder; a catalog table:
    in a ``<table>/run_id=<run_id>/`` folder)."""
    bare = re.sub(r"^file:(//)?", "", path)
    if source.path is not None:
        return bare.startswith(re.sub(r"^file:(//)?", "", source.path).rstrip("/") + "/")
    return f"/{source.table.rsplit('.', 1)[-1]}/run_id={run_id}/" in bare


def recent_runs(spark: SparkSession, status: Source, *, last: int = 10, only: str | None = None) -> list[dict[str, Any]]:
    """The status rows of the ``last`` runs written most recently (``only``: of that status, e.g.
    ``failed``), newest first, as dicts of every column (those an older table lacks are None)."""
    df = read_written(spark, status, merge_schema=True)
    if df is None:
        return []
    if only is not None:
        df = df.filter(F.col("status") == F.lit(only))
    rows = df.orderBy(F.col("updated_at").desc_nulls_last(), "run_id").limit(last).collect()
    return [_complete(r.asDict()) for r in rows]
