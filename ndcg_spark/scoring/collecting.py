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
from ndcg_spark.metrics.dcg import count_unjudged, dcg, expected_dcg, unjudged_bound_ideal
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
    # Ties are formed among the candidates that are ranked (judged ones only under `exclude`).
    ranked = F.col("judged") if contract.unjudged == "exclude" else F.lit(True)
    if tie_aware:
        rows = _with_tie_groups(rows, ranked)
        if contract.unjudged == "exclude" and contract.unjudged_gains is not None:
            # the bounds judge every candidate: their ties form among all of them
            rows = _with_tie_groups(rows, F.lit(True), "all_")
    counts = [
        F.count(F.lit(1)).alias("n_candidates"),
        F.count("grade").alias("n_judged"),
        F.count(F.when(F.col("grade") > 0, True)).alias("n_positive"),
    ]
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
    if contract.unjudged == "exclude":
        # the condensed list, computed once (a column of its own) for every K
        grouped = grouped.withColumn("ranked_items", F.filter(F.col("items"), lambda x: x["judged"]))
        ranked_items = F.col("ranked_items")
    else:
        ranked_items = F.col("items")
    grouped = grouped.select("*", *_bound_lists(contract, tie_aware))
    metrics = metrics_columns(contract, _per_k(contract, tie_aware, ranked_items), _bounds(contract, tie_aware))
    return keys_as_strings(grouped.select(*REQUEST_KEYS, "n_candidates", "n_judged", "n_positive", *metrics))


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
    if tie_aware and contract.unjudged == "exclude" and contract.unjudged_gains is not None:
        ties += [F.col("all_tie_start"), F.col("all_tie_size")]
    return [*sort_key, F.col("gain"), F.col("judged"), *ties]


def _ideal_of_candidates(contract: Contract) -> list[Column]:
    """The ``ideal`` aggregate when the ideal comes from the candidates: the gains of the ranked
    candidates (unjudged as 0; none of them under ``exclude``), largest first. Collected beside
    the items as plain doubles: sorting an array of doubles is far cheaper than deriving it from
    the sorted structs."""
    if contract.ideal_from != "candidates":
        return []
    ideal_gain = F.coalesce(F.col("gain"), F.lit(0.0))
    if contract.unjudged == "exclude":
        ideal_gain = F.when(F.col("judged"), ideal_gain)  # collect_list skips the nulls
    return [F.sort_array(F.collect_list(ideal_gain), asc=False).alias("ideal")]


def _with_ideal_of_judgments(grouped: DataFrame, judgments: DataFrame, contract: Contract) -> DataFrame:
    """``grouped`` with ``ideal``: the gains of every judged document of the request, retrieved
    or not, largest first (empty when the request has none)."""
    return grouped.join(ideal_of_judgments(judgments, contract), "request_id", "left").withColumn(
        "ideal", F.coalesce(F.col("ideal"), F.array().cast("array<double>"))
    )


def _per_k(contract: Contract, tie_aware: bool, ranked_items: Column) -> list[tuple[int, Column, Column, Column]]:
    """``(k, dcg, idcg, unjudged in the top k)`` for every K; the unjudged are counted on the
    full displayed list, the DCG over the ranked (condensed under ``exclude``) one."""
    items, ideal = F.col("items"), F.col("ideal")
    per_k = []
    for k in contract.k:
        shown = expected_dcg(ranked_items, k) if tie_aware else dcg(ranked_items, k, lambda x: x["gain"])
        per_k.append((k, shown, dcg(ideal, k), count_unjudged(items, k)))
    return per_k


def _bound_lists(contract: Contract, tie_aware: bool) -> list[Column]:
    """The lists the unjudged bounds sum over, each a column of its own (computed once for every
    K): the full displayed list (``items``, nothing condensed) with every unjudged gain set to the
    scale's lowest / highest gain, and the ideal with those candidates added."""
    if contract.unjudged_gains is None:
        return []
    items, ideal = F.col("items"), F.col("ideal")
    n_unjudged = F.col("n_candidates") - F.col("n_judged")
    prefix = "all_" if contract.unjudged == "exclude" else ""
    lists = []
    for side, value in zip(("low", "high"), contract.unjudged_gains):
        judged_at = F.lit(float(value))
        if tie_aware:
            shown = F.transform(items, lambda x: F.struct(
                F.coalesce(x["gain"], judged_at).alias("gain"),
                x[f"{prefix}tie_start"].alias("tie_start"), x[f"{prefix}tie_size"].alias("tie_size")))
        else:
            shown = F.transform(items, lambda x: F.coalesce(x["gain"], judged_at))
        lists += [shown.alias(f"_shown_{side}"),
                  unjudged_bound_ideal(ideal, n_unjudged, value, contract.max_k).alias(f"_ideal_{side}")]
    return lists


def _bounds(contract: Contract, tie_aware: bool) -> list[tuple[Column, Column, Column, Column]] | None:
    """Per K the ``(dcg, idcg)`` of the low and of the high unjudged bound over
    :func:`_bound_lists` (None without a declared scale)."""
    if contract.unjudged_gains is None:
        return None
    per_k = []
    for k in contract.k:
        terms = []
        for side in ("low", "high"):
            shown = F.col(f"_shown_{side}")
            terms += [expected_dcg(shown, k) if tie_aware else dcg(shown, k), dcg(F.col(f"_ideal_{side}"), k)]
        per_k.append(tuple(terms))
    return per_k
