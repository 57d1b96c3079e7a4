"""What to judge next: :func:`judge_next`, a plan of documents that settles the most of a target's spread.

The plan is ``budget`` unjudged documents, one row per (request, document) -- one judgment serves
every ranker that shows it -- in the order that settles the most of the target's spread per
judgment (:mod:`ndcg_spark.judging.order`: each request's documents in swing order on the target,
:mod:`ndcg_spark.judging.target`; across requests the step that settles the most per document; a
declared tie rule, so the same inputs give the same plan). The target's **unjudged spread** is the mean of its requests'
unjudged ranges (how far every grading of their unjudged documents can move them:
:mod:`ndcg_spark.judging.spread`); each row states the spread that remains once the plan's
documents up to it are judged: **the most any grading of them can leave**, computed per request
over every grade each document can get (:func:`~ndcg_spark.judging.spread.worst_case`), with the
grade per document that leaves it and whether every grading leaves the same
(``remaining_exact``). It never exceeds the spread now, and a request whose every unjudged
document is planned leaves nothing. docs/judging.md says why it cannot be stated as one number the
judges' grades will meet, and what the re-run then provably gives.

Cost: the scoring (or a given per-request table), one more pass over the inputs (each request's
lists, collected once: :mod:`ndcg_spark.judging.lists`), one pass over those lists computing each
request's swings, range and bound together in numpy on the executors
(:mod:`ndcg_spark.judging.batch`), and on the driver the curves of the requests the plan reaches
(their lists and swings collected) and their order.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from ndcg_spark.config.attributes import Attributes
from ndcg_spark.config.compare_spec import Side
from ndcg_spark.config.contract import Contract
from ndcg_spark.config.judging_spec import JudgingSpec
from ndcg_spark.config.schemas import JUDGING_PLAN
from ndcg_spark.errors import ContractError, InputError
from ndcg_spark.frames import persist_coalesced, shuffles_for_rows, shuffles_sized_to
from ndcg_spark.judging.lists import request_lists
from ndcg_spark.judging.order import MAX_GRADINGS, Curve, plan_order
from ndcg_spark.judging.spread import RequestLists, Scale, gradings, worst_case
from ndcg_spark.judging.swings import scale_of, tie_aware
from ndcg_spark.measures.ndcg import NDCG
from ndcg_spark.judging.target import (
    Spread,
    Target,
    present,
    request_lists_of,
    target_rows,
    target_sums,
)
from ndcg_spark.scoring.score import score_requests, scoring_rows
from ndcg_spark.validation.shell_check import shell_check

__all__ = ["PLAN_COLUMNS", "PLAN_FIELDS", "PLAN_SCHEMA", "judge_next"]

#: the judging plan's columns and their types (the table ``ndcg-spark judge-next`` writes; declared in
#: :data:`ndcg_spark.config.schemas.JUDGING_PLAN`)
PLAN_FIELDS = tuple((c.name, c.type) for c in JUDGING_PLAN.columns)
PLAN_COLUMNS = JUDGING_PLAN.names
PLAN_SCHEMA = JUDGING_PLAN.ddl


def judge_next(
    candidates: DataFrame,
    judgments: DataFrame | None = None,
    contract: Contract | None = None,
    spec: JudgingSpec | None = None,
    *,
    baseline: str | Side | None = None,
    candidate: str | Side | None = None,
    attributes: Attributes | None = None,
    system: str | None = None,
    pool_version: str | None = None,
    run_id: str = "adhoc",
    validate: bool = True,
    per_request: DataFrame | None = None,
) -> DataFrame:
    """The documents to judge next: the plan of ``spec.budget`` documents with the largest swing on the target.

    Parameters
    ----------
    candidates, judgments, contract, attributes, system, pool_version, run_id, validate :
        as :func:`~ndcg_spark.scoring.score.score_requests`; the contract must declare its
        judging scale (``max_grade`` or a gain table).
    spec : :class:`~ndcg_spark.config.judging_spec.JudgingSpec`: the target (``aggregate``: one
        system's mean; ``compare``: the delta ``candidate - baseline``), the budget, K, the mean.
    baseline, candidate : the two rankers of a ``compare`` target (system names or
        :class:`~ndcg_spark.config.compare_spec.Side`); ``candidate`` is also the default system of
        an ``aggregate`` target (else ``spec.system``, else the only system).
    per_request : the inputs' per-request table, when it is at hand (the nightly job's, under
        this contract); otherwise it is scored here.

    Returns
    -------
    DataFrame with :data:`PLAN_COLUMNS` (:data:`PLAN_SCHEMA`), one row per document, by
    ``plan_rank``; small (collected and built on the driver).

    Examples
    --------
    Two unjudged documents of ``q1``: judged alone, ``c`` (a place lower than ``b``) moves hybrid's
    NDCG@3 the most (its grade goes into the ideal as much as ``b``'s, into the DCG less):

    >>> from ndcg_spark import Contract, JudgingSpec
    >>> cands = spark.createDataFrame([("q1", "a", 1), ("q1", "b", 2), ("q1", "c", 3), ("q2", "d", 1)],
    ...                               "request_id string, doc_id string, position int")
    >>> judged = spark.createDataFrame([("q1", "a", 1.0), ("q2", "d", 2.0)], "request_id string, doc_id string, grade double")
    >>> plan = judge_next(cands, judged, Contract(k=[3], max_grade=3), JudgingSpec(budget=2), system="hybrid")
    >>> plan.select("plan_rank", "request_id", "doc_id", F.round("swing", 4).alias("swing"),
    ...             F.round("spread_now", 4).alias("now"), F.round("spread_remaining", 4).alias("remaining"),
    ...             "remaining_exact").show()
    +---------+----------+------+------+------+---------+---------------+
    |plan_rank|request_id|doc_id| swing|   now|remaining|remaining_exact|
    +---------+----------+------+------+------+---------+---------------+
    |        1|        q1|     c|0.2051|0.2051|   0.1451|          false|
    |        2|        q1|     b|0.1451|0.2051|      0.0|           true|
    +---------+----------+------+------+------+---------+---------------+
    <BLANKLINE>
    """
    spec = spec or JudgingSpec()
    contract = (contract or Contract()).resolve(candidates.columns)
    if NDCG.name not in contract.metric_names:
        raise ContractError("contract.metrics", f"judge-next plans what settles NDCG, and the contract declares "
                            f"{', '.join(contract.metric_names)}: add {NDCG.name} to contract.metrics")
    grade_gains = scale_of(contract)
    k = spec.cutoff(contract)
    attributes = attributes or Attributes()
    handles: list[DataFrame] = []
    with shuffles_sized_to(candidates, judgments, attributes.table):
        if validate:
            checked = shell_check(candidates, judgments, contract, attributes=attributes, system=system,
                                  pool_version=pool_version)
            candidates, judgments, attributes = checked.candidates, checked.judgments, checked.attributes
        try:
            if per_request is None:
                per_request = score_requests(candidates, judgments, contract, run_id=run_id, system=system,
                                             pool_version=pool_version, attributes=attributes, validate=False,
                                             cache_handles=handles)
            scored = _kept(persist_coalesced(per_request), handles)
            systems = present(scored)
            target = Target.of(systems, spec.target, k, spec.mean, _sides(systems, spec, baseline, candidate))
            rows = target_rows(scored, target, scores_no_results=not contract.no_results.sets_aside)
            sums = target_sums(rows, target)
            rows_source = scoring_rows(candidates, judgments, contract, system, pool_version, integer_ids=False)
            with shuffles_for_rows(candidates.sparkSession, sums.requests):  # each request's lists: as large as the input
                lists = _kept(persist_coalesced(request_lists(rows_source, judgments, contract)), handles)
                from ndcg_spark.judging.batch import request_measures  # numpy: imported when used

                scale = Scale.of(grade_gains, k)
                measured = _kept(persist_coalesced(request_measures(rows, lists, target, scale, contract, sums)),
                                 handles)
            swings = measured.select("request_id", F.explode("docs").alias("d")).select(
                "request_id", "d.doc_id", "d.swing", "d.shown_by")
            ranges = measured.select("request_id", "weight", "range", "bound").collect()
            spread = Spread.of([r.asDict() for r in ranges])
            order = _ordered(swings, lists, target, scale, contract, spread, spec.budget)
            plan = _plan_rows(order, spread, scale)
        finally:
            for df in handles:
                df.unpersist()
    return candidates.sparkSession.createDataFrame(
        [(run_id, target.kind, [s for s, _ in target.sides], k, spec.mean, *row, contract.fingerprint) for row in plan],
        PLAN_SCHEMA)


def _kept(df: DataFrame, handles: list[DataFrame]) -> DataFrame:
    handles.append(df)
    return df


def _sides(pairs: list[Any], spec: JudgingSpec, baseline: Any, candidate: Any) -> tuple[Side, ...]:
    """The target's sides: ``(candidate, baseline)`` of a comparison; the system of an aggregate."""
    if spec.target == "compare":
        if baseline is None or candidate is None:
            missing = "compare.baseline" if baseline is None else "compare.candidate"
            raise ContractError(missing, "is required for a judging plan of a comparison (judging.target: compare)")
        return Side.parse(candidate, "compare.candidate"), Side.parse(baseline, "compare.baseline")
    chosen = spec.system or candidate
    if chosen is None:
        systems = sorted({r.system for r in pairs}, key=str)
        if len(systems) != 1:
            raise ContractError("judging.system", f"name the system whose mean to settle: the night has {len(systems)} "
                                f"({', '.join(map(str, systems[:10]))})")
        chosen = systems[0]
    return (Side.parse(chosen, "judging.system"),)


@dataclass
class _Request:
    """A request the plan may reach, as the driver holds it: its lists, its documents' swing rows in
    swing order, and for each prefix the most it can leave, the grades that leave it, whether
    every grading leaves the same."""

    lists: RequestLists
    swings: list[Row]
    curve: Curve
    worst: dict[int, tuple[dict[str, float], bool]]


def _ordered(swings: DataFrame, lists: DataFrame, target: Target, scale: Scale, contract: Contract, spread: Spread,
             budget: int) -> list[tuple[_Request, Row]]:
    """The plan's documents in order (:func:`~ndcg_spark.judging.order.plan_order`), each with its
    request. Curves are computed on the driver for the requests of largest bound first (what any
    step of theirs can settle per document at most: ``spread.bounds``), more of them while one not
    computed could still settle more per document than the plan's last step: the same plan as
    computing every curve."""
    ranked = sorted(spread.bounds.items(), key=lambda r: (-r[1], r[0]))
    requests: dict[str, _Request] = {}
    size = max(budget, 1)
    while True:
        batch = [i for i, _ in ranked[len(requests):size]]
        requests.update(_curves(batch, swings, lists, target, scale, contract, spread))
        order = list(plan_order([r.curve for r in requests.values()], budget))
        rest = ranked[size:]
        if not rest or (order and len(order) == budget and rest[0][1] < order[-1][2]):
            return [(requests[c.request_id], _row(requests[c.request_id], doc)) for c, doc, _ in order]
        size *= 2


def _row(request: _Request, doc: str) -> Row:
    return next(r for r in request.swings if r.doc_id == doc)


def _curves(ids: list[str], swings: DataFrame, lists: DataFrame, target: Target, scale: Scale, contract: Contract,
            spread: Spread) -> dict[str, _Request]:
    """The requests of ``ids`` with their curves: lists and swing rows collected, each prefix's worst case."""
    if not ids:
        return {}
    keys = lists.sparkSession.createDataFrame([(i,) for i in ids], "request_id string")
    collected = {r.request_id: r for r in lists.join(F.broadcast(keys), "request_id").collect()}
    by_request: dict[str, list[Row]] = defaultdict(list)
    for r in swings.join(F.broadcast(keys), "request_id").collect():
        by_request[r.request_id].append(r)
    out = {}
    for request_id in ids:
        request = request_lists_of(collected[request_id], target, tie_aware(contract)) if request_id in collected else None
        if request is None:
            raise InputError(f"judging: the plan's request {request_id!r} is missing from the lists")
        ordered = sorted(by_request[request_id], key=lambda r: (-r.swing, r.doc_id))
        docs = [r.doc_id for r in ordered]
        left, worst = {0: spread.ranges[request_id]}, {}
        for j in range(1, len(docs) + 1):
            if j == len(docs) and set(docs) >= set(request.unjudged()):  # nothing left: no range, whatever the grades
                left[j], worst[j] = 0.0, ({d: scale.grades[0][0] for d in docs}, True)
            elif gradings(request, scale, docs[:j]) <= MAX_GRADINGS:
                value, grades, exact = worst_case(request, scale, docs[:j])
                left[j], worst[j] = value, (grades, exact)
        out[request_id] = _Request(request, ordered, Curve(request_id, spread.weights[request_id], tuple(docs), left),
                                   worst)
    return out


def _plan_rows(order: list[tuple[_Request, Row]], spread: Spread, scale: Scale) -> list[tuple]:
    """The plan's rows (from ``plan_rank`` to ``worst_case_grade``): what each prefix leaves of the
    target's spread, computed from the curves of the requests it reaches."""
    delta: dict[str, float] = {}
    taken: dict[str, int] = defaultdict(int)
    open_requests: set[str] = set()
    out = []
    for rank, (request, row) in enumerate(order, start=1):
        curve = request.curve
        taken[curve.request_id] += 1
        j = taken[curve.request_id]
        delta[curve.request_id] = curve.weight * (curve.left_at(j) - curve.left[0])
        exact = j in request.worst and request.worst[j][1]
        (open_requests.discard if exact else open_requests.add)(curve.request_id)
        remaining = (spread.total + math.fsum(delta.values())) / spread.count if spread.count else 0.0
        out.append([rank, row.request_id, row.doc_id, [tuple(s) for s in row.shown_by], row.swing, spread.value,
                    max(remaining, 0.0), not open_requests])
    grades: dict[tuple[str, str], float] = {}
    for request, _ in order:  # the grades that leave the most of the request's whole part of the plan
        j = taken[request.curve.request_id]
        points = [i for i in request.worst if i <= j]
        given = request.worst[max(points)][0] if points else {}
        grades.update({(request.curve.request_id, d): given.get(d, scale.grades[0][0]) for d in request.curve.docs[:j]})
    return [(*r, grades[(r[1], r[2])]) for r in out]
