"""Reading inputs and writing run-partitioned outputs.

Outputs are partitioned by ``run_id``. A write replaces the partitions of this run and nothing
else (dynamic partition overwrite): the previous night stays readable while the new one is
written, and re-running a run id replaces exactly that run.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.utils import AnalysisException

from ndcg_spark.job.config import Source
from ndcg_spark.errors import InputError
from ndcg_spark.formats.trec import read_trec_qrels, read_trec_run


def read_source(spark: SparkSession, source: Source, role: str) -> DataFrame:
    """Read a Parquet/CSV path, a TREC run or qrels file or a catalog table; a missing one is an
    :class:`InputError`. A TREC file's malformed lines are kept, for validation's rules
    (:mod:`ndcg_spark.formats.trec`)."""
    try:
        if source.table is not None:
            return spark.read.table(source.table)
        if source.format == "trec_run":
            return read_trec_run(spark, source.path, keep_malformed=True)
        if source.format == "trec_qrels":
            return read_trec_qrels(spark, source.path, keep_malformed=True)
        if source.format == "csv":
            return spark.read.option("header", True).option("inferSchema", True).csv(source.path)
        return spark.read.parquet(source.path)
    except AnalysisException as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{role}: cannot read {source.describe()}: {first_line}") from None


def write_run_partitioned(df: DataFrame, target: Source, partition_by: tuple[str, ...] = ("run_id",)) -> None:
    """Write ``df`` replacing only the ``partition_by`` partitions it contains.

    A path target is written as a partitioned dataset in ``target.format``; a table target is
    created on first use and afterwards filled with ``insertInto(overwrite=True)`` under dynamic
    partition overwrite (the table's column order is respected).
    """
    spark = df.sparkSession
    if target.table is not None:
        if not spark.catalog.tableExists(target.table):
            parts = target.table.split(".")
            if len(parts) > 1:  # a configured database that does not exist yet (first night)
                spark.sql("CREATE DATABASE IF NOT EXISTS IDENTIFIER(:db)", args={"db": ".".join(parts[:-1])})
            df.write.format(target.format).partitionBy(*partition_by).saveAsTable(target.table)
            return
        table_columns = spark.read.table(target.table).columns
        missing = sorted(set(table_columns) ^ set(df.columns))
        if missing:
            raise InputError(
                f"output table {target.table}: columns differ from this run's ({', '.join(missing)}); "
                "write to a new table or migrate the existing one"
            )
        df.select(*table_columns).write.option("partitionOverwriteMode", "dynamic").insertInto(
            target.table, overwrite=True
        )
        return
    (
        df.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(*partition_by)
        .format(target.format)
        .option("header", True)
        .save(target.path)
    )


def read_run(spark: SparkSession, target: Source, run_id: str | None = None) -> DataFrame:
    """Read an output written by :func:`write_run_partitioned`, optionally one run only."""
    from pyspark.sql import functions as F

    if target.table is not None:
        df = spark.read.table(target.table)
    else:
        reader = spark.read.option("basePath", target.path)
        df = reader.option("header", True).format(target.format).load(target.path)
        df = df.withColumn("run_id", F.col("run_id").cast("string"))
    return df if run_id is None else df.filter(F.col("run_id") == F.lit(run_id))


def output_exists(spark: SparkSession, target: Source) -> bool:
    """Whether an output table or path has been written at all."""
    if target.table is not None:
        return spark.catalog.tableExists(target.table)
    fs, path = _hadoop_path(spark, target.path)
    return fs.exists(path)


def _hadoop_path(spark: SparkSession, path: str, child: str | None = None):
    """Hadoop's ``FileSystem`` and ``Path`` for ``path`` (``path/child`` when given), any scheme."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path) if child is None else jvm.org.apache.hadoop.fs.Path(path, child)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def clear_run(spark: SparkSession, target: Source, run_id: str) -> None:
    """Remove the ``run_id`` partition of an output, if there is one.

    A dynamic partition overwrite of zero rows replaces nothing, so an output that may be empty
    for a run (the quarantine table) is cleared first: re-running a night that had quarantined
    rows on clean input must not leave the old rows behind. No SQL is assembled from values: the
    table name and run id go in as parameters.
    """
    if target.table is not None:
        if spark.catalog.tableExists(target.table):
            spark.sql(
                "ALTER TABLE IDENTIFIER(:table) DROP IF EXISTS PARTITION (run_id = :run_id)",
                args={"table": target.table, "run_id": run_id},
            )
        return
    jvm = spark.sparkContext._jvm
    escaped = jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils.escapePathName(run_id)
    fs, partition = _hadoop_path(spark, target.path, f"run_id={escaped}")
    if fs.exists(partition):
        fs.delete(partition, True)
