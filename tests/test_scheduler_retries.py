"""A night as a scheduler runs it: stopped by a signal, SIGKILLed, retried without a person.

Real child drivers (the console script, tests/faults.py), signals sent to the driver's whole
process group (as Airflow's timeout and a terminal's Ctrl-C do: its JVM and Python workers get
them too) and short thresholds: a heartbeat every second, stale after 15 s
(:data:`faults.SHORT_PUBLISHING`; the defaults are 30 s and 10 min). Like tests/test_run_faults.py
(whose module docstring says what each check means), on a re-run of ``night-2`` of the sample
while ``night-1`` sits in the same tables:

| | fault | the retry |
|---|---|---|
| (a) | SIGTERM mid-stage-1 (a task of the per-request write held) | at once: the row says failed |
| (b) | SIGKILL mid-stage-2, its pid not provably gone (not reaped yet) | ``--wait``: takes over once the heartbeat is stale |
| (c) | a live attempt whose stage is held longer than ``stale_after`` | ``--wait``: never takes over, exits 75 |
| (d) | SIGTERM during the per-request commit (old partition deleted, new one staged) | at once |
| (e) | three attempts of the documented command line, the first two killed | the third publishes |
| (f) | Ctrl-C (SIGINT) mid-stage-1 | at once |

After each: the stopped attempt's row and exit status, its attempt on the record, the retry's night
row for row the clean run's (after (f), whose retry would be (a)'s, none), night-1 untouched.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from ndcg_spark.cli import main

try:
    from tests import faults
except ImportError:  # pragma: no cover - run from inside tests/
    import faults  # type: ignore[no-redef]

night = faults.night_fixture  # night-2 of the sample published, night-1 beside it
#: a signal's attempt has ended within this (the watchdog's grace is 20 s)
GRACE = 20


@pytest.fixture(scope="module")
def short(night, sample_dir) -> Path:
    """The night's job with the short thresholds (same outputs, beside its YAML)."""
    return faults.write_config(night.root / "conf" / "short.yaml", sample_dir, faults.PATH_OUTPUTS,
                               publishing=faults.SHORT_PUBLISHING)


@pytest.fixture(scope="module")
def stalling_fs(tmp_path_factory) -> dict[str, str]:
    return faults.stalling_fs(tmp_path_factory.mktemp("stalling_fs"))


def _attempts(spark, out: Path, run_id: str = "night-2") -> list[dict]:
    from ndcg_spark.publishing.attempts import run_attempts
    from ndcg_spark.config.job import Source

    return run_attempts(spark, Source(path=str(out / "run_attempts")), run_id)


def _figure(capsys, text: str) -> None:
    """A measured figure, on the terminal (``-s``) even where the test reads its own output."""
    with capsys.disabled():
        print(f"\n[figure] {text}")


def _reached(spark, out: Path, step: str, run_id: str = "night-2") -> None:
    """Wait until the attempt holding the run has its step on record (written within a moment)."""
    def recorded():
        holder = faults.statuses(spark, out).get(run_id, {}).get("attempt_id")
        return any(r["attempt_id"] == holder and r["last_step"] == step for r in _attempts(spark, out, run_id))

    faults.wait_for(recorded, 60, f"the attempt's row to say {step}", poll=0.5)


def _ended_by(spark, night, proc, sig, log: Path, step: str, capsys) -> dict:
    """Signal the held driver's group: it exits with 128 + the signal within the grace, its
    attempt recorded (``failed``, ``terminated by …``; its own row ``interrupted`` at ``step``)."""
    _reached(spark, night.out, step)
    seconds = faults.end_with(proc, sig)
    name = signal.Signals(sig).name
    _figure(capsys, f"{name} to the driver's exit: {seconds:.1f} s")
    assert proc.returncode == 128 + sig, log.read_text()[-3000:]
    assert seconds < GRACE, f"{name}: {seconds:.1f} s to exit"
    assert f"terminated by {name}" in log.read_text()
    row = faults.statuses(spark, night.out)["night-2"]
    assert (row["status"], row["reason"]) == ("failed", f"terminated by {name}") and row["ended_at"]
    mine = next(r for r in _attempts(spark, night.out) if r["attempt_id"] == row["attempt_id"])
    assert (mine["outcome"], mine["reason"], mine["last_step"]) == ("interrupted", f"terminated by {name}", step)
    faults.hidden(spark, night)
    faults.night_1_untouched(spark, night)
    return row


def _retried_at_once(spark, night, config: Path, ended: dict, capsys) -> None:
    """The scheduler's retry, at once and without --take-over: the failed row is no live lease."""
    capsys.readouterr()
    started = time.monotonic()
    assert main(["run", "--config", str(config), "--run-id", "night-2"]) == 0, capsys.readouterr().err
    _figure(capsys, f"the retry published in {time.monotonic() - started:.1f} s")
    faults.as_clean(spark, night)
    assert faults.statuses(spark, night.out)["night-2"]["attempt_id"] != ended["attempt_id"]


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "command"), [(signal.SIGTERM, "run"), (signal.SIGINT, "score")],
                         ids=["sigterm", "ctrl-c"])
def test_a_signal_mid_stage_1_is_recorded_and_a_sigterm_retried_at_once(spark, night, short, tmp_path, capsys,
                                                                         sig, command):
    """(a) a scheduler's SIGTERM, retried at once; (f) a terminal's Ctrl-C (SIGINT); both to the process group."""
    marker, log = tmp_path / "writing", tmp_path / "driver.log"
    cmd = faults.injected_cli(tmp_path, "stall", marker, command, "--config", str(short), "--run-id", "night-2")
    proc = faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path)
    try:
        faults.reached(proc, marker, log, "the per-request write")
        ended = _ended_by(spark, night, proc, sig, log, "score", capsys)
    finally:
        faults.stop(proc)
    if sig == signal.SIGTERM:  # the retry after a failed row is the same after Ctrl-C: run once
        _retried_at_once(spark, night, short, ended, capsys)


@pytest.mark.slow
def test_a_sigterm_during_the_per_request_commit(spark, night, sample_dir, stalling_fs, tmp_path, capsys):
    """The commit stalls in the driver's JVM after the old partition was deleted (no Spark job to
    cancel): the attempt still records its end in time, and the retry restores the night."""
    config = faults.write_config(night.root / "conf" / "commit.yaml", sample_dir, faults.PATH_OUTPUTS,
                                 conf=stalling_fs, publishing=faults.SHORT_PUBLISHING)
    marker, log = tmp_path / "committing", tmp_path / "driver.log"
    env = faults.env(NDCG_STALL_RENAME="per_request/run_id=night-2", NDCG_STALL_MARKER=str(marker))
    proc = faults.spawn([*faults.CLI, "run", "--config", str(config), "--run-id", "night-2"], log, env=env, cwd=tmp_path)
    try:
        faults.reached(proc, marker, log, "the commit of the per-request partition")
        assert not (night.out / "per_request" / "run_id=night-2").exists()  # mid-commit
        ended = _ended_by(spark, night, proc, signal.SIGTERM, log, "score", capsys)
    finally:
        faults.stop(proc)
    _retried_at_once(spark, night, night.config, ended, capsys)


@pytest.mark.slow
def test_a_sigkilled_attempt_is_taken_over_by_a_waiting_retry_once_its_heartbeat_is_stale(spark, night, short, tmp_path,
                                                                                          capsys):
    """SIGKILL mid-stage-2 (stage 2 held), its driver not reaped: its pid still exists (as on
    another host, nothing proves it gone), so the retry with --wait waits until the heartbeat is
    15 s old, then takes over and publishes the clean night; the dead attempt is recorded abandoned."""
    marker, log = tmp_path / "stage2", tmp_path / "driver.log"
    cmd = faults.stalled_cli(tmp_path, "stall", marker, "ndcg_spark.job.run:aggregate_stage",
                             "run", "--config", str(short), "--run-id", "night-2")
    proc = faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path)
    try:
        faults.reached(proc, marker, log, "stage 2")
        _reached(spark, night.out, "aggregate")
        dead = faults.statuses(spark, night.out)["night-2"]
        killed = time.monotonic()
        os.killpg(proc.pid, signal.SIGKILL)  # not reaped until the retry is done: a zombie's pid exists
        faults.wait_for(lambda: _zombie(proc.pid), 30, "the driver to be a zombie")
        capsys.readouterr()
        assert main(["run", "--config", str(short), "--run-id", "night-2", "--wait", "2"]) == 0
        err = capsys.readouterr().err
        published = time.monotonic() - killed
    finally:
        faults.stop(proc)
        proc.wait(timeout=30)
    assert "waiting up to 2 min" in err and f"took over from attempt {dead['attempt_id']}" in err, err
    faults.as_clean(spark, night)
    rows = {r["attempt_id"]: r for r in _attempts(spark, night.out)}
    abandoned, taker = rows[dead["attempt_id"]], rows[faults.statuses(spark, night.out)["night-2"]["attempt_id"]]
    assert (abandoned["outcome"], abandoned["last_step"]) == ("abandoned", "aggregate")
    assert "its last heartbeat was" in abandoned["reason"] and "stale after 15 s" in abandoned["reason"]
    delay = (taker["started_at"] - abandoned["ended_at"]).total_seconds()  # ended_at: its last heartbeat
    _figure(capsys, f"takeover {delay:.1f} s after the dead attempt's last heartbeat "
                    f"({published:.1f} s from the kill to the night published)")
    assert delay > 15, delay  # not before its heartbeat was stale


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_a_live_attempt_held_past_stale_after_is_never_taken_over(spark, night, short, tmp_path, capsys):
    """The first attempt's per-request write is held (a task waits) for longer than stale_after;
    its heartbeat goes on, so a retry with --wait waits, is refused with 75 and writes nothing;
    released, the first one publishes the clean night."""
    marker, log = tmp_path / "writing", tmp_path / "driver.log"
    cmd = faults.injected_cli(tmp_path, "hold", marker, "run", "--config", str(short), "--run-id", "night-2")
    proc = faults.spawn(cmd, log, env=faults.env(), cwd=tmp_path)
    try:
        faults.reached(proc, marker, log, "the per-request write")
        first = faults.statuses(spark, night.out)["night-2"]
        time.sleep(16)  # the stage is held longer than stale_after (15 s)
        capsys.readouterr()
        assert main(["run", "--config", str(short), "--run-id", "night-2", "--wait", "0.2"]) == 75
        err = capsys.readouterr().err
        assert f"another attempt is running it: attempt {first['attempt_id']}" in err and "waited 12 s" in err, err
        assert faults.statuses(spark, night.out)["night-2"] == first  # untouched: refused, and no takeover
        beat = next(r["updated_at"] for r in _attempts(spark, night.out) if r["attempt_id"] == first["attempt_id"])
        assert time.time() - beat.timestamp() < 15, beat  # it beat while held
        marker.with_suffix(".release").write_text("go")
        proc.wait(timeout=300)
    finally:
        faults.stop(proc)
    assert proc.returncode == 0, log.read_text()[-3000:]
    faults.as_clean(spark, night)
    assert [r["outcome"] for r in _attempts(spark, night.out) if r["attempt_id"] == first["attempt_id"]] == ["complete"]


def test_the_documented_schedules_run_one_command_line():
    """docs/deploy.md's Airflow DAG and Databricks job run the same arguments (up to their
    templated run id and config path): the ones the retry loop below runs."""
    commands = faults.documented_commands()
    airflow, databricks = (faults.scheduled(commands[k], Path("/c.yaml"), "r") for k in ("airflow", "databricks"))
    assert airflow == databricks == ["run", "--config", "/c.yaml", "--run-id", "r", "--wait", "20"]


@pytest.mark.slow
def test_a_retry_loop_as_a_scheduler_runs_it_ends_with_one_night_and_three_attempts(spark, night, short, tmp_path,
                                                                                      capsys):
    """The documented command line, run by a loop as a scheduler retries it: the first attempt
    SIGTERMed mid-stage-1, the second SIGKILLed mid-stage-2 (reaped, so its process is provably
    gone), the third takes over at once and publishes. One complete night, three attempts."""
    run_id = "night-3"  # a night of its own: its attempts are this test's alone
    argv = faults.scheduled(faults.documented_commands()["airflow"], short, run_id)
    faults_at = {1: ("score", signal.SIGTERM), 2: ("aggregate", signal.SIGKILL)}
    statuses = []
    for attempt in (1, 2, 3):
        folder = tmp_path / f"attempt-{attempt}"
        folder.mkdir()
        marker, log = folder / "reached", folder / "driver.log"
        if attempt in faults_at:
            step, sig = faults_at[attempt]
            cmd = (faults.injected_cli(folder, "stall", marker, *argv) if step == "score" else
                   faults.stalled_cli(folder, "stall", marker, "ndcg_spark.job.run:aggregate_stage", *argv))
        else:
            cmd = [*faults.CLI, *argv]
        proc = faults.spawn(cmd, log, env=faults.env(), cwd=folder)
        try:
            if attempt in faults_at:
                faults.reached(proc, marker, log, f"attempt {attempt} to reach {step}")
                _reached(spark, night.out, step, run_id)
                faults.end_with(proc, sig)
            else:
                proc.wait(timeout=400)
        finally:
            faults.stop(proc)
        statuses.append(proc.returncode)
        if proc.returncode in (0, 2, 3):  # done, or a retry would not help
            break
    assert statuses == [143, -signal.SIGKILL, 0], statuses
    try:
        shown = faults.published(spark, night.out)
        assert faults.rows(shown, run_id) == night.reference
        assert faults.states(spark, night.out)[run_id] == "complete"
        rows = _attempts(spark, night.out, run_id)
        assert [(r["outcome"], r["last_step"]) for r in rows] == [
            ("interrupted", "score"), ("abandoned", "aggregate"), ("complete", "publish")]
        assert rows[1]["reason"].startswith(f"taken over by attempt {rows[2]['attempt_id']}: its process")
        _figure(capsys, f"the third attempt held the run {(rows[2]['started_at'] - rows[1]['ended_at']).total_seconds():.1f} s "
                        "after the killed one's last heartbeat (its own start included)")
        assert faults.statuses(spark, night.out)[run_id]["attempt_id"] == rows[2]["attempt_id"]
        page = (night.root / "reports" / run_id / "report.html").read_text(encoding="utf-8")
        assert "3 attempts: 1 interrupted, 1 abandoned, 1 complete" in page  # the night's report says so
    finally:
        shutil.rmtree(night.root / "reports" / run_id, ignore_errors=True)
        for name in (*faults.TABLES, "run_attempts"):  # the module's tables as they were
            shutil.rmtree(night.out / name / f"run_id={run_id}", ignore_errors=True)
