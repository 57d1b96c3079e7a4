"""The sample's rankers: ``bm25`` and ``hybrid`` over one shared candidate pool, and the optional
``dense`` ranker over a pool of its own.

Positions follow "score desc, doc_id asc" per request and system, so ordering by position and
by score (ties broken by doc id) agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.sample.expressions import double_literal, normal, sql_columns, string_literal, uniform

POOL_VERSION = "pool-2026-11-28"
"""The ``pool_version`` stamped on every generated candidate row."""

SYSTEMS = ("bm25", "hybrid")
"""The two rankers; each is also the name of its score column inside the generator."""

DENSE_SYSTEM = "dense"
DENSE_POOL_VERSION = "pool-2026-11-28-dense"
"""The optional third ranker (``generate(..., dense_pool=True)``) and its own candidate pool."""

#: of the requests, those ``hybrid`` returned nothing for (a timeout): no candidate row of its own
HYBRID_TIMEOUT_SHARE = 0.015
_DENSE_DROP_SHARE = 0.25  # of the shared pool's candidates (all but the first), not retrieved by dense
_DENSE_FIND_SHARE = 0.7  # of the judged documents outside the shared pool, retrieved by dense


def shared_pool_candidates(pool: DataFrame, seed: int) -> DataFrame:
    """Both systems' rankings of the retrieved documents; positions follow score desc, doc_id asc.
    ``hybrid`` times out on about :data:`HYBRID_TIMEOUT_SHARE` of the requests: it has no candidate
    for those (``bm25`` answers them all), so the demo shows a ranker's unanswered requests counted."""
    noise_bm25 = normal(seed, "noise.bm25", "rid", "i")
    noise_own = normal(seed, "noise.hybrid", "rid", "i")
    scored = (
        pool.filter(F.col("retrieved"))
        .withColumns(sql_columns({"noise_bm25": noise_bm25, "noise_own": noise_own}))
        .withColumns(
            sql_columns(
                {
                    # lexical scores on a coarse grid: some exact ties
                    "bm25": "round(greatest(0.5D, 12.0D + 3.0D * (0.55D * ease * grade + noise_bm25)), 2)",
                    # hybrid shares part of bm25's lexical noise and sees relevance more clearly
                    "hybrid": (
                        "round(1.0D / (1.0D + exp(-(-1.0D + 0.7D * ease * grade"
                        " + 0.9D * (0.6D * noise_bm25 + 0.8D * noise_own)))), 4)"
                    ),
                }
            )
        )
    )
    pairs = ", ".join(f"{string_literal(name)}, {name}" for name in SYSTEMS)  # 'bm25', bm25, 'hybrid', hybrid
    timed_out = F.expr(f"{uniform(seed, 'hybrid.timeout', 'rid')} < {double_literal(HYBRID_TIMEOUT_SHARE)}")
    by_system = scored.select("request_id", "doc_id", timed_out.alias("_timed_out"),
                              F.expr(f"stack({len(SYSTEMS)}, {pairs}) AS (system, score)"))
    answered = by_system.filter(~(F.col("_timed_out") & (F.col("system") == F.lit("hybrid")))).drop("_timed_out")
    return _ranked(answered, ("request_id", "system"), F.col("system"), POOL_VERSION)


def dense_pool_candidates(pool: DataFrame, seed: int) -> DataFrame:
    """The optional third system: a dense retriever with its *own* candidate pool, ranked by itself.

    Its pool keeps each shared-pool candidate but the first with probability 1 - 25% and finds
    each judged document outside the shared pool with probability 70%, so its candidate sets
    differ from bm25's and hybrid's (and its pool recall too).
    """
    in_pool = (
        f"CASE WHEN retrieved THEN i = 1 OR {uniform(seed, 'dense.keep', 'rid', 'i')}"
        f" >= {double_literal(_DENSE_DROP_SHARE)}"
        f" ELSE {uniform(seed, 'dense.find', 'rid', 'i')} < {double_literal(_DENSE_FIND_SHARE)} END"
    )
    score = (
        "round(1.0D / (1.0D + exp(-(-1.0D + 0.7D * ease * grade"
        f" + 0.9D * {normal(seed, 'noise.dense', 'rid', 'i')}))), 4)"
    )
    scored = pool.filter(F.expr(in_pool)).select("request_id", "doc_id", F.expr(score).alias("score"))
    return _ranked(scored, ("request_id",), F.lit(DENSE_SYSTEM), DENSE_POOL_VERSION)


def _ranked(scored: DataFrame, rank_within: Sequence[str], system: Column, pool_version: str) -> DataFrame:
    """The candidate rows of ``scored`` with their position (1.. within ``rank_within``, score
    desc, doc_id asc), the system and the pool version."""
    ranked = Window.partitionBy(*rank_within).orderBy(F.col("score").desc(), F.col("doc_id").asc())
    return scored.withColumn("position", F.row_number().over(ranked).cast("int")).select(
        "request_id",
        "doc_id",
        system.alias("system"),
        "position",
        F.col("score").cast("double"),
        F.lit(pool_version).alias("pool_version"),
    )
