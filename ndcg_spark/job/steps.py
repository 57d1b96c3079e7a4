"""A step of a run: its Spark jobs tagged with the run id and the step, its time logged.

Every Spark job a run starts carries two tags (:func:`~ndcg_spark.job.session.step_tags`):
``ndcg-spark:<run_id>`` and ``ndcg-spark:<run_id>:<step>``, e.g. ``ndcg-spark:2026-11-29:score``.
``spark.interruptTag("ndcg-spark:2026-11-29")`` cancels what the run is doing, from another
thread or (Spark Connect) another client of the same session. When a step ends, the logger
``ndcg_spark.job.steps`` says so with its elapsed time (the console script prints these lines
on stderr, one per step).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from ndcg_spark.job.session import step_tags, tagged

logger = logging.getLogger(__name__)


@contextmanager
def step(spark: SparkSession, run_id: str, name: str, *, level: int = logging.INFO) -> Iterator[None]:
    """Run the block as step ``name`` of ``run_id``: its jobs tagged, one log line when it is done.

    ``level`` is that line's (pre-checks and the summary reads log at DEBUG); a failing step logs
    at DEBUG only, so the failure's own paragraph is what a user reads first.
    """
    started = time.perf_counter()
    try:
        with tagged(spark, *step_tags(run_id, name)):
            yield
    except BaseException:
        logger.debug("run %s: step %s failed after %.1f s", run_id, name, time.perf_counter() - started)
        raise
    logger.log(level, "run %s: step %s done in %.1f s", run_id, name, time.perf_counter() - started)
