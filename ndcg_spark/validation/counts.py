"""How many rows break each rule, counted two ways with the same keys (:data:`RuleCounts`).

:func:`detect_rule_counts` is the count-only detector: hash aggregations, no windows, no examples;
on clean input it is all validation costs. It also notes the grades' scale (kind ``grades``,
:func:`grade_scale`): below, every grade is a whole number and the largest is 2.
:func:`count_flagged_rows` counts the rows flagged one by one (:mod:`ndcg_spark.validation.flagging`),
with an example row per rule and the quarantined rows per reason.

>>> from ndcg_spark import Contract
>>> from ndcg_spark.config.validation_spec import ValidationSpec
>>> from ndcg_spark.validation.flagging import flag_row_rules
>>> cands = spark.createDataFrame([("q1", "a", 1, 1.0), ("q1", "a", 2, 0.0), ("q2", "b", 0, 2.0)],
...                               "request_id string, doc_id string, position int, grade double")
>>> contract = Contract(k=[3]).resolve(cands.columns)
>>> rows = flag_row_rules(cands, None, contract)  # no judgments table: the grades come with the candidates
>>> for key, (n, _) in sorted(detect_rule_counts(rows, contract, ValidationSpec()).items()):
...     print(key, n)
('candidates', 'grades', 'off') 0
('candidates', 'grades', 'top') 2
('candidates', 'read', None) 3
('candidates', 'rule', 'doc_repeated') 2
('candidates', 'rule', 'position_invalid') 1
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.validation_spec import RULES, ValidationSpec
from ndcg_spark.frames import whole_number_in
from ndcg_spark.validation.accounting import RuleCounts
from ndcg_spark.validation.candidates import valid_position
from ndcg_spark.validation.flags import JUDGED_PAIR, REQUEST_LIST, rule_name
from ndcg_spark.validation.flagging import FlaggedInputs
from ndcg_spark.validation.judgments import conflict
from ndcg_spark.validation.input_table import TREC_TRAILING

#: ``(count key, aggregate Column)``; keys are ``read``, ``merged``, ``rule:<name>``, ``maybe:<name>``
#: or ``grades:<name>``
_Items = list[tuple[str, Column]]
#: Grades noted as a whole scale (:func:`grade_scale`) go up to this.
SCALE_LIMIT = 64


def _row_rule_sums(df: DataFrame) -> _Items:
    """``(rule, rows breaking it)`` aggregates of each row rule flagged on ``df``."""
    names = [r.name for r in RULES if f"__v_f_{r.name}" in df.columns and r.scope == "row"]
    return [(name, F.sum(F.col(f"__v_f_{name}").cast("long"))) for name in names]


def _count_row(name: str, df: DataFrame, items: _Items) -> DataFrame:
    """One row for input ``name``: a map key -> count, the ``items`` aggregated over ``df``."""
    zero = F.lit(0).cast("long")
    totals = df.agg(*[F.coalesce(c.cast("long"), zero).alias(f"c{i}") for i, (_, c) in enumerate(items)])
    pairs = [x for i, (key, _) in enumerate(items) for x in (F.lit(key), F.col(f"c{i}"))]
    return totals.select(F.lit(name).alias("input"), F.create_map(*pairs).alias("m"))


def _collect(parts: list[DataFrame]) -> RuleCounts:
    """Run the count rows of ``parts`` as one job; rules broken by no row (and repeats that no
    list may hold) are left out."""
    counts: RuleCounts = {}
    for row in reduce(DataFrame.unionByName, parts).collect():
        for key, value in row["m"].items():
            kind, _, rule = key.partition(":")
            if kind in ("rule", "maybe") and not value:
                continue
            counts[(row["input"], kind, rule or None)] = (int(value), None)
    return counts


def _grouped_counts(name: str, df: DataFrame, keys: list[str], aggs: list[Column], items: _Items) -> DataFrame:
    """The count row of input ``name`` from ``df`` grouped by ``keys``: rows read and its row rules,
    then ``items`` over the groups, which hold ``__v_n`` (their rows), the row rules' sums and ``aggs``."""
    sums = _row_rule_sums(df)
    grades = _grade_aggs() if "__v_grade" in df.columns else []
    # TREC lines whose fields past the format's were ignored (trailing_fields="ignore")
    trailing = [F.sum(F.col(TREC_TRAILING).cast("long")).alias("__v_trail")] if TREC_TRAILING in df.columns else []
    groups = df.groupBy(*keys).agg(F.count(F.lit(1)).alias("__v_n"), *[c.alias(n) for n, c in sums], *aggs, *grades,
                                   *trailing)
    read = [("read", F.sum("__v_n"))] + [(f"rule:{n}", F.sum(n)) for n, _ in sums]
    if grades:
        read += [("grades:top", F.max("__v_gtop")), ("grades:off", F.sum("__v_goff")),
                 ("grades:negative", F.sum("__v_gneg"))]
    if trailing:
        read.append(("notes:trec_trailing", F.sum("__v_trail")))
    return _count_row(name, groups, read + items)


def _grade_aggs() -> list[Column]:
    """Per group, the largest grade that is a whole number from 0 to :data:`SCALE_LIMIT`, how
    many grades are not (null grades are unjudged: neither) and how many are negative."""
    whole = whole_number_in(F.col("__v_grade"), 0, SCALE_LIMIT)
    grade = F.col("__v_grade")
    return [F.max(F.when(whole, grade)).alias("__v_gtop"), F.count(F.when(~whole, 1)).alias("__v_goff"),
            F.count(F.when(grade < 0, 1)).alias("__v_gneg")]


def grade_scale(counts: RuleCounts) -> int | None:
    """The largest grade read, when :func:`detect_rule_counts` found every grade a whole number
    from 0 to :data:`SCALE_LIMIT` (0 when none is positive), else None. The scored grades are
    then among ``0 .. grade_scale``, as if ``contract.max_grade`` declared it."""
    for name in ("judgments", "candidates"):  # the grades scored: the judgments', else the candidates'
        off = counts.get((name, "grades", "off"))
        if off is not None:
            return None if off[0] else counts[(name, "grades", "top")][0]
    return None


def _candidate_counts(cands: DataFrame, cap: int | None, contract: Contract) -> DataFrame:
    """Rows read, row rules of the candidates (per request list), and with the skew guard ``cap``
    its ``too_many_candidates``; without it, whether the lists repeat a doc id or a position
    (``maybe:<rule>``: 0 exactly when none does; a repeat is counted by :func:`_repeat_counts`)."""
    if cap is not None:
        too_many = F.col("__v_rid").isNotNull() & (F.col("__v_n") > cap)
        return _grouped_counts("candidates", cands, REQUEST_LIST, [],
                               [("rule:too_many_candidates", F.sum(F.when(too_many, F.col("__v_n"))))])
    values = _list_values(contract, hashed=True)
    lists = [F.collect_list(value).alias(f"__v_list{i}") for i, (_, value) in enumerate(values)]
    maybe = [(f"maybe:{rule}", F.sum(_surplus(F.col(f"__v_list{i}")))) for i, (rule, _) in enumerate(values)]
    return _grouped_counts("candidates", cands, REQUEST_LIST, lists, maybe)


def _surplus(values: Column) -> Column:
    """How many elements of an array repeat another one (0 exactly when all are distinct)."""
    return F.size(values) - F.size(F.array_distinct(values))


def _doc_hash() -> Column:
    """The 64-bit hash of a row's doc id, null when it has none or no request id. Distinct hashes
    prove distinct doc ids; equal hashes only suggest equal ones."""
    doc = F.col("__v_did")
    return F.when(F.col("__v_rid").isNotNull() & doc.isNotNull(), F.xxhash64(doc))


def _list_values(contract: Contract, hashed: bool) -> list[tuple[str, Column]]:
    """``(rule, value)`` whose repeats within a request list break ``doc_repeated`` and (under
    position order) ``position_repeated``: the doc id (``hashed``: its hash, :func:`_doc_hash`) and
    the valid position, null where the rule does not look (``collect_list`` leaves it out)."""
    doc = _doc_hash() if hashed else F.when(F.col("__v_rid").isNotNull(), F.col("__v_did"))
    values = [("doc_repeated", doc)]
    if contract.order == "position":
        # + 0.0: -0.0 and 0.0 are one position (as grouped by the row flags)
        valid = F.col("__v_rid").isNotNull() & valid_position()
        values.append(("position_repeated", F.when(valid, F.col("__v_pos") + F.lit(0.0))))
    return values


def _judgment_counts(judgs: DataFrame) -> DataFrame:
    """Rows read, row rules, ``judgment_conflict`` and identical duplicates (rows per judged pair)."""
    n = F.col("__v_n")
    keyed = F.col("__v_rid").isNotNull() & F.col("__v_did").isNotNull()
    is_conflict = keyed & conflict(n, F.col("__v_n_graded"), F.col("__v_min"), F.col("__v_max"))
    grades = [F.count("__v_grade").alias("__v_n_graded"), F.min("__v_grade").alias("__v_min"),
              F.max("__v_grade").alias("__v_max")]
    items = [("rule:judgment_conflict", F.sum(F.when(is_conflict, n))),
             ("merged", F.sum(F.when(keyed & ~is_conflict & (n > 1), n - 1)))]
    return _grouped_counts("judgments", judgs, JUDGED_PAIR, grades, items)


def _judgment_indicator(judgs: DataFrame) -> DataFrame:
    """Rows read and row rules of the judgments, and whether any judged (request, doc) may occur
    twice (``maybe:judgment_pairs``: the doc ids' hashes of each request repeat). None does: no
    ``judgment_conflict`` and nothing to merge; one may: :func:`_judgment_counts` counts exactly.
    Per request rather than per pair, so the rows sum up before the shuffle where they lie together."""
    hashes = [F.collect_list(_doc_hash()).alias("__v_docs")]
    return _grouped_counts("judgments", judgs, ["__v_rid"], hashes,
                           [("maybe:judgment_pairs", F.sum(_surplus(F.col("__v_docs"))))])


def _rows_in_repeats(sorted_values: Column) -> Column:
    """How many elements of a sorted array equal a neighbour (belong to a value present twice or more)."""

    def repeated(x: Column, i: Column) -> Column:
        before = (i > 0) & (x == F.try_element_at(sorted_values, F.greatest(i, F.lit(1))))
        after = x == F.try_element_at(sorted_values, i + 2)
        return F.coalesce(before, F.lit(False)) | F.coalesce(after, F.lit(False))

    return F.size(F.filter(sorted_values, repeated))


def _repeat_counts(cands: DataFrame, contract: Contract) -> DataFrame:
    """``doc_repeated`` and ``position_repeated`` from each request list's sorted doc ids and positions."""
    values = _list_values(contract, hashed=False)
    listed = cands.groupBy(*REQUEST_LIST).agg(
        *[F.array_sort(F.collect_list(value)).alias(f"__v_list{i}") for i, (_, value) in enumerate(values)]
    )
    items = [(f"rule:{rule}", F.sum(_rows_in_repeats(F.col(f"__v_list{i}")))) for i, (rule, _) in enumerate(values)]
    return _count_row("candidates", listed, items)


def detect_rule_counts(rows: FlaggedInputs, contract: Contract, spec: ValidationSpec) -> RuleCounts:
    """Count every rule's rows with hash aggregations only (no windows, no examples): the fast check
    of the all-``error`` handling. Same keys as :func:`count_flagged_rows`.

    With the skew guard (the job's default), job 1 counts rows per request list (the guard), per
    judged (request, doc) and the row rules; job 2 -- only when no request list is too long, so no
    list is ever held whole -- collects each list's doc ids and positions to count repeats.
    Without it (``max_candidates_per_request: null``, as in the shell's check) job 1 only asks
    whether anything repeats: each list's doc id hashes and positions, and each request's judged
    doc id hashes, summed where the rows lie, so nearly nothing crosses the shuffle. On clean input
    that one job is all; when something may repeat, job 2 counts the repeats (and the judged
    pairs) exactly.

    The grades' part also notes the largest grade and how many are not whole numbers from 0 to
    :data:`SCALE_LIMIT` (kind ``grades``; read with :func:`grade_scale`).
    """
    cands = rows["candidates"][1]
    cap = spec.max_candidates_per_request
    judgs = rows["judgments"][1] if "judgments" in rows else None
    parts = [_candidate_counts(cands, cap, contract)]
    if judgs is not None:
        parts.append(_judgment_counts(judgs) if cap is not None else _judgment_indicator(judgs))
    if "attributes" in rows:
        attrs = rows["attributes"][1]
        items = [("read", F.count(F.lit(1)))] + [(f"rule:{n}", c) for n, c in _row_rule_sums(attrs)]
        parts.append(_count_row("attributes", attrs, items))
    counts = _collect(parts)
    if not contract.gain.negative_as_zero:  # negative grades are then a rule's, not read as gain 0
        counts = {key: value for key, value in counts.items() if key[1:] != ("grades", "negative")}
    maybe = {key[2] for key in counts if key[1] == "maybe"}
    counts = {key: value for key, value in counts.items() if key[1] != "maybe"}
    exact = []
    if maybe & {"doc_repeated", "position_repeated"} or (
        cap is not None and counts.get(("candidates", "rule", "too_many_candidates"), (0, None))[0] == 0
    ):
        exact.append(_repeat_counts(cands, contract))
    if "judgment_pairs" in maybe:
        exact.append(_judgment_counts(judgs))
    if exact:
        counts.update(_collect(exact))
    return counts


_ENTRY = "struct<kind:string,rule:string>"


def _entries() -> Column:
    """A flagged row's count entries: ``read``, ``quarantined`` or ``merged``, one ``rule`` per rule broken."""
    none = F.lit(None).cast("string").alias("rule")
    reason = rule_name(F.col("__v_reason")).alias("rule")
    fixed = F.array(
        F.struct(F.lit("read").alias("kind"), none),
        F.when(F.col("__v_q"), F.struct(F.lit("quarantined").alias("kind"), reason)),
        F.when(F.col("__v_dup") & ~F.col("__v_q"), F.struct(F.lit("merged").alias("kind"), none)),
    ).cast(f"array<{_ENTRY}>")
    own = F.transform(F.col("__v_rules"), lambda r: F.struct(F.lit("rule").alias("kind"), r.alias("rule")))
    return F.concat(F.array_compact(fixed), own.cast(f"array<{_ENTRY}>"))


def count_flagged_rows(flagged: FlaggedInputs) -> RuleCounts:
    """One job: rows read, rows per broken rule (with an example), quarantined rows per reason, duplicates.

    Keys are ``(input, kind, rule)`` with kind ``read`` | ``rule`` | ``quarantined`` | ``merged``.
    """
    parts = [
        df.select(
            F.lit(name).alias("input"),
            F.explode(_entries()).alias("e"),
            F.when(F.size("__v_rules") > 0, table.json_row()).alias("example"),
        )
        for name, (table, df) in flagged.items()
    ]
    rows = (
        reduce(DataFrame.unionByName, parts)
        .groupBy("input", F.col("e.kind").alias("kind"), F.col("e.rule").alias("rule"))
        .agg(F.count(F.lit(1)).alias("n"), F.min(F.when(F.col("e.kind") == "rule", F.col("example"))).alias("example"))
        .collect()
    )
    return {(r["input"], r["kind"], r["rule"]): (r["n"], r["example"]) for r in rows}


__all__ = ["SCALE_LIMIT", "count_flagged_rows", "detect_rule_counts", "grade_scale"]
