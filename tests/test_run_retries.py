"""Retries of a night: a task failing its first attempt, and a second attempt at a night one is running.

Like tests/test_run_faults.py (whose module docstring says what each check means), on a re-run of
``night-2`` of the sample while ``night-1`` sits in the same tables:

| fault | injected where | |
|---|---|---|
| a task fails its first attempt | a Python UDF in the per-request write, under ``local[2,3]`` | identical output |
| a second attempt a few seconds later | attempt 1 held before stage 1 while attempt 2 starts | refused at once |
| two attempts started together | two child processes at the same instant | one publishes, the other stops |
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


@pytest.mark.slow
def test_task_failing_its_first_attempt_under_local_2_3_gives_identical_output(spark, sample_dir, night, tmp_path):
    config = faults.write_config(tmp_path / "conf" / "job.yaml", sample_dir, faults.PATH_OUTPUTS, master="local[2,3]")
    marker, log = tmp_path / "failures", tmp_path / "job.log"
    proc = None
    try:
        proc = faults.spawn(faults.injected_cli(tmp_path, "flaky", marker, "score", "--config", str(config),
                                          "--run-id", "night-2"), log, env=faults.env(), cwd=tmp_path)
        proc.wait(timeout=400)
    finally:
        faults.stop(proc)
    assert proc.returncode == 0, log.read_text()[-3000:]
    failures = marker.read_text().splitlines() if marker.exists() else []
    assert failures and all(line.endswith("attempt 0 failed") for line in failures), "the injected failure never fired"
    shown = faults.published(spark, tmp_path / "out")
    assert faults.rows(shown, "night-2") == night.reference
    faults.assert_no_duplicates(shown)


# ----------------------------------------------------------------------------------- two attempts
def _held(tmp_path: Path, name: str, night: faults.Night) -> tuple[list[str], Path, Path]:
    """An attempt at night-2 (``score``) held once it holds the run, before stage 1."""
    folder = tmp_path / name
    folder.mkdir()
    marker = folder / "holding"
    cmd = faults.stalled_cli(folder, "hold", marker, "ndcg_spark.job.run:score_stage",
                             "score", "--config", str(night.config), "--run-id", "night-2")
    return cmd, marker, folder / "driver.log"


@pytest.mark.slow
def test_a_second_attempt_a_few_seconds_later_is_refused_at_once(spark, night, tmp_path, capsys):
    cmd, marker, log = _held(tmp_path, "first", night)
    proc = faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path)
    try:
        faults.wait_for(lambda: marker.exists() or proc.poll() is not None, 300, "the first attempt to hold the run")
        assert proc.poll() is None, log.read_text()[-3000:]
        first = faults.statuses(spark, night.out)["night-2"]
        assert first["status"] == "running"
        faults.hidden(spark, night)
        capsys.readouterr()
        assert main(["score", "--config", str(night.config), "--run-id", "night-2"]) == 2  # the scheduler's retry
        err = capsys.readouterr().err
        for said in (f"attempt {first['attempt_id']}", first["host"], first["app_id"], "This attempt wrote nothing"):
            assert said in err, err
        assert "input" not in err
        assert faults.statuses(spark, night.out)["night-2"] == first
        marker.with_suffix(".release").write_text("go")
        proc.wait(timeout=300)
    finally:
        faults.stop(proc)
    assert proc.returncode == 0, log.read_text()[-3000:]
    assert f"published by attempt {first['attempt_id']}" in log.read_text()
    faults.as_clean(spark, night)


@pytest.mark.slow
def test_two_attempts_started_together_publish_the_night_once(spark, night, tmp_path):
    attempts = [_held(tmp_path, name, night) for name in ("a", "b")]
    procs = []
    try:
        for cmd, _, log in attempts:  # at the same instant
            procs.append(faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path))

        def one_holds_one_stopped():
            held = [marker.exists() for _, marker, _ in attempts]
            ended = [p.poll() is not None for p in procs]
            return all(held) or all(ended) or (any(held) and any(ended))

        faults.wait_for(one_holds_one_stopped, 300, "one attempt to hold the run and the other to stop")
        held = [marker.exists() for _, marker, _ in attempts]
        assert sum(held) == 1, f"held: {held}; exits: {[p.poll() for p in procs]}"  # the loser never reached stage 1
        faults.hidden(spark, night)
        winner = held.index(True)
        attempts[winner][1].with_suffix(".release").write_text("go")
        for p in procs:
            p.wait(timeout=300)
    finally:
        for p in procs:
            faults.stop(p)
    logs = [log.read_text() for _, _, log in attempts]
    loser = 1 - winner
    assert (procs[winner].returncode, procs[loser].returncode) == (0, 2), logs
    assert re.search(r"another attempt is running it: attempt \w+|no longer holds the run", logs[loser]), logs[loser]
    assert "Check the input" not in logs[loser]
    published_by = re.search(r"published by attempt (\w+)", logs[winner]).group(1)
    assert faults.statuses(spark, night.out)["night-2"]["attempt_id"] == published_by
    faults.as_clean(spark, night)
