"""The tags of a run's Spark jobs, their scheduler pool, and cancelling them from any thread.

Every Spark job a run starts carries ``ndcg-spark:<run_id>`` and ``ndcg-spark:<run_id>:<step>``
(:func:`step_tags`, added by :func:`tagged`); :func:`cancel_tagged` cancels them, from another
thread or (Spark Connect) another client of the same session.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from ndcg_spark.compat import is_connect

logger = logging.getLogger(__name__)

#: every job of a run carries ``ndcg-spark:<run_id>`` and ``ndcg-spark:<run_id>:<step>``
TAG_PREFIX = "ndcg-spark"


def step_tags(run_id: str, step: str) -> tuple[str, str]:
    """The tags of a step's jobs: the run's (to cancel a whole run) and the step's.

    >>> step_tags("2026-11-29", "score")
    ('ndcg-spark:2026-11-29', 'ndcg-spark:2026-11-29:score')
    """
    return f"{TAG_PREFIX}:{run_id}", f"{TAG_PREFIX}:{run_id}:{step}"


@contextmanager
def tagged(spark: SparkSession, *tags: str) -> Iterator[None]:
    """Every Spark job started in the block (by this thread) carries ``tags``.

    ``spark.addTag`` where the session has it (classic pyspark 4.x, Spark Connect) and, on a classic
    session, the SparkContext's job tags too (``addJobTag``; on pyspark 3.5, where ``addTag`` is
    Spark Connect only, those alone). A classic 4.x session's own tags are its thread's (its jobs
    show them prefixed by Spark: ``spark-session-<id>-thread-<id>-<tag>``, and only that thread's
    ``spark.interruptTag`` finds them); the job tags stand as they are, so :func:`cancel_tagged`
    cancels the jobs from any thread.
    """
    removers = [remove for tag in tags for remove in _add_tag(spark, tag)]
    try:
        yield
    finally:
        for remove in reversed(removers):
            remove()


def _add_tag(spark: SparkSession, tag: str) -> list:
    """Add ``tag``; returns how to remove it again."""
    removers = []
    try:
        spark.addTag(tag)
        removers.append(lambda: spark.removeTag(tag))
    except (AttributeError, NotImplementedError, RuntimeError):
        if is_connect(spark):
            raise
    if not is_connect(spark):  # classic: the SparkContext's job tags, which any thread can cancel
        context = spark.sparkContext
        context.addJobTag(tag)
        removers.append(lambda: context.removeJobTag(tag))
    return removers


@contextmanager
def scheduler_pool(spark: SparkSession, pool: str) -> Iterator[None]:
    """The Spark jobs this thread starts in the block go to the fair scheduler's pool ``pool``
    (created on first use; under FIFO scheduling, or over Spark Connect, nothing changes)."""
    if is_connect(spark):
        yield
        return
    context = spark.sparkContext
    context.setLocalProperty("spark.scheduler.pool", pool)
    try:
        yield
    finally:
        context.setLocalProperty("spark.scheduler.pool", None)


def cancel_tagged(spark: SparkSession, tag: str) -> None:
    """Cancel the running jobs that carry ``tag`` (:func:`tagged`), from any thread: over Spark
    Connect ``spark.interruptTag``, on a classic session ``sparkContext.cancelJobsWithTag``. A job
    not started yet is not cancelled: call again to catch it."""
    if is_connect(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobsWithTag(tag)


def cancel_until(spark: SparkSession, tag: str, stop: threading.Event, every: float = 0.25) -> None:
    """Cancel the jobs that carry ``tag`` now and every ``every`` seconds until ``stop`` is set (in
    the calling thread): the attempt they belong to is ending, and a job its main thread was about
    to start when the first cancel came starts later."""
    while not stop.is_set():
        try:
            cancel_tagged(spark, tag)
        except Exception as exc:  # noqa: BLE001 - the session may be going away with the process
            logger.debug("cancelling the jobs tagged %s: %s", tag, exc)
            return
        stop.wait(every)


def drop_interrupted_call(spark: SparkSession | None) -> None:
    """After this thread's call into the JVM was interrupted (a signal handler raised in it), close
    the thread's Py4J connection: the JVM answers the interrupted command on it later, and a next
    call on the same connection would read that answer as its own. The next call opens a new one.
    Nothing to do over Spark Connect (each call is its own gRPC request) or without a session."""
    if spark is None or is_connect(spark):
        return
    gateway = getattr(spark.sparkContext, "_gateway", None)
    client = getattr(gateway, "_gateway_client", None)
    connection = client.get_thread_connection() if hasattr(client, "get_thread_connection") else None
    if connection is not None:  # pinned-thread mode (pyspark's default); a pooled one is never reused
        connection.close()
