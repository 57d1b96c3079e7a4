"""What a judging leaves of a request's unjudged spread, against every grading, scored by the oracle.

:mod:`ndcg_spark.judging.spread` states, before any judge has looked, the largest what-if distance
a request can have once some of its unjudged documents are judged (:func:`worst_case`), found over
multisets of gains and two rearrangements instead of every grading. Here every grading of every
planned document is enumerated and each one scored by the plain-Python oracle (tests/oracle.py:
its ``ndcg_unjudged_low`` / ``_high``, rescored from the grades): the stated maximum must be the
largest of them, and the grades it names must leave exactly it. Random requests of a seed of their
own: one ranker's mean and two rankers' delta, every gain kind (a table whose lowest grade has a
positive gain, and that is not monotone), both ideal sources, position order and score order with
tie averages. No Spark.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ndcg_spark.config.gain import GainMapping
from ndcg_spark.judging.spread import RequestLists, Scale, Shown, discounts, settled, what_if_distance, worst_case

try:
    from tests import oracle
except ImportError:  # pragma: no cover - run from tests/
    import oracle  # type: ignore[no-redef]

SEED = 51_2026
MAX_GRADE = 3.0
#: a table whose lowest grade has a gain (the low what-if then adds to the ideal) and that is not monotone
TABLE = {0: 0.5, 1: 0.0, 2: 4.0, 3: 2.0}
GAINS = {"exponential": "exponential", "linear": "linear", "binary": "binary", "table": {"table": TABLE}}
CASES = list(itertools.product(GAINS, ["candidates", "judgments"], ["position", "score"], [1, 2]))


def random_request(rng: random.Random, n_lists: int) -> dict:
    """Up to 7 documents of one request; each list shows some of them (in a random order or by a
    score with ties); some documents are judged, some of them shown by no list."""
    docs = [f"d{i}" for i in range(rng.randint(2, 7))]
    grades = {d: float(rng.randint(0, 3)) for d in docs if rng.random() < 0.45}
    lists = []
    for _ in range(n_lists):
        shown = rng.sample(docs, rng.randint(1, len(docs)))
        scores = {d: float(rng.randint(1, 3)) for d in shown}
        lists.append([(d, p + 1, scores[d]) for p, d in enumerate(shown)])
    return {"docs": docs, "grades": grades, "lists": lists, "k": rng.choice([1, 2, 3, 5])}


def lists_of(request: dict, gain: GainMapping, ideal_from: str, order: str) -> RequestLists:
    """The request as :mod:`~ndcg_spark.judging.spread` reads it (what the judging plan collects)."""
    out = []
    for shown in request["lists"]:
        ranked = _displayed(shown, order)
        weights = discounts(len(ranked), request["k"], [s for _, _, s in ranked] if order == "score" else None)
        out.append(tuple(Shown(d, None if d not in request["grades"] else gain.value(request["grades"][d]), w)
                         for (d, _, _), w in zip(ranked, weights)))
    judged = None if ideal_from == "candidates" else tuple(gain.value(g) for g in request["grades"].values())
    return RequestLists("q", tuple(out), judged)


def _displayed(shown, order):
    return sorted(shown, key=lambda x: x[1]) if order == "position" else sorted(shown, key=lambda x: (-x[2], x[0]))


def oracle_distance(request: dict, gain, ideal_from: str, order: str, judged: dict[str, float]) -> float:
    """The request's what-if distance with ``judged`` added to its judgments, from the oracle's what-ifs."""
    grades = {**request["grades"], **judged}
    total = 0.0
    for sign, shown in zip((1, -1), request["lists"]):
        candidates = [oracle.Candidate(d, position=p, score=s, grade=grades.get(d)) for d, p, s in shown]
        k = request["k"]
        scored = oracle.score_request(candidates, k=[k], gain=gain, order=order,
                                      ties="average" if order == "score" else "doc_id", ideal_from=ideal_from,
                                      judged_grades=list(grades.values()), max_grade=MAX_GRADE)[k]
        total += sign * ((scored["ndcg_unjudged_high"] or 0.0) - (scored["ndcg_unjudged_low"] or 0.0))
    return abs(total)


def plannable(request: dict, ideal_from: str) -> list[str]:
    """The documents a plan may propose: unjudged, and shown by a list (any list under ``judgments``)."""
    shown = {d for s in request["lists"] for d, _, _ in s}
    return [d for d in request["docs"] if d not in request["grades"] and d in shown]


@pytest.mark.parametrize("gain_name, ideal_from, order, n_lists", CASES)
def test_the_stated_worst_case_is_the_largest_distance_of_every_grading(gain_name, ideal_from, order, n_lists):
    gain_spec = GAINS[gain_name]
    mapping = GainMapping.parse(gain_spec)
    rng = random.Random(f"{SEED}-{gain_name}-{ideal_from}-{order}-{n_lists}")
    scale_grades = mapping.scale(MAX_GRADE)
    checked = moved = 0
    while checked < 60:
        request = random_request(rng, n_lists)
        candidates = plannable(request, ideal_from)
        if not candidates:
            continue
        scale = Scale.of([(g, mapping.value(g)) for g in scale_grades], request["k"])
        lists = lists_of(request, mapping, ideal_from, order)
        now = oracle_distance(request, gain_spec, ideal_from, order, {})
        assert math.isclose(what_if_distance(lists, scale, {}), now, rel_tol=1e-9, abs_tol=1e-12)
        planned = rng.sample(candidates, rng.randint(1, min(4, len(candidates))))
        every = [oracle_distance(request, gain_spec, ideal_from, order, dict(zip(planned, grading)))
                 for grading in itertools.product(scale_grades, repeat=len(planned))]
        stated, grades = worst_case(lists, scale, planned)
        assert math.isclose(stated, max(every), rel_tol=1e-9, abs_tol=1e-12), (request, planned)
        assert set(grades) == set(planned)
        assert math.isclose(oracle_distance(request, gain_spec, ideal_from, order, grades), stated,
                            rel_tol=1e-9, abs_tol=1e-12)
        if settled(lists, planned):  # then every grading leaves the same distance
            assert max(every) - min(every) <= 1e-12
        moved += max(every) - min(every) > 1e-9
        checked += 1
    assert moved >= 5  # the gradings mattered: the maximum was not trivially everyone's
