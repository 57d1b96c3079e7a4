"""Retries of a night: a task failing its first attempt, and a second attempt at a night one is running.

Like tests/test_run_faults.py (whose module docstring says what each check means), on a re-run of
``night-2`` of the sample while ``night-1`` sits in the same tables:

| fault | injected where | |
|---|---|---|
| a task fails its first attempt | a Python UDF in the per-request write, under ``local[2,3]`` | identical output |
| a second attempt a few seconds later | attempt 1 held before stage 1 while attempt 2 starts | refused at once (75) |
| two attempts past the check together | both held after writing ``running``, before reading it back | the later writer publishes, the other stops (3) |
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
def _held(tmp_path: Path, name: str, night: faults.Night,
          at: str = "ndcg_spark.job.run:score_stage") -> tuple[list[str], Path, Path]:
    """An attempt at night-2 (``score``) held on its way into ``at`` (by default once it holds the
    run, before stage 1)."""
    folder = tmp_path / name
    folder.mkdir()
    marker = folder / "holding"
    cmd = faults.stalled_cli(folder, "hold", marker, at, "score", "--config", str(night.config), "--run-id", "night-2")
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
        assert main(["score", "--config", str(night.config), "--run-id", "night-2"]) == 75  # the scheduler's retry
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
def test_two_attempts_past_the_check_together_the_later_writer_publishes_and_the_other_stops(spark, night, tmp_path):
    """Both attempts read the row (published: free) and wrote ``running`` before either read it
    back: the row names the later writer. Released, the earlier one reads the other's id back and
    stops before any data write (exit 3, one message); the later one publishes the night."""
    # held once each has written 'running', before it reads the row back: its own row in the
    # run-attempts table is what it writes in between
    attempts = [_held(tmp_path, name, night, at="ndcg_spark.publishing.attempts:record_attempt") for name in ("a", "b")]
    procs = []
    try:
        for cmd, _, log in attempts:  # at the same instant
            procs.append(faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path))
        faults.wait_for(lambda: all(m.exists() for _, m, _ in attempts) or any(p.poll() is not None for p in procs),
                        300, "both attempts to write 'running'")
        assert [p.poll() for p in procs] == [None, None], [log.read_text()[-2000:] for _, _, log in attempts]
        later = faults.statuses(spark, night.out)["night-2"]
        assert later["status"] == "running"
        faults.hidden(spark, night)
        for _, marker, _ in attempts:
            marker.with_suffix(".release").write_text("go")
        for p in procs:
            p.wait(timeout=300)
    finally:
        for p in procs:
            faults.stop(p)
    logs = [log.read_text() for _, _, log in attempts]
    winner = next(i for i, text in enumerate(logs) if f"published by attempt {later['attempt_id']}" in text)
    loser = 1 - winner
    assert (procs[winner].returncode, procs[loser].returncode) == (0, 3), logs
    lost = re.search(r"this attempt \((\w+)\) no longer holds the run: attempt (\w+) \(started .*?\) took it over", logs[loser])
    assert lost and lost.group(2) == later["attempt_id"], logs[loser]
    assert "another attempt is running it" not in logs[loser] and "Check the input" not in logs[loser]
    assert faults.statuses(spark, night.out)["night-2"]["attempt_id"] == later["attempt_id"]
    faults.as_clean(spark, night)
    from ndcg_spark.publishing.attempts import run_attempts
    from ndcg_spark.config.job import Source

    rows = {r["attempt_id"]: r for r in run_attempts(spark, Source(path=str(night.out / "run_attempts")), "night-2")}
    assert (rows[lost.group(1)]["outcome"], rows[lost.group(1)]["last_step"]) == ("lost", "unpublish")
    assert rows[later["attempt_id"]]["outcome"] == "complete"
