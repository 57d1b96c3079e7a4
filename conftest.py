"""One SparkSession for the whole suite (local[2], 2 shuffle partitions, UI off).

At the checkout root so that doctests under ndcg_spark/ get `spark` too. Its SQL warehouse (where
catalog tables such as ``{table: db.name}`` outputs land) is a temporary folder of the session,
never ``./spark-warehouse`` in the checkout.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from ndcg_spark.job.session import build_session

    session = build_session(
        master="local[2]",
        app_name="ndcg-spark-tests",
        shuffle_partitions=2,
        warehouse_dir=tmp_path_factory.mktemp("spark-warehouse"),
    )
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _doctest_namespace(request, doctest_namespace):
    """Doctests get ``spark`` and ``F`` like a pyspark shell (the session starts only if asked for)."""
    if isinstance(request.node, pytest.DoctestItem):
        from pyspark.sql import functions as F

        doctest_namespace["spark"] = request.getfixturevalue("spark")
        doctest_namespace["F"] = F
