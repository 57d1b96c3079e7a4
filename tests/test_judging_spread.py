"""A request's unjudged range, and what a judging leaves of it, against every grading scored by the oracle.

:mod:`ndcg_spark.judging.spread` states a request's unjudged range -- the smallest and largest
value of its target (one ranker's NDCG, or two rankers' difference) over every grading of its
unjudged documents -- and, before any judge has looked, the largest range a set of judgments can
leave (:func:`worst_case`), found over multisets of gains and two rearrangements instead of every
grading. Here every grading of every unjudged document is enumerated and each one scored by the
plain-Python oracle (tests/oracle.py, every document judged): the stated ends must be the smallest
and largest of them, the stated worst case the largest range over the planned documents'
gradings, and the grades it names must leave exactly it. Random requests of a seed of their own:
one ranker's mean and two rankers' delta, every gain kind (a table whose lowest grade has a
positive gain, and that is not monotone), both ideal sources (under ``judgments``, unjudged
documents no list shows enter the ideals too), position order and score order with tie averages,
cutoffs below the lists' lengths. No Spark.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ndcg_spark.config.gain import GainMapping
from ndcg_spark.judging.spread import RequestLists, Scale, Shown, discounts, value_range, worst_case

try:
    from tests import oracle
except ImportError:  # pragma: no cover - run from tests/
    import oracle  # type: ignore[no-redef]

SEED = 51_2026
MAX_GRADE = 3.0
#: a table whose lowest grade has a gain (the ideal then counts it) and that is not monotone
TABLE = {0: 0.5, 1: 0.0, 2: 4.0, 3: 2.0}
GAINS = {"exponential": "exponential", "linear": "linear", "binary": "binary", "table": {"table": TABLE}}
CASES = list(itertools.product(GAINS, ["candidates", "judgments"], ["position", "score"], [1, 2]))
TOL = 1e-9


def random_request(rng: random.Random, n_lists: int) -> dict:
    """Up to 6 documents of one request; each list shows some of them (in a random order or by a
    score with ties); some documents are judged, some of them shown by no list."""
    docs = [f"d{i}" for i in range(rng.randint(2, 6))]
    grades = {d: float(rng.randint(0, 3)) for d in docs if rng.random() < 0.4}
    lists = []
    for _ in range(n_lists):
        shown = rng.sample(docs, rng.randint(1, len(docs)))
        scores = {d: float(rng.randint(1, 3)) for d in shown}
        lists.append([(d, p + 1, scores[d]) for p, d in enumerate(shown)])
    return {"docs": docs, "grades": grades, "lists": lists, "k": rng.choice([1, 2, 3, 5])}


def open_docs(request: dict, ideal_from: str) -> list[str]:
    """The unjudged documents whose grade can move the target: shown by a list, or any under ``judgments``."""
    shown = {d for s in request["lists"] for d, _, _ in s}
    return [d for d in request["docs"] if d not in request["grades"] and (d in shown or ideal_from == "judgments")]


def lists_of(request: dict, gain: GainMapping, ideal_from: str, order: str) -> RequestLists:
    """The request as :mod:`~ndcg_spark.judging.spread` reads it (what the judging plan collects)."""
    out = []
    for shown in request["lists"]:
        ranked = _displayed(shown, order)
        weights = discounts(len(ranked), request["k"], [s for _, _, s in ranked] if order == "score" else None)
        out.append(tuple(Shown(d, None if d not in request["grades"] else gain.value(request["grades"][d]), w)
                         for (d, _, _), w in zip(ranked, weights)))
    if ideal_from == "candidates":
        return RequestLists("q", tuple(out), None)
    shown = {d for s in request["lists"] for d, _, _ in s}
    judged = tuple(gain.value(g) for g in request["grades"].values())
    return RequestLists("q", tuple(out), judged, tuple(d for d in open_docs(request, ideal_from) if d not in shown))


def _displayed(shown, order):
    return sorted(shown, key=lambda x: x[1]) if order == "position" else sorted(shown, key=lambda x: (-x[2], x[0]))


def oracle_value(request: dict, gain, ideal_from: str, order: str, graded: dict[str, float]) -> float:
    """The target's value with every document of ``graded`` judged: NDCG (0 without an ideal), or the difference."""
    grades = {**request["grades"], **graded}
    total = 0.0
    for sign, shown in zip((1, -1), request["lists"]):
        candidates = [oracle.Candidate(d, position=p, score=s, grade=grades.get(d)) for d, p, s in shown]
        k = request["k"]
        scored = oracle.score_request(candidates, k=[k], gain=gain, order=order, bounds=False,
                                      ties="average" if order == "score" else "doc_id", ideal_from=ideal_from,
                                      judged_grades=list(grades.values()))[k]
        total += sign * (scored["ndcg"] or 0.0)
    return total


def every_grading(request: dict, gain, ideal_from: str, order: str, grades: list[float]) -> dict[tuple, float]:
    docs = open_docs(request, ideal_from)
    return {combo: oracle_value(request, gain, ideal_from, order, dict(zip(docs, combo)))
            for combo in itertools.product(grades, repeat=len(docs))}


def oracle_worst(request, ideal_from, values: dict[tuple, float], planned: list[str]) -> tuple[float, float]:
    """The largest and smallest range left over every grading of ``planned``: brute force."""
    docs = open_docs(request, ideal_from)
    at = [docs.index(d) for d in planned]
    ranges: dict[tuple, list[float]] = {}
    for combo, value in values.items():
        ranges.setdefault(tuple(combo[i] for i in at), []).append(value)
    left = [max(v) - min(v) for v in ranges.values()]
    return max(left), min(left)


@pytest.mark.parametrize("gain_name, ideal_from, order, n_lists", CASES)
def test_the_stated_range_and_worst_case_are_every_gradings(gain_name, ideal_from, order, n_lists):
    gain_spec = GAINS[gain_name]
    mapping = GainMapping.parse(gain_spec)
    rng = random.Random(f"{SEED}-{gain_name}-{ideal_from}-{order}-{n_lists}")
    scale_grades = mapping.scale(MAX_GRADE)
    checked = moved = 0
    while checked < 25:
        request = random_request(rng, n_lists)
        docs = open_docs(request, ideal_from)
        if not docs:
            continue
        scale = Scale.of([(g, mapping.value(g)) for g in scale_grades], request["k"])
        lists = lists_of(request, mapping, ideal_from, order)
        values = every_grading(request, gain_spec, ideal_from, order, scale_grades)
        low, high = value_range(lists, scale)
        assert math.isclose(low, min(values.values()), abs_tol=TOL), request
        assert math.isclose(high, max(values.values()), abs_tol=TOL), request
        planned = rng.sample(docs, rng.randint(1, min(3, len(docs))))
        stated, grades, exact = worst_case(lists, scale, planned)
        most, least = oracle_worst(request, ideal_from, values, planned)
        assert math.isclose(stated, most, abs_tol=TOL), (request, planned)
        assert stated <= high - low + TOL  # judging never widens the range
        assert exact == (most - least <= 1e-12)
        assert set(grades) == set(planned)
        rest = [d for d in docs if d not in planned]
        left = [v for combo, v in values.items()
                if all(combo[docs.index(d)] == grades[d] for d in planned)]
        assert math.isclose(max(left) - min(left), stated, abs_tol=TOL)  # the grades it names leave it
        if not rest:
            assert stated == 0.0 and exact
        moved += most - least > 1e-9
        checked += 1
    assert moved >= 3  # the gradings mattered: the worst case was not everyone's
