"""precision@K: the share of the displayed top K that is relevant.

A document is relevant when judged at ``contract.relevant_grade`` or above. The denominator is
declared, as the tools disagree on it:

* ``k`` (default): K, a list shorter than K padded with non-relevant documents (trec_eval's ``P_K``,
  ``m_P.c``; Spark's ``precisionAt``; ranx);
* ``shown``: the documents the list shows within K, ``min(K, its length)`` (Elasticsearch's,
  MLflow's and Evidently's precision; TorchMetrics' ``adaptive_k``).

A request without a relevant document has no precision: the contract's ``empty_ideal`` sets it
aside or scores it 0, and it is counted either way. Under ``ties: average`` it is the expected
share over every order of each tie.

>>> Precision().to_plain(), Precision(denominator="shown").label(5)
({'precision': {'denominator': 'k'}}, 'precision@5')
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from ndcg_spark.measures.base import Components, Metric

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["Precision"]


class Precision(Metric):
    """precision@K = relevant in the top K / K (``k``) or / min(K, the list's length) (``shown``)."""

    name = "precision"
    title = "precision"
    meaning = "`relevant_in_top_k / k` (`denominator: k`) or `/ n_shown` (`shown`: the documents ranked within K)"
    components = ("relevant_in_top_k", "n_relevant", "n_shown")
    parameters = MappingProxyType({"denominator": ("k", "shown")})
    binary = True

    def value(self, c: Components, k: int) -> Column:
        from pyspark.sql import functions as F

        if self.params["denominator"] == "k":
            return c("relevant_in_top_k") / F.lit(k)
        # nothing shown, nothing relevant shown: 0 (a no-result list's value, where one is scored)
        return F.when(c("n_shown") > 0, c("relevant_in_top_k") / c("n_shown")).otherwise(F.lit(0.0))
