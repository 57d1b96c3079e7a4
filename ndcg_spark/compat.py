"""What differs between the supported pyspark versions (3.5 to 4.x), decided once, here.

Every other module calls these helpers instead of testing the version itself, so a difference
between versions is one branch in one place, and the same inputs give the same numbers on every
supported version (``tests/test_versions.py`` checks the per-request rows across versions).
"""

from __future__ import annotations

import re

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

#: ``Column.try_cast`` arrived in pyspark 4.0; 3.5 has TRY_CAST only in its SQL.
HAS_COLUMN_TRY_CAST = hasattr(Column, "try_cast")


def try_cast_column(name: str, type_name: str) -> Column:
    """Column ``name`` cast to ``type_name``, null where the value does not convert (never an
    error, whatever ``spark.sql.ansi.enabled`` says).

    ``type_name`` is one of this package's own type names (``"double"``), never user input; the
    column name is quoted as an identifier, so any characters it holds stay a name.

    >>> df = spark.createDataFrame([("1.5",), ("x",), (None,)], "v string")
    >>> [r[0] for r in df.select(try_cast_column("v", "double")).collect()]
    [1.5, None, None]
    """
    if HAS_COLUMN_TRY_CAST:
        return F.col(_quoted(name)).try_cast(type_name)
    return F.expr(f"try_cast({_quoted(name)} AS {type_name})")


#: what a run id may hold (``ndcg_spark.job.config.validate_run_id``): nothing that can end a quoted literal
_RUN_ID_CHARACTERS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def run_partition_clause(spark: SparkSession, run_id: str) -> tuple[str, dict[str, str]]:
    """The ``PARTITION (run_id = …)`` clause of a statement, and its parameters.

    Spark 4 takes a parameter marker there. Spark 3.5's parser takes only a literal in a
    partition spec, so on a 3.5 server (``spark.version``: under Spark Connect the server's, not
    the client's) the run id is written as one -- only after checking that it holds letters,
    digits and ``_.:-`` alone, as every run id must, so it cannot end the quoted literal.

    >>> clause, args = run_partition_clause(spark, "2026-11-29")
    >>> (clause, args) in [("PARTITION (run_id = :run_id)", {"run_id": "2026-11-29"}),  # Spark 4
    ...                    ("PARTITION (run_id = '2026-11-29')", {})]                  # Spark 3.5
    True
    """
    if int(spark.version.split(".")[0]) >= 4:
        return "PARTITION (run_id = :run_id)", {"run_id": run_id}
    if not _RUN_ID_CHARACTERS.match(run_id):
        raise ValueError(f"run id {run_id!r}: only letters, digits and '_.:-' may stand in a partition spec")
    return f"PARTITION (run_id = '{run_id}')", {}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
