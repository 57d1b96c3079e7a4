"""The judging plan against a brute force: every grade of every unjudged document, scored by the oracle.

* **Swings** (:func:`ndcg_spark.judging_swings`): for every unjudged (request, document) and every
  system its judgment can reach, the request is scored by the plain-Python oracle (tests/oracle.py)
  once per grade of the scale with that document judged at it -- the other unjudged as the contract
  treats them, the grade in the ideal of every system of the request under ``ideal_from:
  judgments`` -- and the lowest and highest NDCG at every K must be the library's. Every gain kind
  x ideal source x unjudged policy x order (position; score with tie averages): a core in the fast
  lane, the rest of the grid marked ``slow``/``grid``.
* **Swings on a target** (:func:`ndcg_spark.judge_next`): each planned document's swing on one
  system's mean and on two rankers' delta, macro and weighted, recomputed from the oracle's
  per-request NDCGs with the mean's denominators taken afresh (a request can gain or lose an ideal).
* **The spread**: ``spread_now``, the mean of the requests' unjudged ranges (every grading of
  every unjudged document the target reaches, scored by the oracle: requests of at most 4), and at
  each row the spread once the rows so far are judged, at its worst over every grading of them.
* **The tie rule**: the plan is sorted by swing, then request id, then doc id, one row per document.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict

import pytest
from pyspark.sql import functions as F

from ndcg_spark import Attributes, Contract, JudgingSpec, judge_next, judging_swings
from ndcg_spark.errors import ContractError

try:
    from tests import oracle
    from tests.test_oracle_agreement import generate
except ImportError:  # pragma: no cover - run from tests/
    import oracle  # type: ignore[no-redef]
    from test_oracle_agreement import generate  # type: ignore[no-redef]

SEED = 51_0611
N_REQUESTS = 120
KS = [1, 3, 10]
MAX_GRADE = 3.0
TABLE = {0: 0.0, 0.5: 0.25, 1: 1.0, 1.5: 2.0, 2: 3.0, 2.5: 4.5, 3: 7.5}
GAINS = {"exponential": "exponential", "linear": "linear", "binary": "binary", "table": {"table": TABLE}}
TOL = 1e-9
CORE = [
    ("exponential", "candidates", "separate", "position"),
    ("linear", "judgments", "exclude", "score"),
    ("binary", "judgments", "zero", "position"),
    ("table", "candidates", "exclude", "score"),
    ("exponential", "judgments", "separate", "score"),
    ("table", "judgments", "exclude", "position"),
]
GRID = [c for c in itertools.product(GAINS, ["candidates", "judgments"], ["zero", "exclude", "separate"],
                                      ["position", "score"]) if c not in CORE]


def _choices(gain: str, ideal: str, unjudged: str, order: str, empty: str = "exclude") -> dict:
    return dict(gain=GAINS[gain], ideal_from=ideal, unjudged=unjudged, order=order,
                ties="average" if order == "score" else "doc_id", max_grade=MAX_GRADE, empty_ideal=empty)


@pytest.fixture(scope="module")
def data(spark):
    cands, judgs = generate(SEED, N_REQUESTS)
    cdf = spark.createDataFrame([(r["request_id"], r["system"], r["doc_id"], r["position"], r["score"]) for r in cands],
                                "request_id string, system string, doc_id string, position int, score double").cache()
    jdf = spark.createDataFrame([(r["request_id"], r["doc_id"], r["grade"]) for r in judgs],
                                "request_id string, doc_id string, grade double").cache()
    rng = random.Random(SEED)
    weights = {r["request_id"]: rng.choice([0.5, 1.0, 3.0, 10.0]) for r in cands}
    wdf = spark.createDataFrame(sorted(weights.items()), "request_id string, weight double").cache()
    yield {"prepared": oracle.prepare(cands, judgs), "cdf": cdf, "jdf": jdf, "wdf": wdf, "weights": weights}
    for df in (cdf, jdf, wdf):
        df.unpersist()


def _scale(choices: dict) -> list[float]:
    return sorted(float(g) for g in TABLE) if isinstance(choices["gain"], dict) else [0.0, 1.0, 2.0, 3.0]


def _graded(prepared, request_id: str, system: str, doc: str, grade: float | None, choices: dict) -> dict:
    """The oracle's scores of one list with ``doc`` judged at ``grade`` (None: as it is)."""
    groups, judged = prepared
    grades = dict(judged.get(request_id, {}))
    if grade is not None:
        grades[doc] = grade
    cands = [oracle.Candidate(c.doc_id, c.position, c.score, grades.get(c.doc_id)) for c in groups[(request_id, system)]]
    return oracle.score_request(cands, k=KS, judged_grades=list(grades.values()), bounds=False, **{
        name: value for name, value in choices.items() if name not in ("max_grade", "k")})


def _reachable(prepared, request_id: str, system: str, ideal: str) -> list[str]:
    """The documents whose judgment can move this list: its unjudged, or the request's under ``judgments``."""
    groups, judged = prepared
    lists = [cands for (r, _), cands in groups.items() if r == request_id] if ideal == "judgments" else [
        groups[(request_id, system)]]
    return sorted({c.doc_id for cands in lists for c in cands if c.grade is None})


def expected_swings(prepared, choices: dict) -> dict:
    groups, _ = prepared
    out = {}
    for request_id, system in groups:
        for doc in _reachable(prepared, request_id, system, choices["ideal_from"]):
            graded = [_graded(prepared, request_id, system, doc, g, choices) for g in _scale(choices)]
            for k in KS:
                values = [(s[k]["ndcg"] if not s[k]["empty_ideal"] else 0.0) for s in graded]
                out[(system, request_id, doc, k)] = (min(values), max(values))
    return out


def _check_swings(data, case):
    choices = _choices(*case)
    contract = Contract(k=KS, **choices)
    got = {(r.system, r.request_id, r.doc_id, r.k): r
           for r in judging_swings(data["cdf"], data["jdf"], contract, validate=False).collect()}
    want = expected_swings(data["prepared"], choices)
    assert set(got) == set(want), (len(set(got) - set(want)), len(set(want) - set(got)))
    problems = [f"{key}: {(r.ndcg_min, r.ndcg_max)} != {want[key]}" for key, r in got.items()
                if not (math.isclose(r.ndcg_min, want[key][0], abs_tol=TOL) and math.isclose(r.ndcg_max, want[key][1], abs_tol=TOL)
                        and math.isclose(r.swing, want[key][1] - want[key][0], abs_tol=TOL))]
    assert not problems, f"{len(problems)} differences, e.g. {problems[:3]}"
    assert sum(1 for r in got.values() if r.swing > 1e-6) > 200  # documents that do move their request


@pytest.mark.parametrize("case", CORE, ids=["-".join(c) for c in CORE])
def test_swings_agree_with_every_grade_scored_by_the_oracle(data, case):
    _check_swings(data, case)


@pytest.mark.slow
@pytest.mark.grid
@pytest.mark.parametrize("case", GRID, ids=["-".join(c) for c in GRID])
def test_swings_agree_with_the_oracle_over_the_whole_grid(data, case):
    _check_swings(data, case)


# ------------------------------------------------------------------------------ a target's swing


def _mean(values: dict, weights: dict) -> float | None:
    counted = [(weights[r], v) for r, v in values.items() if v is not None]
    total = sum(w for w, _ in counted)
    return sum(w * v for w, v in counted) / total if total > 0 else None


def _target_values(prepared, choices, sides, overrides=None):
    """Each request's term of the target (None: not in the mean), from the oracle."""
    groups, _ = prepared
    overrides = overrides or {}
    out = {}
    requests = {r for r, s in groups if s == sides[0]}
    if len(sides) == 2:
        requests &= {r for r, s in groups if s == sides[1]}
    for request_id in requests:
        scored = [overrides.get((request_id, s)) or _graded(prepared, request_id, s, "", None, choices) for s in sides]
        k = choices["k"]
        if len(sides) == 1:
            out[request_id] = scored[0][k]["ndcg"]
        elif not scored[0][k]["empty_ideal"] and not scored[1][k]["empty_ideal"]:
            out[request_id] = scored[0][k]["ndcg"] - scored[1][k]["ndcg"]
        else:
            out[request_id] = None
    return out


def expected_target_swing(prepared, choices, sides, weights, request_id, doc, now):
    means = []
    for grade in _scale(choices):
        graded = {(request_id, s): _graded(prepared, request_id, s, doc, grade, choices) for s in sides}
        values = dict(now)
        terms = [graded[(request_id, s)][choices["k"]] for s in sides]
        if len(sides) == 1:
            values[request_id] = terms[0]["ndcg"]
        else:
            values[request_id] = (terms[0]["ndcg"] - terms[1]["ndcg"]
                                  if not terms[0]["empty_ideal"] and not terms[1]["empty_ideal"] else None)
        means.append(_mean(values, weights))
    means = [m for m in means if m is not None]
    return max(means) - min(means)


def _open_docs(prepared, request_id: str, sides, ideal: str) -> list[str]:
    """The unjudged documents whose grades can move the target: its sides' (any system's under ``judgments``)."""
    groups, _ = prepared
    lists = [c for (r, s), c in groups.items() if r == request_id and (ideal == "judgments" or s in sides)]
    return sorted({c.doc_id for cands in lists for c in cands if c.grade is None})


def _value(prepared, choices, sides, request_id, graded: dict) -> float:
    """The request's term with ``graded`` judged: NDCG (0 without an ideal), or the difference (oracle)."""
    groups, judged = prepared
    grades = {**judged.get(request_id, {}), **graded}
    total = 0.0
    for sign, system in zip((1, -1), sides):
        cands = [oracle.Candidate(c.doc_id, c.position, c.score, grades.get(c.doc_id))
                 for c in groups[(request_id, system)]]
        s = oracle.score_request(cands, k=[choices["k"]], judged_grades=list(grades.values()), bounds=False, **{
            n: v for n, v in choices.items() if n not in ("k", "max_grade")})[choices["k"]]
        total += sign * (s["ndcg"] or 0.0)
    return total


def _every_grading(prepared, choices, sides, request_id) -> tuple[list[str], dict[tuple, float]]:
    docs = _open_docs(prepared, request_id, sides, choices["ideal_from"])
    return docs, {combo: _value(prepared, choices, sides, request_id, dict(zip(docs, combo)))
                  for combo in itertools.product(_scale(choices), repeat=len(docs))}


def _worst(docs, values, planned) -> float:
    at = [docs.index(d) for d in planned]
    ranges: dict[tuple, list[float]] = defaultdict(list)
    for combo, value in values.items():
        ranges[tuple(combo[i] for i in at)].append(value)
    return max(max(v) - min(v) for v in ranges.values())


TARGETS = [
    (("exponential", "candidates", "separate", "position"), "aggregate", "macro"),
    (("linear", "judgments", "exclude", "score"), "compare", "weighted"),
    (("table", "judgments", "zero", "position"), "aggregate", "weighted"),
    (("binary", "candidates", "exclude", "position"), "compare", "macro"),
]
#: the most unjudged documents a request of the plan test may have (every grading is enumerated)
MAX_OPEN = 4


@pytest.mark.parametrize("case, kind, mean", TARGETS, ids=[f"{t[1]}-{t[2]}-{t[0][0]}" for t in TARGETS])
def test_the_plan_takes_the_steps_settling_most_per_judgment_and_states_the_worst_remaining_spread(data, case, kind, mean):
    choices = _choices(*case[:4], empty="zero" if case[2] == "zero" else "exclude")
    k = 3
    contract = Contract(k=KS, **choices)
    sides = ("A",) if kind == "aggregate" else ("B", "A")
    prepared = data["prepared"]
    small = sorted({r for r, _ in prepared[0]
                    if len(_open_docs(prepared, r, sides, choices["ideal_from"])) <= MAX_OPEN})
    keep = F.col("request_id").isin(small)
    prepared = ({key: c for key, c in prepared[0].items() if key[0] in small}, prepared[1])
    attributes = Attributes(table=data["wdf"], weight="weight")
    spec = JudgingSpec(target=kind, budget=40, k=k, mean=mean, system="A" if kind == "aggregate" else None)
    rankers = {"candidate": "B", "baseline": "A"} if kind == "compare" else {}
    plan = judge_next(data["cdf"].filter(keep), data["jdf"].filter(keep), contract, spec, attributes=attributes,
                      validate=False, **rankers).orderBy("plan_rank").collect()
    choices = {**choices, "k": k}
    weights = data["weights"] if mean == "weighted" else defaultdict(lambda: 1.0)
    now = _target_values(prepared, choices, sides)
    assert 10 <= len(plan) <= 40 and [r.plan_rank for r in plan] == list(range(1, len(plan) + 1))
    assert len({(r.request_id, r.doc_id) for r in plan}) == len(plan)
    for row in plan:
        want = expected_target_swing(prepared, choices, sides, weights, row.request_id, row.doc_id, now)
        assert math.isclose(row.swing, want, abs_tol=TOL), (row.request_id, row.doc_id, row.swing, want)

    gradings = {r: _every_grading(prepared, choices, sides, r) for r in now}
    ranges = {r: max(v.values()) - min(v.values()) for r, (_, v) in gradings.items()}
    spread_total = sum(weights[r] * d for r, d in ranges.items())
    spread_count = sum(weights[r] for r in ranges)
    assert math.isclose(plan[0].spread_now, spread_total / spread_count, abs_tol=TOL)
    # each request's documents in swing order, and the most each prefix can leave (every grading)
    in_order, curve = {}, {}
    for r, (docs, values) in gradings.items():
        swing = {d: round(expected_target_swing(prepared, choices, sides, weights, r, d, now), 12) for d in docs}
        in_order[r] = sorted(docs, key=lambda d: (-swing[d], d))
        curve[r] = [ranges[r]] + [_worst(docs, values, in_order[r][:j]) for j in range(1, len(docs) + 1)]
    assert [(r.request_id, r.doc_id) for r in plan] == _greedy(in_order, curve, weights, len(plan))
    planned: dict[str, list[str]] = defaultdict(list)
    worst: dict[str, float] = {}
    for row in plan:
        planned[row.request_id].append(row.doc_id)
        docs, values = gradings[row.request_id]
        worst[row.request_id] = _worst(docs, values, planned[row.request_id])
        total = spread_total + sum(weights[r] * (worst[r] - ranges[r]) for r in worst)
        assert math.isclose(row.spread_remaining, total / spread_count, abs_tol=TOL), row.plan_rank
    assert plan[-1].spread_remaining < plan[0].spread_now


def _tied(a: float, b: float) -> bool:
    """Two rates equal but for the doubles' rounding (the rule's ties: relative 1e-9)."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _greedy(in_order, curve, weights, n) -> list[tuple[str, str]]:
    """The plan's order by its rule, step by step: the step (from where a request stands to a later
    prefix) that settles the most per document, ties to the smaller request id, then the shorter step
    (rates equal but for rounding are tied)."""
    at = dict.fromkeys(curve, 0)
    out: list[tuple[str, str]] = []
    while len(out) < n:
        best = None
        for r in sorted(curve):
            j = at[r]
            for end in range(j + 1, len(curve[r])):
                rate = weights[r] * (curve[r][j] - curve[r][end]) / (end - j)
                if rate > 0 and (best is None or (rate > best[0] and not _tied(rate, best[0]))):
                    best = (rate, r, end)
        if best is None:
            break
        _, r, end = best
        out += [(r, d) for d in in_order[r][at[r]:end]]
        at[r] = end
    return out[:n]


def test_a_plan_needs_the_judging_scale(data):
    with pytest.raises(ContractError, match="contract.max_grade"):
        judge_next(data["cdf"], data["jdf"], Contract(k=[3]), validate=False)
    with pytest.raises(ContractError, match="contract.max_grade"):
        judging_swings(data["cdf"], data["jdf"], Contract(k=[3]), validate=False)


def test_a_comparison_plan_names_its_rankers(data):
    with pytest.raises(ContractError, match="compare.baseline"):
        judge_next(data["cdf"], data["jdf"], Contract(k=[3], max_grade=3), JudgingSpec(target="compare"),
                   candidate="B", validate=False)


def test_a_request_the_system_returned_nothing_for_is_no_part_of_the_target(spark):
    from ndcg_spark.judging.target import Target, target_rows, target_sums

    schema = ("system string, pool_version string, k int, request_id string, weight double, ndcg double, "
              "empty_ideal boolean, ndcg_unjudged_low double, ndcg_unjudged_high double, no_results boolean")
    per_request = spark.createDataFrame([("hybrid", "p", 10, "q1", 1.0, 0.5, False, 0.4, 0.6, False),
                                         ("hybrid", "p", 10, "q2", 1.0, None, True, None, None, True)], schema)
    target = Target("aggregate", 10, "macro", (("hybrid", "p"),))
    rows = target_rows(per_request, target)
    assert [r.request_id for r in rows.collect()] == ["q1"]
    assert target_sums(rows, target).count == 1.0
    older = target_rows(per_request.drop("no_results"), target)  # a table without the flag: q2 is a request of it
    assert sorted(r.request_id for r in older.collect()) == ["q1", "q2"] and target_sums(older, target).count == 1.0


def test_rates_equal_but_for_rounding_are_tied_and_go_by_request_id():
    """Mathematically equal rates from different sums (3 x 0.1 is 0.30000000000000004 in doubles):
    the request-id rule decides, not the last bit; within a request the shorter step."""
    from ndcg_spark.judging.order import Curve, plan_order

    first = Curve("q1", 1.0, ("a",), {0: 0.3, 1: 0.0})
    second = Curve("q2", 3.0, ("b",), {0: 0.1, 1: 0.0})
    assert 3.0 * 0.1 > 0.3  # the rounding that used to put q2 first
    assert [c.request_id for c, _, _ in plan_order([second, first], budget=2)] == ["q1", "q2"]
    # within a request: two steps of equal rate (0.2 per document), the shorter first
    curve = Curve("q3", 1.0, ("c", "d"), {0: 0.6, 1: 0.4, 2: 0.2})
    assert curve.step(0) == (0.19999999999999996, 1)
    # on random curves, every rate a multiple of 1/7 (many mathematically equal, a few bits apart): the rule's order
    rng = random.Random(7)
    curves, in_order, left, weights = [], {}, {}, {}
    for i in range(40):
        n = rng.randint(1, 3)
        weight = rng.choice([1.0, 3.0, 0.5])
        drops = sorted((rng.randint(1, 6) / 7.0 / weight for _ in range(n)), reverse=True)
        points = [sum(drops)]
        for d in drops:
            points.append(points[-1] - d)
        rid = f"r{i:02d}"
        docs = tuple(f"{rid}-{j}" for j in range(n))
        curves.append(Curve(rid, weight, docs, dict(enumerate(points))))
        in_order[rid], left[rid], weights[rid] = list(docs), points, weight
    got = [(c.request_id, doc) for c, doc, _ in plan_order(curves, budget=60)]
    assert got == _greedy(in_order, left, weights, 60)
    equal_rates = Counter(round(weights[r] * (left[r][0] - left[r][1]) * 7, 6) for r in left)
    assert max(equal_rates.values()) >= 5  # the ties the rule decides are there


def test_a_request_the_system_returned_nothing_for_counts_under_no_results_zero(spark):
    """Under ``no_results: zero`` stage 2 counts a request the system returned nothing for as 0: the
    plan's target is that mean, so its spread and every swing are the stage-2 mean's, brute-forced
    over every grading of the unjudged documents (the oracle scores the answered request)."""
    from ndcg_spark import AggregateSpec, aggregate, score_requests

    cands = spark.createDataFrame([("q1", "a", 1), ("q1", "b", 2), ("q1", "c", 3)],
                                  "request_id string, doc_id string, position int")
    judged_rows = [("q1", "a", 1.0), ("q2", "z", 2.0)]
    judged = spark.createDataFrame(judged_rows, "request_id string, doc_id string, grade double")
    contract = Contract(k=[3], max_grade=3, no_results="zero")
    stage2 = aggregate(score_requests(cands, judged, contract), AggregateSpec(replicates=0))
    macro = stage2.filter("metric = 'ndcg' AND slice_dimension = 'overall'").first()
    assert (macro.n_requests, macro.n_eligible, macro.n_no_results) == (2, 2, 1)

    def stage2_mean(grades: dict) -> float:  # q2 counts 0; q1 scored by the oracle with these grades
        shown = [oracle.Candidate(d, p, None, {"a": 1.0, **grades}.get(d)) for d, p in (("a", 1), ("b", 2), ("c", 3))]
        q1 = oracle.score_request(shown, k=[3], bounds=False, unjudged="separate")[3]["ndcg"] or 0.0
        return (q1 + 0.0) / 2

    assert math.isclose(macro.macro, stage2_mean({}), abs_tol=TOL)
    every = [stage2_mean(dict(zip("bc", combo))) for combo in itertools.product([0.0, 1.0, 2.0, 3.0], repeat=2)]
    plan = judge_next(cands, judged, contract, JudgingSpec(budget=2, k=3), system="default").collect()
    assert math.isclose(plan[0].spread_now, max(every) - min(every), abs_tol=TOL)  # q2's range is 0, in the mean
    for row in plan:
        alone = [stage2_mean({row.doc_id: g}) for g in (0.0, 1.0, 2.0, 3.0)]
        assert math.isclose(row.swing, max(alone) - min(alone), abs_tol=TOL), row.doc_id
    exclude = judge_next(cands, judged, Contract(k=[3], max_grade=3), JudgingSpec(budget=2, k=3),
                         system="default").collect()
    assert math.isclose(exclude[0].spread_now, 2 * plan[0].spread_now, abs_tol=TOL)  # q2 no part of that mean
