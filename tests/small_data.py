"""The Spark settings the suite runs its small inputs with: the suite's own session (the root
``conftest.py``) and the fault tests' child drivers (``tests/faults.py``).

Expressions interpreted (no Java generated and compiled per query) and no adaptive re-planning, the
way Spark's own test suites run small queries: on hundreds of requests the compilers cost more than
they save. The oracle grid (``production_spark``), the coverage simulations (``nightly_spark``: both
through :func:`nightly_execution`), the benchmark and the tests of a nightly run's own set-up
(spark-submit, the cluster, the console script in its own session) keep Spark's defaults.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

SMALL_DATA_EXECUTION = {
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
}


@contextlib.contextmanager
def nightly_execution(spark) -> Iterator:
    """The suite's session executing as a nightly run does (generated code, adaptive execution:
    Spark's defaults) inside the block, the small-data settings back after. For the oracle grid
    (``production_spark``) and for tests whose cost is their rows -- the coverage simulations and
    the bootstrap expansions of many datasets -- where the compilers pay for themselves (measured:
    the guardrails' coverage simulation alone, 23.4 s -> 16.7 s)."""
    for key in SMALL_DATA_EXECUTION:
        spark.conf.unset(key)
    try:
        yield spark
    finally:
        for key, value in SMALL_DATA_EXECUTION.items():
            spark.conf.set(key, value)
