"""Each table format one object: what a ``format:`` in the job YAML means when a table is read,
written, cleared of a night, read at a version, and when its commit loses to another writer's.

============  ==========================================================================================
``parquet``   files at a path (a partitioned dataset) or a catalog table; a night replaced by dynamic
              partition overwrite (``insertInto``), cleared by dropping its partition
``csv``       the same, as CSV files with a header (inputs: the schema inferred)
``delta``     a Delta table, by path or in a catalog: its own commits and versions; a night replaced
              by ``overwritePartitions`` (one commit), read at a version with ``VERSION AS OF``
``iceberg``   an Iceberg table in a catalog: the same, with snapshots, and an overwrite made
              serializable from the snapshot it starts on
``trec_run``  (``inputs.candidates`` only) a TREC run file; ``trec_qrels`` (``inputs.judgments``
              only) a TREC qrels file: read by :mod:`ndcg_spark.formats.trec`, never written
============  ==========================================================================================

A new format is one class here (registered in :data:`FORMATS`), its paragraph in
docs/operations.md and an entry in the format lane (``tests/lakehouse.py``). The config
(:class:`~ndcg_spark.config.job.Source`: which names exist, which need a table or a path),
:mod:`~ndcg_spark.storage.tables` (create, write and clear a night), :mod:`~ndcg_spark.storage.io`
(read a path, write a path table), :mod:`~ndcg_spark.storage.lineage` (versions) and
:func:`~ndcg_spark.storage.tables.commit_conflict` all ask the format, never its name.

This module is a leaf (the config reads it): pyspark and the rest of the package
are imported inside the methods that use them.

>>> format_named("delta").versioned, format_named("parquet").versioned
(True, False)
>>> [f.name for f in FORMATS.values() if f.writes]
['parquet', 'csv', 'delta', 'iceberg']
>>> format_named("iceberg").conflict("org.apache.iceberg.exceptions.CommitFailedException: Cannot commit")
'CommitFailedException'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from pyspark.sql import DataFrame, SparkSession


class TableFormat:
    """A table format: the defaults are a format of plain files (Parquet's), written by Spark's
    file writer under dynamic partition overwrite, with no versions and no commits of its own."""

    #: the name a job YAML's ``format:`` gives
    name: ClassVar[str] = ""
    #: its own commits and versions: written with ``writeTo``, one commit per write, read at a version
    versioned: ClassVar[bool] = False
    #: may be given as a ``path:`` (a folder), and as a catalog ``table:``
    at_path: ClassVar[bool] = True
    at_table: ClassVar[bool] = True
    #: a path of this format is itself a table Spark names (Delta's ``delta.`<path>```), not files
    path_is_table: ClassVar[bool] = False
    #: written as an output (False: an input format only)
    writes: ClassVar[bool] = True
    #: the input a format of one input only may stand for (``inputs.candidates`` …), else None
    only_for: ClassVar[str | None] = None
    #: what a version of it is called (``delta version 3``, ``iceberg snapshot 4410…``)
    version_word: ClassVar[str] = "version"
    #: how the format says a commit lost to another writer's (its exception classes, error classes)
    conflicts: ClassVar[re.Pattern | None] = None

    # ------------------------------------------------------------------ naming and recognising
    def table_name(self, table: str | None, path: str | None) -> str | None:
        """The name Spark reads and writes the table by: the catalog ``table``, or (a format whose
        path is a table) its path as the format's identifier; None for files at a path."""
        return table

    def conflict(self, text: str) -> str | None:
        """The name of the commit conflict ``text`` (an exception's message) reports, or None."""
        found = self.conflicts.search(text) if self.conflicts is not None else None
        return found.group(1) if found else None

    # ------------------------------------------------------------------ reading
    def read_path(self, spark: SparkSession, path: str, *, trailing_fields: str = "refuse") -> DataFrame:
        """An input given as a path (its schema resolved by the caller)."""
        return spark.read.format(self.name).load(path)

    def load_written(self, spark: SparkSession, path: str, merge_schema: bool) -> DataFrame:
        """An output path table as written by :meth:`write_path` (``run_id`` its partition column)."""
        reader = spark.read.option("basePath", path).option("mergeSchema", merge_schema)
        return reader.option("header", True).format(self.name).load(path)  # header: CSV's (others ignore it)

    def current_version(self, spark: SparkSession, table_name: str, quoted: str) -> int | None:
        """The table's current version (None: none yet; ``quoted``: its name checked and quoted). Only a
        versioned format has one."""
        raise TypeError(f"{self.name} keeps no versions")

    def at_version(self, spark: SparkSession, quoted: str, version: int) -> DataFrame:
        """The table as of ``version`` (``quoted``: its name checked and quoted)."""
        return spark.sql(f"SELECT * FROM {quoted} VERSION AS OF {int(version)}")

    def fresh(self, spark: SparkSession, table_name: str) -> None:
        """Make the session's next read see the table's latest commit (nothing to do by default)."""

    # ------------------------------------------------------------------ writing
    def write_path(self, df: DataFrame, path: str, partition_by: Sequence[str]) -> None:
        """A path table: the partitions ``df`` has replaced (dynamic partition overwrite)."""
        (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy(*partition_by)
         .format(self.name).option("header", True).save(path))  # header: CSV's (others ignore it)

    def create(self, df: DataFrame, table_name: str, partition_by: Sequence[str], columns: str, partitions: str) -> bool:
        """The first night's table. Files: created by writing the night into it (True: written).
        A versioned format creates it empty (False: the caller writes the night as every night)."""
        df.write.format(self.name).partitionBy(*partition_by).saveAsTable(table_name)
        return True

    def write_night(self, df: DataFrame, table_name: str, columns: Sequence[str], add_columns) -> None:
        """Replace the night's partitions of an existing table with ``df``'s rows; ``add_columns``
        (a callable, or None) adds the run's new columns to the table first."""
        spark = df.sparkSession
        if add_columns is not None:
            add_columns()
            columns = spark.read.table(table_name).columns  # a partition column stays last
        df.select(*columns).write.option("partitionOverwriteMode", "dynamic").insertInto(table_name, overwrite=True)

    def clear_night(self, spark: SparkSession, table_name: str, run_id: str, partition: str) -> None:
        """Remove the rows of ``run_id`` (``partition``: its partition spec, checked by the caller)."""
        from ndcg_spark.compat import parameterized_sql

        parameterized_sql(spark, f"ALTER TABLE IDENTIFIER(:table) DROP IF EXISTS {partition}", {"table": table_name})

    def migration(self, table_name: str, dropped: Sequence[str], retyped: bool) -> list[str]:
        """The statements that let a run write a table whose columns it changes beyond adding: files
        cannot drop columns, so the table is renamed (it keeps the older nights) and the next run
        creates it anew."""
        # the new name within the table's catalog: a catalog part there would be read as a namespace
        return [f"ALTER TABLE {table_name} RENAME TO {'.'.join(table_name.split('.')[-2:])}_before"]


class Parquet(TableFormat):
    name = "parquet"

    def read_path(self, spark, path, *, trailing_fields="refuse"):
        return spark.read.parquet(path)


class Csv(TableFormat):
    """CSV files with a header (an input's column types inferred)."""

    name = "csv"

    def read_path(self, spark, path, *, trailing_fields="refuse"):
        return spark.read.option("header", True).option("inferSchema", True).csv(path)


class _Versioned(TableFormat):
    """A format with its own commits: a night replaced in one commit (``overwritePartitions``),
    cleared by an overwrite of its rows with none (one commit too), the table created empty."""

    versioned = True

    def create(self, df, table_name, partition_by, columns, partitions):
        from ndcg_spark.compat import parameterized_sql

        statement = (f"CREATE TABLE IF NOT EXISTS IDENTIFIER(:table) ({columns}) USING {self.name} "
                     f"PARTITIONED BY ({partitions})")
        parameterized_sql(df.sparkSession, statement, {"table": table_name})
        return False

    def writer(self, df: DataFrame, table_name: str, columns: Sequence[str], add_columns) -> Any:
        """The ``writeTo`` of the night, after the new columns (if any) are added."""
        if add_columns is not None:
            add_columns()
        return df.select(*columns).writeTo(table_name)

    def write_night(self, df, table_name, columns, add_columns):
        self.writer(df, table_name, columns, add_columns).overwritePartitions()

    def clear_night(self, spark, table_name, run_id, partition):
        from pyspark.sql import functions as F

        empty = spark.read.table(table_name).limit(0)
        empty.writeTo(table_name).overwrite(F.col("run_id") == F.lit(run_id))

    def migration(self, table_name, dropped, retyped):
        if retyped:
            return super().migration(table_name, dropped, retyped)
        return [f"ALTER TABLE {table_name} DROP COLUMNS ({', '.join(f'`{c}`' for c in dropped)})"]


class Delta(_Versioned):
    """Delta Lake: by path (``delta.`<path>```, no catalog needed) or a catalog table; the new
    columns merged within the write's own commit (``mergeSchema``)."""

    name = "delta"
    path_is_table = True
    conflicts = re.compile(
        r"\b(Concurrent(?:Append|DeleteRead|DeleteDelete|Transaction|Write)Exception|MetadataChangedException"
        r"|ProtocolChangedException|DELTA_CONCURRENT_[A-Z_]+|DELTA_METADATA_CHANGED|DELTA_PROTOCOL_CHANGED)"
    )

    def table_name(self, table, path):
        if table is not None:
            return table
        return "delta.`" + path.replace("`", "``") + "`"

    def current_version(self, spark, table_name, quoted):
        return int(spark.sql(f"DESCRIBE HISTORY {quoted} LIMIT 1").first()["version"])

    def writer(self, df, table_name, columns, add_columns):
        writer = df.select(*columns).writeTo(table_name)
        # the new columns within the write's own commit
        return writer.option("mergeSchema", "true") if add_columns is not None else writer

    def migration(self, table_name, dropped, retyped):
        if retyped:
            return super().migration(table_name, dropped, retyped)
        # dropping a column needs column mapping, which the first statement turns on
        return [f"ALTER TABLE {table_name} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
                f"ALTER TABLE {table_name} DROP COLUMNS ({', '.join(f'`{c}`' for c in dropped)})"]


class Iceberg(_Versioned):
    """Apache Iceberg: a catalog table (no path), snapshots for versions; an overwrite is made
    serializable from the snapshot it starts on (it fails on a concurrent commit to its partitions,
    as a Delta write does, instead of Iceberg retrying it onto the other's); the catalog's cached
    table refreshed before a read."""

    name = "iceberg"
    at_path = False
    version_word = "snapshot"
    conflicts = re.compile(r"\b(CommitFailedException|Found conflicting files)")

    def current_version(self, spark, table_name, quoted):
        from pyspark.sql import functions as F

        self.fresh(spark, table_name)
        history = spark.read.table(f"{table_name}.history").filter("is_current_ancestor")
        latest = history.orderBy(F.col("made_current_at").desc()).select("snapshot_id").first()
        return None if latest is None else int(latest[0])

    def fresh(self, spark, table_name):
        # Iceberg's Spark catalog caches a loaded table (30 s by default): another process's commits
        # -- another attempt's run-status row -- would not be seen meanwhile
        spark.catalog.refreshTable(table_name)

    def writer(self, df, table_name, columns, add_columns):
        writer = super().writer(df, table_name, columns, add_columns).option("isolation-level", "serializable")
        snapshot = self.current_version(df.sparkSession, table_name, "")
        return writer if snapshot is None else writer.option("validate-from-snapshot-id", str(snapshot))


class _TrecFile(TableFormat):
    """A TREC file, read by :mod:`ndcg_spark.formats.trec` with its malformed lines kept for
    validation's rules; an input of one kind only, at a path, never written."""

    at_table = False
    writes = False

    def read_path(self, spark, path, *, trailing_fields="refuse"):
        from ndcg_spark.formats import trec

        read = trec.read_trec_run if self.name == "trec_run" else trec.read_trec_qrels
        return read(spark, path, keep_malformed=True, trailing_fields=trailing_fields)


class TrecRun(_TrecFile):
    name = "trec_run"
    only_for = "inputs.candidates"


class TrecQrels(_TrecFile):
    name = "trec_qrels"
    only_for = "inputs.judgments"


#: every format by its name, in the order the config lists them
FORMATS: dict[str, TableFormat] = {f.name: f for f in (Parquet(), Csv(), Delta(), Iceberg(), TrecRun(), TrecQrels())}


def format_named(name: str) -> TableFormat:
    """The format a ``format:`` names (the config has checked the name)."""
    return FORMATS[name]


def formats_for(where: str) -> tuple[str, ...]:
    """The format names ``where`` (``inputs.candidates``, ``outputs.aggregate`` …) may give."""
    return tuple(f.name for f in FORMATS.values() if f.writes or f.only_for == where)


def versioned_names() -> tuple[str, ...]:
    """The names of the formats with their own commits and versions."""
    return tuple(f.name for f in FORMATS.values() if f.versioned)
