"""Run it where users run it, and break it: spark-submit to a standalone cluster, catalog tables
read by a separate spark-sql, and faults (a stage failing after the data write, a failed task, a
killed executor, a killed driver) that must neither lose the previous night nor change or
duplicate a row.

Everything goes through the console script (``ndcg_spark.cli.main``, in this session or in a
child process) and the tables as docs/operations.md documents them (path tables partitioned by
``run_id``, the run-status table beside the per-request table; a reader keeps the runs whose
status is ``complete``), so the package's internals can move without touching this file.

Every process a test starts is started in its own process group and killed by PID (and group)
in a ``finally``. The shared sample (``sample_dir``: 200 requests) keeps the JVMs short-lived.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from pyspark.sql import functions as F

from ndcg_spark.cli import main
from ndcg_spark.job.packaging import build_pyfiles_zip

ROOT = Path(__file__).resolve().parent.parent
KEY = ("run_id", "system", "request_id", "k")


# ----------------------------------------------------------------------------------- helpers
def _write_config(path: Path, sample, outputs: dict, **spark: object) -> Path:
    """A job YAML over the shared sample; relative outputs resolve under ``path``'s folder's parent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    job = {
        "version": 1,
        "contract": {"k": [1, 3, 10]},
        "inputs": {"candidates": {"path": sample.candidates}, "judgments": {"path": sample.judgments}},
        "attributes": {"path": sample.attributes, "weight": "weight", "slices": ["equipment_rarity"]},
        "outputs": outputs,
        "spark": {"master": "local[2]", "shuffle_partitions": 2, **spark},
    }
    path.write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return path


PATH_OUTPUTS = {"per_request": {"path": "out/per_request"}}


def _score(config: Path, run_id: str) -> None:
    assert main(["score", "--config", str(config), "--run-id", run_id]) == 0


def _table(spark, folder: Path):
    """A run-partitioned path table, every run."""
    return spark.read.option("basePath", str(folder)).parquet(str(folder))


def _published(spark, out: Path):
    """The per-request rows of the published runs: the documented reader (docs/operations.md; status ``complete``)."""
    complete = _table(spark, out / "run_status").filter(F.col("status") == "complete").select("run_id")
    return _table(spark, out / "per_request").join(complete.distinct(), "run_id", "left_semi")


def _states(spark, out: Path) -> dict[str, str]:
    return {r.run_id: r.status for r in _table(spark, out / "run_status").collect()}


def _rows(df, run_id: str | None = None) -> list[tuple]:
    """The rows of a per-request table without its run id, sorted: comparable across runs."""
    if run_id is not None:
        df = df.filter(F.col("run_id") == run_id)
    cols = sorted(c for c in df.columns if c != "run_id")
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def _assert_no_duplicates(df) -> None:
    assert df.count() == df.select(*KEY).distinct().count()


def _part_files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.parquet")}


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


def _wait_for(predicate, timeout: float, what: str, poll: float = 0.2):
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
def night(spark, sample_dir, tmp_path_factory):
    """A path-output job with night-2 of the sample published (the reference), and night-1, the
    night before: night-2's partitions copied under their own run id (a reader sees an earlier
    night as its files; that a re-run gives the same rows is tested below, not assumed here).

    The publishing tests below share its output folder: each one breaks a run of it and must
    leave it, after its re-run, exactly as the fixture made it.
    """
    root = tmp_path_factory.mktemp("night")
    config = _write_config(root / "conf" / "job.yaml", sample_dir, PATH_OUTPUTS)
    _score(config, "night-2")
    out = root / "out"
    for name in ("per_request", "run_status"):
        shutil.copytree(out / name / "run_id=night-2", out / name / "run_id=night-1")
    table = _table(spark, out / "per_request")
    reference = _rows(table, "night-2")
    assert len(reference) == sample_dir.n_requests * 2 * 3  # requests x systems x K
    assert _rows(table, "night-1") == reference
    _assert_no_duplicates(table)
    assert _states(spark, out) == {"night-1": "complete", "night-2": "complete"}
    return root, config, reference


# ----------------------------------------------------------------------------------- packaging
def test_packaging_zip_is_importable_alone_and_reproducible(tmp_path):
    first = build_pyfiles_zip(tmp_path / "a" / "ndcg_spark.zip")
    second = build_pyfiles_zip(tmp_path / "b" / "ndcg_spark.zip")
    assert first.read_bytes() == second.read_bytes()
    # -S: no site-packages, so ndcg_spark and yaml can only come from the zip
    code = (f"import sys; sys.path.insert(0, {str(first)!r}); import ndcg_spark, yaml; "
            "print(ndcg_spark.__file__, yaml.__file__)")
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(str(first)) == 2


# ----------------------------------------------------------------------------------- publishing
@pytest.mark.e2e
def test_same_night_twice_gives_identical_tables_row_for_row(spark, night):
    root, config, reference = night
    out = root / "out"
    before_files = _part_files(out / "per_request" / "run_id=night-2")
    _score(config, "night-2")  # the same night again
    published = _published(spark, out)
    assert _part_files(out / "per_request" / "run_id=night-2").isdisjoint(before_files), "night-2 was rewritten"
    assert _rows(published, "night-2") == reference and _rows(published, "night-1") == reference
    _assert_no_duplicates(published)
    assert _states(spark, out) == {"night-1": "complete", "night-2": "complete"}


@pytest.mark.e2e
def test_a_stage_failing_after_the_data_write_hides_the_run_and_a_rerun_restores_it(spark, sample_dir, night, capsys):
    """``run`` writes stage 1's table, then stage 2 fails writing (a file stands where its table
    should be): the run stays 'running', so no reader sees it, and the night before is intact."""
    root, config, reference = night
    out = root / "out"
    blocker = root / "not-a-folder"
    blocker.write_text("stage 2 cannot write its table here", encoding="utf-8")
    failing = _write_config(  # beside the night's YAML: the same outputs, and stage 2 into the file
        root / "conf" / "failing.yaml", sample_dir,
        {**PATH_OUTPUTS, "aggregate": {"path": str(blocker)}, "run_metadata": {"path": "out/run_metadata"}},
    )
    before_files = _part_files(out / "per_request" / "run_id=night-2")
    capsys.readouterr()
    assert main(["run", "--config", str(failing), "--run-id", "night-2"]) == 2
    err = capsys.readouterr().err
    assert "ndcg-spark run: failed." in err and "Traceback" not in err

    after_files = _part_files(out / "per_request" / "run_id=night-2")
    assert after_files and after_files.isdisjoint(before_files), "stage 1 did write night-2 again"
    published = _published(spark, out)
    assert published.filter(F.col("run_id") == "night-2").count() == 0
    assert _rows(published, "night-1") == reference
    assert _states(spark, out) == {"night-1": "complete", "night-2": "running"}

    _score(config, "night-2")
    published = _published(spark, out)
    assert _rows(published, "night-2") == reference and _rows(published, "night-1") == reference
    _assert_no_duplicates(_table(spark, out / "per_request"))
    assert _states(spark, out) == {"night-1": "complete", "night-2": "complete"}


# The console script in a child process, with the per-request table's write broken on purpose:
# every module of the package that bound the public ``ndcg_spark.score_requests`` gets a version
# whose rows pass a Python UDF that, in partition 0, either stalls (``stall``: the test kills the
# driver mid-write) or fails its first attempt (``flaky``: Spark retries it under local[2,3]).
_INJECTED_CLI = '''
import importlib, pathlib, pkgutil, sys, time
from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType
import ndcg_spark
from ndcg_spark.cli import main

mode, marker = sys.argv[1], pathlib.Path(sys.argv[2])
original = ndcg_spark.score_requests

def partition_zero(_):
    ctx = TaskContext.get()
    if ctx.partitionId() == 0:
        if mode == "stall":
            marker.write_text("writing")
            time.sleep(600)
        elif ctx.attemptNumber() == 0:
            with open(marker, "a") as fh:
                fh.write(f"stage {ctx.stageId()} task {ctx.taskAttemptId()} attempt 0 failed\\n")
            raise RuntimeError("injected failure of a first task attempt")
    return True

broken = F.udf(partition_zero, BooleanType()).asNondeterministic()  # no session yet: no DDL string

def score_requests(*args, **kwargs):
    return original(*args, **kwargs).filter(broken(F.lit(1)))

for info in pkgutil.walk_packages(ndcg_spark.__path__, "ndcg_spark."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
patched = 0
for name, module in list(sys.modules.items()):
    if name.startswith("ndcg_spark"):
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, score_requests)
                patched += 1
assert patched, "nothing bound ndcg_spark.score_requests"
status = main(sys.argv[3:])
print("UNEXPECTED: finished" if mode == "stall" else f"exit {status}")
sys.exit(status)
'''


def _injected_cli(tmp_path: Path, mode: str, marker: Path, *args: str) -> list[str]:
    script = tmp_path / "injected_cli.py"
    script.write_text(_INJECTED_CLI, encoding="utf-8")
    return [sys.executable, str(script), mode, str(marker), *args]


@pytest.mark.slow
def test_driver_killed_mid_write_keeps_previous_night_and_rerun_is_identical(spark, sample_dir, night, tmp_path):
    root, config, reference = night
    out = root / "out"
    # beside the night's YAML (same outputs); the write keeps its 2 tasks, so one finishes its file
    killed = _write_config(root / "conf" / "killed.yaml", sample_dir, PATH_OUTPUTS,
                           conf={"spark.sql.adaptive.coalescePartitions.enabled": "false"})
    marker, log = tmp_path / "writing", tmp_path / "driver.log"
    proc = None
    try:
        proc = _spawn(_injected_cli(tmp_path, "stall", marker, "score", "--config", str(killed), "--run-id", "night-2"),
                      log, env=_env(), cwd=tmp_path)
        _wait_for(lambda: marker.exists() or proc.poll() is not None, 300, "the per-request write to start")
        assert proc.poll() is None, log.read_text()[-3000:]
        # mid-write: the job's staging folder exists and the other task's file is in it
        staged = _wait_for(lambda: [p for p in (out / "per_request").glob(".spark-staging-*/**/*.parquet")], 60,
                           "the other write task's file")
        assert staged
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers, at once
        proc.wait(timeout=30)
    finally:
        _stop(proc)
    assert "UNEXPECTED" not in log.read_text()

    published = _published(spark, out)
    # night-2 was being replaced: hidden (status 'running'), never half-shown; night-1 intact
    assert published.filter(F.col("run_id") == "night-2").count() == 0
    assert _rows(published, "night-1") == reference
    assert _states(spark, out) == {"night-1": "complete", "night-2": "running"}

    _score(config, "night-2")
    published = _published(spark, out)
    assert _rows(published, "night-2") == reference and _rows(published, "night-1") == reference
    _assert_no_duplicates(_table(spark, out / "per_request"))


@pytest.mark.slow
def test_task_failing_its_first_attempt_under_local_2_3_gives_identical_output(spark, sample_dir, night, tmp_path):
    _, _, reference = night
    config = _write_config(tmp_path / "conf" / "job.yaml", sample_dir, PATH_OUTPUTS, master="local[2,3]")
    marker, log = tmp_path / "failures", tmp_path / "job.log"
    proc = None
    try:
        proc = _spawn(_injected_cli(tmp_path, "flaky", marker, "score", "--config", str(config), "--run-id", "night-2"),
                      log, env=_env(), cwd=tmp_path)
        proc.wait(timeout=400)
    finally:
        _stop(proc)
    assert proc.returncode == 0, log.read_text()[-3000:]
    failures = marker.read_text().splitlines() if marker.exists() else []
    assert failures and all(line.endswith("attempt 0 failed") for line in failures), "the injected failure never fired"
    published = _published(spark, tmp_path / "out")
    assert _rows(published, "night-2") == reference
    _assert_no_duplicates(published)


# ----------------------------------------------------------------------------------- the cluster
SPARK_HOME = Path(__import__("pyspark").__file__).parent


def _hive_conf(home: Path) -> list[str]:
    """A Hive metastore on embedded Derby and a warehouse folder, both under ``home``."""
    return [
        "--conf", "spark.sql.catalogImplementation=hive",
        "--conf",
        f"spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={home}/metastore_db;create=true",
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
        url = f"spark://127.0.0.1:{port}"
        master = _spawn([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(port), "--webui-port", str(ui)], home / "master.log", env=env, cwd=home)
        _wait_for(lambda: "I have been elected leader" in (home / "master.log").read_text()
                  or master.poll() is not None, 120, "the master")
        assert master.poll() is None, (home / "master.log").read_text()[-2000:]
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


def _executors(worker_pid: int) -> dict[int, tuple[str, str]]:
    """The worker's executor JVMs: PID -> (application id, executor id), from their command lines."""
    found = {}
    for pid in _descendants_of(worker_pid):
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            if "org.apache.spark.executor.CoarseGrainedExecutorBackend" in args:
                found[pid] = (args[args.index("--app-id") + 1], args[args.index("--executor-id") + 1])
    return found


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
    spark, sample_dir, night, cluster, tmp_path
):
    _, _, reference = night
    zip_path = build_pyfiles_zip(tmp_path / "dist" / "ndcg_spark.zip")
    config_path = _write_config(  # no run_status: the default is <database of per_request>.run_status
        tmp_path / "conf" / "nightly.yaml", sample_dir, {"per_request": {"table": "ndcg_it.per_request"}},
    )
    # night-2: the executor JVM is killed once it runs tasks; the master starts another one
    worker_pid = cluster["worker"].pid
    work = cluster["home"] / "work"
    log = tmp_path / "night-2.log"
    killed: dict[int, tuple[str, str]] = {}
    started = time.monotonic()
    proc = None
    try:
        proc = _submit(cluster, config_path, "night-2", zip_path, log)

        def running_executor():
            if proc.poll() is not None:
                return -1
            for pid, (app, executor) in _executors(worker_pid).items():
                stderr = work / app / executor / "stderr"
                if stderr.exists() and "Running task" in stderr.read_text(errors="replace"):
                    return pid, (app, executor)
            return None

        found = _wait_for(running_executor, 300, "an executor running tasks")
        assert found != -1, log.read_text()[-4000:]
        victim, (app, executor) = found
        os.kill(victim, signal.SIGKILL)
        killed[victim] = (app, executor)
        proc.wait(timeout=600)
    finally:
        _stop(proc)
    wall = time.monotonic() - started
    driver_log = log.read_text()
    assert proc.returncode == 0, driver_log[-4000:]
    assert "run night-2: published (table ndcg_it.run_status says complete)" in driver_log
    print(f"\ncluster job night-2, executor {app}/{executor} killed mid-job: {wall:.1f} s wall (spark-submit to exit)")
    # this executor died of our SIGKILL (exit code 137), not of the application's normal shutdown
    # (which logs state KILLED for every executor), and the master launched a replacement
    worker_log = (cluster["home"] / "worker.log").read_text()
    master_log = (cluster["home"] / "master.log").read_text()
    assert re.search(rf"Executor {re.escape(app)}/{executor} finished with state EXITED message Command exited with "
                     rf"code 137", worker_log), worker_log[-3000:]
    removed = rf"Removing executor {re.escape(app)}/{executor} because it is EXITED"
    assert re.search(removed, master_log), master_log[-3000:]
    replacements = set(re.findall(rf"Launching executor {re.escape(app)}/(\d+) on worker", master_log)) - {executor}
    assert replacements, master_log[-3000:]
    assert re.search(rf"Lost executor {executor}\b", driver_log), driver_log[-4000:]

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
    exported = spark.read.parquet(str(export))
    assert _rows(exported, "night-2") == reference
    _assert_no_duplicates(exported)
    # the dashboard's numbers are the published rows' numbers
    expected = {(r.system, str(r.k)): (str(r.n), str(r.scored)) for r in exported.groupBy("system", "k").agg(
        F.count(F.lit(1)).alias("n"), F.count("ndcg").alias("scored")).collect()}
    assert {(r[1], r[2]): (r[3], r[4]) for r in lines} == expected
    assert {r[0] for r in lines} == {"night-2"} and len(lines) == 2 * 3
