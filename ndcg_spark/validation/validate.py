"""Dirty inputs: named validation rules, a declared handling per rule, and exact row accounting.

Every input row is checked against the rules of :data:`RULES` before anything is scored. Each
data rule has a declared handling (``validation:`` in the job YAML, :class:`ValidationSpec`):

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
``rows read = rows scored + rows quarantined`` per input. ``score_requests`` itself does not
validate; the job (``pipeline.score_stage``) always validates first.

Examples
--------
>>> from ndcg_spark import Contract
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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.job.config import JobConfig, Source
from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import ContractError, ValidationError
from ndcg_spark.scoring.score import Attributes, gain

HANDLINGS = ("error", "quarantine")
INPUTS = ("candidates", "judgments", "attributes")


@dataclass(frozen=True)
class Rule:
    """A named validation rule.

    ``scope`` is ``schema`` (checked on the table's shape; always ``error``), ``contract`` (rejected
    when the contract is built), ``row`` (a row breaks it by itself) or ``request`` (a row breaks
    it together with other rows of its request).
    """

    name: str
    scope: str
    inputs: tuple[str, ...]
    description: str

    @property
    def quarantinable(self) -> bool:
        return self.scope in ("row", "request")


#: Every rule, in the order used to pick a row's primary rule (the first one it breaks).
RULES: tuple[Rule, ...] = (
    Rule("k_invalid", "contract", (), "a cutoff K < 1 (rejected by the contract at contract.k before any data is read)"),
    Rule("column_missing", "schema", INPUTS, "a column the contract or the job needs is absent"),
    Rule(
        "column_type",
        "schema",
        INPUTS,
        "a column's type cannot be read in its role (ids: string, integer or decimal; position, score, grade, "
        "weight: a number, or a string holding one)",
    ),
    Rule("input_empty", "schema", INPUTS, "an input table has no rows"),
    Rule("request_id_missing", "row", INPUTS, "request id null, empty or blank"),
    Rule("doc_id_missing", "row", ("candidates", "judgments"), "doc id null, empty or blank"),
    Rule("grade_not_numeric", "row", ("candidates", "judgments"), "a grade string that is not a number"),
    Rule("grade_negative", "row", ("candidates", "judgments"), "grade < 0"),
    Rule(
        "grade_not_finite",
        "row",
        ("candidates", "judgments"),
        "grade NaN or infinite, or its gain overflows (exponential gain of a grade above 1023)",
    ),
    Rule("grade_not_in_gain_table", "row", ("candidates", "judgments"), "a grade the explicit gain table does not list"),
    Rule(
        "position_invalid",
        "row",
        ("candidates",),
        "position order: position null, not a number, NaN, infinite or < 1",
    ),
    Rule("score_invalid", "row", ("candidates",), "score order: score null, NaN or not a number"),
    Rule(
        "weight_invalid",
        "row",
        ("candidates", "attributes"),
        "traffic weight negative, NaN, infinite or not a number (a null weight is attributes.default_weight's)",
    ),
    Rule(
        "doc_repeated",
        "request",
        ("candidates",),
        "the same doc id twice in one request's candidates (per system and pool version)",
    ),
    Rule(
        "position_repeated",
        "request",
        ("candidates",),
        "position order: two candidates of one request share a position (per system and pool version)",
    ),
    Rule(
        "too_many_candidates",
        "request",
        ("candidates",),
        "a request has more candidates than validation.max_candidates_per_request (the skew guard)",
    ),
    Rule(
        "judgment_conflict",
        "request",
        ("judgments",),
        "two judgment rows for one (request, doc) with different grades (identical duplicates are merged)",
    ),
)
RULE_NAMES = tuple(r.name for r in RULES)
_RULES = {r.name: r for r in RULES}
_INDEX = {name: i for i, name in enumerate(RULE_NAMES)}

#: Columns of the quarantine table (``outputs.quarantine``), partitioned by ``run_id``.
QUARANTINE_COLUMNS = (
    "run_id",
    "input",
    "rule",
    "row_rules",
    "system",
    "pool_version",
    "request_id",
    "doc_id",
    "row",
    "contract_fingerprint",
)

_QUARANTINE_SCHEMA = ", ".join(f"{c} string" for c in QUARANTINE_COLUMNS)
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType)
_INF = float("inf")


# --------------------------------------------------------------------------- the declared handling
@dataclass(frozen=True)
class ValidationSpec:
    """The declared handling of every rule (the ``validation:`` section of the job YAML).

    Parameters
    ----------
    default : handling of every data rule not listed in ``rules``: ``error`` or ``quarantine``.
    rules : rule name -> ``error`` | ``quarantine``. Schema rules (``column_missing``, ``column_type``,
        ``input_empty``, ``k_invalid``) are always ``error``: there are no rows to set aside.
    max_quarantined_share : the run fails anyway when more than this share of any input's rows
        is quarantined (0 .. 1).
    max_candidates_per_request : the skew guard (rule ``too_many_candidates``); ``None`` turns it off.

    Examples
    --------
    >>> ValidationSpec.from_dict({"rules": {"doc_repeated": "quarantine"}}).handling("doc_repeated")
    'quarantine'
    >>> ValidationSpec.from_dict({"rules": {"doc_repeated": "drop"}})
    Traceback (most recent call last):
    ...
    ndcg_spark.errors.ContractError: validation.rules.doc_repeated: must be one of error, quarantine; got 'drop'
    """

    default: str = "error"
    rules: Mapping[str, str] = field(default_factory=dict)
    max_quarantined_share: float = 0.05
    max_candidates_per_request: int | None = 10_000

    def __post_init__(self) -> None:
        if self.default not in HANDLINGS:
            raise ContractError("validation.default", f"must be one of {', '.join(HANDLINGS)}; got {self.default!r}")
        if not isinstance(self.rules, Mapping):
            raise ContractError("validation.rules", f"must be a mapping rule -> handling, got {self.rules!r}")
        for name, handling in self.rules.items():
            path = f"validation.rules.{name}"
            if name not in _RULES:
                raise ContractError(path, f"is not a rule; rules are {', '.join(RULE_NAMES)}")
            if handling not in HANDLINGS:
                raise ContractError(path, f"must be one of {', '.join(HANDLINGS)}; got {handling!r}")
            if handling != "error" and not _RULES[name].quarantinable:
                raise ContractError(path, "can only be 'error' (a schema or contract rule has no rows to set aside)")
        object.__setattr__(self, "rules", MappingProxyType(dict(self.rules)))
        share = self.max_quarantined_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ContractError("validation.max_quarantined_share", f"must be a number from 0 to 1, got {share!r}")
        object.__setattr__(self, "max_quarantined_share", float(share))
        cap = self.max_candidates_per_request
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ContractError("validation.max_candidates_per_request", f"must be an integer >= 1 or null, got {cap!r}")

    @classmethod
    def from_dict(cls, data: Any, path: str = "validation") -> ValidationSpec:
        """Build from the raw ``validation:`` section (``None`` gives the defaults)."""
        if data is None:
            return cls()
        if isinstance(data, ValidationSpec):
            return data
        if not isinstance(data, Mapping):
            raise ContractError(path, f"must be a mapping, got {type(data).__name__}")
        known = {"default", "rules", "max_quarantined_share", "max_candidates_per_request"}
        for key in data:
            if key not in known:
                raise ContractError(f"{path}.{key}", f"is not a known field; known: {', '.join(sorted(known))}")
        rules = data.get("rules") or {}
        if not isinstance(rules, Mapping):
            raise ContractError(f"{path}.rules", f"must be a mapping rule -> handling, got {rules!r}")
        kwargs = {k: data[k] for k in known - {"rules"} if k in data}
        return cls(rules=dict(rules), **kwargs)

    def handling(self, rule: str) -> str:
        """``error`` or ``quarantine`` for ``rule``."""
        if not _RULES[rule].quarantinable:
            return "error"
        return self.rules.get(rule, self.default)

    @property
    def quarantines(self) -> bool:
        """Whether any rule is handled by quarantine (then ``outputs.quarantine`` is needed)."""
        return any(self.handling(r.name) == "quarantine" for r in RULES)

    def to_dict(self) -> dict[str, Any]:
        """Plain, complete copy (every rule's resolved handling) for run metadata."""
        return {
            "rules": {r.name: self.handling(r.name) for r in RULES},
            "max_quarantined_share": self.max_quarantined_share,
            "max_candidates_per_request": self.max_candidates_per_request,
        }


# --------------------------------------------------------------------------- accounting
@dataclass(frozen=True)
class InputAccounting:
    """Row accounting of one input: ``rows_read = rows_scored + rows_quarantined``.

    ``rows_scored`` are the rows that passed validation and were handed to scoring; identical
    duplicate judgments count there and are merged into one (``duplicates_merged`` of them went).
    ``quarantined_by_rule`` counts quarantined rows by the rule that sent them there.
    """

    input: str
    rows_read: int
    rows_scored: int
    rows_quarantined: int
    duplicates_merged: int = 0
    quarantined_by_rule: tuple[tuple[str, int], ...] = ()

    @property
    def balanced(self) -> bool:
        return self.rows_read == self.rows_scored + self.rows_quarantined

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows_read,
            "rows_scored": self.rows_scored,
            "rows_quarantined": self.rows_quarantined,
            "duplicates_merged": self.duplicates_merged,
            "quarantined_by_rule": dict(self.quarantined_by_rule),
        }


@dataclass(frozen=True)
class RowAccounting:
    """Per-input :class:`InputAccounting` of one run (``candidates``, ``judgments``, ``attributes``)."""

    inputs: tuple[InputAccounting, ...]

    def __getitem__(self, name: str) -> InputAccounting:
        for item in self.inputs:
            if item.input == name:
                return item
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(item.input == name for item in self.inputs)

    @property
    def rows_quarantined(self) -> int:
        return sum(item.rows_quarantined for item in self.inputs)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """``{input: {rows_read, rows_scored, rows_quarantined, duplicates_merged, quarantined_by_rule}}``."""
        return {item.input: item.as_dict() for item in self.inputs}

    def summary(self) -> str:
        """One line: ``rows read = rows scored + rows quarantined: candidates 10 = 8 + 2 (doc_repeated 2); …``."""
        parts = []
        for item in self.inputs:
            text = f"{item.input} {item.rows_read:,} = {item.rows_scored:,} + {item.rows_quarantined:,}"
            notes = [f"{rule} {n:,}" for rule, n in item.quarantined_by_rule]
            if item.duplicates_merged:
                notes.append(f"{item.duplicates_merged:,} identical duplicate(s) merged")
            parts.append(text + (f" ({', '.join(notes)})" if notes else ""))
        return "rows read = rows scored + rows quarantined: " + "; ".join(parts)


@dataclass
class ValidatedInputs:
    """What :func:`validate_inputs` returns.

    ``candidates``, ``judgments`` and ``attributes.table`` hold the rows to score (original columns;
    a numeric column that arrived as strings is parsed to double). ``quarantine`` holds the
    quarantined rows in the :data:`QUARANTINE_COLUMNS` shape (empty when nothing was set aside,
    ``None`` when no rule is handled by quarantine). ``contract`` is resolved (``order`` is ``position`` or ``score``). Call
    :meth:`unpersist` once the outputs are written.
    """

    candidates: DataFrame
    judgments: DataFrame | None
    attributes: Attributes
    quarantine: DataFrame | None
    accounting: RowAccounting
    contract: Contract
    _cached: tuple[DataFrame, ...] = ()

    def unpersist(self) -> None:
        for df in self._cached:
            df.unpersist()
        self._cached = ()


# --------------------------------------------------------------------------- column helpers
def _quoted(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _blank(c: Column) -> Column:
    """Null, empty or whitespace-only (as a string)."""
    return c.isNull() | (F.trim(c) == F.lit(""))


def _not_finite(c: Column) -> Column:
    return c.isNotNull() & (F.isnan(c) | (F.abs(c) == F.lit(_INF)))


def _schema_error(table: str, problem: str, rule: str) -> ValidationError:
    return ValidationError(f"{table}: {problem} (rule {rule})", rule)


class _Table:
    """One input under validation: its schema checks and its parsed role columns."""

    def __init__(self, df: DataFrame, name: str) -> None:
        self.df = df
        self.name = name
        self.types = {f.name: f.dataType for f in df.schema.fields}
        self.original = list(df.columns)
        self.parsed: dict[str, str] = {}  # original column -> internal parsed column (strings parsed to double)

    def require(self, column: str, role: str, hint: str = "") -> None:
        if column not in self.types:
            where = hint or f"map it with contract.columns.{role}"
            raise _schema_error(
                self.name,
                f"missing column {column!r} (the {role}; {where}); columns present: "
                f"{', '.join(sorted(self.types)) or 'none'}",
                "column_missing",
            )

    def identifier(self, column: str, role: str) -> Column:
        self.require(column, role)
        dtype = self.types[column]
        if not isinstance(dtype, (T.StringType, T.VarcharType, T.CharType, *_INTEGRAL, T.DecimalType)):
            raise _schema_error(
                self.name,
                f"column {column!r} (the {role}) must be a string or an integer, found {dtype.simpleString()}",
                "column_type",
            )
        return _quoted(column).cast("string")

    def number(self, column: str, role: str, hint: str = "") -> tuple[Column, Column]:
        """(value as double, flag: a non-blank string that is not a number)."""
        self.require(column, role, hint)
        dtype = self.types[column]
        raw = _quoted(column)
        if isinstance(dtype, _NUMERIC):
            return raw.cast("double"), F.lit(False)
        if isinstance(dtype, (T.StringType, T.VarcharType, T.CharType)):
            value = _parsed_value(column)
            self.parsed[column] = f"__v_num_{column}"
            return value, raw.isNotNull() & ~_blank(raw) & value.isNull()
        raise _schema_error(
            self.name,
            f"column {column!r} (the {role}) must be numeric (or strings of numbers), found {dtype.simpleString()}",
            "column_type",
        )

    def json_row(self) -> Column:
        return F.to_json(F.struct(*[_quoted(c) for c in self.original]))

    def output(self, df: DataFrame, columns: list[str] | None = None) -> DataFrame:
        """The original columns (or ``columns``), numeric strings replaced by their parsed doubles."""
        cols = columns or self.original
        return df.select(*[F.col(self.parsed[c]).alias(c) if c in self.parsed else _quoted(c) for c in cols])


def _rules_array(flags: list[tuple[str, Column]]) -> tuple[Column, Column]:
    """(array of broken rule names in catalog order, index of the first broken rule or null)."""
    flags = sorted(flags, key=lambda item: _INDEX[item[0]])
    if not flags:
        return F.array().cast("array<string>"), F.lit(None).cast("int")
    names = F.array_compact(F.array(*[F.when(flag, F.lit(name)) for name, flag in flags]))
    first = F.coalesce(*[F.when(flag, F.lit(_INDEX[name])) for name, flag in flags], F.lit(None).cast("int"))
    return names, first


def _rule_name(index: Column) -> Column:
    return F.element_at(F.array(*[F.lit(n) for n in RULE_NAMES]), index + 1)


# --------------------------------------------------------------------------- validation
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
    """Check every input row against :data:`RULES` and apply the declared handling.

    Parameters
    ----------
    candidates, judgments, contract, system, pool_version : as for
        :func:`~ndcg_spark.scoring.score.score_requests`.
    spec : the declared handling (default :class:`ValidationSpec`: every rule ``error``).
    attributes : the :class:`~ndcg_spark.scoring.score.Attributes` the job will attach; its table (or the
        candidates, when it has none) is checked for the request id, weight and slice columns.
    run_id : stamped on the quarantine rows.

    Returns
    -------
    :class:`ValidatedInputs`: rows to score, quarantined rows, :class:`RowAccounting`.

    Raises
    ------
    ValidationError
        a schema rule is broken, a rule handled by ``error`` is broken (message: rule, row count,
        one example row, for each such rule), or more than ``max_quarantined_share`` of an input
        would be quarantined. Nothing has been written at that point.

    Notes
    -----
    A count-only detector runs first: two jobs of hash aggregations (rows per request list, per
    judged pair, per input; then each list's sorted doc ids and positions — only once no list is
    longer than the skew guard, so no oversized list is ever collected). On clean input that is
    all: nothing is cached and the inputs are returned as read (numeric strings parsed, identical
    duplicate judgments merged). When a rule is broken, every row is flagged (windows by request):
    for an ``error`` rule to name counts and example rows; for ``quarantine`` the flagged inputs are
    persisted once and reused by scoring and by the quarantine write (call
    :meth:`ValidatedInputs.unpersist` after writing).
    """
    contract = (contract or Contract()).resolve(candidates.columns)
    spec = spec or ValidationSpec()
    attributes = attributes or Attributes()

    rows = _rows(candidates, judgments, contract, attributes, system, pool_version)
    cand, judg, attr = (rows[name][0] if name in rows else None for name in INPUTS)

    # A count-only detector (hash aggregations: no windows, nothing cached) looks first. Clean input
    # costs only that; the rows are flagged one by one only to describe a failure or to quarantine.
    counts = _detect(rows, contract, spec)
    _raise_on_empty(counts, rows)
    broken = {rule for (_, kind, rule), (n, _) in counts.items() if kind == "rule" and n}
    cached: list[DataFrame] = []
    flagged = rows
    quarantining = bool(broken)
    if broken and any(spec.handling(rule) == "error" for rule in broken):
        _raise_on_errors(_count(_flag_all(rows, contract, spec, quarantining=False)), spec)
        _raise_on_errors(counts, spec)  # only if the detector and the row flags ever disagreed
    if not quarantining:
        accounting = _accounting(counts, rows)
    else:
        flagged = _flag_all(rows, contract, spec, quarantining=True)
        for name, (table, df) in flagged.items():
            df = df.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(df)
            flagged[name] = (table, df)
        try:
            counts = _count(flagged)
            accounting = _accounting(counts, flagged)
            _raise_on_errors(counts, spec)
            _raise_on_share(accounting, counts, spec)
        except BaseException:
            for df in cached:
                df.unpersist()
            raise

    # ------------------------------------------------------------------ the rows to score
    def passed(name: str, columns: list[str] | None = None) -> DataFrame:
        table, df = flagged[name]
        merge = name == "judgments" and accounting["judgments"].duplicates_merged > 0
        if not quarantining:
            # Nothing was set aside: the rows as read (no flags computed again), numeric strings parsed;
            # identical duplicate judgments (same request, doc and grade) merged into one.
            out = table.output(table.df.select("*", *[_parsed_value(c).alias(i) for c, i in table.parsed.items()]), columns)
            return out.distinct() if merge else out
        df = df.filter(~F.col("__v_q"))
        if merge:
            df = df.filter(~F.col("__v_dup"))
        return table.output(df, columns)

    out_candidates = passed("candidates") if quarantining or cand.parsed else candidates
    out_judgments = None
    if judg is not None:
        cols = contract.columns
        out_judgments = passed("judgments", [cols.request_id, cols.doc_id, cols.grade])
    out_attributes = attributes
    if attr is not None:
        out_attributes = replace(attributes, table=passed("attributes") if quarantining or attr.parsed else attr.df)

    quarantine = None
    if quarantining:
        parts = [_quarantine_rows(name, table, df, run_id, contract) for name, (table, df) in flagged.items()]
        quarantine = parts[0]
        for part in parts[1:]:
            quarantine = quarantine.unionByName(part)
    elif spec.quarantines:
        quarantine = candidates.sparkSession.createDataFrame([], _QUARANTINE_SCHEMA)
    return ValidatedInputs(out_candidates, out_judgments, out_attributes, quarantine, accounting, contract, tuple(cached))


def _rows(
    candidates: DataFrame,
    judgments: DataFrame | None,
    contract: Contract,
    attributes: Attributes,
    system: str | None,
    pool_version: str | None,
) -> dict[str, tuple[_Table, DataFrame]]:
    """Each given input with its schema checked and its row rules flagged (``contract`` resolved)."""
    cand = _Table(candidates, "candidates")
    judg = _Table(judgments, "judgments") if judgments is not None else None
    attr = _Table(attributes.table, "attributes") if attributes.table is not None else None
    rows = {"candidates": (cand, _candidate_rows(cand, judg is None, contract, attributes, attr is None, system, pool_version))}
    if judg is not None:
        rows["judgments"] = (judg, _judgment_rows(judg, contract))
    if attr is not None:
        rows["attributes"] = (attr, _attribute_rows(attr, contract, attributes))
    return rows


def _flag_all(
    rows: dict[str, tuple[_Table, DataFrame]], contract: Contract, spec: ValidationSpec, *, quarantining: bool
) -> dict[str, tuple[_Table, DataFrame]]:
    """Every row with every rule it breaks (``__v_rules``) and, with quarantine, why it goes (``__v_q``)."""
    j_flagged = _judgment_groups(rows["judgments"][1]) if "judgments" in rows else None
    a_flagged = rows["attributes"][1] if "attributes" in rows else None
    requests = None
    if quarantining:
        # A judgment or attribute row breaking a rule takes its whole request out of every input.
        bad = [
            f.filter(F.col("__v_rid").isNotNull() & F.col("__v_first").isNotNull()).select("__v_rid", "__v_first")
            for f in (j_flagged, a_flagged)
            if f is not None
        ]
        if bad:
            requests = bad[0] if len(bad) == 1 else bad[0].unionByName(bad[1])
            requests = requests.groupBy("__v_rid").agg(F.min("__v_first").alias("__v_req_first"))
    out = {"candidates": (rows["candidates"][0], _mark(_candidate_groups(rows["candidates"][1], contract, spec, requests, quarantining), None))}
    if j_flagged is not None:
        out["judgments"] = (rows["judgments"][0], _mark(j_flagged, requests))
    if a_flagged is not None:
        out["attributes"] = (rows["attributes"][0], _mark(a_flagged, requests))
    return out


def _rows_in_repeats(sorted_values: Column) -> Column:
    """How many elements of a sorted array equal a neighbour (belong to a value present twice or more)."""

    def repeated(x: Column, i: Column) -> Column:
        before = (i > 0) & (x == F.try_element_at(sorted_values, F.greatest(i, F.lit(1))))
        after = x == F.try_element_at(sorted_values, i + 2)
        return F.coalesce(before, F.lit(False)) | F.coalesce(after, F.lit(False))

    return F.size(F.filter(sorted_values, repeated))


def _detect(
    rows: dict[str, tuple[_Table, DataFrame]], contract: Contract, spec: ValidationSpec
) -> dict[tuple[str, str, str | None], tuple[int, None]]:
    """Count every rule's rows with hash aggregations only (no windows, no examples): the fast check
    of the all-``error`` handling. Same keys as :func:`_count`.

    Job 1 counts rows per request list (the skew guard), per judged (request, doc) and the row rules;
    job 2 — only when no request list is too long, so no list is ever held whole — collects each
    list's doc ids and positions to count repeats.
    """

    def row_rule_sums(df: DataFrame) -> list[tuple[str, Column]]:
        names = [r.name for r in RULES if f"__v_f_{r.name}" in df.columns and r.scope == "row"]
        return [(name, F.sum(F.col(f"__v_f_{name}").cast("long"))) for name in names]

    parts: list[DataFrame] = []

    def add(name: str, df: DataFrame, items: list[tuple[str, Column]]) -> None:
        """One row for ``name``: a map key -> count, the counts aggregated over ``df``."""
        totals = df.agg(*[F.coalesce(c.cast("long"), F.lit(0).cast("long")).alias(f"c{i}") for i, (_, c) in enumerate(items)])
        pairs = [x for i, (key, _) in enumerate(items) for x in (F.lit(key), F.col(f"c{i}"))]
        parts.append(totals.select(F.lit(name).alias("input"), F.create_map(*pairs).alias("m")))

    has_rid = F.col("__v_rid").isNotNull()
    cap = spec.max_candidates_per_request
    _, cands = rows["candidates"]
    lists = cands.groupBy(*_LIST).agg(F.count(F.lit(1)).alias("__v_n"), *[c.alias(n) for n, c in row_rule_sums(cands)])
    items = [("read", F.sum("__v_n"))] + [(f"rule:{n}", F.sum(n)) for n, _ in row_rule_sums(cands)]
    if cap is not None:
        items.append(("rule:too_many_candidates", F.sum(F.when(has_rid & (F.col("__v_n") > cap), F.col("__v_n")))))
    add("candidates", lists, items)
    if "judgments" in rows:
        _, judgs = rows["judgments"]
        pairs = judgs.groupBy(*_PAIR).agg(
            F.count(F.lit(1)).alias("__v_n"),
            F.count("__v_grade").alias("__v_n_graded"),
            F.min("__v_grade").alias("__v_min"),
            F.max("__v_grade").alias("__v_max"),
            *[c.alias(n) for n, c in row_rule_sums(judgs)],
        )
        n = F.col("__v_n")
        keyed = F.col("__v_rid").isNotNull() & F.col("__v_did").isNotNull()
        conflict = keyed & _conflict(n, F.col("__v_n_graded"), F.col("__v_min"), F.col("__v_max"))
        items = (
            [("read", F.sum(n)), ("rule:judgment_conflict", F.sum(F.when(conflict, n)))]
            + [(f"rule:{r}", F.sum(r)) for r, _ in row_rule_sums(judgs)]
            + [("merged", F.sum(F.when(keyed & ~conflict & (n > 1), n - 1)))]
        )
        add("judgments", pairs, items)
    if "attributes" in rows:
        _, attrs = rows["attributes"]
        add("attributes", attrs, [("read", F.count(F.lit(1)))] + [(f"rule:{n}", c) for n, c in row_rule_sums(attrs)])

    counts: dict[tuple[str, str, str | None], tuple[int, None]] = {}

    def collect(dfs: list[DataFrame]) -> None:
        union = dfs[0]
        for df in dfs[1:]:
            union = union.unionByName(df)
        for row in union.collect():
            for key, value in row["m"].items():
                kind, _, rule = key.partition(":")
                if kind == "rule" and not value:
                    continue
                counts[(row["input"], kind, rule or None)] = (int(value), None)

    collect(parts)
    if counts.get(("candidates", "rule", "too_many_candidates"), (0, None))[0] == 0:
        listed = cands.filter(has_rid).groupBy(*_LIST).agg(
            F.array_sort(F.collect_list("__v_did")).alias("__v_docs"),
            *(
                [F.array_sort(F.collect_list(F.when(_valid_position(), F.col("__v_pos")))).alias("__v_positions")]
                if contract.order == "position"
                else []
            ),
        )
        items = [("rule:doc_repeated", F.sum(_rows_in_repeats(F.col("__v_docs"))))]
        if contract.order == "position":
            items.append(("rule:position_repeated", F.sum(_rows_in_repeats(F.col("__v_positions")))))
        parts = []
        add("candidates", listed, items)
        collect(parts)
    return counts


_LIST = ["__v_sys", "__v_pool", "__v_rid"]  # a request list: one system's candidates for one request
_PAIR = ["__v_rid", "__v_did"]  # one judged (request, doc)


def _candidate_rows(
    table: _Table,
    prejoined: bool,
    contract: Contract,
    attributes: Attributes,
    attrs_from_candidates: bool,
    system: str | None,
    pool_version: str | None,
) -> DataFrame:
    """Candidates with their normalized keys and the row rules each row breaks by itself."""
    cols = contract.columns
    rid = table.identifier(cols.request_id, "request_id")
    did = table.identifier(cols.doc_id, "doc_id")
    sys_col = _quoted(cols.system).cast("string") if cols.system in table.types else F.lit(system or "default")
    pool_col = (
        _quoted(cols.pool_version).cast("string") if cols.pool_version in table.types else F.lit(pool_version)
    ).cast("string")
    derived: dict[str, Column] = {
        "__v_sys": sys_col,
        "__v_pool": pool_col,
        "__v_rid": F.when(~_blank(rid), rid),
        "__v_did": F.when(~_blank(did), did),
    }
    flags: list[tuple[str, Column]] = [("request_id_missing", _blank(rid)), ("doc_id_missing", _blank(did))]
    if contract.order == "position":
        pos, pos_bad = table.number(cols.position, "position")
        derived["__v_pos"] = pos
        flags.append(("position_invalid", pos_bad | pos.isNull() | F.isnan(pos) | (F.abs(pos) == F.lit(_INF)) | (pos < 1)))
    else:
        score, score_bad = table.number(cols.score, "score")
        derived["__v_score"] = score
        flags.append(("score_invalid", score_bad | score.isNull() | F.isnan(score)))
    if prejoined:
        grade, grade_bad = table.number(cols.grade, "grade", "map it with contract.columns.grade, or give inputs.judgments")
        flags.extend(_grade_flags(grade, grade_bad, contract))
        derived["__v_grade"] = grade
    if attrs_from_candidates:
        flags.extend(_attribute_columns(table, attributes))
    for column, internal in table.parsed.items():
        derived[internal] = _parsed_value(column)
    return _with_rules(table.df.select("*", *[c.alias(n) for n, c in derived.items()]), flags)


def _valid_position() -> Column:
    return F.col("__v_pos").isNotNull() & ~F.isnan("__v_pos")


def _candidate_groups(
    df: DataFrame, contract: Contract, spec: ValidationSpec, requests: DataFrame | None, list_reason: bool
) -> DataFrame:
    """Flag every row of the request rules (windows; used to quarantine rows or describe an error)."""
    if requests is not None:
        # Joined on request id before the windows, whose partitioning by request then reuses the join's.
        df = df.join(requests, "__v_rid", "left")

    # Whole-request rules. The first window (by request) fixes the partitioning; the finer ones reuse it.
    keys = _LIST
    has_rid = F.col("__v_rid").isNotNull()
    df = df.withColumn("__v_n", F.count(F.lit(1)).over(Window.partitionBy(*keys)))
    counts = [F.count(F.lit(1)).over(Window.partitionBy(*keys, "__v_did")).alias("__v_n_doc")]
    if contract.order == "position":
        counts.append(F.count(F.lit(1)).over(Window.partitionBy(*keys, "__v_pos")).alias("__v_n_pos"))
    df = df.select("*", *counts)
    group_flags: list[tuple[str, Column]] = [
        ("doc_repeated", has_rid & F.col("__v_did").isNotNull() & (F.col("__v_n_doc") > 1))
    ]
    if contract.order == "position":
        group_flags.append(("position_repeated", has_rid & _valid_position() & (F.col("__v_n_pos") > 1)))
    if spec.max_candidates_per_request is not None:
        group_flags.append(("too_many_candidates", has_rid & (F.col("__v_n") > F.lit(spec.max_candidates_per_request))))
    df = _with_rules(df, group_flags, append=True)
    if list_reason:
        # The first rule any row of the request list (system, pool version, request) breaks.
        df = df.withColumn(
            "__v_list_first", F.when(has_rid, F.min("__v_first").over(Window.partitionBy(*keys)))
        )
    return df


def _judgment_rows(table: _Table, contract: Contract) -> DataFrame:
    """Judgments with their normalized keys and the row rules each row breaks by itself."""
    cols = contract.columns
    rid = table.identifier(cols.request_id, "request_id")
    did = table.identifier(cols.doc_id, "doc_id")
    grade, grade_bad = table.number(cols.grade, "grade")
    flags = [("request_id_missing", _blank(rid)), ("doc_id_missing", _blank(did)), *_grade_flags(grade, grade_bad, contract)]
    derived = {"__v_rid": F.when(~_blank(rid), rid), "__v_did": F.when(~_blank(did), did), "__v_grade": grade}
    for column, internal in table.parsed.items():
        derived[internal] = _parsed_value(column)
    return _with_rules(table.df.select("*", *[c.alias(n) for n, c in derived.items()]), flags)


def _conflict(n: Column, n_graded: Column, low: Column, high: Column) -> Column:
    """Rows of one (request, doc) disagree: different grades, or graded and ungraded rows."""
    return (n > 1) & ((low != high) | ((n_graded > 0) & (n_graded < n)))


def _judgment_groups(df: DataFrame) -> DataFrame:
    """Flag every row of a conflicting (request, doc) and mark identical duplicates (windows)."""
    pair = Window.partitionBy(*_PAIR)
    keyed = F.col("__v_rid").isNotNull() & F.col("__v_did").isNotNull()
    df = df.select(
        "*",
        F.count(F.lit(1)).over(pair).alias("__v_n"),
        F.count("__v_grade").over(pair).alias("__v_n_graded"),
        F.min("__v_grade").over(pair).alias("__v_min"),
        F.max("__v_grade").over(pair).alias("__v_max"),
    )
    conflict = _conflict(F.col("__v_n"), F.col("__v_n_graded"), F.col("__v_min"), F.col("__v_max"))
    df = _with_rules(df, [("judgment_conflict", keyed & conflict)], append=True)
    # Identical duplicates (same request, doc and grade, no rule broken) are merged into one row.
    order = Window.partitionBy(*_PAIR).orderBy(F.col("__v_grade").asc_nulls_first())
    return df.withColumn("__v_dup", keyed & F.col("__v_first").isNull() & (F.row_number().over(order) > 1))


def _attribute_rows(table: _Table, contract: Contract, attributes: Attributes) -> DataFrame:
    rid = table.identifier(contract.columns.request_id, "request_id")
    flags = [("request_id_missing", _blank(rid)), *_attribute_columns(table, attributes)]
    derived = {"__v_rid": F.when(~_blank(rid), rid)}
    for column, internal in table.parsed.items():
        derived[internal] = _parsed_value(column)
    return _with_rules(table.df.select("*", *[c.alias(n) for n, c in derived.items()]), flags)


def _attribute_columns(table: _Table, attributes: Attributes) -> list[tuple[str, Column]]:
    hint = "set attributes.weight to the traffic-weight column"
    for s in attributes.slices:
        table.require(s, s, "listed in attributes.slices")
    if attributes.weight is None:
        return []
    weight, weight_bad = table.number(attributes.weight, "weight", hint)
    return [("weight_invalid", weight_bad | (weight < 0) | _not_finite(weight))]


def _parsed_value(column: str) -> Column:
    raw = _quoted(column)
    return F.when(_blank(raw), F.lit(None).cast("double")).otherwise(raw.try_cast("double"))


def _grade_flags(grade: Column, not_numeric: Column, contract: Contract) -> list[tuple[str, Column]]:
    g = gain(grade, contract.gain)
    flags = [
        ("grade_not_numeric", not_numeric),
        ("grade_negative", grade < 0),
        ("grade_not_finite", _not_finite(grade) | (grade.isNotNull() & _not_finite(g))),
    ]
    if contract.gain.kind == "table":
        flags.append(("grade_not_in_gain_table", grade.isNotNull() & ~F.isnan(grade) & g.isNull()))
    return flags


def _with_rules(df: DataFrame, flags: list[tuple[str, Column]], *, append: bool = False) -> DataFrame:
    """Set (or with ``append``, extend) ``__v_rules`` and ``__v_first`` from named boolean flags.

    Each flag is computed once, as a column ``__v_f_<rule>`` (kept: the detector sums it), then read
    by both the array and the first-rule index.
    """
    if not flags:
        return df
    df = df.select("*", *[F.coalesce(flag, F.lit(False)).alias(f"__v_f_{name}") for name, flag in flags])
    rules, first = _rules_array([(name, F.col(f"__v_f_{name}")) for name, _ in flags])
    if append:
        rules = F.concat(F.col("__v_rules"), rules)
        first = F.least(F.col("__v_first"), first)
    return df.withColumns({"__v_rules": rules, "__v_first": first})


def _mark(df: DataFrame, requests: DataFrame | None) -> DataFrame:
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


def _count(flagged: dict[str, tuple[_Table, DataFrame]]) -> dict[tuple[str, str, str | None], tuple[int, str | None]]:
    """One job: rows read, rows per broken rule (with an example), quarantined rows per reason, duplicates.

    Keys are ``(input, kind, rule)`` with kind ``read`` | ``rule`` | ``quarantined`` | ``merged``.
    """
    entry = "struct<kind:string,rule:string>"
    parts = []
    for name, (table, df) in flagged.items():
        fixed = F.array(
            F.struct(F.lit("read").alias("kind"), F.lit(None).cast("string").alias("rule")),
            F.when(
                F.col("__v_q"), F.struct(F.lit("quarantined").alias("kind"), _rule_name(F.col("__v_reason")).alias("rule"))
            ),
            F.when(
                F.col("__v_dup") & ~F.col("__v_q"),
                F.struct(F.lit("merged").alias("kind"), F.lit(None).cast("string").alias("rule")),
            ),
        ).cast(f"array<{entry}>")
        own = F.transform(F.col("__v_rules"), lambda r: F.struct(F.lit("rule").alias("kind"), r.alias("rule")))
        parts.append(
            df.select(
                F.lit(name).alias("input"),
                F.explode(F.concat(F.array_compact(fixed), own.cast(f"array<{entry}>"))).alias("e"),
                F.when(F.size("__v_rules") > 0, table.json_row()).alias("example"),
            )
        )
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    rows = (
        union.groupBy("input", F.col("e.kind").alias("kind"), F.col("e.rule").alias("rule"))
        .agg(F.count(F.lit(1)).alias("n"), F.min(F.when(F.col("e.kind") == "rule", F.col("example"))).alias("example"))
        .collect()
    )
    return {(r["input"], r["kind"], r["rule"]): (r["n"], r["example"]) for r in rows}


def _accounting(counts: dict, flagged: dict) -> RowAccounting:
    items = []
    for name in flagged:
        read = counts.get((name, "read", None), (0, None))[0]
        by_rule = sorted(
            ((rule, n) for (inp, kind, rule), (n, _) in counts.items() if inp == name and kind == "quarantined"),
            key=lambda item: _INDEX[item[0]],
        )
        quarantined = sum(n for _, n in by_rule)
        merged = counts.get((name, "merged", None), (0, None))[0]
        items.append(InputAccounting(name, read, read - quarantined, quarantined, merged, tuple(by_rule)))
    return RowAccounting(tuple(items))


def _raise_on_empty(counts: dict, inputs: dict) -> None:
    for name in inputs:
        if counts.get((name, "read", None), (0, None))[0] == 0:
            raise ValidationError(
                f"{name}: the input has no rows (rule input_empty); nothing was written. An empty {name} "
                "table usually means the upstream job that writes it failed.",
                "input_empty",
            )


def _raise_on_errors(counts: dict, spec: ValidationSpec) -> None:
    broken = sorted(
        ((rule, inp, n, example) for (inp, kind, rule), (n, example) in counts.items() if kind == "rule"),
        key=lambda item: (_INDEX[item[0]], INPUTS.index(item[1])),
    )
    errors = [b for b in broken if spec.handling(b[0]) == "error"]
    if not errors:
        return
    lines = [
        f"- {rule}: {n:,} {inp} row{'s' if n != 1 else ''} ({_RULES[rule].description})"
        + (f", e.g. {example}" if example else "")
        for rule, inp, n, example in errors
    ]
    first = errors[0][0]
    totals: dict[str, int] = {}
    for rule, _, n, _ in errors:
        totals[rule] = totals.get(rule, 0) + n
    raise ValidationError(
        "input rows break validation rules handled as 'error'; nothing was written:\n"
        + "\n".join(lines)
        + f"\nFix the input, or declare e.g. validation.rules.{first}: quarantine to set such rows aside "
        "in outputs.quarantine and score the rest.",
        first,
        totals,
    )


def _raise_on_share(accounting: RowAccounting, counts: dict, spec: ValidationSpec) -> None:
    for item in accounting.inputs:
        if item.rows_read and item.rows_quarantined / item.rows_read > spec.max_quarantined_share:
            rules = ", ".join(f"{rule} {n:,}" for rule, n in item.quarantined_by_rule)
            first = item.quarantined_by_rule[0][0]
            example = min(
                (ex for (inp, kind, rule), (_, ex) in counts.items() if inp == item.input and kind == "rule" and ex),
                default=None,
            )
            raise ValidationError(
                f"{item.input}: {item.rows_quarantined:,} of {item.rows_read:,} rows "
                f"({item.rows_quarantined / item.rows_read:.1%}) would be quarantined, above "
                f"validation.max_quarantined_share = {spec.max_quarantined_share:.1%} (by rule: {rules}; "
                f"e.g. {example}); nothing was written. Fix the input, or raise the maximum if this much "
                "bad input is expected.",
                first,
                dict(item.quarantined_by_rule),
            )


def _quarantine_rows(name: str, table: _Table, df: DataFrame, run_id: str, contract: Contract) -> DataFrame:
    is_candidates = name == "candidates"
    return df.filter(F.col("__v_q")).select(
        F.lit(run_id).cast("string").alias("run_id"),
        F.lit(name).alias("input"),
        _rule_name(F.col("__v_reason")).alias("rule"),
        F.array_join(F.col("__v_rules"), ",").alias("row_rules"),
        (F.col("__v_sys") if is_candidates else F.lit(None).cast("string")).alias("system"),
        (F.col("__v_pool") if is_candidates else F.lit(None).cast("string")).alias("pool_version"),
        F.col("__v_rid").alias("request_id"),
        (F.col("__v_did") if "__v_did" in df.columns else F.lit(None).cast("string")).alias("doc_id"),
        table.json_row().alias("row"),
        F.lit(contract.fingerprint).alias("contract_fingerprint"),
    )


def job_validation(config: JobConfig) -> tuple[ValidationSpec, Source | None]:
    """The job's :class:`ValidationSpec` and quarantine target (``outputs.quarantine``), checked.

    A rule handled by quarantine needs ``outputs.quarantine``; this fails before any data is read.
    """
    spec = ValidationSpec.from_dict(config.section("validation"))
    outputs = config.section("outputs") or {}
    base = config.section("base")
    target = Source.parse(outputs.get("quarantine"), "outputs.quarantine", Path(base) if base else None)
    if spec.quarantines and target is None:
        quarantined = [r.name for r in RULES if spec.handling(r.name) == "quarantine"]
        raise ContractError(
            "outputs.quarantine",
            f"is required (a path or a table) when a validation rule is handled by quarantine ({', '.join(quarantined)})",
        )
    return spec, target


def describe_rules() -> str:
    """The rule catalog as text (name, scope, inputs, meaning), e.g. for ``--help`` or a notebook."""
    width = max(len(r.name) for r in RULES)
    return "\n".join(f"{r.name:<{width}}  {r.scope:<8}  {r.description}" for r in RULES)


__all__ = [
    "QUARANTINE_COLUMNS",
    "RULES",
    "InputAccounting",
    "RowAccounting",
    "Rule",
    "ValidatedInputs",
    "ValidationSpec",
    "describe_rules",
    "job_validation",
    "validate_inputs",
]

