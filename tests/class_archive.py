"""A class-data archive for the suite's JVMs: the classes a run of ndcg-spark loads, stored once in
the JVM's own format, so that each JVM the suite starts maps them instead of loading and verifying
them from Spark's jars again (JDK 17 application class-data sharing: ``-XX:ArchiveClassesAtExit``
to write it, ``-XX:SharedArchiveFile`` to use it).

Every JVM the suite starts (its workers' sessions, the fault tests' child drivers, a cluster's
daemons, drivers and executors, the benchmark's contenders) spent seconds of CPU loading the same
classes. ``bash dev.sh test`` and ``test-fast`` build the archive once per virtualenv, JDK and
pyspark (``python tests/class_archive.py`` prints its path; it is kept in the virtualenv) and hand
it to the tests in ``NDCG_TEST_CLASS_ARCHIVE``; :func:`java_options` puts it on a JVM's command
line. Without it (pytest run directly, or a build that failed) every JVM loads its classes as
before: the archive changes how fast a JVM starts, never what it computes. Measured in
docs/benchmarks-history.md ("The test suite").

The archive is written by a JVM as it exits, so the build runs a small night (the sample's
``run`` and ``compare``) in a child process, ends its JVM, checks that a new JVM starts on the
archive (``-Xshare:on`` refuses one that does not match), and only then moves it into place: a
half-written archive is never used (a JVM mapping one crashes).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = "NDCG_TEST_CLASS_ARCHIVE"
#: a JVM whose archive is missing or does not match its class path runs without it, silently
#: (the JVM would otherwise print a warning on standard output, which tests read)
QUIET = "-Xlog:cds=off,cds+dynamic=off"


def java_options(*, c1_only: bool = False) -> str:
    """The JVM options of a JVM the suite starts: the archive of :data:`ENV` when there is one,
    and with ``c1_only`` the C1 compiler alone (for JVMs that live for one short run)."""
    options = ["-XX:TieredStopAtLevel=1"] if c1_only else []
    archive = os.environ.get(ENV)
    if archive and Path(archive).is_file():
        options += [f"-XX:SharedArchiveFile={archive}", QUIET]
    return " ".join(options)


def archive_path() -> Path:
    """Where this virtualenv keeps the archive for this JDK and this pyspark (a hash of the JDK's
    version, pyspark's and its jars' folder in its name: another JDK or a reinstalled pyspark gets
    an archive of its own; the JVM would refuse the old one anyway, its jars' times having changed)."""
    import pyspark

    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else "java"
    version = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=True).stderr
    jars = Path(pyspark.__file__).parent / "jars"
    stamp = f"{version}\n{pyspark.__version__}\n{jars}\n{jars.stat().st_mtime_ns}"
    key = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    return Path(sys.prefix) / f"jvm-classes-{key}.jsa"


def _night(root: Path, mode: str) -> None:
    """In the child process: ``night`` runs the tests' sample night (:func:`tests.conftest.run_the_sample`:
    ``run`` then ``compare``) on a small sample, ``check`` one job; then ends the JVM, which writes
    the archive as it exits (``-XX:ArchiveClassesAtExit``) or has started on it (``-Xshare:on``)."""
    from pyspark import SparkContext

    from ndcg_spark.job.session import build_session
    from ndcg_spark.sample.generate import write_sample
    from tests.conftest import SAMPLE_SEED, SampleFiles, run_the_sample
    from tests.small_data import SMALL_DATA_EXECUTION

    spark = build_session(master="local[2]", app_name="ndcg-spark-class-archive", shuffle_partitions=2,
                          warehouse_dir=str(root / "warehouse"), conf=SMALL_DATA_EXECUTION)
    if mode == "night":
        data = root / "data"
        write_sample(spark, data, n_requests=_REQUESTS, seed=SAMPLE_SEED)
        sample = SampleFiles(data, *(str(data / name) for name in ("candidates", "judgments", "attributes")))
        run_the_sample(sample, root, (3, 10), ("equipment_rarity", "permission_group"))
    else:
        assert spark.range(3).count() == 3
    jvm = SparkContext._gateway.proc
    spark.stop()
    jvm.stdin.close()  # the JVM exits on its standard input's end, writing the archive as it goes
    jvm.wait(timeout=300)


#: the sample's requests for the archive's night: what matters is which classes a run loads, not its size
_REQUESTS = 40


def _child(root: Path, mode: str, options: str) -> subprocess.CompletedProcess:
    """This script in a child process (:func:`_night`), its driver JVM started with ``options``."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "PYSPARK_SUBMIT_ARGS": f"--driver-java-options {shlex.quote(options)} pyspark-shell"}
    return subprocess.run([sys.executable, __file__, mode, str(root)], env=env, capture_output=True, text=True,
                          timeout=900)


def build(path: Path) -> None:
    """Write the archive to ``path``: a night's run in a child JVM that writes it as it exits,
    then a JVM that must start on it; an :class:`AssertionError` (nothing at ``path``) otherwise."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        with tempfile.TemporaryDirectory(prefix="ndcg-class-archive-") as folder:
            done = _child(Path(folder), "night", f"-XX:ArchiveClassesAtExit={partial} {QUIET}")
            assert done.returncode == 0 and partial.is_file(), done.stderr[-3000:]
            checked = _child(Path(folder), "check", f"-Xshare:on -XX:SharedArchiveFile={partial}")
            assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
        partial.replace(path)
        for stale in path.parent.glob("jvm-classes-*.jsa"):  # another JDK's or pyspark's: not used again
            if stale != path:
                stale.unlink(missing_ok=True)
    finally:
        partial.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """Print the archive's path, building it first when this virtualenv has none for this JDK and
    pyspark; print nothing (and say why on standard error) when it cannot be built. (With
    ``night|check FOLDER``: the build's child process, :func:`_night`.)"""
    if argv:
        _night(Path(argv[1]), argv[0])
        return 0
    try:
        path = archive_path()
        if not path.is_file():
            started = time.perf_counter()
            print(f"class_archive: building the suite's JVM class archive ({path.name}) once", file=sys.stderr)
            build(path)
            print(f"class_archive: built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    except (AssertionError, OSError, subprocess.SubprocessError) as exc:
        print(f"class_archive: not built, the suite's JVMs load their classes as usual: {exc}", file=sys.stderr)
        return 0
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
