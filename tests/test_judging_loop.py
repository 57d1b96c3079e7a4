"""The loop closes: the plan's documents judged, fed back as judgments, and the night scored again.

A plan states, at each row, the target's unjudged spread that remains once its documents so far
are judged -- at its worst over every grading of them (docs/judging.md says why no single number
can be met by every grading). Here the sample night (the embedded generator, conf/local.yaml's
contract) is planned, the planned documents get grades from a known generator (seeded, the scale's
grades at the sample's own proportions), the grades are added to the judgments and the night is
scored again by ``score_requests``; the re-run's spread (:func:`target_spread`:
the mean of its requests' unjudged ranges, from its per-request table and its lists) must

* lie at or below the plan's ``spread_remaining`` at that row, for every prefix tried;
* equal it when every planned document gets its ``worst_case_grade``;
* equal it, whatever the grades, at a row whose ``remaining_exact`` says so -- here the last row
  of a plan that judges every unjudged document the target reaches: 0.
"""

from __future__ import annotations

import math
import random

import pytest

from ndcg_spark import Attributes, Contract, JudgingSpec, judge_next, score_requests
from ndcg_spark.config.compare_spec import Side
from ndcg_spark.judging.lists import request_lists
from ndcg_spark.judging.spread import Scale
from ndcg_spark.judging.swings import scale_of, tie_aware
from ndcg_spark.judging.target import Spread, Target, request_ranges, target_rows, target_sums
from ndcg_spark.sample.generate import generate
from ndcg_spark.scoring.score import scoring_rows

ROOT_CONTRACT = "conf/local.yaml"
SEED = 51
#: the known generator: the scale's grades at the sample's proportions of judged grades
GRADES, GRADE_WEIGHTS = [0.0, 1.0, 2.0, 3.0], [62, 19, 11, 8]
TOL = 1e-9


@pytest.fixture(scope="module")
def night(spark):
    from pathlib import Path

    sample = generate(spark, n_requests=240, seed=SEED)
    frames = [sample.candidates.cache(), sample.judgments.cache(), sample.attributes.cache()]
    contract = Contract.from_yaml(Path(__file__).resolve().parent.parent / ROOT_CONTRACT)
    attributes = Attributes(table=frames[2], weight="weight", slices=("equipment_rarity",))
    yield {"candidates": frames[0], "judgments": frames[1], "attributes": attributes, "contract": contract}
    for df in frames:
        df.unpersist()


def rerun_spread(spark, night, plan_rows, grades: dict, target: Target) -> float:
    """The night scored again with ``grades`` ((request, doc) -> grade) added to its judgments."""
    extra = spark.createDataFrame([(r, d, float(g)) for (r, d), g in grades.items()],
                                  "request_id string, doc_id string, grade double")
    judged = night["judgments"].unionByName(extra)
    contract = night["contract"].resolve(night["candidates"].columns)
    per_request = score_requests(night["candidates"], judged, contract, attributes=night["attributes"],
                                 validate=False)
    lists = request_lists(scoring_rows(night["candidates"], judged, contract, None, None, integer_ids=False),
                          judged, contract)
    return target_spread(per_request, lists, target, Scale.of(scale_of(contract), target.k), tie_aware(contract))


def target_spread(per_request, lists, target: Target, scale: Scale, tie_aware: bool, scores_no_results: bool = False) -> float:
    """The target's unjudged spread: the mean of its requests' unjudged ranges (weighted like the
    target), from the night's per-request table and its lists. What a plan's ``spread_remaining`` is
    a statement about."""
    rows = target_rows(per_request, target, scores_no_results)
    target_sums(rows, target)  # the weights checked
    return Spread.of([r.asDict() for r in request_ranges(rows, lists, target, scale, tie_aware).collect()]).value


def drawn(plan_rows, seed: int) -> dict:
    rng = random.Random(seed)
    return {(r.request_id, r.doc_id): rng.choices(GRADES, GRADE_WEIGHTS)[0] for r in plan_rows}


def target_of(spark, night, plan_rows) -> Target:
    first = plan_rows[0]
    per_request = score_requests(night["candidates"], night["judgments"], night["contract"],
                                 attributes=night["attributes"], validate=False)
    return Target.resolve(per_request, first.target, first.k, first.mean, tuple(Side(s) for s in first.systems))


def test_judged_as_planned_the_rerun_spread_is_within_the_plan_and_meets_its_worst_case(spark, night):
    spec = JudgingSpec(target="aggregate", budget=80, mean="weighted", system="hybrid")
    plan = judge_next(night["candidates"], night["judgments"], night["contract"], spec,
                      attributes=night["attributes"], validate=False).orderBy("plan_rank").collect()
    assert len(plan) == 80
    target = target_of(spark, night, plan)
    before = rerun_spread(spark, night, plan, {}, target)
    assert math.isclose(before, plan[0].spread_now, abs_tol=TOL)
    for rows in (5, 30, 80):
        prefix = plan[:rows]
        after = rerun_spread(spark, night, prefix, drawn(prefix, SEED + rows), target)
        assert after <= prefix[-1].spread_remaining + TOL, (rows, after, prefix[-1].spread_remaining)
    worst = {(r.request_id, r.doc_id): r.worst_case_grade for r in plan}
    assert math.isclose(rerun_spread(spark, night, plan, worst, target), plan[-1].spread_remaining, abs_tol=TOL)
    remaining = [r.spread_remaining for r in plan]
    assert all(a >= b - TOL for a, b in zip(remaining, remaining[1:]))  # each judgment can only narrow it
    assert remaining[-1] < 0.9 * plan[0].spread_now  # the plan does settle some of it
    # a smaller budget is the same plan's head, with the grades that leave the most of *its* spread
    head = judge_next(night["candidates"], night["judgments"], night["contract"], spec.narrowed(budget=30),
                      attributes=night["attributes"], validate=False).orderBy("plan_rank").collect()
    same = ("request_id", "doc_id", "swing", "spread_remaining", "remaining_exact")
    assert [tuple(r[c] for c in same) for r in head] == [tuple(r[c] for c in same) for r in plan[:30]]
    worst = {(r.request_id, r.doc_id): r.worst_case_grade for r in head}
    assert math.isclose(rerun_spread(spark, night, head, worst, target), head[-1].spread_remaining, abs_tol=TOL)


def test_a_plan_that_judges_everything_it_reaches_leaves_nothing_whatever_the_grades(spark, night):
    few = night["candidates"].filter("request_id < 'req-0000040'")
    spec = JudgingSpec(target="compare", budget=10_000, mean="macro")
    plan = judge_next(few, night["judgments"], night["contract"], spec, baseline="bm25", candidate="hybrid",
                      attributes=night["attributes"], validate=False).orderBy("plan_rank").collect()
    assert plan[-1].remaining_exact and plan[-1].spread_remaining == 0.0
    assert any(not r.remaining_exact for r in plan) and plan[0].spread_now > 0
    night_few = dict(night, candidates=few)
    target = target_of(spark, night_few, plan)
    for seed in (1, 2):
        assert abs(rerun_spread(spark, night_few, plan, drawn(plan, seed), target)) <= TOL
