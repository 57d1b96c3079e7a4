"""Every value of every declared policy, with the expected numbers worked out by hand here.

Discounts used throughout (1 / log2(p + 1)):
    p=1: 1.0    p=2: 0.6309297535714575    p=3: 0.5    p=4: 0.43067655807339306    p=5: 0.38685280723454163
"""

from __future__ import annotations

import pytest
from chispa import assert_approx_df_equality
from pyspark.sql import functions as F

from ndcg_spark import Contract, score_requests
from ndcg_spark.errors import EmptyIdealError, InputError

D2 = 0.6309297535714575
D4 = 0.43067655807339306
TOL = 1e-12

CAND_SCHEMA = "request_id string, doc_id string, position int, score double, grade double"


def _rows(spark, data, schema=CAND_SCHEMA):
    return spark.createDataFrame(data, schema)


def _by_key(df, *cols):
    return {(r["request_id"], r["k"]): tuple(r[c] for c in cols) for r in df.collect()}


# ------------------------------------------------------------------ the SPEC's worked example
def test_spec_worked_example(spark):
    grades = {"q1": [1, 3, 0, 2], "q2": [2, 0, 1], "q3": [0, 0], "q4": [3, 2, 1]}
    data = [(q, f"d{i}", i + 1, None, float(g)) for q, gs in grades.items() for i, g in enumerate(gs)]
    out = score_requests(_rows(spark, data), contract=Contract(k=[3]))
    got = _by_key(out, "ndcg", "empty_ideal")
    assert got[("q1", 3)][0] == pytest.approx(0.5766666455, abs=1e-10)
    assert got[("q2", 3)][0] == pytest.approx(0.9639404333, abs=1e-10)
    assert got[("q3", 3)] == (None, True)
    assert got[("q4", 3)] == (1.0, False)
    macro = out.filter(~F.col("empty_ideal")).filter(F.col("request_id").isin("q1", "q2")).agg(F.avg("ndcg")).first()[0]
    assert macro == pytest.approx(0.7703035394, abs=1e-10)


# ------------------------------------------------------------------ unjudged: zero / exclude / separate
# Displayed a..e, grades 1, unjudged, 3, 0, 2 -> exponential gains 1, -, 7, 0, 3.
# Ideal (candidates) gains sorted: 7, 3, 1, 0 -> IDCG@3 = 7 + 3*D2 + 1*0.5 = 9.392789260714373.
UNJUDGED = [("r", "a", 1, None, 1.0), ("r", "b", 2, None, None), ("r", "c", 3, None, 3.0),
            ("r", "d", 4, None, 0.0), ("r", "e", 5, None, 2.0)]
IDCG3 = 7 + 3 * D2 + 0.5


@pytest.mark.parametrize(
    "policy, dcg3, unjudged3",
    [
        ("zero", 1 + 0 * D2 + 7 * 0.5, None),  # b keeps rank 2 with gain 0; not reported
        ("separate", 1 + 0 * D2 + 7 * 0.5, 1),  # same score, and b is counted in the top 3
        ("exclude", 1 + 7 * D2 + 0 * 0.5, 1),  # b dropped: c moves to rank 2, d to rank 3
    ],
)
def test_unjudged_policies(spark, policy, dcg3, unjudged3):
    out = score_requests(_rows(spark, UNJUDGED), contract=Contract(k=[3], unjudged=policy))
    dcg, idcg, ndcg, unj = _by_key(out, "dcg", "idcg", "ndcg", "n_unjudged_in_top_k")[("r", 3)]
    assert dcg == pytest.approx(dcg3, abs=TOL)
    assert idcg == pytest.approx(IDCG3, abs=TOL)
    assert ndcg == pytest.approx(dcg3 / IDCG3, abs=TOL)
    assert unj == unjudged3


def test_counts_per_request(spark):
    out = score_requests(_rows(spark, UNJUDGED), contract=Contract(k=[1]))
    r = out.first()
    assert (r["n_candidates"], r["n_judged"], r["n_positive"]) == (5, 4, 3)


# ------------------------------------------------------------------ gain: exponential / linear / table
@pytest.mark.parametrize(
    "gain, dcg3, idcg3",
    [
        ("exponential", 1 + 7 * 0.5, 7 + 3 * D2 + 1 * 0.5),  # gains 1, 0, 7 | ideal 7, 3, 1
        ("linear", 1 + 3 * 0.5, 3 + 2 * D2 + 1 * 0.5),  # gains 1, 0, 3 | ideal 3, 2, 1
        ({"table": {0: 0, 1: 1, 2: 2, 3: 5}}, 1 + 5 * 0.5, 5 + 2 * D2 + 1 * 0.5),  # gains 1, 0, 5 | ideal 5, 2, 1
    ],
)
def test_gain_mappings(spark, gain, dcg3, idcg3):
    out = score_requests(_rows(spark, UNJUDGED), contract=Contract(k=[3], gain=gain, unjudged="zero"))
    dcg, idcg = _by_key(out, "dcg", "idcg")[("r", 3)]
    assert dcg == pytest.approx(dcg3, abs=TOL)
    assert idcg == pytest.approx(idcg3, abs=TOL)


def test_non_integer_grade_exponential(spark):
    # grade 1.5 -> gain 2^1.5 - 1 = 1.8284271247461903 at rank 1; ideal is itself.
    out = score_requests(_rows(spark, [("r", "a", 1, None, 1.5), ("r", "b", 2, None, 0.0)]), contract=Contract(k=[1]))
    assert out.first()["dcg"] == pytest.approx(2**1.5 - 1, abs=TOL)


# ------------------------------------------------------------------ order and ties
# Scores: a 0.9 (grade 3), b 0.5 (0), c 0.5 (2), d 0.5 (1), e 0.1 (0); exponential gains 7, 0, 3, 1, 0.
TIES = [("t", "a", None, 0.9, 3.0), ("t", "c", None, 0.5, 2.0), ("t", "b", None, 0.5, 0.0),
        ("t", "d", None, 0.5, 1.0), ("t", "e", None, 0.1, 0.0)]


@pytest.mark.parametrize(
    "ties, dcg3, dcg5",
    [
        # score desc, doc id asc: a, b, c, d, e -> 7, 0, 3, 1, 0
        ("doc_id", 7 + 0 * D2 + 3 * 0.5, 7 + 0 * D2 + 3 * 0.5 + 1 * D4),
        # b, c, d tie on ranks 2..4 with average gain 4/3 spread over those ranks' discounts
        ("average", 7 + 4 / 3 * (D2 + 0.5), 7 + 4 / 3 * (D2 + 0.5 + D4)),
    ],
)
def test_score_order_ties(spark, ties, dcg3, dcg5):
    out = score_requests(_rows(spark, TIES), contract=Contract(k=[3, 5], order="score", ties=ties))
    got = _by_key(out, "dcg", "idcg")
    assert got[("t", 3)][0] == pytest.approx(dcg3, abs=TOL)
    assert got[("t", 5)][0] == pytest.approx(dcg5, abs=TOL)
    assert got[("t", 3)][1] == pytest.approx(7 + 3 * D2 + 0.5, abs=TOL)  # ties never change the ideal


def test_position_order_ignores_score(spark):
    # positions say b first (grade 3); scores would say a first (grade 0).
    data = [("p", "a", 2, 0.9, 0.0), ("p", "b", 1, 0.1, 3.0)]
    by_position = score_requests(_rows(spark, data), contract=Contract(k=[1], order="position")).first()
    by_score = score_requests(_rows(spark, data), contract=Contract(k=[1], order="score")).first()
    assert by_position["ndcg"] == pytest.approx(1.0, abs=TOL)
    assert by_score["ndcg"] == pytest.approx(0.0, abs=TOL)
    assert by_position["contract_fingerprint"] != by_score["contract_fingerprint"]


def test_auto_order_resolves_to_score_without_position(spark):
    data = spark.createDataFrame([("p", "a", 0.9, 0.0), ("p", "b", 0.1, 3.0)], "request_id string, doc_id string, score double, grade double")
    out = score_requests(data, contract=Contract(k=[1])).first()
    assert out["ndcg"] == 0.0
    assert out["contract_fingerprint"] == Contract(k=[1], order="score").fingerprint


# ------------------------------------------------------------------ ideal from candidates / judgments
def test_ideal_from(spark):
    cands = spark.createDataFrame([("j", "a", 1), ("j", "b", 2)], "request_id string, doc_id string, position int")
    # z was judged grade 3 but never retrieved
    judg = spark.createDataFrame([("j", "a", 1.0), ("j", "b", 0.0), ("j", "z", 3.0)], "request_id string, doc_id string, grade double")
    from_cands = score_requests(cands, judg, Contract(k=[3], ideal_from="candidates")).first()
    from_judg = score_requests(cands, judg, Contract(k=[3], ideal_from="judgments")).first()
    assert from_cands["idcg"] == pytest.approx(1.0, abs=TOL)  # ideal of candidates: 1, 0
    assert from_cands["ndcg"] == pytest.approx(1.0, abs=TOL)
    assert from_judg["idcg"] == pytest.approx(7 + 1 * D2, abs=TOL)  # ideal of judgments: 7, 1, 0
    assert from_judg["ndcg"] == pytest.approx(1 / (7 + D2), abs=TOL)


def test_ideal_from_judgments_needs_a_judgments_table(spark):
    with pytest.raises(InputError, match="ideal_from"):
        score_requests(_rows(spark, UNJUDGED), contract=Contract(ideal_from="judgments"))


# ------------------------------------------------------------------ empty ideal: exclude / zero / error
EMPTY = [("e", "a", 1, None, 0.0), ("e", "b", 2, None, None), ("ok", "a", 1, None, 1.0)]


def test_empty_ideal_exclude(spark):
    got = _by_key(score_requests(_rows(spark, EMPTY), contract=Contract(k=[1, 3])), "ndcg", "empty_ideal")
    assert got[("e", 1)] == (None, True) and got[("e", 3)] == (None, True)
    assert got[("ok", 3)] == (1.0, False)


def test_empty_ideal_zero(spark):
    got = _by_key(score_requests(_rows(spark, EMPTY), contract=Contract(k=[3], empty_ideal="zero")), "ndcg", "empty_ideal")
    assert got[("e", 3)] == (0.0, True)  # scored 0, still flagged
    assert got[("ok", 3)] == (1.0, False)


def test_empty_ideal_error(spark):
    with pytest.raises(EmptyIdealError, match=r"1 request\(s\).*'e'"):
        score_requests(_rows(spark, EMPTY), contract=Contract(k=[3], empty_ideal="error"))


# ------------------------------------------------------------------ structure
def test_one_row_per_request_system_k_and_systems_never_mix(spark):
    data = spark.createDataFrame(
        [("q", "a", 1, "s1", 3.0), ("q", "b", 2, "s1", 0.0), ("q", "b", 1, "s2", 0.0), ("q", "a", 2, "s2", 3.0)],
        "request_id string, doc_id string, position int, system string, grade double",
    )
    out = score_requests(data, contract=Contract(k=[1, 3, 10]))
    assert out.count() == 2 * 3
    s1 = out.filter("system = 's1' AND k = 1").first()["ndcg"]
    s2 = out.filter("system = 's2' AND k = 1").first()["ndcg"]
    assert (s1, s2) == (1.0, 0.0)


def test_k_larger_than_list_and_single_candidate(spark):
    out = score_requests(_rows(spark, [("s", "a", 1, None, 2.0)]), contract=Contract(k=[1, 50]))
    got = _by_key(out, "dcg", "idcg", "ndcg")
    assert got[("s", 50)] == (3.0, 3.0, 1.0)


def test_column_mapping(spark):
    trec = spark.createDataFrame([("1", "d1", 1, 0.0), ("1", "d2", 2, 2.0)], "qid string, docno string, rank int, rel double")
    contract = Contract(k=[2], columns={"request_id": "qid", "doc_id": "docno", "position": "rank", "grade": "rel"})
    expected = spark.createDataFrame([("1", 2, 3 * D2 / 3.0)], "request_id string, k int, ndcg double")
    out = score_requests(trec, contract=contract).select("request_id", "k", "ndcg")
    assert_approx_df_equality(out, expected, precision=1e-12, ignore_nullable=True)


def test_stamps(spark):
    out = score_requests(_rows(spark, UNJUDGED), contract=Contract(k=[1]), run_id="2026-11-29", pool_version="p7").first()
    assert out["run_id"] == "2026-11-29"
    assert out["pool_version"] == "p7"
    assert out["contract_fingerprint"] == Contract(k=[1], order="position").fingerprint


# ------------------------------------------------------------------ input schema problems
def test_missing_column_is_named(spark):
    df = spark.createDataFrame([("q", "a", 1.0)], "request_id string, doc_id string, grade double")
    with pytest.raises(InputError, match=r"missing column 'score'.*contract\.columns\.score"):
        score_requests(df, contract=Contract(order="score"))


def test_wrong_type_is_named(spark):
    df = spark.createDataFrame([("q", "a", "first", 1.0)], "request_id string, doc_id string, position string, grade double")
    # checked by default: the validation reads a numeric string and names the rule the row breaks
    with pytest.raises(InputError, match=r"- position_invalid: 1 candidates row"):
        score_requests(df, contract=Contract(order="position"))
    with pytest.raises(InputError, match=r"'position'.*must be numeric, found string"):
        score_requests(df, contract=Contract(order="position"), validate=False)


def test_average_ties_with_an_unjudged_member(spark):
    # a (grade 2, gain 3) and unjudged b tie at rank 1..2: average gain (3 + 0) / 2 = 1.5.
    data = [("u", "a", None, 1.0, 2.0), ("u", "b", None, 1.0, None)]
    contract = Contract(k=[1, 2], order="score", ties="average", unjudged="zero")
    got = _by_key(score_requests(_rows(spark, data), contract=contract), "dcg", "ndcg")
    assert got[("u", 1)][0] == pytest.approx(1.5, abs=TOL)
    assert got[("u", 1)][1] == pytest.approx(0.5, abs=TOL)
    assert got[("u", 2)][0] == pytest.approx(1.5 * (1 + D2), abs=TOL)
