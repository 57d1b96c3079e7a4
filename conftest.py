"""One SparkSession for the whole suite (local[2], 2 shuffle partitions, UI off).

The suite's inputs are small (hundreds of requests), so it runs Spark the way Spark's own test
suites run small queries: expressions interpreted (no Java generated and compiled per query) and
no adaptive re-planning. On this data the compilers cost more than they save (measured: the
comparison tests 111 s -> 85 s on 2 cores); the results are the same, and the plain-Python oracle
grid (``tests/test_oracle_agreement.py``, through :func:`production_spark`) and every test that starts
its own driver (spark-submit, the cluster, the console script in a child process, the benchmark)
run with Spark's defaults, as a nightly run does.

At the checkout root so that doctests under ndcg_spark/ get `spark` too. Its SQL warehouse (where
catalog tables such as ``{table: db.name}`` outputs land) is a temporary folder of the session,
never ``./spark-warehouse`` in the checkout.
"""

from __future__ import annotations

import pytest

#: Spark settings of the suite's session (see the module docstring); Spark's defaults in production
SMALL_DATA_EXECUTION = {
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
}


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from ndcg_spark.job.session import build_session

    session = build_session(
        master="local[2]",
        app_name="ndcg-spark-tests",
        shuffle_partitions=2,
        warehouse_dir=tmp_path_factory.mktemp("spark-warehouse"),
        conf=SMALL_DATA_EXECUTION,
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def production_spark(spark):
    """The session, for the rest of the module, executing as a nightly run does: generated code
    and adaptive query execution, Spark's defaults (the suite's small-data settings back after)."""
    for key in SMALL_DATA_EXECUTION:
        spark.conf.unset(key)
    try:
        yield spark
    finally:
        for key, value in SMALL_DATA_EXECUTION.items():
            spark.conf.set(key, value)


@pytest.fixture(autouse=True)
def _doctest_namespace(request, doctest_namespace):
    """Doctests get ``spark`` and ``F`` like a pyspark shell (the session starts only if asked for)."""
    if isinstance(request.node, pytest.DoctestItem):
        from pyspark.sql import functions as F

        doctest_namespace["spark"] = request.getfixturevalue("spark")
        doctest_namespace["F"] = F
