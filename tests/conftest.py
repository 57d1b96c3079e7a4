"""Shared test data: the embedded sample written once per test run, one run of it, and the fault
tests' two published nights.

The fixtures are session-scoped and **read-only** (under pytest-xdist the workers share their
files, :func:`built_once`): a test that changes the data or the tables writes its own copy (its
own ``tmp_path``) or its own run id. The ``spark`` fixture is in the
checkout's root ``conftest.py`` (doctests under ``ndcg_spark/`` use it too).

Lanes (``pyproject.toml``): ``bash dev.sh test`` runs everything (CI runs exactly that), on 3
pytest-xdist workers, one module per worker (the root ``conftest.py`` orders them);
``bash dev.sh test-fast`` (``-m "not slow and not e2e"``, on 2 workers) leaves out the tests
marked ``e2e`` (whole jobs through the console script or the job's stages: shipped configs, the
docs' commands, re-runs, faults) and ``slow``: those that start an extra JVM or process (a cluster, a second driver, spark-submit,
spark-sql), a browser or a benchmark, or repeat a check many times (coverage and p-value
simulations, fuzzing, bit-identity under repartitioning, the oracle grids past their core).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

#: the shared sample: small enough to score in seconds, large enough for every slice and edge case
SAMPLE_REQUESTS = 200
SAMPLE_SEED = 11
SAMPLE_RUN_ID = "2026-11-29"
SAMPLE_RUN_OUTPUTS = ("per_request", "aggregate", "audit", "run_metadata", "comparison", "quarantine", "run_status",
                      "reports")


@dataclass(frozen=True)
class SampleFiles:
    """The sample's three Parquet folders (``sample["candidates"]`` or ``sample.candidates``)."""

    root: Path
    candidates: str
    judgments: str
    attributes: str
    n_requests: int = SAMPLE_REQUESTS
    seed: int = SAMPLE_SEED

    def __getitem__(self, name: str) -> str:
        if name not in ("candidates", "judgments", "attributes"):
            raise KeyError(name)
        return getattr(self, name)


@dataclass(frozen=True)
class SampleRun:
    """One published run of the sample: ``ndcg-spark run`` (stage 1, stage 2, the report), then
    ``ndcg-spark compare`` (hybrid against bm25; the report rewritten with the comparison).

    ``config`` is its job YAML; ``outputs`` maps every output name to its folder; ``stdout`` is
    what the command printed.
    """

    root: Path
    config: Path
    run_id: str
    ks: tuple[int, ...]
    slices: tuple[str, ...]
    outputs: dict[str, Path]
    stdout: str

    def read(self, spark, name: str):
        """One output table of this run (``per_request``, ``aggregate``, ``audit``, ``run_metadata``,
        ``comparison``)."""
        from pyspark.sql import functions as F

        df = spark.read.option("basePath", str(self.outputs[name])).parquet(str(self.outputs[name]))
        return df.filter(F.col("run_id") == self.run_id)


def built_once(tmp_path_factory, name: str, build) -> Path:
    """A folder that ``build(folder)`` filled once per test run: in this session's temporary folder,
    or, under pytest-xdist (``bash dev.sh test`` runs the suite on several workers), in the run's
    folder that all workers share -- the first worker to ask builds it while the others wait on a
    file lock, then they all read it. A build that failed is tried again by the next worker."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent / name  # pytest-N/, the workers' common parent
    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / ".built").exists():
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            build(shared)
            (shared / ".built").touch()
    return shared


@pytest.fixture(scope="session")
def sample_dir(spark, tmp_path_factory) -> SampleFiles:
    """The embedded maintenance-search sample (200 requests, seed 11), written once per test run."""
    from ndcg_spark.sample.generate import write_sample

    def build(folder: Path) -> None:
        write_sample(spark, folder / "data", n_requests=SAMPLE_REQUESTS, seed=SAMPLE_SEED)

    data = built_once(tmp_path_factory, "sample", build).resolve() / "data"
    return SampleFiles(root=data, **{name: str(data / name) for name in ("candidates", "judgments", "attributes")})


@pytest.fixture(scope="session")
def sample_run(spark, sample_dir, tmp_path_factory) -> SampleRun:
    """The shared sample scored, aggregated (20 bootstrap replicates), published and compared once
    per test run by the console script, with its report."""
    ks, slices = (3, 10), ("equipment_rarity", "permission_group")

    def build(root: Path) -> None:
        (root / "stdout.txt").write_text(run_the_sample(sample_dir, root, ks, slices), encoding="utf-8")

    root = built_once(tmp_path_factory, "sample_run", build)
    outputs = {name: root / "out" / name for name in SAMPLE_RUN_OUTPUTS}
    return SampleRun(root, root / "conf" / "job.yaml", SAMPLE_RUN_ID, ks, slices, outputs,
                     (root / "stdout.txt").read_text(encoding="utf-8"))


def run_the_sample(sample_dir: SampleFiles, root: Path, ks: tuple[int, ...], slices: tuple[str, ...]) -> str:
    """``run`` then ``compare`` of the sample ``sample_dir`` under ``root`` (the shared sample; also
    tests/class_archive.py's small one); what they printed."""
    from ndcg_spark.cli import main

    config = root / "conf" / "job.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(textwrap.dedent(f"""
        version: 1
        contract: {{k: {list(ks)}}}
        inputs:
          candidates: {{path: {sample_dir.candidates}}}
          judgments: {{path: {sample_dir.judgments}}}
        attributes: {{path: {sample_dir.attributes}, weight: weight, slices: {list(slices)}}}
        outputs:
          per_request: {{path: out/per_request}}
          aggregate: {{path: out/aggregate}}
          audit: {{path: out/audit}}
          run_metadata: {{path: out/run_metadata}}
          comparison: {{path: out/comparison}}
          quarantine: {{path: out/quarantine}}
          report_dir: out/reports
        aggregate: {{min_eligible: 30, bootstrap: {{replicates: 20}}}}
        compare: {{baseline: bm25, candidate: hybrid, bootstrap: {{replicates: 20}}, permutations: 19}}
        spark: {{master: "local[2]", shuffle_partitions: 2}}
        """), encoding="utf-8")
    shown, errors = io.StringIO(), io.StringIO()
    for command in ("run", "compare"):
        with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(errors):
            status = main([command, "--config", str(config), "--run-id", SAMPLE_RUN_ID])
        assert status == 0, f"the shared sample's {command} failed:\n{errors.getvalue()[-3000:]}"
    return shown.getvalue()


@pytest.fixture(scope="session")
def clean_night(spark, sample_dir, tmp_path_factory) -> Path:
    """The fault tests' two published nights of the sample (``tests/faults.py``,
    :func:`publish_two_nights`), run once per test run; each fault module breaks its own copy."""
    try:
        from tests import faults
    except ImportError:  # pragma: no cover - run from inside tests/
        import faults  # type: ignore[no-redef]

    return built_once(tmp_path_factory, "night", lambda root: faults.publish_two_nights(sample_dir, root))

