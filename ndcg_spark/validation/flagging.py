"""The inputs under validation, flagged in two steps.

:func:`flag_row_rules` checks each input's schema and flags the rules a row breaks by itself (cheap:
one projection). :func:`flag_every_rule` adds the request rules (windows by request) and, when
quarantining, each row's fate: ``__v_reason`` (the index of the rule that sends it to quarantine,
or null) and ``__v_q``. A candidate row that breaks a rule takes its request list (system, pool
version, request) with it; a judgment or attribute row takes its whole request out of every input.

>>> from ndcg_spark import Contract
>>> from ndcg_spark.config.validation_spec import ValidationSpec
>>> cands = spark.createDataFrame([("q1", "a", 1), ("q1", "b", 2), ("q2", "a", 1)],
...                               "request_id string, doc_id string, position int")
>>> judgs = spark.createDataFrame([("q1", "a", 1.0), ("q2", "a", -1.0)],
...                               "request_id string, doc_id string, grade double")
>>> contract = Contract(k=[3]).resolve(cands.columns)
>>> rows = flag_row_rules(cands, judgs, contract)
>>> flagged = flag_every_rule(rows, contract, ValidationSpec(), quarantining=True)
>>> for name, (table, df) in flagged.items():
...     print(name, sorted((r["request_id"], r["doc_id"], r["__v_q"]) for r in df.collect()))
candidates [('q1', 'a', False), ('q1', 'b', False), ('q2', 'a', True)]
judgments [('q1', 'a', False), ('q2', 'a', True)]
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.validation_spec import ValidationSpec
from ndcg_spark.config.attributes import Attributes
from ndcg_spark.validation.attributes import attribute_rows
from ndcg_spark.validation.candidates import candidate_groups, candidate_rows
from ndcg_spark.validation.judgments import judgment_groups, judgment_rows
from ndcg_spark.validation.input_table import InputTable

#: input name (``candidates``, ``judgments``, ``attributes``) -> (the table, its flagged rows)
FlaggedInputs = dict[str, tuple[InputTable, DataFrame]]


def flag_row_rules(
    candidates: DataFrame,
    judgments: DataFrame | None,
    contract: Contract,
    attributes: Attributes | None = None,
    system: str | None = None,
    pool_version: str | None = None,
) -> FlaggedInputs:
    """Each given input with its schema checked and its row rules flagged (``contract`` resolved)."""
    attributes = attributes or Attributes()
    cand = InputTable(candidates, "candidates")
    judg = InputTable(judgments, "judgments") if judgments is not None else None
    attr = InputTable(attributes.table, "attributes") if attributes.table is not None else None
    cand_rows = candidate_rows(
        cand,
        contract,
        with_grade=judg is None,
        with_attributes=attr is None,
        attributes=attributes,
        system=system,
        pool_version=pool_version,
    )
    rows = {"candidates": (cand, cand_rows)}
    if judg is not None:
        rows["judgments"] = (judg, judgment_rows(judg, contract))
    if attr is not None:
        rows["attributes"] = (attr, attribute_rows(attr, contract, attributes))
    return rows


def _requests_taken_out(flagged: list[DataFrame]) -> DataFrame | None:
    """The requests whose judgment or attribute rows break a rule, with the first such rule
    (``__v_rid``, ``__v_req_first``)."""
    bad = [
        df.filter(F.col("__v_rid").isNotNull() & F.col("__v_first").isNotNull()).select("__v_rid", "__v_first")
        for df in flagged
    ]
    if not bad:
        return None
    requests = bad[0] if len(bad) == 1 else bad[0].unionByName(bad[1])
    return requests.groupBy("__v_rid").agg(F.min("__v_first").alias("__v_req_first"))


def mark(df: DataFrame, requests: DataFrame | None) -> DataFrame:
    """``__v_reason`` (index of the rule that sends the row to quarantine, or null) and ``__v_q``."""
    if requests is not None:
        df = df.join(requests, "__v_rid", "left")
    reasons = [F.col("__v_first")]
    reasons += [F.col(c) for c in ("__v_list_first", "__v_req_first") if c in df.columns]
    others = reasons[1:]
    if not others:
        reason = reasons[0]
    else:
        reason = F.coalesce(reasons[0], others[0] if len(others) == 1 else F.least(*others))
    if "__v_dup" not in df.columns:
        df = df.withColumn("__v_dup", F.lit(False))
    return df.withColumn("__v_reason", reason).withColumn("__v_q", F.col("__v_reason").isNotNull())


def flag_every_rule(
    rows: FlaggedInputs, contract: Contract, spec: ValidationSpec, *, quarantining: bool
) -> FlaggedInputs:
    """Every row with every rule it breaks (``__v_rules``) and, with quarantine, why it goes (``__v_q``)."""
    flagged = {name: rows[name][1] for name in ("judgments", "attributes") if name in rows}
    if "judgments" in flagged:
        flagged["judgments"] = judgment_groups(flagged["judgments"])
    # A judgment or attribute row breaking a rule takes its whole request out of every input.
    requests = _requests_taken_out(list(flagged.values())) if quarantining else None
    table, cand = rows["candidates"]
    out = {"candidates": (table, mark(candidate_groups(cand, contract, spec, requests, quarantining), None))}
    for name, df in flagged.items():
        out[name] = (rows[name][0], mark(df, requests))
    return out


__all__ = ["FlaggedInputs", "flag_every_rule", "flag_row_rules", "mark"]
