"""Average precision@K: precision at each relevant document's rank within K, summed, over a
declared denominator.

A document is relevant when judged at ``contract.relevant_grade`` or above. The denominator is
declared, as the tools disagree on it:

* ``all_relevant`` (default): R, every relevant document of the request under the contract's
  ``ideal_from`` (trec_eval's ``map_cut_K``, ``m_map_cut.c``; ranx);
* ``capped``: ``min(K, R)``, so that a perfect top K scores 1 (Spark's ``meanAveragePrecisionAt``;
  recommenders since its PR #2004).

A request without a relevant document (R = 0) has no average precision: the contract's
``empty_ideal`` sets it aside or scores it 0, and it is counted either way. Its expected value over
the orders of a tie is not implemented: ``ties: average`` is refused for it.

>>> AveragePrecision(denominator="capped").to_plain(), AveragePrecision().label(10)
({'average_precision': {'denominator': 'capped'}}, 'AP@10')
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from ndcg_spark.measures.base import Components, Metric

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["AveragePrecision"]


class AveragePrecision(Metric):
    """AP@K = precision_sum / R (``all_relevant``) or / min(K, R) (``capped``)."""

    name = "average_precision"
    title = "AP"
    meaning = "`precision_sum / n_relevant` (`denominator: all_relevant`) or `/ min(k, n_relevant)` (`capped`)"
    components = ("precision_sum", "n_relevant")
    parameters = MappingProxyType({"denominator": ("all_relevant", "capped")})
    binary = True
    tie_average = False

    def value(self, c: Components, k: int) -> Column:
        from pyspark.sql import functions as F

        relevant = c("n_relevant")
        if self.params["denominator"] == "capped":
            relevant = F.least(relevant, F.lit(k))
        return c("precision_sum") / relevant
