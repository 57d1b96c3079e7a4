"""Shared test data: the embedded sample written once per session, and one run of it.

Both fixtures are session-scoped and **read-only**: a test that changes the data or the tables
writes its own copy (its own ``tmp_path``) or its own run id. The ``spark`` fixture is in the
checkout's root ``conftest.py`` (doctests under ``ndcg_spark/`` use it too).

Lanes (``pyproject.toml``): ``bash dev.sh test`` runs everything (CI runs exactly that);
``bash dev.sh test-fast`` (= ``bash dev.sh test -m "not slow and not e2e"``) leaves out the tests
marked ``e2e`` (whole jobs through the console script or the job's stages: shipped configs, the
docs' commands, re-runs, faults) and ``slow``: those that start an extra JVM or process (a cluster, a second driver, spark-submit,
spark-sql), a browser or a benchmark, or repeat a check many times (coverage and p-value
simulations, fuzzing, bit-identity under repartitioning).
"""

from __future__ import annotations

import contextlib
import io
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

#: the shared sample: small enough to score in seconds, large enough for every slice and edge case
SAMPLE_REQUESTS = 200
SAMPLE_SEED = 11
SAMPLE_RUN_ID = "2026-11-29"


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


@pytest.fixture(scope="session")
def sample_dir(spark, tmp_path_factory) -> SampleFiles:
    """The embedded maintenance-search sample (200 requests, seed 11), written once per session."""
    from ndcg_spark.sample.generate import write_sample

    root = tmp_path_factory.mktemp("sample")
    paths = write_sample(spark, root / "data", n_requests=SAMPLE_REQUESTS, seed=SAMPLE_SEED)
    names = ("candidates", "judgments", "attributes")
    return SampleFiles(root=root / "data", **{name: str(paths[name]) for name in names})


@pytest.fixture(scope="session")
def sample_run(spark, sample_dir, tmp_path_factory) -> SampleRun:
    """The shared sample scored, aggregated (20 bootstrap replicates), published and compared once
    per session by the console script, with its report."""
    from ndcg_spark.cli import main

    root = tmp_path_factory.mktemp("sample_run")
    ks, slices = (3, 10), ("equipment_rarity", "permission_group")
    outputs = {name: root / "out" / name for name in ("per_request", "aggregate", "audit", "run_metadata",
                                                       "comparison", "quarantine", "run_status", "reports")}
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
    return SampleRun(root, config, SAMPLE_RUN_ID, ks, slices, outputs, shown.getvalue())
