"""The job YAMLs the checkout ships (``conf/local.yaml``, ``conf/compare_pools.yaml``), loaded and run
as shipped: each is copied byte for byte into a temporary checkout (relative paths resolve against
the YAML's folder's parent), the sample its header names is written there by ``ndcg-spark sample``
(fewer requests), and the commands the README gives for it run through the console script.

Numbers are checked against the plain-Python oracle (``tests/oracle.py``) on the sample's rows.
"""

from __future__ import annotations

import re
import shutil
import statistics
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import ndcg_spark
from ndcg_spark.cli import main

try:
    from tests.oracle import score_all
except ImportError:  # pragma: no cover - run from inside tests/
    from oracle import score_all  # type: ignore[no-redef]

CHECKOUT = Path(__file__).resolve().parent.parent
#: the fingerprint the README prints for both files' contract (its compare examples)
README_FINGERPRINT = "25423dc8469276d6"
N_REQUESTS = 30
RUN_ID = "2026-11-29"
EPS = 1e-12


def test_the_shipped_yamls_load_with_the_readmes_contract_fingerprint():
    local = ndcg_spark.JobConfig.from_yaml(CHECKOUT / "conf" / "local.yaml")
    pools = ndcg_spark.JobConfig.from_yaml(CHECKOUT / "conf" / "compare_pools.yaml")
    expected = ndcg_spark.Contract(k=[1, 3, 5, 10], gain="exponential", order="position", unjudged="separate",
                                   empty_ideal="exclude", max_grade=3)
    assert local.contract == expected and pools.contract.fingerprint == expected.fingerprint
    assert expected.fingerprint == README_FINGERPRINT
    # relative paths are relative to the checkout (the YAML's folder's parent)
    assert local.candidates.path == str(CHECKOUT / "data" / "sample" / "candidates")
    assert pools.candidates.path == str(CHECKOUT / "data" / "sample-pools" / "candidates")
    assert local.per_request.path == str(CHECKOUT / "warehouse" / "per_request")


@pytest.fixture
def checkout(spark, tmp_path):
    """A temporary checkout for a shipped YAML; the session's shuffle partitions restored after."""
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    (tmp_path / "conf").mkdir()
    yield tmp_path
    spark.conf.set("spark.sql.shuffle.partitions", partitions)


def _ship(checkout: Path, name: str) -> Path:
    shipped = CHECKOUT / "conf" / name
    copy = checkout / "conf" / name
    shutil.copyfile(shipped, copy)
    assert copy.read_bytes() == shipped.read_bytes()
    return copy


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(args))
    shown = capsys.readouterr()
    return status, shown.out, shown.err


def _oracle(spark, data: Path, **contract) -> dict:
    """The oracle's scores of the sample in ``data`` under the shipped contract."""
    cands = [r.asDict() for r in spark.read.parquet(str(data / "candidates")).collect()]
    judgments = [r.asDict() for r in spark.read.parquet(str(data / "judgments")).collect()]
    for c in cands:  # the oracle's request is (request, system): keep each system's pool apart
        c["system"] = f"{c['system']}|{c['pool_version']}"
    return score_all(cands, judgments, k=[1, 3, 5, 10], unjudged="separate", **contract)


def _slice_values(spark, data: Path, dims: tuple[str, ...]) -> int:
    attributes = spark.read.parquet(str(data / "attributes"))
    return sum(attributes.select(d).distinct().count() for d in dims)


def _run(df, run_id: str = RUN_ID):
    return df.filter(F.col("run_id") == run_id)


@pytest.mark.e2e
def test_local_yaml_as_shipped_runs_compares_and_reports(spark, checkout, capsys):
    config = str(_ship(checkout, "local.yaml"))
    data = checkout / "data" / "sample"
    status, _, err = _cli(capsys, "sample", "--out", str(data), "--requests", str(N_REQUESTS))
    assert status == 0, err
    status, out, err = _cli(capsys, "run", "--config", config, "--run-id", RUN_ID)
    assert status == 0, err
    assert re.search(r"rows read = rows scored \+ rows quarantined: candidates ([0-9,]+) = \1 \+ 0", out)
    report = checkout / "reports" / RUN_ID / "report.html"
    assert report.is_file() and f"report -> {report}" in out
    status, out, err = _cli(capsys, "compare", "--config", config, "--run-id", RUN_ID)
    assert status == 0, err
    assert "hybrid (candidate) vs bm25 (baseline): reranker comparison" in out
    assert f"contract {README_FINGERPRINT}; NDCG ideal: contract; 1000 bootstrap replicates (95% intervals), " \
           "1000 sign flips over random groups (1024 per slice cell), seed 0" in out
    assert "Comparison: hybrid (candidate) vs bm25 (baseline)" in report.read_text(encoding="utf-8")

    warehouse = checkout / "warehouse"
    oracle = _oracle(spark, data)
    per_request = _run(spark.read.parquet(str(warehouse / "per_request"))).collect()
    assert len(per_request) == len(oracle) == N_REQUESTS * 2 * 4
    for r in per_request:
        want = oracle[(r.request_id, f"{r.system}|{r.pool_version}", r.k)]
        assert r.ndcg == pytest.approx(want["ndcg"], abs=EPS) and r.empty_ideal == want["empty_ideal"]
        assert r.n_unjudged_in_top_k == want["n_unjudged_in_top_k"] and r.contract_fingerprint == README_FINGERPRINT

    dims = ("equipment_rarity", "doc_age_bucket", "permission_group")  # aggregate.slices of the YAML
    cells = 1 + _slice_values(spark, data, dims)
    aggregates = _run(spark.read.parquet(str(warehouse / "aggregate")))
    assert aggregates.count() == 2 * 4 * cells
    for r in aggregates.filter("slice_dimension = 'overall'").collect():
        values = [v["ndcg"] for (_, s, k), v in oracle.items() if s == f"{r.system}|{r.pool_version}" and k == r.k]
        eligible = [v for v in values if v is not None]
        assert r.macro_ndcg == pytest.approx(statistics.fmean(eligible), abs=EPS)
        assert (r.n_eligible, r.n_requests, r.min_eligible, r.ci_level) == (len(eligible), N_REQUESTS, 30, 0.95)
    assert _run(spark.read.parquet(str(warehouse / "audit"))).count() == 2 * 4 * len(dims)
    assert _run(spark.read.parquet(str(warehouse / "run_metadata"))).first().contract_fingerprint == README_FINGERPRINT
    comparison = _run(spark.read.parquet(str(warehouse / "comparison")))
    assert comparison.count() == 4 * cells  # README: 44 rows on the full sample (every slice value present)
    row = comparison.filter("slice_dimension = 'overall' AND k = 10").first()
    b = {rid: v for (rid, s, k), v in oracle.items() if s.startswith("bm25|") and k == 10}
    h = {rid: v for (rid, s, k), v in oracle.items() if s.startswith("hybrid|") and k == 10}
    paired = [rid for rid in b if b[rid]["ndcg"] is not None and h[rid]["ndcg"] is not None]
    assert (row.n_paired, row.bootstrap_replicates, row.permutations) == (len(paired), 1000, 1000)
    assert row.delta_macro == pytest.approx(statistics.fmean(h[r]["ndcg"] - b[r]["ndcg"] for r in paired), abs=EPS)


@pytest.mark.e2e
def test_compare_pools_yaml_as_shipped_compares_end_to_end_and_refuses_a_reranker_comparison(
    spark, checkout, capsys
):
    config = _ship(checkout, "compare_pools.yaml")
    data = checkout / "data" / "sample-pools"
    # the command in the YAML's header, with fewer requests
    status, _, err = _cli(capsys, "sample", "--out", str(data), "--dense-pool", "--requests", str(N_REQUESTS))
    assert status == 0, err
    assert _cli(capsys, "score", "--config", str(config), "--run-id", RUN_ID)[0] == 0
    status, out, err = _cli(capsys, "compare", "--config", str(config), "--run-id", RUN_ID)
    assert status == 0, err
    assert "dense (candidate) vs bm25 (baseline): end_to_end comparison" in out and "NOTICE: END-TO-END" in out
    assert not [line for line in out.splitlines() if line.startswith("report")]  # no aggregate table: no report
    assert not (checkout / "reports").exists()

    oracle = _oracle(spark, data, ideal_from="judgments")  # the shared ideal: every judged document
    bm25 = {rid: v for (rid, s, k), v in oracle.items() if s == "bm25|pool-2026-11-28" and k == 10}
    dense = {rid: v for (rid, s, k), v in oracle.items() if s == "dense|pool-2026-11-28-dense" and k == 10}
    judgments = spark.read.parquet(str(data / "judgments"))
    known = {r.request_id: r.n for r in judgments.filter("grade > 0").groupBy("request_id").agg(
        F.count(F.lit(1)).alias("n")).collect()}
    paired = [rid for rid in bm25 if bm25[rid]["ndcg"] is not None]
    recall = [rid for rid in bm25 if known.get(rid, 0) > 0]
    table = _run(spark.read.parquet(str(checkout / "warehouse" / "pools" / "comparison")))
    row = table.filter("slice_dimension = 'overall' AND k = 10").first()
    assert (row.comparison_kind, row.ndcg_ideal, row.baseline_pool_version, row.candidate_pool_version) == (
        "end_to_end", "judgments", "pool-2026-11-28", "pool-2026-11-28-dense")
    assert row.n_paired == len(paired) and row.n_recall_requests == len(recall)
    assert row.baseline_ndcg_macro == pytest.approx(statistics.fmean(bm25[r]["ndcg"] for r in paired), abs=EPS)
    assert row.candidate_ndcg_macro == pytest.approx(statistics.fmean(dense[r]["ndcg"] for r in paired), abs=EPS)
    for side, scores in (("baseline", bm25), ("candidate", dense)):
        assert row[f"{side}_recall_macro"] == pytest.approx(
            statistics.fmean(scores[r]["n_positive"] / known[r] for r in recall), abs=EPS), side
    assert row.candidate_recall_macro < row.baseline_recall_macro  # dense's pool misses positives

    # README: asked as a reranker comparison (kind: reranker) it is refused, exit status 2
    reranker, n = re.subn(r"^(\s+kind:\s*)end_to_end\b", r"\1reranker", config.read_text(encoding="utf-8"), flags=re.M)
    assert n == 1
    config.write_text(reranker, encoding="utf-8")
    status, _, err = _cli(capsys, "compare", "--config", str(config), "--run-id", RUN_ID)
    assert status == 2
    assert re.search(r"compare: refusing a reranker comparison of dense against bm25: their pool versions differ "
                     rf"\(pool-2026-11-28 vs pool-2026-11-28-dense\) and [0-9,]+ of the {N_REQUESTS} requests they "
                     r"share have different candidate sets \(e\.g\. request 'req-\d+'\)", err), err
    assert "Set compare.kind: end_to_end to compare them end to end" in err and "Traceback" not in err
