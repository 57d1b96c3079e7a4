"""Building the SparkSession, classic or Spark Connect (the jobs of a run's steps are tagged by
:mod:`ndcg_spark.publishing.tags`).

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
import warnings
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

# the session's kind, application and cores: read below the job layer (frames and the stages need them)
from ndcg_spark.compat import application_id, default_parallelism, is_connect  # noqa: F401 - re-exported

logger = logging.getLogger(__name__)


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
