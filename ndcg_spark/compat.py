"""What differs between the supported pyspark versions (3.5 to 4.x) and between a classic and a
Spark Connect session, decided once, here.

Every other module calls these helpers instead of testing the version or the kind of session
itself, so a difference is one branch in one place, and the same inputs give the same numbers on
every supported version (``tests/test_versions.py`` checks the per-request rows across versions).
The few reads that need the driver's JVM (a classic session's, Spark Connect has none) are here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
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


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (it has no ``sparkContext``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def application_id(spark: SparkSession) -> str | None:
    """The Spark application id of the session's driver (``local-…``, ``app-…``, ``application_…``),
    or None when the session does not say (a Spark Connect server may keep it to itself)."""
    if not is_connect(spark):
        return spark.sparkContext.applicationId
    try:
        return spark.conf.get("spark.app.id", None)
    except Exception:  # noqa: BLE001 - a server that refuses the read: the id is just unknown
        return None


def default_parallelism(spark: SparkSession) -> int | None:
    """How many tasks the session runs at once by default (its cores), or None when a Spark
    Connect session does not say (``spark.default.parallelism`` unset on the server)."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    configured = spark.conf.get("spark.default.parallelism", None)
    return int(configured) if configured else None


def size_in_bytes(spark: SparkSession, size: str) -> int:
    """A size setting's text (``"64MB"``) in bytes, as the driver's JVM reads it (a classic session)."""
    return int(spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(size))


def estimated_bytes(df: DataFrame) -> int:
    """Spark's estimate of ``df``'s size: its files', a cached plan's measured size, a local
    relation's rows; Long.MaxValue when Spark cannot tell (then nothing is small). A classic
    session's (its driver's JVM plans it)."""
    return int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())
#: Spark 4.1's switch back to binding SQL parameters where the analyzer meets them (Spark 4.0's way)
CONSTANT_PARAMETERS = "spark.sql.legacy.parameterSubstitution.constantsOnly"


def parameterized_sql(session: SparkSession, statement: str, args: Mapping[str, Any]) -> DataFrame:
    """``session.sql(statement, args=args)``, its named parameters bound on every supported Spark.

    Spark 4.1 substitutes parameters in its parser, through a method a session extension's parser
    must pass on; Delta's does not (delta-io/delta#7640, Delta 4.4) and Iceberg's did not before
    1.12 (apache/iceberg#16625), so in a session with such an extension every marker stays unbound
    (``UNBOUND_SQL_PARAMETER``, ``IDENTIFIER`` "must be a constant STRING"). On Spark 4.1 and later
    the call runs with :data:`CONSTANT_PARAMETERS` set, which binds them where the analyzer meets
    them (a statement is analysed, and a command run, inside ``sql``), and the session's own
    setting is put back after. ndcg-spark's statements use parameters only as values and
    ``IDENTIFIER(:name)``, which both ways bind.

    >>> parameterized_sql(spark, "SELECT :x AS x", {"x": 2}).first().x
    2
    """
    version = tuple(int(p) for p in session.version.split(".")[:2] if p.isdigit())
    if version < (4, 1):
        return session.sql(statement, args=dict(args))
    conf = session.conf
    saved = conf.get(CONSTANT_PARAMETERS, None)
    conf.set(CONSTANT_PARAMETERS, "true")
    try:
        return session.sql(statement, args=dict(args))
    finally:
        if saved is None:
            conf.unset(CONSTANT_PARAMETERS)
        else:
            conf.set(CONSTANT_PARAMETERS, saved)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def to_arrow(df: DataFrame):
    """``df`` collected to the driver as one ``pyarrow.Table``: ``DataFrame.toArrow()`` from pyspark
    4.0 on (classic and Connect); on 3.5, where it does not exist, the classic session's Arrow batches
    (``_collect_as_arrow``), with the table's schema when there are none."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()
    return pa.Table.from_batches(batches) if batches else to_arrow_schema(df.schema).empty_table()
