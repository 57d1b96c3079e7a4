"""Comparing two rankers: paired deltas and recall worked out by hand, the pool guard, and the
statistics checked by seeded simulation (null: p-values roughly uniform; real improvement: small).

Float tolerances: hand-computed values to 1e-12 (they are a handful of float operations);
repeated runs on another layout bit for bit (every sum of the comparison is exact).
"""

from __future__ import annotations

import datetime as dt
import math
import textwrap
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark import Attributes, Contract, score_requests
from ndcg_spark.comparison.columns import COMPARISON_COLUMNS
from ndcg_spark.comparison.guard import PoolMismatchError
from ndcg_spark.comparison.paired import compare
from ndcg_spark.comparison.pools import pool_summary
from ndcg_spark.config.compare_spec import CompareSpec, Side
from ndcg_spark.errors import ContractError, InputError
from ndcg_spark.frames import ADVISORY_PARTITION_SIZE, SHUFFLE_PARTITIONS, session_setting
from ndcg_spark.report.text import format_comparison

try:  # tests/ may or may not be a package
    from tests.small_data import nightly_execution
except ImportError:  # pragma: no cover - run from inside tests/
    from small_data import nightly_execution  # type: ignore[no-redef]

EPS = 1e-12
LOG2_3 = math.log2(3)
CREATED = dt.datetime(2026, 11, 29, 6, 0, 0)


def _rows(df: DataFrame) -> dict[tuple[str, str, int], dict]:
    return {(r.slice_dimension, r.slice_value, r.k): r.asDict() for r in df.collect()}


# --- a reranker comparison worked out by hand -----------------------------------------------
#
# Two systems rank the same pool (K = 3, exponential gain, ideal from the candidates):
#   q1  A shows grades [1, 3, 0, 2] -> 0.5766666455 (SPEC §2); B shows [3, 2, 1, 0] -> 1.0
#   q2  A shows [2, 0, 1] -> 0.9639404333 (SPEC §2);        B shows [1, 0, 2] -> 2.5 / (3 + 1/log2 3)
#   q3  grades [0, 0] on both sides: empty ideal -> scored by neither
#   q4  only A has a row for it -> eligible for the baseline only (candidate missing)
#   q5  both show [1, 0] -> 1.0 and 1.0: a tie
# q1 has traffic weight 3, every other request 1; q1, q2 are in group x, q3, q4, q5 in group y.
# q2 has a judged positive `z` that neither retrieved: its pool recall is 2/3.

Q1_A = (1 + 7 / LOG2_3 + 0) / (7 + 3 / LOG2_3 + 1 / 2)  # gains 1, 7, 0 over ideal 7, 3, 1
Q2_A = (3 + 0 + 1 / 2) / (3 + 1 / LOG2_3)  # gains 3, 0, 1 over ideal 3, 1, 0
Q1_B, Q2_B = 1.0, (1 + 0 + 3 / 2) / (3 + 1 / LOG2_3)  # gains 1, 0, 3 over ideal 3, 1, 0


def test_the_hand_values_are_the_spec_worked_example() -> None:
    assert (Q1_A, Q2_A) == (pytest.approx(0.5766666455, abs=1e-10), pytest.approx(0.9639404333, abs=1e-10))


@pytest.fixture(scope="module")
def hand(spark: SparkSession):
    orders = {
        "q1": {"A": "abcd", "B": "bdac"},
        "q2": {"A": "efg", "B": "gfe"},
        "q3": {"A": "hi", "B": "hi"},
        "q4": {"A": "j"},
        "q5": {"A": "kl", "B": "kl"},
    }
    cands = spark.createDataFrame(
        [(q, d, s, p + 1, "pool-1") for q, by in orders.items() for s, docs in by.items() for p, d in enumerate(docs)],
        "request_id string, doc_id string, system string, position int, pool_version string",
    )
    grades = {"q1": "a1 b3 c0 d2", "q2": "e2 f0 g1 z3", "q3": "h0 i0", "q4": "j1", "q5": "k1 l0"}
    judgments = spark.createDataFrame(
        [(q, g[0], float(g[1:])) for q, gs in grades.items() for g in gs.split()],
        "request_id string, doc_id string, grade double",
    )
    attributes = spark.createDataFrame(
        [("q1", 3.0, "x"), ("q2", 1.0, "x"), ("q3", 1.0, "y"), ("q4", 1.0, "y"), ("q5", 1.0, "y")],
        "request_id string, weight double, grp string",
    )
    contract = Contract(k=[3])
    per_request = score_requests(
        cands, judgments, contract, run_id="night-1",
        attributes=Attributes(table=attributes, weight="weight", slices=("grp",)),
    ).cache()
    pools = pool_summary(cands, judgments, contract).cache()
    yield per_request, pools
    per_request.unpersist()
    pools.unpersist()


def _spec(**kw) -> CompareSpec:
    defaults = dict(baseline="A", candidate="B", replicates=200, permutations=199, seed=3, min_paired=2)
    return CompareSpec(**{**defaults, **kw})


@pytest.fixture(scope="module")
def hand_out(hand) -> DataFrame:
    per_request, pools = hand
    return compare(per_request, pools, _spec(), created_at=CREATED)


def test_paired_deltas_wins_and_denominators_by_hand(hand_out) -> None:
    out = hand_out
    assert tuple(out.columns) == COMPARISON_COLUMNS
    rows = _rows(out)
    assert set(rows) == {("overall", "all", 3), ("grp", "x", 3), ("grp", "y", 3)}
    o = rows[("overall", "all", 3)]
    d1, d2 = Q1_B - Q1_A, Q2_B - Q2_A  # +0.4233, -0.2754; q5 adds 0
    assert (o["comparison_kind"], o["pools_differ"], o["ndcg_ideal"]) == ("reranker", False, "contract")
    assert (o["baseline_pool_version"], o["candidate_pool_version"], o["run_id"]) == ("pool-1", "pool-1", "night-1")
    assert o["n_requests"] == 5 and o["n_paired"] == 3 and o["n_neither"] == 1  # q3
    assert o["n_only_baseline_missing"] == 1  # q4
    assert o["n_only_baseline_empty"] == o["n_only_candidate_missing"] == o["n_only_candidate_empty"] == 0
    assert (o["wins"], o["ties"], o["losses"]) == (1, 1, 1)
    assert o["delta_macro"] == pytest.approx((d1 + d2 + 0.0) / 3, abs=EPS)
    assert o["delta_weighted"] == pytest.approx((3 * d1 + d2 + 0.0) / 5, abs=EPS)
    assert o["baseline_ndcg_macro"] == pytest.approx((Q1_A + Q2_A + 1.0) / 3, abs=EPS)
    assert o["candidate_ndcg_macro"] == pytest.approx((Q1_B + Q2_B + 1.0) / 3, abs=EPS)
    assert o["paired_weight"] == 5.0
    # Every sign vector gives |±d1 ± d2 ± 0| >= |d1 + d2|, and |±3 d1 ± d2| >= |3 d1 + d2|:
    # no flip is less extreme than what was observed, so both p-values are exactly 1.
    assert o["p_value_macro"] == 1.0 and o["p_value_weighted"] == 1.0
    # a bootstrap mean of d1, d2, 0 lies between the smallest and the largest delta
    assert d2 - EPS <= o["delta_macro_ci_low"] <= o["delta_macro"] <= o["delta_macro_ci_high"] <= d1 + EPS
    # recall: q1 3/3, q2 2/3 (z never retrieved), q5 1/1; q3 has no positive, q4 is not shared
    assert o["n_pool_recall_requests"] == 3
    assert o["baseline_pool_recall_macro"] == pytest.approx((1 + 2 / 3 + 1) / 3, abs=EPS)
    assert o["baseline_pool_recall_weighted"] == pytest.approx((3 * 1 + 2 / 3 + 1) / 5, abs=EPS)
    assert o["candidate_pool_recall_macro"] == o["baseline_pool_recall_macro"]  # same pool, same recall
    assert o["created_at"] == CREATED and o["contract_fingerprint"] == Contract(k=[3]).resolve(["position"]).fingerprint

    x, y = rows[("grp", "x", 3)], rows[("grp", "y", 3)]
    assert x["n_paired"] == 2 and x["delta_macro"] == pytest.approx((d1 + d2) / 2, abs=EPS)
    assert (x["below_min_paired"], y["below_min_paired"]) == (False, True)  # min_paired = 2
    assert (y["n_requests"], y["n_paired"], y["n_neither"], y["n_only_baseline_missing"]) == (3, 1, 1, 1)
    # one paired request with delta 0: every replicate mean is 0, every flip gives 0
    assert (y["delta_macro"], y["delta_macro_ci_low"], y["delta_macro_ci_high"], y["p_value_macro"]) == (0.0, 0.0, 0.0, 1.0)


def test_swapping_the_sides_negates_the_deltas(hand, hand_out) -> None:
    per_request, pools = hand
    ab = _rows(hand_out)[("overall", "all", 3)]
    ba = _rows(compare(per_request, pools, _spec(baseline="B", candidate="A")))[("overall", "all", 3)]
    assert ba["delta_macro"] == pytest.approx(-ab["delta_macro"], abs=EPS)
    assert ba["delta_macro_ci_low"] == pytest.approx(-ab["delta_macro_ci_high"], abs=EPS)  # same draws
    assert (ba["wins"], ba["losses"]) == (ab["losses"], ab["wins"])
    assert ba["n_only_candidate_missing"] == ab["n_only_baseline_missing"] == 1


def test_tie_tolerance_is_declared_and_replicates_can_be_turned_off(hand) -> None:
    per_request, pools = hand
    o = _rows(compare(per_request, pools, _spec(tie_tolerance=0.3, replicates=0, permutations=0)))[("overall", "all", 3)]
    assert (o["wins"], o["ties"], o["losses"]) == (1, 2, 0)  # |d2| = 0.275 is now a tie
    assert o["tie_tolerance"] == 0.3
    assert o["delta_macro_ci_low"] is None and o["p_value_macro"] is None and o["ci_level"] is None
    assert o["n_paired"] == 3


# --- an end-to-end comparison worked out by hand ----------------------------------------------
#
# `lexical` (pool p-old) and `dense` (pool p-new) retrieved different documents (K = 3):
#   r1  judgments a2 b0 c1 d3 e1 f0; lexical shows a, b, c; dense shows d, a, e
#       shared ideal (every judged document): gains 7, 3, 1 -> I1 = 7 + 3/log2 3 + 1/2
#       lexical DCG 3 + 0 + 1/2 = 3.5; dense DCG = I1 -> 1.0
#       known positives a, c, d, e: recall lexical 2/4, dense 3/4
#   r2  judgments g1 h0 i2; lexical shows g, h; dense shows h, g (the same set: no pool difference)
#       shared ideal: gains 3, 1 -> I2 = 3 + 1/log2 3; lexical DCG 1; dense DCG 1/log2 3
#       known positives g, i: recall 1/2 on both sides
# Scored with ideal from the candidates, lexical's r1 would be 3.5 / (3 + 1/log2 3) = 0.96: the
# end-to-end comparison must not use that denominator.

I1 = 7 + 3 / LOG2_3 + 0.5
I2 = 3 + 1 / LOG2_3


@pytest.fixture(scope="module")
def two_pools(spark: SparkSession):
    cands = spark.createDataFrame(
        [("r1", d, "lexical", p + 1, "p-old") for p, d in enumerate("abc")]
        + [("r1", d, "dense", p + 1, "p-new") for p, d in enumerate("dae")]
        + [("r2", d, "lexical", p + 1, "p-old") for p, d in enumerate("gh")]
        + [("r2", d, "dense", p + 1, "p-new") for p, d in enumerate("hg")],
        "request_id string, doc_id string, system string, position int, pool_version string",
    )
    judgments = spark.createDataFrame(
        [("r1", d, float(g)) for d, g in zip("abcdef", (2, 0, 1, 3, 1, 0))]
        + [("r2", d, float(g)) for d, g in zip("ghi", (1, 0, 2))],
        "request_id string, doc_id string, grade double",
    )
    contract = Contract(k=[3])
    per_request = score_requests(cands, judgments, contract, run_id="night-1").cache()
    pools = pool_summary(cands, judgments, contract).cache()
    yield cands, judgments, per_request, pools
    per_request.unpersist()
    pools.unpersist()


def _e2e_spec(**kw) -> CompareSpec:
    return CompareSpec(**{**dict(baseline="lexical", candidate="dense", replicates=50, permutations=49), **kw})


def test_end_to_end_shares_one_ideal_and_reports_recall_by_hand(two_pools) -> None:
    _, _, per_request, pools = two_pools
    o = _rows(compare(per_request, pools, _e2e_spec(kind="end_to_end")))[("overall", "all", 3)]
    assert (o["comparison_kind"], o["pools_differ"], o["ndcg_ideal"]) == ("end_to_end", True, "judgments")
    assert (o["baseline_pool_version"], o["candidate_pool_version"]) == ("p-old", "p-new")
    assert o["n_pool_differs"] == 1  # r1; r2 ranks the same set in another order
    lexical = (3.5 / I1 + 1 / I2) / 2
    dense = (1.0 + (1 / LOG2_3) / I2) / 2
    assert o["baseline_ndcg_macro"] == pytest.approx(lexical, abs=EPS)
    assert o["candidate_ndcg_macro"] == pytest.approx(dense, abs=EPS)
    assert o["delta_macro"] == pytest.approx(dense - lexical, abs=EPS)
    assert o["n_pool_recall_requests"] == 2
    assert o["baseline_pool_recall_macro"] == pytest.approx((2 / 4 + 1 / 2) / 2, abs=EPS)
    assert o["candidate_pool_recall_macro"] == pytest.approx((3 / 4 + 1 / 2) / 2, abs=EPS)
    assert o["candidate_pool_recall_weighted"] == pytest.approx(0.625, abs=EPS)  # weights are all 1
    text = format_comparison([o])
    assert "END-TO-END" in text and "Pool recall" in text


def test_a_reranker_comparison_across_pools_is_refused_with_the_reason(two_pools) -> None:
    _, _, per_request, pools = two_pools
    with pytest.raises(PoolMismatchError) as refused:
        compare(per_request, pools, _e2e_spec())  # kind defaults to reranker
    message = str(refused.value)
    assert "pool versions differ (p-old vs p-new)" in message
    assert "1 of the 2 requests they share have different candidate sets (e.g. request 'r1')" in message
    assert "compare.kind: end_to_end" in message


def test_same_pool_version_but_other_documents_is_still_refused(spark, two_pools) -> None:
    cands, judgments, _, _ = two_pools
    one_version = cands.withColumn("pool_version", F.lit("p-same"))
    contract = Contract(k=[3])
    per_request = score_requests(one_version, judgments, contract)
    pools = pool_summary(one_version, judgments, contract)
    with pytest.raises(PoolMismatchError, match="different candidate sets") as refused:
        compare(per_request, pools, _e2e_spec())
    assert "pool versions differ" not in str(refused.value)
    auto = _rows(compare(per_request, pools, _e2e_spec(kind="auto")))[("overall", "all", 3)]
    assert (auto["comparison_kind"], auto["pools_differ"]) == ("end_to_end", True)


def test_auto_labels_a_same_pool_comparison_reranker_and_end_to_end_can_be_asked_for(hand, hand_out) -> None:
    per_request, pools = hand
    assert _rows(compare(per_request, pools, _spec(kind="auto")))[("overall", "all", 3)]["comparison_kind"] == "reranker"
    asked = _rows(compare(per_request, pools, _spec(kind="end_to_end")))[("overall", "all", 3)]
    assert (asked["comparison_kind"], asked["pools_differ"], asked["ndcg_ideal"]) == ("end_to_end", False, "judgments")
    # q2's shared ideal includes z (grade 3, never retrieved): A's q2 becomes 3.5 / (7 + 3/log2 3 + 1/2)
    q2_a = 3.5 / (7 + 3 / LOG2_3 + 1 / 2)
    assert asked["baseline_ndcg_macro"] == pytest.approx((Q1_A + q2_a + 1.0) / 3, abs=EPS)
    assert asked["baseline_ndcg_macro"] < _rows(hand_out)[("overall", "all", 3)]["baseline_ndcg_macro"]


# --- refusing what cannot be compared -------------------------------------------------------


def test_inputs_that_do_not_belong_together_are_refused(spark, hand, two_pools) -> None:
    per_request, pools = hand
    with pytest.raises(InputError, match=r"compare.candidate: no per-request rows for C; present: A \(pool pool-1\)"):
        compare(per_request, pools, _spec(candidate="C"))
    other_contract = per_request.withColumn(
        "contract_fingerprint", F.when(F.col("system") == "B", F.lit("0000")).otherwise(F.col("contract_fingerprint"))
    )
    with pytest.raises(InputError, match="scored under different contracts"):
        compare(other_contract, pools, _spec())
    with pytest.raises(InputError, match="pool summary was built under"):
        compare(per_request, pools.withColumn("contract_fingerprint", F.lit("0000")), _spec())
    with pytest.raises(InputError, match="does not match the per-request table"):
        compare(per_request, pools.filter(F.col("request_id") != "q2"), _spec())
    with pytest.raises(InputError, match="several pool versions"):
        compare(per_request.unionByName(per_request.withColumn("pool_version", F.lit("pool-2"))), pools, _spec())


@pytest.mark.parametrize(
    ("section", "path"),
    [
        (None, "compare"),
        ({"candidate": "B"}, "compare.baseline"),
        ({"baseline": "A", "candidate": "A"}, "compare.candidate"),
        ({"baseline": "A", "candidate": "B", "kind": "rerank"}, "compare.kind"),
        ({"baseline": "A", "candidate": "B", "bootstrap": {"level": 1.5}}, "compare.bootstrap.level"),
        ({"baseline": "A", "candidate": "B", "bootstrap": {"replicates": 5}}, "compare.bootstrap.replicates"),
        ({"baseline": "A", "candidate": "B", "bootstrap": {"sed": 1}}, "compare.bootstrap.sed"),
        ({"baseline": "A", "candidate": "B", "bootstrap": {"buckets": 8}}, "compare.bootstrap.buckets"),
        ({"baseline": "A", "candidate": "B", "permutations": -1}, "compare.permutations"),
        ({"baseline": "A", "candidate": "B", "tie_tolerance": -0.1}, "compare.tie_tolerance"),
        ({"baseline": "A", "candidate": "B", "slices": ["9x"]}, "compare.slices[0]"),
        ({"baseline": {"system": "A", "pool": "p"}, "candidate": "B"}, "compare.baseline.pool"),
        ({"baseline": "A", "candidate": "B", "confidence": 0.9}, "compare.confidence"),
    ],
)
def test_spec_errors_name_the_dotted_path(section, path) -> None:
    with pytest.raises(ContractError) as bad:
        CompareSpec.from_dict(section)
    assert bad.value.path == path


def test_spec_reads_the_yaml_shape() -> None:
    spec = CompareSpec.from_dict(
        {"baseline": {"system": "bm25", "pool_version": "p1"}, "candidate": "hybrid", "kind": "end_to_end",
         "bootstrap": {"level": 0.9, "replicates": 500, "seed": 11, "buckets": 0}, "permutations": 999,
         "slices": ["rarity"]}
    )
    assert spec.baseline == Side("bm25", "p1") and spec.candidate == Side("hybrid")
    assert (spec.ci_level, spec.replicates, spec.seed, spec.permutations, spec.buckets) == (0.9, 500, 11, 999, 0)
    assert CompareSpec("A", "B").buckets == 1024  # the aggregates' default
    assert CompareSpec.from_dict(spec.to_dict()) == spec


# --- the statistics, by seeded simulation ----------------------------------------------------
#
# Datasets are encoded in a slice column so that one compare() runs them all in one Spark job:
# per dataset 40 requests, each with a baseline NDCG x and a candidate NDCG y.
#   null-*    200 datasets, x and y independent uniform: the sides are exchangeable
#   effect-*  20 datasets, x' = 0.75 x and y' = 0.75 y + 0.25: a real improvement of 0.25

N_NULL, N_EFFECT, PER_DATASET, R = 200, 20, 40, 199


def _unit(seed: int, salt: str, col: Column) -> Column:
    h = F.xxhash64(F.lit(seed), F.lit(salt), col)
    return h.bitwiseAND(F.lit((1 << 53) - 1)).cast("double") / F.lit(float(1 << 53))


def _simulated(spark: SparkSession, seed: int, n_null: int = N_NULL, n_effect: int = N_EFFECT,
               per_dataset: int = PER_DATASET) -> tuple[DataFrame, DataFrame]:
    n = (n_null + n_effect) * per_dataset
    i = F.col("id")
    dataset_no = (i / per_dataset).cast("int")
    is_null = dataset_no < n_null
    base = spark.range(n).select(
        F.format_string("req-%06d", i).alias("request_id"),
        F.when(is_null, F.format_string("null-%03d", dataset_no))
        .otherwise(F.format_string("effect-%02d", dataset_no - n_null))
        .alias("dataset"),
        (F.lit(0.5) + F.lit(4.0) * _unit(seed, "w", i)).alias("weight"),
        F.when(is_null, _unit(seed, "x", i)).otherwise(F.lit(0.75) * _unit(seed, "x", i)).alias("A"),
        F.when(is_null, _unit(seed, "y", i)).otherwise(F.lit(0.75) * _unit(seed, "y", i) + F.lit(0.25)).alias("B"),
    )
    per_request = base.select(
        F.lit("sim").alias("run_id"),
        F.explode(F.array(*[F.struct(F.lit(s).alias("system"), F.col(s).alias("ndcg")) for s in "AB"])).alias("s"),
        F.lit("pool-1").alias("pool_version"),
        "request_id",
        F.lit(10).alias("k"),
        "dataset",
        "weight",
    ).select(
        "run_id", "s.system", "pool_version", "request_id", "k",
        F.col("s.ndcg").alias("dcg"), F.col("s.ndcg").alias("ndcg"), F.lit(False).alias("empty_ideal"),
        F.lit(10).cast("long").alias("n_candidates"), F.lit(1).cast("long").alias("n_positive"), "weight", "dataset",
        F.lit("fp").alias("contract_fingerprint"),
    )
    pools = per_request.select(
        "system", "pool_version", "request_id", "k", F.lit(1).cast("long").alias("pool_hash"),
        F.col("n_candidates").alias("n_pool"), F.lit(1).cast("long").alias("n_known_positive"),
        F.lit(1.0).alias("idcg_known"), "contract_fingerprint",
    )
    return per_request, pools


@pytest.fixture(scope="module")
def simulation(spark: SparkSession):
    """The simulated comparison, computed as a nightly run computes it (its cost is its rows)."""
    with nightly_execution(spark):
        per_request, pools = _simulated(spark, seed=2026)
        spec = CompareSpec("A", "B", replicates=R + 1, permutations=R, seed=5, slices=("dataset",))
        return {(r.slice_value): r.asDict() for r in compare(per_request, pools, spec).collect()}


def _ks_uniform(ps: list[float]) -> float:
    ps = sorted(ps)
    n = len(ps)
    return max(max((i + 1) / n - p, p - i / n) for i, p in enumerate(ps))


@pytest.mark.slow
@pytest.mark.parametrize("which", ["macro", "weighted"])
def test_under_the_null_the_p_values_are_roughly_uniform(simulation, which) -> None:
    ps = [r[f"p_value_{which}"] for v, r in simulation.items() if v.startswith("null-")]
    assert len(ps) == N_NULL
    # A valid test rejects at 5% in 5% of null datasets: Binomial(200, 0.05) has mean 10 and
    # standard deviation 3.1; [2, 20] is about +-3 standard deviations.
    assert 2 <= sum(p <= 0.05 for p in ps) <= 20
    assert 0.39 <= sum(p <= 0.5 for p in ps) / N_NULL <= 0.61  # 0.5 +- 3 sd (0.035)
    # Kolmogorov-Smirnov distance to Uniform(0, 1) below its 1% critical value 1.63 / sqrt(200)
    assert _ks_uniform(ps) < 1.63 / math.sqrt(N_NULL)


@pytest.mark.slow
def test_under_the_null_the_interval_covers_zero_at_about_its_level(simulation) -> None:
    null = [r for v, r in simulation.items() if v.startswith("null-")]
    covered = sum(r["delta_macro_ci_low"] <= 0.0 <= r["delta_macro_ci_high"] for r in null) / len(null)
    # 95% percentile-bootstrap interval on 40 requests: a little under 95% (n is small);
    # binomial sd at 0.93 over 200 datasets is 0.018
    assert 0.87 <= covered <= 0.99


@pytest.mark.slow
def test_a_real_improvement_gives_small_p_values(simulation) -> None:
    effect = [r for v, r in simulation.items() if v.startswith("effect-")]
    assert len(effect) == N_EFFECT
    # delta 0.25 with sd 0.31 over 40 requests: z ~ 5, so essentially every dataset rejects
    assert sum(r["p_value_macro"] <= 0.05 for r in effect) >= N_EFFECT - 1
    assert sum(r["delta_macro_ci_low"] > 0 for r in effect) >= N_EFFECT - 1
    # each dataset's mean delta has sd 0.75 * sqrt(1/6) / sqrt(40) = 0.048; their mean over 20, 0.011
    deltas = [r["delta_macro"] for r in effect]
    assert sum(deltas) / len(deltas) == pytest.approx(0.25, abs=0.035), deltas
    # all 8,800 requests together: no sign flip comes near, p is the smallest reportable
    assert simulation["all"]["p_value_macro"] == pytest.approx(1 / (R + 1), abs=EPS)


@pytest.mark.slow
@pytest.mark.usefixtures("nightly_spark")  # its cost is its rows: computed as a nightly run computes
def test_random_groups_keep_the_interval_and_the_test_at_their_levels(spark) -> None:
    """The random-group resampling where it differs from resampling single requests: 150 null
    datasets of 600 requests (and 10 with a real improvement), each slice cell resampled as 32
    groups of ~19 requests (``buckets=32``), 200 bootstrap replicates and 199 sign flips. Group
    sums are i.i.d. across groups, so the percentile interval still covers zero at about its
    level, and flipping a group's sign is one of the request-level flips, so the test stays valid.
    Binomial standard errors at 150 datasets: coverage 0.018 (band [0.88, 0.995]); rejections at
    5 %: mean 7.5, sd 2.7 (band [1, 16]). Measured with these seeds: coverage 0.947, 6 rejections,
    Kolmogorov-Smirnov distance 0.077 (1 % critical value 0.133)."""
    per_request, pools = _simulated(spark, seed=77, n_null=150, n_effect=10, per_dataset=600)
    spec = CompareSpec("A", "B", replicates=200, permutations=199, seed=3, slices=("dataset",), buckets=32)
    rows = {r.slice_value: r.asDict() for r in compare(per_request, pools, spec).collect()}
    null = [r for v, r in rows.items() if v.startswith("null-")]
    effect = [r for v, r in rows.items() if v.startswith("effect-")]
    assert (len(null), len(effect)) == (150, 10)
    assert all(r["bootstrap_buckets"] == 32 for r in rows.values())
    covered = sum(r["delta_macro_ci_low"] <= 0.0 <= r["delta_macro_ci_high"] for r in null) / len(null)
    ps = [r["p_value_macro"] for r in null]
    message = f"coverage {covered:.3f}, rejections {sum(p <= 0.05 for p in ps)}, KS {_ks_uniform(ps):.3f}"
    print(message)
    assert 0.88 <= covered <= 0.995, message
    assert 1 <= sum(p <= 0.05 for p in ps) <= 16, message
    assert _ks_uniform(ps) < 1.63 / math.sqrt(len(ps)), message
    # the width of 32 groups' worth: the delta of two independent uniforms has sd sqrt(1/6); normal
    # theory 2 * 1.96 * sd / sqrt(600); 32 units make it noisy: within 25 %
    width = sum(r["delta_macro_ci_high"] - r["delta_macro_ci_low"] for r in null) / len(null)
    assert width == pytest.approx(2 * 1.96 * math.sqrt(1 / 6) / math.sqrt(600), rel=0.25), message
    # an improvement of 0.25 over 600 requests: every dataset rejects at the smallest reportable p
    assert all(r["p_value_macro"] == pytest.approx(1 / 200, abs=EPS) and r["delta_macro_ci_low"] > 0
               for r in effect)


@pytest.mark.slow
@pytest.mark.parametrize("buckets", [0, 16], ids=["single-requests", "random-groups"])
def test_same_seed_same_bits_whatever_the_partitioning_other_seed_other_draws(spark, buckets) -> None:
    """Every sum of the comparison (means, observed and permuted statistics, replicate sums) is an
    exact fixed-point sum, so the table is the same bits however its inputs are partitioned and
    shuffled, like the aggregates; another seed draws other replicates, not other means."""
    per_request, pools = _simulated(spark, seed=1)
    per_request = per_request.filter(F.col("dataset") < "null-010")
    spec = CompareSpec("A", "B", replicates=100, permutations=99, seed=9, slices=("dataset",), buckets=buckets)
    one = compare(per_request.coalesce(1), pools.coalesce(1), spec, created_at=CREATED)
    # 5 shuffle partitions, kept at 5 (every input larger than a 1-byte advisory partition: not sized to the cores)
    with session_setting(spark, SHUFFLE_PARTITIONS, "5"), session_setting(spark, ADVISORY_PARTITION_SIZE, "1b"):
        many = compare(per_request.repartition(7, "request_id"), pools.repartition(3), spec, created_at=CREATED)
    assert_df_equality(one, many)  # exact: bit for bit, not approximately
    other = _rows(compare(per_request, pools, CompareSpec("A", "B", replicates=100, permutations=99, seed=10,
                                                              slices=("dataset",), buckets=buckets)))
    same = _rows(one)
    assert any(other[key]["delta_macro_ci_low"] != same[key]["delta_macro_ci_low"] for key in same)
    assert all(other[key]["delta_macro"] == same[key]["delta_macro"] for key in same)


# --- the console script ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def job(spark: SparkSession, sample_dir, tmp_path_factory):
    """The sample (200 requests) plus a third system, `dense`, on its own pool: hybrid's ranking
    cut to its top 8 under pool version pool-dense."""
    root = tmp_path_factory.mktemp("compare_job")
    paths = sample_dir  # the shared sample (tests/conftest.py): 200 requests, seed 11
    assert (sample_dir.n_requests, sample_dir.seed) == (200, 11)
    cands = spark.read.parquet(paths["candidates"])
    dense = cands.filter((F.col("system") == "hybrid") & (F.col("position") <= 8)).select(
        "request_id", "doc_id", F.lit("dense").alias("system"), "position", "score", F.lit("pool-dense").alias("pool_version")
    )
    cands.unionByName(dense).write.parquet(str(root / "data" / "candidates3"))

    def config(name: str, compare_section: str, candidates: str = "candidates3", validation: str = "") -> Path:
        path = root / "conf" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(textwrap.dedent(f"""
            version: 1
            contract: {{k: [3, 10]}}
            inputs:
              candidates: {{path: {root / 'data' / candidates}}}
              judgments: {{path: {paths['judgments']}}}
            attributes: {{path: {paths['attributes']}, weight: weight, slices: [equipment_rarity]}}
            outputs:
              per_request: {{path: out/per_request}}
              comparison: {{path: out/comparison}}
              aggregate: {{path: out/aggregate}}
              report_dir: out/reports
              quarantine: {{path: out/quarantine}}
            compare: {compare_section}
            spark: {{master: "local[2]", shuffle_partitions: 2}}
            validation: {{rules: {{{validation}}}}}
            """))
        return path

    return root, config


@pytest.mark.e2e
def test_console_script_compares_refuses_across_pools_and_opts_in(spark, job, capsys) -> None:
    from ndcg_spark.cli import main

    root, config = job
    same = config("same", "{baseline: bm25, candidate: hybrid, bootstrap: {replicates: 100}, permutations: 99}")
    assert main(["score", "--config", str(same), "--run-id", "n1"]) == 0
    capsys.readouterr()
    assert main(["compare", "--config", str(same), "--run-id", "n1"]) == 0
    shown = capsys.readouterr().out
    assert "reranker comparison" in shown and "END-TO-END" not in shown and "win/tie/loss" in shown
    # the job has an aggregate table, but this run was only scored: the comparison stands, no report
    assert "report: not written (report: no aggregate table at" in shown

    across = config("across", "{baseline: bm25, candidate: dense, bootstrap: {replicates: 100}, permutations: 99}")
    assert main(["compare", "--config", str(across), "--run-id", "n1"]) == 2
    refused = capsys.readouterr().err
    assert "refusing a reranker comparison" in refused and "pool versions differ (pool-2026-11-28 vs pool-dense)" in refused

    opted = config("opted", "{baseline: bm25, candidate: dense, kind: end_to_end, bootstrap: {replicates: 100}, permutations: 99}")
    assert main(["compare", "--config", str(opted), "--run-id", "n1"]) == 0
    assert "END-TO-END" in capsys.readouterr().out

    table = spark.read.parquet(str(root / "out" / "comparison"))
    kinds = {(r.baseline, r.candidate): r.comparison_kind for r in table.select("baseline", "candidate", "comparison_kind").distinct().collect()}
    assert kinds == {("bm25", "hybrid"): "reranker", ("bm25", "dense"): "end_to_end"}
    e2e = table.filter("candidate = 'dense' AND slice_dimension = 'overall' AND k = 10").first()
    assert e2e.candidate_pool_recall_macro < e2e.baseline_pool_recall_macro  # dense kept only hybrid's top 8
    assert e2e.run_id == "n1" and e2e.contract_fingerprint and e2e.code_version and e2e.created_at
    # re-running a comparison replaces its own partition and nothing else
    n_before = table.count()
    assert main(["compare", "--config", str(same), "--run-id", "n1"]) == 0
    assert spark.read.parquet(str(root / "out" / "comparison")).count() == n_before


@pytest.mark.e2e
def test_a_quarantined_request_is_left_out_of_both_sides_and_the_pool_guard(spark, job, capsys) -> None:
    """A bm25 candidate row with no doc id, quarantined: validation sets bm25's whole list of that
    request aside (no list is scored altered), hybrid's list is scored, and ``compare`` (whose pool
    summary reads the raw inputs) pairs the other requests, counts this one as hybrid-only and is
    not refused."""
    from ndcg_spark.cli import main

    root, config = job
    cands = spark.read.parquet(str(root / "data" / "candidates3"))
    first = cands.filter("system = 'bm25'").orderBy("request_id", "position").first()
    bad = cands.filter(F.col("request_id") == first.request_id).filter("system = 'bm25'").limit(1)
    bad = bad.withColumn("doc_id", F.lit(None).cast("string")).withColumn("position", F.col("position") + 1000)
    cands.unionByName(bad).write.parquet(str(root / "data" / "candidates_dirty"))
    section = "{baseline: bm25, candidate: hybrid, bootstrap: {replicates: 20}, permutations: 19}"
    dirty = config("dirty", section, candidates="candidates_dirty", validation="doc_id_missing: quarantine")
    assert main(["score", "--config", str(dirty), "--run-id", "q1"]) == 0
    assert main(["compare", "--config", str(dirty), "--run-id", "q1"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    quarantined = spark.read.parquet(str(root / "out" / "quarantine")).filter("run_id = 'q1'")
    assert {r.request_id for r in quarantined.select("request_id").distinct().collect()} == {first.request_id}
    per_request = spark.read.parquet(str(root / "out" / "per_request")).filter("run_id = 'q1'")
    this = per_request.filter(F.col("request_id") == first.request_id)
    assert this.filter("system = 'bm25'").count() == 0 and this.filter("system = 'hybrid'").count() == 2
    n_requests = per_request.filter("system IN ('bm25', 'hybrid')").select("request_id").distinct().count()
    row = spark.read.parquet(str(root / "out" / "comparison")).filter(
        "run_id = 'q1' AND baseline = 'bm25' AND candidate = 'hybrid' AND slice_dimension = 'overall' AND k = 10"
    ).first()
    assert row.comparison_kind == "reranker", row
    categories = ("n_paired", "n_only_baseline_missing", "n_only_baseline_empty", "n_only_candidate_missing",
                  "n_only_candidate_empty", "n_neither")
    assert sum(row[c] for c in categories) == n_requests == 200, row  # every request accounted for once
    # each category recounted from the per-request rows at K = 10: present (a row) and scoreable (an ideal)
    sides = {}
    for r in per_request.filter("k = 10 AND system IN ('bm25', 'hybrid')").collect():
        if not r.no_results:  # a request the side returned nothing for is set aside (no_results: exclude): absent
            sides.setdefault(r.request_id, {})[r.system] = not r.empty_ideal
    expected = {c: 0 for c in categories}
    for s in sides.values():
        base, cand = s.get("bm25"), s.get("hybrid")
        if base and cand:
            expected["n_paired"] += 1
        elif base:
            expected["n_only_baseline_missing" if cand is None else "n_only_baseline_empty"] += 1
        elif cand:
            expected["n_only_candidate_missing" if base is None else "n_only_candidate_empty"] += 1
        else:
            expected["n_neither"] += 1
    assert {c: row[c] for c in categories} == expected, row
    # the quarantined list is bm25's: hybrid is only "missing" where it returned nothing (its timeouts)
    timed_out = per_request.filter("k = 10 AND system = 'hybrid' AND no_results AND NOT empty_ideal").count()
    assert expected["n_only_baseline_missing"] == timed_out
    assert sides[first.request_id].get("bm25") is None


def test_the_sample_dense_pool_is_optional_and_leaves_the_default_output_unchanged(spark) -> None:
    from ndcg_spark.sample.generate import DENSE_POOL_VERSION, DENSE_SYSTEM, generate

    plain = generate(spark, n_requests=60, seed=7)
    extended = generate(spark, n_requests=60, seed=7, dense_pool=True)
    shared = extended.candidates.filter(F.col("system") != DENSE_SYSTEM)
    assert shared.exceptAll(plain.candidates).count() == 0 and plain.candidates.exceptAll(shared).count() == 0
    assert extended.judgments.exceptAll(plain.judgments).count() == 0
    dense = extended.candidates.filter(F.col("system") == DENSE_SYSTEM)
    assert [r.pool_version for r in dense.select("pool_version").distinct().collect()] == [DENSE_POOL_VERSION]
    assert dense.select("request_id").distinct().count() == 60  # every request keeps its first document
    # its own pool: documents bm25 never saw, and bm25 documents it dropped
    bm25 = plain.candidates.filter(F.col("system") == "bm25").select("request_id", "doc_id")
    assert dense.select("request_id", "doc_id").exceptAll(bm25).count() > 0
    assert bm25.exceptAll(dense.select("request_id", "doc_id")).count() > 0
    bad = dense.groupBy("request_id").agg(F.count("*").alias("n"), F.max("position").alias("hi")).filter("n != hi")
    assert bad.count() == 0  # positions 1..M


def test_an_older_catalog_comparison_table_takes_a_night_of_the_metric_column(spark):
    """A Parquet catalog comparison table written before the ``metric`` column (NDCG alone, pool recall
    as ``baseline_recall_macro``): the next night adds the new columns and writes the retired ones as
    null; the older night keeps its values; read with the current names, each night has its own."""
    from ndcg_spark.comparison.columns import COMPARISON_LEGACY, COMPARISON_RENAMED
    from ndcg_spark.config.job import Source
    from ndcg_spark.storage.io import write_run_partitioned
    from ndcg_spark.legacy import as_current

    table = "compare_it.comparison"
    spark.sql("CREATE DATABASE IF NOT EXISTS compare_it")
    spark.createDataFrame([("old", 10, 0.61, 0.9)], "run_id string, k int, baseline_ndcg_macro double, "
                          "baseline_recall_macro double").write.partitionBy("run_id").saveAsTable(table)
    try:
        new = spark.createDataFrame([("new", 10, "ndcg", 0.65, 0.65, 0.8), ("new", 10, "recall", 0.7, None, 0.8)],
                                    "run_id string, k int, metric string, baseline_macro double, "
                                    "baseline_ndcg_macro double, baseline_pool_recall_macro double")
        write_run_partitioned(new, Source(table=table))
        rows = spark.read.table(table)
        assert {r.run_id: r.baseline_recall_macro for r in rows.collect()} == {"old": 0.9, "new": None}
        current = {(r.run_id, r.metric): r for r in as_current(rows, COMPARISON_LEGACY, COMPARISON_RENAMED).collect()}
        assert set(current) == {("old", "ndcg"), ("new", "ndcg"), ("new", "recall")}  # the older night: NDCG's
        assert (current["old", "ndcg"].baseline_macro, current["old", "ndcg"].baseline_pool_recall_macro) == (0.61, 0.9)
        assert (current["new", "recall"].baseline_macro, current["new", "recall"].baseline_pool_recall_macro) == (0.7, 0.8)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")
