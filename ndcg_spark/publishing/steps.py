"""A step of a run: its Spark jobs tagged with the run id and the step, its time logged.

Every Spark job a run starts carries two tags (:func:`~ndcg_spark.publishing.tags.step_tags`):
``ndcg-spark:<run_id>`` and ``ndcg-spark:<run_id>:<step>``, e.g. ``ndcg-spark:2026-11-29:score``.
``spark.interruptTag("ndcg-spark:2026-11-29")`` cancels what the run is doing, from another
thread or (Spark Connect) another client of the same session. The logger ``ndcg_spark.publishing.steps``
says when a step starts (``step 2 of 5: aggregate`` inside a command's :func:`planned` steps), every :data:`PROGRESS_EVERY` seconds while it runs (with the Spark stage
it is in and its tasks done, where the session has a status tracker), and when it ends, with its
elapsed time (the console script prints these lines on stderr).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from pyspark.sql import SparkSession

from ndcg_spark.publishing.tags import step_tags, tagged

logger = logging.getLogger(__name__)

#: seconds between two "still running" lines of a long step
PROGRESS_EVERY = 30.0

#: the steps the command in progress will announce, in order (:func:`planned`)
_PLAN: ContextVar[tuple[str, ...]] = ContextVar("ndcg_spark_step_plan", default=())


@contextmanager
def planned(names: Sequence[str]) -> Iterator[None]:
    """Inside the block, a step named in ``names`` is announced with its place among them
    (``step 2 of 5: aggregate``); other steps (checks, taking the run) by name alone."""
    token = _PLAN.set(tuple(names))
    try:
        yield
    finally:
        _PLAN.reset(token)


def _label(name: str) -> str:
    """``2 of 5: aggregate`` inside a plan naming ``aggregate`` second of five; else the name."""
    plan = _PLAN.get()
    return f"{plan.index(name) + 1} of {len(plan)}: {name}" if name in plan else name


@contextmanager
def step(spark: SparkSession, run_id: str, name: str, *, level: int = logging.INFO) -> Iterator[None]:
    """Run the block as step ``name`` of ``run_id``: its jobs tagged, one log line when it is done.

    ``level`` is that line's (pre-checks and the summary reads log at DEBUG); a failing step logs
    at DEBUG only, so the failure's own paragraph is what a user reads first.
    """
    started = time.perf_counter()
    label = _label(name)
    logger.log(level, "run %s: step %s started", run_id, label)
    ended = threading.Event()
    progress = threading.Thread(target=_still_running, args=(spark, run_id, label, started, ended, level),
                                name=f"ndcg-spark progress {name}", daemon=True)
    progress.start()
    try:
        with tagged(spark, *step_tags(run_id, name)):
            yield
    except BaseException:
        logger.debug("run %s: step %s failed after %.1f s", run_id, label, time.perf_counter() - started)
        raise
    finally:
        ended.set()
        progress.join(timeout=5)
    logger.log(level, "run %s: step %s done in %.1f s", run_id, label, time.perf_counter() - started)


def _still_running(spark: SparkSession, run_id: str, label: str, started: float, ended: threading.Event,
                   level: int) -> None:
    """Every :data:`PROGRESS_EVERY` seconds until ``ended``: one line saying the step still runs."""
    while not ended.wait(PROGRESS_EVERY):
        logger.log(level, "run %s: step %s running for %.0f s%s", run_id, label, time.perf_counter() - started,
                   _spark_progress(spark))


def _spark_progress(spark: SparkSession) -> str:
    """`` (Spark stage 12: 3 of 8 tasks done)`` for the newest active stage; empty where the
    session has no status tracker (Spark Connect) or no stage runs."""
    try:
        tracker = spark.sparkContext.statusTracker()
        stages = [s for s in (tracker.getStageInfo(i) for i in tracker.getActiveStageIds()) if s is not None]
    except Exception:  # noqa: BLE001 - Connect has no SparkContext; progress is a nicety, never a failure
        return ""
    if not stages:
        return ""
    stage = max(stages, key=lambda s: s.stageId)
    return f" (Spark stage {stage.stageId}: {stage.numCompletedTasks} of {stage.numTasks} tasks done)"
