"""Every night traceable to the inputs it read (docs/operations.md, "What a night read"): with
plain files as inputs, here; Delta and Iceberg inputs are tests/test_formats.py's (the format lane).

A night records, per input, a fingerprint of its listing -- checked here against the files as the
operating system lists them, not against ndcg-spark's own listing --; ``ndcg-spark runs`` says
whether the inputs changed since; a replay on unchanged files gives the published per-request rows
(``exceptAll`` both ways), and changed files are refused before anything is written.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark.sql import functions as F

from ndcg_spark.cli import main

try:
    from tests import faults
except ImportError:  # pragma: no cover - run from inside tests/
    import faults  # type: ignore[no-redef]

pytestmark = pytest.mark.e2e
NIGHT = "2026-11-29"
ROLES = {"inputs.candidates": "candidates", "inputs.judgments": "judgments", "attributes": "attributes"}


@pytest.fixture(scope="module")
def job(spark, sample_dir, tmp_path_factory) -> Path:
    """A copy of the sample's inputs, a job YAML over it, and one published night."""
    root = tmp_path_factory.mktemp("lineage")
    for name in ROLES.values():
        shutil.copytree(sample_dir[name], root / "data" / name)
    data = SimpleNamespace(**{name: str(root / "data" / name) for name in ROLES.values()})
    config = faults.write_config(root / "conf" / "job.yaml", data, faults.PATH_OUTPUTS)
    assert main(["run", "--config", str(config), "--run-id", NIGHT]) == 0
    return config


def _recorded(spark, root: Path, run_id: str) -> dict[str, dict]:
    meta = spark.read.parquet(str(root / "out" / "run_metadata")).filter(F.col("run_id") == run_id)
    return {i.role: i.asDict() for i in meta.first().inputs}


def _listing(folder: Path) -> tuple[str, int, int]:
    """The fingerprint of a folder's data files as the operating system lists them: each file's URI,
    size and modification time in milliseconds, in path order (Spark skips files starting with _ or .)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(("_", ".")))
    lines = [f"file:{p}\t{p.stat().st_size}\t{p.stat().st_mtime_ns // 1_000_000}" for p in files]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16], len(files), sum(p.stat().st_size for p in files)


def _per_request(spark, root: Path, run_id: str):
    night = spark.read.parquet(str(root / "out" / "per_request")).filter(F.col("run_id") == run_id)
    return night.drop("run_id")


def test_a_night_records_a_fingerprint_of_every_file_input(spark, job):
    root = job.parent.parent
    recorded = _recorded(spark, root, NIGHT)
    assert set(recorded) == set(ROLES)
    for role, folder in ROLES.items():
        fingerprint, files, size = _listing(root / "data" / folder)
        entry = recorded[role]
        assert (entry["fingerprint"], entry["files"], entry["bytes"]) == (fingerprint, files, size), role
        assert (entry["format"], entry["version"], entry["table"]) == ("parquet", None, None)
        assert entry["path"] == str(root / "data" / folder) and entry["source"] == f"parquet {entry['path']}"


def test_runs_says_whether_a_nights_inputs_changed_since(spark, job, capsys):
    root = job.parent.parent
    capsys.readouterr()
    assert main(["runs", "--config", str(job)]) == 0
    assert re.search(rf"{NIGHT} +complete .*\n  inputs: as it read them\n", capsys.readouterr().out)

    judgments = root / "data" / "judgments"
    saved = root / "judgments.saved"
    shutil.copytree(judgments, saved, copy_function=shutil.copy2)  # the same files, times kept
    try:
        spark.read.parquet(str(saved)).limit(10).write.mode("append").parquet(str(judgments))  # a file more
        assert main(["runs", "--config", str(job)]) == 0
        shown = capsys.readouterr().out
        assert "  inputs changed since it read them: inputs.judgments (parquet " in shown, shown
        assert "inputs.candidates" not in shown and "attributes" not in shown
        then = _recorded(spark, root, NIGHT)["inputs.judgments"]
        fingerprint, files, size = _listing(judgments)
        assert (f"{then['files']} files, {then['bytes']:,} bytes, fingerprint {then['fingerprint']} then, "
                f"{files} files, {size:,} bytes, fingerprint {fingerprint} now") in shown
    finally:
        shutil.rmtree(judgments)
        shutil.move(saved, judgments)
    assert main(["runs", "--config", str(job)]) == 0
    assert "  inputs: as it read them" in capsys.readouterr().out  # the same files, times and all: as read


def test_a_replay_on_unchanged_files_gives_the_published_rows(spark, job, capsys):
    root = job.parent.parent
    assert main(["run", "--config", str(job), "--replay", NIGHT, "--run-id", "replayed"]) == 0
    published, replayed = _per_request(spark, root, NIGHT), _per_request(spark, root, "replayed")
    assert published.count() == 200 * 2 * 3  # requests x systems x K (1, 3, 10)
    assert published.exceptAll(replayed).count() == 0 and replayed.exceptAll(published).count() == 0
    assert _recorded(spark, root, "replayed") == _recorded(spark, root, NIGHT)  # the same inputs, recorded again


def test_a_replay_on_changed_files_is_refused_before_anything_is_written(spark, job, capsys):
    root = job.parent.parent
    attributes = root / "data" / "attributes"
    victim = next(p for p in sorted(attributes.rglob("*.parquet")))
    stat = victim.stat()
    try:
        os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # rewritten: a newer time
        capsys.readouterr()
        assert main(["run", "--config", str(job), "--replay", NIGHT, "--run-id", "refused"]) == 2
        err = capsys.readouterr().err
        assert f"replay: attributes: parquet {attributes} as run {NIGHT} read it" in err and "changed since" in err
        assert "Plain files keep no versions" in err and "Traceback" not in err
        assert not (root / "out" / "per_request" / "run_id=refused").exists()
        assert not (root / "out" / "run_status" / "run_id=refused").exists()  # not even a lease was taken
    finally:
        os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
