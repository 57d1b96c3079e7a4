"""Requests too large to collect: found by one counting job, cut to what can reach the top max(K).

A request with more than :data:`LARGE_REQUEST` candidates (one runaway query among ordinary ones)
would make its collected list -- held in one task's memory -- the job's limit. Such requests are
cut, with window functions that spill to disk, to the candidates that can still reach the top
``max(K)`` of the displayed list or of the ideal; the collecting plan then holds O(max K) per
request, takes the counts from every candidate, and gives the same result.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.scoring.columns import REQUEST_KEYS, doc_id_tie_break

#: Requests with more candidates than this are cut to the rows that can reach the top max(K)
#: before their list is collected.
LARGE_REQUEST = 10_000
#: Past this many large requests they are not listed one by one: every request is cut.
MAX_LISTED_LARGE = 100_000


def find_large_requests(keys: DataFrame, threshold: int) -> list | str | None:
    """The keys of the requests with more than ``threshold`` candidates (one counting job over the
    key columns), ``"all"`` past :data:`MAX_LISTED_LARGE` of them, or None when there are none."""
    found = (
        keys.groupBy(*REQUEST_KEYS)
        .agg(F.count(F.lit(1)).alias("_n"))
        .filter(F.col("_n") > F.lit(int(threshold)))
        .select(*REQUEST_KEYS)
        .limit(MAX_LISTED_LARGE + 1)
        .collect()
    )
    if not found:
        return None
    return "all" if len(found) > MAX_LISTED_LARGE else [tuple(r) for r in found]


def cut_to_top_k(rows: DataFrame, contract: Contract, ranked: Column, tie_aware: bool) -> DataFrame:
    """The rows of each request that can reach the top ``max_k`` of the displayed list, of the
    ranked list (judged only under ``unjudged: exclude``) or of the ideal, plus every member of a
    tie group that starts within it; window functions, which spill rather than hold a request."""
    m = contract.max_k
    keys = [F.col(c) for c in REQUEST_KEYS]
    if contract.order == "position":
        order = [F.col("position").asc(), F.col("doc_id").asc()]
    else:
        order = [F.col("score").desc(), doc_id_tie_break(contract, F.col("doc_id"))]
    rows = rows.withColumn("_rn_all", F.row_number().over(Window.partitionBy(*keys).orderBy(*order)))
    rows = rows.withColumn("_rn_ranked", F.row_number().over(Window.partitionBy(*keys, ranked).orderBy(*order)))
    keep = (F.col("_rn_all") <= m) | (ranked & (F.col("_rn_ranked") <= m))
    if contract.ideal_from == "candidates":
        by_gain = Window.partitionBy(*keys, ranked).orderBy(F.coalesce(F.col("gain"), F.lit(0.0)).desc())
        rows = rows.withColumn("_rn_gain", F.row_number().over(by_gain))
        keep = keep | (ranked & (F.col("_rn_gain") <= m))
    if tie_aware:
        keep = keep | (ranked & (F.col("tie_start") < m))
    if "all_tie_start" in rows.columns:  # the unjudged bounds' ties, among every candidate
        keep = keep | (F.col("all_tie_start") < m)
    return rows.filter(keep).drop("_rn_all", "_rn_ranked", "_rn_gain")
