"""A plain-Python reference implementation ("oracle") of NDCG@K per request (SPEC §2).

Written independently of :mod:`ndcg_spark.scoring.score`, straight from the SPEC and the declared
semantics, favouring obviousness over speed: a request's candidates are put in displayed order,
the unjudged policy is applied, and DCG / IDCG are summed term by term. The randomized agreement
test (``tests/test_oracle_agreement.py``) compares the Spark implementation against it.

Semantics implemented
---------------------
* A request is the group ``(request_id, system)``; nothing is ever ranked across requests.
* gain: ``"exponential"`` 2**g - 1, ``"linear"`` g, ``"binary"`` 1 if g > 0 else 0, or
  ``{"table": {grade: gain}}`` (a grade
  missing from the table raises ``KeyError`` -- the oracle never invents a gain).
* discount: the term at 1-based position p is divided by log2(p + 1).
* order: ``"position"`` (ascending) or ``"score"`` (descending). Under score order, ties are
  ``"doc_id"`` (score desc, then doc_id asc in string order), ``"doc_id_desc"`` (score desc, then
  doc_id desc in string order: trec_eval's ``comp_sim_docno``) or ``"average"`` (McSherry & Najork
  2008): a group of n equal-score candidates occupying positions s+1..s+n contributes, at every
  position p of that range with p <= K, the group's mean gain / log2(p + 1).
* unjudged (grade None): ``"zero"`` and ``"separate"`` give gain 0 and keep the position;
  ``"exclude"`` drops the candidate before ranking (later candidates move up).
  ``n_unjudged_in_top_k`` is None under ``"zero"``; otherwise it is the number of unjudged
  candidates among the first K of the *full* displayed list (before condensing; under score order
  the display order is score desc, then doc_id desc under ``"doc_id_desc"``, else doc_id asc).
* ideal_from: ``"candidates"`` -> the gains of this request's candidates (after the unjudged policy,
  unjudged gain 0), sorted descending; ``"judgments"`` -> the gains of every judged document of the
  request in the judgments table, retrieved or not, sorted descending.
* IDCG@K == 0 is an empty ideal: ``empty_ideal="exclude"`` -> ndcg None; ``"zero"`` -> ndcg 0.0;
  both set ``empty_ideal=True``. ``"error"`` raises :class:`OracleEmptyIdealError`.
* A K larger than the list sums over what exists.
* Counts: ``n_candidates`` (all candidate rows), ``n_judged`` (with a grade), ``n_positive``
  (grade > 0) -- independent of the unjudged policy.
* Unjudged bounds: ``ndcg_unjudged_low`` / ``_high`` are the NDCG of the same request rescored
  with every unjudged candidate given the lowest / highest grade of the scale (a gain table's
  lowest and highest grade -- or ``max_grade`` -- else 0 and ``max_grade``; None without a scale):
  nothing is unjudged any more, so nothing is excluded, and under ``ideal_from="judgments"`` those
  candidates join the judged documents. An empty ideal is None (0.0 under ``empty_ideal="zero"``),
  never an error.
* recall (``metrics`` holding ``"recall"``): a document is relevant when judged at
  ``relevant_grade`` or above (default 1). ``relevant_in_top_k`` counts the relevant documents
  among the first K of the ranked list (condensed under ``exclude``); under score ties averaged, each
  position counts the share of its tie group that is relevant (the expected count over the tie
  orders). ``n_relevant`` (R) counts the relevant documents of the ideal's source: the ranked
  candidates (``candidates``) or every judged document of the request (``judgments``). recall =
  relevant_in_top_k / R (``recall="all_relevant"``) or / min(K, R) (``"capped"``); no ideal when R = 0.
  Its what-ifs ``recall_unjudged_low`` / ``_high`` are the same rescoring as NDCG's.
* precision (``precision="k"``: relevant_in_top_k / K; ``"shown"``: / min(K, the ranked list's
  length), 0 when it is empty), hit rate (1 when relevant_in_top_k > 0), reciprocal rank (1 / the
  rank of the first relevant document of the ranked list within K -- ``reciprocal_rank="k"`` -- or
  within the largest K -- ``"deepest"`` --, 0 when none) and average precision (the sum, over the
  ranks p <= K holding a relevant document, of the relevant among the first p over p; / R --
  ``average_precision="all_relevant"`` -- or / min(K, R) -- ``"capped"``): no ideal when R = 0, as
  recall. Score ties averaged are refused for hit rate, reciprocal rank and average precision;
  precision is then the averaged relevant_in_top_k over its denominator.
* Every metric of the request is set aside together: ``empty_ideal`` is True when some declared
  metric has no ideal (NDCG: IDCG = 0; recall: R = 0); under ``"exclude"`` every metric is then
  None, under ``"zero"`` a metric whose own ideal is missing is 0 and the others are scored.

Examples
--------
>>> round(ndcg_of_grades([1, 3, 0, 2], k=3), 10)
0.5766666455
>>> ndcg_of_grades([3, 2, 1], k=3)
1.0
>>> ndcg_of_grades([0, 0], k=3) is None
True
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Candidate",
    "OracleEmptyIdealError",
    "make_gain",
    "discount",
    "dcg_at_k",
    "tie_average_gains",
    "tie_average_dcg_at_k",
    "display_order",
    "score_request",
    "prepare",
    "score_prepared",
    "score_all",
    "score_sample_folder",
    "ndcg_of_grades",
]


class OracleEmptyIdealError(Exception):
    """Raised by the oracle under ``empty_ideal="error"`` when some request has IDCG = 0."""


@dataclass(frozen=True)
class Candidate:
    """One retrieved document of one request; ``grade=None`` means unjudged."""

    doc_id: str
    position: int | None = None
    score: float | None = None
    grade: float | None = None


# --------------------------------------------------------------------------- building blocks
def make_gain(gain: Any) -> Callable[[float], float]:
    """Return grade -> gain for ``"exponential"``, ``"linear"`` or ``{"table": {...}}``."""
    if gain == "exponential":
        return lambda g: 2.0 ** float(g) - 1.0
    if gain == "linear":
        return lambda g: float(g)
    if gain == "binary":
        return lambda g: 1.0 if g > 0 else 0.0
    if isinstance(gain, Mapping):
        entries = gain["table"] if "table" in gain else gain
        table = {float(grade): float(value) for grade, value in entries.items()}

        def lookup(g: float) -> float:
            return table[float(g)]  # KeyError: a grade outside the table is never a silent 0

        return lookup
    raise ValueError(f"unknown gain {gain!r}")


def discount(p: int) -> float:
    """The log2 discount weight of 1-based position ``p``."""
    return 1.0 / math.log2(p + 1)


def dcg_at_k(gains: Sequence[float], k: int) -> float:
    """Sum of gain / log2(p + 1) over the first ``k`` entries (fewer if the list is shorter)."""
    total = 0.0
    for p, g in enumerate(gains[:k], start=1):
        total += g * discount(p)
    return total


def tie_average_gains(scored_gains: Iterable[tuple[float, float]]) -> list[float]:
    """Per-position expected gains under random tie-breaking (McSherry & Najork 2008).

    Candidates are ranked by score descending; every position occupied by a group of equal scores
    gets that group's mean gain.
    """
    items = sorted(scored_gains, key=lambda sg: -sg[0])
    expected: list[float] = []
    start = 0
    while start < len(items):
        end = start
        while end < len(items) and items[end][0] == items[start][0]:
            end += 1
        mean_gain = sum(g for _, g in items[start:end]) / (end - start)
        expected.extend([mean_gain] * (end - start))
        start = end
    return expected


def tie_average_dcg_at_k(scored_gains: Iterable[tuple[float, float]], k: int) -> float:
    """Tie-aware expected DCG@k of ``(score, gain)`` pairs (McSherry & Najork 2008).

    A group of equal scores occupying positions s+1..s+n contributes, at every position p of
    that range with p <= k, the group's mean gain / log2(p + 1).
    """
    return dcg_at_k(tie_average_gains(scored_gains), k)


def display_order(candidates: Iterable[Candidate], order: str, ties: str = "doc_id") -> list[Candidate]:
    """Candidates in displayed order: position ascending, or score desc then doc_id asc (doc_id
    desc under ``ties="doc_id_desc"``)."""
    if order == "position":
        return sorted(candidates, key=lambda c: c.position)
    if order == "score" and ties == "doc_id_desc":
        return sorted(candidates, key=lambda c: (c.score, c.doc_id), reverse=True)
    if order == "score":
        return sorted(candidates, key=lambda c: (-c.score, c.doc_id))
    raise ValueError(f"unknown order {order!r}")


# --------------------------------------------------------------------------- one request
def score_request(
    candidates: Sequence[Candidate],
    *,
    k: Iterable[int] = (1, 3, 5, 10),
    gain: Any = "exponential",
    order: str = "position",
    ties: str = "doc_id",
    ideal_from: str = "candidates",
    unjudged: str = "separate",
    empty_ideal: str = "exclude",
    judged_grades: Iterable[float] | None = None,
    max_grade: float | None = None,
    bounds: bool = True,
    metrics: Sequence[str] = ("ndcg",),
    relevant_grade: float = 1.0,
    recall: str = "all_relevant",
    precision: str = "k",
    average_precision: str = "all_relevant",
    reciprocal_rank: str = "k",
) -> dict[int, dict[str, Any]]:
    """Score one request; return ``{k: {dcg, idcg, ndcg, empty_ideal, n_*, ndcg_unjudged_*}}`` (and,
    with ``"recall"`` in ``metrics``, ``relevant_in_top_k, n_relevant, recall, recall_unjudged_*``).

    ``judged_grades`` are the grades of every judged document of the request (needed only for
    ``ideal_from="judgments"``).
    """
    if unjudged not in ("zero", "exclude", "separate"):
        raise ValueError(f"unknown unjudged policy {unjudged!r}")
    if ties not in ("doc_id", "average", "doc_id_desc"):
        raise ValueError(f"unknown ties {ties!r}")
    if empty_ideal not in ("exclude", "zero", "error"):
        raise ValueError(f"unknown empty_ideal {empty_ideal!r}")
    gain_of = make_gain(gain)
    if recall not in ("all_relevant", "capped"):
        raise ValueError(f"unknown recall denominator {recall!r}")
    rescored = None if not bounds else _unjudged_bounds(
        candidates, k=k, gain=gain, order=order, ties=ties, ideal_from=ideal_from, empty_ideal=empty_ideal,
        judged_grades=judged_grades, max_grade=max_grade, metrics=metrics, relevant_grade=relevant_grade,
        recall=recall, precision=precision, average_precision=average_precision, reciprocal_rank=reciprocal_rank)
    if order == "score" and ties == "average" and {"hit_rate", "reciprocal_rank", "average_precision"} & set(metrics):
        raise ValueError("score ties averaged are not defined here for hit rate, reciprocal rank, average precision")

    displayed = display_order(candidates, order, ties)
    n_candidates = len(displayed)
    n_judged = sum(1 for c in displayed if c.grade is not None)
    n_positive = sum(1 for c in displayed if c.grade is not None and c.grade > 0)

    ranked = [c for c in displayed if c.grade is not None] if unjudged == "exclude" else displayed
    gains = [0.0 if c.grade is None else gain_of(c.grade) for c in ranked]

    def is_relevant(grade: float | None) -> bool:
        return grade is not None and grade >= relevant_grade

    if ideal_from == "candidates":
        ideal = sorted(gains, reverse=True)
        n_relevant = sum(1 for c in ranked if is_relevant(c.grade))
    elif ideal_from == "judgments":
        if judged_grades is None:
            raise ValueError("ideal_from='judgments' needs the request's judged grades")
        ideal = sorted((gain_of(g) for g in judged_grades), reverse=True)
        n_relevant = sum(1 for g in judged_grades if is_relevant(g))
    else:
        raise ValueError(f"unknown ideal_from {ideal_from!r}")

    hits = [1.0 if is_relevant(c.grade) else 0.0 for c in ranked]
    if order == "score" and ties == "average":
        ranked_gains = tie_average_gains([(c.score, g) for c, g in zip(ranked, gains)])
        ranked_hits = tie_average_gains([(c.score, h) for c, h in zip(ranked, hits)])
    else:
        ranked_gains, ranked_hits = gains, hits

    deepest = max(k)
    first = next((p for p, h in enumerate(hits[:deepest], start=1) if h), 0)
    result: dict[int, dict[str, Any]] = {}
    for kk in sorted(set(k)):
        dcg = dcg_at_k(ranked_gains, kk)
        idcg = dcg_at_k(ideal, kk)
        relevant_top = sum(ranked_hits[:kk])
        denominator = n_relevant if recall == "all_relevant" else min(kk, n_relevant)
        shown = min(kk, len(ranked))
        precision_sum = sum(sum(hits[:p]) / p for p in range(1, min(kk, len(hits)) + 1) if hits[p - 1])
        first_kk = first if first <= kk else 0
        rank = first if reciprocal_rank == "deepest" else first_kk
        ap_denominator = n_relevant if average_precision == "all_relevant" else min(kk, n_relevant)
        own = {"ndcg": (idcg > 0, lambda: dcg / idcg),
               "recall": (n_relevant > 0, lambda: relevant_top / denominator),
               "precision": (n_relevant > 0, lambda: relevant_top / kk if precision == "k"
                             else (relevant_top / shown if shown else 0.0)),
               "hit_rate": (n_relevant > 0, lambda: 1.0 if relevant_top > 0 else 0.0),
               "reciprocal_rank": (n_relevant > 0, lambda: 1.0 / rank if rank else 0.0),
               "average_precision": (n_relevant > 0, lambda: precision_sum / ap_denominator)}
        empty = any(not own[m][0] for m in metrics)
        if empty and empty_ideal == "error":
            raise OracleEmptyIdealError(f"empty ideal at k={kk}")
        values = {}
        for m in own:
            has_ideal, value = own[m]
            if empty and empty_ideal != "zero":
                values[m] = None
            elif not has_ideal:
                values[m] = 0.0
            else:
                values[m] = value()
        n_unjudged_top = None if unjudged == "zero" else sum(1 for c in displayed[:kk] if c.grade is None)
        result[kk] = {
            "dcg": dcg,
            "idcg": idcg,
            "ndcg": values["ndcg"],
            "empty_ideal": empty,
            "n_candidates": n_candidates,
            "n_judged": n_judged,
            "n_positive": n_positive,
            "n_unjudged_in_top_k": n_unjudged_top,
            "ndcg_unjudged_low": rescored[0][kk]["ndcg"] if rescored else None,
            "ndcg_unjudged_high": rescored[1][kk]["ndcg"] if rescored else None,
        }
        if set(metrics) - {"ndcg"}:
            result[kk].update({"relevant_in_top_k": relevant_top, "n_relevant": n_relevant, "n_shown": shown,
                               "precision_sum": precision_sum, "first_relevant_rank": first})
        for m in metrics:
            if m != "ndcg":
                result[kk].update({
                    m: values[m],
                    f"{m}_unjudged_low": rescored[0][kk][m] if rescored else None,
                    f"{m}_unjudged_high": rescored[1][kk][m] if rescored else None,
                })
    return result


def grade_scale(gain: Any, max_grade: float | None) -> tuple[float, float] | None:
    """The lowest and highest grade of the declared scale, or None."""
    if isinstance(gain, Mapping):
        grades = [float(g) for g in (gain["table"] if "table" in gain else gain)]
        return min(grades), (max(grades) if max_grade is None else float(max_grade))
    return None if max_grade is None else (0.0, float(max_grade))


def _unjudged_bounds(candidates: Sequence[Candidate], *, judged_grades: Iterable[float] | None,
                     max_grade: float | None, empty_ideal: str, metrics: Sequence[str], **contract: Any) -> list[dict] | None:
    """The request rescored twice, every unjudged candidate judged at the lowest, then the
    highest grade of the scale (see the module docstring). Each metric's what-if is its own (its
    own ideal, never set aside for another metric's)."""
    scale = grade_scale(contract["gain"], max_grade)
    if scale is None:
        return None
    known = list(judged_grades) if judged_grades is not None else None
    out = []
    for grade in scale:
        judged = [Candidate(c.doc_id, c.position, c.score, grade if c.grade is None else c.grade) for c in candidates]
        extra = [grade for c in candidates if c.grade is None]
        one = {}
        for metric in ("ndcg", *[m for m in metrics if m != "ndcg"]):  # each on its own: a what-if is set aside only for its own ideal
            scored = score_request(judged, judged_grades=None if known is None else known + extra,
                                   empty_ideal="zero" if empty_ideal == "zero" else "exclude", bounds=False,
                                   metrics=(metric,), **contract)
            for kk, values in scored.items():
                one.setdefault(kk, {})[metric] = values[metric]
        out.append(one)
    return out


# --------------------------------------------------------------------------- whole tables
def prepare(
    candidate_rows: Iterable[Mapping[str, Any]],
    judgment_rows: Iterable[Mapping[str, Any]] | None = None,
) -> tuple[dict[tuple[str, str | None], list[Candidate]], dict[str, dict[str, float]]]:
    """Group input rows into ``({(request_id, system): [Candidate]}, {request_id: {doc_id: grade}})``.

    ``candidate_rows`` are mappings with ``request_id``, ``doc_id``, ``position`` and/or ``score``,
    optional ``system`` and -- when ``judgment_rows`` is None -- a pre-joined ``grade``.
    ``judgment_rows`` are mappings with ``request_id``, ``doc_id``, ``grade``; a candidate without a
    judgment row (or with a null grade) is unjudged. With pre-joined grades, the request's judgments
    are its distinct judged (doc_id, grade) pairs over all systems.
    """
    groups: dict[tuple[str, str | None], list[Candidate]] = defaultdict(list)
    judged: dict[str, dict[str, float]] = defaultdict(dict)
    rows = list(candidate_rows)
    if judgment_rows is not None:
        for j in judgment_rows:
            if j.get("grade") is not None:
                judged[j["request_id"]][j["doc_id"]] = float(j["grade"])
    for r in rows:
        if judgment_rows is None:
            grade = r.get("grade")
            if grade is not None:
                judged[r["request_id"]][r["doc_id"]] = float(grade)
        else:
            grade = judged.get(r["request_id"], {}).get(r["doc_id"])
        groups[(r["request_id"], r.get("system"))].append(
            Candidate(
                doc_id=r["doc_id"],
                position=r.get("position"),
                score=r.get("score"),
                grade=None if grade is None else float(grade),
            )
        )
    return dict(groups), dict(judged)


def score_prepared(
    prepared: tuple[dict[tuple[str, str | None], list[Candidate]], dict[str, dict[str, float]]],
    **contract: Any,
) -> dict[tuple[str, str | None, int], dict[str, Any]]:
    """Score the output of :func:`prepare`; key the result by ``(request_id, system, k)``."""
    groups, judged = prepared
    out: dict[tuple[str, str | None, int], dict[str, Any]] = {}
    for (request_id, system), cands in groups.items():
        per_k = score_request(cands, judged_grades=judged.get(request_id, {}).values(), **contract)
        for kk, values in per_k.items():
            out[(request_id, system, kk)] = values
    return out


def score_all(
    candidate_rows: Iterable[Mapping[str, Any]],
    judgment_rows: Iterable[Mapping[str, Any]] | None = None,
    **contract: Any,
) -> dict[tuple[str, str | None, int], dict[str, Any]]:
    """Score every ``(request_id, system)`` group of plain rows (see :func:`prepare`).

    ``contract`` takes the keywords of :func:`score_request`. Returns
    ``{(request_id, system, k): {dcg, idcg, ndcg, empty_ideal, n_candidates, n_judged,
    n_positive, n_unjudged_in_top_k}}``.
    """
    return score_prepared(prepare(candidate_rows, judgment_rows), **contract)


def score_sample_folder(spark, data: Any, **contract: Any) -> dict[tuple[str, str | None, int], dict[str, Any]]:
    """:func:`score_all` of a sample folder written by ``ndcg-spark sample`` (its ``candidates`` and
    ``judgments`` Parquet, read with ``spark`` and collected), K 1, 3, 5, 10 and unjudged
    ``separate`` as ``conf/*.yaml`` declare, plus ``contract``. The oracle's request is (request,
    system): the system key is ``<system>|<pool_version>``, so each system's pool stays apart."""
    cands = [r.asDict() for r in spark.read.parquet(f"{data}/candidates").collect()]
    judgments = [r.asDict() for r in spark.read.parquet(f"{data}/judgments").collect()]
    for c in cands:
        c["system"] = f"{c['system']}|{c['pool_version']}"
    return score_all(cands, judgments, k=[1, 3, 5, 10], unjudged="separate", **contract)


def ndcg_of_grades(grades: Sequence[float], k: int, gain: Any = "exponential") -> float | None:
    """NDCG@k of grades in displayed order (ideal from these grades); None for an empty ideal."""
    cands = [Candidate(doc_id=f"d{i}", position=i + 1, grade=g) for i, g in enumerate(grades)]
    return score_request(cands, k=[k], gain=gain)[k]["ndcg"]
