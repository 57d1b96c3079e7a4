"""The Spark Connect lane: the library, the README's examples and the console script over Connect.

These tests need a process of their own (a Spark Connect client cannot share a process with the
classic session of the rest of the suite) and the ``connect`` extra (grpc, pandas, pyarrow), so
they run only when pyspark's ``SPARK_REMOTE`` is set, and are skipped otherwise::

    bash dev.sh test-connect     # = SPARK_REMOTE='local[2]' .venv-connect/bin/python -m pytest -m connect tests/test_connect.py

The console script runs first, in child processes that start their own local Connect server (a
local server listens on the default port, so only one at a time); then this process starts the
session of the remaining tests (:func:`connect_spark`).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.connect,
    pytest.mark.skipif(
        not os.environ.get("SPARK_REMOTE"), reason="the Spark Connect lane (bash dev.sh test-connect) sets SPARK_REMOTE"
    ),
]

ROOT = Path(__file__).resolve().parent.parent
LOG2_3 = math.log2(3)
EPS = 1e-12
#: SPEC §2, exponential gain, K = 3
Q1_NDCG3 = (1 + 7 / LOG2_3 + 0) / (7 + 3 / LOG2_3 + 1 / 2)  # [1, 3, 0, 2]
Q2_NDCG3 = (3 + 0 + 1 / 2) / (3 + 1 / LOG2_3)  # [2, 0, 1]


def _console(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``ndcg-spark …`` as a user runs it, in a child process with ``SPARK_REMOTE=local[2]``."""
    script = Path(sys.executable).parent / "ndcg-spark"
    env = {**os.environ, "SPARK_REMOTE": "local[2]"}
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


# ------------------------------------------------------------------ the console script (child processes)


def test_console_script_runs_a_night_over_a_local_connect_server(tmp_path):
    """``SPARK_REMOTE=local[2] ndcg-spark sample`` then ``… run``: the tables are written and the
    run is published; every step prints its progress line."""
    pq = pytest.importorskip("pyarrow.parquet")
    sample = _console("sample", "--out", "data", "--requests", "60", cwd=tmp_path)
    assert sample.returncode == 0, sample.stderr[-3000:]
    config = tmp_path / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(textwrap.dedent("""
        version: 1
        contract: {k: [3, 10]}
        inputs: {candidates: {path: data/candidates}, judgments: {path: data/judgments}}
        attributes: {path: data/attributes, weight: weight, slices: [equipment_rarity]}
        outputs:
          per_request: {path: out/per_request}
          aggregate: {path: out/aggregate}
          run_metadata: {path: out/run_metadata}
          quarantine: {path: out/quarantine}
        aggregate: {min_eligible: 5, bootstrap: {replicates: 20}}
        spark: {master: "local[1]", shuffle_partitions: 2}
        """), encoding="utf-8")
    run = _console("run", "--config", str(config), "--run-id", "c1", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "CANNOT_CONFIGURE_SPARK_CONNECT_MASTER" not in run.stderr
    assert re.search(rf"run c1: published by attempt [0-9a-f]{{12}} \(parquet {re.escape(str(tmp_path))}/out/run_status says complete\)", run.stdout)
    for place, name in enumerate(("score", "aggregate", "publish", "report"), 1):
        assert f"run c1: step {place} of 4: {name} done in " in run.stderr, run.stderr[-2000:]
    per_request = pq.read_table(tmp_path / "out" / "per_request").to_pylist()
    assert len(per_request) == 60 * 2 * 2  # requests x systems (bm25, hybrid) x K
    assert {str(r["run_id"]) for r in per_request} == {"c1"}
    assert all(r["ndcg"] is None or 0.0 <= r["ndcg"] <= 1.0 + EPS for r in per_request)
    # no NDCG: an empty ideal, or a request hybrid returned nothing for (set aside under the default)
    assert all((r["ndcg"] is None) == (r["empty_ideal"] or r["no_results"]) for r in per_request)
    overall = [r for r in pq.read_table(tmp_path / "out" / "aggregate").to_pylist() if r["slice_dimension"] == "overall"]
    assert sorted((r["system"], r["k"]) for r in overall) == [("bm25", 3), ("bm25", 10), ("hybrid", 3), ("hybrid", 10)]
    for row in overall:  # the macro mean is the mean of the per-request table's scores
        scores = [r["ndcg"] for r in per_request if (r["system"], r["k"]) == (row["system"], row["k"]) and r["ndcg"] is not None]
        assert row["n_eligible"] == len(scores) and row["macro_ndcg"] == pytest.approx(sum(scores) / len(scores), abs=1e-12)
    status = pq.read_table(tmp_path / "out" / "run_status").to_pylist()
    assert [(str(r["run_id"]), r["status"]) for r in status] == [("c1", "complete")]
    assert not (tmp_path / "out" / "quarantine").exists()  # nothing quarantined, nothing written


def test_console_script_reports_a_missing_input_in_one_paragraph_over_connect(tmp_path):
    config = tmp_path / "missing.yaml"
    config.write_text("version: 1\ninputs: {candidates: {path: /nonexistent/cands}}\noutputs: {per_request: {path: out}}\n")
    failed = _console("score", "--config", str(config), "--run-id", "c2", cwd=tmp_path)
    assert failed.returncode == 2
    lines = failed.stderr.strip().splitlines()
    assert lines[-2:] == [
        "ndcg-spark score: failed.",
        "inputs.candidates: cannot read parquet /nonexistent/cands: [PATH_NOT_FOUND] Path does not exist: "
        "file:/nonexistent/cands. SQLSTATE: 42K03",
    ]
    for noise in ("Traceback", "grpc", "\tat org.apache", "ErrorUtils"):  # nor the local server's log of it
        assert noise not in failed.stderr, failed.stderr[-3000:]


# -------------------------------------------------------------- the library in this process's session


@pytest.fixture(scope="module")
def connect_spark(tmp_path_factory):
    """A Spark Connect session (``SPARK_REMOTE``: ``local[2]`` starts a local server here)."""
    from ndcg_spark.job.session import build_session, is_connect

    session = build_session(
        app_name="ndcg-spark-connect-tests", shuffle_partitions=2, warehouse_dir=tmp_path_factory.mktemp("warehouse")
    )
    assert is_connect(session)
    yield session
    session.stop()


def test_readme_examples_run_over_connect(connect_spark):
    import doctest

    from tests.test_docs import FLAGS, _page_doctest

    test = _page_doctest(ROOT / "README.md", {"spark": connect_spark})
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 5
    assert result.failed == 0, "".join(report)


@pytest.fixture(scope="module")
def two_rankers(connect_spark):
    """SPEC §2's requests ranked by A as in the worked example and by B (q1: [3, 2, 1, 0] -> 1.0);
    q3 has grades [0, 0] on both sides (an empty ideal)."""
    orders = {"q1": {"A": "abcd", "B": "bdac"}, "q2": {"A": "efg", "B": "gfe"}, "q3": {"A": "hi", "B": "hi"}}
    cands = connect_spark.createDataFrame(
        [(q, d, s, p + 1, "pool-1") for q, by in orders.items() for s, docs in by.items() for p, d in enumerate(docs)],
        "request_id string, doc_id string, system string, position int, pool_version string",
    )
    grades = {"q1": "a1 b3 c0 d2", "q2": "e2 f0 g1", "q3": "h0 i0"}
    judgments = connect_spark.createDataFrame(
        [(q, g[0], float(g[1:])) for q, gs in grades.items() for g in gs.split()],
        "request_id string, doc_id string, grade double",
    )
    return cands, judgments


def _by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_score_validate_aggregate_and_audit_over_connect(connect_spark, two_rankers):
    import ndcg_spark

    cands, judgments = two_rankers
    contract = ndcg_spark.Contract(k=[3])
    validated = ndcg_spark.validate_inputs(cands, judgments, contract)
    try:
        assert validated.accounting.rows_quarantined == 0
        per_request = ndcg_spark.score_requests(validated.candidates, validated.judgments, validated.contract, run_id="c")
        rows = _by(per_request.collect(), "system", "request_id")
    finally:
        validated.unpersist()
    assert rows[("A", "q1")]["ndcg"] == pytest.approx(Q1_NDCG3, abs=EPS)
    assert rows[("A", "q2")]["ndcg"] == pytest.approx(Q2_NDCG3, abs=EPS)
    assert rows[("B", "q1")]["ndcg"] == pytest.approx(1.0, abs=EPS)
    assert rows[("A", "q3")]["ndcg"] is None and rows[("A", "q3")]["empty_ideal"]
    aggregates = ndcg_spark.aggregate(per_request, ndcg_spark.AggregateSpec(replicates=0))
    overall = _by([r for r in aggregates.collect() if r["slice_dimension"] == "overall"], "system")
    a = overall[("A",)]
    assert a["macro_ndcg"] == pytest.approx((Q1_NDCG3 + Q2_NDCG3) / 2, abs=EPS)
    assert (a["n_eligible"], a["n_empty_ideal"], a["n_requests"]) == (2, 1, 3)
    audited = ndcg_spark.audit(aggregates).collect()
    assert {r["system"] for r in audited} <= {"A", "B"}


def test_pool_summary_and_compare_over_connect(connect_spark, two_rankers):
    import ndcg_spark

    cands, judgments = two_rankers
    contract = ndcg_spark.Contract(k=[3])
    per_request = ndcg_spark.score_requests(cands, judgments, contract, run_id="c")
    pools = ndcg_spark.pool_summary(cands, judgments, contract)
    assert pools.filter("system = 'A'").count() == 3
    spec = ndcg_spark.CompareSpec(baseline="A", candidate="B", replicates=0, permutations=0, min_paired=1)
    rows = _by(ndcg_spark.compare(per_request, pools, spec).collect(), "slice_dimension", "k")
    overall = rows[("overall", 3)]
    q2_b = (1 + 0 + 3 / 2) / (3 + 1 / LOG2_3)  # B shows grades [1, 0, 2]
    assert overall["n_paired"] == 2
    assert overall["delta_macro"] == pytest.approx(((1.0 - Q1_NDCG3) + (q2_b - Q2_NDCG3)) / 2, abs=EPS)
    assert (overall["wins"], overall["losses"]) == (1, 1)
    # the replicates run on the server's Python workers (Arrow batches): same bits as the classic
    # session's draws are checked in tests/test_draws.py; here, that they run over Connect at all
    spec = ndcg_spark.CompareSpec(baseline="A", candidate="B", replicates=50, permutations=49, min_paired=1)
    resampled = _by(ndcg_spark.compare(per_request, pools, spec).collect(), "slice_dimension", "k")[("overall", 3)]
    deltas = sorted([1.0 - Q1_NDCG3, q2_b - Q2_NDCG3])
    assert deltas[0] - EPS <= resampled["delta_macro_ci_low"] <= resampled["delta_macro_ci_high"] <= deltas[1] + EPS
    assert 1 / 50 <= resampled["p_value_macro"] <= 1.0


def test_a_missing_input_is_one_paragraph_when_read(connect_spark, tmp_path, capsys):
    from ndcg_spark.cli import main
    from ndcg_spark.errors import InputError
    from ndcg_spark.config.job import Source
    from ndcg_spark.storage.io import read_source

    with pytest.raises(InputError, match=r"^inputs\.candidates: cannot read parquet /nonexistent/cands: .*PATH_NOT_FOUND"):
        read_source(connect_spark, Source(path="/nonexistent/cands"), "inputs.candidates")
    config = tmp_path / "missing.yaml"
    config.write_text("version: 1\ninputs: {candidates: {path: /nonexistent/cands}}\noutputs: {per_request: {path: out}}\n")
    assert main(["score", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "inputs.candidates: cannot read parquet /nonexistent/cands" in err
    lines = err.strip().splitlines()
    assert lines[-2:] == ["ndcg-spark score: failed.", lines[-1]]  # the failure and its reason, nothing after
    for noise in ("Traceback", "grpc", "JVM stacktrace", "py4j"):
        assert noise.lower() not in err.lower()


def test_a_spark_error_over_connect_becomes_the_one_paragraph_input_error(connect_spark):
    from ndcg_spark.errors import InputError, describe_spark_error, spark_errors_as_input_errors

    df = connect_spark.createDataFrame([(1,)], "a int")
    with pytest.raises(InputError) as raised:
        with spark_errors_as_input_errors("stage 1"):
            df.select("no_such_column").collect()
    message = str(raised.value)
    assert message.startswith("stage 1: Spark could not process the input: [UNRESOLVED_COLUMN")
    assert "\n" not in message and "JVM stacktrace" not in message
    assert describe_spark_error(raised.value.__cause__).startswith("[UNRESOLVED_COLUMN")


def test_every_job_of_a_step_carries_the_run_and_step_tags_over_connect(connect_spark, monkeypatch):
    from ndcg_spark.publishing import steps

    seen = {}
    with steps.step(connect_spark, "c9", "score"):
        seen["inside"] = set(connect_spark.getTags())
        connect_spark.range(3).count()
    assert seen["inside"] >= {"ndcg-spark:c9", "ndcg-spark:c9:score"}
    assert not {t for t in connect_spark.getTags() if t.startswith("ndcg-spark:c9")}  # removed after the step


def test_clearing_a_run_of_a_path_table_over_connect(connect_spark, tmp_path):
    from ndcg_spark.config.job import Source
    from ndcg_spark.storage.io import clear_run, read_run, read_written, write_run_partitioned

    target = Source(path=str(tmp_path / "quarantine"))
    assert read_written(connect_spark, target) is None
    rows = connect_spark.createDataFrame([("r:1", "x"), ("r:1", "y"), ("r2", "z")], "run_id string, v string")
    write_run_partitioned(rows, target)
    assert read_written(connect_spark, target).count() == 3
    clear_run(connect_spark, target, "r:1")
    left = sorted((r["run_id"], r["v"]) for r in read_run(connect_spark, target).collect())
    assert left == [("r2", "z")]
    assert sorted(p.name for p in (tmp_path / "quarantine").glob("run_id=*")) == ["run_id=r2"]  # the folder is gone


def test_the_shell_check_is_answered_from_memory_over_connect(connect_spark, two_rankers, monkeypatch):
    # a Connect DataFrame's storage level is asked of the server: a cached input that passed is
    # not checked again under another K; once unpersisted, it is
    import ndcg_spark
    import ndcg_spark.validation.shell_check as shell_check_module

    ran = []
    real = shell_check_module.validate_inputs
    monkeypatch.setattr(shell_check_module, "_passed", [])
    monkeypatch.setattr(shell_check_module, "validate_inputs", lambda *a, **kw: ran.append(1) or real(*a, **kw))
    cands, judgments = (df.cache() for df in two_rankers)
    try:
        for k in (3, 2):
            rows = _by(ndcg_spark.score_requests(cands, judgments, ndcg_spark.Contract(k=[k])).collect(),
                       "system", "request_id")
            assert rows[("B", "q1")]["ndcg"] == pytest.approx(1.0, abs=EPS)
        assert len(ran) == 1
    finally:
        cands.unpersist()
        judgments.unpersist()
    ndcg_spark.score_requests(cands, judgments, ndcg_spark.Contract(k=[3])).collect()
    assert len(ran) == 2
