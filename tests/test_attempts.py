"""Run attempts and their lease (``ndcg_spark.publishing.lease``), in this session: who may start a run,
who may publish it, what a failure leaves on the run-status table, and what the messages say;
the heartbeat while the block runs, waiting for a holder, the run-attempts table.

The kills and signals (a second driver, a second attempt in another process, a scheduler's
retries) are in tests/test_run_faults.py, tests/test_run_retries.py and tests/test_scheduler_retries.py.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time

import pytest
from pyspark.sql import functions as F

from ndcg_spark.config.publishing_spec import PublishingSpec
from ndcg_spark.errors import FileVanished, LeaseLost, OutputChanged, RunInProgress, spark_errors_as_input_errors
from ndcg_spark.config.job import Source
from ndcg_spark.publishing.lease import acquire, publishing
from ndcg_spark.publishing.status import STATUS_COLUMNS, mark_run, published_runs, recent_runs, status_row

RUN = "2026-11-30"
#: a heartbeat older than 60 ms is stale (3 beats of 20 ms): a test sleeps past it
SHORT = PublishingSpec(stale_after_minutes=0.001, heartbeat_seconds=0.02)


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
        acquire(spark, status, RUN, spec=PublishingSpec(stale_after_minutes=360))
    time.sleep(0.1)
    stale = acquire(spark, status, RUN, spec=SHORT)  # its heartbeat is older than 60 ms
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
    from ndcg_spark.publishing import status as publish_module

    acquire(spark, status, RUN).publish()
    read, calls = publish_module._read_row, []

    def first_read_races_a_rewrite(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError(vanished)
        return read(*args)

    monkeypatch.setattr(publish_module, "_read_row", first_read_races_a_rewrite)
    from ndcg_spark.publishing import attempts as attempts_module

    monkeypatch.setattr(attempts_module.time, "sleep", lambda seconds: None)
    assert status_row(spark, status, RUN)["status"] == "complete" and len(calls) == 2
    calls.clear()

    def another_error(*args):
        calls.append(args)
        raise RuntimeError("[PARQUET_COLUMN_DATA_TYPE_MISMATCH] not a vanished file")

    monkeypatch.setattr(publish_module, "_read_row", another_error)
    with pytest.raises(RuntimeError, match="not a vanished file"):
        status_row(spark, status, RUN)
    assert len(calls) == 1  # any other error: not read again


# ------------------------------------------------------------------------------ the heartbeat
@pytest.mark.parametrize("with_attempts", [True, False], ids=["its-own-row", "no-attempts-table"])
def test_the_heartbeat_beats_while_the_block_runs_so_a_live_attempt_is_never_stale(spark, status, tmp_path,
                                                                                    with_attempts):
    """Beats every second, stale after 9 s: a block that runs longer without a step boundary keeps
    the run (another attempt is refused after 9 s), and no beat lands after 'complete'. A beat
    rewrites the attempt's own row, and leaves the run-status row (which readers join) alone;
    without a run-attempts table it rewrites the status row instead."""
    attempts = Source(path=str(tmp_path / "run_attempts")) if with_attempts else None
    spec = PublishingSpec(stale_after_minutes=0.15, heartbeat_seconds=1)

    def beat_of(lease):
        if attempts is None:
            return status_row(spark, status, RUN)["updated_at"]
        return next(r["updated_at"] for r in _attempts(spark, tmp_path / "run_attempts")
                    if r["attempt_id"] == lease.attempt.attempt_id)

    beats = set()
    with publishing(spark, status, RUN, spec=spec, attempts=attempts) as lease:
        written = status_row(spark, status, RUN)
        started = time.monotonic()
        while (len(beats) < 4 or time.monotonic() - started < 10) and time.monotonic() - started < 120:
            beats.add(beat_of(lease))
            time.sleep(0.5)
        assert len(beats) >= 4, beats  # rewritten on the timer, not at a step
        with pytest.raises(RunInProgress):  # past stale_after: alive, because it beat meanwhile
            acquire(spark, status, RUN, spec=spec, attempts=attempts)
        if attempts is not None:
            assert status_row(spark, status, RUN) == written  # the status row: as acquire wrote it
    done = status_row(spark, status, RUN)
    assert done["status"] == "complete" and done["attempt_id"] == lease.attempt.attempt_id
    last = beat_of(lease)
    time.sleep(2.5)
    assert status_row(spark, status, RUN) == done and beat_of(lease) == last  # the heartbeat stopped with the block


def test_a_beat_that_finds_the_run_taken_over_cancels_the_attempts_jobs(spark, status):
    """The block is in a Spark job of 100 s (tagged with the run, as every step's) when another
    attempt takes the run over: the next beat finds it, cancels the job, and the block ends with
    LeaseLost in seconds, neither publishing nor touching the other's row."""
    from ndcg_spark.publishing.steps import step

    slow = F.udf(lambda x: (time.sleep(1), x)[1], "long")
    spec = PublishingSpec(stale_after_minutes=0.05, heartbeat_seconds=1)
    started = time.monotonic()
    with pytest.raises(LeaseLost, match="took it over") as lost:
        with publishing(spark, status, RUN, spec=spec):
            other = acquire(spark, status, RUN, take_over=True)
            with step(spark, RUN, "score"):
                spark.range(0, 100, 1, 1).select(slow("id").alias("x")).agg(F.sum("x")).collect()
    assert time.monotonic() - started < 60, "the job ran on: it was not cancelled"
    assert other.attempt.attempt_id in str(lost.value)
    row = status_row(spark, status, RUN)
    assert row["status"] == "running" and row["attempt_id"] == other.attempt.attempt_id
    assert spark.range(3).count() == 3  # the session goes on
    other.publish()


@pytest.mark.slow
def test_waiting_for_a_holder_proceeds_once_it_ends_or_goes_stale_else_refuses(spark, status):
    import threading

    spec = PublishingSpec(stale_after_minutes=0.5, heartbeat_seconds=1)  # stale after 30 s
    holder = acquire(spark, status, RUN, spec=spec)
    started = time.monotonic()
    with pytest.raises(RunInProgress, match="waited 2 s and wrote nothing") as refused:  # 2 s: still fresh
        acquire(spark, status, RUN, spec=spec, wait=dt.timedelta(seconds=2))
    assert time.monotonic() - started >= 2 and f"attempt {holder.attempt.attempt_id}" in str(refused.value)

    publisher = threading.Timer(1.0, holder.publish)  # the holder ends while the next one waits
    publisher.start()
    waiter = acquire(spark, status, RUN, spec=spec, wait=dt.timedelta(minutes=1))
    publisher.join()
    assert status_row(spark, status, RUN)["attempt_id"] == waiter.attempt.attempt_id

    written = status_row(spark, status, RUN)["updated_at"]  # the waiter never beats (no bracket): it goes stale
    taker = acquire(spark, status, RUN, spec=spec, wait=dt.timedelta(minutes=2))
    took = status_row(spark, status, RUN)
    assert took["attempt_id"] == taker.attempt.attempt_id != waiter.attempt.attempt_id
    assert took["updated_at"] - written > spec.stale_after  # not before its heartbeat was 30 s old
    taker.publish()


# ------------------------------------------------------------------------------ the attempts table
def _attempts(spark, folder):
    from ndcg_spark.publishing.attempts import run_attempts

    return run_attempts(spark, Source(path=str(folder)), RUN)


def test_every_attempt_has_its_row_with_how_far_it_got_and_how_it_ended(spark, status, tmp_path):
    attempts = Source(path=str(tmp_path / "run_attempts"))
    with pytest.raises(RuntimeError):
        with publishing(spark, status, RUN, attempts=attempts, command="run") as first:
            first.reached("score")
            first.renew("aggregate")
            raise RuntimeError("stage 2 broke")
    with publishing(spark, status, RUN, attempts=attempts, command="run") as second:
        second.reached("score")
    rows = _attempts(spark, tmp_path / "run_attempts")
    assert [r["attempt_id"] for r in rows] == [first.attempt.attempt_id, second.attempt.attempt_id]
    failed, complete = rows
    assert (failed["outcome"], failed["last_step"], failed["command"]) == ("failed", "aggregate", "run")
    assert failed["reason"].startswith("RuntimeError: stage 2 broke") and failed["ended_at"] >= failed["started_at"]
    assert failed["host"] == first.attempt.host and failed["pid"] == os.getpid() and failed["app_id"]
    assert (complete["outcome"], complete["last_step"], complete["reason"]) == ("complete", "publish", None)
    assert status_row(spark, status, RUN)["status"] == "complete"


def test_an_attempt_whose_process_is_gone_is_taken_over_at_once_and_recorded_abandoned(spark, status, tmp_path):
    """The holder's row is fresh (a long stale_after), but it ran on this host and its process
    (a real one, ended) no longer exists: the next attempt takes over at once."""
    import socket
    import subprocess

    from ndcg_spark.publishing.attempts import Attempt, AttemptRecord, record_attempt

    attempts = Source(path=str(tmp_path / "run_attempts"))
    gone_pid = subprocess.Popen(["true"])  # noqa: S607 - a process that existed, ended and was reaped
    gone_pid.wait()
    dead = Attempt(RUN, "deadbeef0001", dt.datetime.now(dt.timezone.utc), socket.gethostname(), "local-x",
                   gone_pid.pid, "run")
    mark_run(spark, status, RUN, "running", attempt=dead)
    record_attempt(spark, attempts, AttemptRecord(dead, last_step="aggregate"))
    spec = PublishingSpec(stale_after_minutes=360)
    started = time.monotonic()
    taker = acquire(spark, status, RUN, spec=spec, attempts=attempts)
    assert time.monotonic() - started < 30
    rows = {r["attempt_id"]: r for r in _attempts(spark, tmp_path / "run_attempts")}
    abandoned = rows["deadbeef0001"]
    assert (abandoned["outcome"], abandoned["last_step"]) == ("abandoned", "aggregate")
    assert abandoned["reason"] == (f"taken over by attempt {taker.attempt.attempt_id}: its process {gone_pid.pid} "
                                   f"on {socket.gethostname()} no longer exists")
    assert rows[taker.attempt.attempt_id]["outcome"] == "running"

    alive = subprocess.Popen(["sleep", "60"])  # noqa: S607 - a live holder on this host: refused
    try:
        living = Attempt(RUN, "a11ve0000001", dt.datetime.now(dt.timezone.utc), socket.gethostname(), "local-y",
                         alive.pid, "run")
        mark_run(spark, status, RUN, "running", attempt=living)
        record_attempt(spark, attempts, AttemptRecord(living))
        with pytest.raises(RunInProgress, match="a11ve0000001"):
            acquire(spark, status, RUN, spec=spec, attempts=attempts)
    finally:
        alive.kill()
        alive.wait()


def test_the_run_attempts_table_defaults_beside_the_run_status_table():
    from ndcg_spark.config.job import JobConfig

    def job(outputs):
        return JobConfig.from_dict({"version": 1, "inputs": {"candidates": "c"}, "outputs": outputs}, base=None)

    assert job({"per_request": "/w/per_request"}).run_attempts() == Source(path="/w/run_attempts")
    assert job({"per_request": "/w/pr", "run_status": "/s/status"}).run_attempts() == Source(path="/s/run_attempts")
    assert job({"per_request": {"table": "c.db.per_request"}}).run_attempts() == Source(table="c.db.run_attempts")
    assert job({"per_request": "/w/pr", "run_attempts": "/a/attempts"}).run_attempts() == Source(path="/a/attempts")


# ------------------------------------------------------------------------------ exit statuses
def test_each_failure_exits_with_the_status_a_scheduler_acts_on():
    import signal

    from ndcg_spark import cli
    from ndcg_spark.errors import ContractError, EmptyIdealError, InputError, Interrupted, SparkFailure, ValidationError

    cases = {
        RunInProgress("held"): 75, LeaseLost("lost"): 3, Interrupted(signal.SIGTERM): 143,
        Interrupted(signal.SIGINT): 130, Interrupted(signal.SIGHUP): 129,
        ContractError("k", "bad"): 2, InputError("bad"): 2, ValidationError("bad", "rule"): 2, EmptyIdealError("e"): 2,
        SparkFailure("stage 1: lost executor"): 1, FileVanished("gone", "/p"): 1, RuntimeError("py4j"): 1,
    }
    assert {type(e).__name__ + str(getattr(e, "signum", "")): cli.exit_status(e) for e in cases} == {
        type(e).__name__ + str(getattr(e, "signum", "")): code for e, code in cases.items()}
    assert set(cases.values()) <= set(cli.EXIT_STATUSES)


def test_the_publishing_section_is_checked_with_the_dotted_path():
    from ndcg_spark.errors import ContractError

    assert PublishingSpec() == PublishingSpec(stale_after_minutes=10, heartbeat_seconds=30)
    with pytest.raises(ContractError, match=r"publishing.heartbeat_seconds: must be a number > 0, got 0"):
        PublishingSpec.from_dict({"heartbeat_seconds": 0})
    with pytest.raises(ContractError, match=r"publishing.stale_after_minutes: must span at least 3 heartbeats"):
        PublishingSpec.from_dict({"stale_after_minutes": 0.5, "heartbeat_seconds": 20})
    with pytest.raises(ContractError, match=r"publishing.wait: is not a known field"):
        PublishingSpec.from_dict({"wait": 3})


def test_the_documented_exit_statuses_are_the_codes():
    """docs/operations.md's table of exit statuses lists exactly the codes of ``EXIT_STATUSES``."""
    import re
    from pathlib import Path

    from ndcg_spark.cli import EXIT_STATUSES

    page = (Path(__file__).resolve().parent.parent / "docs" / "operations.md").read_text(encoding="utf-8")
    table = page.split("#### Exit statuses", 1)[1].split("\n\n", 2)[1]
    documented = {int(code) for line in table.splitlines()[2:] for code in re.findall(r"\d+", line.split("|")[1])}
    assert documented == set(EXIT_STATUSES)
