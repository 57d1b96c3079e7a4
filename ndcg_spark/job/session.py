"""Building the SparkSession, classic or Spark Connect, and tagging the jobs of a run's steps.

The console script uses :func:`build_session` with the ``spark:`` section of the YAML (master,
warehouse folder, extra conf). The spark-submit entry (``jobs/nightly_eval.py``) passes
``master=None`` so the master comes from spark-submit and nothing here overrides it. When
pyspark's own ``SPARK_REMOTE`` environment variable is set (``sc://host:15002``, or ``local[2]``
for a local Spark Connect server) the session is a Spark Connect session and no master is set.

Which kind a session is (:func:`~ndcg_spark.compat.is_connect`) is told apart in the version shim,
:mod:`ndcg_spark.compat`; the rest of the library uses only what both have (DataFrames, ``spark.sql``,
the catalog).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

# the session's kind, application and cores: read below the job layer (frames and the stages need them)
from ndcg_spark.compat import application_id, default_parallelism, is_connect  # noqa: F401 - re-exported

logger = logging.getLogger(__name__)

#: every job of a run carries ``ndcg-spark:<run_id>`` and ``ndcg-spark:<run_id>:<step>``
TAG_PREFIX = "ndcg-spark"


def build_session(
    master: str | None = "local[*]",
    app_name: str = "ndcg-spark",
    warehouse_dir: str | Path | None = None,
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return a SparkSession configured for ndcg-spark.

    Parameters
    ----------
    master : e.g. ``local[*]``; ``None`` keeps what spark-submit (or an existing session) set.
        Not used when ``SPARK_REMOTE`` is set: the session is then a Spark Connect session on
        that server (a ``local[…]`` remote starts a local Connect server).
    warehouse_dir : ``spark.sql.warehouse.dir`` (made absolute), e.g. ``warehouse`` in the checkout.
        Like every static setting, it reaches a remote server only when this call starts it.
    shuffle_partitions : ``spark.sql.shuffle.partitions``; small values suit small local runs.
    conf : any further Spark settings.
    """
    remote = os.environ.get("SPARK_REMOTE") or None
    if remote is not None and master is not None:
        logger.info("SPARK_REMOTE=%s: a Spark Connect session; the configured master %s is not used", remote, master)
        master = None
    local = (remote or master or "").startswith("local")
    if local:
        # Local Python workers must run this interpreter (the virtualenv's), not whatever
        # python3 is first on the PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    settings = _settings(warehouse_dir, shuffle_partitions, starts_driver=master is not None or local)
    if local and remote is not None:
        # The local Connect server runs in this process and would log every failed request (with
        # its JVM trace) on our stderr: each reaches the client as the exception anyway.
        settings["spark.log.level"] = "FATAL"
    settings.update({str(k): str(v) for k, v in (conf or {}).items()})
    if local and remote is None and master is not None:  # this call starts the driver's JVM: its log settings
        settings[JAVA_OPTIONS] = _with_log_config(settings.get(JAVA_OPTIONS, ""))
    for key, value in settings.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        # a Connect client sets what it can at runtime and warns for every static setting (the
        # server's, fixed when it started): expected, not something the user can act on
        warnings.filterwarnings("ignore", message="Failed to set", category=UserWarning)
        spark = builder.getOrCreate()
    if not is_connect(spark):  # a Connect server keeps its own log level
        spark.sparkContext.setLogLevel("ERROR")
    return spark


JAVA_OPTIONS = "spark.driver.extraJavaOptions"
#: Spark's console at ERROR from the driver's first line (a ``log4j2.configurationFile`` of the
#: user's own, in ``spark.conf``, is kept)
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def _with_log_config(options: str) -> str:
    """The driver's Java options with ndcg-spark's log configuration, unless they name one.

    >>> _with_log_config("-Xss4m").endswith("log4j2.properties") and _with_log_config("-Xss4m").startswith("-Xss4m ")
    True
    >>> _with_log_config("-Dlog4j2.configurationFile=mine.properties")
    '-Dlog4j2.configurationFile=mine.properties'
    """
    if "log4j2.configurationFile" in options or "log4j.configuration" in options:
        return options
    return f"{options} -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}".strip()


#: pyspark 4's Python call sites in Spark's DataFrame error messages (ignored by pyspark 3.5)
PYTHON_CALL_SITES = "spark.python.sql.dataFrameDebugging.enabled"


def _settings(warehouse_dir: str | Path | None, shuffle_partitions: int | None, *, starts_driver: bool) -> dict[str, str]:
    """ndcg-spark's Spark settings; ``starts_driver``: this call starts the driver (not spark-submit's)."""
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        # Replace only the partitions a run writes; never the whole table.
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # run ids are strings ("2026-11-29"), never inferred as dates or numbers on read.
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        # pyspark 4 otherwise sends every Column function's Python call site to the JVM first (a
        # config read and two more round trips): F.col 13 py4j calls instead of 3. Only Spark's
        # own error messages lose the Python line; ndcg-spark's errors name their rule and row.
        PYTHON_CALL_SITES: "false",
    }
    if starts_driver:
        settings["spark.ui.enabled"] = "false"
        # the stages' jobs share the default pool (first in, first out among them, as without pools);
        # the heartbeat's have a pool of their own, so a beat waits for one task, not the stage
        settings["spark.scheduler.mode"] = "FAIR"
    if warehouse_dir is not None:
        settings["spark.sql.warehouse.dir"] = str(Path(warehouse_dir).resolve())
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    return settings


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
