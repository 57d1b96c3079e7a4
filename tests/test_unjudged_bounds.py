"""Issue 17, part 2: how much the unjudged could move the NDCG (``ndcg_unjudged_low`` / ``_high``).

Small hand-checked requests for every rule of docs/statistics.md#the-unjudged-bounds (the random
agreement with the oracle, both plans, is in test_oracle_agreement.py and test_dense_plan.py).
Request ``q1`` shows grades ``[1, unjudged, 0]``, ``q2`` shows ``[0, unjudged]`` (no positive), at K = 2.
"""

from __future__ import annotations

import math

import pytest

from ndcg_spark import AggregateSpec, Contract, aggregate, score_requests

TOL = 1e-12
D3 = 1 / math.log2(3)  # the discount of position 2
CANDS = [("q1", "a", 1), ("q1", "b", 2), ("q1", "c", 3), ("q2", "d", 1), ("q2", "e", 2)]
JUDGED = [("q1", "a", 1.0), ("q1", "c", 0.0), ("q2", "d", 0.0)]
#: q1 at the highest grade 3 (gain 7): shown [1, 7, 0], ideal [7, 1, 0]
Q1_HIGH = (1 + 7 * D3) / (7 + 1 * D3)
#: q2 at the highest grade: shown [0, 7], ideal [7, 0]
Q2_HIGH = 7 * D3 / 7


def _scored(spark, contract, judgments=JUDGED, dense_plan=True):
    cands = spark.createDataFrame(CANDS, "request_id string, doc_id string, position int")
    judg = spark.createDataFrame(judgments, "request_id string, doc_id string, grade double")
    out = score_requests(cands, judg, contract, dense_plan=dense_plan, validate=False)
    return {r["request_id"]: r for r in out.collect()}


def _close(got, want):
    return got is None and want is None or (got is not None and want is not None and abs(got - want) <= TOL)


@pytest.mark.parametrize("unjudged", ["zero", "separate", "exclude"])
@pytest.mark.parametrize("dense_plan", [True, False])
def test_bounds_judge_every_unjudged_candidate_in_place_under_every_unjudged_policy(spark, unjudged, dense_plan):
    rows = _scored(spark, Contract(k=[2], max_grade=3, unjudged=unjudged), dense_plan=dense_plan)
    # the bounds keep the full displayed list, whatever the policy does with the unjudged
    assert _close(rows["q1"]["ndcg_unjudged_low"], 1.0) and _close(rows["q1"]["ndcg_unjudged_high"], Q1_HIGH)
    # q2 has no positive: an empty ideal at the low bound (null), a positive one at the high bound
    assert rows["q2"]["ndcg_unjudged_low"] is None and _close(rows["q2"]["ndcg_unjudged_high"], Q2_HIGH)
    assert rows["q2"]["ndcg"] is None and rows["q2"]["empty_ideal"]


def test_an_empty_bound_ideal_scores_zero_under_empty_ideal_zero(spark):
    rows = _scored(spark, Contract(k=[2], max_grade=3, empty_ideal="zero"))
    assert rows["q2"]["ndcg"] == 0.0 and rows["q2"]["ndcg_unjudged_low"] == 0.0
    assert _close(rows["q2"]["ndcg_unjudged_high"], Q2_HIGH)


def test_under_ideal_from_judgments_the_unjudged_join_the_judged_documents(spark):
    # q1 also has a judged document z of grade 2 (gain 3) that was never retrieved
    rows = _scored(spark, Contract(k=[2], max_grade=3, ideal_from="judgments"), JUDGED + [("q1", "z", 2.0)])
    assert _close(rows["q1"]["ndcg"], 1 / (3 + D3))
    assert _close(rows["q1"]["ndcg_unjudged_low"], 1 / (3 + D3))
    assert _close(rows["q1"]["ndcg_unjudged_high"], (1 + 7 * D3) / (7 + 3 * D3))


def test_a_gain_table_declares_its_own_scale(spark):
    table = {"table": {0: 0.5, 1: 1.0, 2: 3.0}}  # lowest grade 0 has gain 0.5, highest 2 has gain 3
    rows = _scored(spark, Contract(k=[2], gain=table))
    # low: q1 shows gains [1, 0.5, 0.5]; its ideal [1, 0.5, 0.5]
    assert _close(rows["q1"]["ndcg_unjudged_low"], 1.0)
    assert _close(rows["q1"]["ndcg_unjudged_high"], (1 + 3 * D3) / (3 + 1 * D3))
    # q2 (gains [0.5, 0.5] at the low bound) is not empty under a table whose lowest gain is 0.5
    assert _close(rows["q2"]["ndcg_unjudged_low"], 1.0)


def test_no_declared_scale_leaves_the_bounds_null(spark):
    rows = _scored(spark, Contract(k=[2]))
    assert all(r["ndcg_unjudged_low"] is None and r["ndcg_unjudged_high"] is None for r in rows.values())


def test_the_contract_declares_max_grade_without_moving_existing_fingerprints():
    assert Contract.from_dict({"k": [5, 10], "gain": "linear", "empty_ideal": "zero"}).fingerprint == "bc33512e7554a153"
    assert "max_grade" not in Contract().to_dict()
    assert Contract(max_grade=3).fingerprint != Contract().fingerprint
    assert Contract.from_dict({"max_grade": 3}).to_dict()["max_grade"] == 3.0
    assert Contract(max_grade=3).unjudged_gains == (0.0, 7.0)
    assert Contract(gain="linear", max_grade=2.5).unjudged_gains == (0.0, 2.5)
    from ndcg_spark.errors import ContractError

    with pytest.raises(ContractError, match=r"contract.max_grade: must be a grade of the gain table \(0, 1\)"):
        Contract(gain={"table": {0: 0, 1: 1}}, max_grade=3)
    with pytest.raises(ContractError, match="contract.max_grade: must be a finite number"):
        Contract(max_grade="high")
    with pytest.raises(ContractError, match="contract.max_grade: must be a non-negative number"):
        Contract(max_grade=-1)


def test_existing_columns_keep_their_bits_when_the_bounds_are_declared(spark):
    for plan in (True, False):
        before = _scored(spark, Contract(k=[2], unjudged="exclude"), dense_plan=plan)
        after = _scored(spark, Contract(k=[2], unjudged="exclude", max_grade=3), dense_plan=plan)
        for rid in before:
            a, b = before[rid].asDict(), after[rid].asDict()
            for column in ("ndcg_unjudged_low", "ndcg_unjudged_high", "contract_fingerprint"):
                a.pop(column), b.pop(column)
            assert a == b


def test_the_aggregate_carries_both_means_of_each_bound(spark):
    per_request = score_requests(
        spark.createDataFrame(CANDS, "request_id string, doc_id string, position int"),
        spark.createDataFrame(JUDGED, "request_id string, doc_id string, grade double"),
        Contract(k=[2], max_grade=3), validate=False)
    rows = {r.metric: r for r in aggregate(per_request, AggregateSpec(replicates=50)).collect()}
    assert set(rows) == {"ndcg", "ndcg_unjudged_low", "ndcg_unjudged_high"}  # a what-if is a row of its own
    row, low, high = rows["ndcg"], rows["ndcg_unjudged_low"], rows["ndcg_unjudged_high"]
    assert _close(row["macro"], 1.0) and _close(row["macro_ndcg"], 1.0)
    assert _close(low["macro"], 1.0) and low["n_eligible"] == 1  # q2 has no low bound: its ideal is empty
    assert _close(high["macro"], (Q1_HIGH + Q2_HIGH) / 2) and high["n_eligible"] == 2
    assert _close(high["weighted"], (Q1_HIGH + Q2_HIGH) / 2)  # weight 1 each
    assert high["macro_ci_low"] <= high["macro"] <= high["macro_ci_high"]  # with its own interval
    # the NDCG row keeps the table's columns from before the metric column: the what-ifs' means
    assert _close(row["macro_ndcg_unjudged_low"], low["macro"]) and _close(row["macro_ndcg_unjudged_high"], high["macro"])
    assert _close(row["weighted_ndcg_unjudged_high"], high["weighted"]) and low["macro_ndcg"] is None


@pytest.mark.parametrize("dense_plan", [True, False])
def test_a_reader_of_the_ndcg_alone_does_not_compute_the_bounds(spark, dense_plan):
    """The bounds cost array sorts per request and K; a reader that never selects them (the shell's
    ``agg(avg("ndcg"))``, RankingEvaluator's number) leaves them out of the plan Spark runs, while
    every value it reads stays what the full table says."""
    cands = spark.createDataFrame(CANDS, "request_id string, doc_id string, position int")
    judg = spark.createDataFrame(JUDGED, "request_id string, doc_id string, grade double")
    scored = score_requests(cands, judg, Contract(k=[1, 2], max_grade=3), dense_plan=dense_plan, validate=False)

    def plan(df) -> str:
        return df._jdf.queryExecution().optimizedPlan().toString()

    assert "ndcg_unjudged_high" in plan(scored)  # the bounds' columns of each K, then their rows
    narrow = scored.select("request_id", "k", "dcg", "idcg", "ndcg")
    assert "ndcg_unjudged" not in plan(narrow)
    full = {(r.request_id, r.k): (r.dcg, r.idcg, r.ndcg) for r in scored.collect()}
    assert {(r.request_id, r.k): (r.dcg, r.idcg, r.ndcg) for r in narrow.collect()} == full
