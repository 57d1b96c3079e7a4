"""Dirty inputs: named validation rules, a declared handling per rule, and exact row accounting.

Every input row is checked against the rules of :data:`~ndcg_spark.config.validation_spec.RULES`
before anything is scored. Each data rule has a declared handling (``validation:`` in the job YAML,
:class:`~ndcg_spark.config.validation_spec.ValidationSpec`):

``error``
    the run fails before writing anything, naming the rule, how many rows break it and one
    example row (:class:`~ndcg_spark.errors.ValidationError`).
``quarantine``
    the offending rows go to the quarantine table with the rule's name, and the rest is scored;
    above ``max_quarantined_share`` of any input the run fails anyway.

Quarantine works on whole requests, so a request is never scored on a silently altered list:
a candidate row that breaks a rule takes every candidate row of its request *for that system
and pool version* with it; a judgment or attribute row that breaks a rule takes its whole
request (candidates of every system, judgments, attributes) with it. A row without a request id
cannot belong to a request and goes alone. A candidate with no judgment is *unjudged* — handled
by the contract, never a rule.

:func:`validate_inputs` is a pure DataFrame function (native Spark expressions, no UDF): it
returns the rows to score, the quarantined rows and the row accounting
``rows read = rows scored + rows quarantined`` per input. ``score_requests``, ``pool_summary``
and ``guardrail_table`` call it on their raw inputs by default (:data:`SHELL_CHECK`); the job
(:func:`ndcg_spark.job.stages.score_stage`) calls it under the declared handling, then scores with
``validate=False``.

Examples
--------
>>> from ndcg_spark import Contract, ValidationSpec
>>> cands = spark.createDataFrame(
...     [("q1", "a", 1, 3.0), ("q1", "b", 2, 0.0), ("q2", "a", 1, 1.0), ("q2", "a", 2, 2.0),
...      (None, "c", 1, 1.0)],
...     "request_id string, doc_id string, position int, grade double")
>>> v = validate_inputs(cands, None, Contract(k=[3]), ValidationSpec(default="quarantine", max_quarantined_share=1.0))
>>> print(v.accounting.summary())
rows read = rows scored + rows quarantined: candidates 5 = 2 + 3 (request_id_missing 1, doc_repeated 2)
>>> v.quarantine.select("input", "rule", "row_rules", "request_id", "doc_id").orderBy("rule", "doc_id").show()
+----------+------------------+------------------+----------+------+
|     input|              rule|         row_rules|request_id|doc_id|
+----------+------------------+------------------+----------+------+
|candidates|      doc_repeated|      doc_repeated|        q2|     a|
|candidates|      doc_repeated|      doc_repeated|        q2|     a|
|candidates|request_id_missing|request_id_missing|      NULL|     c|
+----------+------------------+------------------+----------+------+
<BLANKLINE>
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.validation_spec import ValidationSpec
from ndcg_spark.frames import persist_coalesced, shuffles_sized_to
from ndcg_spark.config.attributes import Attributes
from ndcg_spark.validation.accounting import RowAccounting, RuleCounts, ValidatedInputs
from ndcg_spark.validation.counts import count_flagged_rows, detect_rule_counts, grade_scale
from ndcg_spark.validation.failures import raise_on_broken_rules, raise_on_empty, raise_on_share
from ndcg_spark.validation.flagging import FlaggedInputs, flag_every_rule, flag_row_rules
from ndcg_spark.validation.quarantine import empty_quarantine, quarantine_rows

#: What the shell functions check by default: every rule ``error``, without the skew guard -- a
#: large request makes no number wrong (``score_requests`` cuts it to the rows that can reach the
#: top K); the guard bounds a nightly job's memory, and the job declares it.
SHELL_CHECK = ValidationSpec(max_candidates_per_request=None)


def validate_inputs(
    candidates: DataFrame,
    judgments: DataFrame | None = None,
    contract: Contract | None = None,
    spec: ValidationSpec | None = None,
    *,
    attributes: Attributes | None = None,
    system: str | None = None,
    pool_version: str | None = None,
    run_id: str = "adhoc",
) -> ValidatedInputs:
    """Check every input row against :data:`~ndcg_spark.config.validation_spec.RULES` and apply the declared handling.

    Parameters
    ----------
    candidates, judgments, contract, system, pool_version : as for
        :func:`~ndcg_spark.scoring.score.score_requests`.
    spec : the declared handling (default :class:`~ndcg_spark.config.validation_spec.ValidationSpec`:
        every rule ``error``).
    attributes : the :class:`~ndcg_spark.scoring.attributes.Attributes` the job will attach; its table (or the
        candidates, when it has none) is checked for the request id, weight and slice columns.
    run_id : stamped on the quarantine rows.

    Returns
    -------
    :class:`~ndcg_spark.validation.accounting.ValidatedInputs`: rows to score, quarantined rows,
    :class:`~ndcg_spark.validation.accounting.RowAccounting`.

    Raises
    ------
    ValidationError
        a schema rule is broken, a rule handled by ``error`` is broken (message: rule, row count,
        one example row, for each such rule), or more than ``max_quarantined_share`` of an input
        would be quarantined. Nothing has been written at that point.

    Notes
    -----
    A count-only detector runs first (:func:`~ndcg_spark.validation.counts.detect_rule_counts`):
    hash aggregations, two jobs under the skew guard (rows per request list, per judged pair, per
    input; then each list's sorted doc ids and positions — only once no list is longer than the
    guard, so no oversized list is ever collected), one without it when nothing repeats (the
    shell's check: whether any doc id, position or judged pair repeats, asked of hashes and
    distinct values; a second job counts exactly when one may). On clean input that is all:
    nothing is cached and the inputs are returned as read (numeric strings parsed, identical
    duplicate judgments merged). When a rule is broken, every row is flagged (windows by
    request): for an ``error`` rule to name counts and example rows; for ``quarantine`` the
    flagged inputs are persisted once and reused by scoring and by the quarantine write (call
    :meth:`~ndcg_spark.validation.accounting.ValidatedInputs.unpersist` after writing).
    """
    contract = (contract or Contract()).resolve(candidates.columns)
    spec = spec or ValidationSpec()
    attributes = attributes or Attributes()
    with shuffles_sized_to(candidates, judgments, attributes.table):  # its jobs: few partitions when small
        rows = flag_row_rules(candidates, judgments, contract, attributes, system, pool_version)
        # A count-only detector (hash aggregations: no windows, nothing cached) looks first. Clean input
        # costs only that; the rows are flagged one by one only to describe a failure or to quarantine.
        counts = detect_rule_counts(rows, contract, spec)
        raise_on_empty(counts, rows)
        broken = {rule for (_, kind, rule), (n, _) in counts.items() if kind == "rule" and n}
        # the grades' scale of every row read: the rows passed (all of them, or fewer) keep within it
        scale = grade_scale(counts)
        if not broken:
            return replace(_as_read(rows, candidates, attributes, contract, spec, counts), grade_scale=scale)
        if any(spec.handling(rule) == "error" for rule in broken):
            raise_on_broken_rules(count_flagged_rows(flag_every_rule(rows, contract, spec, quarantining=False)), spec)
            raise_on_broken_rules(counts, spec)  # only if the detector and the row flags ever disagreed
        notes = {key: value for key, value in counts.items() if key[1] in ("grades", "notes")}  # the detector's notes
        return replace(_quarantined(rows, attributes, contract, spec, run_id, notes), grade_scale=scale)


def _judgment_columns(contract: Contract) -> list[str]:
    cols = contract.columns
    return [cols.request_id, cols.doc_id, cols.grade]


def _as_read(
    rows: FlaggedInputs,
    candidates: DataFrame,
    attributes: Attributes,
    contract: Contract,
    spec: ValidationSpec,
    counts: RuleCounts,
) -> ValidatedInputs:
    """Nothing was set aside: the rows as read (no flags computed again), numeric strings parsed;
    identical duplicate judgments (same request, doc and grade) merged into one."""
    accounting = RowAccounting.from_counts(counts, rows)
    cand = rows["candidates"][0]
    out_candidates = cand.as_read() if cand.parsed else candidates
    out_judgments = None
    if "judgments" in rows:
        out_judgments = rows["judgments"][0].as_read(_judgment_columns(contract))
        if accounting["judgments"].duplicates_merged > 0:
            out_judgments = out_judgments.distinct()
    if "attributes" in rows:
        attr = rows["attributes"][0]
        attributes = replace(attributes, table=attr.as_read() if attr.parsed else attr.df)
    quarantine = empty_quarantine(candidates.sparkSession) if spec.quarantines else None
    return ValidatedInputs(out_candidates, out_judgments, attributes, quarantine, accounting, contract).remember()


def _passed(flagged: FlaggedInputs, name: str, merge: bool, columns: list[str] | None = None) -> DataFrame:
    """The rows of input ``name`` that were not quarantined (with ``merge``: identical duplicates merged)."""
    table, df = flagged[name]
    df = df.filter(~F.col("__v_q"))
    if merge:
        df = df.filter(~F.col("__v_dup"))
    return table.output(df, columns)


def _quarantined(
    rows: FlaggedInputs, attributes: Attributes, contract: Contract, spec: ValidationSpec, run_id: str,
    notes: RuleCounts,
) -> ValidatedInputs:
    """Every rule flagged, the flagged inputs persisted once (for scoring and the quarantine write),
    counted and checked (rules handled as ``error``, the maximum share); the rows that passed.
    ``notes``: what the count-only detector noted of the rows read (kinds ``grades`` and ``notes``), kept as read."""
    flagged = flag_every_rule(rows, contract, spec, quarantining=True)
    for name, (table, df) in flagged.items():
        flagged[name] = (table, persist_coalesced(df))
    cached = tuple(df for _, df in flagged.values())
    try:
        counts = {**count_flagged_rows(flagged), **notes}
        accounting = RowAccounting.from_counts(counts, flagged)
        raise_on_broken_rules(counts, spec)
        raise_on_share(accounting, counts, spec)
    except BaseException:
        for df in cached:
            df.unpersist()
        raise
    out_judgments = None
    if "judgments" in flagged:
        merge = accounting["judgments"].duplicates_merged > 0
        out_judgments = _passed(flagged, "judgments", merge, _judgment_columns(contract))
    if "attributes" in flagged:
        attributes = replace(attributes, table=_passed(flagged, "attributes", False))
    quarantine = quarantine_rows(flagged, run_id, contract)
    candidates = _passed(flagged, "candidates", False)
    return ValidatedInputs(candidates, out_judgments, attributes, quarantine, accounting, contract, cached).remember()


__all__ = ["SHELL_CHECK", "validate_inputs"]
