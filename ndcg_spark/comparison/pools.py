"""What the pool guard needs to know about each side's candidates: :func:`pool_summary`."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.comparison.columns import known as known_column
from ndcg_spark.comparison.columns import pool_columns
from ndcg_spark.config.contract import Contract
from ndcg_spark.config.per_request import component_names
from ndcg_spark.measures import COMPONENTS
from ndcg_spark.metrics.gain import gain
from ndcg_spark.metrics.ranked_list import RankedList
from ndcg_spark.scoring.columns import require_column
from ndcg_spark.scoring.inputs import prepare_judgments, request_keys
from ndcg_spark.validation.shell_check import shell_check

__all__ = ["pool_summary"]


def pool_summary(
    candidates: DataFrame,
    judgments: DataFrame | None = None,
    contract: Contract | None = None,
    *,
    system: str | None = None,
    pool_version: str | None = None,
    validate: bool = True,
) -> DataFrame:
    """What the pool guard needs, per system × pool version × request × K
    (:func:`~ndcg_spark.comparison.columns.pool_columns` of the contract's metrics).

    Parameters
    ----------
    candidates, judgments, contract, system, pool_version : as given to
        :func:`~ndcg_spark.scoring.score.score_requests` for the run being compared.
    validate : as for :func:`~ndcg_spark.scoring.score.score_requests`: the inputs are checked
        against the named rules first (every rule ``error``); ``False`` for inputs already
        validated (the job's stage 1 did).

    Returns
    -------
    DataFrame
        ``pool_hash`` (``xxhash64`` of the request's doc ids, sorted: equal sets, equal hash),
        ``n_pool`` (candidate rows; must equal the per-request ``n_candidates``),
        ``n_known_positive`` (known documents of the request with grade > 0) and each metric's ideal
        over every known judged document, the shared ideal of an end-to-end comparison: ``idcg_known``
        (IDCG@K) for NDCG, ``n_relevant_known`` (relevant documents) for recall.
        The *known* judgments are the judgments table; for a pre-joined candidates table (no
        judgments table) they are the judged candidates of every system and pool pooled together
        (a document's highest grade), the classic pooled-judgments view. The positives *in* a pool
        are the per-request table's ``n_positive``; candidates and judgments are not joined here.

    Examples
    --------
    Request ``q1`` has a judged positive ``z`` that no system retrieved: it counts among the
    known positives and in the shared ideal (gains 7, 3, 1), whatever each pool holds.

    >>> cands = spark.createDataFrame([("q1", "a", "A", 1), ("q1", "b", "A", 2), ("q1", "a", "B", 1)],
    ...                               "request_id string, doc_id string, system string, position int")
    >>> judgments = spark.createDataFrame([("q1", "a", 1.0), ("q1", "b", 0.0), ("q1", "z", 3.0), ("q1", "y", 2.0)],
    ...                                   "request_id string, doc_id string, grade double")
    >>> summary = pool_summary(cands, judgments, Contract(k=[3]))
    >>> summary.select("system", "n_pool", "n_known_positive", F.round("idcg_known", 4).alias("idcg_known")).orderBy(
    ...     "system").show()
    +------+------+----------------+----------+
    |system|n_pool|n_known_positive|idcg_known|
    +------+------+----------------+----------+
    |     A|     2|               3|    9.3928|
    |     B|     1|               3|    9.3928|
    +------+------+----------------+----------+
    <BLANKLINE>
    """
    contract = (contract or Contract()).resolve(candidates.columns)
    if validate:
        checked = shell_check(candidates, judgments, contract, system=system, pool_version=pool_version)
        candidates, judgments = checked.candidates, checked.judgments
    cols = contract.columns
    require_column(candidates, cols.request_id, "request_id", "candidates")
    require_column(candidates, cols.doc_id, "doc_id", "candidates")
    if judgments is None:
        require_column(candidates, cols.grade, "grade", "candidates (no judgments table given)", numeric=True)
    rows = candidates.select(
        *request_keys(candidates, contract, system, pool_version),
        F.col(cols.doc_id).cast("string").alias("doc_id"),
        *([F.col(cols.grade).cast("double").alias("grade")] if judgments is None else []),
    )
    known = _known_judgments(rows if judgments is None else prepare_judgments(judgments, contract), contract)
    pools = rows.groupBy("system", "pool_version", "request_id").agg(
        F.xxhash64(F.array_sort(F.collect_list(F.coalesce(F.col("doc_id"), F.lit(""))))).alias("pool_hash"),
        F.count(F.lit(1)).alias("n_pool"),
    )
    shared = [c for c in component_names(contract.metric_names) if COMPONENTS[c].ideal]
    every_judged = RankedList.nothing(F.col("ideal"), F.col("n_relevant_known") if contract.reads_relevance else None)
    per_k = F.array(*[F.struct(F.lit(k).alias("k"), *[COMPONENTS[c].compute(every_judged, k).alias(known_column(c))
                                                       for c in shared]) for k in contract.k])
    joined = (
        pools.join(known, "request_id", "left")
        .withColumn("n_known_positive", F.coalesce(F.col("n_known_positive"), F.lit(0)).cast("long"))
        .withColumn("ideal", F.coalesce(F.col("ideal"), F.array().cast("array<double>")))
        .select("*", F.explode(per_k).alias("m"))
    )
    computed = {"k": F.col("m.k"), **{known_column(c): F.col(f"m.{known_column(c)}") for c in shared},
                "contract_fingerprint": F.lit(contract.fingerprint)}
    return joined.select(*[computed[c].alias(c) if c in computed else F.col(c)
                           for c in pool_columns(contract.metric_names)])


def _known_judgments(judged: DataFrame, contract: Contract) -> DataFrame:
    """Per request: the known positives, the ideal gains (every judged document once, at its
    highest grade, sorted descending) and, when a declared metric reads it, the relevant ones."""
    grade = F.col("grade")
    relevant = [F.count(F.when(contract.relevant(grade), True)).alias("n_relevant_known")] if contract.reads_relevance \
        else []
    return (
        judged.select("request_id", "doc_id", "grade")
        .filter(grade.isNotNull() & F.col("request_id").isNotNull())
        .groupBy("request_id", "doc_id")
        .agg(F.max("grade").alias("grade"))
        .groupBy("request_id")
        .agg(
            F.count(F.when(grade > 0, True)).alias("n_known_positive"),
            F.sort_array(F.collect_list(gain(grade, contract.gain)), asc=False).alias("ideal"),
            *relevant,
        )
    )
