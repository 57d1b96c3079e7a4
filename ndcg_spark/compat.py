"""What differs between the supported pyspark versions (3.5 to 4.x), decided once, here.

Every other module calls these helpers instead of testing the version itself, so a difference
between versions is one branch in one place, and the same inputs give the same numbers on every
supported version (``tests/test_versions.py`` checks the per-request rows across versions).
"""

from __future__ import annotations

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


def coalesces_cached_plans_safely(session: SparkSession) -> bool:
    """Whether the session's Spark (the JVM's, which may differ from this pyspark under Spark
    Connect) may be let to coalesce the partitions of a plan being cached: 4.0 and later.

    Spark 3.5.0 coalesces them by default and a join over such a cache can lose rows
    (SPARK-45282, a correctness bug); 3.5.1 fixed it by not coalescing a cached plan's last
    stage at all. So on 3.5 the session's own setting is left alone."""
    major = session.version.split(".", 1)[0]
    return major.isdigit() and int(major) >= 4


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
