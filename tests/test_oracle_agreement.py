"""The Spark scorer agrees with the plain-Python oracle (``tests/oracle.py``) on random data.

The data set (seeded ``random.Random``) holds >= 2,000 requests and deliberately includes: ties in
score (a few requests with all scores equal), unjudged candidates (some requests fully unjudged),
requests with no positive grade at all, requests whose only positives were never retrieved,
single-candidate requests, lists shorter *and* longer than the largest K (k = 1, 3, 5, 10, 50),
non-integer grades, judged documents that no system retrieved, and requests scored by two systems.

Every combination of gain x order/ties x ideal_from x unjudged x empty_ideal(exclude, zero) is
compared column by column to 1e-9. The exponential (default) gain runs on the full data set; linear
and table gains run on its first 400 requests. Each combination is one small, latency-bound Spark
job, so the module-scoped ``agreement`` fixture runs them four at a time and each combination's
test then reports its own mismatches.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

try:  # tests/ may or may not be a package
    from tests.oracle import (
        Candidate,
        OracleEmptyIdealError,
        dcg_at_k,
        make_gain,
        ndcg_of_grades,
        prepare,
        score_all,
        score_prepared,
        score_request,
        tie_average_dcg_at_k,
    )
except ImportError:  # pragma: no cover - depends on how pytest sets sys.path
    from oracle import (  # type: ignore[no-redef]
        Candidate,
        OracleEmptyIdealError,
        dcg_at_k,
        make_gain,
        ndcg_of_grades,
        prepare,
        score_all,
        score_prepared,
        score_request,
        tie_average_dcg_at_k,
    )

SEED = 20240611
N_REQUESTS = 2_200  # full data set (exponential gain)
N_REQUESTS_SUBSET = 400  # linear and table gains
KS = [1, 3, 5, 10, 50]
TOL = 1e-9

GRADES = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
GRADE_WEIGHTS = [30, 4, 25, 5, 18, 3, 10]
# every generated grade is in the table; deliberately not a closed form of the grade
GAIN_TABLE = {0: 0.0, 0.5: 0.25, 1: 1.0, 1.5: 2.0, 2: 3.0, 2.5: 4.5, 3: 7.5}

GAINS = {"exponential": "exponential", "linear": "linear", "table": {"table": GAIN_TABLE}}
ORDER_TIES = {
    "position": ("position", "doc_id"),
    "score-doc_id": ("score", "doc_id"),
    "score-average": ("score", "average"),
}
IDEAL_FROM = ["candidates", "judgments"]
UNJUDGED = ["zero", "exclude", "separate"]
EMPTY_IDEAL = ["exclude", "zero"]

COMPARED = [
    "request_id",
    "system",
    "k",
    "dcg",
    "idcg",
    "ndcg",
    "empty_ideal",
    "n_candidates",
    "n_judged",
    "n_positive",
    "n_unjudged_in_top_k",
]


# =========================================================================== data generation
def _doc_id(rng: random.Random, n: int) -> str:
    # "d10" < "d9" in string order, and "D.." < "d..": doc_id tie-breaking must be by string
    return ("D" if rng.random() < 0.1 else "d") + str(n)


def generate(seed: int = SEED, n_requests: int = N_REQUESTS) -> tuple[list[dict], list[dict]]:
    """Return (candidate rows, judgment rows) as plain dicts."""
    rng = random.Random(seed)
    candidates: list[dict] = []
    judgments: list[dict] = []
    for r in range(n_requests):
        rid = f"q{r:05d}"
        # ---- how many candidates each system shows
        shape = rng.random()
        if shape < 0.10:
            m = 1
        elif shape < 0.50:
            m = rng.randint(2, 6)
        elif shape < 0.90:
            m = rng.randint(7, 20)
        else:
            m = rng.randint(21, 60)  # some longer than the largest K (50)
        systems = ["A"] if rng.random() < 0.7 else ["A", "B"]
        extra = rng.choice([0, 0, 1, 3, 8])  # judged/unjudged pool docs no system necessarily shows
        pool_size = m + extra + (rng.randint(0, 3) if len(systems) > 1 else 0)
        pool = [_doc_id(rng, n) for n in rng.sample(range(400), pool_size)]  # distinct n: distinct ids

        # ---- grades of the pool (None = no judgment row)
        p_unjudged = rng.choice([0.0, 0.0, 0.15, 0.4, 1.0])
        kind = rng.random()
        grades: dict[str, float | None] = {}
        for d in pool:
            if rng.random() < p_unjudged:
                grades[d] = None
            elif kind < 0.12:  # no positive grade anywhere
                grades[d] = 0.0
            else:
                grades[d] = rng.choices(GRADES, GRADE_WEIGHTS)[0]

        # ---- each system's list
        score_mode = rng.random()
        for system in systems:
            shown = rng.sample(pool, m)
            positions = list(range(1, m + 1))
            rng.shuffle(positions)
            for doc, pos in zip(shown, positions):
                if score_mode < 0.05:
                    score = 1.0  # every candidate tied
                elif score_mode < 0.55:
                    score = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, -0.5])  # many ties
                else:
                    score = round(rng.uniform(-10, 10), 6)  # (almost) no ties
                candidates.append(
                    {"request_id": rid, "system": system, "doc_id": doc, "position": pos, "score": score}
                )
        # ---- judgments: every judged pool doc (some never shown), sometimes an unretrieved positive
        for d, g in grades.items():
            if g is not None:
                judgments.append({"request_id": rid, "doc_id": d, "grade": g})
        if rng.random() < 0.08:
            judgments.append({"request_id": rid, "doc_id": f"unretrieved{r}", "grade": rng.choice([1.0, 2.0, 2.5])})
    return candidates, judgments


def _subset(rows: list[dict], n: int) -> list[dict]:
    keep = {f"q{r:05d}" for r in range(n)}
    return [row for row in rows if row["request_id"] in keep]


# =========================================================================== oracle self-tests
def test_oracle_reproduces_spec_worked_example():
    a = ndcg_of_grades([1, 3, 0, 2], k=3)
    b = ndcg_of_grades([2, 0, 1], k=3)
    assert a == pytest.approx(0.5766666455, abs=1e-10)
    assert str(a).startswith("0.5766666455")
    assert str(b).startswith("0.9639404333")
    assert str((a + b) / 2).startswith("0.7703035394")
    assert ndcg_of_grades([0, 0], k=3) is None
    assert ndcg_of_grades([3, 2, 1], k=3) == 1.0


def test_oracle_spec_example_by_hand():
    # [1, 3, 0, 2] @3: DCG = 1/1 + 7/log2(3) + 0; IDCG = 7 + 3/log2(3) + 1/2
    dcg = 1.0 + 7.0 / math.log2(3)
    idcg = 7.0 + 3.0 / math.log2(3) + 1.0 / 2.0
    assert ndcg_of_grades([1, 3, 0, 2], k=3) == pytest.approx(dcg / idcg, rel=1e-15)


def test_oracle_gains():
    assert make_gain("exponential")(1.5) == pytest.approx(2**1.5 - 1)
    assert make_gain("linear")(1.5) == 1.5
    assert make_gain({"table": {0: 0.0, 1: 5.0}})(1) == 5.0
    with pytest.raises(KeyError):
        make_gain({"table": {0: 0.0, 1: 5.0}})(2)


def test_oracle_k_larger_than_list_and_empty_policies():
    cands = [Candidate("a", 1, grade=0.0), Candidate("b", 2, grade=None)]
    res = score_request(cands, k=[1, 50], empty_ideal="zero")
    assert res[50]["ndcg"] == 0.0 and res[50]["empty_ideal"] is True
    assert res[50]["n_unjudged_in_top_k"] == 1 and res[1]["n_unjudged_in_top_k"] == 0
    assert score_request(cands, k=[1])[1]["ndcg"] is None
    with pytest.raises(OracleEmptyIdealError):
        score_request(cands, k=[3], empty_ideal="error")
    single = [Candidate("a", 1, grade=2.0)]
    assert score_request(single, k=[1, 50])[50]["ndcg"] == 1.0


def test_oracle_unjudged_policies():
    # displayed: a(2) ? b(0) ? c(3); "?" unjudged
    cands = [
        Candidate("a", 1, grade=2.0),
        Candidate("u1", 2, grade=None),
        Candidate("b", 3, grade=0.0),
        Candidate("u2", 4, grade=None),
        Candidate("c", 5, grade=3.0),
    ]
    zero = score_request(cands, k=[3, 5], unjudged="zero")
    sep = score_request(cands, k=[3, 5], unjudged="separate")
    exc = score_request(cands, k=[3, 5], unjudged="exclude")
    assert zero[5]["dcg"] == pytest.approx(3.0 + 7.0 / math.log2(6))
    assert zero[5]["n_unjudged_in_top_k"] is None
    assert sep[5]["dcg"] == zero[5]["dcg"] and sep[3]["n_unjudged_in_top_k"] == 1
    assert sep[5]["n_unjudged_in_top_k"] == 2
    # condensed list a, b, c
    assert exc[3]["dcg"] == pytest.approx(3.0 + 7.0 / math.log2(4))
    assert exc[3]["n_unjudged_in_top_k"] == 1  # counted on the full displayed list
    assert exc[3]["idcg"] == pytest.approx(7.0 + 3.0 / math.log2(3))
    for res in (zero, sep, exc):
        assert (res[5]["n_candidates"], res[5]["n_judged"], res[5]["n_positive"]) == (5, 3, 2)


def test_oracle_ideal_from_judgments():
    cands = [Candidate("a", 1, grade=1.0), Candidate("b", 2, grade=0.0)]
    res = score_request(cands, k=[2], ideal_from="judgments", judged_grades=[1.0, 0.0, 3.0])
    assert res[2]["idcg"] == pytest.approx(7.0 + 1.0 / math.log2(3))
    assert res[2]["dcg"] == pytest.approx(1.0)
    only_unretrieved = [Candidate("a", 1, grade=0.0)]
    res = score_request(only_unretrieved, k=[1], ideal_from="judgments", judged_grades=[0.0, 2.0])
    assert res[1]["ndcg"] == 0.0 and res[1]["empty_ideal"] is False


def test_oracle_score_order_doc_id_ties_are_string_order():
    cands = [Candidate("d9", score=1.0, grade=3.0), Candidate("d10", score=1.0, grade=0.0)]
    res = score_request(cands, k=[1], order="score", ties="doc_id")
    assert res[1]["dcg"] == 0.0  # "d10" < "d9"


def test_oracle_tie_average_by_hand():
    # scores 2, 1, 1, 1, 0 with gains 1, 7, 0, 3, 1; K=3 cuts the tie group {7, 0, 3} at position 3
    pairs = [(2.0, 1.0), (1.0, 7.0), (1.0, 0.0), (1.0, 3.0), (0.0, 1.0)]
    expected = 1.0 + (10.0 / 3) * (1 / math.log2(3) + 1 / math.log2(4))
    assert tie_average_dcg_at_k(pairs, 3) == pytest.approx(expected, rel=1e-15)


def test_oracle_tie_average_is_expected_dcg_over_tie_breaks():
    """McSherry & Najork's closed form equals the mean DCG over every tie-breaking permutation."""
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 6)
        pairs = [(float(rng.choice([0, 1, 2])), float(rng.choice([0, 1, 3, 7]))) for _ in range(n)]
        k = rng.randint(1, 7)
        by_score = defaultdict(list)
        for s, g in pairs:
            by_score[s].append(g)
        scores = sorted(by_score, reverse=True)
        total, count = 0.0, 0
        for combo in itertools.product(*(itertools.permutations(by_score[s]) for s in scores)):
            total += dcg_at_k([g for block in combo for g in block], k)
            count += 1
        assert tie_average_dcg_at_k(pairs, k) == pytest.approx(total / count, rel=1e-12, abs=1e-12)


def test_generated_data_covers_the_edge_cases():
    cands, judgments = generate()
    judged = {(j["request_id"], j["doc_id"]): j["grade"] for j in judgments}
    groups = defaultdict(list)
    for c in cands:
        groups[(c["request_id"], c["system"])].append(c)
    requests = {c["request_id"] for c in cands}
    assert len(requests) >= 2_000
    sizes = Counter(len(v) for v in groups.values())
    assert sizes[1] >= 50 and sum(n for m, n in sizes.items() if m > 50) >= 20
    assert sum(1 for v in groups.values() if len({c["score"] for c in v}) < len(v)) >= 300  # score ties
    assert sum(1 for v in groups.values() if len(v) > 1 and len({c["score"] for c in v}) == 1) >= 20
    unj = [sum((c["request_id"], c["doc_id"]) not in judged for c in v) for v in groups.values()]
    assert sum(1 for u in unj if u) >= 300 and sum(1 for u, v in zip(unj, groups.values()) if u == len(v)) >= 50
    no_pos = [v for v in groups.values() if not any(judged.get((c["request_id"], c["doc_id"]), 0) > 0 for c in v)]
    assert len(no_pos) >= 100
    positives_by_req = Counter(j["request_id"] for j in judgments if j["grade"] > 0)
    assert sum(1 for v in no_pos if positives_by_req[v[0]["request_id"]]) >= 30  # positives only unretrieved
    assert {j["grade"] for j in judgments} == set(GRADES)
    shown = {(c["request_id"], c["doc_id"]) for c in cands}
    assert sum(1 for key in judged if key not in shown) >= 500
    assert sum(1 for (_, s) in groups if s == "B") >= 300
    for v in groups.values():  # positions are a permutation of 1..M, doc ids unique
        assert sorted(c["position"] for c in v) == list(range(1, len(v) + 1))
        assert len({c["doc_id"] for c in v}) == len(v)


# =========================================================================== Spark agreement
CAND_COLUMNS = ["request_id", "system", "doc_id", "position", "score"]
JUDG_COLUMNS = ["request_id", "doc_id", "grade"]
CAND_SCHEMA = "request_id string, system string, doc_id string, position int, score double"
JUDG_SCHEMA = "request_id string, doc_id string, grade double"

COMBOS = [
    (g, ot, i, u, e)
    for g in GAINS
    for ot in ORDER_TIES
    for i in IDEAL_FROM
    for u in UNJUDGED
    for e in EMPTY_IDEAL
]


def _combo_id(combo) -> str:
    g, ot, i, u, e = combo
    return f"{g}-{ot}-ideal_{i}-unjudged_{u}-empty_{e}"


def _choices(combo) -> dict:
    g, ot, i, u, e = combo
    order, ties = ORDER_TIES[ot]
    return dict(gain=GAINS[g], order=order, ties=ties, ideal_from=i, unjudged=u, empty_ideal=e)


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return math.isclose(float(a), float(b), rel_tol=TOL, abs_tol=TOL)


def _mismatches(got_rows, expected: dict) -> list[str]:
    """Every difference between Spark output rows and the oracle, as readable lines."""
    got, dup = {}, []
    for row in got_rows:
        key = (row["request_id"], row["system"], int(row["k"]))
        if key in got:
            dup.append(key)
        got[key] = row
    problems = [f"duplicate output row {key}" for key in dup[:5]]
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    problems += [f"missing output row {key}" for key in missing[:5]]
    problems += [f"unexpected output row {key}" for key in extra[:5]]
    if missing or extra or dup:
        problems.append(f"({len(dup)} duplicate, {len(missing)} missing, {len(extra)} unexpected rows)")
    for key, exp in expected.items():
        row = got.get(key)
        if row is None:
            continue
        for col, want in exp.items():
            have = row[col]
            if col.startswith("n_") and have is not None and not isinstance(have, bool):
                have = int(have)
            if not _close(have, want):
                problems.append(f"{key} {col}: expected {want!r}, got {have!r}")
    return problems


@pytest.fixture(scope="module")
def data(spark):
    """The generated tables, as plain rows (oracle input) and cached DataFrames (library input)."""
    cands, judgments = generate()

    def build(cs, js):
        cdf = spark.createDataFrame([tuple(r[c] for c in CAND_COLUMNS) for r in cs], CAND_SCHEMA, verifySchema=False)
        jdf = spark.createDataFrame([tuple(r[c] for c in JUDG_COLUMNS) for r in js], JUDG_SCHEMA, verifySchema=False)
        cdf, jdf = cdf.cache(), jdf.cache()
        cdf.count(), jdf.count()
        return {"rows": (cs, js), "prepared": prepare(cs, js), "frames": (cdf, jdf)}

    built = {
        "full": build(cands, judgments),
        "small": build(_subset(cands, N_REQUESTS_SUBSET), _subset(judgments, N_REQUESTS_SUBSET)),
    }
    yield built
    for b in built.values():
        for df in b["frames"]:
            df.unpersist()


def _data_set(gain: str) -> str:
    return "full" if gain == "exponential" else "small"


@pytest.fixture(scope="module")
def agreement(data):
    """Run every combination through the library (a few Spark jobs at a time: each one is small and
    latency-bound) and diff it against the oracle. Maps combo -> list of mismatches or an exception."""
    from ndcg_spark import Contract, score_requests

    def run(combo):
        try:
            d = data[_data_set(combo[0])]
            cdf, jdf = d["frames"]
            choices = _choices(combo)
            out = score_requests(cdf, jdf, Contract(k=KS, **choices), run_id="oracle-agreement")
            rows = out.select(*COMPARED).collect()
            return combo, _mismatches(rows, score_prepared(d["prepared"], k=KS, **choices))
        except Exception as exc:  # reported by the combination's own test
            return combo, exc

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(run, COMBOS))


@pytest.mark.parametrize("combo", [pytest.param(c, id=_combo_id(c)) for c in COMBOS])
def test_spark_agrees_with_oracle(agreement, combo):
    result = agreement[combo]
    if isinstance(result, BaseException):
        raise result
    assert not result, f"{_combo_id(combo)}: {len(result)} mismatches with the oracle, e.g.\n  " + "\n  ".join(
        result[:15]
    )


# ------------------------------------------------------------------ large requests, cut first
#: K small enough that most lists (up to 60 candidates) are cut to their top 5 before collecting
KS_CUT = [1, 3, 5]
CUT_COMBOS = [("table", ot, i, u, "exclude") for ot in ORDER_TIES for i in IDEAL_FROM for u in UNJUDGED]


@pytest.fixture(scope="module")
def cut_agreement(data):
    """The same comparison with the large-request path forced: ``large_request=5`` sends every
    request of more than 5 candidates through the cut (the others through the plain path, so the
    two are unioned); then, with the listing limit patched to 10, every request is cut."""
    from ndcg_spark import Contract, score_requests
    from ndcg_spark.scoring import score as scoring

    d = data["small"]
    cdf, jdf = d["frames"]

    def run(combo):
        try:
            choices = _choices(combo)
            # the dense plan would score the position-order lists without collecting (nothing to cut)
            out = score_requests(cdf, jdf, Contract(k=KS_CUT, **choices), run_id="cut", large_request=5,
                                 dense_plan=False)
            rows = out.select(*COMPARED).collect()
            return combo, _mismatches(rows, score_prepared(d["prepared"], k=KS_CUT, **choices))
        except Exception as exc:  # reported by the combination's own test
            return combo, exc

    results = {}
    with ThreadPoolExecutor(max_workers=4) as pool:
        results["listed"] = dict(pool.map(run, CUT_COMBOS))
    listed_limit = scoring._MAX_LISTED_LARGE
    scoring._MAX_LISTED_LARGE = 10
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            results["all"] = dict(pool.map(run, CUT_COMBOS[::3]))
    finally:
        scoring._MAX_LISTED_LARGE = listed_limit
    return results


@pytest.mark.parametrize(
    "mode, combo",
    [pytest.param("listed", c, id="listed-" + _combo_id(c)) for c in CUT_COMBOS]
    + [pytest.param("all", c, id="all-" + _combo_id(c)) for c in CUT_COMBOS[::3]],
)
def test_large_requests_cut_to_the_top_k_still_agree_with_oracle(cut_agreement, mode, combo):
    result = cut_agreement[mode][combo]
    if isinstance(result, BaseException):
        raise result
    assert not result, f"{mode} {_combo_id(combo)}: {len(result)} mismatches with the oracle, e.g.\n  " + "\n  ".join(
        result[:15]
    )


def test_empty_ideal_error_raises_when_an_empty_request_exists(data):
    from ndcg_spark import Contract, score_requests
    from ndcg_spark.errors import EmptyIdealError

    cands, judgments = data["small"]["rows"]
    cdf, jdf = data["small"]["frames"]
    with pytest.raises(OracleEmptyIdealError):
        score_all(cands, judgments, k=KS, empty_ideal="error")
    contract = Contract(k=KS, order="position", empty_ideal="error")
    with pytest.raises(Exception) as caught:
        score_requests(cdf, jdf, contract, run_id="oracle-agreement").select(*COMPARED).collect()
    assert type(caught.value).__name__ == "EmptyIdealError", repr(caught.value)
    assert isinstance(caught.value, EmptyIdealError)


def test_empty_ideal_error_passes_when_no_request_is_empty(data):
    from pyspark.sql import functions as F

    from ndcg_spark import Contract, score_requests

    cands, judgments = data["small"]["rows"]
    cdf, jdf = data["small"]["frames"]
    choices = dict(order="score", ties="doc_id", ideal_from="judgments", unjudged="exclude")
    everything = score_all(cands, judgments, k=KS, empty_ideal="exclude", **choices)
    empty = sorted({rid for (rid, _, _), v in everything.items() if v["empty_ideal"]})
    assert empty, "the data set should contain empty-ideal requests"
    keep_c = [c for c in cands if c["request_id"] not in set(empty)]
    keep_j = [j for j in judgments if j["request_id"] not in set(empty)]
    expected = score_all(keep_c, keep_j, k=KS, empty_ideal="error", **choices)
    c2 = cdf.where(~F.col("request_id").isin(empty))
    j2 = jdf.where(~F.col("request_id").isin(empty))
    out = score_requests(c2, j2, Contract(k=KS, empty_ideal="error", **choices), run_id="oracle-agreement")
    problems = _mismatches(out.select(*COMPARED).collect(), expected)
    assert not problems, "\n  ".join(problems[:15])
