"""The job YAMLs the checkout ships (``conf/local.yaml``, ``conf/compare_pools.yaml``), loaded and run
as shipped: ``conf/compare_pools.yaml`` is copied byte for byte into a temporary checkout (relative
paths resolve against the YAML's folder's parent), the sample its header names is written there by
``ndcg-spark sample`` (fewer requests), and the commands the README gives for it run through the
console script. ``conf/local.yaml`` as shipped is what docs/operations.md's commands run (on 300
requests, in a copy of the checkout): its tables are checked there,
``tests/test_docs.py::test_local_yaml_as_shipped_writes_what_the_oracle_computes``.

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
    from tests.oracle import score_sample_folder
except ImportError:  # pragma: no cover - run from inside tests/
    from oracle import score_sample_folder  # type: ignore[no-redef]

CHECKOUT = Path(__file__).resolve().parent.parent
#: the fingerprint docs/operations.md's transcripts print for local.yaml's contract (its six metrics)
LOCAL_FINGERPRINT = "77fb21638cbb5b04"
#: compare_pools.yaml's: the same contract with NDCG and recall only (the end-to-end comparison's pair)
POOLS_FINGERPRINT = "e547899aba4377d0"
N_REQUESTS = 30
RUN_ID = "2026-11-29"
EPS = 1e-12


def test_the_shipped_yamls_load_with_the_readmes_contract_fingerprint():
    local = ndcg_spark.JobConfig.from_yaml(CHECKOUT / "conf" / "local.yaml")
    pools = ndcg_spark.JobConfig.from_yaml(CHECKOUT / "conf" / "compare_pools.yaml")
    choices = dict(k=[1, 3, 5, 10], gain="exponential", order="position", unjudged="separate",
                   empty_ideal="exclude", max_grade=3)
    expected = ndcg_spark.Contract(metrics=["ndcg", "recall", "precision", "average_precision", "reciprocal_rank",
                                            "hit_rate"], **choices)
    assert local.contract == expected and expected.fingerprint == LOCAL_FINGERPRINT
    assert LOCAL_FINGERPRINT in (CHECKOUT / "docs" / "operations.md").read_text()
    pair = ndcg_spark.Contract(metrics=["ndcg", "recall"], **choices)
    assert pools.contract == pair and pair.fingerprint == POOLS_FINGERPRINT
    # relative paths resolve against the YAML's folder: conf/'s ../ is the checkout
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


def _run(df, run_id: str = RUN_ID):
    return df.filter(F.col("run_id") == run_id)


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

    # the shared ideal: every judged document (recall's relevant ones too)
    oracle = score_sample_folder(spark, data, ideal_from="judgments", metrics=("ndcg", "recall"))
    bm25 = {rid: v for (rid, s, k), v in oracle.items() if s == "bm25|pool-2026-11-28" and k == 10}
    dense = {rid: v for (rid, s, k), v in oracle.items() if s == "dense|pool-2026-11-28-dense" and k == 10}
    judgments = spark.read.parquet(str(data / "judgments"))
    known = {r.request_id: r.n for r in judgments.filter("grade > 0").groupBy("request_id").agg(
        F.count(F.lit(1)).alias("n")).collect()}
    paired = [rid for rid in bm25 if bm25[rid]["ndcg"] is not None]
    with_positive = [rid for rid in bm25 if known.get(rid, 0) > 0]
    table = _run(spark.read.parquet(str(checkout / "warehouse" / "pools" / "comparison")))
    # end to end: each metric over the shared ideal, no what-if (each side's is over its own ideal)
    assert {r.metric for r in table.select("metric").distinct().collect()} == {"ndcg", "recall"}
    row = table.filter("slice_dimension = 'overall' AND k = 10 AND metric = 'ndcg'").first()
    assert (row.comparison_kind, row.ideal, row.ndcg_ideal, row.baseline_pool_version, row.candidate_pool_version) == (
        "end_to_end", "judgments", "judgments", "pool-2026-11-28", "pool-2026-11-28-dense")
    assert row.n_paired == len(paired) and row.n_pool_recall_requests == len(with_positive)
    assert row.baseline_macro == pytest.approx(statistics.fmean(bm25[r]["ndcg"] for r in paired), abs=EPS)
    assert row.candidate_macro == pytest.approx(statistics.fmean(dense[r]["ndcg"] for r in paired), abs=EPS)
    assert row.baseline_ndcg_macro == row.baseline_macro  # the NDCG row's column from before the metric column
    for side, scores in (("baseline", bm25), ("candidate", dense)):
        assert row[f"{side}_pool_recall_macro"] == pytest.approx(
            statistics.fmean(scores[r]["n_positive"] / known[r] for r in with_positive), abs=EPS), side
    assert row.candidate_pool_recall_macro < row.baseline_pool_recall_macro  # dense's pool misses positives
    # recall@10 end to end: the relevant documents in each side's top 10 over every relevant judged one
    recall = table.filter("slice_dimension = 'overall' AND k = 10 AND metric = 'recall'").first()
    both = [rid for rid in paired if bm25[rid]["recall"] is not None and dense[rid]["recall"] is not None]
    assert recall.n_paired == len(both) and recall.ndcg_ideal is None
    assert recall.baseline_macro == pytest.approx(statistics.fmean(bm25[r]["recall"] for r in both), abs=EPS)
    assert recall.candidate_macro == pytest.approx(statistics.fmean(dense[r]["recall"] for r in both), abs=EPS)

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
