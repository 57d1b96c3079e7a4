"""The collecting plan: each request's candidates collected into one sorted list, scored at every K.

One shuffle groups a request's candidates into an array of structs, ``sort_array`` orders it
once (O(M log M) per request of M candidates), and the DCG at every K is summed over it in the
same pass (:func:`ndcg_spark.metrics.dcg.dcg`). Candidates of different requests are never
ranked together. Large requests are cut first (:mod:`ndcg_spark.scoring.large`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.dcg import count_unjudged, unjudged_bound_ideal
from ndcg_spark.metrics.ranked_list import RankedList
from ndcg_spark.scoring.columns import (
    REQUEST_KEYS,
    by_doc_id_descending,
    keys_as_strings,
    keys_frame,
    metrics_columns,
)
from ndcg_spark.scoring.inputs import ideal_of_judgments
from ndcg_spark.scoring.large import cut_to_top_k


def score_by_collecting(
    rows: DataFrame, judgments: DataFrame | None, contract: Contract, large: list | str | None
) -> DataFrame:
    """:func:`score_collected_lists` over ``rows``, cutting the ``large`` requests first (a list
    of keys, ``"all"`` or None: see :func:`ndcg_spark.scoring.large.find_large_requests`)."""
    if large is None:
        return score_collected_lists(rows, judgments, contract)
    if large == "all":
        return score_collected_lists(rows, judgments, contract, cut=True)
    keys = keys_frame(rows, large)
    small = score_collected_lists(join_null_safe(rows, keys, REQUEST_KEYS, "left_anti"), judgments, contract)
    large_cut = score_collected_lists(
        join_null_safe(rows, keys, REQUEST_KEYS, "left_semi"), judgments, contract, cut=True
    )
    return small.unionByName(large_cut)


def score_collected_lists(
    rows: DataFrame, judgments: DataFrame | None, contract: Contract, *, cut: bool = False
) -> DataFrame:
    """One row per request (the request keys, counts) with ``metrics``: an array of one struct
    per K (``k, dcg, idcg, n_unjudged_in_top_k``), exploded by the caller after the attributes join.

    ``rows``: the candidates with ``gain`` and ``judged``. ``cut``: collect only the rows that can
    reach the top max(K) (:func:`ndcg_spark.scoring.large.cut_to_top_k`), the counts from every row.
    """
    keys = [F.col(c) for c in REQUEST_KEYS]
    tie_aware = contract.order == "score" and contract.ties == "average"
    condensed = contract.unjudged.condenses
    # Ties are formed among the candidates that are ranked (judged ones only under `exclude`).
    ranked = F.col("judged") if condensed else F.lit(True)
    if tie_aware:
        rows = _with_tie_groups(rows, ranked)
        if condensed and contract.unjudged_gains is not None:
            # the bounds judge every candidate: their ties form among all of them
            rows = _with_tie_groups(rows, F.lit(True), "all_")
    counts = [
        F.count(F.lit(1)).alias("n_candidates"),
        F.count("grade").alias("n_judged"),
        F.count(F.when(F.col("grade") > 0, True)).alias("n_positive"),
    ]
    if contract.reads_relevance and contract.ideal_from == "candidates":  # else the judgments' count
        counts.append(F.count(F.when(F.col("relevant"), 1)).alias("n_relevant"))
    collected = cut_to_top_k(rows, contract, ranked, tie_aware) if cut else rows
    grouped = collected.groupBy(*keys).agg(
        # sort_array orders structs field by field with no comparator lambda (array_sort's
        # default comparator is a lambda, evaluated interpreted for every comparison)
        F.sort_array(
            F.collect_list(F.struct(*_item_fields(contract, tie_aware))), asc=not by_doc_id_descending(contract)
        ).alias("items"),
        *_ideal_of_candidates(contract),
        *([] if cut else counts),
    )
    if cut:  # the counts of every candidate, not of the rows kept
        grouped = join_null_safe(grouped, rows.groupBy(*keys).agg(*counts), REQUEST_KEYS)
    if contract.ideal_from == "judgments":
        assert judgments is not None  # checked in prepare_candidates
        grouped = _with_ideal_of_judgments(grouped, judgments, contract)
    if condensed:
        # the condensed list, computed once (a column of its own) for every K
        grouped = grouped.withColumn("ranked_items", F.filter(F.col("items"), lambda x: x["judged"]))
        ranked_items = F.col("ranked_items")
    else:
        ranked_items = F.col("items")
    grouped = grouped.select("*", *_bound_lists(contract, tie_aware))
    ranked_list = RankedList(ranked_items, _ITEM_FIELDS, ideal=F.col("ideal"), tie_aware=tie_aware,
                             n_relevant=F.col("n_relevant") if contract.reads_relevance else None)
    # the unjudged are counted on the full displayed list, the metrics over the ranked (condensed) one
    metrics = metrics_columns(contract, ranked_list, lambda k: count_unjudged(F.col("items"), k),
                              _what_ifs(contract, tie_aware))
    return keys_as_strings(grouped.select(*REQUEST_KEYS, "n_candidates", "n_judged", "n_positive", *metrics))


#: how a metric reads a list item's fields (:class:`~ndcg_spark.metrics.ranked_list.RankedList`)
_ITEM_FIELDS = {"gain": lambda x: x["gain"], "relevant": lambda x: x["relevant"]}


def _with_tie_groups(rows: DataFrame, ranked: Column, prefix: str = "") -> DataFrame:
    """``tie_start`` (ranked candidates of a higher score) and ``tie_size`` (ranked candidates of
    the same score) of every row, within its request (``prefix``: the same among all candidates,
    for the unjudged bounds under ``exclude``)."""
    keys = [F.col(c) for c in REQUEST_KEYS]
    rows = rows.withColumn(f"{prefix}ranked", ranked)
    by_request = Window.partitionBy(*keys, f"{prefix}ranked")
    return rows.withColumn(
        f"{prefix}tie_start", F.rank().over(by_request.orderBy(F.col("score").desc())) - 1
    ).withColumn(f"{prefix}tie_size", F.count(F.lit(1)).over(Window.partitionBy(*keys, f"{prefix}ranked", "score")))


def display_sort_key(contract: Contract) -> list[Column]:
    """A candidate's place in its list as two fields ``o1, o2`` that sort ascending in displayed
    order: ``(position, doc_id)``, ``(-score, doc_id)``, or under ``ties: doc_id_desc``
    ``(score, doc_id)``, sorted descending."""
    if contract.order == "position":
        return [F.col("position").alias("o1"), F.col("doc_id").alias("o2")]
    if by_doc_id_descending(contract):
        return [F.col("score").alias("o1"), F.col("doc_id").alias("o2")]
    return [(-F.col("score")).alias("o1"), F.col("doc_id").alias("o2")]


def _item_fields(contract: Contract, tie_aware: bool) -> list[Column]:
    """The fields of a list item, its sort key first: ``(position, doc_id)``, ``(-score, doc_id)``,
    or under ``ties: doc_id_desc`` ``(score, doc_id)``, sorted descending."""
    sort_key = display_sort_key(contract)
    ties = [F.col("tie_start"), F.col("tie_size")] if tie_aware else []
    if tie_aware and contract.unjudged.condenses and contract.unjudged_gains is not None:
        ties += [F.col("all_tie_start"), F.col("all_tie_size")]
    relevant = [F.col("relevant")] if contract.reads_relevance else []
    return [*sort_key, F.col("gain"), F.col("judged"), *ties, *relevant]


def _ideal_of_candidates(contract: Contract) -> list[Column]:
    """The ``ideal`` aggregate when the ideal comes from the candidates: the gains of the ranked
    candidates (unjudged as 0; none of them under ``exclude``), largest first. Collected beside
    the items as plain doubles: sorting an array of doubles is far cheaper than deriving it from
    the sorted structs."""
    if contract.ideal_from != "candidates":
        return []
    ideal_gain = F.coalesce(F.col("gain"), F.lit(0.0))
    if contract.unjudged.condenses:
        ideal_gain = F.when(F.col("judged"), ideal_gain)  # collect_list skips the nulls
    return [F.sort_array(F.collect_list(ideal_gain), asc=False).alias("ideal")]


def _with_ideal_of_judgments(grouped: DataFrame, judgments: DataFrame, contract: Contract) -> DataFrame:
    """``grouped`` with ``ideal``: the gains of every judged document of the request, retrieved
    or not, largest first (empty when the request has none); and, when a declared metric reads it,
    ``n_relevant``: how many of them are relevant."""
    joined = grouped.join(ideal_of_judgments(judgments, contract), "request_id", "left").withColumn(
        "ideal", F.coalesce(F.col("ideal"), F.array().cast("array<double>"))
    )
    if contract.reads_relevance:
        joined = joined.withColumn("n_relevant", F.coalesce(F.col("n_relevant"), F.lit(0).cast("bigint")))
    return joined


def _what_ifs(contract: Contract, tie_aware: bool) -> tuple[RankedList, RankedList] | None:
    """The lists of the two what-ifs (:func:`_bound_lists`), or None without a declared scale."""
    if contract.unjudged_gains is None:
        return None
    out = []
    for side in ("low", "high"):
        relevant = F.col(f"_n_relevant_{side}") if contract.reads_relevance else None
        out.append(RankedList(F.col(f"_shown_{side}"), _ITEM_FIELDS if tie_aware or contract.reads_relevance else {},
                              ideal=F.col(f"_ideal_{side}"), n_relevant=relevant, tie_aware=tie_aware,
                              arrays={} if tie_aware or contract.reads_relevance else {"gain": F.col(f"_shown_{side}")}))
    return out[0], out[1]


def _bound_lists(contract: Contract, tie_aware: bool) -> list[Column]:
    """The lists the what-ifs score, each a column of its own (computed once for every K): the full
    displayed list (``items``, nothing condensed) with every unjudged candidate judged at the scale's
    lowest / highest grade (its gain, and whether that grade is relevant), the ideal with those
    candidates added, and their relevant count."""
    if contract.unjudged_gains is None:
        return []
    items, ideal = F.col("items"), F.col("ideal")
    n_unjudged = F.col("n_candidates") - F.col("n_judged")
    prefix = "all_" if contract.unjudged.condenses else ""
    lists = []
    for side, value, grade in zip(("low", "high"), contract.unjudged_gains, contract.unjudged_grades):
        judged_at = F.lit(float(value))
        relevant = grade >= contract.relevant_grade  # what every unjudged candidate is judged at

        def item(x: Column) -> Column:
            fields = [F.coalesce(x["gain"], judged_at).alias("gain")]
            if tie_aware:
                fields += [x[f"{prefix}tie_start"].alias("tie_start"), x[f"{prefix}tie_size"].alias("tie_size")]
            if contract.reads_relevance:
                fields.append(F.when(x["judged"], x["relevant"]).otherwise(F.lit(relevant)).alias("relevant"))
            return F.struct(*fields)

        if tie_aware or contract.reads_relevance:
            shown = F.transform(items, item)
        else:
            shown = F.transform(items, lambda x: F.coalesce(x["gain"], judged_at))
        lists += [shown.alias(f"_shown_{side}"),
                  unjudged_bound_ideal(ideal, n_unjudged, value, contract.max_k).alias(f"_ideal_{side}")]
        if contract.reads_relevance:
            lists.append((F.col("n_relevant") + (n_unjudged if relevant else F.lit(0))).alias(f"_n_relevant_{side}"))
    return lists
