"""Stage 1's inputs normalised: one row per candidate with its request keys and grade.

The contract's column mapping is applied here, once; everything downstream reads the
canonical names ``system, pool_version, request_id, doc_id, position, score, grade``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import InputError
from ndcg_spark.scoring.columns import require_column


def prepare_candidates(
    candidates: DataFrame,
    judgments: DataFrame | None,
    contract: Contract,
    *,
    system: str | None = None,
    pool_version: str | None = None,
    request_id_as_string: bool = True,
) -> DataFrame:
    """Normalise the inputs to one row per candidate with its grade.

    Returns columns ``system, pool_version, request_id, doc_id, position, score, grade`` with the
    contract's column mapping applied (``position``/``score`` null when not used by the order).
    The contract must be resolved (``order`` is ``position`` or ``score``).
    ``request_id_as_string=False`` keeps the request id's own type (for grouping on an integer
    id, which is cheaper than on its string; the caller casts after grouping).
    """
    cols = contract.columns
    _require_candidate_columns(candidates, judgments, contract)
    by_position, by_score = contract.order == "position", contract.order == "score"
    no_number = F.lit(None).cast("double")
    out = candidates.select(
        *request_keys(candidates, contract, system, pool_version, request_id_as_string),
        F.col(cols.doc_id).cast("string").alias("doc_id"),
        (F.col(cols.position).cast("double") if by_position else no_number).alias("position"),
        (F.col(cols.score).cast("double") if by_score else no_number).alias("score"),
        *([F.col(cols.grade).cast("double").alias("grade")] if judgments is None else []),
    )
    if judgments is not None:
        out = out.join(prepare_judgments(judgments, contract), ["request_id", "doc_id"], "left")
    return out


def _require_candidate_columns(candidates: DataFrame, judgments: DataFrame | None, contract: Contract) -> None:
    """The columns the contract reads from the candidates (a grade too without a judgments table)."""
    cols = contract.columns
    require_column(candidates, cols.request_id, "request_id", "candidates")
    require_column(candidates, cols.doc_id, "doc_id", "candidates")
    if contract.order == "position":
        require_column(candidates, cols.position, "position", "candidates", numeric=True)
    else:
        require_column(candidates, cols.score, "score", "candidates", numeric=True)
    if judgments is None:
        require_column(candidates, cols.grade, "grade", "candidates (no judgments table given)", numeric=True)
        if contract.ideal_from == "judgments":
            raise InputError(
                "contract.ideal_from: 'judgments' needs a separate judgments table (the ideal must include "
                "judged documents the ranker never retrieved); with one pre-joined table use 'candidates'"
            )


def prepare_judgments(judgments: DataFrame, contract: Contract) -> DataFrame:
    """``request_id, doc_id, grade`` from a judgments table, with the column mapping applied."""
    cols = contract.columns
    require_column(judgments, cols.request_id, "request_id", "judgments")
    require_column(judgments, cols.doc_id, "doc_id", "judgments")
    require_column(judgments, cols.grade, "grade", "judgments", numeric=True)
    return judgments.select(
        F.col(cols.request_id).cast("string").alias("request_id"),
        F.col(cols.doc_id).cast("string").alias("doc_id"),
        F.col(cols.grade).cast("double").alias("grade"),
    )


def ideal_of_judgments(judgments: DataFrame, contract: Contract) -> DataFrame:
    """``request_id, ideal``: the gains of every judged document of each request, retrieved or not,
    largest first (the ideal under ``ideal_from: judgments``, and of a request a ranker returned
    nothing for); with a binary metric declared also ``n_relevant``, how many of them are relevant."""
    grade = F.col("grade")
    relevant = [F.count(F.when(contract.relevant(grade), 1)).alias("n_relevant")] if contract.reads_relevance else []
    return (
        prepare_judgments(judgments, contract)
        .filter(grade.isNotNull())
        .groupBy("request_id")
        .agg(F.sort_array(F.collect_list(contract.gain.column(grade)), asc=False).alias("ideal"), *relevant)
    )


def request_keys(
    candidates: DataFrame,
    contract: Contract,
    system: str | None,
    pool_version: str | None,
    request_id_as_string: bool = True,
) -> list[Column]:
    """``system, pool_version, request_id`` of each candidate row (the column mapping applied)."""
    cols, literal = contract.columns, literal_keys(candidates, contract, system, pool_version)
    return [
        literal.get("system", F.col(cols.system).cast("string")).alias("system"),
        literal.get("pool_version", F.col(cols.pool_version).cast("string")).alias("pool_version"),
        (F.col(cols.request_id).cast("string") if request_id_as_string else F.col(cols.request_id)).alias("request_id"),
    ]


def literal_keys(
    candidates: DataFrame, contract: Contract, system: str | None, pool_version: str | None
) -> dict[str, Column]:
    """The request key columns the candidates do not carry (``system``, ``pool_version``), as the
    string literal every row gets: the given ``system`` (else ``default``) and ``pool_version``."""
    cols, present = contract.columns, set(candidates.columns)
    literal = {}
    if cols.system not in present:
        literal["system"] = F.lit(system or "default").cast("string")
    if cols.pool_version not in present:
        literal["pool_version"] = F.lit(pool_version).cast("string")
    return literal
