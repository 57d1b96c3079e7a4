"""Run attempts and their lease (``ndcg_spark.job.lease``), in this session: who may start a run,
who may publish it, what a failure leaves on the run-status table, and what the messages say.

The kills (a second driver, a second attempt in another process) are in tests/test_cluster_faults.py.
"""

from __future__ import annotations

import datetime as dt
import shutil

import pytest
from pyspark.sql import functions as F

from ndcg_spark.errors import FileVanished, LeaseLost, OutputChanged, RunInProgress, spark_errors_as_input_errors
from ndcg_spark.job.config import Source
from ndcg_spark.job.lease import STATUS_COLUMNS, acquire, recent_runs, status_row
from ndcg_spark.job.publish import mark_run, published_runs, publishing

RUN = "2026-11-30"


@pytest.fixture
def status(tmp_path):
    return Source(path=str(tmp_path / "run_status"))


def _published(spark, status) -> set[str]:
    return {r.run_id for r in published_runs(spark, status).collect()}


def test_an_attempt_takes_the_run_and_says_who_and_where(spark, status):
    lease = acquire(spark, status, RUN)
    row = status_row(spark, status, RUN)
    assert row["status"] == "running" and row["attempt_id"] == lease.attempt.attempt_id
    assert row["app_id"] == spark.sparkContext.applicationId and row["host"] and row["reason"] is None
    assert row["started_at"] <= row["updated_at"] and row["ended_at"] is None
    lease.publish()
    row = status_row(spark, status, RUN)
    assert row["status"] == "complete" and row["ended_at"] >= row["started_at"]
    assert _published(spark, status) == {RUN}


def test_a_second_attempt_is_refused_at_once_while_the_first_runs(spark, status):
    first = acquire(spark, status, RUN)
    with pytest.raises(RunInProgress) as refused:
        acquire(spark, status, RUN)
    text = str(refused.value)
    assert f"attempt {first.attempt.attempt_id}" in text and first.attempt.host in text
    assert str(first.attempt.app_id) in text and "--take-over" in text and "wrote nothing" in text
    assert status_row(spark, status, RUN)["attempt_id"] == first.attempt.attempt_id  # untouched
    first.publish()  # the holder is not disturbed by the refused one


def test_a_stale_attempt_or_an_explicit_take_over_hands_the_run_over(spark, status):
    dead = acquire(spark, status, RUN)
    with pytest.raises(RunInProgress):
        acquire(spark, status, RUN, stale_after=dt.timedelta(hours=6))
    stale = acquire(spark, status, RUN, stale_after=dt.timedelta(microseconds=1))  # its heartbeat is old
    assert stale.attempt.attempt_id != dead.attempt.attempt_id
    taken = acquire(spark, status, RUN, take_over=True)  # fresh, but the user says it is dead
    for loser in (dead, stale):  # a lost lease is found before 'complete' (and at every step boundary)
        with pytest.raises(LeaseLost, match=f"attempt {taken.attempt.attempt_id} .*took it over.*without publishing"):
            loser.publish()
        with pytest.raises(LeaseLost):
            loser.renew()
    assert _published(spark, status) == set()
    taken.publish()
    assert status_row(spark, status, RUN)["attempt_id"] == taken.attempt.attempt_id
    assert _published(spark, status) == {RUN}


def test_a_heartbeat_is_written_at_a_step_boundary_once_it_is_due(spark, status):
    lease = acquire(spark, status, RUN, stale_after=dt.timedelta(hours=6))
    written = status_row(spark, status, RUN)["updated_at"]
    lease.renew()  # not due yet: only the check
    assert status_row(spark, status, RUN)["updated_at"] == written
    lease.stale_after = dt.timedelta(microseconds=1)
    lease.renew()
    assert status_row(spark, status, RUN)["updated_at"] > written


def test_a_failure_in_the_bracket_is_on_the_record_with_its_reason(spark, status):
    with pytest.raises(ValueError, match="a stage broke"):
        with publishing(spark, status, RUN) as lease:
            raise ValueError("a stage broke")
    row = status_row(spark, status, RUN)
    assert row["status"] == "failed" and row["attempt_id"] == lease.attempt.attempt_id
    assert row["reason"].startswith("ValueError: a stage broke") and row["ended_at"] is not None
    assert _published(spark, status) == set()
    with publishing(spark, status, RUN):  # a failed run is not running: a re-run needs no take-over
        pass
    assert _published(spark, status) == {RUN}


def test_an_attempt_that_lost_the_run_neither_publishes_nor_records_a_failure(spark, status):
    with pytest.raises(LeaseLost):
        with publishing(spark, status, RUN):
            other = acquire(spark, status, RUN, take_over=True)
    row = status_row(spark, status, RUN)
    assert row["status"] == "running" and row["attempt_id"] == other.attempt.attempt_id

    with pytest.raises(LeaseLost, match="Its own failure came while the other attempt wrote"):  # and its failure
        with publishing(spark, status, RUN, take_over=True):
            other = acquire(spark, status, RUN, take_over=True)
            raise RuntimeError("a file vanished")
    assert status_row(spark, status, RUN)["attempt_id"] == other.attempt.attempt_id and _published(spark, status) == set()


def _vanishing(spark, folder):
    """A DataFrame over a run partition whose file is deleted after Spark listed it."""
    spark.range(3).withColumn("run_id", F.lit(RUN)).write.partitionBy("run_id").parquet(str(folder))
    df = spark.read.parquet(str(folder))
    df.schema  # noqa: B018 - listed
    shutil.rmtree(folder / f"run_id={RUN}")
    return df


def test_a_vanished_output_file_is_reported_as_such_never_as_bad_input(spark, status, tmp_path):
    per_request = tmp_path / "per_request"
    df = _vanishing(spark, per_request)
    with pytest.raises(FileVanished) as vanished:
        with spark_errors_as_input_errors("stage 1"):
            df.count()
    assert "Check the input" not in str(vanished.value) and "replaced or deleted while this run read it" in str(vanished.value)
    with pytest.raises(OutputChanged) as changed:
        with publishing(spark, status, RUN, outputs=(Source(path=str(per_request)),)):
            raise vanished.value
    text = str(changed.value)
    assert f"run_id={RUN} was replaced or deleted under the attempt" in text and "no other attempt" in text
    assert "input" not in text
    row = status_row(spark, status, RUN)
    assert row["status"] == "failed" and "of this run's own output" in row["reason"]


def test_the_last_runs_and_failures_are_listed_newest_first(spark, status):
    for run_id in ("n1", "n2", "n3"):
        with pytest.raises(RuntimeError) if run_id == "n2" else _nothing():
            with publishing(spark, status, run_id):
                if run_id == "n2":
                    raise RuntimeError("died at 02:13")
    assert [r["run_id"] for r in recent_runs(spark, status)] == ["n3", "n2", "n1"]
    failed = recent_runs(spark, status, only="failed")
    assert [(r["run_id"], r["status"]) for r in failed] == [("n2", "failed")]
    assert failed[0]["reason"].startswith("RuntimeError: died at 02:13")
    assert [r["run_id"] for r in recent_runs(spark, status, last=1)] == ["n3"]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_status_table_of_an_older_version_is_read_with_the_new_columns_null(spark, status):
    old = spark.createDataFrame([("old", "running", dt.datetime.now(dt.timezone.utc), "0.9")],
                                "run_id string, status string, updated_at timestamp, code_version string")
    old.write.partitionBy("run_id").parquet(status.path)
    row = status_row(spark, status, "old")
    assert row["status"] == "running" and row["attempt_id"] is None and row["host"] is None
    with pytest.raises(RunInProgress, match="an attempt with no id"):  # a running row is a running row
        acquire(spark, status, "old")
    acquire(spark, status, "new").publish()  # new rows beside old ones: both readable
    assert {r["run_id"]: r["attempt_id"] is None for r in recent_runs(spark, status)} == {"old": True, "new": False}
    assert _published(spark, status) == {"new"}


def test_an_older_catalog_status_table_gains_the_attempt_columns_on_its_next_write(spark):
    """docs/tables.md: a run-status table written before attempts lacks their columns; the next
    write adds them to the table (an additive change), and the older rows read them as null."""
    table = "attempts_it.run_status"
    spark.sql("CREATE DATABASE IF NOT EXISTS attempts_it")
    spark.createDataFrame([("old", "complete", dt.datetime.now(dt.timezone.utc), "0.9")],
                          "run_id string, status string, updated_at timestamp, code_version string"
                          ).write.partitionBy("run_id").saveAsTable(table)
    try:
        acquire(spark, Source(table=table), "new").publish()
        assert _published(spark, Source(table=table)) == {"old", "new"}
        assert spark.read.table(table).columns[-1] == "run_id"  # the partition column stays last
        assert set(spark.read.table(table).columns) == set(STATUS_COLUMNS)
        old = status_row(spark, Source(table=table), "old")
        assert old["status"] == "complete" and old["attempt_id"] is None and old["host"] is None
        assert status_row(spark, Source(table=table), "new")["attempt_id"]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")


@pytest.mark.parametrize("vanished", [
    "java.io.FileNotFoundException: File file:/t/run_status/run_id=r/part-0.parquet does not exist",
    # Hadoop's vectored parquet read of a file a concurrent attempt just replaced (seen in
    # tests/test_run_retries.py's two attempts started together)
    "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///t/run_status/run_id=r/part-0.parquet. "
    "Caused by: java.nio.file.NoSuchFileException: /t/run_status/run_id=r/.part-0.parquet.crc",
])
def test_reading_a_status_row_another_attempt_is_rewriting_reads_again(spark, status, monkeypatch, vanished):
    from ndcg_spark.job import lease as lease_module

    acquire(spark, status, RUN).publish()
    read, calls = lease_module._read_row, []

    def first_read_races_a_rewrite(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError(vanished)
        return read(*args)

    monkeypatch.setattr(lease_module, "_read_row", first_read_races_a_rewrite)
    monkeypatch.setattr(lease_module.time, "sleep", lambda seconds: None)
    assert status_row(spark, status, RUN)["status"] == "complete" and len(calls) == 2
    calls.clear()

    def another_error(*args):
        calls.append(args)
        raise RuntimeError("[PARQUET_COLUMN_DATA_TYPE_MISMATCH] not a vanished file")

    monkeypatch.setattr(lease_module, "_read_row", another_error)
    with pytest.raises(RuntimeError, match="not a vanished file"):
        status_row(spark, status, RUN)
    assert len(calls) == 1  # any other error: not read again
