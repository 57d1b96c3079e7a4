"""Reading inputs and writing run-partitioned outputs, the same on a classic and a Connect session.

Outputs are partitioned by ``run_id``. A write replaces the partitions of this run and nothing
else (dynamic partition overwrite): the previous night stays readable while the new one is
written, and re-running a run id replaces exactly that run. Everything here goes through the
DataFrame reader and writer, the catalog and parameterized SQL -- no JVM handle (Spark Connect
has none) -- so paths are resolved where Spark runs (the Connect server, the cluster).

Catalog tables are written in the configured ``format``: ``parquet`` (default) and ``csv`` as
Spark data source tables (``insertInto`` under dynamic partition overwrite, a run cleared with
``ALTER TABLE … DROP PARTITION``); ``delta`` and ``iceberg`` through the table's own writer
(``writeTo(…).overwritePartitions()``, a run cleared with ``DELETE FROM … WHERE run_id = :run_id``),
as those formats keep no Hive-style partitions to drop.
"""

from __future__ import annotations

import logging
import uuid

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.errors import InputError
from ndcg_spark.formats.trec import read_trec_qrels, read_trec_run
from ndcg_spark.job.config import RUN_ID_PATTERN, TABLE_FORMATS, Source

logger = logging.getLogger(__name__)


def read_source(spark: SparkSession, source: Source, role: str, *, trailing_fields: str = "refuse") -> DataFrame:
    """Read a Parquet/CSV path, a TREC run or qrels file or a catalog table; a missing one is an
    :class:`InputError`. A TREC file's malformed lines are kept, for validation's rules
    (:mod:`ndcg_spark.formats.trec`); ``trailing_fields``: how a TREC line with more fields than its
    format reads (``ignore``: as trec_eval does, under the ``trec_eval`` preset).

    The schema is resolved here, so a missing input is reported when it is read on a Spark
    Connect session too (which would otherwise analyse it only when the first job runs).
    """
    try:
        if source.table is not None:
            df = spark.read.table(source.table)
        elif source.format == "trec_run":
            df = read_trec_run(spark, source.path, keep_malformed=True, trailing_fields=trailing_fields)
        elif source.format == "trec_qrels":
            df = read_trec_qrels(spark, source.path, keep_malformed=True, trailing_fields=trailing_fields)
        elif source.format == "csv":
            df = spark.read.option("header", True).option("inferSchema", True).csv(source.path)
        else:
            df = spark.read.parquet(source.path)
        df.schema  # noqa: B018 - forces the analysis (a Connect session is lazy about it)
    except AnalysisException as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{role}: cannot read {source.describe()}: {first_line}") from None
    return df


def write_run_partitioned(df: DataFrame, target: Source, partition_by: tuple[str, ...] = ("run_id",)) -> None:
    """Write ``df`` replacing only the ``partition_by`` partitions it contains.

    A path target is written as a partitioned dataset in ``target.format``; a table target is
    created on first use (in ``target.format``) and afterwards filled under dynamic partition
    overwrite (the table's column order is respected): ``insertInto(overwrite=True)`` for
    ``parquet``/``csv``, ``writeTo(…).overwritePartitions()`` for ``delta``/``iceberg``.
    """
    if target.table is not None:
        _write_table(df, target, partition_by)
        return
    (
        df.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(*partition_by)
        .format(target.format)
        .option("header", True)
        .save(target.path)
    )


def _write_table(df: DataFrame, target: Source, partition_by: tuple[str, ...]) -> None:
    spark = df.sparkSession
    table_format = target.format in TABLE_FORMATS
    if not spark.catalog.tableExists(target.table):
        parts = target.table.split(".")
        if len(parts) > 1:  # a configured database that does not exist yet (first night)
            spark.sql("CREATE DATABASE IF NOT EXISTS IDENTIFIER(:db)", args={"db": ".".join(parts[:-1])})
        if table_format:
            df.writeTo(target.table).using(target.format).partitionedBy(*map(F.col, partition_by)).create()
        else:
            df.write.format(target.format).partitionBy(*partition_by).saveAsTable(target.table)
        return
    table_columns = spark.read.table(target.table).columns
    missing = sorted(set(table_columns) ^ set(df.columns))
    if missing:
        raise InputError(
            f"output table {target.table}: columns differ from this run's ({', '.join(missing)}); "
            "write to a new table or migrate the existing one"
        )
    if table_format:
        df.select(*table_columns).writeTo(target.table).overwritePartitions()
    else:
        df.select(*table_columns).write.option("partitionOverwriteMode", "dynamic").insertInto(
            target.table, overwrite=True
        )


def read_run(spark: SparkSession, target: Source, run_id: str | None = None, *, merge_schema: bool = False) -> DataFrame:
    """Read an output written by :func:`write_run_partitioned`, optionally one run only.

    ``merge_schema``: a path table's columns are those of all its files (the runs written by an
    older version lack the newer columns: null there), not those of whichever file Spark reads first.
    One run of a path table is always read so: its own columns, whatever older nights lack.
    """
    if target.table is not None:
        return _of_run(spark.read.table(target.table), run_id)
    return _of_run(_load_path(spark, target, merge_schema or run_id is not None), run_id, cast=True)


def read_written(
    spark: SparkSession, target: Source, run_id: str | None = None, *, merge_schema: bool = False
) -> DataFrame | None:
    """:func:`read_run` of an output that has been written at all, None when it has not (a path:
    a missing or empty folder). One read: a path table's schema is inferred once (a Spark job
    each time), where asking :func:`output_exists` first and then reading would infer it twice."""
    if target.table is not None:
        return read_run(spark, target, run_id, merge_schema=merge_schema) if spark.catalog.tableExists(target.table) else None
    table = _load_written_path(spark, target, merge_schema)
    return None if table is None else _of_run(table, run_id, cast=True)


def output_exists(spark: SparkSession, target: Source) -> bool:
    """Whether an output table or path has been written at all (a path: whether Spark reads a
    table there -- a missing or empty folder is not one). To read it too, :func:`read_written`."""
    if target.table is not None:
        return spark.catalog.tableExists(target.table)
    return _load_written_path(spark, target) is not None


def _load_path(spark: SparkSession, target: Source, merge_schema: bool = False) -> DataFrame:
    """A path table as Spark loads it (``run_id`` its partition column; the schema inferred: a job)."""
    reader = spark.read.option("basePath", target.path).option("mergeSchema", merge_schema)
    return reader.option("header", True).format(target.format).load(target.path)


def _load_written_path(spark: SparkSession, target: Source, merge_schema: bool = False) -> DataFrame | None:
    """:func:`_load_path`, or None when nothing was written there (a missing or empty folder)."""
    try:
        table = _load_path(spark, target, merge_schema)
        table.schema  # noqa: B018 - lists the folder where Spark runs (a Connect session is lazy about it)
    except AnalysisException:
        return None
    return table


def _of_run(df: DataFrame, run_id: str | None, *, cast: bool = False) -> DataFrame:
    """``df``'s rows of ``run_id`` (all with None); ``cast``: a path table's ``run_id`` as the
    string it was written as (partition discovery infers a type from the folder names)."""
    if cast:
        df = df.withColumn("run_id", F.col("run_id").cast("string"))
    return df if run_id is None else df.filter(F.col("run_id") == F.lit(run_id))


def clear_run(spark: SparkSession, target: Source, run_id: str) -> None:
    """Remove the rows of ``run_id`` from an output, if it has any.

    A dynamic partition overwrite of zero rows replaces nothing, so an output that may be empty
    for a run (the quarantine table) is cleared first: re-running a night that had quarantined
    rows on clean input must not leave the old rows behind. A path table gets a static
    partition overwrite of zero rows (the run's folder goes, nothing else is touched); a ``parquet``/``csv``
    catalog table drops the partition; a ``delta``/``iceberg`` table deletes the run's rows. No
    SQL is assembled from values: the table name goes in as a parameter, and so does the run id
    except in a partition spec, which takes only a literal up to Spark 4.0 (:func:`_partition`).
    """
    if target.table is not None:
        if not spark.catalog.tableExists(target.table):
            return
        if target.format in TABLE_FORMATS:
            spark.sql("DELETE FROM IDENTIFIER(:table) WHERE run_id = :run_id",
                      args={"table": target.table, "run_id": run_id})
        else:
            spark.sql(f"ALTER TABLE IDENTIFIER(:table) DROP IF EXISTS {_partition(run_id)}",
                      args={"table": target.table})
        return
    table = _load_written_path(spark, target)  # one read: whether there is a table, and the table
    if table is not None:
        _clear_path_partition(spark, table, target, run_id)


def _clear_path_partition(spark: SparkSession, table: DataFrame, target: Source, run_id: str) -> None:
    """``INSERT OVERWRITE … PARTITION (run_id = …)`` of zero rows into the path table ``table`` (as
    loaded, seen through a temporary view): a static partition overwrite removes that partition's
    folder and writes nothing; every other partition is untouched."""
    suffix = uuid.uuid4().hex
    view, empty = f"ndcg_spark_clear_{suffix}", f"ndcg_spark_empty_{suffix}"
    table.createOrReplaceTempView(view)
    spark.createDataFrame([], table.drop("run_id").schema).createOrReplaceTempView(empty)
    try:
        logger.debug("clearing run %s of %s", run_id, target.describe())
        # the two view names are this function's own (a uuid), never a user's value; Spark 3.5 binds
        # no parameter in an INSERT's query, so they stand in the statement as they are
        spark.sql(f"INSERT OVERWRITE TABLE {view} {_partition(run_id)} SELECT * FROM {empty}")
    finally:
        spark.catalog.dropTempView(view)
        spark.catalog.dropTempView(empty)


def _partition(run_id: str) -> str:
    """``PARTITION (run_id = '…')``. Spark 3.5 and 4.0 take only a literal in a partition spec (no
    parameter marker), so the run id is written as one -- after checking that it holds letters,
    digits and ``_.:-`` alone, as every run id must, so it cannot end the quoted literal.

    >>> _partition("2026-11-29")
    "PARTITION (run_id = '2026-11-29')"
    >>> _partition("x') OR (1=1")
    Traceback (most recent call last):
    ...
    ValueError: run id "x') OR (1=1": only letters, digits and '_.:-' may stand in a partition spec
    """
    if not RUN_ID_PATTERN.match(run_id):
        raise ValueError(f"run id {run_id!r}: only letters, digits and '_.:-' may stand in a partition spec")
    return f"PARTITION (run_id = '{run_id}')"
