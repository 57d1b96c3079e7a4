"""Output tables that are tables: catalog tables (Parquet, CSV) and Delta or Iceberg tables.

A run's write to one of them (:func:`write_table`) creates it on the first night and afterwards
replaces that run's partitions and nothing else:

- ``parquet``/``csv`` catalog tables: ``insertInto`` under dynamic partition overwrite (the table's
  column order; a run cleared with ``ALTER TABLE … DROP PARTITION``);
- ``delta``/``iceberg`` tables (a Delta table also by path): ``writeTo(…).overwritePartitions()``,
  **one commit** of the format, which a reader sees whole or not at all; a run cleared by
  ``writeTo(…).overwrite(run_id = …)`` of no rows, one commit too. A commit that loses to another
  writer's (the formats' optimistic concurrency; an Iceberg overwrite is made serializable from the
  snapshot it starts on, as a Delta write is) is a :class:`~ndcg_spark.errors.CommitConflict`.

A newer version of the job may write more columns than an existing table has (as the unjudged
bounds did). Such an **additive** change is applied to the table on the way: Delta merges the
schema within the write's own commit (``mergeSchema``), the others get
``ALTER TABLE … ADD COLUMNS`` first; older nights read the new columns as null. A column the table
has and a newer version retired (:data:`RETIRED_COLUMNS`: a column renamed, e.g. the comparison's pool
recall once ``recall`` became a metric) is written as null from then on: the older nights keep their
values there. Any other column the table has and the run does not write, or writes with another type,
is refused before anything is written (:func:`schema_change`), naming the columns and the statement
that migrates the table.

No SQL is assembled from a user's values: table names go in as ``IDENTIFIER(:table)`` and run ids
as parameters, except a Parquet partition spec (a literal only up to Spark 4.0: :func:`partition_spec`)
and the column list of ``ADD COLUMNS``: the run's own column names, each checked to be an
identifier and quoted, with the type Spark gives the run's column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from ndcg_spark.comparison.columns import COMPARISON_RENAMED
from ndcg_spark.compat import parameterized_sql
from ndcg_spark.config.job import RUN_ID_PATTERN, Source
from ndcg_spark.errors import CommitConflict, InputError, causes, describe_spark_error
from ndcg_spark.storage.formats import FORMATS, TableFormat, format_named

__all__ = ["SchemaChange", "clear_table_run", "commit_conflict", "current_version", "fresh", "partition_spec", "quoted_name",
           "schema_change", "table_exists", "write_table"]

#: a column or table name part that may stand, quoted, in a statement (every column ndcg-spark writes)
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quoted_name(target: Source) -> str:
    """The table's name as SQL text, for the statements that take no ``IDENTIFIER(:name)`` (Delta's
    ``DESCRIBE HISTORY``, ``… VERSION AS OF n``): each part checked to be an identifier and quoted,
    a Delta path quoted whole.

    >>> quoted_name(Source(table="lake.ndcg.candidates", format="iceberg"))
    '`lake`.`ndcg`.`candidates`'
    >>> quoted_name(Source(path="/w/c`x", format="delta"))
    'delta.`/w/c``x`'
    """
    if target.table is None:
        return target.table_name  # delta.`<path>`, its backticks doubled (Source.table_name)
    parts = target.table.split(".")
    if not all(_COLUMN.match(p) for p in parts):
        raise ValueError(f"table {target.table!r}: only identifiers may stand as a table name in a statement")
    return ".".join(f"`{p}`" for p in parts)


def fresh(spark: SparkSession, target: Source) -> None:
    """Make the session's next read of the table see its latest commit (an Iceberg table's: its
    Spark catalog caches a loaded table, so a process would not see another's commits meanwhile --
    nor another attempt's row on the run-status table; Delta reads its log's latest version on every
    read; other tables need nothing)."""
    target.kind.fresh(spark, target.table_name)


def current_version(spark: SparkSession, target: Source, fmt: str | None = None) -> int | None:
    """The table's current version in its format (``fmt``: a catalog table's provider, when the
    source does not declare it): Delta's version, Iceberg's snapshot id (None: no snapshot yet)."""
    kind = format_named(fmt) if fmt is not None else target.kind
    return kind.current_version(spark, target.table or target.table_name, quoted_name(target))


#: how Delta says that a path holds no table (yet): no folder, no log, or a log with no version
#: committed -- what another attempt creating the table shows meanwhile
_NO_DELTA_TABLE = ("PATH_NOT_FOUND", "DELTA_MISSING_DELTA_TABLE", "DELTA_TABLE_NOT_FOUND")


def table_exists(spark: SparkSession, target: Source) -> bool:
    """Whether the table has been created (a Delta path: whether its first version is committed;
    Delta 3's ``tableExists`` says so as soon as the log folder is there, before any version)."""
    if target.table is not None:
        return spark.catalog.tableExists(target.table)
    try:
        spark.read.format(target.format).load(target.path).schema  # noqa: B018 - loads the latest version
    except AnalysisException as exc:
        if any(name in str(exc) for name in _NO_DELTA_TABLE):
            return False
        raise
    return True


@dataclass(frozen=True)
class SchemaChange:
    """How a run's columns differ from an existing table's (names compared as Spark does, types
    by their SQL names: nullability, also of nested fields, is not compared)."""

    #: the run's columns the table lacks, in the run's order
    added: tuple[StructField, ...] = ()
    #: the table's columns the run does not write
    dropped: tuple[str, ...] = ()
    #: (column, the table's type, the run's type)
    retyped: tuple[tuple[str, str, str], ...] = ()

    @property
    def additive(self) -> bool:
        return not (self.dropped or self.retyped)


def schema_change(table: StructType, run: StructType) -> SchemaChange:
    """What writing ``run``'s columns into a table of schema ``table`` would change.

    >>> from pyspark.sql.types import DoubleType, LongType, StringType
    >>> old = StructType([StructField("run_id", StringType()), StructField("n", LongType())])
    >>> new = StructType([*old.fields, StructField("share", DoubleType())])
    >>> [f.name for f in schema_change(old, new).added], schema_change(old, new).additive
    (['share'], True)
    >>> schema_change(new, StructType([old.fields[0], StructField("n", DoubleType())]))
    SchemaChange(added=(), dropped=('share',), retyped=(('n', 'bigint', 'double'),))
    """
    have = {f.name.lower(): f for f in table.fields}
    want = {f.name.lower(): f for f in run.fields}
    return SchemaChange(
        added=tuple(f for f in run.fields if f.name.lower() not in have),
        dropped=tuple(f.name for f in table.fields if f.name.lower() not in want),
        retyped=tuple((f.name, have[f.name.lower()].dataType.simpleString(), f.dataType.simpleString())
                      for f in run.fields
                      if f.name.lower() in have
                      and have[f.name.lower()].dataType.simpleString() != f.dataType.simpleString()),
    )


def write_table(df: DataFrame, target: Source, partition_by: Sequence[str]) -> None:
    """Write ``df`` into the table ``target``: create it with the first run, afterwards replace only
    the ``partition_by`` partitions ``df`` has (module docstring), adding the columns it lacks."""
    spark = df.sparkSession
    if not table_exists(spark, target) and _create(df, target, partition_by):
        return  # created by writing the night into it
    existing = spark.read.table(target.table_name).schema
    df = _with_retired(df, existing)
    change = schema_change(existing, df.schema)
    if not change.additive:
        raise _refusal(target, change)
    columns = [*(f.name for f in existing.fields), *(f.name for f in change.added)]
    add = (lambda: _add_columns(spark, target, change.added)) if change.added else None
    _committed(lambda: target.kind.write_night(df, target.table_name, columns, add), target)


#: columns a newer version no longer writes (renamed: the new name -> the old name); a table that has
#: one gets it as null from the next night on (the comparison's, :mod:`ndcg_spark.comparison.columns`)
RETIRED_COLUMNS = frozenset(COMPARISON_RENAMED.values())


def _with_retired(df: DataFrame, existing: StructType) -> DataFrame:
    """``df`` with a typed null for each :data:`RETIRED_COLUMNS` column the table has and ``df`` lacks."""
    have = {f.name.lower() for f in df.schema.fields}
    retired = [f for f in existing.fields if f.name in RETIRED_COLUMNS and f.name.lower() not in have]
    return df.withColumns({f.name: F.lit(None).cast(f.dataType) for f in retired}) if retired else df


def clear_table_run(spark: SparkSession, target: Source, run_id: str) -> None:
    """Remove the rows of ``run_id`` from the table ``target``, if it exists: Delta and Iceberg in
    one commit that overwrites ``run_id = …`` with no rows, a Parquet or CSV catalog table by
    dropping the run's partition."""
    if not table_exists(spark, target):
        return
    partition = partition_spec(run_id)  # the run id checked (a literal in a Parquet partition spec)
    _committed(lambda: target.kind.clear_night(spark, target.table_name, run_id, partition), target)


def partition_spec(run_id: str) -> str:
    """``PARTITION (run_id = '…')``. Spark 3.5 and 4.0 take only a literal in a partition spec (no
    parameter marker), so the run id is written as one -- after checking that it holds letters,
    digits and ``_.:-`` alone, as every run id must, so it cannot end the quoted literal.

    >>> partition_spec("2026-11-29")
    "PARTITION (run_id = '2026-11-29')"
    >>> partition_spec("x') OR (1=1")
    Traceback (most recent call last):
    ...
    ValueError: run id "x') OR (1=1": only letters, digits and '_.:-' may stand in a partition spec
    """
    if not RUN_ID_PATTERN.match(run_id):
        raise ValueError(f"run id {run_id!r}: only letters, digits and '_.:-' may stand in a partition spec")
    return f"PARTITION (run_id = '{run_id}')"


def _create(df: DataFrame, target: Source, partition_by: Sequence[str]) -> bool:
    """The first night's table (its database too, when it names one); True when the night was
    written with it. A Parquet or CSV table is created by writing the night into it; a Delta or Iceberg table is created empty by ``CREATE TABLE
    IF NOT EXISTS`` with the run's columns (nullable) and partitioning, and the caller then writes
    the night as every night is written: two attempts of a first night that both found no table
    both create it without failing (the second finds it there, or fails to create it because the
    first just did), and their writes meet on the table's commits like any other night's -- except
    on a Delta path whose log folder the second finds before the first's first version: a
    CommitConflict then."""
    spark = df.sparkSession
    parts = target.table.split(".") if target.table is not None else []
    if len(parts) > 1:  # a configured database that does not exist yet (first night)
        parameterized_sql(spark, "CREATE DATABASE IF NOT EXISTS IDENTIFIER(:db)", {"db": ".".join(parts[:-1])})
    columns = _column_list(target, df.schema.fields)
    partitions = _column_list(target, [df.schema[name] for name in partition_by], types=False)
    try:
        written = _committed(lambda: target.kind.create(df, target.table_name, partition_by, columns, partitions),
                             target)
    except Exception:
        # another attempt created it since this one looked: IF NOT EXISTS does not cover a Delta path
        # whose log appeared meanwhile (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION), nor the commit of
        # its version 0 that lost to the other's. The table is there: the night is written into it.
        if not target.kind.versioned or not table_exists(spark, target):
            raise
        return False
    if written:
        return True
    if not table_exists(spark, target):  # IF NOT EXISTS skipped a Delta log folder with no version yet
        raise CommitConflict(
            f"{target.describe()}: another writer is creating the table (its log folder is there, with no version "
            f"yet); nothing of this write is in the table. If no other writer is, one was killed creating it: "
            f"remove the folder {target.path}/_delta_log, which holds no version, and run again.",
            target.table_name,
        )
    return False


def commit_conflict(exc: BaseException, table_format: TableFormat | None = None) -> str | None:
    """The name of the concurrent-commit failure behind ``exc`` (or one of its causes), as
    ``table_format`` (a :class:`~ndcg_spark.storage.formats.TableFormat`; None: any format) reports
    one, or None when ``exc`` is about something else.

    >>> commit_conflict(RuntimeError("io.delta.exceptions.ConcurrentAppendException: [DELTA_CONCURRENT_APPEND] ..."))
    'ConcurrentAppendException'
    >>> commit_conflict(RuntimeError("org.apache.iceberg.exceptions.CommitFailedException: Cannot commit"))
    'CommitFailedException'
    >>> commit_conflict(ValueError("bad grade")) is None
    True
    """
    formats = FORMATS.values() if table_format is None else (table_format,)
    for cause in causes(exc):
        for text in (str(cause), describe_spark_error(cause) or ""):
            found = next((name for f in formats if (name := f.conflict(text))), None)
            if found:
                return found
    return None


def _committed(write, target: Source):
    """Run ``write`` (one commit of ``target``'s format) and return what it returns; a commit that
    lost to another writer's is a CommitConflict."""
    try:
        return write()
    except Exception as exc:
        lost = commit_conflict(exc, target.kind)
        if lost is None:
            raise
        raise _conflict(target, exc, f"committed first ({lost})") from exc


def _conflict(target: Source, exc: BaseException, what: str) -> CommitConflict:
    first = (describe_spark_error(exc) or str(exc)).strip().splitlines()[0]
    return CommitConflict(
        f"{target.describe()}: another writer {what}; nothing of this write is in the table (a {target.format} "
        f"commit is all or nothing). Spark said: {first}",
        target.table_name,
    )


def _add_columns(spark: SparkSession, target: Source, fields: Sequence[StructField]) -> None:
    """``ALTER TABLE … ADD COLUMNS`` of the run's new columns (nullable: the older nights have none)."""
    columns = _column_list(target, fields)
    parameterized_sql(spark, f"ALTER TABLE IDENTIFIER(:table) ADD COLUMNS ({columns})", {"table": target.table_name})


def _column_list(target: Source, fields: Sequence[StructField], *, types: bool = True) -> str:
    """```name` type, …`` of the run's own columns, each name checked to be an identifier; the type
    is the SQL name Spark gives the column's type."""
    for f in fields:
        if not _COLUMN.match(f.name):
            raise InputError(f"output {target.describe()}: the column {f.name!r} is not an identifier")
    return ", ".join(f"`{f.name}` {f.dataType.simpleString()}" if types else f"`{f.name}`" for f in fields)


def _refusal(target: Source, change: SchemaChange) -> InputError:
    """The error for a non-additive change: the columns, and the statement(s) that migrate the table."""
    what = [f"the table has {', '.join(change.dropped)}, which this run does not write"] if change.dropped else []
    what += [f"{name} is {old} in the table and {new} in this run" for name, old, new in change.retyped]
    return InputError(
        f"output {target.describe()}: this run's columns differ from the table's beyond added columns: "
        f"{'; '.join(what)}. Nothing was written. {migration(target, change)}"
    )


def migration(target: Source, change: SchemaChange) -> str:
    """The statement(s) that let the run write ``target``, as a sentence: ``To migrate: …; … (then run
    again).``

    A dropped column of a Delta or Iceberg table is dropped (Delta needs column mapping for it, which
    the first statement turns on); a retyped column, or a dropped one of a Parquet or CSV catalog
    table (which cannot drop columns), needs a new table: the old one is renamed (a Delta path table's
    folder moved) and keeps the older nights, and the next run creates the table anew.
    """
    if target.table is None and (change.retyped or not target.kind.versioned):
        return f"To migrate: move the folder {target.path} aside, keeping the older nights (then run again)."
    statements = target.kind.migration(target.table_name, change.dropped, bool(change.retyped))
    return f"To migrate: {'; '.join(statements)} (then run again)."
