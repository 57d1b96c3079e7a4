"""Offline guardrails: per request and system, flags the judgments can't see, from the candidates.

- ``first_result_older_than``: the first displayed document's ``column`` (e.g. ``doc_age_days``)
  is above ``threshold`` -- a stale first result;
- ``first_result_unjudged``: the first displayed document has no judgment;
- ``top_k_lacks``: none of the top K documents has ``column == value`` (e.g. no document a
  contractor may open), at every K of the contract.

"Displayed" follows the contract's order: position ascending, or score descending then doc id
(``order: score``; descending under ``ties: doc_id_desc``). A document column is read from the candidates when they have it, else from
a documents table joined on the doc id. A null column value leaves the request's flag null: it
is not counted in the rate (``n_observed`` says how many were).

The rows are the requests each system scored in stage 1 (the per-request table), with their
slice values; the unit is the request, so the two systems' rates are paired by request. A request
a system returned nothing for (``no_results``) is one of them: it has no first result (those flags
null: counted among the rows, not observed) and its top K lacks every document (``top_k_lacks`` 1).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.config.compare_spec import Side
from ndcg_spark.config.contract import Contract
from ndcg_spark.config.guardrail_spec import Guardrail
from ndcg_spark.config.statistic import RATE
from ndcg_spark.errors import InputError
from ndcg_spark.frames import join_null_safe
from ndcg_spark.guardrails.statistics import ARM, UNIT, Measure
from ndcg_spark.scoring.columns import doc_id_tie_break
from ndcg_spark.scoring.inputs import prepare_judgments, request_keys
from ndcg_spark.scoring.no_results import no_results_flag

__all__ = ["offline_rows"]


def offline_rows(
    per_request: DataFrame,
    candidates: DataFrame,
    checks: Sequence[Guardrail],
    sides: tuple[Side, Side],
    contract: Contract,
    slices: Sequence[str],
    *,
    judgments: DataFrame | None = None,
    documents: DataFrame | None = None,
    system: str | None = None,
    pool_version: str | None = None,
) -> tuple[DataFrame, list[tuple[Guardrail, int | None, Measure]]]:
    """One row per request x compared system with a 0/1 flag column per guardrail (and K).

    Returns the rows (``_arm`` = system, ``_unit`` = request id, the ``slices`` columns, the
    flags) and, per flag column, the guardrail, its K (None when the flag does not depend on K)
    and the :class:`~ndcg_spark.guardrails.statistics.Measure` to take. ``system`` and
    ``pool_version`` name the candidates' system and pool when they have no such column (as for
    :func:`~ndcg_spark.scoring.score.score_requests`).
    """
    contract = contract.resolve(candidates.columns)
    columns = sorted({g.column for g in checks if g.column is not None})
    reads_judged = any(g.flag == "first_result_unjudged" for g in checks)
    if reads_judged and judgments is None:
        raise InputError("guardrails: flag first_result_unjudged needs the judgments (inputs.judgments)")
    wanted = [c for c in columns if c not in candidates.columns]  # from the documents table
    ranked = _ranked(candidates, contract, sides, [c for c in columns if c not in wanted], system, pool_version)
    # every flag reads the first result or the top K: the rows below are ranked and cut to the
    # deepest place a flag reads before the documents and judgments are joined to them
    deepest = max((k for g in checks if g.flag == "top_k_lacks" for k in contract.k), default=1)
    ranked = _with_documents(ranked.filter(F.col("_rank") <= F.lit(deepest)), wanted, contract, documents)
    if reads_judged:
        judged = prepare_judgments(judgments, contract).select("request_id", "doc_id", F.lit(True).alias("_judged"))
        ranked = ranked.join(judged.dropDuplicates(["request_id", "doc_id"]), ["request_id", "doc_id"], "left")
    flags, measures = [], []
    for g in checks:
        for k in (contract.k if g.flag == "top_k_lacks" else (None,)):
            name = f"f{len(flags)}"
            flags.append(_flag(g, k).cast("double").alias(name))
            measures.append((g, k, Measure(name, RATE)))
    per_system = ranked.groupBy("system", "pool_version", "request_id").agg(*flags)
    # a request the system returned nothing for (a no_results row) has no first result -- its
    # first-result flags stay null: counted in n, not observed -- and its top K lacks everything
    scored = per_request.select("system", "pool_version", "request_id", *slices, no_results_flag(per_request).alias("_nothing"))
    scored = scored.dropDuplicates(["system", "pool_version", "request_id"])
    rows = join_null_safe(scored, per_system, ("system", "pool_version", "request_id"), "left").select(
        F.col("system").alias(ARM), F.col("request_id").cast("string").alias(UNIT), *slices,
        *[F.when(F.col("_nothing") & F.lit(g.flag == "top_k_lacks"), F.lit(1.0)).otherwise(F.col(m.column))
          .alias(m.column) for g, _, m in measures])
    return rows, measures


def _with_documents(ranked: DataFrame, wanted: Sequence[str], contract: Contract,
                    documents: DataFrame | None) -> DataFrame:
    """The ranked rows (:func:`_ranked`) with the document columns ``wanted`` (those a flag reads that
    the candidates lack), from the documents table joined on the candidates' own doc id (``_doc``)."""
    if not wanted:
        return ranked
    if documents is None:
        raise InputError(f"guardrails: the candidates have no column {wanted[0]!r} and no documents table is "
                         "given (guardrails.documents: a table of doc_id and the document columns)")
    doc_id = contract.columns.doc_id
    missing = [c for c in (doc_id, *wanted) if c not in documents.columns]
    if missing:
        raise InputError(f"guardrails.documents: no column {missing[0]!r}; columns present: "
                         f"{', '.join(sorted(documents.columns))} (rule column_missing)")
    table = documents.select(F.col(doc_id).alias("_doc"), *wanted).dropDuplicates(["_doc"])
    return ranked.join(table, ["_doc"], "left")


def _ranked(candidates: DataFrame, contract: Contract, sides: tuple[Side, Side], columns: Sequence[str],
            system: str | None, pool_version: str | None) -> DataFrame:
    """The two sides' candidates with their displayed rank ``_rank`` (1 = first) per request."""
    cols = contract.columns
    order_by = cols.position if contract.order == "position" else cols.score
    rows = candidates.select(*request_keys(candidates, contract, system, pool_version),
                             F.col(cols.doc_id).cast("string").alias("doc_id"), F.col(cols.doc_id).alias("_doc"),
                             F.col(order_by).alias("_order"), *[F.col(c) for c in columns])
    chosen = None
    for side in sides:
        match = F.col("system") == F.lit(side.system)
        if side.pool_version is not None:
            match = match & (F.col("pool_version") == F.lit(side.pool_version))
        chosen = match if chosen is None else chosen | match
    first = F.col("_order").asc() if contract.order == "position" else F.col("_order").desc()
    window = Window.partitionBy("system", "pool_version", "request_id").orderBy(
        first, doc_id_tie_break(contract, F.col("doc_id"))
    )
    return rows.filter(chosen).withColumn("_rank", F.row_number().over(window))


def _flag(g: Guardrail, k: int | None) -> Column:
    """The request's flag (an aggregate over its ranked candidates): 1, 0, or null when unknown."""
    first = F.col("_rank") == 1
    if g.flag == "first_result_older_than":
        return F.max(F.when(first, F.col(g.column) > F.lit(g.threshold)))
    if g.flag == "first_result_unjudged":
        return F.max(F.when(first, F.col("_judged").isNull()))
    has = F.max(F.when(F.col("_rank") <= F.lit(k), F.col(g.column).cast("string") == F.lit(g.value)))
    return ~has
