"""The plan's order: the documents that settle the most of the target's spread per judgment (pure Python).

A request's spread only falls as its unjudged documents are judged, and the most a judging can
leave of it (:func:`~ndcg_spark.judging.spread.worst_case`) often stays near the whole range until
the last ones are -- one document judged alone leaves every grade of the others. So the plan does
not take documents by swing alone (on the demo's night, 1,000 documents taken by swing settle 0.1 %
of the spread): each request's documents are taken **in swing order** (its **curve**: the most its
first ``j`` documents can leave, for every ``j``), and across requests the plan takes the **step**
that settles the most per judgment -- from where a request stands to the later point of its curve
with the largest ``weight x (left now - left then) / documents``, a step along the lower convex
hull of the curve. Ties: the request id, then the shorter step -- two rates count as tied when they
are equal but for the rounding of the doubles they are computed in (within :data:`RATE_TOLERANCE`,
relative): mathematically equal rates of two requests come out of different sums a bit apart, and
the declared rule, not that rounding, decides between them. Every plan is the head of a longer
one: a budget cuts the order, and each row states what its own prefix leaves.

A curve point whose worst case would try more than :data:`MAX_GRADINGS` gradings is not computed
(a request with many planned documents): no step ends there, and a row there
states the last point computed before it (the most is then at most that, not exactly it).

>>> curve = Curve("q1", 1.0, ("b", "c", "d"), {0: 0.6, 1: 0.5, 2: 0.1, 3: 0.0})
>>> other = Curve("q2", 1.0, ("e",), {0: 0.2, 1: 0.0})
>>> [(c.request_id, doc, rate) for c, doc, rate in plan_order([curve, other], budget=4)]  # b and c: 0.25 each
[('q1', 'b', 0.25), ('q1', 'c', 0.25), ('q2', 'e', 0.2), ('q1', 'd', 0.1)]
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["MAX_GRADINGS", "RATE_TOLERANCE", "Curve", "plan_order", "same_rate"]

#: the most gradings a curve point's worst case may try (beyond it the point is not computed)
MAX_GRADINGS = 20_000
#: two rates within this (relative to the larger) are tied: the doubles' rounding, not a difference
RATE_TOLERANCE = 1e-9


def same_rate(a: float, b: float) -> bool:
    """Whether two settled-per-document rates are equal but for rounding (:data:`RATE_TOLERANCE`).

    >>> same_rate(0.28571428571428575, 0.2857142857142857), same_rate(0.2857, 0.2858)
    (True, False)
    """
    return abs(a - b) <= RATE_TOLERANCE * max(abs(a), abs(b))


@dataclass(frozen=True)
class Curve:
    """A request's documents in swing order and the most each prefix can leave of its range
    (``left[j]``: after its first ``j`` documents; ``left[0]`` is the range; missing: not computed)."""

    request_id: str
    weight: float
    docs: tuple[str, ...]
    left: dict[int, float]

    def step(self, at: int) -> tuple[float, int] | None:
        """The best step from ``at``: (settled per document, the point it ends at), or None when
        nothing more settles."""
        best: tuple[float, int] | None = None
        for end in sorted(j for j in self.left if j > at):
            rate = self.weight * (self.left[at] - self.left[end]) / (end - at)
            if rate > 0 and (best is None or (rate > best[0] and not same_rate(rate, best[0]))):
                best = (rate, end)  # a tie keeps the shorter step
        return best

    def left_at(self, j: int) -> float:
        """The most the first ``j`` documents can leave: the point itself, else the last computed before it."""
        return self.left[max(i for i in self.left if i <= j)]


def plan_order(curves: Iterable[Curve], budget: int) -> Iterator[tuple[Curve, str, float]]:
    """The documents in plan order, at most ``budget`` of them: ``(curve, doc_id, rate)``, ``rate``
    the settled-per-document of the step that takes the document."""
    by_id = {c.request_id: c for c in curves}
    at = dict.fromkeys(by_id, 0)
    heap = [(-step[0], c.request_id, step[1]) for c in by_id.values() if (step := c.step(0)) is not None]
    heapq.heapify(heap)
    taken = 0
    while heap:
        rate, request_id, end = _first(heap)
        curve = by_id[request_id]
        for doc in curve.docs[at[request_id]:end]:
            if taken == budget:
                return
            yield curve, doc, -rate
            taken += 1
        at[request_id] = end
        if (step := curve.step(end)) is not None:
            heapq.heappush(heap, (-step[0], request_id, step[1]))


def _first(heap: list[tuple[float, str, int]]) -> tuple[float, str, int]:
    """Pop the next step: the largest rate, and among the rates tied with it (:func:`same_rate`) the
    smallest request id. The heap orders by rate first, so the tied ones are its next entries."""
    best = heapq.heappop(heap)
    tied = []
    while heap and same_rate(-heap[0][0], -best[0]):
        tied.append(heapq.heappop(heap))
    if tied:
        tied.append(best)
        best = min(tied, key=lambda s: s[1])
        tied.remove(best)
        for step in tied:
            heapq.heappush(heap, step)
    return best
