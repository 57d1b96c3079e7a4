"""The Spark settings the suite runs its small inputs with: the suite's own session (the root
``conftest.py``) and the fault tests' child drivers (``tests/faults.py``).

Expressions interpreted (no Java generated and compiled per query) and no adaptive re-planning, the
way Spark's own test suites run small queries: on hundreds of requests the compilers cost more than
they save. The oracle grid (``production_spark``), the benchmark and the tests of a nightly run's
own set-up (spark-submit, the cluster, the console script in its own session) keep Spark's defaults.
"""

SMALL_DATA_EXECUTION = {
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
}
