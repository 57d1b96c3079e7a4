"""NDCG@K: the displayed order's DCG over the ideal order's (SPEC §2).

``DCG@K = sum over p <= K of gain(grade_p) / log2(p + 1)`` with the contract's gain; the ideal
orders the gains of the contract's ``ideal_from`` (the request's candidates, or every judged
document of the request) largest first. A request whose ideal DCG is 0 (no positive gain) has no
NDCG: the contract's ``empty_ideal`` sets it aside or scores it 0, and it is counted either way.

>>> NDCG().to_plain(), NDCG().label(10), NDCG().what_ifs
('ndcg', 'NDCG@10', ('ndcg_unjudged_low', 'ndcg_unjudged_high'))
"""

from __future__ import annotations

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
    legacy = True

    def value(self, c: Components, k: int) -> Column:
        return c("dcg") / c("idcg")

    def has_ideal(self, c: Components) -> Column:
        return c("idcg") > 0
