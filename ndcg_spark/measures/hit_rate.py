"""hit rate@K (success@K): 1 when the displayed top K holds a relevant document, else 0.

A document is relevant when judged at ``contract.relevant_grade`` or above (trec_eval's
``success_K``, ranx's ``hit_rate``). A request without a relevant document has no hit rate: the
contract's ``empty_ideal`` sets it aside or scores it 0, and it is counted either way. Its expected
value over the orders of a tie is not implemented: ``ties: average`` is refused for it.

>>> HitRate().to_plain(), HitRate().label(1)
('hit_rate', 'hit rate@1')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndcg_spark.measures.base import Components, Metric

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["HitRate"]


class HitRate(Metric):
    """hit rate@K = 1 if a relevant document is in the top K, else 0."""

    name = "hit_rate"
    title = "hit rate"
    meaning = "1 when `relevant_in_top_k > 0`, else 0 (trec_eval's `success_K`)"
    components = ("relevant_in_top_k", "n_relevant")
    binary = True
    tie_average = False

    def value(self, c: Components, k: int) -> Column:
        from pyspark.sql import functions as F

        return F.when(c("relevant_in_top_k") > 0, F.lit(1.0)).otherwise(F.lit(0.0))
