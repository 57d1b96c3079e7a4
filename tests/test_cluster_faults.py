"""Run it where users run it, and break it there: spark-submit to a standalone cluster whose
executor is killed mid-job, catalog tables read by a separate spark-sql, and the ``--py-files`` zip.
The faults of a single driver (killed mid-write, during a commit, between the stages; two attempts
at one night) are tests/test_run_faults.py's.

Everything goes through the job as a user starts it (in child processes) and the tables as
docs/operations.md documents them, with tests/faults.py's helpers; the reference rows are the
fault tests' clean night (``clean_night``).
Every process a test starts is started in its own process group and killed by PID (and group)
in a ``finally``. The shared sample (``sample_dir``: 200 requests) keeps the JVMs short-lived.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from ndcg_spark.job.packaging import build_pyfiles_zip

try:
    from tests import faults
except ImportError:  # pragma: no cover - run from inside tests/
    import faults  # type: ignore[no-redef]

ROOT, SPARK_HOME = faults.ROOT, faults.SPARK_HOME
_spawn, _stop, _wait_for, _env, _rows = faults.spawn, faults.stop, faults.wait_for, faults.env, faults.rows
_assert_no_duplicates = faults.assert_no_duplicates


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def reference(spark, sample_dir, clean_night) -> list[tuple]:
    """The per-request rows of a clean run of the sample (no run id): night-2 of the fault tests'
    published nights (tests/faults.py), scored in this test run's sessions, read, never written."""
    rows = _rows(faults.table(spark, clean_night / "out" / "per_request"), "night-2")
    assert len(rows) == sample_dir.n_requests * 2 * 3  # requests x systems x K
    return rows


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


# ----------------------------------------------------------------------------------- the cluster
# ----------------------------------------------------------------------------------- the cluster
def _hive_conf(home: Path) -> list[str]:
    """A Hive metastore on embedded Derby and a warehouse folder, both under ``home``."""
    return [
        "--conf", "spark.sql.catalogImplementation=hive",
        "--conf",
        f"spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={home}/metastore_db;create=true",
        "--conf", f"spark.sql.warehouse.dir={home}/warehouse",
        "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={home} {faults.CHILD_JVM_OPTIONS}",
        "--conf", "spark.ui.enabled=false",
        "--driver-memory", "768m",
    ]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (1 core, 1 GiB) on 127.0.0.1, from the pyspark wheel; its
    daemons, executors and drivers compile with C1 only and map the suite's class archive
    (``faults.CHILD_JVM_OPTIONS``)."""
    home = tmp_path_factory.mktemp("cluster")
    port, ui, worker_port, worker_ui = (_free_port() for _ in range(4))
    env = _env(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
               SPARK_DAEMON_JAVA_OPTS=faults.CHILD_JVM_OPTIONS, SPARK_LOG_DIR=str(home / "logs"),
               SPARK_WORKER_DIR=str(home / "work"))
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
           "--conf", f"spark.executor.extraJavaOptions={faults.CHILD_JVM_OPTIONS}",
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


STATUS_SQL = """
SELECT concat('status ', run_id), status, attempt_id, app_id, ended_at >= started_at FROM ndcg_it.run_status
"""


@pytest.mark.slow
def test_spark_submit_to_standalone_cluster_survives_a_killed_executor_and_spark_sql_reads_the_tables(
    spark, sample_dir, reference, cluster, tmp_path
):
    zip_path = build_pyfiles_zip(tmp_path / "dist" / "ndcg_spark.zip")
    config_path = faults.write_config(  # no run_status: the default is <database of per_request>.run_status
        tmp_path / "conf" / "nightly.yaml", sample_dir, {"per_request": {"table": "ndcg_it.per_request"}},
        small_data=False,  # a nightly run's own settings on the cluster
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
    published_by = re.search(r"run night-2: published by attempt (\w+) \(table ndcg_it.run_status says complete\)",
                             driver_log)
    assert published_by, driver_log[-4000:]
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
    sql = DASHBOARD_SQL.strip() + ";\n" + STATUS_SQL.strip() + ";\n" + (
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
    # the run-status row: published by the attempt that said so, of the application whose executor died
    status = [line.split("\t")[1:] for line in done.stdout.splitlines() if line.startswith("status night-2")]
    assert status == [["complete", published_by.group(1), app, "true"]], done.stdout[-2000:]
