"""Ending an attempt on a signal: what the console script does when a scheduler (or a person) stops it.

Under :func:`ending_on_signals` (the console script's main thread), SIGTERM, SIGINT and SIGHUP
raise :class:`~ndcg_spark.errors.Interrupted` where the main thread is, also inside a call into
Spark; the publishing bracket (:func:`ndcg_spark.publishing.lease.publishing`) records the attempt
``failed`` with ``terminated by SIGTERM`` and the command exits with 128 + the signal's number.
When the signal arrives, the handler also

- closes the main thread's Py4J connection, whose interrupted command the JVM answers later
  (:func:`~ndcg_spark.publishing.tags.drop_interrupted_call`), and
- cancels the run's Spark jobs (its run tag) from another thread, again every quarter of a second
  until the command ends: a job the interrupted call had not started yet starts later;
- starts a watchdog: the process exits with 128 + the signal's number :data:`GRACE_SECONDS`
  after the signal, whatever it is doing then (schedulers send SIGKILL 30 to 60 s after SIGTERM:
  Kubernetes' default grace is 30 s). A further signal meanwhile is logged and ignored.

The Spark driver's JVM, a child of this process, is started with SIGTERM and SIGHUP ignored (as
pyspark starts it with SIGINT ignored): a scheduler that signals the whole process group (Airflow,
a terminal) must not stop the JVM before the attempt has recorded how it ended. The JVM still ends
with this process (it exits when its standard input closes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from ndcg_spark.errors import Interrupted
from ndcg_spark.publishing.tags import cancel_until, drop_interrupted_call

__all__ = ["GRACE_SECONDS", "SIGNALS", "Ending", "ending_on_signals"]

logger = logging.getLogger(__name__)

#: the signals that end an attempt: a scheduler's stop, Ctrl-C, a closed terminal
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: the signals the driver's JVM is started ignoring (pyspark already starts it ignoring SIGINT)
CHILD_IGNORES = (signal.SIGTERM, signal.SIGHUP)
#: the most an attempt takes from a signal to its exit (the watchdog's)
GRACE_SECONDS = 20.0


@dataclass
class Ending:
    """The signal handling of one command (from :func:`ending_on_signals`); ``active`` is False
    outside the main thread, where Python delivers no signals."""

    active: bool
    grace_seconds: float = GRACE_SECONDS
    spark: SparkSession | None = None
    cancel_tag: str | None = None
    #: the first signal, once one came
    signum: int | None = None
    _saved: dict = field(default_factory=dict)
    _stopped: threading.Event = field(default_factory=threading.Event)

    @contextlib.contextmanager
    def starting_session(self) -> Iterator[None]:
        """Around building the session: its JVM is started ignoring SIGTERM and SIGHUP; this
        process handles them from the moment that child is forked (else once the block ends)."""
        if not self.active:
            yield
            return
        for signum in CHILD_IGNORES:
            signal.signal(signum, signal.SIG_IGN)
        _AFTER_FORK.arm(self)
        try:
            yield
        finally:
            _AFTER_FORK.disarm()
            self.install()  # again: pyspark set its own SIGINT handler while starting the context

    def install(self) -> None:
        if not self.active:
            return
        for signum in SIGNALS:
            previous = signal.signal(signum, self._handle)
            if previous is not self._handle:
                self._saved.setdefault(signum, previous)

    def attach(self, spark: SparkSession, cancel_tag: str) -> None:
        """What a signal stops: the jobs of ``spark`` that carry ``cancel_tag`` (the run's)."""
        self.spark, self.cancel_tag = spark, cancel_tag

    def restore(self) -> None:
        self._stopped.set()
        for signum, previous in self._saved.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._saved.clear()

    def _handle(self, signum: int, frame: object) -> None:
        if self.signum is not None:
            logger.warning("%s again: ending already (at most %g s after the first)", signal.Signals(signum).name,
                           self.grace_seconds)
            return
        self.signum = signum
        logger.info("%s: ending the attempt (at most %g s)", signal.Signals(signum).name, self.grace_seconds)
        watchdog = threading.Timer(self.grace_seconds, _exit_now, args=(signum,))
        watchdog.daemon = True
        watchdog.start()
        if self.spark is not None:
            drop_interrupted_call(self.spark)
            if self.cancel_tag is not None:
                threading.Thread(target=cancel_until, args=(self.spark, self.cancel_tag, self._stopped),
                                 name="ndcg-spark cancel", daemon=True).start()
        raise Interrupted(signum)


def _exit_now(signum: int) -> None:
    print(f"ndcg-spark: still running {GRACE_SECONDS:g} s after {signal.Signals(signum).name}: exiting now",
          file=sys.stderr, flush=True)
    os._exit(128 + signum)


class _AfterFork:
    """Once armed, the first fork of this process (the JVM's, started by pyspark with a
    ``preexec_fn``, so CPython runs the fork hooks) installs the command's handlers in the parent:
    the child has inherited the ignored dispositions by then."""

    def __init__(self) -> None:
        self._ending: Ending | None = None
        self._registered = False

    def arm(self, ending: Ending) -> None:
        if not self._registered:
            os.register_at_fork(after_in_parent=self._forked)
            self._registered = True
        self._ending = ending

    def disarm(self) -> None:
        self._ending = None

    def _forked(self) -> None:
        ending, self._ending = self._ending, None
        if ending is not None and threading.current_thread() is threading.main_thread():
            ending.install()


_AFTER_FORK = _AfterFork()


@contextlib.contextmanager
def ending_on_signals(grace_seconds: float = GRACE_SECONDS) -> Iterator[Ending]:
    """The block (a command of the console script) ends on SIGTERM, SIGINT or SIGHUP by raising
    :class:`~ndcg_spark.errors.Interrupted`; the previous handlers are back after it. Outside the
    main thread (a notebook's worker thread) nothing is installed."""
    ending = Ending(active=threading.current_thread() is threading.main_thread(), grace_seconds=grace_seconds)
    ending.install()
    try:
        yield ending
    finally:
        ending.restore()
