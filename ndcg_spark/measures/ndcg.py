"""NDCG@K: the displayed order's DCG over the ideal order's (SPEC §2).

``DCG@K = sum over p <= K of gain(grade_p) / log2(p + 1)`` with the contract's gain; the ideal
orders the gains of the contract's ``ideal_from`` (the request's candidates, or every judged
document of the request) largest first. A request whose ideal DCG is 0 (no positive gain) has no
NDCG: the contract's ``empty_ideal`` sets it aside or scores it 0, and it is counted either way.

>>> NDCG().to_plain(), NDCG().label(10), NDCG().what_ifs
('ndcg', 'NDCG@10', ('ndcg_unjudged_low', 'ndcg_unjudged_high'))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ndcg_spark.measures.base import Components, Metric

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["NDCG"]


class NDCG(Metric):
    """NDCG@K = DCG@K / IDCG@K; no ideal when IDCG@K = 0."""

    name = "ndcg"
    title = "NDCG"
    meaning = "`dcg / idcg`: the displayed order's discounted gain over the ideal order's"
    components = ("dcg", "idcg")
    trec_eval = "ndcg_cut_{k}"
    legacy = True

    def value(self, c: Components, k: int) -> Column:
        return c("dcg") / c("idcg")

    def has_ideal(self, c: Components) -> Column:
        return c("idcg") > 0

    # ------------------------------------------------------------------ in plain Python (judge-next's spread)
    @staticmethod
    def discounts(n: int, k: int, scores: Sequence[float] | None = None) -> list[float]:
        """What one unit of gain adds to a list's DCG@k at each of its ``n`` places in displayed order:
        ``1/log2(rank + 1)`` within the top ``k``, 0 below; with ``scores`` (``ties: average``), each tie
        group's average discount over the ranks it occupies within ``k`` (McSherry & Najork). NDCG is
        linear in the gains given at these places (judge-next's exact ranges rest on it).

        >>> [round(d, 4) for d in NDCG.discounts(3, 2)], [round(d, 4) for d in NDCG.discounts(3, 2, [5.0, 5.0, 1.0])]
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

    @staticmethod
    def ideal_dcg(gains: Iterable[float], k: int) -> float:
        """IDCG@k: DCG@k of ``gains`` sorted descending.

        >>> round(NDCG.ideal_dcg([1.0, 7.0, 3.0, 0.0], 3), 6)
        9.392789
        """
        ranked = sorted(gains, reverse=True)[:k]
        return sum(g / math.log2(p + 2.0) for p, g in enumerate(ranked) if g != 0.0)
