"""Stage 1 end to end: the console script writes the per-request table; another session reads it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from ndcg_spark.cli import main
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.job.run import run_job

try:
    from tests import faults
except ImportError:  # pragma: no cover - run from inside tests/
    import faults  # type: ignore[no-redef]

N_REQUESTS = 200  # the shared sample (tests/conftest.py: sample_dir)
KS = (1, 3, 5, 10)


@pytest.fixture(scope="module")
def job(spark, sample_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("job")
    paths = sample_dir
    assert sample_dir.n_requests == N_REQUESTS
    config = root / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(
        textwrap.dedent(f"""
        version: 1
        contract: {{k: {list(KS)}}}
        inputs:
          candidates: {{path: {paths['candidates']}}}
          judgments: {{path: {paths['judgments']}}}
        attributes:
          path: {paths['attributes']}
          weight: weight
          slices: [equipment_rarity, permission_group]
        outputs:
          per_request: {{path: out/per_request}}
        spark: {{master: "local[2]", shuffle_partitions: 2}}
        """)
    )
    return root, config


def _per_request(spark, root: Path):
    return spark.read.parquet(str(root / "out" / "per_request"))


@pytest.mark.slow  # a second driver JVM
def test_console_script_in_its_own_session_then_read_back_here(spark, job):
    root, config = job
    done = subprocess.run(
        [sys.executable, "-m", "ndcg_spark.cli", "score", "--config", str(config), "--run-id", "night-1"],
        capture_output=True, text=True, timeout=300, env=faults.env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "macro NDCG" in done.stdout and "night-1" in done.stdout
    df = _per_request(spark, root).filter(F.col("run_id") == "night-1")
    systems = df.select("system").distinct().count()
    assert df.count() == N_REQUESTS * systems * len(KS)
    assert df.select("request_id", "system", "k").distinct().count() == df.count()
    assert {"equipment_rarity", "permission_group", "weight", "contract_fingerprint"} <= set(df.columns)
    assert df.filter(F.col("empty_ideal")).count() > 0  # the sample has requests with no positive grade
    assert df.filter(F.col("empty_ideal") & F.col("ndcg").isNotNull()).count() == 0  # exclude: never scored


@pytest.mark.e2e
def test_rerun_replaces_only_its_own_run(spark, job):
    root, config = job
    if not (root / "out" / "per_request" / "run_id=night-1").exists():  # the slow test above was left out
        assert main(["score", "--config", str(config), "--run-id", "night-1"]) == 0
    assert main(["score", "--config", str(config), "--run-id", "night-2"]) == 0
    before = _per_request(spark, root)
    n1 = before.filter(F.col("run_id") == "night-1").count()
    n2 = before.filter(F.col("run_id") == "night-2").count()
    assert main(["score", "--config", str(config), "--run-id", "night-2"]) == 0
    after = _per_request(spark, root)
    assert after.filter(F.col("run_id") == "night-1").count() == n1  # untouched
    assert after.filter(F.col("run_id") == "night-2").count() == n2  # replaced, not appended
    cols = [c for c in after.columns if c != "run_id"]
    a = after.filter(F.col("run_id") == "night-1").select(cols)
    b = after.filter(F.col("run_id") == "night-2").select(cols)
    assert a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0  # same input, same rows


def test_run_job_scores_inside_the_publishing_bracket_and_returns_what_it_wrote(spark, job):
    root, config_path = job
    config = JobConfig.from_yaml(config_path)
    outcome = run_job(spark, config, "score", "night-3")
    assert outcome.published == config.run_status() == Source(path=str((root / "out" / "run_status").resolve()))
    status = spark.read.parquet(outcome.published.path).filter(F.col("run_id") == "night-3").collect()
    assert [r.status for r in status] == ["complete"]
    assert outcome.scored.target == config.per_request and outcome.scored.rows_written == N_REQUESTS * 2 * len(KS)
    assert outcome.scored.accounting.rows_quarantined == 0
    means = outcome.per_request_means
    assert [(r["system"], r["k"]) for r in means] == [(s, k) for s in ("bm25", "hybrid") for k in KS]
    assert {r["requests"] for r in means} == {N_REQUESTS}
    assert outcome.aggregated is None and outcome.compared is None and outcome.report is None  # score: no report
    with pytest.raises(ValueError, match="command: must be one of score, run, aggregate, compare, report"):
        run_job(spark, config, "publish", "night-3")


def test_bad_config_is_one_paragraph_without_trace(tmp_path, capsys):
    config = tmp_path / "conf" / "bad.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\ncontract: {k: [0]}\ninputs: {candidates: x}\n")
    assert main(["score", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "contract.k[0]: must be an integer >= 1, got 0" in err
    assert "Traceback" not in err


def test_missing_input_is_named(job, tmp_path, capsys):
    config = tmp_path / "conf" / "missing.yaml"
    config.parent.mkdir()
    config.write_text(
        "version: 1\ninputs: {candidates: {path: /nonexistent/cands}}\noutputs: {per_request: {path: out}}\n"
    )
    assert main(["score", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    # refused before Spark starts (a local master): the path as resolved, and where relative ones start
    assert ("inputs.candidates.path: no such file or folder: /nonexistent/cands (version 1 resolves a relative "
            f"path against the YAML's folder's parent, {tmp_path})") in err
    assert "Traceback" not in err and "py4j" not in err.lower()
