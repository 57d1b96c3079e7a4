"""One SparkSession for the whole suite (local[2], 2 shuffle partitions, UI off).

The suite's inputs are small (hundreds of requests), so it runs Spark the way Spark's own test
suites run small queries: expressions interpreted (no Java generated and compiled per query) and
no adaptive re-planning. On this data the compilers cost more than they save (measured: the
comparison tests 111 s -> 85 s on 2 cores; ``tests/small_data.py``); the results are the same. The
plain-Python oracle grid (``tests/test_oracle_agreement.py``, through :func:`production_spark`), the
tests whose cost is their rows (the coverage simulations, through :func:`nightly_spark`) and the
tests of a nightly run's own set-up (spark-submit, the cluster, the console script in its own
session, the benchmark) run with Spark's defaults, as a nightly run does. The fault tests' child
drivers, which break the publishing of a night rather than its plans, run with the suite's settings
and compile with the JVM's C1 compiler only (``tests/faults.py``).

At the checkout root so that doctests under ndcg_spark/ get `spark` too. Its SQL warehouse (where
catalog tables such as ``{table: db.name}`` outputs land) is a temporary folder of the session,
never ``./spark-warehouse`` in the checkout. In the format lane (``bash dev.sh test-formats``, which
sets ``NDCG_TEST_FORMATS``) the session also has Delta Lake and Iceberg (``tests/lakehouse.py``).
"""

from __future__ import annotations

import os

import pytest

from tests import lakehouse
from tests.class_archive import java_options

#: Spark settings of the suite's session (see the module docstring); Spark's defaults in production
from tests.small_data import SMALL_DATA_EXECUTION, nightly_execution


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from ndcg_spark.job.session import build_session

    # the suite's class archive, when bash dev.sh built one (tests/class_archive.py): a faster start
    # (not on Spark Connect, whose server's JVM is started elsewhere)
    options = "" if os.environ.get("SPARK_REMOTE") else java_options()
    jvm = {"spark.driver.extraJavaOptions": options} if options else {}
    formats = lakehouse.settings(tmp_path_factory.mktemp("lakehouse")) if os.environ.get(lakehouse.ENV) else {}
    session = build_session(
        master="local[2]",
        app_name="ndcg-spark-tests",
        shuffle_partitions=2,
        warehouse_dir=tmp_path_factory.mktemp("spark-warehouse"),
        conf={**SMALL_DATA_EXECUTION, **jvm, **formats},
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def production_spark(spark):
    """The session, for the rest of the module, executing as a nightly run does: generated code
    and adaptive query execution, Spark's defaults (the suite's small-data settings back after)."""
    with nightly_execution(spark):
        yield spark


@pytest.fixture
def nightly_spark(spark):
    """The session, for one test, executing as a nightly run does (``tests/small_data.py``): for
    the tests whose cost is their rows (coverage simulations, bootstrap expansions of many datasets)."""
    with nightly_execution(spark):
        yield spark


@pytest.fixture(autouse=True)
def _doctest_namespace(request, doctest_namespace):
    """Doctests get ``spark`` and ``F`` like a pyspark shell (the session starts only if asked for)."""
    if isinstance(request.node, pytest.DoctestItem):
        from pyspark.sql import functions as F

        doctest_namespace["spark"] = request.getfixturevalue("spark")
        doctest_namespace["F"] = F


#: ``bash dev.sh test`` runs the suite on pytest-xdist workers with ``--dist loadfile
#: --no-loadscope-reorder``: each module's tests run on one worker, in their own order, so a module's
#: fixtures are built once. The modules that take longest start first, the rest follow in collection
#: order, so that no long module is left to run alone at the end.
LONGEST_FIRST = (
    "tests/test_run_faults.py",
    "tests/test_scheduler_retries.py",
    "tests/test_cluster_faults.py",
    "tests/test_run_retries.py",
    "tests/test_benchmarks_smoke.py",
    "tests/test_docs.py",
    "tests/test_oracle_agreement.py",
    "tests/test_compare.py",
    "tests/test_validation.py",
    "tests/test_documented_behaviour.py",
    "tests/test_aggregate.py",
    "tests/test_guardrails.py",
    "tests/test_dense_plan.py",
    "tests/test_conf_files.py",
    "tests/test_cli_score.py",
    "tests/test_trend.py",
)


def pytest_collection_modifyitems(config, items):
    """The longest modules first, each module's own order kept (the sort is stable)."""
    rank = {module: position for position, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
