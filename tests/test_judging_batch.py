"""judge-next's vectorised worker (ndcg_spark/judging/batch.py) against the per-request computation.

The worker computes a plan's numbers for a whole batch of requests at once; the brute-force tests
(tests/test_judging.py, tests/test_judging_spread.py) hold the plan and the swings to the oracle.
Here, on random one-list requests of every shape (ties, ``unjudged: exclude``, the ideal from the
judgments with documents shown only by another system, scales with two gains giving the same
gain), the batch's unjudged range and bound must be the ones :func:`value_range` and
:func:`settle_bound` give request by request, combination by combination (``_solve_every``),
within 1e-12; and the one-list numpy solve the combination-by-combination one.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ndcg_spark.judging import spread
from ndcg_spark.judging.batch import Setting, _List, _OneListRanges, _request
from ndcg_spark.judging.spread import Scale, _Problem

SEED = 60_3
TOL = 1e-12
SCALES = [
    [(0.0, 0.0), (1.0, 1.0), (2.0, 3.0), (3.0, 7.0)],
    [(0.0, 0.0), (1.0, 1.0)],
    [(0.0, 0.5), (1.0, 2.0), (2.0, 2.0)],
]


def _random_request(rng: random.Random):
    k = rng.choice([1, 3, 5, 10])
    grades = rng.choice(SCALES)
    scale = Scale.of(grades, k)
    xs = tuple(sorted({g for _, g in grades}))
    truth = {f"d{i}": (rng.choice(xs) if rng.random() > 0.35 else None) for i in range(20)}
    tie, from_judgments = rng.random() < 0.4, rng.random() < 0.5
    lists = []
    for system in ("A", "B"):
        m = rng.randint(1, 12)
        docs = rng.sample(sorted(truth), m)
        o1 = np.array(sorted(rng.choice([1.0, 2.0, 3.0]) for _ in range(m))) if tie else np.arange(m, dtype=float)
        lists.append(_List(system, None, docs, np.array([np.nan if truth[d] is None else truth[d] for d in docs]),
                           np.array([truth[d] is not None for d in docs]), o1))
    judged = sorted((g for g in truth.values() if g is not None), reverse=True)
    judged_ideal = np.array(judged) if from_judgments else None
    setting = Setting((("A", None),), k, "aggregate", xs, scale, rng.random() < 0.3, tie, from_judgments,
                      rng.random() < 0.5, 10.0, 20.0)
    return lists, judged_ideal, setting, {"weight": rng.choice([1.0, 3.0]), "in_mean": True, "v0": 0.5}


@pytest.fixture
def every_combination(monkeypatch):
    """value_range solving combination by combination (the path of two lists), not in numpy."""
    monkeypatch.setattr(_Problem, "_solve_one_list", _Problem._solve_every)


def test_the_batch_gives_each_request_the_range_and_bound_of_the_request_alone(every_combination):
    rng = random.Random(SEED)
    bounded = 0
    for _ in range(600):
        lists, judged_ideal, setting, row = _random_request(rng)
        (whole, bound), docs = _request("q", lists, judged_ideal, row, setting, None)
        ranges = _OneListRanges(setting.scale)
        measured, batch_docs = _request("q", lists, judged_ideal, row, setting, ranges)
        solved = ranges.solve()
        got_whole, got_bound = measured(solved) if callable(measured) else measured
        assert batch_docs == docs
        assert abs(got_whole - whole) <= TOL, (whole, got_whole)
        assert (got_bound is None) == (bound is None)
        if bound is not None:
            assert abs(got_bound - bound) <= TOL, (bound, got_bound)
            bounded += bound > 0
    assert bounded > 100  # requests whose first documents do settle something


def test_the_one_list_solve_is_the_combination_by_combination_one():
    rng = random.Random(SEED + 1)
    for _ in range(600):
        lists, judged_ideal, setting, _ = _random_request(rng)
        shown = tuple(spread.Shown(d, float(g) if j else None, w) for d, g, j, w in zip(
            lists[0].doc_ids, lists[0].gains, lists[0].judged, spread.discounts(len(lists[0].doc_ids), setting.k)))
        request = spread.RequestLists("q", (shown,), None)
        open_docs = list(request.unjudged())
        judged = {d: rng.choice(setting.scale.gains) for d in open_docs if rng.random() < 0.4}
        problem = _Problem.of(request, setting.scale, judged)
        every, at_once = problem._solve_every(setting.scale), problem._solve_one_list(setting.scale)
        assert abs(every[0] - at_once[0]) <= TOL and abs(every[1] - at_once[1]) <= TOL, (every, at_once)
