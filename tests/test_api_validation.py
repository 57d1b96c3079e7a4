"""Issue 17, part 1: the shell functions refuse input that would make the number wrong, by default.

``score_requests``, ``pool_summary`` and ``guardrail_table`` (whose offline guardrails read the
candidates) check their raw inputs with the job's named rules (``validate_inputs``, every rule
``error``) and raise the job's message; ``validate=False`` says the caller already validated.
"""

from __future__ import annotations

import math

import pytest

from ndcg_spark import CompareSpec, Contract, GuardrailSpec, guardrail_table, pool_summary, score_requests
from ndcg_spark.errors import ValidationError

CANDS = "request_id string, doc_id string, position int, grade double"
#: the user's example: grade 3 is not in the table {0: 0, 1: 1, 2: 3}
GRADES_1_3_2 = [("q1", "a", 1, 1.0), ("q1", "b", 2, 3.0), ("q1", "c", 3, 2.0), ("q2", "a", 1, 0.0)]
TABLE = {"table": {0: 0, 1: 1, 2: 3}}


def test_the_users_example_raises_the_named_rule_with_count_and_example(spark):
    cands = spark.createDataFrame(GRADES_1_3_2, CANDS)
    with pytest.raises(ValidationError) as caught:
        score_requests(cands, contract=Contract(gain=TABLE))
    message = str(caught.value)
    assert caught.value.rule == "grade_not_in_gain_table"
    assert caught.value.counts == {"grade_not_in_gain_table": 1}
    assert "- grade_not_in_gain_table: 1 candidates row (" in message
    assert '"doc_id":"b","position":2,"grade":3.0' in message


def test_validate_false_restores_the_plain_metric(spark):
    # the unlisted grade 3 scores gain 0, as before: DCG@3 = 1/log2(2) + 0 + 3/log2(4) = 2.5,
    # IDCG@3 over the gains [3, 1, 0] = 3 + 1/log2(3)
    cands = spark.createDataFrame(GRADES_1_3_2, CANDS)
    rows = score_requests(cands, contract=Contract(k=[3], gain=TABLE), validate=False).orderBy("request_id").collect()
    assert [r["request_id"] for r in rows] == ["q1", "q2"]
    assert math.isclose(rows[0]["ndcg"], 2.5 / (3 + 1 / math.log2(3)), rel_tol=0, abs_tol=1e-12)
    assert rows[1]["ndcg"] is None and rows[1]["empty_ideal"]


@pytest.mark.parametrize(
    ("rows", "rule", "requests_unchecked"),
    [
        ([("q1", "a", 1, 1.0), ("q1", "a", 2, 2.0)], "doc_repeated", 1),
        ([("q1", "a", 1, 1.0), ("q1", "b", 1, 2.0)], "position_repeated", 1),
        ([("q1", "a", 1, 1.0), ("q1", "b", 2, -1.0)], "grade_negative", 1),
        ([("q1", "a", 1, 1.0), ("q1", "b", 2, float("nan"))], "grade_not_finite", 1),
        ([("q1", "a", 1, 1.0), (None, "b", 2, 2.0)], "request_id_missing", 2),
    ],
    ids=["doc_repeated", "position_repeated", "grade_negative", "grade_not_finite", "request_id_missing"],
)
def test_score_requests_refuses_each_rule_by_default(spark, rows, rule, requests_unchecked):
    cands = spark.createDataFrame(rows, CANDS)
    with pytest.raises(ValidationError, match=f"- {rule}: ") as caught:
        score_requests(cands, contract=Contract(k=[3]))
    assert caught.value.rule == rule
    # unchecked, the same rows are scored (a request null id is a request of its own)
    assert score_requests(cands, contract=Contract(k=[3]), validate=False).count() == requests_unchecked


def test_score_requests_refuses_a_nan_score_under_score_order(spark):
    cands = spark.createDataFrame([("q1", "a", 0.5, 1.0), ("q1", "b", float("nan"), 2.0)],
                                  "request_id string, doc_id string, score double, grade double")
    with pytest.raises(ValidationError, match="- score_invalid: 1 candidates row"):
        score_requests(cands, contract=Contract(k=[3]))


def test_score_requests_checks_the_judgments_table_too(spark):
    cands = spark.createDataFrame([("q1", "a", 1), ("q1", "b", 2)], "request_id string, doc_id string, position int")
    judgments = spark.createDataFrame([("q1", "a", 1.0), ("q1", "a", 2.0)], "request_id string, doc_id string, grade double")
    with pytest.raises(ValidationError, match="- judgment_conflict: 2 judgments rows"):
        score_requests(cands, judgments, Contract(k=[3]))


def test_pool_summary_refuses_by_default(spark):
    cands = spark.createDataFrame([("q1", "a", 1, 1.0), ("q1", "a", 2, 2.0)], CANDS)
    with pytest.raises(ValidationError, match="- doc_repeated: 2 candidates rows"):
        pool_summary(cands, None, Contract(k=[3]))
    assert pool_summary(cands, None, Contract(k=[3]), validate=False).first()["n_pool"] == 2


def test_guardrail_table_refuses_the_candidates_of_its_offline_guardrails(spark):
    rows = [(f"q{i}", d, s, p, 1.0, 10 * p) for i in range(3) for s in ("A", "B") for p, d in ((1, "a"), (2, "b"))]
    schema = "request_id string, doc_id string, system string, position int, grade double, age int"
    good = spark.createDataFrame(rows, schema)
    bad = spark.createDataFrame(rows + [("q0", "c", "A", 1, 1.0, 99)], schema)  # a second first position
    contract = Contract(k=[1])
    per_request = score_requests(good, contract=contract)
    spec = GuardrailSpec.from_dict({
        "bootstrap": {"replicates": 0}, "min_observed": 1,
        "checks": [{"name": "stale_first", "source": "offline", "flag": "first_result_older_than", "column": "age",
                    "threshold": 50, "better": "lower", "margin": {"absolute": 0.05}}]})
    sides = CompareSpec(baseline="A", candidate="B")
    with pytest.raises(ValidationError, match="- position_repeated: 2 candidates rows"):
        guardrail_table(per_request, spec, sides, candidates=bad, contract=contract)
    table = guardrail_table(per_request, spec, sides, candidates=bad, contract=contract, validate=False)
    assert table.count() == 1


def test_a_request_past_the_jobs_skew_guard_is_scored_not_refused(spark):
    """The default check is every rule but the skew guard: 10,001 candidates make no number wrong
    (the large-request cut keeps what can reach the top K). One grade-2 document at position 3,
    the rest grade 0: NDCG@3 = (3 / log2(4)) / 3 = 0.5."""
    rows = [("big", f"d{i:05d}", i, 2.0 if i == 3 else 0.0) for i in range(1, 10_002)]
    (row,) = score_requests(spark.createDataFrame(rows, CANDS), contract=Contract(k=[3])).collect()
    assert row["n_candidates"] == 10_001
    assert math.isclose(row["ndcg"], 0.5, rel_tol=0, abs_tol=1e-12)
