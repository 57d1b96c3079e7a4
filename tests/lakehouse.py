"""The Delta Lake and Apache Iceberg releases the format lane runs on, and a session that has them.

``bash dev.sh test-formats`` runs the tests marked ``formats`` once per pyspark below, each in its
own virtualenv (``.venv-formats-<pyspark>``: that pyspark installed first, as ``test-on`` does),
with ``NDCG_TEST_FORMATS=1``: the suite's session (the root ``conftest.py``) then gets
:func:`settings` -- the formats' jars by ``spark.jars.packages``, exactly as a user's cluster
resolves them from Maven Central, into the Ivy cache :data:`IVY`, Delta's session extension and
catalog, and an Iceberg catalog ``lake`` (JDBC, on a SQLite file under the session's temporary
warehouse). Child drivers get the same settings through their job YAML's ``spark.conf``.

The releases, from the formats' compatibility tables (docs/deploy.md lists them, checked against
this table by tests/test_docs.py): Delta 3.3.x is Delta's line for Spark 3.5 (3.3.3 is built on
3.5.6), Delta 4.4.0 ships artifacts for Spark 4.0, 4.1 and 4.2 (``delta-spark_4.1_2.13`` here);
Iceberg 1.12.0 ships runtimes for Spark 3.5 and 4.1 (none yet for 4.2 or 4.3). So the newest Spark
line both formats support is 4.1.

The Ivy cache lives outside the checkout, in ``$XDG_CACHE_HOME/ndcg-spark/ivy`` (``~/.cache``):
CI runs on a fresh clone, where a folder of the checkout would be empty every time; a user's
cache folder survives clones, and the jars (about 150 MB per Spark line) are downloaded once per
machine. ``NDCG_IVY_DIR`` overrides it.

``python tests/lakehouse.py`` prints the pyspark versions (what dev.sh loops over).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Combination:
    """One pyspark and the Delta and Iceberg artifacts built for its Spark line."""

    pyspark: str
    delta: str
    iceberg: str

    @property
    def line(self) -> str:
        return ".".join(self.pyspark.split(".")[:2])


#: the lane's combinations, newest first (docs/deploy.md's table)
COMBINATIONS = (
    Combination("4.1.4", "io.delta:delta-spark_4.1_2.13:4.4.0", "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"),
    Combination("3.5.6", "io.delta:delta-spark_2.12:3.3.3", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.12.0"),
)
#: the JDBC driver of the Iceberg catalog's SQLite file (a test set-up: a warehouse has Glue, Hive, REST …)
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.54.1.0"
#: the Iceberg catalog's name in the lane's sessions: its tables are ``lake.<database>.<table>``
CATALOG = "lake"
#: set by ``bash dev.sh test-formats``: the suite's session gets :func:`settings`
ENV = "NDCG_TEST_FORMATS"

IVY = Path(os.environ.get("NDCG_IVY_DIR") or
           Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ndcg-spark" / "ivy")


def combination(version: str | None = None) -> Combination | None:
    """The combination of a pyspark version (default: the installed one's Spark line), or None."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    line = ".".join(version.split(".")[:2])
    return next((c for c in COMBINATIONS if c.line == line), None)


def settings(warehouse: Path, combo: Combination | None = None) -> dict[str, str]:
    """The Spark settings of a session with Delta and Iceberg: the jars, Delta's extension and
    catalog (``spark_catalog``), and the Iceberg catalog :data:`CATALOG` (JDBC on SQLite) whose
    files and catalog database are under ``warehouse`` -- the same folder for every process of a
    test, so that they see the same tables."""
    combo = combo or combination()
    if combo is None:
        raise RuntimeError("no Delta/Iceberg combination for this pyspark (tests/lakehouse.py: COMBINATIONS)")
    warehouse = Path(warehouse).resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    prefix = f"spark.sql.catalog.{CATALOG}"
    return {
        "spark.jars.packages": ",".join((combo.delta, combo.iceberg, SQLITE_JDBC)),
        "spark.jars.ivy": str(IVY),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension,"
                                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": f"jdbc:sqlite:{warehouse / 'iceberg_catalog.db'}",
        f"{prefix}.jdbc.schema-version": "V1",
        f"{prefix}.warehouse": str(warehouse / "iceberg"),
        # the tests read tables other processes (child drivers) commit to: no cached table state
        # (Iceberg keeps a table's metadata 30 s by default, and a read saw the night before)
        f"{prefix}.cache-enabled": "false",
        # Delta rebuilds a table's state on 50 partitions by default: the tests' tables have a few files
        "spark.databricks.delta.snapshotPartitions": "2",
    }


def warehouse_of(spark) -> Path:
    """The folder of the lane session's Iceberg catalog (its child drivers share it)."""
    uri = spark.conf.get(f"spark.sql.catalog.{CATALOG}.uri")
    return Path(uri.removeprefix("jdbc:sqlite:")).parent


def has_formats(spark) -> bool:
    """Whether ``spark`` was started with :func:`settings` (the format lane's session)."""
    return spark.conf.get(f"spark.sql.catalog.{CATALOG}", None) is not None


@pytest.fixture
def lakehouse(spark):
    """The suite's session, when it has Delta and Iceberg; else the test is skipped, saying why."""
    if not has_formats(spark):
        pytest.skip("Delta Lake and Iceberg jars are not on this session: `bash dev.sh test-formats` runs these")
    return spark


# ------------------------------------------------------------------- what the formats say of a table
#: the commits of a table's first two nights, as its history names them: the table created empty
#: (no snapshot in Iceberg), then one commit per night
FIRST_TWO_NIGHTS = {"delta": ["CREATE TABLE", "WRITE", "WRITE"], "iceberg": ["overwrite", "overwrite"]}


def exists(spark, source) -> bool:
    if source.table is not None:
        return spark.catalog.tableExists(source.table)
    return (Path(source.path) / "_delta_log").is_dir()


def commits(spark, source) -> list[dict]:
    """The table's history, oldest first, as the format keeps it: Delta's ``DESCRIBE HISTORY``
    (version, operation and its parameters and metrics), Iceberg's ``snapshots`` table (id,
    operation, summary)."""
    name = quoted(source)
    if source.format == "delta":
        rows = spark.sql(f"DESCRIBE HISTORY {name}").orderBy("version").collect()
        return [{"version": r.version, "operation": r.operation, "parameters": dict(r.operationParameters or {}),
                 "metrics": dict(r.operationMetrics or {})} for r in rows]
    rows = spark.read.table(f"{source.table}.snapshots").orderBy("committed_at").collect()
    return [{"version": r.snapshot_id, "operation": r.operation, "metrics": dict(r.summary)} for r in rows]


def replaced(spark, commit: dict, source) -> dict[str, int]:
    """How many data files a commit removed and added, in the format's own record: the ``remove``
    and ``add`` actions of Delta's commit file (Delta 3.3 reports no removed files in its metrics),
    Iceberg's snapshot summary."""
    metrics = commit["metrics"]
    if source.format == "delta":
        location = spark.sql(f"DESCRIBE DETAIL {quoted(source)}").first()["location"]
        log = Path(re.sub(r"^file:(//)?", "", location)) / "_delta_log" / f"{commit['version']:020d}.json"
        actions = [next(iter(json.loads(line))) for line in log.read_text(encoding="utf-8").splitlines()]
        return {"removed_files": actions.count("remove"), "added_files": actions.count("add")}
    return {"removed_files": int(metrics.get("deleted-data-files", 0)),
            "added_files": int(metrics.get("added-data-files", 0))}


def provider(spark, source) -> str:
    """The table's provider, as the catalog describes it (``delta``, ``iceberg``, ``parquet`` …)."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {quoted(source)}").collect()
    return next(str(r[1]).strip().lower() for r in rows if str(r[0]).strip() == "Provider")


def quoted(source) -> str:
    """The table's name as SQL text (the tests' own tables: identifiers, or a Delta path)."""
    if source.table is not None:
        return source.table
    return "delta.`" + source.path.replace("`", "``") + "`"


def migrate(spark, source, message: str) -> None:
    """Do what a refusal's ``To migrate: …`` says: run its statements, or move the folder aside."""
    said = message.split("To migrate: ", 1)[1].rsplit(" (then run again).", 1)[0]
    if said.startswith("move the folder "):
        shutil.move(source.path, source.path + "_before")
        return
    for statement in said.split("; "):
        spark.sql(statement)


def remove_old_versions(spark, source) -> None:
    """What a warehouse's maintenance does to a table's older versions: Delta's ``VACUUM`` with no
    retention (its safety check off for the call), Iceberg's ``expire_snapshots`` of all but the
    current snapshot."""
    if source.format == "delta":
        check = "spark.databricks.delta.retentionDurationCheck.enabled"
        spark.conf.set(check, "false")
        try:
            spark.sql(f"VACUUM {quoted(source)} RETAIN 0 HOURS").collect()
        finally:
            spark.conf.unset(check)
        return
    catalog, table = source.table.split(".", 1)
    spark.sql(f"CALL {catalog}.system.expire_snapshots(table => '{table}', "
              "older_than => TIMESTAMP '9999-12-31 00:00:00', retain_last => 1)").collect()


# ------------------------------------------------------------------------ a Delta commit, stalled
# Delta's log store for file: paths with one commit stalled: the write of the commit file
# <table>/_delta_log/<version>.json (the commit itself: until it is there, the version does not
# exist) of a table whose folder ends with $NDCG_STALL_DELTA_COMMIT. It writes $NDCG_STALL_MARKER,
# then sleeps: the driver is mid-commit, its data files written. Compiled by the test against
# delta-storage (Java, in the Ivy cache) and loaded with the packages (spark.jars), as Delta loads
# a configured log store.
_STALLING_LOG_STORE = """
package ndcgfaults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

public class StallingLogStore extends io.delta.storage.HDFSLogStore {
  public StallingLogStore(Configuration conf) {
    super(conf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf) throws IOException {
    String table = System.getenv("NDCG_STALL_DELTA_COMMIT");
    Path log = path.getParent();
    if (table != null && path.getName().matches("[0-9]{20}[.]json") && log.getName().equals("_delta_log")
        && log.getParent().toString().endsWith("/" + table)) {
      String line = "committing " + path + "\\n";
      Files.write(Paths.get(System.getenv("NDCG_STALL_MARKER")), line.getBytes(StandardCharsets.UTF_8));
      try {
        Thread.sleep(600_000L);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    super.write(path, actions, overwrite, conf);
  }
}
"""


def stalling_log_store(folder: Path) -> dict[str, str]:
    """Compile the stalling log store into a jar under ``folder``; the Spark settings that make it
    Delta's log store for ``file:`` paths (armed only by the environment, see above)."""
    import subprocess
    import zipfile

    import pyspark

    javac = shutil.which("javac") or (Path(os.environ.get("JAVA_HOME", "/nonexistent")) / "bin" / "javac")
    assert Path(javac).exists(), "the Delta commit-fault test compiles a Delta log store: it needs javac (a JDK 17)"
    source = folder / "src" / "ndcgfaults" / "StallingLogStore.java"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(_STALLING_LOG_STORE, encoding="utf-8")
    delta = combination().delta.rsplit(":", 1)[1]
    jars = [IVY / "jars" / f"io.delta_delta-storage-{delta}.jar",
            *sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))]
    classes = folder / "classes"
    done = subprocess.run([str(javac), "--release", "17", "-cp", os.pathsep.join(map(str, jars)), "-d", str(classes),
                           str(source)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    jar = folder / "stalling-log-store.jar"
    with zipfile.ZipFile(jar, "w") as out:
        for file in classes.rglob("*.class"):
            out.write(file, file.relative_to(classes).as_posix())
    return {"spark.jars": str(jar), "spark.delta.logStore.file.impl": "ndcgfaults.StallingLogStore"}


def resolve() -> None:
    """Resolve the installed pyspark's jars into :data:`IVY` once, in one process, before the lane's
    workers start: two sessions resolving into an empty Ivy cache at the same time break each
    other (a fresh CI machine: every session then failed with JAVA_GATEWAY_EXITED)."""
    import tempfile

    from pyspark.sql import SparkSession

    import time

    for attempt in (1, 2, 3):  # a download Maven Central refused once is tried again
        try:
            with tempfile.TemporaryDirectory() as folder:
                spark = (SparkSession.builder.master("local[1]").appName("ndcg-spark-format-lane-jars")
                         .config(map=settings(Path(folder))).getOrCreate())
                try:
                    spark.range(1).count()
                finally:
                    spark.stop()
            break
        except Exception as error:  # noqa: BLE001 - the gateway's exit, reported and tried again
            print(f"lakehouse: resolving the jars failed (attempt {attempt} of 3): {error}")
            if attempt == 3:
                raise
            time.sleep(10 * attempt)
    print(f"lakehouse: the jars of {combination().pyspark} are in {IVY}")


if __name__ == "__main__":  # pragma: no cover - dev.sh's loop
    import sys

    if sys.argv[1:] == ["--resolve"]:
        resolve()
    else:
        print(" ".join(c.pyspark for c in COMBINATIONS))
