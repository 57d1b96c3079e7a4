"""Every output table's columns, declared once: name, Spark SQL type and meaning (pure Python).

A table is a :class:`TableSchema` of :class:`Column`\\ s, in the order it is written. The modules
that compute a table take its column names, its DDL or its ``StructType`` from here
(``AGGREGATE_COLUMNS`` is ``AGGREGATE.names``), and docs/tables.md's column tables are generated
from it (``python tests/test_docs.py`` rewrites them), as docs/validation.md's rule table is from
the rule catalogue. A column several tables share is declared once and reused (:data:`RUN_ID`), or
reused with another meaning (:meth:`Column.as_on`).

The per-request table and the pool summary depend on the contract's metrics: each metric's columns
come from its definition (:mod:`ndcg_spark.measures`: the components it reads, its value, its
what-ifs), so :func:`per_request_schema` and :func:`pool_summary_schema` take the metrics.

A new column is one :class:`Column` in its table's tuple below (and the code that computes it); a
new table is one :class:`TableSchema`, in :data:`TABLES` to be documented.

>>> AGGREGATE.names[:8]
('run_id', 'system', 'pool_version', 'k', 'metric', 'slice_dimension', 'slice_value', 'macro')
>>> RUN_STATUS.ddl[:50]
'run_id string, status string, updated_at timestamp'
>>> table = per_request_schema(["ndcg", "recall"])
>>> table.names[5:11]
('dcg', 'idcg', 'relevant_in_top_k', 'n_relevant', 'ndcg', 'recall')
>>> table["n_relevant"].type, table["n_relevant"].meaning.split(":")[0]
('bigint', 'with `recall`')
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from ndcg_spark.config.trend_spec import SHIFTS, TREND_FLAGS
from ndcg_spark.measures import COMPONENTS, LEGACY_METRIC, METRICS, what_if_names

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "AGGREGATE", "AGGREGATE_LEGACY", "AGREEMENT", "AGREEMENT_HISTORY", "AUDIT", "AUDIT_LEGACY", "COMPARISON", "COMPARISON_LEGACY", "COMPARISON_RENAMED",
    "Column", "GUARDRAILS", "GUARDRAIL_ARM", "INPUT_READ", "JUDGING_PLAN", "QUARANTINE", "REQUEST_FLAGS",
    "REQUEST_KEYS", "RUN_ATTEMPTS", "RUN_METADATA", "RUN_STATUS", "TABLES", "TREND", "TREND_LEGACY", "TableSchema",
    "component_names", "known", "names", "per_request_schema", "pool_summary_schema", "struct_of",
]


# ----------------------------------------------------------------------------------- the pieces


@dataclass(frozen=True)
class Column:
    """One column of a table: its name, its Spark SQL type as ``DataType.simpleString()`` prints it
    (``bigint``, ``array<string>``, ``map<string,bigint>``) and what it means, in the docs' words
    (markdown).

    ``nullable``, ``contains_null`` (an array's elements, a map's values) and ``fields`` (a struct's,
    or an array of structs' elements': declared like columns, their types making ``type``'s struct,
    :func:`struct_of`) matter where a table is built as a ``StructType`` (:meth:`TableSchema.struct_type`).
    """

    name: str
    type: str
    meaning: str
    nullable: bool = True
    contains_null: bool = True
    fields: tuple[Column, ...] = ()

    def as_on(self, where: str) -> Column:
        """This column on another table that carries it as it is: its meaning "as on ``where``".

        >>> RUN_ID.as_on("the aggregate rows").meaning
        'as on the aggregate rows'
        """
        return replace(self, meaning=f"as on {where}")

    def spark_type(self) -> DataType:
        """Its pyspark type (pyspark imported when called), with its nullability inside: ``contains_null``
        for the outer array or map, each declared field's ``nullable`` for a struct's fields.

        >>> inputs = RUN_METADATA["inputs"]
        >>> inputs.spark_type().simpleString() == inputs.type, inputs.spark_type().elementType["role"].nullable
        (True, False)
        >>> Column("row_counts", "map<string,bigint>", "", contains_null=False).spark_type()
        MapType(StringType(), LongType(), False)
        """
        return _parse_type(self.type, self.contains_null, {f.name: f for f in self.fields})

    @property
    def described(self) -> str:
        """Its meaning as the docs show it: a struct's with each of its fields'."""
        if not self.fields:
            return self.meaning
        return f"{self.meaning}. Its fields: " + "; ".join(f"`{f.name}`: {f.meaning}" for f in self.fields)


def struct_of(fields: Iterable[Column]) -> str:
    """The ``struct<…>`` type of these fields, as ``simpleString()`` prints it.

    >>> struct_of([Column("system", "string", ""), Column("rank", "int", "")])
    'struct<system:string,rank:int>'
    """
    return "struct<" + ",".join(f"{f.name}:{f.type}" for f in fields) + ">"


def names(columns: Iterable[Column]) -> tuple[str, ...]:
    """The names of ``columns``, in order."""
    return tuple(c.name for c in columns)


#: the docs' row for the slice columns of a table that has them (:attr:`TableSchema.slices_at`)
SLICES_ROW = "| *slice columns* | as input | the `attributes.slices` columns (the request's slice attributes) |"


@dataclass(frozen=True)
class TableSchema:
    """A table's columns in the order it is written; ``slices_at``: where the slice columns go, an
    index into ``columns`` (the per-request table's, named by the job's ``attributes.slices``), or
    None when it has none.

    >>> table = TableSchema("example", (Column("run_id", "string", "the run"), Column("k", "int", "the cutoff"),
    ...                                 Column("n", "bigint", "requests")))
    >>> table.names, table.ddl
    (('run_id', 'k', 'n'), 'run_id string, k int, n bigint')
    >>> print(table.markdown())
    | column | type | meaning |
    |---|---|---|
    | `run_id` | string | the run |
    | `k` | int | the cutoff |
    | `n` | bigint | requests |
    <BLANKLINE>
    """

    name: str
    columns: tuple[Column, ...]
    slices_at: int | None = None

    def __post_init__(self) -> None:
        seen = [c.name for c in self.columns]
        twice = sorted({n for n in seen if seen.count(n) > 1})
        if twice:
            raise ValueError(f"table {self.name}: columns declared twice: {twice}")
        for c in (*self.columns, *[f for c in self.columns for f in c.fields]):
            if "|" in c.meaning or "\n" in c.meaning:
                raise ValueError(f"table {self.name}: the meaning of {c.name} must be one line without '|'")

    @property
    def names(self) -> tuple[str, ...]:
        """Its column names, in order (without the slice columns, which the job names)."""
        return names(self.columns)

    @property
    def around_slices(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Its column names before and after the slice columns (all before, without them)."""
        at = len(self.columns) if self.slices_at is None else self.slices_at
        return self.names[:at], self.names[at:]

    @property
    def ddl(self) -> str:
        """Its schema as Spark DDL: ``run_id string, k int, …``."""
        return ", ".join(f"{c.name} {c.type}" for c in self.columns)

    def __getitem__(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"table {self.name} has no column {name!r}")

    def struct_type(self) -> StructType:
        """Its pyspark ``StructType``, with each column's nullability (pyspark imported when called)."""
        from pyspark.sql import types as T

        return T.StructType([T.StructField(c.name, c.spark_type(), c.nullable) for c in self.columns])

    def markdown(self) -> str:
        """Its columns as docs/tables.md shows them: a row per column, or per run of neighbours with
        the same type and meaning (``macro_ci_low``, ``macro_ci_high``), the slice columns in place."""
        rows = ["| column | type | meaning |", "|---|---|---|"]
        parts = [self.columns] if self.slices_at is None else [self.columns[: self.slices_at], None,
                                                               self.columns[self.slices_at:]]
        for part in parts:
            if part is None:
                rows.append(SLICES_ROW)
                continue
            for (kind, meaning), run in itertools.groupby(part, key=lambda c: (c.type, c.described)):
                rows.append(f"| {', '.join(f'`{c.name}`' for c in run)} | {kind} | {meaning} |")
        return "\n".join(rows) + "\n"


_ATOMIC = {"string": "StringType", "boolean": "BooleanType", "int": "IntegerType", "bigint": "LongType",
           "smallint": "ShortType", "tinyint": "ByteType", "double": "DoubleType", "float": "FloatType",
           "timestamp": "TimestampType", "date": "DateType", "binary": "BinaryType"}


def _parse_type(text: str, contains_null: bool = True, fields: Mapping[str, Column] | None = None) -> DataType:
    """The pyspark type a ``simpleString()`` names; ``contains_null`` for an outer array or map, the
    ``fields`` declared of a struct (its own, or its array's elements') for their nullability."""
    from pyspark.sql import types as T

    fields = fields or {}
    text = text.strip()
    head, _, rest = text.partition("<")
    if not rest:
        if text not in _ATOMIC:
            raise ValueError(f"not a Spark SQL type declared here: {text!r} (one of {', '.join(_ATOMIC)}, or "
                             "array<…>, map<…,…>, struct<…>)")
        return getattr(T, _ATOMIC[text])()
    if not rest.endswith(">"):
        raise ValueError(f"unbalanced type: {text!r}")
    inner = _split_top_level(rest[:-1])
    if head == "array" and len(inner) == 1:
        return T.ArrayType(_parse_type(inner[0], fields=fields), contains_null)
    if head == "map" and len(inner) == 2:
        return T.MapType(_parse_type(inner[0]), _parse_type(inner[1]), contains_null)
    if head == "struct":
        out = []
        for part in inner:
            name, _, kind = part.partition(":")
            name = name.strip()
            declared = fields.get(name)
            out.append(T.StructField(name, declared.spark_type() if declared else _parse_type(kind),
                                     declared.nullable if declared else True))
        return T.StructType(out)
    raise ValueError(f"not a Spark SQL type declared here: {text!r}")


def _split_top_level(text: str) -> list[str]:
    """``text`` split at its commas outside ``<…>``."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


# ------------------------------------------------------------------------------ shared columns

RUN_ID = Column("run_id", "string", "the run (partition column)")
SYSTEM = Column("system", "string", "the ranker (`system` column, or the `system` literal, else `default`)")
POOL_VERSION = Column("pool_version", "string", "the candidate pool the ranker ranked")
REQUEST_ID = Column("request_id", "string", "the request (query group)")
K = Column("k", "int", "the cutoff")
CONTRACT_FINGERPRINT = Column("contract_fingerprint", "string", "the resolved contract's fingerprint")
CODE_VERSION = Column("code_version", "string", "`ndcg_spark.__version__` that wrote the row")
CREATED_AT = Column("created_at", "timestamp", "when the rows were computed (UTC; one value for the whole run)")
SLICE_DIMENSION = Column("slice_dimension", "string", "`overall`, or a slice column's name")
SLICE_VALUE = Column("slice_value", "string", "`all`, or the slice column's value (as a string)")
METRIC = Column(
    "metric", "string",
    "the metric: one the contract declares (`contract.metrics`: `ndcg`, `recall`), or one of its what-ifs "
    "(`ndcg_unjudged_low`, `ndcg_unjudged_high` …: rows only when the contract declares a scale, "
    "[the rules](statistics.md#the-unjudged-bounds))")

#: What makes a request (per system and pool): nothing is ever ranked across two of them.
REQUEST_KEYS = (SYSTEM, POOL_VERSION, REQUEST_ID)


def _legacy(columns: Sequence[Column], legacy: Mapping[str, tuple[str, str]]) -> tuple[Column, ...]:
    """The columns a table had before its ``metric`` column, each a copy of a current one (its type)
    on the :data:`~ndcg_spark.measures.LEGACY_METRIC` rows (:mod:`ndcg_spark.legacy`)."""
    current = {c.name: c for c in columns}
    out = []
    for name, (source, metric) in legacy.items():
        if metric == LEGACY_METRIC:
            meaning = (f"legacy: `{source}` of the `{metric}` rows, under its name from before the `metric` "
                       "column; null on other metrics' rows")
        else:
            meaning = (f"legacy: `{source}` of the group's `{metric}` row, on its `{LEGACY_METRIC}` row (the name "
                       "from before the `metric` column); null on the other rows")
        out.append(Column(name, current[source].type, meaning))
    return tuple(out)


# ------------------------------------------------------------------------- the per-request table


def component_names(metrics: Iterable[str]) -> tuple[str, ...]:
    """The components the metrics read, each once, in :data:`~ndcg_spark.measures.COMPONENTS`' order.

    >>> component_names(["recall", "ndcg"])
    ('dcg', 'idcg', 'relevant_in_top_k', 'n_relevant')
    """
    wanted = {c for m in metrics for c in METRICS[m].components}
    return tuple(c for c in COMPONENTS if c in wanted)


def _with(metrics: Iterable[str]) -> str:
    """How a per-request column says which declared metrics write it: ``with `ndcg`:``."""
    return "with " + " or ".join(f"`{m}`" for m in metrics) + ":"


def _readers(component: str, metrics: Sequence[str]) -> list[str]:
    return [m for m in metrics if component in METRICS[m].components]


#: A request's flags and counts, after the metrics' values (the same whatever the metrics).
REQUEST_FLAGS = (
    Column("empty_ideal", "boolean",
           "the request has no ideal for some declared metric (`ndcg`: IDCG = 0, no positive gain to rank; "
           "`recall`: no relevant document)"),
    Column("no_results", "boolean",
           "the system returned no candidate for this request of the night's population "
           "([the rows](statistics.md#requests-a-ranker-returned-nothing-for)): `n_candidates` 0, nothing in the top K "
           "(DCG 0), the ideal of the request's judged documents"),
    Column("n_candidates", "bigint", "candidates of the request (judged or not)"),
    Column("n_judged", "bigint", "candidates with a grade"),
    Column("n_positive", "bigint", "candidates with grade > 0"),
    Column("n_unjudged_in_top_k", "int", "unjudged candidates among the displayed top K (null under `unjudged: zero`)"),
)
WEIGHT = Column("weight", "double", "the request's traffic weight (1.0 without a weight column)")


def _value(metric: str) -> Column:
    return Column(
        metric, "double",
        f"{_with([metric])} {METRICS[metric].meaning}. A request with no ideal for some declared metric: null "
        "under `empty_ideal: exclude`, and under `zero` 0 where its own ideal is missing; a request the system "
        "returned nothing for (and whose ideal is not empty): null under `no_results: exclude`, 0 under `zero`")


def _what_ifs(metric: str) -> tuple[Column, Column]:
    low, high = what_if_names(metric)
    title = METRICS[metric].title
    return (
        Column(low, "double",
               f"{_with([metric])} the {title} if every unjudged candidate were judged at the lowest grade of the "
               "scale (null without `contract.max_grade` or a gain table; its own empty ideal as `empty_ideal` says; "
               "[the rules](statistics.md#the-unjudged-bounds))"),
        Column(high, "double",
               f"{_with([metric])} the same at the highest grade (`max_grade`, or the gain table's highest grade)"),
    )


def per_request_schema(metrics: Sequence[str]) -> TableSchema:
    """The per-request table (stage 1) of a contract declaring ``metrics``: the request and K, the
    components the metrics read, their values, the request's flags and counts, each metric's two
    what-ifs and the weight; then the slice columns and the contract's fingerprint.

    >>> per_request_schema(["ndcg"]).names[4:10]
    ('k', 'dcg', 'idcg', 'ndcg', 'empty_ideal', 'no_results')
    """
    columns = (
        RUN_ID, *REQUEST_KEYS, K,
        *[Column(c, COMPONENTS[c].type, f"{_with(_readers(c, metrics))} {COMPONENTS[c].meaning}")
          for c in component_names(metrics)],
        *[_value(m) for m in metrics],
        *REQUEST_FLAGS,
        *[w for m in metrics for w in _what_ifs(m)],
        WEIGHT,
    )
    return TableSchema("per_request", (*columns, CONTRACT_FINGERPRINT), slices_at=len(columns))


# ------------------------------------------------------------------------------ the aggregate

#: The aggregate's columns from before the ``metric`` column, on the rows of the metric it held (null on
#: the others): legacy column -> (the column it copies, the ``metric`` of the row it copies it from)
#: (:mod:`ndcg_spark.legacy`).
AGGREGATE_LEGACY: Mapping[str, tuple[str, str]] = MappingProxyType({
    "macro_ndcg": ("macro", "ndcg"),
    "weighted_ndcg": ("weighted", "ndcg"),
    "macro_ndcg_unjudged_low": ("macro", "ndcg_unjudged_low"),
    "macro_ndcg_unjudged_high": ("macro", "ndcg_unjudged_high"),
    "weighted_ndcg_unjudged_low": ("weighted", "ndcg_unjudged_low"),
    "weighted_ndcg_unjudged_high": ("weighted", "ndcg_unjudged_high"),
})

_GROUP = "the group (as on the per-request table)"
_AGGREGATE_COLUMNS = (
    RUN_ID,
    replace(SYSTEM, meaning=_GROUP),
    replace(POOL_VERSION, meaning=_GROUP),
    replace(K, meaning=_GROUP),
    METRIC,
    SLICE_DIMENSION,
    SLICE_VALUE,
    Column("macro", "double",
           "mean of the row's metric over the *eligible* requests (its value not null): every request counts once"),
    Column("macro_ci_low", "double",
           "percentile bootstrap interval of `macro` ([statistics.md](statistics.md#the-interval-poisson-bootstrap)); "
           "null without replicates"),
    Column("macro_ci_high", "double",
           "percentile bootstrap interval of `macro` ([statistics.md](statistics.md#the-interval-poisson-bootstrap)); "
           "null without replicates"),
    Column("weighted", "double", "`sum(weight × value) / sum(weight)` over the same eligible requests"),
    Column("weighted_ci_low", "double", "percentile bootstrap interval of `weighted`"),
    Column("weighted_ci_high", "double", "percentile bootstrap interval of `weighted`"),
    Column("n_eligible", "bigint",
           "requests with a value of the row's metric: the denominator of `macro` (a what-if has its own ideal: its "
           "`n_eligible` may be larger)"),
    Column("n_empty_ideal", "bigint",
           "requests with no ideal for some declared metric, under every `empty_ideal` policy (the same number on "
           "every metric's rows)"),
    Column("n_no_results", "bigint",
           "requests of the night's population the system returned nothing for, under every `no_results` policy "
           "(one whose ideal is empty is counted in `n_empty_ideal` too)"),
    Column("n_requests", "bigint", "every request of the group"),
    Column("weight_eligible", "double", "summed `weight` of the eligible requests: the weighted mean's denominator"),
    Column("weight_all", "double", "summed `weight` of all the requests of the group"),
    Column("unjudged_share", "double",
           "mean over all requests of `n_unjudged_in_top_k / min(k, n_candidates)`: the share of the displayed top K "
           "nobody judged (null under `unjudged: zero`, which does not count them)"),
    Column("below_min_eligible", "boolean",
           "`n_eligible < min_eligible`: the row is reported, but too small to trust or to rank"),
    Column("min_eligible", "int", "the threshold the row was computed under (`aggregate.min_eligible`)"),
    Column("ci_level", "double", "the intervals' level (null without an interval)"),
    replace(CONTRACT_FINGERPRINT, meaning="the contract the per-request rows were scored under"),
    replace(CODE_VERSION, meaning="`ndcg_spark.__version__` that aggregated"),
    replace(CREATED_AT, meaning="when stage 2 ran (UTC; one value for the whole run)"),
)
#: Stage 2's aggregate table: one row per run × contract × pool version × system × K × metric × slice.
AGGREGATE = TableSchema("aggregate", (*_AGGREGATE_COLUMNS, *_legacy(_AGGREGATE_COLUMNS, AGGREGATE_LEGACY)))

# ---------------------------------------------------------------------------------- the audit

#: The audit's columns from before the ``metric`` column (as :data:`AGGREGATE_LEGACY`, same row).
AUDIT_LEGACY: Mapping[str, tuple[str, str]] = MappingProxyType({
    "worst_macro_ndcg": ("worst_macro", "ndcg"),
    "overall_macro_ndcg": ("overall_macro", "ndcg"),
})

_ON_AGGREGATE = "the aggregate rows"
_AUDIT_COLUMNS = (
    RUN_ID,
    *[AGGREGATE[name] for name in ("system", "pool_version", "k", "metric")],
    Column("slice_dimension", "string", "the slice dimension"),
    Column("n_slices", "bigint", "slices of the dimension"),
    Column("n_slices_ranked", "bigint", "of them, those with at least `min_eligible` eligible requests: ranked"),
    Column("worst_slice_value", "string",
           "the ranked slice with the lowest `macro` (ties: the smaller value); null when none is large enough"),
    Column("worst_macro", "double", "its `macro`"),
    Column("worst_ci_low", "double", "its interval (`macro_ci_low`, `macro_ci_high`)"),
    Column("worst_ci_high", "double", "its interval (`macro_ci_low`, `macro_ci_high`)"),
    Column("worst_n_eligible", "bigint", "its denominator (`n_eligible`)"),
    Column("overall_macro", "double", "the group's overall `macro`"),
    Column("gap_to_overall", "double", "`worst_macro − overall_macro` (negative: below)"),
    Column("ci_below_overall", "boolean", "the worst slice's whole interval lies below the overall mean"),
    *[AGGREGATE[name].as_on(_ON_AGGREGATE)
      for name in ("min_eligible", "ci_level", "contract_fingerprint", "code_version", "created_at")],
)
#: The audit: per run × contract × pool version × system × K × metric × slice dimension, the worst slice.
AUDIT = TableSchema("audit", (*_AUDIT_COLUMNS, *_legacy(_AUDIT_COLUMNS, AUDIT_LEGACY)))

# --------------------------------------------------------------------------- the run metadata

#: One input as a run read it: an element of the run-metadata table's ``inputs`` (:mod:`ndcg_spark.storage.lineage`).
INPUT_READ = TableSchema("input_read", (
    Column("role", "string", "`inputs.candidates`, `inputs.judgments` or `attributes`", nullable=False),
    Column("source", "string", "where from, as the CLI prints it", nullable=False),
    Column("table", "string", "the catalog table read (null: a path)"),
    Column("path", "string", "the path read (null: a catalog table)"),
    Column("format", "string",
           "`delta` or `iceberg` when the table is one, by its declared format or its catalog's provider; else how "
           "the files were read", nullable=False),
    Column("version", "bigint", "the Delta table version or Iceberg snapshot id read; null for files"),
    Column("fingerprint", "string",
           "files only: the listing's fingerprint (16 hex digits of SHA-256 over every data file's path, size and "
           "modification time)"),
    Column("files", "bigint", "files only: the number of data files"),
    Column("bytes", "bigint", "files only: their bytes"),
))

#: Stage 2's run-metadata table: one row per run.
RUN_METADATA = TableSchema("run_metadata", (
    replace(RUN_ID, nullable=False),
    Column("contract_fingerprint", "string", "as stamped on every row of the run", nullable=False),
    Column("contract", "string",
           "the resolved contract as JSON (`Contract.to_json()`: `order` is `position` or `score`, never `auto`)",
           nullable=False),
    Column("aggregate_spec", "string", "the resolved `aggregate:` section as JSON", nullable=False),
    Column("row_counts", "map<string,bigint>",
           "rows written per table (`per_request`, `aggregate`, `audit`), `population` (the night's requests: "
           "[the population](statistics.md#requests-a-ranker-returned-nothing-for)) and, under `run`, stage 1's "
           "accounting (`candidates.rows_read`, `candidates.rows_quarantined`, …)", nullable=False,
           contains_null=False),
    Column("code_version", "string", "`ndcg_spark.__version__`", nullable=False),
    Column("created_at", "timestamp", "as on the aggregate rows", nullable=False),
    Column("inputs", f"array<{struct_of(INPUT_READ.columns)}>",
           "what stage 1 read, one element per input ([operations.md](operations.md#what-a-night-read)); null when "
           "stage 2 ran alone (`ndcg-spark aggregate`) or an older ndcg-spark wrote the row",
           contains_null=False, fields=INPUT_READ.columns),
))

# ----------------------------------------------------------------------------- the comparison

#: The comparison's columns from before the ``metric`` column, on the NDCG rows (:mod:`ndcg_spark.legacy`).
COMPARISON_LEGACY: Mapping[str, tuple[str, str]] = MappingProxyType({
    "ndcg_ideal": ("ideal", "ndcg"),
    "baseline_ndcg_macro": ("baseline_macro", "ndcg"),
    "candidate_ndcg_macro": ("candidate_macro", "ndcg"),
    "baseline_ndcg_weighted": ("baseline_weighted", "ndcg"),
    "candidate_ndcg_weighted": ("candidate_weighted", "ndcg"),
})

#: Columns renamed when ``recall`` became a metric (current -> old name): the candidate *pool's*
#: recall. A table written before keeps the old columns, null from then on (``RETIRED_COLUMNS``).
COMPARISON_RENAMED: Mapping[str, str] = MappingProxyType({
    "n_pool_recall_requests": "n_recall_requests",
    "baseline_pool_recall_macro": "baseline_recall_macro",
    "candidate_pool_recall_macro": "candidate_recall_macro",
    "baseline_pool_recall_weighted": "baseline_recall_weighted",
    "candidate_pool_recall_weighted": "candidate_recall_weighted",
})


def _renamed(column: Column) -> Column:
    old = COMPARISON_RENAMED[column.name]
    return replace(column, meaning=f"{column.meaning}; `{old}` until `recall` became a metric (a table written "
                                   f"before keeps `{old}`, null from then on)")


_POOL_RECALL = "candidate recall of {side}'s pool (its positives ÷ the known positives), {mean} over those requests"
_SIDES = "the two systems (partition columns); deltas are candidate − baseline"
_COMPARISON_COLUMNS = (
    RUN_ID,
    Column("baseline", "string", _SIDES),
    Column("candidate", "string", _SIDES),
    Column("comparison_kind", "string", "`reranker` or `end_to_end`"),
    Column("baseline_pool_version", "string", "each side's pool"),
    Column("candidate_pool_version", "string", "each side's pool"),
    Column("pools_differ", "boolean", "pool versions differ, or a shared request has a different candidate set"),
    Column("ideal", "string",
           "`contract`: each side's metric as scored in stage 1; `judgments`: recomputed against the shared ideal of "
           "every judged document of the request (end to end)"),
    Column("metric", "string",
           "the metric compared: each one the contract declares (`ndcg`, `recall`) and, in a reranker comparison, "
           "each what-if with a value (`ndcg_unjudged_low`, `ndcg_unjudged_high` …)"),
    SLICE_DIMENSION,
    SLICE_VALUE,
    K,
    Column("n_requests", "bigint", "requests with a row on either side"),
    Column("n_paired", "bigint",
           "requests both sides can score (a what-if: both have a value): the deltas' denominator"),
    Column("n_only_baseline_missing", "bigint",
           "the baseline can score it; the candidate returned nothing for it (set aside under `no_results: exclude`) "
           "or has no row"),
    Column("n_only_baseline_empty", "bigint", "the baseline can score it; the candidate's ideal is empty"),
    Column("n_only_candidate_missing", "bigint", "the same, the other way round"),
    Column("n_only_candidate_empty", "bigint", "the same, the other way round"),
    Column("n_neither", "bigint", "neither side can score it (empty ideal, or neither answered)"),
    Column("n_baseline_no_results", "bigint",
           "requests each side returned nothing for (paired, as 0, under `no_results: zero`)"),
    Column("n_candidate_no_results", "bigint",
           "requests each side returned nothing for (paired, as 0, under `no_results: zero`)"),
    Column("n_pool_differs", "bigint", "shared requests whose candidate sets differ"),
    Column("paired_weight", "double", "summed traffic weight of the paired requests"),
    Column("baseline_macro", "double", "each side's mean of the metric over the paired requests"),
    Column("candidate_macro", "double", "each side's mean of the metric over the paired requests"),
    Column("delta_macro", "double", "the mean delta over the paired requests"),
    Column("delta_macro_ci_low", "double", "its paired bootstrap interval (null without replicates)"),
    Column("delta_macro_ci_high", "double", "its paired bootstrap interval (null without replicates)"),
    Column("p_value_macro", "double", "sign-flip test p-value of the macro delta (null without permutations)"),
    Column("baseline_weighted", "double", "the same, traffic-weighted"),
    Column("candidate_weighted", "double", "the same, traffic-weighted"),
    Column("delta_weighted", "double", "the same, traffic-weighted"),
    Column("delta_weighted_ci_low", "double", "the same, traffic-weighted"),
    Column("delta_weighted_ci_high", "double", "the same, traffic-weighted"),
    Column("p_value_weighted", "double", "the same, traffic-weighted"),
    Column("wins", "bigint", "paired requests where the candidate is better by more than `tie_tolerance`"),
    Column("ties", "bigint", "paired requests within `tie_tolerance`"),
    Column("losses", "bigint", "paired requests where the candidate is worse by more than `tie_tolerance`"),
    _renamed(Column("n_pool_recall_requests", "bigint",
                    "requests both sides returned something for that have a known positive: the pool recalls' "
                    "denominator, the same on every metric's rows")),
    _renamed(Column("baseline_pool_recall_macro", "double",
                    _POOL_RECALL.format(side="the baseline", mean="the mean"))),
    _renamed(Column("candidate_pool_recall_macro", "double",
                    _POOL_RECALL.format(side="the candidate", mean="the mean"))),
    _renamed(Column("baseline_pool_recall_weighted", "double",
                    _POOL_RECALL.format(side="the baseline", mean="the traffic-weighted mean"))),
    _renamed(Column("candidate_pool_recall_weighted", "double",
                    _POOL_RECALL.format(side="the candidate", mean="the traffic-weighted mean"))),
    Column("below_min_paired", "boolean", "fewer paired requests than `min_paired`"),
    Column("min_paired", "int", "the declared minimum (`compare.min_paired`)"),
    Column("tie_tolerance", "double", "the declared choices"),
    Column("ci_level", "double", "the declared choices (null without replicates)"),
    Column("bootstrap_replicates", "int", "the declared choices"),
    Column("permutations", "int", "the declared choices"),
    Column("seed", "bigint", "the declared choices"),
    Column("bootstrap_buckets", "int",
           "the resampling unit of the interval and the test: random groups per slice cell (0: single requests)"),
    replace(CONTRACT_FINGERPRINT, meaning="the contract of the per-request rows compared"),
    CODE_VERSION,
    CREATED_AT,
)
#: ``ndcg-spark compare``'s table: one row per slice × K × metric, partitioned by run, baseline and candidate.
COMPARISON = TableSchema("comparison", (*_COMPARISON_COLUMNS, *_legacy(_COMPARISON_COLUMNS, COMPARISON_LEGACY)))


def known(component: str) -> str:
    """The pool summary's column of an ideal component computed over every judged document of the
    request (the shared ideal of an end-to-end comparison).

    >>> known("idcg")
    'idcg_known'
    """
    return f"{component}_known"


def pool_summary_schema(metrics: Sequence[str]) -> TableSchema:
    """What :func:`~ndcg_spark.comparison.pools.pool_summary` returns for these metrics (not a
    written table): the pool of each request and K, and the shared ideal's component of each metric
    (``idcg_known`` for NDCG, ``n_relevant_known`` for recall).

    >>> pool_summary_schema(["ndcg", "recall"]).names[6:9]
    ('n_known_positive', 'idcg_known', 'n_relevant_known')
    """
    shared = [Column(known(c), COMPONENTS[c].type,
                     f"{_with(_readers(c, metrics))} `{c}` over every judged document of the request, retrieved or "
                     "not: the shared ideal of an end-to-end comparison")
              for c in component_names(metrics) if COMPONENTS[c].ideal]
    return TableSchema("pool_summary", (
        SYSTEM, POOL_VERSION, REQUEST_ID, K,
        Column("pool_hash", "bigint",
               "a hash of the request's sorted candidate doc ids: equal hashes, same candidate set"),
        Column("n_pool", "bigint", "candidates in the pool"),
        Column("n_known_positive", "bigint",
               "judged documents with grade > 0 of the request, retrieved by any side or not"),
        *shared,
        replace(CONTRACT_FINGERPRINT, meaning="the contract"),
    ))


# ---------------------------------------------------------------------------------- the trend

#: The trend's columns from before the ``metric`` column, on the NDCG rows (:mod:`ndcg_spark.legacy`).
TREND_LEGACY: Mapping[str, tuple[str, str]] = MappingProxyType({
    "macro_ndcg": ("macro", "ndcg"),
    "weighted_ndcg": ("weighted", "ndcg"),
})

_UNLESS_COMPARABLE = "(null unless comparable)"
_TREND_COLUMNS = (
    RUN_ID,
    *[AGGREGATE[name].as_on(_ON_AGGREGATE) for name in ("system", "pool_version", "k", "metric", "slice_dimension",
                                                        "slice_value", "contract_fingerprint", "macro",
                                                        "macro_ci_low", "macro_ci_high", "weighted", "weighted_ci_low",
                                                        "weighted_ci_high", "n_eligible", "n_empty_ideal",
                                                        "n_no_results", "n_requests")],
    *[Column(f.share, "double", f"`{f.count} / n_requests`: the {f.words}") for f in SHIFTS],
    *[AGGREGATE[name].as_on(_ON_AGGREGATE) for name in ("unjudged_share", "below_min_eligible")],
    Column("previous_run_id", "string",
           "the run before this one in the series (system × K × metric × slice), comparable or not; null for the "
           "first"),
    Column("comparable", "boolean",
           "the previous run has this pool version under this contract; null without a previous run"),
    Column("break_reason", "string",
           "when not comparable: `pool version changed: p1 → p2` and/or `contract changed (gain, k): <fingerprint> → "
           "<fingerprint>`"),
    Column("delta_macro", "double", f"this run's mean minus the previous comparable run's {_UNLESS_COMPARABLE}"),
    Column("delta_weighted", "double", f"this run's mean minus the previous comparable run's {_UNLESS_COMPARABLE}"),
    *[Column(f.change, "double", f"the change of `{f.share}` from the previous comparable run {_UNLESS_COMPARABLE}")
      for f in SHIFTS],
    Column("moved_macro", "boolean",
           "the interval does not overlap the previous run's (null without intervals or unless comparable)"),
    Column("moved_weighted", "boolean",
           "the interval does not overlap the previous run's (null without intervals or unless comparable)"),
    # the flags (config.trend_spec.TREND_FLAGS): a boolean each, the label derived from them, the thresholds
    *[Column(f.column, "boolean", f"the flag `{f.name}`: `abs({f.change}) > {f.threshold}` {_UNLESS_COMPARABLE}")
      for f in TREND_FLAGS if f.kind == "shift"],
    Column("flag", "string",
           "the raised flags' label, derived from their boolean columns: `moved`, `empty_ideal_shift`, "
           "`moved_with_empty_ideal_shift`, `moved_with_empty_ideal_shift_and_no_results_shift` …, or null (a move, "
           "then `_with_` and the shifts joined by `_and_`)"),
    *[Column(f.threshold, "double", f"the declared threshold (`trend.{f.threshold}`)") for f in SHIFTS],
    *[Column(f.column, "boolean",
             f"the flag `{f.name}` ({f.advice}): `moved_macro` or `moved_weighted` {_UNLESS_COMPARABLE}")
      for f in TREND_FLAGS if f.kind == "move"],
)
#: The trend table: each aggregate row beside the previous comparable run's.
TREND = TableSchema("trend", (*_TREND_COLUMNS, *_legacy(_TREND_COLUMNS, TREND_LEGACY)))

# ------------------------------------------------------------------------------- the guardrails

#: One arm's columns on a guardrail row (prefixed ``baseline_`` / ``candidate_``).
GUARDRAIL_ARM = (
    Column("n", "bigint", "rows (sessions or requests) of the arm"),
    Column("n_observed", "bigint", "rows with a value (the denominator of a mean or percentile)"),
    Column("observed_share", "double",
           "`n_observed / n`: for a mean or percentile, the rate of reaching the event -- always shown beside it"),
    Column("value", "double", "the statistic"),
    Column("ci_low", "double", "its bootstrap interval"),
    Column("ci_high", "double", "its bootstrap interval"),
)


def _arm(side: str) -> tuple[Column, ...]:
    return tuple(Column(f"{side}_{c.name}", c.type, c.meaning if side == "baseline" else "as for the baseline")
                 for c in GUARDRAIL_ARM)


_DIFFERENCE = "candidate − baseline and its interval"
_RELATIVE = "candidate / baseline − 1 and its interval"
#: ``ndcg-spark compare``'s guardrail table: one row per run × comparison × guardrail × K × slice.
GUARDRAILS = TableSchema("guardrails", (
    RUN_ID,
    Column("baseline", "string", "the two systems (arms); partition columns"),
    Column("candidate", "string", "the two systems (arms); partition columns"),
    Column("guardrail", "string", "the declared name"),
    Column("source", "string", "`release` (outcomes table) or `offline` (from the candidates)"),
    Column("statistic", "string", "`rate`, `mean` or `pNN`"),
    Column("better", "string", "`higher` or `lower`"),
    Column("margin_kind", "string",
           "`absolute` (the statistic's units) or `relative` (share of the baseline's value)"),
    Column("margin", "double", "how much worse is allowed"),
    Column("design", "string", "`two_sample` or `paired` (offline guardrails: `paired`, by request)"),
    Column("k", "int", "the K of an offline `top_k_lacks` flag; null for release guardrails and first-result flags"),
    Column("slice_dimension", "string",
           "`overall`/`all`, or a slice of `release.slices` (release) or of the comparison's slices (offline)"),
    Column("slice_value", "string",
           "`overall`/`all`, or a slice of `release.slices` (release) or of the comparison's slices (offline)"),
    *_arm("baseline"),
    *_arm("candidate"),
    Column("difference", "double", _DIFFERENCE),
    Column("difference_ci_low", "double", _DIFFERENCE),
    Column("difference_ci_high", "double", _DIFFERENCE),
    Column("relative_difference", "double", _RELATIVE),
    Column("relative_ci_low", "double", _RELATIVE),
    Column("relative_ci_high", "double", _RELATIVE),
    Column("observed_share_difference", "double", "candidate − baseline reach rate"),
    Column("below_min_observed", "boolean",
           "an arm has fewer observed rows than `min_observed`: the verdict is `inconclusive`"),
    Column("verdict", "string", "`pass`, `fail` or `inconclusive` for this row"),
    Column("overall_verdict", "string",
           "over every guardrail's overall rows: `fail` if any fails, else `inconclusive` if any is, else `pass`"),
    Column("rows_read", "bigint",
           "release outcome rows of the two arms read (null for offline)"),
    Column("rows_set_aside", "bigint",
           "of them, those set aside by `on_bad_rows: quarantine` (null for offline)"),
    Column("min_observed", "int", "the declared `guardrails.min_observed`"),
    Column("ci_level", "double", "the bootstrap"),
    Column("bootstrap_replicates", "int", "the bootstrap"),
    Column("seed", "bigint", "the bootstrap"),
    Column("declaration", "string", "this guardrail's resolved declaration (JSON)"),
    Column("guardrail_fingerprint", "string", "of every declaration of the section, as the contract's"),
    Column("headline_metric", "string",
           "the offline metric shown beside the verdict (`guardrails.headline`; default `ndcg`)"),
    Column("headline_k", "int", "its K (default the contract's largest)"),
    replace(CONTRACT_FINGERPRINT, meaning="the contract of the per-request rows"),
    replace(CODE_VERSION, meaning="the package version"),
    replace(CREATED_AT, meaning="when the rows were computed"),
))

# --------------------------------------------------------------------------------- the agreement

_OFFLINE = "the comparison's delta (candidate − baseline) of the metric at K, `agreement.mean`, and its interval"
_OUTCOME = "the release guardrail's overall difference (candidate − baseline) and its interval, in its units"
_IMPROVEMENT = ("the difference oriented as the guardrail declares better (`higher`: as it is; `lower`: negated) "
                "and its interval: positive is an improvement")
#: ``ndcg-spark agreement``'s experiment rows: one per experiment × metric × K × outcome, partitioned by the
#: agreement run that wrote them.
AGREEMENT_HISTORY = TableSchema("agreement_history", (
    Column("run_id", "string", "the agreement run that wrote the row (partition column)"),
    Column("experiment_run", "string", "the experiment: the published run whose comparison and release are read"),
    Column("baseline", "string", "the experiment's two systems: the comparison's and the release's arms"),
    Column("candidate", "string", "the experiment's two systems: the comparison's and the release's arms"),
    Column("comparison_kind", "string", "as on the comparison table"),
    replace(CONTRACT_FINGERPRINT, meaning="the experiment's contract (its comparison's and guardrails' rows agree)"),
    Column("metric", "string", "the offline metric (a declared metric of the comparison table)"),
    K,
    Column("mean", "string", "`macro` or `weighted`: which of the comparison's deltas"),
    Column("offline_delta", "double", _OFFLINE),
    Column("offline_ci_low", "double", _OFFLINE),
    Column("offline_ci_high", "double", _OFFLINE),
    Column("offline_significant", "boolean", "the offline interval excludes 0"),
    Column("outcome", "string", "the release guardrail (its declared name)"),
    Column("statistic", "string", "the guardrail's statistic: `rate`, `mean` or `pNN`"),
    Column("better", "string", "`higher` or `lower`, as the guardrail declares"),
    Column("outcome_difference", "double", _OUTCOME),
    Column("outcome_ci_low", "double", _OUTCOME),
    Column("outcome_ci_high", "double", _OUTCOME),
    Column("outcome_improvement", "double", _IMPROVEMENT),
    Column("outcome_improvement_ci_low", "double", _IMPROVEMENT),
    Column("outcome_improvement_ci_high", "double", _IMPROVEMENT),
    Column("outcome_significant", "boolean", "the outcome's interval excludes 0"),
    Column("verdict", "string", "the guardrail's verdict on the release (`pass`, `fail`, `inconclusive`)"),
    Column("agrees", "boolean",
           "both significant: the offline delta and the improvement have the same sign; null unless both are"),
    Column("false_win", "boolean", "the offline delta is significantly better and the outcome significantly worse"),
))

_WILSON = "directional agreement: `n_agree / n_both_significant`, and its Wilson interval (null below the minimum)"
_SPEARMAN = ("Spearman's rank correlation of `offline_delta` and `outcome_improvement` over the experiments, and "
             "its percentile bootstrap interval over experiments (null below the minimum)")
#: ``ndcg-spark agreement``'s summary: one row per contract × metric × K × outcome, partitioned by the agreement run.
AGREEMENT = TableSchema("agreement", (
    Column("run_id", "string", "the agreement run that wrote the row (partition column)"),
    replace(CONTRACT_FINGERPRINT,
            meaning="the experiments' contract: one group per fingerprint, or `*` under `agreement.pool_contracts`"),
    Column("metric", "string", "the offline metric"),
    K,
    Column("outcome", "string", "the release guardrail"),
    Column("better", "string", "`higher` or `lower`, as the guardrail declares"),
    Column("n_experiments", "bigint", "experiments with both the metric at K and the outcome"),
    Column("enough", "boolean", "`n_experiments >= min_experiments`: otherwise counts only, no statistic"),
    Column("note", "string", "below the minimum: says there are too few experiments; else null"),
    Column("n_offline_significant", "bigint", "experiments whose offline interval excludes 0"),
    Column("sensitivity", "double", "`n_offline_significant / n_experiments` (null below the minimum)"),
    Column("n_outcome_significant", "bigint", "experiments whose outcome interval excludes 0"),
    Column("n_both_significant", "bigint", "experiments where both are significant"),
    Column("n_agree", "bigint", "of those, the ones whose offline delta pointed the way the outcome moved"),
    Column("agreement", "double", _WILSON),
    Column("agreement_ci_low", "double", _WILSON),
    Column("agreement_ci_high", "double", _WILSON),
    Column("n_false_wins", "bigint", "offline significantly better, outcome significantly worse (listed in the "
                                      "experiment rows, `false_win`)"),
    Column("spearman", "double", _SPEARMAN),
    Column("spearman_ci_low", "double", _SPEARMAN),
    Column("spearman_ci_high", "double", _SPEARMAN),
    Column("best", "string",
           "per contract × outcome: `best` on the metric × K of the highest correlation when its interval lies "
           "above every other's; `tied` on it and every one whose interval overlaps it (not ranked); else null"),
    Column("first_experiment", "string", "the first and last experiment's run"),
    Column("last_experiment", "string", "the first and last experiment's run"),
    Column("min_experiments", "int", "the declared choices (`agreement:`)"),
    Column("ci_level", "double", "the declared choices (`agreement:`)"),
    Column("bootstrap_replicates", "int", "the declared choices (`agreement:`)"),
    Column("seed", "bigint", "the declared choices (`agreement:`)"),
    Column("mean", "string", "the declared choices (`agreement:`)"),
    CODE_VERSION,
    CREATED_AT,
))

# ---------------------------------------------------------------------------- the judging plan

_DOCUMENT = "the document to judge, for its request"
#: ``ndcg-spark judge-next``'s plan: one row per document to judge, in plan order.
JUDGING_PLAN = TableSchema("judging_plan", (
    RUN_ID,
    Column("target", "string", "`aggregate` (one system's mean) or `compare` (the delta candidate − baseline)"),
    Column("systems", "array<string>", "the target's system, or its candidate and baseline"),
    Column("k", "int", "the target's cutoff"),
    Column("mean", "string", "`macro` or `weighted`"),
    Column("plan_rank", "int",
           "the document's place in the plan, from 1 (each request's documents by swing, across requests the step "
           "that settles the most per judgment: [judging.md](judging.md#the-plan))"),
    Column("request_id", "string", _DOCUMENT),
    Column("doc_id", "string", _DOCUMENT),
    Column("shown_by", "array<struct<system:string,pool_version:string,rank:int>>",
           "every system that shows it, with its displayed rank there (1-based)"),
    Column("swing", "double",
           "how far judging it alone moves the target, over every grade of the scale (max − min of the mean)"),
    Column("spread_now", "double",
           "the target's unjudged spread now (the mean of its requests' unjudged ranges: how far every grading of "
           "their unjudged documents can move them)"),
    Column("spread_remaining", "double",
           "the most of it any grading of the plan's documents up to this row can leave; some grading leaves exactly "
           "this"),
    Column("remaining_exact", "boolean",
           "every grading of the plan's documents up to this row leaves the same spread (so the re-run meets it "
           "whatever the grades)"),
    Column("worst_case_grade", "double",
           "the grade of this document in a grading that leaves the last row's `spread_remaining`"),
    replace(CONTRACT_FINGERPRINT, meaning="the contract the plan was scored under"),
))

# ------------------------------------------------------------------------------ the quarantine

#: Validation's quarantine table: the rows a ``quarantine`` rule set aside, partitioned by ``run_id``.
QUARANTINE = TableSchema("quarantine", (
    RUN_ID,
    Column("input", "string", "`candidates`, `judgments` or `attributes`"),
    Column("rule", "string", "why the row is here: the first rule it breaks, or the first rule its request broke"),
    Column("row_rules", "string",
           "every rule the row itself breaks, comma-separated (empty: taken along with its request)"),
    Column("system", "string", "candidates only, as normalized for scoring"),
    Column("pool_version", "string", "candidates only, as normalized for scoring"),
    Column("request_id", "string", "as normalized (null when missing or blank)"),
    Column("doc_id", "string", "as normalized (null when missing or blank)"),
    Column("row", "string",
           "the original row as JSON, every column as read (from a TREC file: the parsed fields, `trec_line` — the "
           "line itself — and `trec_rule`)"),
    replace(CONTRACT_FINGERPRINT, meaning="the contract of the run"),
))

# --------------------------------------------------------------------- run status and attempts

_HOST = Column("host", "string", "the host its driver ran on")
#: Publishing's run-status table: one row per run, its latest attempt's (the run's lease).
RUN_STATUS = TableSchema("run_status", (
    RUN_ID,
    Column("status", "string", "`running`, `complete` or `failed`"),
    Column("updated_at", "timestamp",
           "when this row was written (UTC); while `running`, the holder's heartbeat is its row in the "
           "[run-attempts table](#the-run-attempts-table)"),
    Column("code_version", "string", "the ndcg-spark version that wrote the run"),
    Column("attempt_id", "string",
           "the attempt that wrote the row (12 hex digits); null when marked by hand (`mark_run`)"),
    Column("started_at", "timestamp", "when that attempt started (UTC)"),
    Column("ended_at", "timestamp", "when it wrote `complete` or `failed` (UTC); null while `running`"),
    Column("app_id", "string",
           "its Spark application id (`local-…`, `app-…`, `application_…`); null when the session does not say "
           "(some Spark Connect servers)"),
    _HOST,
    Column("reason", "string",
           "why it failed: the paragraph the command printed (`terminated by SIGTERM` after a signal); null unless "
           "`failed`"),
))

#: Every attempt at a run, one row each, partitioned by ``run_id`` and ``attempt_id``.
RUN_ATTEMPTS = TableSchema("run_attempts", (
    RUN_ID,
    Column("attempt_id", "string",
           "the attempt (12 hex digits; partition column), as on the run-status row it wrote"),
    Column("command", "string", "`score`, `run` or `aggregate`"),
    _HOST,
    Column("pid", "int",
           "its driver's process id there: a later attempt on the same host takes over at once when no process has it"),
    Column("app_id", "string", "its Spark application id; null when the session does not say"),
    Column("started_at", "timestamp", "when it started (UTC)"),
    Column("ended_at", "timestamp", "when it ended (UTC); for `abandoned`, its last heartbeat; null while `running`"),
    Column("outcome", "string",
           "`running` (or died without a word, until taken over), `complete`, `failed`, `interrupted` (a signal), "
           "`lost` (another attempt took the run over), `abandoned` (taken over from it)"),
    Column("reason", "string",
           "why it did not complete: the paragraph the command printed, `terminated by SIGTERM`, or `taken over by "
           "attempt …:` its last heartbeat's age, its process gone, or `--take-over`; null otherwise"),
    Column("last_step", "string",
           "the last step it reached: `unpublish` (taking the run), `score`, `aggregate`, `trend`, `publish`"),
    Column("updated_at", "timestamp",
           "when this row was written (UTC): while `running`, the attempt's last heartbeat (rewritten every "
           "`publishing.heartbeat_seconds`)"),
    Column("code_version", "string", "the ndcg-spark version that wrote it"),
))

# ------------------------------------------------------------------------------ the registry


def _documented() -> dict[str, TableSchema]:
    every_metric = tuple(METRICS)
    tables = (per_request_schema(every_metric), AGGREGATE, AUDIT, RUN_METADATA, COMPARISON,
              pool_summary_schema(every_metric), TREND, GUARDRAILS, JUDGING_PLAN, AGREEMENT, AGREEMENT_HISTORY, QUARANTINE,
              RUN_STATUS, RUN_ATTEMPTS)
    return {t.name: t for t in tables}


#: Every table docs/tables.md documents, in its order, by name (its ``<!-- BEGIN COLUMNS: name -->``
#: block); the per-request table and the pool summary with every metric's columns.
TABLES: Mapping[str, TableSchema] = MappingProxyType(_documented())
