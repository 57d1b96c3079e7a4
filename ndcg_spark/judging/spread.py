"""The unjudged spread of one request, and the most of it a set of judgments can leave (pure Python).

A request's **what-if distance** on a target is how far apart its two unjudged what-ifs lie
(``ndcg_unjudged_high`` and ``_low``: every unjudged candidate of a list judged at the highest,
or the lowest grade of the scale; :mod:`ndcg_spark.scoring`): ``|high - low|`` for one system's
mean, ``|(high - low) of the candidate - (high - low) of the baseline|`` for a comparison's
delta. A what-if without an ideal counts 0 here (judging can give the request an NDCG where it
had none). The target's **unjudged spread** is the mean of its requests' distances
(:mod:`ndcg_spark.judging.target`).

Once some of a request's unjudged documents are judged, its distance depends on the grades they
get: a grade enters the ideal, and NDCG is not monotone in one grade. :func:`worst_case` gives the
largest distance any grading of them can leave, exactly, and a grading that leaves it:

* the what-ifs judge every document, so each list's DCG is *linear* in the judged gains (an item
  weighs its discount: ``1/log2(rank + 1)`` within K, or its tie group's average under
  ``ties: average``), while the ideals depend only on *which* gains were given, not to whom;
* so for each multiset of gains (per group of documents that enter the same lists' ideals) the
  distance is ``|Y + b|`` with ``Y`` linear in the assignment, largest at one of the two
  assignments the rearrangement inequality gives (gains sorted against the coefficients, one way
  or the other): every grading is covered by enumerating multisets, not the ``S^m`` gradings.

``tests/test_judging.py`` checks both against every grading of small requests, scored by the
plain-Python oracle.

>>> scale = Scale.of([(0.0, 0.0), (1.0, 1.0), (2.0, 3.0), (3.0, 7.0)], k=3)  # exponential, grades 0..3
>>> shown = tuple(Shown(d, g, w) for d, g, w in zip("abc", (3.0, None, None), discounts(3, 3)))
>>> request = RequestLists("q1", (shown,), None)  # a judged (gain 3), b and c unjudged
>>> round(what_if_distance(request, scale, {}), 4)  # NDCG@3 1.0 with b, c at grade 0; 0.8452 at grade 3
0.1548
>>> value, grades = worst_case(request, scale, ["b"])
>>> round(value, 4), grades  # b judged 0 leaves c further apart than b and c were
(0.2691, {'b': 0.0})
>>> worst_case(request, scale, ["b", "c"])[0]  # nothing left unjudged: whatever the grades, no spread
0.0
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["RequestLists", "Scale", "Shown", "discounts", "idcg", "settled", "what_if_distance", "worst_case"]


@dataclass(frozen=True)
class Shown:
    """One candidate of a list as the what-ifs weigh it."""

    doc_id: str
    #: its gain under the contract, None when unjudged
    gain: float | None
    #: what one unit of gain at its place adds to the list's DCG at K (0 below K)
    discount: float


@dataclass(frozen=True)
class RequestLists:
    """One request as a target's what-ifs see it: one list per system of the target (the
    target's order: the candidate's first for a comparison) and, under ``ideal_from: judgments``,
    the gains of every judged document of the request (None under ``ideal_from: candidates``)."""

    request_id: str
    lists: tuple[tuple[Shown, ...], ...]
    judged_gains: tuple[float, ...] | None

    def signs(self) -> tuple[int, ...]:
        """Each list's sign in the target: ``+1`` for the first, ``-1`` for a second (the baseline)."""
        return tuple(1 if i == 0 else -1 for i in range(len(self.lists)))

    def unjudged(self) -> tuple[str, ...]:
        """The request's unjudged documents in these lists, in order of appearance."""
        return tuple(dict.fromkeys(s.doc_id for shown in self.lists for s in shown if s.gain is None))


@dataclass(frozen=True)
class Scale:
    """The declared scale as the what-ifs use it: each distinct gain with the lowest grade that
    gives it, the gains of the lowest and the highest grade, and the cutoff."""

    #: ``((grade, gain), ...)``: one per distinct gain, the lowest grade giving it
    grades: tuple[tuple[float, float], ...]
    low: float
    high: float
    k: int

    @classmethod
    def of(cls, grade_gains: Sequence[tuple[float, float]], k: int) -> Scale:
        """From every ``(grade, gain)`` of the scale, ascending by grade."""
        first: dict[float, float] = {}
        for grade, gain in grade_gains:
            first.setdefault(gain, grade)
        return cls(tuple(sorted((g, v) for v, g in first.items())), grade_gains[0][1], grade_gains[-1][1], k)

    @property
    def gains(self) -> tuple[float, ...]:
        return tuple(gain for _, gain in self.grades)

    def grade_of(self, gain: float) -> float:
        return next(grade for grade, g in self.grades if g == gain)


def discounts(n: int, k: int, scores: Sequence[float] | None = None) -> list[float]:
    """The discount of each of ``n`` candidates in displayed order at cutoff ``k``: ``1/log2(rank + 1)``
    within the top ``k``, 0 below; with ``scores`` (``ties: average``), each tie group's average
    discount over the ranks it occupies within ``k`` (McSherry & Najork).

    >>> [round(d, 4) for d in discounts(3, 2)], [round(d, 4) for d in discounts(3, 2, [5.0, 5.0, 1.0])]
    ([1.0, 0.6309, 0.0], [0.8155, 0.8155, 0.0])
    """
    if scores is None:
        return [1.0 / math.log2(rank + 1.0) if rank <= k else 0.0 for rank in range(1, n + 1)]
    prefix = [0.0]
    for p in range(1, k + 1):
        prefix.append(prefix[-1] + 1.0 / math.log2(p + 1.0))
    out, start = [], 0
    while start < n:
        end = start
        while end < n and scores[end] == scores[start]:
            end += 1
        size = end - start
        span = prefix[min(end, k)] - prefix[min(start, k)]
        out += [span / size] * size
        start = end
    return out


def idcg(gains: Iterable[float], k: int) -> float:
    """DCG@k of ``gains`` sorted descending: the ideal's."""
    ranked = sorted(gains, reverse=True)[:k]
    return sum(g / math.log2(p + 2.0) for p, g in enumerate(ranked) if g != 0.0)


def _ratio(numerator: float, ideal: float) -> float:
    """A what-if's NDCG; one without an ideal counts 0."""
    return numerator / ideal if ideal > 0 else 0.0


def what_if_distance(request: RequestLists, scale: Scale, judged: Mapping[str, float]) -> float:
    """The request's what-if distance once the documents of ``judged`` get those gains (the rest of
    its unjudged stay unjudged): ``|sum over lists of sign * (high - low)|``."""
    total = 0.0
    for sign, shown in zip(request.signs(), request.lists):
        given = {s.doc_id: judged[s.doc_id] for s in shown if s.gain is None and s.doc_id in judged}
        if request.judged_gains is None:
            fixed = [s.gain for s in shown if s.gain is not None] + list(given.values())
        else:
            fixed = list(request.judged_gains) + list(judged.values())
        n_left = sum(1 for s in shown if s.gain is None and s.doc_id not in judged)
        spread = []
        for value in (scale.low, scale.high):
            dcg = sum(_gain(s, given, value) * s.discount for s in shown)
            spread.append(_ratio(dcg, idcg(fixed + [value] * min(n_left, scale.k), scale.k)))
        total += sign * (spread[1] - spread[0])
    return abs(total)


def _gain(shown: Shown, given: Mapping[str, float], value: float) -> float:
    if shown.gain is not None:
        return shown.gain
    return given.get(shown.doc_id, value)


def settled(request: RequestLists, planned: Iterable[str]) -> bool:
    """Whether judging ``planned`` leaves the request's distance the same whatever the grades: every
    list a planned document reaches (shown in it, or entering its ideal) has nothing left unjudged,
    so its two what-ifs are one NDCG, and the other lists do not move."""
    planned = set(planned)
    for shown in request.lists:
        docs = {s.doc_id for s in shown}
        reached = bool(planned) if request.judged_gains is not None else bool(planned & docs)
        if reached and any(s.gain is None and s.doc_id not in planned for s in shown):
            return False
    return True


def worst_case(request: RequestLists, scale: Scale, planned: Sequence[str]) -> tuple[float, dict[str, float]]:
    """The largest what-if distance the request can have once ``planned`` (some of its unjudged
    documents) are judged, over every grade of the scale each can get, and a grade per document
    that leaves it (deterministic: the first found in a fixed order).

    Exact: the maximum over all ``S^m`` gradings, found over the multisets of gains (see the
    module docstring) and recomputed for the grading found by :func:`what_if_distance`.
    """
    docs = list(dict.fromkeys(planned))
    lowest = scale.gains[0]
    if not docs:
        return what_if_distance(request, scale, {}), {}
    parts = _ListParts.of(request, docs)
    groups: dict[tuple[int, ...], list[str]] = {}
    for doc in docs:
        groups.setdefault(parts.reaches(doc), []).append(doc)
    reached = [(sig, members) for sig, members in sorted(groups.items()) if sig]
    best: tuple[float, dict[str, float]] | None = None
    choices = [itertools.combinations_with_replacement(scale.gains, len(members)) for _, members in reached]
    for combo in itertools.product(*choices):
        given = {sig: gains for (sig, _), gains in zip(reached, combo)}
        coefficient, constant = parts.linear(given, scale)
        for descending in (True, False):
            assignment = _rearranged(reached, combo, coefficient, descending)
            value = abs(constant + sum(coefficient[d] * g for d, g in assignment.items()))
            if best is None or value > best[0]:
                best = (value, assignment)
    assert best is not None
    assignment = {d: best[1].get(d, lowest) for d in docs}  # a document no list's what-if reaches: any
    return what_if_distance(request, scale, assignment), {d: scale.grade_of(g) for d, g in assignment.items()}


def _rearranged(reached, combo, coefficient: Mapping[str, float], descending: bool) -> dict[str, float]:
    """Each group's gains given to its documents sorted by coefficient: largest gain to largest
    coefficient (``descending``: the largest sum) or to the smallest (the smallest sum)."""
    out = {}
    for (_, members), gains in zip(reached, combo):
        ordered = sorted(members, key=lambda d: (-coefficient[d], d))
        out.update(zip(ordered, sorted(gains, reverse=descending)))
    return out


@dataclass(frozen=True)
class _ListParts:
    """What :func:`worst_case` needs of each list, with ``docs`` to be judged: the judged part of
    the DCG, the discounts and count of the candidates left unjudged, the fixed ideal gains, and
    each planned document's discount."""

    signs: tuple[int, ...]
    judged_dcg: tuple[float, ...]
    left_discount: tuple[float, ...]
    n_left: tuple[int, ...]
    fixed_ideal: tuple[tuple[float, ...], ...]
    discount: Mapping[str, tuple[float, ...]]
    members: tuple[frozenset[str], ...]
    all_lists: bool

    @classmethod
    def of(cls, request: RequestLists, docs: Sequence[str]) -> _ListParts:
        planned = set(docs)
        discount = {d: [0.0] * len(request.lists) for d in docs}
        judged_dcg, left_discount, n_left, fixed = [], [], [], []
        for i, shown in enumerate(request.lists):
            for s in shown:
                if s.doc_id in planned:
                    discount[s.doc_id][i] = s.discount
            judged_dcg.append(sum(s.gain * s.discount for s in shown if s.gain is not None))
            left = [s for s in shown if s.gain is None and s.doc_id not in planned]
            left_discount.append(sum(s.discount for s in left))
            n_left.append(len(left))
            own = [s.gain for s in shown if s.gain is not None]
            fixed.append(tuple(own if request.judged_gains is None else request.judged_gains))
        return cls(request.signs(), tuple(judged_dcg), tuple(left_discount), tuple(n_left), tuple(fixed),
                   {d: tuple(v) for d, v in discount.items()},
                   tuple(frozenset(s.doc_id for s in shown) for shown in request.lists),
                   request.judged_gains is not None)

    def reaches(self, doc: str) -> tuple[int, ...]:
        """The lists whose ideal the document enters once judged (every list under ``ideal_from:
        judgments``, else the lists that show it)."""
        return tuple(i for i, docs in enumerate(self.members) if self.all_lists or doc in docs)

    def linear(self, given: Mapping[tuple[int, ...], Sequence[float]], scale: Scale) -> tuple[dict[str, float], float]:
        """With the ideals fixed by the gains ``given`` to each group (by the lists it reaches): the
        coefficient of each planned document's gain and the constant of the target's value."""
        coefficient = dict.fromkeys(self.discount, 0.0)
        constant = 0.0
        for i, sign in enumerate(self.signs):
            extra = [g for sig, gains in given.items() if i in sig for g in gains]
            ideal = list(self.fixed_ideal[i]) + extra
            per_unit, offset = 0.0, 0.0
            for value, direction in ((scale.high, 1.0), (scale.low, -1.0)):
                best = idcg(ideal + [value] * min(self.n_left[i], scale.k), scale.k)
                if best > 0:
                    per_unit += direction / best
                    offset += direction * (self.judged_dcg[i] + value * self.left_discount[i]) / best
            constant += sign * offset
            for doc, weights in self.discount.items():
                coefficient[doc] += sign * per_unit * weights[i]
        return coefficient, constant
