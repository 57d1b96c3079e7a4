"""Reciprocal rank: 1 / the displayed rank of the first relevant document, 0 when none is found.

A document is relevant when judged at ``contract.relevant_grade`` or above. Where the search stops
is declared, as the tools disagree on it:

* ``cutoff: k`` (default): within the top K of the row (ranx's ``mrr@K``);
* ``cutoff: deepest``: within the contract's largest K, the same on every K's row -- trec_eval's
  ``recip_rank`` (no cutoff) whenever the largest K is at least the run's depth (trec_eval's runs
  are at most 1000 deep: ``k: [..., 1000]``).

A request without a relevant document has no reciprocal rank: the contract's ``empty_ideal`` sets
it aside or scores it 0, and it is counted either way. Its expected value over the orders of a tie
is not implemented: ``ties: average`` is refused for it.

>>> ReciprocalRank().to_plain(), ReciprocalRank(cutoff="deepest").label(10)
({'reciprocal_rank': {'cutoff': 'k'}}, 'RR@10')
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from ndcg_spark.measures.base import Components, Metric

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["ReciprocalRank"]


class ReciprocalRank(Metric):
    """RR@K = 1 / the first relevant rank r when 0 < r <= K (``cutoff: k``) or r > 0 (``deepest``), else 0."""

    name = "reciprocal_rank"
    title = "RR"
    meaning = ("`1 / first_relevant_rank` when it is within K (`cutoff: k`) or within the contract's largest K "
               "(`deepest`: trec_eval's `recip_rank`), else 0")
    components = ("first_relevant_rank", "n_relevant")
    parameters = MappingProxyType({"cutoff": ("k", "deepest")})
    binary = True
    tie_average = False

    def value(self, c: Components, k: int) -> Column:
        from pyspark.sql import functions as F

        rank = c("first_relevant_rank")
        found = rank > 0 if self.params["cutoff"] == "deepest" else (rank > 0) & (rank <= k)
        return F.when(found, F.lit(1.0) / rank).otherwise(F.lit(0.0))
