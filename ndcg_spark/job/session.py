"""Building the SparkSession for local runs; under spark-submit the session is the cluster's.

The console script uses :func:`build_session` with the ``spark:`` section of the YAML (master,
warehouse folder, extra conf). The spark-submit entry (``jobs/nightly_eval.py``) passes
``master=None`` so the master comes from spark-submit and nothing here overrides it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession


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
    warehouse_dir : ``spark.sql.warehouse.dir`` (made absolute), e.g. ``warehouse`` in the checkout.
    shuffle_partitions : ``spark.sql.shuffle.partitions``; small values suit small local runs.
    conf : any further Spark settings.
    """
    builder = SparkSession.builder.appName(app_name)
    if master is not None and master.startswith("local"):
        # Local Python workers must run this interpreter (the virtualenv's), not whatever
        # python3 is first on the PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master is not None:
        builder = builder.master(master).config("spark.ui.enabled", "false")
    settings: dict[str, str] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        # Replace only the partitions a run writes; never the whole table.
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # run ids are strings ("2026-11-29"), never inferred as dates or numbers on read.
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    }
    if warehouse_dir is not None:
        settings["spark.sql.warehouse.dir"] = str(Path(warehouse_dir).resolve())
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update({str(k): str(v) for k, v in (conf or {}).items()})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
