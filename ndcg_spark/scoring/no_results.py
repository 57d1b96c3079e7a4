"""Requests a ranker returned nothing for: a per-request row each, flagged ``no_results``.

A request for which a system has no candidate rows (a timeout, an empty result set, a crash for
that query) would otherwise have no per-request row at all, and every mean would be computed
without it -- a ranker that fails its hardest requests would look better for it. So the night
declares its **population**, the requests every system was expected to answer:

* the request-attributes table when the run has one (the night's traffic sample), else
* every request that appears in the judgments or in any system's candidates.

Every system (and pool version) of the candidates gets a row for each request of the population it
did not answer: no candidates, DCG 0, and the ideal of the request's judged documents (with no
candidates of its own, the only ideal it can have; 0 without a judgments table). The contract's
``no_results`` scores it: ``exclude`` (set aside whatever its ideal: NDCG null, flagged and
counted, as trec_eval without ``-c`` leaves the query out) or ``zero`` (NDCG 0, as trec_eval ``-c``
and Spark's ``RankingEvaluator``). A request whose ideal is empty too is both -- flagged and
counted as each; under ``zero`` the empty-ideal policy sets its NDCG
(:func:`ndcg_spark.scoring.score.rows_per_k`).

>>> from ndcg_spark import Contract, score_requests
>>> cands = spark.createDataFrame([("q1", "a", 1), ("q1", "b", 2)], "request_id string, doc_id string, position int")
>>> judged = spark.createDataFrame([("q1", "a", 2.0), ("q2", "c", 1.0), ("q3", "d", 0.0)],
...                                "request_id string, doc_id string, grade double")
>>> rows = score_requests(cands, judged, Contract(k=[3], no_results="zero"))
>>> rows.select("request_id", "n_candidates", "no_results", "empty_ideal", "ndcg").orderBy("request_id").show()
+----------+------------+----------+-----------+----+
|request_id|n_candidates|no_results|empty_ideal|ndcg|
+----------+------------+----------+-----------+----+
|        q1|           2|     false|      false| 1.0|
|        q2|           0|      true|      false| 0.0|
|        q3|           0|      true|       true|NULL|
+----------+------------+----------+-----------+----+
<BLANKLINE>
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.attributes import Attributes
from ndcg_spark.config.contract import Contract
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.ranked_list import RankedList
from ndcg_spark.scoring.columns import REQUEST_KEYS, metrics_columns
from ndcg_spark.scoring.inputs import ideal_of_judgments

__all__ = ["no_results_flag", "population", "with_no_results"]


def no_results_flag(per_request: DataFrame) -> Column:
    """A per-request table's ``no_results`` (boolean): false throughout in a table written before
    requests a ranker returned nothing for had rows (none of them is in it)."""
    return F.col("no_results").cast("boolean") if "no_results" in per_request.columns else F.lit(False)


def population(answered: DataFrame, judgments: DataFrame | None, attributes: Attributes,
               contract: Contract) -> DataFrame:
    """The night's requests (``request_id`` as a string, once each): the attributes table's, else
    every request of the judgments and of ``answered`` (the candidates' requests, ``request_id``
    already a string: see the module docstring)."""
    rid = contract.columns.request_id
    if attributes.table is not None:
        return attributes.table.select(F.col(rid).cast("string").alias("request_id")).distinct()
    ids = answered.select("request_id")
    if judgments is not None:
        ids = ids.unionByName(judgments.select(F.col(rid).cast("string").alias("request_id")))
    return ids.distinct()


def with_no_results(
    scored: DataFrame,
    judgments: DataFrame | None,
    attributes: Attributes,
    contract: Contract,
    literals: tuple[str | None, str | None],
    set_aside: DataFrame | None = None,
) -> DataFrame:
    """``scored`` (the plans' rows, one per request with candidates) with ``no_results`` false, and a
    row per system x pool version and request of the :func:`population` that system did not answer,
    in the same shape, ``no_results`` true. ``set_aside``: the :data:`REQUEST_KEYS` of lists the
    input check quarantined -- answered, but counted in the quarantine, not as returning nothing.

    What each system answered is read from ``scored`` itself (every candidate's request has its row
    there), not from the candidates again: scoring reads the candidates once."""
    answered = scored.select(*REQUEST_KEYS)
    systems = answered.select("system", "pool_version").distinct()  # the systems of the rows scored
    requests = population(answered, judgments, attributes, contract)
    if set_aside is not None:
        answered = answered.unionByName(set_aside.select(*REQUEST_KEYS))
    expected = systems.crossJoin(requests.hint("broadcast"))
    missing = join_null_safe(expected, answered, REQUEST_KEYS, "left_anti")
    if judgments is not None:
        missing = missing.join(ideal_of_judgments(judgments, contract), "request_id", "left")
    ideal = F.col("ideal") if judgments is not None else F.array().cast("array<double>")
    ideal = F.coalesce(ideal, F.array().cast("array<double>"))
    relevant = F.col("n_relevant") if judgments is not None and contract.reads_relevance else F.lit(0)
    nothing = RankedList.nothing(ideal, relevant)
    rows = missing.select(
        *REQUEST_KEYS, *_counts(), *metrics_columns(contract, nothing, lambda k: F.lit(0)),
        F.lit(True).alias("no_results"),
    )
    return scored.withColumn("no_results", F.lit(False)).unionByName(rows)


def _counts() -> list[Column]:
    """A request without candidates: none, none judged, none positive."""
    zero = F.lit(0).cast("bigint")
    return [zero.alias("n_candidates"), zero.alias("n_judged"), zero.alias("n_positive")]
