"""Reading inputs and writing run-partitioned outputs, the same on a classic and a Connect session.

Outputs are partitioned by ``run_id``. A write replaces the partitions of this run and nothing
else (dynamic partition overwrite): the previous night stays readable while the new one is
written, and re-running a run id replaces exactly that run. Everything here goes through the
DataFrame reader and writer, the catalog and parameterized SQL -- no JVM handle (Spark Connect
has none) -- so paths are resolved where Spark runs (the Connect server, the cluster).

Tables -- catalog tables in any format, and Delta tables by path -- are written by
:mod:`ndcg_spark.storage.tables`: created on the first night, a run's partitions replaced in one commit
of Delta or Iceberg, additive column changes applied to the table and others refused.
"""

from __future__ import annotations

import logging
import uuid

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.errors import InputError
from ndcg_spark.config.job import Source
from ndcg_spark.storage.tables import clear_table_run, fresh, partition_spec, table_exists, write_table

logger = logging.getLogger(__name__)


def read_source(spark: SparkSession, source: Source, role: str, *, trailing_fields: str = "refuse") -> DataFrame:
    """Read a Parquet/CSV path, a TREC run or qrels file, a catalog table or a Delta path table; a
    missing one is an :class:`InputError`. A TREC file's malformed lines are kept, for validation's rules
    (:mod:`ndcg_spark.formats.trec`); ``trailing_fields``: how a TREC line with more fields than its
    format reads (``ignore``: as trec_eval does, under the ``trec_eval`` preset).

    The schema is resolved here, so a missing input is reported when it is read on a Spark
    Connect session too (which would otherwise analyse it only when the first job runs).
    """
    try:
        if source.table_name is not None:
            df = spark.read.table(source.table_name)
        else:
            df = source.kind.read_path(spark, source.path, trailing_fields=trailing_fields)
        df.schema  # noqa: B018 - forces the analysis (a Connect session is lazy about it)
    except AnalysisException as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{role}: cannot read {source.describe()}: {first_line}") from None
    return df


def write_run_partitioned(df: DataFrame, target: Source, partition_by: tuple[str, ...] = ("run_id",)) -> None:
    """Write ``df`` replacing only the ``partition_by`` partitions it contains.

    A path target is written as a partitioned dataset in ``target.format``; a table target (a
    catalog table, a Delta path) is created on first use and afterwards filled under dynamic
    partition overwrite (:func:`~ndcg_spark.storage.tables.write_table`).
    """
    if target.table_name is not None:
        write_table(df, target, partition_by)
        return
    target.kind.write_path(df, target.path, partition_by)


def read_run(spark: SparkSession, target: Source, run_id: str | None = None, *, merge_schema: bool = False) -> DataFrame:
    """Read an output written by :func:`write_run_partitioned`, optionally one run only.

    ``merge_schema``: a path table's columns are those of all its files (the runs written by an
    older version lack the newer columns: null there), not those of whichever file Spark reads first.
    One run of a path table is always read so: its own columns, whatever older nights lack.
    """
    if target.table_name is not None:
        fresh(spark, target)  # another process's latest commit (the run-status row of another attempt)
        return _of_run(spark.read.table(target.table_name), run_id)
    return _of_run(_load_path(spark, target, merge_schema or run_id is not None), run_id, cast=True)


def read_written(
    spark: SparkSession, target: Source, run_id: str | None = None, *, merge_schema: bool = False
) -> DataFrame | None:
    """:func:`read_run` of an output that has been written at all, None when it has not (a path:
    a missing or empty folder). One read: a path table's schema is inferred once (a Spark job
    each time), where asking whether it exists first and then reading would infer it twice."""
    if target.table_name is not None:
        return read_run(spark, target, run_id, merge_schema=merge_schema) if table_exists(spark, target) else None
    table = _load_written_path(spark, target, merge_schema)
    return None if table is None else _of_run(table, run_id, cast=True)


def read_run_folder(spark: SparkSession, target: Source, run_id: str) -> list:
    """The rows of a path table's ``run_id=…`` folder alone (no other run's file is listed, and its
    own file's columns are the rows'), collected; [] when the run has none."""
    folder = f"{target.path.rstrip('/')}/run_id={run_id}"
    try:
        return target.kind.load_written(spark, folder, False).collect()
    except AnalysisException as exc:
        if any(word in str(exc) for word in ("PATH_NOT_FOUND", "does not exist", "UNABLE_TO_INFER_SCHEMA")):
            return []
        raise


def read_with_schema(spark: SparkSession, target: Source, schema, run_id: str | None = None) -> DataFrame | None:
    """A path table read with its ``schema`` given -- its partition values stay the strings they were
    written as, and no job infers it -- or None when nothing was written there."""
    try:
        df = spark.read.schema(schema).option("basePath", target.path).option("header", True).format(
            target.format).load(target.path)
        df.schema  # noqa: B018 - lists the folder where Spark runs (a Connect session is lazy about it)
    except AnalysisException:
        return None
    return _of_run(df, run_id)


def _load_path(spark: SparkSession, target: Source, merge_schema: bool = False) -> DataFrame:
    """A path table as Spark loads it (``run_id`` its partition column; the schema inferred: a job)."""
    return target.kind.load_written(spark, target.path, merge_schema)


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
    partition overwrite of zero rows (the run's folder goes, nothing else is touched); a table
    :func:`~ndcg_spark.storage.tables.clear_table_run` (a Parquet/CSV partition dropped, a Delta or
    Iceberg overwrite of the run's rows with none: one commit).
    """
    if target.table_name is not None:
        clear_table_run(spark, target, run_id)
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
        spark.sql(f"INSERT OVERWRITE TABLE {view} {partition_spec(run_id)} SELECT * FROM {empty}")
    finally:
        spark.catalog.dropTempView(view)
        spark.catalog.dropTempView(empty)
