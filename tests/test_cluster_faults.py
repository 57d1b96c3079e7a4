"""Run it where users run it, and break it: spark-submit to a standalone cluster, catalog tables
read by a separate spark-sql, and faults (failed task, killed executor, killed driver) that must
neither lose the previous night nor change or duplicate a row.

Every process a test starts is started in its own process group and killed by PID (and group)
in a ``finally``. One small sample (``N_REQUESTS``) keeps the JVMs short-lived.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from ndcg_spark.job.config import JobConfig
from ndcg_spark.job.io import read_run
from ndcg_spark.job.packaging import build_pyfiles_zip
from ndcg_spark.job.stages import score_stage
from ndcg_spark.job.publish import COMPLETE, RUNNING, publishing, read_published, run_status_target
from ndcg_spark.sample.generate import write_sample

ROOT = Path(__file__).resolve().parent.parent
N_REQUESTS = 300
KEY = ("run_id", "system", "request_id", "k")


# ----------------------------------------------------------------------------------- helpers
def _write_config(path: Path, data: dict[str, str], outputs: str, master: str = "local[2]") -> Path:
    """A job YAML over the sample ``data``; ``outputs`` is the inside of a YAML flow mapping."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        textwrap.dedent(f"""
        version: 1
        contract: {{k: [1, 3, 10]}}
        inputs:
          candidates: {{path: {data['candidates']}}}
          judgments: {{path: {data['judgments']}}}
        attributes:
          path: {data['attributes']}
          weight: weight
          slices: [equipment_rarity]
        outputs: {{{outputs}}}
        spark: {{master: "{master}", shuffle_partitions: 2}}
        """)
    )
    return path


def _run_here(spark, config_path: Path, run_id: str) -> None:
    """The nightly job's path (publishing around stage 1) in the test session."""
    config = JobConfig.from_yaml(config_path)
    with publishing(spark, config, run_id):
        score_stage(spark, config, run_id)


def _rows(df, run_id: str | None = None) -> list[tuple]:
    """The rows of a per-request table without its run id, sorted: comparable across runs."""
    if run_id is not None:
        df = df.filter(F.col("run_id") == run_id)
    cols = sorted(c for c in df.columns if c != "run_id")
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def _assert_no_duplicates(df) -> None:
    assert df.count() == df.select(*KEY).distinct().count()


def _spawn(cmd: list[str], log: Path, **kw) -> subprocess.Popen:
    fh = open(log, "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, **kw)


def _stop(proc: subprocess.Popen | None) -> None:
    """Kill a process we started: its group first (its JVM, Python workers), then the PID itself."""
    if proc is None:
        return
    if proc.poll() is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
            try:
                proc.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue
    else:  # the leader exited; children may remain in its group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.stdout:
        proc.stdout.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(predicate, timeout: float, what: str, poll: float = 0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable, **extra}


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def night(spark, tmp_path_factory):
    """Sample inputs, and a path-output job with night-1 and night-2 published (the reference).

    The publishing tests below share this output folder: each one breaks a run of it and must
    leave it, after its re-run, exactly as the fixture made it.
    """
    root = tmp_path_factory.mktemp("night")
    data = write_sample(spark, root / "data", n_requests=N_REQUESTS, seed=5)
    config_path = _write_config(root / "job" / "conf" / "job.yaml", data, "per_request: {path: out/per_request}")
    _run_here(spark, config_path, "night-1")
    _run_here(spark, config_path, "night-2")
    config = JobConfig.from_yaml(config_path)
    table = read_run(spark, config.per_request)
    reference = _rows(table, "night-2")
    assert reference and _rows(table, "night-1") == reference  # same inputs, same contract
    _assert_no_duplicates(table)
    return root, data, config_path, reference


def _published(spark, config_path: Path):
    config = JobConfig.from_yaml(config_path)
    return read_published(spark, config.per_request, run_status_target(config))


def _states(spark, config_path: Path) -> dict[str, str]:
    status = run_status_target(JobConfig.from_yaml(config_path))
    return {r.run_id: r.status for r in read_run(spark, status).collect()}


# ----------------------------------------------------------------------------------- packaging
def test_packaging_zip_is_importable_alone_and_reproducible(tmp_path):
    first = build_pyfiles_zip(tmp_path / "a" / "ndcg_spark.zip")
    second = build_pyfiles_zip(tmp_path / "b" / "ndcg_spark.zip")
    assert first.read_bytes() == second.read_bytes()
    # -S: no site-packages, so ndcg_spark and yaml can only come from the zip
    code = f"import sys; sys.path.insert(0, {str(first)!r}); import ndcg_spark, yaml; print(ndcg_spark.__file__, yaml.__file__)"
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(str(first)) == 2


# ----------------------------------------------------------------------------------- publishing
def test_same_night_twice_gives_identical_tables_row_for_row(spark, night):
    root, data, config_path, reference = night
    before = _rows(_published(spark, config_path))
    _run_here(spark, config_path, "night-2")  # the same night again
    after = _published(spark, config_path)
    assert _rows(after) == before
    assert _rows(after, "night-2") == reference
    _assert_no_duplicates(after)
    assert _states(spark, config_path) == {"night-1": COMPLETE, "night-2": COMPLETE}


def test_failure_between_data_write_and_publish_hides_the_run_and_rerun_restores_it(spark, night, monkeypatch):
    root, data, config_path, reference = night
    config = JobConfig.from_yaml(config_path)
    import ndcg_spark.job.publish as publish

    real_mark = publish.mark_run

    def crash_before_complete(spark_, target, run_id, state):
        if state == COMPLETE:
            raise RuntimeError("driver lost between the data write and the status write")
        real_mark(spark_, target, run_id, state)

    monkeypatch.setattr(publish, "mark_run", crash_before_complete)
    with pytest.raises(RuntimeError, match="driver lost"):
        _run_here(spark, config_path, "night-2")
    monkeypatch.undo()

    assert read_run(spark, config.per_request, "night-2").count() > 0, "the data write did happen"
    published = _published(spark, config_path)
    assert published.filter(F.col("run_id") == "night-2").count() == 0
    assert _rows(published, "night-1") == reference
    assert _states(spark, config_path) == {"night-1": COMPLETE, "night-2": RUNNING}

    _run_here(spark, config_path, "night-2")
    published = _published(spark, config_path)
    assert _rows(published, "night-2") == reference and _rows(published, "night-1") == reference
    _assert_no_duplicates(published)


_KILL_MID_WRITE = """
import sys, time, pathlib
from pyspark import TaskContext
from pyspark.sql import functions as F
import ndcg_spark.job.stages as pipeline
from ndcg_spark.job.config import JobConfig
from ndcg_spark.job.publish import publishing
from ndcg_spark.job.session import build_session

config_path, run_id, marker = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
spark = build_session(master="local[2]", shuffle_partitions=2)
config = JobConfig.from_yaml(config_path)

def stall(x):
    # the per-request write's partition 0 tells the test it is writing, then waits to be killed
    if TaskContext.get().partitionId() == 0:
        marker.write_text("writing")
        time.sleep(600)
    return True

stall_udf = F.udf(stall, "boolean").asNondeterministic()
real_write = pipeline.write_run_partitioned

def write(df, target, *a, **kw):
    if target == config.per_request:
        df = df.filter(stall_udf(F.lit(1)))
    return real_write(df, target, *a, **kw)

pipeline.write_run_partitioned = write
with publishing(spark, config, run_id):
    pipeline.score_stage(spark, config, run_id)
print("UNEXPECTED: finished")
"""


@pytest.mark.slow
def test_driver_killed_mid_write_keeps_previous_night_and_rerun_is_identical(spark, night, tmp_path):
    root, data, config_path, reference = night
    config = JobConfig.from_yaml(config_path)
    script = tmp_path / "kill_mid_write.py"
    script.write_text(_KILL_MID_WRITE)
    marker = tmp_path / "writing"
    log = tmp_path / "driver.log"
    proc = None
    try:
        proc = _spawn([sys.executable, str(script), str(config_path), "night-2", str(marker)], log, env=_env(), cwd=tmp_path)
        _wait_for(lambda: marker.exists() or proc.poll() is not None, 300, "the per-request write to start")
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(1.0)  # let the other write task finish its file
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers, at once
        proc.wait(timeout=30)
    finally:
        _stop(proc)
    assert "UNEXPECTED" not in log.read_text()

    published = _published(spark, config_path)
    # night-2 was being replaced: hidden (status 'running'), never half-shown; night-1 intact
    assert published.filter(F.col("run_id") == "night-2").count() == 0
    assert _rows(published, "night-1") == reference
    assert _states(spark, config_path) == {"night-1": COMPLETE, "night-2": RUNNING}

    _run_here(spark, config_path, "night-2")
    published = _published(spark, config_path)
    assert _rows(published, "night-2") == reference and _rows(published, "night-1") == reference
    _assert_no_duplicates(read_run(spark, config.per_request))


# ----------------------------------------------------------------------------------- task retry
_FLAKY_TASK = """
import sys, pathlib
from pyspark import TaskContext
from pyspark.sql import functions as F
import ndcg_spark.job.stages as pipeline
from ndcg_spark.job.config import JobConfig
from ndcg_spark.job.publish import publishing
from ndcg_spark.job.session import build_session

config_path, run_id, marker = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
spark = build_session(master="local[2,3]", shuffle_partitions=2)  # up to 3 attempts per task
config = JobConfig.from_yaml(config_path)

def first_attempt_fails(x):
    ctx = TaskContext.get()
    if ctx.attemptNumber() == 0 and ctx.partitionId() == 0:
        with open(marker, "a") as fh:
            fh.write(f"stage {ctx.stageId()} task {ctx.taskAttemptId()}\\n")
        raise RuntimeError("injected failure of a first task attempt")
    return True

flaky = F.udf(first_attempt_fails, "boolean").asNondeterministic()
real_read = pipeline.read_source

def read_source(spark_, source, role):
    df = real_read(spark_, source, role)
    return df.filter(flaky(F.lit(1))) if role == "inputs.candidates" else df

pipeline.read_source = read_source
with publishing(spark, config, run_id):
    pipeline.score_stage(spark, config, run_id)
"""


@pytest.mark.slow
def test_task_failing_its_first_attempt_under_local_2_3_gives_identical_output(spark, night, tmp_path):
    root, data, _, reference = night
    config_path = _write_config(tmp_path / "conf" / "job.yaml", data, "per_request: {path: out/per_request}")
    script = tmp_path / "flaky_task.py"
    script.write_text(_FLAKY_TASK)
    marker = tmp_path / "failures"
    proc = None
    try:
        proc = _spawn([sys.executable, str(script), str(config_path), "night-2", str(marker)],
                      tmp_path / "job.log", env=_env(), cwd=tmp_path)
        proc.wait(timeout=400)
    finally:
        _stop(proc)
    assert proc.returncode == 0, (tmp_path / "job.log").read_text()[-3000:]
    assert marker.exists() and marker.read_text().strip(), "the injected failure never fired"
    published = _published(spark, config_path)
    assert _rows(published, "night-2") == reference
    _assert_no_duplicates(published)


# ----------------------------------------------------------------------------------- the cluster
SPARK_HOME = Path(__import__("pyspark").__file__).parent


def _hive_conf(home: Path) -> list[str]:
    """A Hive metastore on embedded Derby and a warehouse folder, both under ``home``."""
    return [
        "--conf", "spark.sql.catalogImplementation=hive",
        "--conf", f"spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={home}/metastore_db;create=true",
        "--conf", f"spark.sql.warehouse.dir={home}/warehouse",
        "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={home}",
        "--conf", "spark.ui.enabled=false",
        "--driver-memory", "768m",
    ]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (1 core, 1 GiB) on 127.0.0.1, from the pyspark wheel."""
    home = tmp_path_factory.mktemp("cluster")
    port, ui, worker_port, worker_ui = (_free_port() for _ in range(4))
    env = _env(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
               SPARK_LOG_DIR=str(home / "logs"), SPARK_WORKER_DIR=str(home / "work"))
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master = worker = None

    def interrupt(signum, frame):  # a SIGTERM (e.g. a CI timeout) still runs the finally below
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        master = _spawn([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(port), "--webui-port", str(ui)], home / "master.log", env=env, cwd=home)
        _wait_for(lambda: "I have been elected leader" in (home / "master.log").read_text() or master.poll() is not None,
                  120, "the master")
        assert master.poll() is None, (home / "master.log").read_text()[-2000:]
        url = f"spark://127.0.0.1:{port}"
        worker = _spawn([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--port", str(worker_port), "--webui-port", str(worker_ui), "--cores", "1", "--memory", "1g",
                         "--work-dir", str(home / "work"), url], home / "worker.log", env=env, cwd=home)
        _wait_for(lambda: "Successfully registered with master" in (home / "worker.log").read_text()
                  or worker.poll() is not None, 120, "the worker to register")
        assert worker.poll() is None, (home / "worker.log").read_text()[-2000:]
        yield {"url": url, "home": home, "env": env, "worker": worker}
    finally:
        _stop(worker)  # its group holds the executors it launched
        _stop(master)
        signal.signal(signal.SIGTERM, previous)


def _descendants_of(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        children = [c for c, pp in parents.items() if pp == p]
        found += children
        frontier += children
    return found


def _executors(worker_pid: int) -> list[int]:
    out = []
    for pid in _descendants_of(worker_pid):
        with contextlib.suppress(OSError):
            if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
    return out


def _submit(cluster, config_path: Path, run_id: str, zip_path: Path, log: Path) -> subprocess.Popen:
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster["url"], "--py-files", str(zip_path),
           "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=768m",
           "--conf", "spark.sql.shuffle.partitions=2", *_hive_conf(cluster["home"]),
           str(ROOT / "jobs" / "nightly_eval.py"), "run", "--config", str(config_path), "--run-id", run_id]
    env = {k: v for k, v in cluster["env"].items() if k != "PYTHONPATH"}  # the code comes from the zip
    return _spawn(cmd, log, env=env, cwd=cluster["home"])


DASHBOARD_SQL = """
SELECT p.run_id, p.system, p.k, count(*) AS requests, count(p.ndcg) AS scored,
       sum(CAST(p.empty_ideal AS INT)) AS empty_ideal, round(avg(p.ndcg), 6) AS macro_ndcg
FROM ndcg_it.per_request p
JOIN ndcg_it.run_status s ON s.run_id = p.run_id AND s.status = 'complete'
GROUP BY p.run_id, p.system, p.k
ORDER BY p.run_id, p.system, p.k
"""


@pytest.mark.slow
def test_spark_submit_to_standalone_cluster_survives_a_killed_executor_and_spark_sql_reads_the_tables(
    spark, night, cluster, tmp_path
):
    root, data, _, reference = night
    zip_path = build_pyfiles_zip(tmp_path / "dist" / "ndcg_spark.zip")
    config_path = _write_config(
        tmp_path / "conf" / "nightly.yaml", data,
        "per_request: {table: ndcg_it.per_request}, run_status: {table: ndcg_it.run_status}",
    )
    # night-2: the executor JVM is killed once it runs tasks; the master starts another one
    worker_pid = cluster["worker"].pid
    work = cluster["home"] / "work"
    earlier_apps = set(work.glob("app-*"))
    killed: list[int] = []
    started = time.monotonic()
    proc = None
    try:
        proc = _submit(cluster, config_path, "night-2", zip_path, tmp_path / "night-2.log")

        def running_executor():
            if proc.poll() is not None:
                return -1
            logs = [p for app in set(work.glob("app-*")) - earlier_apps for p in app.glob("*/stderr")]
            busy = [p for p in logs if "Running task" in p.read_text(errors="replace")]
            execs = _executors(worker_pid)
            return execs[0] if busy and execs else None

        victim = _wait_for(running_executor, 300, "an executor running tasks")
        assert victim != -1, (tmp_path / "night-2.log").read_text()[-4000:]
        os.kill(victim, signal.SIGKILL)
        killed.append(victim)
        proc.wait(timeout=600)
    finally:
        _stop(proc)
    wall_2 = time.monotonic() - started
    log_2 = (tmp_path / "night-2.log").read_text()
    assert proc.returncode == 0, log_2[-4000:]
    assert "run night-2: published" in log_2
    assert killed
    print(f"\ncluster job night-2 with executor {killed[0]} killed mid-job: {wall_2:.1f} s wall (spark-submit to exit)")
    master_log = (cluster["home"] / "master.log").read_text()
    assert "Removing executor" in master_log or "EXITED" in master_log or "KILLED" in master_log

    # a separate spark-sql process: the dashboard query, and an export of the published rows
    export = tmp_path / "export"
    sql = DASHBOARD_SQL.strip() + ";\n" + (
        f"INSERT OVERWRITE DIRECTORY '{export}' USING parquet "
        "SELECT p.* FROM ndcg_it.per_request p LEFT SEMI JOIN ndcg_it.run_status s "
        "ON s.run_id = p.run_id AND s.status = 'complete';"
    )
    done = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-sql"), "--master", "local[1]", *_hive_conf(cluster["home"]), "-e", sql],
        capture_output=True, text=True, timeout=450, cwd=cluster["home"], env=cluster["env"], start_new_session=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line.split("\t") for line in done.stdout.strip().splitlines() if line.startswith("night-")]
    assert {(r[0], r[2]) for r in lines} == {("night-2", k) for k in ("1", "3", "10")}
    exported = spark.read.parquet(str(export))
    assert _rows(exported, "night-2") == reference
    _assert_no_duplicates(exported)
