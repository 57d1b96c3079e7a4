"""Break a night the ways the README says it survives, and check what a reader sees after each:
a failed stage and killed drivers.

Every fault below hits a re-run of ``night-2`` (published: the fixture's clean run) while
``night-1`` (the night before) sits in the same tables:

| fault | injected where | |
|---|---|---|
| a stage fails after stage 1's write | stage 2 writes into a file (in this session) | ``failed`` on the record |
| driver killed mid-write | a task of the per-request write sleeps (a Python UDF); SIGKILL | before the commit |
| driver killed during the commit | Hadoop's rename of the staged ``run_id=night-2`` onto the table's (a Java ``FileSystem``) | old partition deleted, new one not in place |
| driver killed between the writes | ``aggregate_stage`` stalled after stage 1 wrote (child process) | |
| driver killed during stage 2 | the rename of the aggregate table's ``run_id=night-2`` | |

After each: night-1 untouched (its rows and its very files), night-2 invisible to the documented
reader until an attempt completes it, a re-run row for row equal to the clean run, and no
duplicates. After a kill the dead attempt's row still says ``running``; the re-run, on the same host,
finds its process gone and takes over at once. The executor killed mid-job is
tests/test_cluster_faults.py's; a task's retry and two attempts at one night are
tests/test_run_retries.py's, signals and a scheduler's retries tests/test_scheduler_retries.py's
(modules of their own, so that they run beside these on other workers).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ndcg_spark.cli import main

try:
    from tests import faults
except ImportError:  # pragma: no cover - run from inside tests/
    import faults  # type: ignore[no-redef]

night = faults.night_fixture  # night-2 of the sample published, night-1 beside it


@pytest.fixture(scope="module")
def stalling_fs(tmp_path_factory) -> dict[str, str]:
    return faults.stalling_fs(tmp_path_factory.mktemp("stalling_fs"))


def _after_a_driver_kill(spark, night: faults.Night, capsys) -> None:
    """The dead attempt's night hidden, the night before intact; its row fresh, but its process
    (on this host, reaped) gone: a re-run takes over at once, without --take-over, and writes the
    clean run's tables; the dead attempt is on record as abandoned."""
    dead = faults.statuses(spark, night.out)["night-2"]
    assert dead["status"] == "running" and dead["attempt_id"] and dead["ended_at"] is None
    faults.hidden(spark, night)
    faults.night_1_untouched(spark, night)
    capsys.readouterr()
    assert main(["run", "--config", str(night.config), "--run-id", "night-2"]) == 0
    err = capsys.readouterr().err
    assert f"took over from attempt {dead['attempt_id']}" in err and "no longer exists" in err, err
    faults.as_clean(spark, night)
    assert faults.statuses(spark, night.out)["night-2"]["attempt_id"] != dead["attempt_id"]


# ----------------------------------------------------------------------------------- in this session
@pytest.mark.e2e
def test_same_night_twice_gives_identical_tables_row_for_row(spark, night):
    out = night.out
    before_files = faults.part_files(out / "per_request" / "run_id=night-2")
    assert main(["run", "--config", str(night.config), "--run-id", "night-2"]) == 0  # the same night again
    assert faults.part_files(out / "per_request" / "run_id=night-2").isdisjoint(before_files), "night-2 was rewritten"
    faults.as_clean(spark, night)


@pytest.mark.e2e
def test_a_stage_failing_after_the_data_write_is_on_the_record_and_a_rerun_restores_it(spark, sample_dir, night, capsys):
    """``run`` writes stage 1's table, then stage 2 fails writing (a file stands where its table
    should be): the run says 'failed' with the reason, so no reader sees it and ``runs`` lists it."""
    out = night.out
    blocker = night.root / "not-a-folder"
    blocker.write_text("stage 2 cannot write its table here", encoding="utf-8")
    failing = faults.write_config(  # beside the night's YAML: the same outputs, and stage 2 into the file
        night.root / "conf" / "failing.yaml", sample_dir, {**faults.PATH_OUTPUTS, "aggregate": {"path": str(blocker)}})
    before_files = faults.part_files(out / "per_request" / "run_id=night-2")
    capsys.readouterr()
    assert main(["run", "--config", str(failing), "--run-id", "night-2"]) == 1  # not the input's fault: retry
    err = capsys.readouterr().err
    assert "ndcg-spark run: failed." in err and "Traceback" not in err

    after_files = faults.part_files(out / "per_request" / "run_id=night-2")
    assert after_files and after_files.isdisjoint(before_files), "stage 1 did write night-2 again"
    faults.hidden(spark, night)
    faults.night_1_untouched(spark, night)
    failed = faults.statuses(spark, out)["night-2"]
    assert failed["status"] == "failed" and failed["ended_at"] >= failed["started_at"] and failed["app_id"]
    assert failed["reason"] in err  # the paragraph the user read is the one on the record
    assert main(["runs", "--config", str(night.config), "--failed"]) == 0
    listed = capsys.readouterr().out
    assert re.search(rf"night-2 +failed +{failed['attempt_id']} ", listed) and "night-1" not in listed
    assert main(["report", "--config", str(night.config), "--run-id", "night-2"]) == 0  # its page says why
    page = (night.root / "reports" / "night-2" / "report.html").read_text(encoding="utf-8")
    assert "This run is not published" in page and "Its last attempt failed at " in page

    assert main(["run", "--config", str(night.config), "--run-id", "night-2"]) == 0  # failed: no take-over needed
    faults.as_clean(spark, night)


# ----------------------------------------------------------------------------------- a killed driver
@pytest.mark.slow
def test_driver_killed_mid_write_keeps_previous_night_and_rerun_is_identical(spark, sample_dir, night, tmp_path, capsys):
    out = night.out
    # beside the night's YAML (same outputs); the write keeps its 2 tasks, so one finishes its file
    killed = faults.write_config(night.root / "conf" / "killed.yaml", sample_dir, faults.PATH_OUTPUTS,
                                 conf={"spark.sql.adaptive.coalescePartitions.enabled": "false"})
    marker, log = tmp_path / "writing", tmp_path / "driver.log"
    cmd = faults.injected_cli(tmp_path, "stall", marker, "score", "--config", str(killed), "--run-id", "night-2")
    proc = faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path)
    try:
        faults.reached(proc, marker, log, "the per-request write to start")
        # mid-write: the job's staging folder exists and the other task's file is in it
        staged = faults.wait_for(lambda: list((out / "per_request").glob(".spark-staging-*/**/*.parquet")), 60,
                                 "the other write task's file")
        assert staged
        faults.kill_driver(proc)
    finally:
        faults.stop(proc)
    assert "UNEXPECTED" not in log.read_text()
    _after_a_driver_kill(spark, night, capsys)


def _commit_killed(
    night: faults.Night, sample, tmp_path: Path, command: str, stalled_table: str, conf: dict[str, str]
) -> Path:
    """Run ``command`` of night-2 in a child whose commit of ``stalled_table``'s partition stalls
    after the old partition was deleted; kill its driver there. Returns the staged files' folder."""
    config = faults.write_config(night.root / "conf" / "commit.yaml", sample, faults.PATH_OUTPUTS, conf=conf)
    marker, log = tmp_path / "committing", tmp_path / "driver.log"
    env = faults.env(NDCG_STALL_RENAME=f"{stalled_table}/run_id=night-2", NDCG_STALL_MARKER=str(marker))
    proc = faults.spawn([*faults.CLI, command, "--config", str(config), "--run-id", "night-2"], log, env=env,
                        cwd=tmp_path)
    try:
        faults.reached(proc, marker, log, f"the commit of {stalled_table}")
        table = night.out / stalled_table
        # mid-commit: the old partition is gone, the new one is staged and not yet moved into place
        assert not (table / "run_id=night-2").exists()
        staged = list(table.glob(".spark-staging-*/run_id=night-2/*.parquet"))
        assert staged, sorted(p.name for p in table.iterdir())
        faults.kill_driver(proc)
    finally:
        faults.stop(proc)
    return staged[0].parent


@pytest.mark.slow
def test_driver_killed_during_the_commit_of_the_per_request_write(spark, sample_dir, night, stalling_fs, tmp_path,
                                                                 capsys):
    staged = _commit_killed(night, sample_dir, tmp_path, "score", "per_request", stalling_fs)
    assert staged.is_dir() and not (night.out / "per_request" / "run_id=night-2").exists()
    _after_a_driver_kill(spark, night, capsys)


@pytest.mark.slow
def test_driver_killed_during_stage_2_the_commit_of_the_aggregate_write(spark, sample_dir, night, stalling_fs, tmp_path,
                                                                        capsys):
    before = faults.part_files(night.out / "per_request" / "run_id=night-2")
    _commit_killed(night, sample_dir, tmp_path, "run", "aggregate", stalling_fs)
    after = faults.part_files(night.out / "per_request" / "run_id=night-2")
    assert after and after.isdisjoint(before), "stage 1 had written night-2 again"
    _after_a_driver_kill(spark, night, capsys)


@pytest.mark.slow
def test_driver_killed_between_the_stage_1_and_the_stage_2_writes(spark, night, tmp_path, capsys):
    out = night.out
    before = {name: faults.part_files(out / name / "run_id=night-2") for name in ("per_request", "aggregate")}
    marker, log = tmp_path / "between", tmp_path / "driver.log"
    cmd = faults.stalled_cli(tmp_path, "stall", marker, "ndcg_spark.job.run:aggregate_stage",
                             "run", "--config", str(night.config), "--run-id", "night-2")
    proc = faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path)
    try:
        faults.reached(proc, marker, log, "stage 2 to start")
        faults.kill_driver(proc)
    finally:
        faults.stop(proc)
    after = faults.part_files(out / "per_request" / "run_id=night-2")
    assert after and after.isdisjoint(before["per_request"]), "stage 1 had written night-2 again"
    assert faults.part_files(out / "aggregate" / "run_id=night-2") == before["aggregate"], "stage 2 had not started"
    _after_a_driver_kill(spark, night, capsys)
