"""The suite's class archive (tests/class_archive.py) reaches the JVMs it is meant for, and a
missing one is left out rather than handed to a JVM."""

from __future__ import annotations

import os

import pytest

try:
    from tests import class_archive, faults
except ImportError:  # pragma: no cover - run from inside tests/
    import class_archive  # type: ignore[no-redef]
    import faults  # type: ignore[no-redef]


def test_java_options_name_an_archive_only_when_it_exists(tmp_path, monkeypatch):
    archive = tmp_path / "classes.jsa"
    monkeypatch.setenv(class_archive.ENV, str(archive))
    assert class_archive.java_options() == ""
    assert class_archive.java_options(c1_only=True) == "-XX:TieredStopAtLevel=1"
    archive.write_bytes(b"")
    assert class_archive.java_options(c1_only=True).split() == [
        "-XX:TieredStopAtLevel=1", f"-XX:SharedArchiveFile={archive}", class_archive.QUIET]
    monkeypatch.delenv(class_archive.ENV)
    assert class_archive.java_options() == ""


@pytest.mark.skipif(not os.environ.get(class_archive.ENV), reason="bash dev.sh test|test-fast builds the archive")
def test_the_suites_session_and_child_drivers_start_on_the_archive(spark):
    archive = os.environ[class_archive.ENV]
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert f"-XX:SharedArchiveFile={archive}" in list(runtime.getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in faults.CHILD_DRIVER_SUBMIT_ARGS
