"""The unjudged spread of one request: how far its unjudged documents can move it, and how much of
that a set of judgments can leave (Python; a one-list target's combinations in numpy).

A request's value on a target is its NDCG at the target's K (one system's mean) or the difference
of two (a comparison's delta, candidate first); without an ideal a side counts 0 here (judging can
give the request an NDCG where it had none). Its **unjudged range** is ``max - min`` of that value
over **every grading** of its unjudged documents -- each at any grade of the declared scale: the
documents its lists show, and under ``ideal_from: judgments`` every other unjudged document of the
request (judged, one enters the ideal of every list). The range contains every NDCG the judges can
make of the request, so it only shrinks as documents are judged, and is 0 once none is left. (The
what-ifs ``ndcg_unjudged_low`` / ``_high`` are two of those gradings, not its ends: a grade enters
the ideal too, so every unjudged document judged at the top grade can score *lower* than every one
at the lowest.) The target's **unjudged spread** is the mean of its requests' ranges
(:mod:`ndcg_spark.judging.target`).

Exact, without the ``S^m`` gradings:

* a list's DCG is *linear* in the gains given (a document weighs its discount: ``1/log2(rank + 1)``
  within K, its tie group's average under ``ties: average``, 0 below K), and a list's ideal depends
  only on *which* gains were given, not to whom -- so for each multiset of gains per group of
  documents that enter the same lists' ideals, the value is linear in the assignment, and its
  largest and smallest are the two assignments of the rearrangement inequality (gains sorted with,
  or against, the coefficients);
* a document that no list counts within K moves only ideals: a group of them entering one ideal
  (or lists that share one, ``ideal_from: judgments``) moves the value monotonically, so all at the
  lowest gain or all at the highest covers it; otherwise only its top K gains matter (multisets of
  at most K).

:func:`worst_case` gives the largest range a set of judgments can leave: the maximum over every
grading of the planned documents (those the lists count: every grade each; the others: every
multiset) of the range of the rest.

``tests/test_judging_spread.py`` checks both against every grading of small requests, scored by
the plain-Python oracle.

>>> scale = Scale.of([(0.0, 0.0), (1.0, 1.0), (2.0, 3.0), (3.0, 7.0)], k=3)  # exponential, grades 0..3
>>> shown = tuple(Shown(d, g, w) for d, g, w in zip("abc", (3.0, None, None), discounts(3, 3)))
>>> request = RequestLists("q1", (shown,), None)  # a judged (gain 3), b and c unjudged
>>> [round(v, 4) for v in value_range(request, scale)]  # b at grade 0 and c at 3: 0.7309; b, c at 0: 1.0
[0.7309, 1.0]
>>> value, grades, exact = worst_case(request, scale, ["b"])
>>> round(value, 4), grades, exact  # b judged 0 leaves all that room; judged 3, c moves it 0.834 .. 0.858
(0.2691, {'b': 0.0}, False)
>>> worst_case(request, scale, ["b", "c"])  # nothing left unjudged: whatever the grades, no range
(0.0, {'b': 0.0, 'c': 0.0}, True)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ndcg_spark.measures.ndcg import NDCG

__all__ = ["RequestLists", "Scale", "Shown", "discounts", "gradings", "idcg", "settle_bound", "value_range", "worst_case"]


@dataclass(frozen=True)
class Shown:
    """One candidate of a list as the spread weighs it."""

    doc_id: str
    #: its gain under the contract, None when unjudged
    gain: float | None
    #: what one unit of gain at its place adds to the list's DCG at K (0 below K)
    discount: float


@dataclass(frozen=True)
class RequestLists:
    """One request as a target sees it: one list per system of the target (the target's order: the
    candidate's first for a comparison); under ``ideal_from: judgments`` the gains of every judged
    document of the request and ``others``, its unjudged documents no list of the target shows
    (judged, they enter every list's ideal); under ``ideal_from: candidates`` ``judged_gains`` is
    None (each list's ideal is its own candidates')."""

    request_id: str
    lists: tuple[tuple[Shown, ...], ...]
    judged_gains: tuple[float, ...] | None
    others: tuple[str, ...] = ()

    def signs(self) -> tuple[int, ...]:
        """Each list's sign in the target: ``+1`` for the first, ``-1`` for a second (the baseline)."""
        return tuple(1 if i == 0 else -1 for i in range(len(self.lists)))

    @cached_property
    def structure(self) -> tuple[dict[str, tuple[int, ...]], dict[str, list[float]]]:
        """Each unjudged document's lists (whose ideal it enters once judged) and its discount in each."""
        return _reach_and_weights(self)

    def unjudged(self) -> tuple[str, ...]:
        """The request's unjudged documents that can move the target, in order of appearance."""
        return tuple(dict.fromkeys([s.doc_id for shown in self.lists for s in shown if s.gain is None]
                                   + list(self.others)))


@dataclass(frozen=True)
class Scale:
    """The declared scale as the spread uses it: each distinct gain with the lowest grade that
    gives it (ascending by grade), and the cutoff."""

    #: ``((grade, gain), ...)``: one per distinct gain, the lowest grade giving it
    grades: tuple[tuple[float, float], ...]
    k: int

    @classmethod
    def of(cls, grade_gains: Sequence[tuple[float, float]], k: int) -> Scale:
        """From every ``(grade, gain)`` of the scale, ascending by grade."""
        first: dict[float, float] = {}
        for grade, gain in grade_gains:
            first.setdefault(gain, grade)
        return cls(tuple(sorted((g, v) for v, g in first.items())), k)

    @property
    def gains(self) -> tuple[float, ...]:
        return tuple(gain for _, gain in self.grades)

    def grade_of(self, gain: float) -> float:
        return next(grade for grade, g in self.grades if g == gain)


#: a list's discounts and its ideal's DCG, as NDCG's definition gives them (:class:`~ndcg_spark.measures.ndcg.NDCG`)
discounts = NDCG.discounts
idcg = NDCG.ideal_dcg


def value_range(request: RequestLists, scale: Scale, judged: Mapping[str, float] | None = None) -> tuple[float, float]:
    """The smallest and the largest value of the request on its target over every grading of its
    unjudged documents, once those of ``judged`` have those gains (exact; see the module docstring)."""
    problem = _Problem.of(request, scale, judged or {})
    return problem.low, problem.high


def worst_case(request: RequestLists, scale: Scale, planned: Sequence[str]) -> tuple[float, dict[str, float], bool]:
    """The largest unjudged range the request can have once ``planned`` (some of its unjudged
    documents) are judged, over every grade each can get; a grade per document that leaves it
    (deterministic: the first found in a fixed order); and whether every grading leaves the same.

    Exact: the planned documents a list counts within K are enumerated over every grade, the
    others (they move only ideals) over the multisets of their gains; for each, the range of the
    rest by :func:`value_range`.
    """
    docs = list(dict.fromkeys(planned))
    if not docs:
        low, high = value_range(request, scale)
        return high - low, {}, True
    counted, ideal_only = _Problem.split(request, docs)
    gains = scale.gains
    choices: list[list[dict[str, float]]] = [
        [dict(zip(counted, combo)) for combo in itertools.product(gains, repeat=len(counted))]]
    for members in ideal_only:
        top = min(len(members), scale.k)
        choices.append([dict(zip(members, sorted(combo, reverse=True) + [min(gains)] * (len(members) - top)))
                        for combo in itertools.combinations_with_replacement(gains, top)])
    best: tuple[float, dict[str, float]] | None = None
    least = math.inf
    for parts in itertools.product(*choices):
        given = {doc: gain for part in parts for doc, gain in part.items()}
        low, high = value_range(request, scale, given)
        left = max(high - low, 0.0)
        least = min(least, left)
        if best is None or left > best[0] + 1e-15:
            best = (left, given)
    assert best is not None
    return best[0], {d: scale.grade_of(best[1][d]) for d in docs}, best[0] - least <= 1e-12


def settle_bound(request: RequestLists, scale: Scale, docs: Sequence[str], whole: float) -> float:
    """An upper bound on what judging the first ``j`` of ``docs`` settles of the request's range
    (``whole``: :func:`value_range`'s ends apart) per document, over every ``j`` (``(whole - left) /
    j``, ``left`` the most they can leave): ``left`` is at least what one grading of them leaves --
    all at the lowest, or all at the highest gain -- so two ranges per prefix instead of its every
    grading."""
    best = whole / len(docs) if docs and set(docs) >= set(request.unjudged()) else 0.0
    gains = sorted(scale.gains)
    for j in range(1, len(docs) + 1):
        least = 0.0
        for gain in (gains[0], gains[-1]):
            lo, hi = value_range(request, scale, dict.fromkeys(docs[:j], gain))
            least = max(least, hi - lo)
        best = max(best, (whole - least) / j)
    return best


def gradings(request: RequestLists, scale: Scale, planned: Sequence[str]) -> int:
    """How many gradings of ``planned`` :func:`worst_case` tries (each then solves the rest)."""
    counted, ideal_only = _Problem.split(request, list(dict.fromkeys(planned)))
    n = len(scale.gains)
    return n ** len(counted) * math.prod(math.comb(min(len(m), scale.k) + n - 1, n - 1) for m in ideal_only)


@dataclass
class _Group:
    """Open documents that enter the same lists' ideals: ``counted`` when a list counts one of them
    within K (their gains are assigned by rearrangement), else ideal-only (``monotone`` when they
    move one ideal: all lowest or all highest)."""

    reach: tuple[int, ...]
    members: list[str]
    counted: bool
    monotone: bool

    def options(self, scale: Scale) -> list[tuple[float, ...]]:
        """The gains to try, largest first: every multiset (counted), the two ends (monotone), or
        every multiset of the top K (the rest at the lowest gain change no ideal)."""
        gains = sorted(scale.gains)
        if self.counted:
            combos = itertools.combinations_with_replacement(gains, len(self.members))
        elif self.monotone:
            top = min(len(self.members), scale.k)
            combos = iter([(gains[0],) * top, (gains[-1],) * top])
        else:
            combos = itertools.combinations_with_replacement(gains, min(len(self.members), scale.k))
        return [tuple(sorted(c, reverse=True)) for c in combos]


def _reach_and_weights(request: RequestLists) -> tuple[dict[str, tuple[int, ...]], dict[str, list[float]]]:
    """Each unjudged document's lists (whose ideal it enters once judged) and its discount in each."""
    weights: dict[str, list[float]] = {}
    reach: dict[str, set[int]] = {}
    for i, shown in enumerate(request.lists):
        for s in shown:
            if s.gain is None:
                weights.setdefault(s.doc_id, [0.0] * len(request.lists))[i] = s.discount
                reach.setdefault(s.doc_id, set()).add(i)
    for doc in request.others:
        weights.setdefault(doc, [0.0] * len(request.lists))
    every = tuple(range(len(request.lists)))
    shared = request.judged_gains is not None
    return {d: every if shared else tuple(sorted(reach.get(d, ()))) for d in weights}, weights


@dataclass
class _Problem:
    """The request with some documents judged: each list's judged DCG and top-K fixed ideal gains,
    the discounts of its open documents, their groups; ``low`` / ``high`` solved on construction."""

    signs: tuple[int, ...]
    judged_dcg: list[float]
    fixed_ideal: list[list[float]]
    weights: dict[str, list[float]]
    groups: list[_Group]
    k: int
    low: float = 0.0
    high: float = 0.0

    @staticmethod
    def split(request: RequestLists, docs: Sequence[str]) -> tuple[list[str], list[list[str]]]:
        """``docs`` as :func:`worst_case` enumerates them: those a list counts within K, and the
        others in groups by the ideals they enter."""
        reach, weights = request.structure
        counted = [d for d in docs if any(w != 0.0 for w in weights.get(d, ()))]
        ideal_only: dict[tuple[int, ...], list[str]] = {}
        for d in docs:
            if d not in counted:
                ideal_only.setdefault(reach.get(d, ()), []).append(d)
        return counted, [members for _, members in sorted(ideal_only.items())]

    @classmethod
    def of(cls, request: RequestLists, scale: Scale, judged: Mapping[str, float]) -> _Problem:
        reach, weights = request.structure
        n = len(request.lists)
        judged_dcg = [0.0] * n
        fixed: list[list[float]] = [list(request.judged_gains or ()) for _ in range(n)]
        for i, shown in enumerate(request.lists):
            for s in shown:
                gain = s.gain if s.gain is not None else judged.get(s.doc_id)
                if gain is not None:
                    judged_dcg[i] += gain * s.discount
                if s.gain is not None and request.judged_gains is None:
                    fixed[i].append(s.gain)
        for doc, gain in judged.items():
            for i in reach.get(doc, ()):
                fixed[i].append(gain)
        groups: dict[tuple[tuple[int, ...], bool], list[str]] = {}
        for doc in weights:
            if doc not in judged:
                groups.setdefault((reach[doc], any(w != 0.0 for w in weights[doc])), []).append(doc)
        shared = request.judged_gains is not None
        problem = cls(request.signs(), judged_dcg, [sorted(f, reverse=True)[:scale.k] for f in fixed],
                      {d: w for d, w in weights.items() if d not in judged},
                      [_Group(r, members, counted, len(r) <= 1 or shared) for (r, counted), members in sorted(groups.items())],
                      scale.k)
        problem._solve(scale)
        return problem

    def _solve(self, scale: Scale) -> None:
        """``low`` and ``high``: over each group's options, the ideals then fixed, the two rearrangements."""
        self.low, self.high = self._solve_one_list(scale) if len(self.signs) == 1 else self._solve_every(scale)

    def _solve_every(self, scale: Scale) -> tuple[float, float]:
        """``(low, high)`` combination by combination (any number of lists)."""
        low, high = math.inf, -math.inf
        for combo in itertools.product(*(g.options(scale) for g in self.groups)):
            ideals = [list(f) for f in self.fixed_ideal]
            for group, gains in zip(self.groups, combo):
                for i in group.reach:
                    ideals[i].extend(gains)
            inverse = [1.0 / best if (best := idcg(ideal, self.k)) > 0 else 0.0 for ideal in ideals]
            constant = sum(sign * dcg * inv for sign, dcg, inv in zip(self.signs, self.judged_dcg, inverse))
            top = bottom = constant
            for group, gains in zip(self.groups, combo):
                if group.counted:  # gains largest first: with the coefficients sorted alike, the largest sum
                    coefficients = sorted((sum(sign * w * inv for sign, w, inv in zip(self.signs, self.weights[d], inverse))
                                           for d in group.members), reverse=True)
                    top += sum(c * g for c, g in zip(coefficients, gains))
                    bottom += sum(c * g for c, g in zip(reversed(coefficients), gains))
            low, high = min(low, bottom), max(high, top)
        return (low, high) if low <= high else (0.0, 0.0)

    def _solve_one_list(self, scale: Scale) -> tuple[float, float]:
        """:meth:`_solve` for one list (a system's mean), every combination of the groups' options at
        once in numpy: the same ideals, inverses and rearrangements, the sums added in another order."""
        import numpy as np

        parts = [_options(g.counted, g.monotone, len(g.members), scale) for g in self.groups]
        picks = np.indices([len(p) for p in parts]).reshape(len(parts), -1) if parts else np.zeros((0, 1), dtype=int)
        extra = [p[i] for p, i in zip(parts, picks)]
        fixed = np.asarray(self.fixed_ideal[0], dtype=float)
        n = picks.shape[1]
        ideals = np.concatenate([np.broadcast_to(fixed, (n, len(fixed))), *extra], axis=1)
        ideals = -np.sort(-ideals, axis=1)[:, :self.k]
        idcg = (ideals / _log2_places(ideals.shape[1])).sum(axis=1)
        with np.errstate(divide="ignore"):
            inverse = np.where(idcg > 0, 1.0 / np.where(idcg > 0, idcg, 1.0), 0.0)
        top = bottom = self.signs[0] * self.judged_dcg[0] * inverse
        for group, gains in zip(self.groups, extra):
            if group.counted:  # gains largest first: with the coefficients sorted alike, the largest sum
                weights = np.sort(np.array([self.weights[d][0] for d in group.members]))[::-1]
                coefficients = self.signs[0] * weights[None, :] * inverse[:, None]
                top = top + (coefficients * gains).sum(axis=1)
                bottom = bottom + (coefficients[:, ::-1] * gains).sum(axis=1)
        low, high = float(bottom.min()), float(top.max())
        return (low, high) if low <= high else (0.0, 0.0)


@functools.lru_cache(maxsize=4096)
def _options(counted: bool, monotone: bool, size: int, scale: Scale):
    """:meth:`_Group.options` as a numpy array (one row per option), cached by the group's shape."""
    import numpy as np

    group = _Group((), [""] * size, counted, monotone)
    rows = group.options(scale)
    return np.array(rows, dtype=float).reshape(len(rows), len(rows[0]) if rows else 0)


@functools.lru_cache(maxsize=64)
def _log2_places(n: int):
    """``log2(p + 2)`` for the ideal's places ``p = 0 .. n - 1`` (IDCG's divisors)."""
    import numpy as np

    return np.array([math.log2(p + 2.0) for p in range(n)])
