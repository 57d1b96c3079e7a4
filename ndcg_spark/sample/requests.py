"""The sample's request table: one row per request, its attributes and the hidden knobs that
shape its candidate pool (how many candidates, whether it has a positive, how easy it is).

Every draw is a hash uniform of ``(seed, draw name, request number)``, computed once as a column
``u_<draw>`` and dropped at the end; the other columns are built one dependency level per
projection (each ``withColumn`` would re-analyse the whole plan).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.sample.expressions import array_literal, choice, double_literal, sql_columns, uniform
from ndcg_spark.sample.pools import DOCS_PER_TYPE
from ndcg_spark.sample.request_types import (
    DOC_AGE_BUCKETS,
    DOC_AGE_SHARE,
    PERMISSION_GROUPS,
    REQUEST_TYPES,
    sample_shares,
)

NO_POSITIVE_SHARE = 0.10  # requests whose judged grades are all 0 (the default)
_RETRIEVAL_MISS_SHARE = 0.03  # requests whose only positives were not retrieved
_SINGLE_CANDIDATE_SHARE = 0.02
_MIN_CANDIDATES, _MAX_CANDIDATES = 5, 30
_UNRETRIEVED_SHARE = 0.25  # requests with 1..3 judged documents outside the candidate pool

_DRAWS = (
    "type", "weight", "permission", "age", "no_positive", "retrieval_miss", "positive_rate",
    "n_candidates", "n_candidates.2", "doc_base", "unretrieved", "unretrieved.n", "ease",
)  # fmt: skip
_U = {name: "u_" + name.replace(".", "_") for name in _DRAWS}
"""Draw name -> the column holding its uniform."""

_TYPE_AT = "type_idx + 1"


def request_table(
    spark: SparkSession, n_requests: int, seed: int, num_partitions: int | None,
    no_positive_share: float = NO_POSITIVE_SHARE,
) -> DataFrame:
    """One row per request: attributes plus the hidden knobs of its candidates and judgments.
    ``no_positive_share`` moves only the requests whose grades are all 0 (no-answer traffic)."""
    requests = spark.range(0, n_requests, 1, num_partitions).select(
        F.col("id").alias("rid"),
        F.format_string("req-%07d", F.col("id")).alias("request_id"),
        *[F.expr(uniform(seed, name, "id")).alias(column) for name, column in _U.items()],
    )
    for level in (_type_and_pool_size(no_positive_share), _type_attributes(), _unretrieved_and_age(), _difficulty()):
        requests = requests.withColumns(sql_columns(level))
    return requests.drop(*_U.values())


def _type_and_pool_size(no_positive_share: float) -> dict[str, str]:
    """Level 1: the request type, permission group, positives and candidate-pool size."""
    n_span = _MAX_CANDIDATES - _MIN_CANDIDATES + 1
    return {
        "type_idx": choice(_U["type"], sample_shares()),
        "permission_group": choice(_U["permission"], PERMISSION_GROUPS),
        "no_positive": f"{_U['no_positive']} < {double_literal(no_positive_share)}",
        "positive_rate": f"0.15D + 0.45D * {_U['positive_rate']}",
        "n_candidates": (
            f"CASE WHEN {_U['n_candidates']} < {double_literal(_SINGLE_CANDIDATE_SHARE)} THEN 1"
            f" ELSE {_MIN_CANDIDATES} + CAST(floor({_U['n_candidates.2']} * {n_span}) AS INT) END"
        ),
        "doc_base": f"CAST(floor({_U['doc_base']} * {DOCS_PER_TYPE}) AS BIGINT)",
    }


def _type_attributes() -> dict[str, str]:
    """Level 2: what the request type implies (name, rarity, traffic weight), and retrieval misses."""
    miss_given_positive = _RETRIEVAL_MISS_SHARE / (1.0 - NO_POSITIVE_SHARE)
    traffic = array_literal([float(t.monthly_searches) for t in REQUEST_TYPES])
    return {
        "request_type": f"element_at({array_literal([t.name for t in REQUEST_TYPES])}, {_TYPE_AT})",
        "equipment_rarity": f"element_at({array_literal([t.rarity for t in REQUEST_TYPES])}, {_TYPE_AT})",
        "weight": f"round(element_at({traffic}, {_TYPE_AT}) * (0.5D + {_U['weight']}), 2)",
        "retrieval_miss": f"NOT no_positive AND {_U['retrieval_miss']} < {double_literal(miss_given_positive)}",
    }


def _unretrieved_and_age() -> dict[str, str]:
    """Level 3: judged documents outside the pool, and the document age (older for rarer equipment)."""
    ages = {level: choice(_U["age"], list(zip(DOC_AGE_BUCKETS, shares))) for level, shares in DOC_AGE_SHARE.items()}
    return {
        "n_unretrieved": (
            f"CASE WHEN retrieval_miss OR {_U['unretrieved']} < {double_literal(_UNRETRIEVED_SHARE)}"
            f" THEN 1 + CAST(floor({_U['unretrieved.n']} * 3) AS INT) ELSE 0 END"
        ),
        "doc_age_bucket": (
            f"CASE equipment_rarity WHEN 'common' THEN {ages['common']}"
            f" WHEN 'uncommon' THEN {ages['uncommon']} ELSE {ages['rare']} END"
        ),
    }


def _difficulty() -> dict[str, str]:
    """Level 4: how easy the request is for a ranker, and how often its candidates go unjudged."""
    return {
        # rare equipment and old documents are harder
        "ease": (
            "1.0D"
            " - CASE equipment_rarity WHEN 'rare' THEN 0.35D WHEN 'uncommon' THEN 0.15D ELSE 0.0D END"
            " - CASE doc_age_bucket WHEN '>10y' THEN 0.20D WHEN '3-10y' THEN 0.10D ELSE 0.0D END"
            f" + 0.6D * ({_U['ease']} - 0.5D)"
        ),
        # higher for rare equipment and old documents (fewer assessors know them)
        "unjudged_rate": (
            "0.135D"
            " + CASE equipment_rarity WHEN 'rare' THEN 0.08D WHEN 'uncommon' THEN 0.03D ELSE 0.0D END"
            " + CASE doc_age_bucket WHEN '>10y' THEN 0.04D ELSE 0.0D END"
        ),
    }
