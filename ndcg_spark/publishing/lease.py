"""Run attempts and their lease: one night, one writer, and a night a scheduler can retry.

Every invocation of a command that writes a run's stages (``score``, ``run``, ``aggregate``) is an
*attempt*, with its own id. The run's row in the run-status table (:mod:`ndcg_spark.publishing.status`;
one row per run id, in the run's own partition) is its lease; the attempt's own row in the
run-attempts table (:mod:`ndcg_spark.publishing.attempts`) is its record.

- :func:`acquire` reads the row first. It says ``running`` for another attempt: that attempt is
  taken over when its last heartbeat (its own row's ``updated_at``) is older than ``stale_after``,
  when it ran on this host and its process no longer exists, or with ``take_over``; otherwise
  this attempt waits up to
  ``wait`` for one of those (or for the row to say something else), then refuses
  (:class:`~ndcg_spark.errors.RunInProgress`: that attempt's id, when and where it started, its
  Spark application). It writes ``running`` with a new attempt id, its own row, then reads the
  status row back: another attempt's id there means two attempts passed the check together and
  the other wrote later, so this one stops before writing any data
  (:class:`~ndcg_spark.errors.LeaseLost`).
- :meth:`Lease.start_heartbeat`: a background thread (:mod:`ndcg_spark.publishing.heartbeat`) checks the
  status row and rewrites the attempt's own row (a new ``updated_at``: the heartbeat) every
  ``heartbeat`` while the stages run, and when the attempt reaches a step; the status row, which
  readers join, stays as it is. A beat that finds the run taken over cancels the attempt's Spark
  jobs (its run tag) until the attempt stops, at its next job or step.
- :meth:`Lease.renew`, at every step boundary: the row must still carry this attempt's id (else
  LeaseLost: stop without publishing).
- :meth:`Lease.publish`: the same check, then ``complete``; :meth:`Lease.fail`: ``failed`` with the
  one-paragraph reason (``terminated by SIGTERM`` after a signal), only while this attempt holds
  the run. The lease's lock keeps a beat from landing after either.

:func:`publishing` brackets a run's writes with all of it. The storage offers no compare-and-swap
(a path table's partition, a catalog table's partition): each check is a read followed by a
write, so two attempts that both read before either wrote (within the second or so a status write
takes) both go on; the later ``running`` write wins, and the other attempt finds another id at its
next check and stops without publishing -- after any data write it had started.
docs/operations.md#one-night-one-writer says what that means.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql import SparkSession

from ndcg_spark.config.publishing_spec import PublishingSpec
from ndcg_spark.errors import Interrupted, LeaseLost, OutputChanged, missing_file, one_paragraph
from ndcg_spark.publishing import attempts as record
from ndcg_spark.publishing.attempts import Attempt, AttemptRecord
from ndcg_spark.config.job import Source
from ndcg_spark.publishing.heartbeat import Heartbeat
from ndcg_spark.publishing.holder import last_beat, wait_until_free
from ndcg_spark.publishing.status import COMPLETE, FAILED, RUNNING, describe_attempt, mark_run, status_row, when
from ndcg_spark.publishing.tags import cancel_until, scheduler_pool, step_tags, tagged
from ndcg_spark.publishing.steps import step

__all__ = ["Lease", "acquire", "publishing"]

logger = logging.getLogger(__name__)

#: after writing ``running``, an attempt waits this share of the time its check and write took
#: (at most MAX_SETTLE_SECONDS) before reading the row back: see :func:`acquire`
SETTLE_SHARE = 1.5
MAX_SETTLE_SECONDS = 10.0
#: the step an attempt is in while it takes the run (its jobs' step tag)
TAKING = "unpublish"
#: the heartbeat's step tag, and its jobs' fair-scheduler pool (a beat waits for one task at most)
HEARTBEAT = "heartbeat"


@contextlib.contextmanager
def publishing(
    spark: SparkSession, status: Source, run_id: str, *, spec: PublishingSpec = PublishingSpec(),
    take_over: bool = False, wait: dt.timedelta | None = None, outputs: Sequence[Source] = (),
    attempts: Source | None = None, command: str | None = None,
) -> Iterator[Lease]:
    """Bracket a run's writes: take the run's lease (``running``), beat while the block runs,
    ``complete`` after -- only if the block succeeded and this attempt still holds the run::

        with publishing(spark, config.run_status(), run_id, attempts=config.run_attempts()) as lease:
            lease.reached("score")
            score_stage(spark, config, run_id)
            lease.renew("aggregate")   # at a step boundary: still ours? (else LeaseLost)
            ...                        # every later stage of the run

    ``spec``, ``take_over`` and ``wait`` are :func:`acquire`'s; ``attempts`` is the run-attempts
    table (None: no attempt rows), ``command`` what its rows say ran. A failure in the block (or
    a signal: :class:`~ndcg_spark.errors.Interrupted`) is recorded (``failed``, with its
    one-paragraph reason) while the attempt holds the run, then raised -- as the honest error when
    a file of one of ``outputs`` (the run's own tables) vanished or another attempt took the run
    (:meth:`Lease.fail`). The block gets the :class:`Lease` (``lease.status`` says where the run
    is published).
    """
    with step(spark, run_id, TAKING, level=logging.DEBUG):
        lease = acquire(spark, status, run_id, spec=spec, take_over=take_over, wait=wait, attempts=attempts,
                        command=command)
    try:
        lease.start_heartbeat()
        yield lease
        with step(spark, run_id, "publish"):
            lease.publish()
    except LeaseLost as lost:
        raise lease.lost_to(lost)
    except (Exception, KeyboardInterrupt, Interrupted) as exc:
        error = lease.fail(exc, outputs)
        if error is exc:
            raise
        raise error from exc
    finally:
        lease.stop_heartbeat()


def acquire(
    spark: SparkSession, status: Source, run_id: str, *, spec: PublishingSpec = PublishingSpec(),
    take_over: bool = False, wait: dt.timedelta | None = None, attempts: Source | None = None,
    command: str | None = None,
) -> Lease:
    """Start an attempt at ``run_id``: while another attempt is running it and is alive (its
    heartbeat fresh, its process not provably gone, no ``take_over``), wait up to ``wait`` (polling
    once a heartbeat) and then refuse; else write ``running`` and confirm that the row is this
    attempt's.

    Two attempts that both read the row before either's ``running`` landed would both go on; so
    before confirming, an attempt waits 1.5 times as long as its own read and write took (at most
    10 s; its own row in ``attempts`` is written meanwhile): a rival that passed its check in that
    window has written its row by then, the row shows the later writer, and the earlier one stops
    here (LeaseLost) before writing any data.
    """
    began, row, holder, why = wait_until_free(spark, status, run_id, spec, take_over, wait, attempts)
    lease = Lease(spark, status, Attempt.start(spark, run_id, command), spec, attempts)
    try:
        mark_run(spark, status, run_id, RUNNING, attempt=lease.attempt)
        written = time.monotonic()
        lease.write_record()  # this attempt's own row, while a rival's write would land
        time.sleep(max(0.0, written + min((written - began) * SETTLE_SHARE, MAX_SETTLE_SECONDS) - time.monotonic()))
        lease.check()
    except LeaseLost as lost:
        raise lease.lost_to(lost)
    except (Exception, KeyboardInterrupt, Interrupted) as exc:
        error = lease.fail(exc)
        if error is exc:
            raise
        raise error from exc
    if why:
        logger.warning("run %s: attempt %s took over from %s (%s)", run_id, lease.attempt.attempt_id,
                       describe_attempt(row), why)
        lease.abandon(row, holder, why)
    logger.debug("run %s: attempt %s holds the run", run_id, lease.attempt.attempt_id)
    return lease


class Lease:
    """The run held by one attempt (from :func:`acquire`): its checks, its heartbeat, its end.

    One lock covers every read-then-write of the run's rows, so a beat of the heartbeat thread
    never lands after ``complete`` or ``failed``, nor between a check and its write.
    """

    def __init__(self, spark: SparkSession, status: Source, attempt: Attempt, spec: PublishingSpec,
                 attempts: Source | None = None) -> None:
        self.spark, self.status, self.attempt, self.spec, self.attempts = spark, status, attempt, spec, attempts
        self.record = AttemptRecord(attempt, last_step=TAKING)
        #: set by a beat that found the run taken over
        self.lost: LeaseLost | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._heartbeat: Heartbeat | None = None

    # ----------------------------------------------------------------------------- while it runs
    def check(self) -> dict[str, Any]:
        """The run's row, if it is still this attempt's and says ``running``; else LeaseLost."""
        if self.lost is not None:
            raise self.lost
        with self._lock:
            row = status_row(self.spark, self.status, self.attempt.run_id)
        if not self._ours(row):
            raise LeaseLost(self._lost(row))
        return row

    def renew(self, step: str | None = None) -> None:
        """At a step boundary: still ours (else LeaseLost); ``step``: the attempt reached it."""
        self.check()
        if step is not None:
            self.reached(step)

    def reached(self, step: str) -> None:
        """The attempt is in ``step`` now: its row says so within a moment (written by the heartbeat
        thread, or here when there is none)."""
        self.record = AttemptRecord(self.attempt, self.record.outcome, step)
        if self._heartbeat is not None and self._heartbeat.alive:
            self._heartbeat.nudge()
        else:
            self.write_record()

    def start_heartbeat(self) -> None:
        """Beat every ``spec.heartbeat`` in a background thread until :meth:`publish`, :meth:`fail`
        or :meth:`stop_heartbeat`."""
        if self._heartbeat is None:
            self._heartbeat = Heartbeat(self.beat, every=self.spec.heartbeat_seconds, on_lost=self._on_lost,
                                        name=f"{self.attempt.run_id}/{self.attempt.attempt_id}")
            self._heartbeat.start()

    def stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()

    def beat(self) -> None:
        """One beat: the row must still be ours (else LeaseLost), then this attempt's own row is
        rewritten (its ``updated_at`` is the heartbeat; its ``last_step`` the step reached). The
        run-status row, which dashboards read, is left alone -- unless there is no run-attempts
        table, when ``running`` is rewritten instead. Its jobs carry ``ndcg-spark:<run_id>:heartbeat``
        only, so cancelling the run's jobs (its run tag) leaves it be, and go to a fair-scheduler
        pool of their own (:func:`~ndcg_spark.publishing.tags.scheduler_pool`)."""
        run_id = self.attempt.run_id
        with self._lock, tagged(self.spark, step_tags(run_id, HEARTBEAT)[1]), scheduler_pool(self.spark, HEARTBEAT):
            if self._closed:
                return
            started = time.monotonic()
            self.check()
            if self.attempts is None:
                mark_run(self.spark, self.status, run_id, RUNNING, attempt=self.attempt)
            else:
                self.write_record()
            logger.debug("run %s: heartbeat of attempt %s (%.2f s)", run_id, self.attempt.attempt_id,
                         time.monotonic() - started)

    def _on_lost(self, lost: LeaseLost, stop: threading.Event) -> None:
        """The heartbeat found the run taken over: its next check raises, and the attempt's Spark
        jobs (its run tag) are cancelled until the attempt has stopped (the heartbeat's thread)."""
        self.lost = lost
        logger.warning("%s Its Spark jobs are cancelled.", lost)
        cancel_until(self.spark, step_tags(self.attempt.run_id, TAKING)[0], stop)

    # ------------------------------------------------------------------------------------ its end
    def publish(self) -> None:
        """``complete``: the last write of the run, by the attempt that still holds it."""
        self.stop_heartbeat()
        with self._lock:
            self.check()
            mark_run(self.spark, self.status, self.attempt.run_id, COMPLETE, attempt=self.attempt)
            self._closed = True
            self._end(record.COMPLETE, step="publish")

    def fail(self, exc: BaseException, outputs: Sequence[Source] = ()) -> BaseException:
        """Record ``exc`` (``failed``, its one-paragraph reason) while this attempt holds the run;
        returns the error to raise: LeaseLost when another attempt took the run, OutputChanged when
        a file of one of ``outputs`` vanished, else ``exc``."""
        self.stop_heartbeat()
        if self.lost is not None:  # the heartbeat found the run taken over and cancelled the jobs
            return self.lost_to(self.lost)
        ended = record.INTERRUPTED if isinstance(exc, (Interrupted, KeyboardInterrupt)) else record.FAILED
        with self._lock:
            self._closed = True
            try:
                row = status_row(self.spark, self.status, self.attempt.run_id)
            except Exception as read_error:  # noqa: BLE001 - the original failure matters more
                logger.warning("run %s: could not read the run-status row to record the failure: %s",
                               self.attempt.run_id, one_paragraph(read_error).splitlines()[0])
                self._end(ended, one_paragraph(exc))
                return exc
            if not self._ours(row):
                if ended == record.INTERRUPTED:  # ending anyway, maybe before its 'running' landed
                    self._end(ended, one_paragraph(exc))
                    return exc
                return self.lost_to(LeaseLost(self._lost(row, cause=exc)))
            error = _output_changed(exc, self.attempt.run_id, outputs) or exc
            try:
                mark_run(self.spark, self.status, self.attempt.run_id, FAILED, attempt=self.attempt,
                         reason=one_paragraph(error))
            except Exception as write_error:  # noqa: BLE001
                logger.warning("run %s: could not record the failure: %s", self.attempt.run_id,
                               one_paragraph(write_error).splitlines()[0])
            self._end(ended, one_paragraph(error))
        return error

    def lost_to(self, lost: LeaseLost) -> LeaseLost:
        """Another attempt took the run: this attempt's row says ``lost`` (the status row is the
        other's: untouched). Returns the error to raise."""
        self.stop_heartbeat()
        with self._lock:
            self._closed = True
            self._end(record.LOST, str(lost))
        return lost

    def abandon(self, row: dict[str, Any], holder: dict[str, Any] | None, why: str) -> None:
        """Record how ``holder``, the attempt this one took over from, ended: ``abandoned``, at its
        last heartbeat (nothing when it has no row: an older ndcg-spark, a row marked by hand)."""
        if holder is None:
            return
        ended = record.record_of(holder).ended(
            record.ABANDONED, f"taken over by attempt {self.attempt.attempt_id}: {why}", at=last_beat(row, holder))
        self._write(ended)

    # --------------------------------------------------------------------------------- the rows
    def write_record(self) -> None:
        """Write this attempt's row as it stands (its step, its outcome; ``updated_at`` now)."""
        self._write(self.record)

    def _end(self, outcome: str, reason: str | None = None, step: str | None = None) -> None:
        ended = self.record.ended(outcome, reason)
        self.record = ended if step is None else AttemptRecord(ended.attempt, outcome, step, reason, ended.ended_at)
        self.write_record()

    def _write(self, attempt_record: AttemptRecord) -> None:
        if self.attempts is None:
            return
        try:
            record.record_attempt(self.spark, self.attempts, attempt_record)
        except Exception as exc:  # noqa: BLE001 - the record never fails the run
            logger.warning("run %s: could not write the row of attempt %s (%s): %s", self.attempt.run_id,
                           attempt_record.attempt.attempt_id, self.attempts.describe(),
                           one_paragraph(exc).splitlines()[0])

    def _ours(self, row: dict[str, Any] | None) -> bool:
        return row is not None and row["attempt_id"] == self.attempt.attempt_id and row["status"] == RUNNING

    def _lost(self, row: dict[str, Any] | None, cause: BaseException | None = None) -> str:
        run_id, mine = self.attempt.run_id, self.attempt.attempt_id
        if row is None:
            holder = "its run-status row is gone"
        elif row["attempt_id"] == mine:
            holder = f"its run-status row says {row['status']} (written {when(row['updated_at'])})"
        else:
            holder = f"{describe_attempt(row)} took it over; the row says {row['status']} ({when(row['updated_at'])})"
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
