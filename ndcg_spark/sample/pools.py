"""The sample's document pools: every document known for a request, judged or retrieved.

Document ``i`` of a request is a candidate (retrieved) when ``i <= n_candidates``; after them come
the judged documents that were not retrieved. ``i == 1`` is always judged and, unless the request
has no positive (or a retrieval miss), positive.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.sample.expressions import choice, sql_columns, uniform

DOCS_PER_TYPE = 100_000
"""Doc numbers per request type; the stride below is coprime with it."""

_DOC_STRIDE = 7919
_DOC_PREFIXES = (("MAN", 0.40), ("WO", 0.35), ("SB", 0.15), ("SOP", 0.10))


def document_pool(requests: DataFrame, seed: int) -> DataFrame:
    """One row per request x known document: ``doc_id``, ``grade``, ``retrieved``, ``judged``."""
    pool = requests.withColumn("i", F.explode(F.sequence(F.lit(1), F.expr("n_candidates + n_unretrieved"))))
    for level in (_doc_numbers(seed), _doc_draws(seed), _documents()):
        pool = pool.withColumns(sql_columns(level))
    return pool


def _doc_numbers(seed: int) -> dict[str, str]:
    """Level 1: the document number and the draws of its grade and judgment."""
    return {
        # doc numbers are unique within a request: the stride is coprime with DOCS_PER_TYPE
        "doc_num": (
            f"CAST(type_idx AS BIGINT) * {DOCS_PER_TYPE}"
            f" + pmod(doc_base + CAST(i AS BIGINT) * {_DOC_STRIDE}, {DOCS_PER_TYPE})"
        ),
        "retrieved": "i <= n_candidates",
        "u_grade": uniform(seed, "grade", "rid", "i"),
        "u_level": uniform(seed, "grade.level", "rid", "i"),
        "u_judged": uniform(seed, "judged", "rid", "i"),
    }


def _doc_draws(seed: int) -> dict[str, str]:
    """Level 2: the document's kind (its id prefix) and the grade it has if positive."""
    return {
        "u_prefix": uniform(seed, "prefix", "doc_num"),
        "positive_grade": f"1.0D + {choice('u_level', [(0.0, 0.5), (1.0, 0.3), (2.0, 0.2)])}",
    }


def _documents() -> dict[str, str]:
    """Level 3: the document id, its grade and whether it is judged."""
    return {
        "doc_id": f"format_string('%s-%07d', {choice('u_prefix', _DOC_PREFIXES)}, doc_num)",
        "grade": (
            "CASE WHEN no_positive THEN 0.0D"
            " WHEN retrieval_miss AND retrieved THEN 0.0D"
            " WHEN retrieval_miss AND i = n_candidates + 1 THEN positive_grade"
            " WHEN i = 1 THEN positive_grade"
            " WHEN NOT retrieved AND u_grade < 0.2D THEN 0.0D"
            " WHEN NOT retrieved THEN positive_grade"
            " WHEN u_grade < 1.0D - positive_rate THEN 0.0D"
            " ELSE positive_grade END"
        ),
        "judged": "i = 1 OR NOT retrieved OR u_judged >= unjudged_rate",
    }
