"""Each request's lists, collected once: the one pass over the inputs a judging plan makes.

A judgment serves every ranker of its request, and under ``ideal_from: judgments`` a document
judged relevant enters the ideal of every system of the request, shown or not. So the candidates
are grouped by **request** (every system together, one shuffle), each system's list sorted in
displayed order, beside the gains of every judged document of the request. Everything the swings
(:mod:`ndcg_spark.judging.swings`) and the plan's spread (:mod:`ndcg_spark.judging.plan`) read
comes from these rows.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.metrics.gain import gain
from ndcg_spark.scoring.collecting import display_sort_key
from ndcg_spark.scoring.columns import by_doc_id_descending
from ndcg_spark.scoring.inputs import prepare_judgments

__all__ = ["LIST_ROW_COLUMNS", "list_rows", "request_lists"]

#: the columns of :func:`list_rows`: one system's list of one request
LIST_ROW_COLUMNS = ("system", "pool_version", "request_id", "items", "judged_ideal", "unjudged")


def request_lists(rows: DataFrame, judgments: DataFrame | None, contract: Contract) -> DataFrame:
    """One row per request: ``request_id``, ``lists`` (one struct per system and pool version:
    ``system, pool_version, items``, the items sorted in displayed order) and ``judged_ideal`` (the
    gains of every judged document of the request, largest first; null under ``ideal_from:
    candidates``).

    ``rows``: the candidates with ``gain`` and ``judged``
    (:func:`ndcg_spark.scoring.score.scoring_rows`). An item is ``o1, o2, doc_id, gain, judged``:
    its sort key (``(position, doc_id)``, ``(-score, doc_id)`` or, under ``ties: doc_id_desc``,
    ``(score, doc_id)`` sorted descending), its gain (null: unjudged) and whether it is judged.
    """
    item = F.struct(*display_sort_key(contract), "doc_id", "gain", "judged", "system", "pool_version")
    grouped = rows.groupBy("request_id").agg(F.collect_list(item).alias("_all"))
    systems = F.array_distinct(F.transform("_all", lambda x: F.struct(x["system"].alias("system"),
                                                                       x["pool_version"].alias("pool_version"))))
    lists = F.transform(systems, lambda s: F.struct(
        s["system"].alias("system"), s["pool_version"].alias("pool_version"), _sorted_items(s, contract).alias("items")))
    out = grouped.select("request_id", lists.alias("lists"))
    if contract.ideal_from == "judgments":
        assert judgments is not None  # checked when the candidates were prepared
        judged = (prepare_judgments(judgments, contract).filter(F.col("grade").isNotNull())
                  .groupBy("request_id")
                  .agg(F.sort_array(F.collect_list(gain(F.col("grade"), contract.gain)), asc=False).alias("judged_ideal")))
        return out.join(judged, "request_id", "left").select(
            "request_id", "lists", F.coalesce("judged_ideal", F.array().cast("array<double>")).alias("judged_ideal"))
    return out.withColumn("judged_ideal", F.lit(None).cast("array<double>"))


def _sorted_items(system: Column, contract: Contract) -> Column:
    """The items of one system and pool version of ``_all``, in displayed order."""
    mine = F.filter("_all", lambda x: x["system"].eqNullSafe(system["system"])
                    & x["pool_version"].eqNullSafe(system["pool_version"]))
    items = F.transform(mine, lambda x: F.struct(*[x[f].alias(f) for f in ("o1", "o2", "doc_id", "gain", "judged")]))
    return F.sort_array(items, asc=not by_doc_id_descending(contract))


def list_rows(lists: DataFrame, contract: Contract) -> DataFrame:
    """One row per request x system (:data:`LIST_ROW_COLUMNS`): its sorted ``items``, the request's
    ``judged_ideal`` and ``unjudged``, the documents whose judgment can move this list's NDCG --
    its own unjudged candidates, or under ``ideal_from: judgments`` every unjudged document of the
    request (judged relevant, one enters this list's ideal, shown here or not)."""
    def unjudged_of(items: Column) -> Column:
        return F.transform(F.filter(items, lambda x: ~x["judged"]), lambda x: x["doc_id"])

    if contract.ideal_from == "judgments":
        request_wide = F.array_distinct(F.flatten(F.transform("lists", lambda s: unjudged_of(s["items"]))))
        lists = lists.withColumn("_request_unjudged", request_wide)
    exploded = lists.select("request_id", "judged_ideal", *(["_request_unjudged"] if "_request_unjudged" in
                                                            lists.columns else []), F.explode("lists").alias("_l"))
    unjudged = F.col("_request_unjudged") if contract.ideal_from == "judgments" else unjudged_of(F.col("_l.items"))
    return exploded.select(F.col("_l.system").alias("system"), F.col("_l.pool_version").alias("pool_version"),
                           "request_id", F.col("_l.items").alias("items"), "judged_ideal", unjudged.alias("unjudged"))
