"""recall@K: the share of the request's relevant documents the displayed top K holds.

A document is relevant when judged at ``contract.relevant_grade`` or above (trec_eval's
``relevance_level``, default 1). The denominator is declared, as the tools disagree on it:

* ``all_relevant`` (default): every relevant document of the request under the contract's
  ``ideal_from`` -- its candidates, or every judged document of the request (trec_eval's
  ``recall_K``, Spark's ``recallAt``, ranx);
* ``capped``: ``min(K, R)``, so that a perfect top K scores 1 even when R > K (the metric-learning
  benchmarks' "R@K").

A request without a relevant document (R = 0) has no recall: the contract's ``empty_ideal`` sets
it aside or scores it 0, and it is counted either way.

>>> Recall().to_plain(), Recall(denominator="capped").to_plain()
({'recall': {'denominator': 'all_relevant'}}, {'recall': {'denominator': 'capped'}})
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from ndcg_spark.measures.base import Components, Metric

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["Recall"]


class Recall(Metric):
    """recall@K = relevant in the top K / R (``all_relevant``) or / min(K, R) (``capped``)."""

    name = "recall"
    title = "recall"
    meaning = ("`relevant_in_top_k / n_relevant` (`denominator: all_relevant`) or `/ min(k, n_relevant)` "
               "(`capped`)")
    components = ("relevant_in_top_k", "n_relevant")
    parameters = MappingProxyType({"denominator": ("all_relevant", "capped")})
    binary = True

    def value(self, c: Components, k: int) -> Column:
        from pyspark.sql import functions as F

        relevant = c("n_relevant")
        if self.params["denominator"] == "capped":
            relevant = F.least(relevant, F.lit(k))
        return c("relevant_in_top_k") / relevant
