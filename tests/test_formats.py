"""Delta Lake and Iceberg tables, for real (the format lane: ``bash dev.sh test-formats``).

Each test writes real tables with the formats' own jars and reads what the formats themselves say
about them -- Delta's ``DESCRIBE HISTORY``, Iceberg's ``snapshots`` table, the files behind each row
(``input_file_name()``) -- never ndcg-spark's own account of what it wrote. Three kinds of table:
a Delta table in the session catalog, a Delta table by path (what a child process shares with
another: the lane's session catalog lives in memory) and an Iceberg table of the JDBC catalog
``lake``. Outside the lane every test here is skipped, saying why (``tests/lakehouse.py``).
"""

from __future__ import annotations

import shutil
import uuid

import pytest
from pyspark.sql import functions as F

from ndcg_spark.errors import CommitConflict, InputError
from ndcg_spark.config.job import Source
from ndcg_spark.storage.io import clear_run, read_run, write_run_partitioned

try:
    from tests import lakehouse
except ImportError:  # pragma: no cover - run from inside tests/
    import lakehouse  # type: ignore[no-redef]

pytestmark = pytest.mark.formats
lakehouse_session = lakehouse.lakehouse

KINDS = ("delta table", "delta path", "iceberg")
SCHEMA = "run_id string, request_id string, ndcg double"


@pytest.fixture(params=KINDS)
def target(request, lakehouse_session, tmp_path) -> Source:
    """A table of each kind that does not exist yet (dropped after the test)."""
    name = f"t_{uuid.uuid4().hex[:8]}"
    source = {"delta table": Source(table=f"formats_it.{name}", format="delta"),
              "delta path": Source(path=str(tmp_path / name), format="delta"),
              "iceberg": Source(table=f"{lakehouse.CATALOG}.formats_it.{name}", format="iceberg")}[request.param]
    yield source
    if source.table is not None:
        lakehouse_session.sql(f"DROP TABLE IF EXISTS {source.table}")


def _night(spark, run_id: str, n: int, value: float = 0.5, **extra):
    rows = [(run_id, f"q{i}", value) for i in range(n)]
    df = spark.createDataFrame(rows, SCHEMA)
    for name, column in extra.items():
        df = df.withColumn(name, column)
    return df.repartition(2)  # two files per night


def _rows(spark, target: Source, run_id: str) -> list[tuple]:
    return sorted(tuple(r) for r in read_run(spark, target, run_id).drop("run_id").collect())


def _files(spark, target: Source, run_id: str) -> set[str]:
    """The data files behind the night's rows, as the format's reader says."""
    night = spark.read.table(target.table_name).filter(F.col("run_id") == run_id)
    return {r[0] for r in night.select(F.input_file_name()).distinct().collect()}


def test_a_night_is_created_then_replaced_in_one_commit_other_nights_untouched(lakehouse_session, target):
    spark = lakehouse_session
    write_run_partitioned(_night(spark, "n1", 5), target)  # the first night creates the table
    write_run_partitioned(_night(spark, "n2", 4), target)
    n1_rows, n1_files, n2_files = _rows(spark, target, "n1"), _files(spark, target, "n1"), _files(spark, target, "n2")
    before = lakehouse.commits(spark, target)
    assert [c["operation"] for c in before] == lakehouse.FIRST_TWO_NIGHTS[target.format]

    write_run_partitioned(_night(spark, "n2", 3, value=0.9), target)  # n2 again, other rows

    after = lakehouse.commits(spark, target)
    assert after[:-1] == before and len(after) == len(before) + 1  # one commit, the history kept
    rerun = lakehouse.replaced(spark, after[-1], target)
    assert rerun == {"removed_files": len(n2_files), "added_files": len(_files(spark, target, "n2"))}, after[-1]
    assert _rows(spark, target, "n2") == [(f"q{i}", 0.9) for i in range(3)]
    assert _rows(spark, target, "n1") == n1_rows and _files(spark, target, "n1") == n1_files  # untouched
    assert not (_files(spark, target, "n2") & n2_files)


def test_clearing_a_night_is_one_commit_that_removes_its_rows_only(lakehouse_session, target):
    spark = lakehouse_session
    clear_run(spark, target, "n1")  # no table yet: nothing to do, nothing created
    assert not lakehouse.exists(spark, target)
    for run_id in ("n1", "n2"):
        write_run_partitioned(_night(spark, run_id, 3), target)
    n2_files, before = _files(spark, target, "n2"), lakehouse.commits(spark, target)
    clear_run(spark, target, "n1")
    after = lakehouse.commits(spark, target)
    assert after[:-1] == before and len(after) == len(before) + 1
    assert _rows(spark, target, "n1") == [] and len(_rows(spark, target, "n2")) == 3
    assert _files(spark, target, "n2") == n2_files


def test_an_added_column_is_added_to_the_table_and_older_nights_read_null(lakehouse_session, target):
    """docs/operations.md, "Delta Lake and Iceberg": a newer job's extra column is added to the
    existing table (Delta: within the write's commit; Iceberg: ALTER TABLE … ADD COLUMNS first)."""
    spark = lakehouse_session
    write_run_partitioned(_night(spark, "n1", 3), target)
    before = lakehouse.commits(spark, target)
    write_run_partitioned(_night(spark, "n2", 2, n_no_results=F.lit(7).cast("bigint")), target)
    after = lakehouse.commits(spark, target)
    assert len(after) - len(before) == {"delta": 1, "iceberg": 1}[target.format], after
    table = spark.read.table(target.table_name)
    assert dict(table.dtypes)["n_no_results"] == "bigint"
    assert {r.run_id: r.n for r in table.groupBy("run_id").agg(F.max("n_no_results").alias("n")).collect()} \
        == {"n1": None, "n2": 7}
    assert _rows(spark, target, "n1") == [(f"q{i}", 0.5, None) for i in range(3)]


def test_a_retired_column_is_written_null_and_the_older_nights_keep_theirs(lakehouse_session, target):
    """docs/tables.md, "Tables written before the metric column": the comparison's pool recall was
    renamed once recall@K became a metric. A table written before keeps the old column: the next
    night writes it as null (one commit) and adds the new one; the older night keeps its values, and
    reading both with the current names (``legacy.as_current``) finds each night's pool recall."""
    from ndcg_spark.legacy import as_current
    from ndcg_spark.comparison.columns import COMPARISON_LEGACY, COMPARISON_RENAMED

    spark = lakehouse_session
    write_run_partitioned(_night(spark, "n1", 3, n_recall_requests=F.lit(5).cast("bigint"),
                                 baseline_recall_macro=F.lit(0.9)), target)
    before = lakehouse.commits(spark, target)
    write_run_partitioned(_night(spark, "n2", 2, n_pool_recall_requests=F.lit(4).cast("bigint"),
                                 baseline_pool_recall_macro=F.lit(0.8)), target)
    assert len(lakehouse.commits(spark, target)) - len(before) == 1
    table = spark.read.table(target.table_name)
    by_night = {r.run_id: r for r in table.groupBy("run_id").agg(
        F.max("n_recall_requests").alias("old"), F.max("n_pool_recall_requests").alias("new")).collect()}
    assert (by_night["n1"].old, by_night["n1"].new, by_night["n2"].old, by_night["n2"].new) == (5, None, None, 4)
    current = as_current(table, COMPARISON_LEGACY, COMPARISON_RENAMED)
    assert {r.run_id: r.baseline_pool_recall_macro for r in current.select("run_id", "baseline_pool_recall_macro")
            .distinct().collect()} == {"n1": 0.9, "n2": 0.8}


@pytest.mark.parametrize("change", ["dropped", "retyped"])
def test_a_dropped_or_retyped_column_is_refused_with_the_statement_that_migrates_it(lakehouse_session, target,
                                                                                     change):
    spark = lakehouse_session
    write_run_partitioned(_night(spark, "n1", 3, extra=F.lit("x")), target)
    before = lakehouse.commits(spark, target)
    newer = _night(spark, "n2", 2) if change == "dropped" else _night(spark, "n2", 2, extra=F.lit(1.0))
    with pytest.raises(InputError) as refused:
        write_run_partitioned(newer, target)
    text = str(refused.value)
    said = {"dropped": "the table has extra, which this run does not write",
            "retyped": "extra is string in the table and double in this run"}[change]
    assert said in text and "Nothing was written." in text, text
    assert lakehouse.commits(spark, target) == before

    lakehouse.migrate(spark, target, text)  # what the message says to do, done
    write_run_partitioned(newer, target)
    assert _rows(spark, target, "n2") == sorted(tuple(r) for r in newer.drop("run_id").collect())


def test_a_delta_path_being_created_by_another_writer_is_a_commit_conflict_not_a_trace(lakehouse_session, tmp_path):
    """Two attempts of a first night: the second can find the first's ``_delta_log`` folder before its
    first version is committed (or a killed attempt left it so). Delta's ``CREATE TABLE IF NOT
    EXISTS`` skips such a path (3.3 and 4.4 alike), and the write is a CommitConflict naming the
    folder -- not Delta's DELTA_TABLE_NOT_FOUND; with the folder removed, as it says, the night is written."""
    spark = lakehouse_session
    target = Source(path=str(tmp_path / "being_created"), format="delta")
    log = tmp_path / "being_created" / "_delta_log"
    log.mkdir(parents=True)
    night = _night(spark, "n1", 3)
    with pytest.raises(CommitConflict) as refused:
        write_run_partitioned(night, target)
    text = str(refused.value)
    assert "another writer is creating the table" in text and f"remove the folder {log}" in text, text
    assert not list(log.glob("*.json"))  # no version written
    shutil.rmtree(log)
    write_run_partitioned(night, target)
    assert _rows(spark, target, "n1") == [(f"q{i}", 0.5) for i in range(3)]


# ----------------------------------------------------------------------------- what a night read
INPUTS = ("candidates", "judgments", "attributes")


def _job_over_tables(root, names: dict[str, str]):
    """A job YAML reading the three inputs from tables (no ``format``: read from the table's
    provider), its outputs Parquet paths under ``root``."""
    import textwrap

    config = root / "conf" / "job.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(textwrap.dedent(f"""
        version: 1
        contract: {{k: [3, 10]}}
        inputs: {{candidates: {{table: {names['candidates']}}}, judgments: {{table: {names['judgments']}}}}}
        attributes: {{table: {names['attributes']}, weight: weight, slices: [equipment_rarity]}}
        outputs:
          per_request: {{path: out/per_request}}
          aggregate: {{path: out/aggregate}}
          run_metadata: {{path: out/run_metadata}}
        aggregate: {{bootstrap: {{replicates: 0}}}}
        spark: {{master: "local[2]", shuffle_partitions: 2}}
        """), encoding="utf-8")
    return config


def _per_request_of(spark, root, run_id: str):
    return spark.read.parquet(str(root / "out" / "per_request")).filter(F.col("run_id") == run_id).drop("run_id")


def _inputs_of(spark, root, run_id: str) -> dict[str, dict]:
    meta = spark.read.parquet(str(root / "out" / "run_metadata")).filter(F.col("run_id") == run_id).first()
    return {i.role: i.asDict() for i in meta.inputs}


@pytest.mark.e2e
@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_night_on_versioned_inputs_records_them_and_replays_on_them_until_they_are_gone(
        lakehouse_session, sample_dir, tmp_path, capsys, fmt):
    """docs/operations.md, "What a night read": the versions a night read are recorded; `runs` says
    when a newer one lands; a replay reads the recorded ones (per-request rows equal to the
    published night's, exceptAll both ways) until VACUUM / expire_snapshots removes them."""
    from ndcg_spark.cli import main

    spark = lakehouse_session
    database = "formats_it" if fmt == "delta" else f"{lakehouse.CATALOG}.formats_it"
    suffix = uuid.uuid4().hex[:6]
    names = {name: f"{database}.{name}_{suffix}" for name in INPUTS}
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {database}")
    for name in INPUTS:
        spark.read.parquet(sample_dir[name]).writeTo(names[name]).using(fmt).create()
    config = _job_over_tables(tmp_path, names)
    try:
        assert main(["run", "--config", str(config), "--run-id", "n1"]) == 0
        recorded = _inputs_of(spark, tmp_path, "n1")
        for name in INPUTS:
            source = Source(table=names[name], format=fmt)
            assert recorded[name if name == "attributes" else f"inputs.{name}"]["version"] == \
                lakehouse.commits(spark, source)[-1]["version"], name
        assert {e["format"] for e in recorded.values()} == {fmt}  # read from the tables' provider

        # the next morning the candidates table is rewritten, a tenth of its requests gone
        changed = spark.read.table(names["candidates"]).filter(~F.col("request_id").endswith("7"))
        changed.localCheckpoint().writeTo(names["candidates"]).overwrite(F.lit(True))
        assert spark.read.table(names["candidates"]).select("request_id").distinct().count() < sample_dir.n_requests
        now = lakehouse.commits(spark, Source(table=names["candidates"], format=fmt))[-1]["version"]
        capsys.readouterr()
        assert main(["runs", "--config", str(config)]) == 0
        kind = "version" if fmt == "delta" else "snapshot"
        then = recorded["inputs.candidates"]["version"]
        assert (f"inputs changed since it read them: inputs.candidates (table {names['candidates']}): "
                f"{fmt} {kind} {then} then, {fmt} {kind} {now} now") in capsys.readouterr().out

        assert main(["run", "--config", str(config), "--replay", "n1", "--run-id", "replayed"]) == 0
        published, replayed = _per_request_of(spark, tmp_path, "n1"), _per_request_of(spark, tmp_path, "replayed")
        assert published.count() == sample_dir.n_requests * 2 * 2
        assert published.exceptAll(replayed).count() == 0 and replayed.exceptAll(published).count() == 0
        assert _inputs_of(spark, tmp_path, "replayed") == recorded

        lakehouse.remove_old_versions(spark, Source(table=names["candidates"], format=fmt))
        capsys.readouterr()
        assert main(["run", "--config", str(config), "--replay", "n1", "--run-id", "refused"]) == 2
        err = capsys.readouterr().err
        assert (f"replay: inputs.candidates: table {names['candidates']} as run n1 read it ({fmt} {kind} {then}) "
                "can no longer be read") in err and "Traceback" not in err, err
        assert not (tmp_path / "out" / "run_status" / "run_id=refused").exists()
    finally:
        for name in INPUTS:
            spark.sql(f"DROP TABLE IF EXISTS {names[name]}")
