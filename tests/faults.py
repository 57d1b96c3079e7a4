"""What the fault tests share (tests/test_run_faults.py, tests/test_run_retries.py,
tests/test_cluster_faults.py): two published nights to break (run once per test run, a copy per
module), a job YAML over the shared sample, the console script in a child process with a fault
injected, and readers of the tables exactly as docs/operations.md documents them (path tables
partitioned by ``run_id``; a reader keeps the runs whose run-status row says ``complete``), so the
package's internals can move without touching the tests.

Every process a test starts is started in its own process group and killed by PID (and group)
in a ``finally`` (:func:`stop`).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pyspark.sql import functions as F

try:
    from tests import class_archive
    from tests.small_data import SMALL_DATA_EXECUTION
except ImportError:  # pragma: no cover - run from inside tests/
    import class_archive  # type: ignore[no-redef]
    from small_data import SMALL_DATA_EXECUTION  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
SPARK_HOME = Path(__import__("pyspark").__file__).parent
KEY = ("run_id", "system", "request_id", "k")
AGGREGATE_KEY = ("run_id", "system", "pool_version", "k", "slice_dimension", "slice_value")
#: what differs between two clean runs of the same night: the run id, and when stage 2 stamped it
NOT_COMPARED = ("run_id", "created_at")


# ----------------------------------------------------------------------------------- two nights
PATH_OUTPUTS = {"per_request": {"path": "out/per_request"}, "aggregate": {"path": "out/aggregate"},
                "run_metadata": {"path": "out/run_metadata"}}
TABLES = ("per_request", "aggregate", "run_metadata", "run_status")


@dataclass(frozen=True)
class Night:
    root: Path
    config: Path
    #: the clean run's per-request and aggregate rows (no run id, no stage-2 timestamp)
    reference: list[tuple]
    aggregate: list[tuple]
    #: night-1's files in each table, which no fault may touch
    night_1_files: dict[str, set[str]]

    @property
    def out(self) -> Path:
        return self.root / "out"


def publish_two_nights(sample, root: Path) -> None:
    """Under ``root``: a path-output job YAML over the sample (``conf/job.yaml``) and its tables
    (``out/``) with night-2 published by ``run`` and night-1, the night before: night-2's
    partitions copied under their own run id. Built once per test run (``clean_night`` in
    tests/conftest.py); each fault module breaks a copy of it (:func:`night_fixture`)."""
    from ndcg_spark.cli import main

    config = write_config(root / "conf" / "job.yaml", sample, PATH_OUTPUTS)
    assert main(["run", "--config", str(config), "--run-id", "night-2"]) == 0
    out = root / "out"
    for name in TABLES:
        shutil.copytree(out / name / "run_id=night-2", out / name / "run_id=night-1")


@pytest.fixture(scope="module", name="night")
def night_fixture(spark, sample_dir, clean_night, tmp_path_factory) -> Night:
    """A module's own copy of the two published nights (:func:`publish_two_nights`; outputs are
    relative to the YAML's folder's parent, so the copy's YAML writes into the copy), with night-2's
    rows as the reference. A test module takes it with ``night = faults.night_fixture``.

    A module's tests share its copy: each one breaks a run of it and must leave it, after its
    re-run, exactly as this made it.
    """
    root = tmp_path_factory.mktemp("night")
    for folder in ("conf", "out"):
        shutil.copytree(clean_night / folder, root / folder)
    config, out = root / "conf" / "job.yaml", root / "out"
    per_request, aggregate = (table(spark, out / name) for name in ("per_request", "aggregate"))
    reference, aggregate_reference = rows(per_request, "night-2"), rows(aggregate, "night-2")
    assert len(reference) == sample_dir.n_requests * 2 * 3  # requests x systems x K
    assert rows(per_request, "night-1") == reference
    assert rows(aggregate, "night-1") == aggregate_reference
    assert_no_duplicates(per_request)
    assert states(spark, out) == {"night-1": "complete", "night-2": "complete"}
    files = {name: part_files(out / name / "run_id=night-1") for name in TABLES}
    return Night(root, config, reference, aggregate_reference, files)


def night_1_files_untouched(night: Night) -> None:
    for name in TABLES:
        assert part_files(night.out / name / "run_id=night-1") == night.night_1_files[name], name


def night_1_untouched(spark, night: Night) -> None:
    """night-1's files as they were, and its published per-request rows the reference."""
    night_1_files_untouched(night)
    assert rows(published(spark, night.out), "night-1") == night.reference


def hidden(spark, night: Night) -> None:
    """night-2 is being rewritten: no reader sees any of it."""
    for name in ("per_request", "aggregate"):
        assert published(spark, night.out, name).filter(F.col("run_id") == "night-2").count() == 0, name


def as_clean(spark, night: Night) -> None:
    """Both nights published, row for row the clean run's, no duplicates, night-1 untouched."""
    for name, reference, key in (("per_request", night.reference, KEY), ("aggregate", night.aggregate, AGGREGATE_KEY)):
        shown = published(spark, night.out, name)
        assert rows(shown, "night-2") == reference and rows(shown, "night-1") == reference, name
        assert_no_duplicates(table(spark, night.out / name), key)
    assert states(spark, night.out) == {"night-1": "complete", "night-2": "complete"}
    night_1_files_untouched(night)  # (its published rows: checked just above)


def write_config(path: Path, sample, outputs: dict, *, small_data: bool = True, publishing: dict | None = None,
                 **spark: object) -> Path:
    """A job YAML over the shared sample; relative outputs resolve under ``path``'s folder's parent.

    With ``small_data`` its ``spark.conf`` starts from the suite's small-data settings
    (``tests/small_data.py``): the faults break how a night is published, not how it is planned,
    and a child driver that runs this YAML then compiles no generated code for the sample's few
    hundred requests (measured: the driver killed between the writes, alone, 34.2 s -> 28.8 s).
    ``small_data=False``: Spark's defaults, as a nightly run on a cluster has them. ``publishing``:
    the YAML's ``publishing:`` section (:data:`SHORT_PUBLISHING`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {"master": "local[2]", "shuffle_partitions": 2, **spark}
    conf = {**(SMALL_DATA_EXECUTION if small_data else {}), **settings.pop("conf", {})}
    job = {
        "version": 1,
        "contract": {"k": [1, 3, 10]},
        "inputs": {"candidates": {"path": sample.candidates}, "judgments": {"path": sample.judgments}},
        "attributes": {"path": sample.attributes, "weight": "weight", "slices": ["equipment_rarity"]},
        "outputs": outputs,
        "aggregate": {"bootstrap": {"replicates": 20}},
        "spark": {**settings, **({"conf": conf} if conf else {})},
        **({"publishing": publishing} if publishing else {}),
    }
    path.write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return path


def table(spark, folder: Path):
    """A run-partitioned path table, every run (every file's columns)."""
    return spark.read.option("basePath", str(folder)).option("mergeSchema", True).parquet(str(folder))


def published(spark, out: Path, name: str = "per_request"):
    """The rows of the published runs: the documented reader (docs/operations.md; status ``complete``)."""
    complete = table(spark, out / "run_status").filter(F.col("status") == "complete").select("run_id")
    return table(spark, out / name).join(complete.distinct(), "run_id", "left_semi")


def statuses(spark, out: Path) -> dict[str, dict]:
    """The run-status rows by run id."""
    return {r.run_id: r.asDict() for r in table(spark, out / "run_status").collect()}


def states(spark, out: Path) -> dict[str, str]:
    return {run_id: row["status"] for run_id, row in statuses(spark, out).items()}


def rows(df, run_id: str | None = None) -> list[tuple]:
    """The rows of a table without what differs between clean runs, sorted: comparable across runs."""
    if run_id is not None:
        df = df.filter(F.col("run_id") == run_id)
    cols = sorted(c for c in df.columns if c not in NOT_COMPARED)
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def assert_no_duplicates(df, key: tuple[str, ...] = KEY) -> None:
    assert df.count() == df.select(*key).distinct().count()


def part_files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.parquet")}


def spawn(cmd: list[str], log: Path, **kw) -> subprocess.Popen:
    fh = open(log, "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, **kw)


def stop(proc: subprocess.Popen | None) -> None:
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


#: the scheduler tests' thresholds: a beat every second, stale after 15 s (the defaults: 30 s, 10 min)
SHORT_PUBLISHING = {"stale_after_minutes": 0.25, "heartbeat_seconds": 1}


def end_with(proc: subprocess.Popen, sig: signal.Signals, timeout: float = 60) -> float:
    """Send ``sig`` to the driver's process group -- the driver, its JVM, its Python workers, as
    Airflow's timeout and a terminal's Ctrl-C do -- and wait for the driver to exit: the seconds
    from the signal to its exit."""
    started = time.monotonic()
    os.killpg(proc.pid, sig)
    proc.wait(timeout=timeout)
    return time.monotonic() - started


def kill_driver(proc: subprocess.Popen) -> None:
    """SIGKILL the driver, its JVM and its Python workers at once (its process group)."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def reached(proc: subprocess.Popen, marker: Path, log: Path, what: str) -> None:
    """Wait until the child driver ``proc`` writes ``marker`` (it reached the fault), still running;
    else stop it and fail with its log."""
    try:
        wait_for(lambda: marker.exists() or proc.poll() is not None, 300, what)
        assert proc.poll() is None, log.read_text()[-3000:]
    except BaseException:
        stop(proc)
        raise


def wait_for(predicate, timeout: float, what: str, poll: float = 0.2):
    """Poll ``predicate`` until it returns something true. A folder that disappears while the
    predicate walks it (a task attempt's folder renamed as the task commits) is a miss, not an error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except FileNotFoundError:
            value = None
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


#: the JVMs the tests start (child drivers, a cluster's daemons and executors, the benchmark's
#: contenders) compile with C1 only: each lives for one short run on small data, where C2's
#: compiling costs more than it saves (docs/benchmarks-history.md, "The test suite"); and they map the
#: suite's class archive when ``bash dev.sh`` built one (tests/class_archive.py)
CHILD_JVM_OPTIONS = class_archive.java_options(c1_only=True)
CHILD_DRIVER_SUBMIT_ARGS = f"--driver-java-options {shlex.quote(CHILD_JVM_OPTIONS)} pyspark-shell"


def env(**extra: str) -> dict[str, str]:
    """A child process's environment: this checkout importable, this interpreter for Python
    workers, a driver JVM that pyspark starts on the C1 compiler (:data:`CHILD_DRIVER_SUBMIT_ARGS`)."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_SUBMIT_ARGS": CHILD_DRIVER_SUBMIT_ARGS, **extra}


# ------------------------------------------------------------------------- the console script, broken
#: the console script in a child process; sys.argv[1:] are its arguments
CLI = [sys.executable, "-c", "import sys; from ndcg_spark.cli import main; sys.exit(main(sys.argv[1:]))"]

# The console script in a child process, with the per-request table's write broken on purpose:
# every module of the package that bound the public ``ndcg_spark.score_requests`` gets a version
# whose rows pass a Python UDF that, in partition 0, either stalls (``stall``: the test kills the
# driver mid-write; ``hold``: until the file <marker>.release exists) or fails its first attempt
# (``flaky``: Spark retries it under local[2,3]).
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
        elif mode == "hold":
            marker.write_text("writing")
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and not marker.with_suffix(".release").exists():
                time.sleep(0.2)
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
print("UNEXPECTED: finished" if mode == "stall" and status == 0 else f"exit {status}")
sys.exit(status)
'''




def injected_cli(tmp_path: Path, mode: str, marker: Path, *args: str) -> list[str]:
    script = tmp_path / "injected_cli.py"
    script.write_text(_INJECTED_CLI, encoding="utf-8")
    return [sys.executable, str(script), mode, str(marker), *args]


# The console script with one function of the package stalled on its way in: ``stall`` sleeps
# (the test kills the driver), ``hold`` waits for the file <marker>.release (the test lets it go).
# The marker file says the function was reached.
_STALLED_CLI = '''
import importlib, pathlib, sys, time
mode, marker, target = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
module_name, name = target.split(":")
module = importlib.import_module(module_name)
original = getattr(module, name)

def stalled(*args, **kwargs):
    marker.write_text("reached")
    release = marker.with_suffix(".release")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (mode == "hold" and release.exists()):
        time.sleep(0.2)
    return original(*args, **kwargs)

setattr(module, name, stalled)
from ndcg_spark.cli import main
status = main(sys.argv[4:])
print(f"exit {status}")
sys.exit(status)
'''


def stalled_cli(folder: Path, mode: str, marker: Path, target: str, *args: str) -> list[str]:
    """The console script with ``target`` (``module:function``) stalled (``stall``) or held until
    ``marker.with_suffix('.release')`` exists (``hold``)."""
    script = folder / "stalled_cli.py"
    script.write_text(_STALLED_CLI, encoding="utf-8")
    return [sys.executable, str(script), mode, str(marker), target, *args]


# The local file system with one rename stalled: the last move of a dynamic partition overwrite's
# commit (the staging folder's run_id=... onto the table's, whose old copy was just deleted), when
# the destination ends with $NDCG_STALL_RENAME. It writes $NDCG_STALL_MARKER, then sleeps: the
# driver is mid-commit. Hadoop's FileSystem is Java, so this is Java, compiled by the test.
_STALLING_FS = '''
package ndcgfaults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

public class StallingLocalFileSystem extends LocalFileSystem {
  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    String suffix = System.getenv("NDCG_STALL_RENAME");
    if (suffix != null && src.toString().contains("/.spark-staging-") && dst.toString().endsWith("/" + suffix)) {
      String line = "committing " + src + " -> " + dst + "\\n";
      Files.write(Paths.get(System.getenv("NDCG_STALL_MARKER")), line.getBytes(StandardCharsets.UTF_8));
      try {
        Thread.sleep(600_000L);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return super.rename(src, dst);
  }
}
'''


def stalling_fs(folder: Path) -> dict[str, str]:
    """Compile the stalling file system into ``folder``; the Spark settings that make it the driver's
    ``file:`` file system (the stall is armed only by the environment, see above)."""
    javac = shutil.which("javac") or (Path(os.environ.get("JAVA_HOME", "/nonexistent")) / "bin" / "javac")
    assert Path(javac).exists(), "the commit-fault tests compile a Hadoop FileSystem: they need javac (a JDK 17)"
    source = folder / "src" / "ndcgfaults" / "StallingLocalFileSystem.java"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(_STALLING_FS, encoding="utf-8")
    classpath = os.pathsep.join(str(p) for p in sorted((SPARK_HOME / "jars").glob("hadoop-client-api-*.jar")))
    done = subprocess.run([str(javac), "--release", "17", "-cp", classpath, "-d", str(folder / "classes"), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {"spark.driver.extraClassPath": str(folder / "classes"),
            "spark.hadoop.fs.file.impl": "ndcgfaults.StallingLocalFileSystem",
            "spark.hadoop.fs.file.impl.disable.cache": "true"}


# ------------------------------------------------------------------------------- the schedules
DEPLOY = ROOT / "docs" / "deploy.md"


def documented_commands() -> dict[str, list[str]]:
    """The console script's arguments each schedule of docs/deploy.md runs: the Airflow DAG's
    ``bash_command`` and the Databricks job's ``python_wheel_task.parameters``."""
    import json
    import re

    text = DEPLOY.read_text(encoding="utf-8")
    airflow = re.search(r'bash_command="ndcg-spark ([^"]+)"', text)
    assert airflow, "docs/deploy.md: the Airflow DAG's bash_command"
    job = re.search(r"```text\n(\{\n.*?\n\})\n```", text, re.S)
    assert job, "docs/deploy.md: the Databricks job definition (JSON)"
    task = json.loads(job.group(1))["tasks"][0]
    rendered = re.sub(r"\{\{.*?\}\}", "TEMPLATED", airflow.group(1))  # Jinja's, rendered before bash runs it
    return {"airflow": shlex.split(rendered), "databricks": task["python_wheel_task"]["parameters"]}


def scheduled(argv: list[str], config: Path, run_id: str) -> list[str]:
    """A documented command line (:func:`documented_commands`) for ``config`` and ``run_id``."""
    out = list(argv)
    for flag, value in (("--config", str(config)), ("--run-id", run_id)):
        out[out.index(flag) + 1] = value
    return out
