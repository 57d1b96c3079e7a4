"""Contract presets: the conventions of the tools teams already trust, as explicit contract fields.

A preset is shorthand in the ``contract:`` section (``{preset: trec_eval}``): it resolves to the
fields below, and any field given beside it overrides the preset's. What is stamped and
fingerprinted is the resolved contract -- the preset's name is not part of it -- so
``{preset: trec_eval}`` and the same fields spelled out are the same contract. A preset sets no
``k``: the cutoffs are the question asked, not a convention (the contract's default applies).

Where each convention comes from (read in the tools' sources; docs/interop.md):

``trec_eval`` (``ndcg_cut``, also through pytrec_eval)
    gain = the qrels' relevance value (``m_ndcg_cut.c``: "Gain values are the relevance values in
    the qrels file"; only ``gain > 0`` is summed); documents ordered by score descending, ties by
    docno descending (``form_res_rels.c``, ``comp_sim_docno``: ``strcmp(p2->docno, p1->docno)``;
    the rank column is ignored, ``get_trec_results.c``); the ideal from every judged document of
    the query (``rel_levels`` counts the qrels, retrieved or not); a document without a qrel
    has gain 0; a negative relevance is judged with gain 0 (only ``gain > 0`` is summed, and the
    ideal counts the levels above 0); an ideal of 0 leaves NDCG at 0 (no division), and the query
    counts in the mean. A query of the qrels the run has no line for is left out of the mean
    (``no_results: exclude``), unless ``-c`` (``{preset: trec_eval, no_results: zero}``).
``ranking_evaluator`` (Spark's ``RankingEvaluator(metricName="ndcgAtK")`` / ``RankingMetrics.ndcgAt``)
    binary relevance: a predicted document is relevant iff it is in the label set (gain 1); the
    ideal is ``min(|labels|, k)`` ones (from the labels, retrieved or not); the prediction array's
    order is the displayed order; an empty label set scores 0 and counts in the mean; so does an
    empty prediction (``no_results: zero``; SPARK-14886). Its panel: ``ndcgAtK``, ``precisionAtK``
    (``/ K``), ``recallAtK`` and ``meanAveragePrecisionAtK`` (``/ min(|labels|, K)``).

Each preset declares its tool's whole panel of metrics (``trec_eval``: ``ndcg_cut``, ``recall``,
``P``, ``map_cut``, ``success``, ``recip_rank``); ``metrics:`` beside it declares fewer or others.

>>> resolve_preset({"preset": "trec_eval", "k": [10]})["ties"]
'doc_id_desc'
>>> resolve_preset({"preset": "trec_eval", "gain": "exponential"})["gain"]
'exponential'
>>> resolve_preset({"preset": "ndcg"})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: contract.preset: must be one of ranking_evaluator, trec_eval; got 'ndcg'
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ndcg_spark.errors import ContractError

#: preset name -> the contract fields it stands for
PRESETS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "ranking_evaluator": MappingProxyType({
        "gain": "binary",
        "discount": "log2",
        "order": "position",
        "ideal_from": "judgments",
        "unjudged": "separate",
        "empty_ideal": "zero",
        "no_results": "zero",
        # precisionAtK, recallAtK, meanAveragePrecisionAtK (/ min(|labels|, K)), ndcgAtK
        "metrics": ("ndcg", "precision", "recall", MappingProxyType({"average_precision": {"denominator": "capped"}})),
    }),
    "trec_eval": MappingProxyType({
        "gain": "linear",
        "discount": "log2",
        "order": "score",
        "ties": "doc_id_desc",
        "ideal_from": "judgments",
        "unjudged": "separate",
        "empty_ideal": "zero",
        "negative_grades": "zero",
        "no_results": "exclude",
        # ndcg_cut_K, recall_K, P_K, map_cut_K (/ R), success_K and recip_rank (no cutoff: within the
        # largest K, which equals it when that K is at least the run's depth, as trec_eval's 1000 is)
        "metrics": ("ndcg", "recall", "precision", "average_precision", "hit_rate",
                    MappingProxyType({"reciprocal_rank": {"cutoff": "deepest"}})),
    }),
})


def resolve_preset(data: Mapping[str, Any], path: str = "contract") -> dict[str, Any]:
    """``data`` with its ``preset`` (if any) replaced by the preset's fields; the fields given in
    ``data`` win over the preset's."""
    if "preset" not in data:
        return dict(data)
    name = data["preset"]
    if not isinstance(name, str) or name not in PRESETS:
        raise ContractError(f"{path}.preset", f"must be one of {', '.join(sorted(PRESETS))}; got {name!r}")
    given = {key: value for key, value in data.items() if key != "preset"}
    return {**PRESETS[name], **given}


__all__ = ["PRESETS", "resolve_preset"]
