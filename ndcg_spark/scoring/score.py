"""Stage 1: score every request's DCG, IDCG and NDCG at every K, under a declared contract.

Everything here is native Spark expressions: one shuffle groups each request's candidates into
an array, the array is sorted once (O(M log M) per request of M candidates) and higher-order
functions compute the DCG at every K in the same pass. Candidates of different requests are
never ranked together. Requests displayed in dense position order skip the array altogether
(:mod:`ndcg_spark.scoring.dense`: hash aggregates, the same result).

A request with more than :data:`LARGE_REQUEST` candidates (one runaway query among ordinary ones)
would make that array -- held in one task's memory -- the job's limit. Such requests are found by
one small counting job and cut, with window functions that spill to disk, to the candidates that
can still reach the top ``max(K)`` of the displayed list or of the ideal (the counts come from
every candidate); their memory is then O(max K) and the result is the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.config.contract import Contract, validate_identifier
from ndcg_spark.errors import EmptyIdealError, InputError
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.dcg import count_unjudged, dcg, expected_dcg
from ndcg_spark.metrics.gain import gain
from ndcg_spark.scoring import dense

#: The columns of the per-request table, in order (slice columns follow ``weight``).
PER_REQUEST_COLUMNS = (
    "run_id",
    "system",
    "pool_version",
    "request_id",
    "k",
    "dcg",
    "idcg",
    "ndcg",
    "empty_ideal",
    "n_candidates",
    "n_judged",
    "n_positive",
    "n_unjudged_in_top_k",
    "weight",
)
STAMP_COLUMNS = ("contract_fingerprint",)

_KEYS = ("system", "pool_version", "request_id")
#: Requests with more candidates than this are cut to the rows that can reach the top max(K)
#: before their list is collected (see the module docstring).
LARGE_REQUEST = 10_000
#: Past this many large requests they are not listed one by one: every request is cut.
_MAX_LISTED_LARGE = 100_000
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)


@dataclass(frozen=True)
class Attributes:
    """Per-request attributes carried onto the per-request table.

    Parameters
    ----------
    table : a DataFrame keyed by the request id column (joined on request id), or ``None`` to take
        the columns from the candidates (their minimum per request, so the choice is deterministic).
    weight : name of the traffic-weight column, or ``None`` for weight 1.0 everywhere.
    default_weight : weight of a request with no weight value; ``None`` makes a missing weight an error.
    slices : slice column names to carry (e.g. ``equipment_rarity``).
    """

    table: DataFrame | None = None
    weight: str | None = None
    default_weight: float | None = 1.0
    slices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "slices", tuple(self.slices))
        if self.weight is not None:
            validate_identifier(self.weight, "attributes.weight")
        for i, s in enumerate(self.slices):
            validate_identifier(s, f"attributes.slices[{i}]")
            if s in PER_REQUEST_COLUMNS or s in STAMP_COLUMNS:
                raise InputError(f"attributes.slices[{i}]: {s!r} collides with a per-request table column")


def require_column(df: DataFrame, name: str, role: str, table: str, numeric: bool = False) -> None:
    fields = {f.name: f.dataType for f in df.schema.fields}
    if name not in fields:
        raise InputError(
            f"{table}: missing column {name!r} (the {role}; map it with contract.columns.{role}); "
            f"columns present: {', '.join(sorted(fields)) or 'none'} (rule column_missing)"
        )
    if numeric and not isinstance(fields[name], _NUMERIC):
        raise InputError(
            f"{table}: column {name!r} (the {role}) must be numeric, found {fields[name].simpleString()} "
            "(rule column_type; the job's validation parses numeric strings first)"
        )


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
    present = set(candidates.columns)
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

    def ident(name: str) -> Column:
        return F.col(name).cast("string")

    out = candidates.select(
        *request_keys(candidates, contract, system, pool_version, request_id_as_string),
        ident(cols.doc_id).alias("doc_id"),
        (F.col(cols.position).cast("double") if contract.order == "position" else F.lit(None).cast("double")).alias(
            "position"
        ),
        (F.col(cols.score).cast("double") if contract.order == "score" else F.lit(None).cast("double")).alias("score"),
        *([F.col(cols.grade).cast("double").alias("grade")] if judgments is None else []),
    )
    if judgments is not None:
        out = out.join(prepare_judgments(judgments, contract), ["request_id", "doc_id"], "left")
    return out


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


def score_requests(
    candidates: DataFrame,
    judgments: DataFrame | None = None,
    contract: Contract | None = None,
    *,
    run_id: str = "adhoc",
    system: str | None = None,
    pool_version: str | None = None,
    attributes: Attributes | None = None,
    large_request: int | None = LARGE_REQUEST,
    dense_plan: bool = True,
) -> DataFrame:
    """Score every request: one row per request x system x K.

    Parameters
    ----------
    candidates : one row per displayed candidate: request id, doc id, position and/or score,
        optionally system and pool version (else the literals ``system`` / ``pool_version``).
        With ``judgments=None`` it must carry a grade column (a pre-joined table).
    judgments : request id, doc id, grade; a candidate without a judgment is unjudged.
    contract : the declared choices (default :class:`Contract`).
    run_id : stamped on every row.
    attributes : weight and slice columns to carry (:class:`Attributes`).
    large_request : requests with more candidates are cut to the rows that can reach the top
        ``max(K)`` before their list is collected (same result, bounded memory). Finding them
        runs one small counting job when this function is called; ``None`` skips it (for inputs
        already known to hold no such request, e.g. after the job's skew guard).
    dense_plan : score the requests displayed in dense position order (1, 2, 3, ... or 0, 1, 2,
        ... each once) with hash aggregates instead of collecting and sorting their candidates
        (:mod:`ndcg_spark.scoring.dense`; same result, checked per request, one extra survey job when the
        contract allows it). ``False`` always collects (kept to compare the two plans).

    Returns
    -------
    DataFrame with :data:`PER_REQUEST_COLUMNS`, the slice columns, then ``contract_fingerprint``.
    ``ndcg`` is null for an empty ideal under ``empty_ideal: exclude``; ``empty_ideal`` flags it
    under every policy.

    Examples
    --------
    >>> cands = spark.createDataFrame(
    ...     [("q1", "a", 1, 1.0), ("q1", "b", 2, 3.0), ("q1", "c", 3, 0.0), ("q1", "d", 4, 2.0),
    ...      ("q2", "a", 1, 0.0), ("q2", "b", 2, 0.0)],
    ...     "request_id string, doc_id string, position int, grade double")
    >>> out = score_requests(cands, contract=Contract(k=[3]))
    >>> out.select("request_id", "k", F.round("ndcg", 4).alias("ndcg"), "empty_ideal").orderBy("request_id").show()
    +----------+---+------+-----------+
    |request_id|  k|  ndcg|empty_ideal|
    +----------+---+------+-----------+
    |        q1|  3|0.5767|      false|
    |        q2|  3|  NULL|       true|
    +----------+---+------+-----------+
    <BLANKLINE>
    """
    contract = (contract or Contract()).resolve(candidates.columns)
    attributes = attributes or Attributes()
    # One pre-joined table with an integer request id: group on the integer (hashing, shuffling and
    # comparing it is far cheaper than its string, and the cast is one-to-one) and cast after.
    integer_ids = judgments is None and isinstance(
        candidates.schema[contract.columns.request_id].dataType if contract.columns.request_id in candidates.columns
        else None,
        _INTEGRAL,
    )
    rows = prepare_candidates(
        candidates, judgments, contract, system=system, pool_version=pool_version,
        request_id_as_string=not integer_ids,
    )
    rows = rows.withColumn("gain", gain(F.col("grade"), contract.gain)).withColumn(
        "judged", F.col("grade").isNotNull()
    )
    scored_dense, rest = None, rows
    if dense_plan and dense.applies(contract):
        scored_dense, rest = _score_dense(rows, contract, literal_keys(candidates, contract, system, pool_version))
    if rest is None:
        per_request = scored_dense
    else:
        # counted on the candidates alone, before any judgments join
        large = None if large_request is None else _large_requests(
            candidates.select(*request_keys(candidates, contract, system, pool_version, not integer_ids)),
            large_request,
        )
        per_request = _score_collecting(rest, judgments, contract, large)
        if scored_dense is not None:
            per_request = scored_dense.unionByName(per_request)
    # attributes join one row per request, before the rows multiply by K
    per_request = _attach_attributes(per_request, candidates, attributes, contract)
    per_request = _per_k_rows(per_request, contract)
    if contract.empty_ideal == "error":
        _fail_on_empty_ideal(per_request)
    return per_request.select(
        F.lit(run_id).cast("string").alias("run_id"),
        *[c for c in PER_REQUEST_COLUMNS if c != "run_id"],
        *attributes.slices,
        F.lit(contract.fingerprint).alias("contract_fingerprint"),
    )


def _score_dense(
    rows: DataFrame, contract: Contract, literal: dict[str, Column]
) -> tuple[DataFrame | None, DataFrame | None]:
    """The requests the dense plan scores (:mod:`ndcg_spark.scoring.dense`, in the shape of
    :func:`_score_prepared`) and the rows of the others, left to collect; ``(None, rows)`` when
    the gains or too many requests rule the plan out, ``(scored, None)`` when every request is
    dense. The key columns in ``literal`` (:func:`literal_keys`) are the same on every row: they
    are not grouped on, and put back after."""
    varying = tuple(k for k in _KEYS if k not in literal)
    levels, not_dense = dense.survey(rows, contract, varying)
    if levels is None or not_dense == "all":
        return None, rows
    summed = dense.score_dense(rows, contract, varying, levels)
    shown, ideal = F.col("shown"), F.col("ideal")
    scored = summed.select(
        *[literal[c].alias(c) if c in literal else F.col(c) for c in _KEYS],
        "n_candidates",
        "n_judged",
        "n_positive",
        _metrics(contract, [(k, dcg(shown, k), dcg(ideal, k), F.col(f"unjudged_{k}")) for k in contract.k]),
    )
    rest = join_null_safe(rows, _keys_frame(rows, not_dense, varying), varying, "left_semi") if not_dense else None
    return _keys_as_strings(scored), rest


def _score_collecting(
    rows: DataFrame, judgments: DataFrame | None, contract: Contract, large: list | str | None
) -> DataFrame:
    """:func:`_score_prepared` over ``rows``, cutting the ``large`` requests first (a list of
    keys, ``"all"`` or None: see :func:`_large_requests`)."""
    if large is None:
        return _score_prepared(rows, judgments, contract)
    if large == "all":
        return _score_prepared(rows, judgments, contract, trim=True)
    keys = _keys_frame(rows, large)
    small = _score_prepared(join_null_safe(rows, keys, _KEYS, "left_anti"), judgments, contract)
    large_cut = _score_prepared(join_null_safe(rows, keys, _KEYS, "left_semi"), judgments, contract, trim=True)
    return small.unionByName(large_cut)


def _metrics(contract: Contract, per_k: list[tuple[int, Column, Column, Column]]) -> Column:
    """The ``metrics`` column: one struct per ``(k, dcg, idcg, unjudged in the top k)``; the
    unjudged count is null under ``unjudged: zero``, which does not count them."""
    return F.array(*[
        F.struct(
            F.lit(k).alias("k"),
            dcg.alias("dcg"),
            idcg.alias("idcg"),
            (F.lit(None) if contract.unjudged == "zero" else unjudged).cast("int").alias("n_unjudged_in_top_k"),
        )
        for k, dcg, idcg, unjudged in per_k
    ]).alias("metrics")


def _keys_as_strings(scored: DataFrame) -> DataFrame:
    """The request keys as strings (a request id may have been grouped on as an integer)."""
    rest = [c for c in scored.columns if c not in _KEYS]
    return scored.select(*[F.col(c).cast("string").alias(c) for c in _KEYS], *rest)


def _keys_frame(rows: DataFrame, keys: list, names: tuple[str, ...] = _KEYS) -> DataFrame:
    """A broadcast table of request keys (tuples of the ``names`` columns) typed like ``rows``'."""
    return F.broadcast(rows.sparkSession.createDataFrame(keys, rows.select(*names).schema))


def _large_requests(keys: DataFrame, threshold: int) -> list | str | None:
    """The keys of the requests with more than ``threshold`` candidates (one counting job over the
    key columns), ``"all"`` past :data:`_MAX_LISTED_LARGE` of them, or None when there are none."""
    found = (
        keys.groupBy(*_KEYS)
        .agg(F.count(F.lit(1)).alias("_n"))
        .filter(F.col("_n") > F.lit(int(threshold)))
        .select(*_KEYS)
        .limit(_MAX_LISTED_LARGE + 1)
        .collect()
    )
    if not found:
        return None
    return "all" if len(found) > _MAX_LISTED_LARGE else [tuple(r) for r in found]


def _trim(rows: DataFrame, contract: Contract, ranked: Column, tie_aware: bool) -> DataFrame:
    """The rows of each request that can reach the top ``max_k`` of the displayed list, of the
    ranked list (judged only under ``unjudged: exclude``) or of the ideal, plus every member of a
    tie group that starts within it; window functions, which spill rather than hold a request."""
    m = contract.max_k
    keys = [F.col(c) for c in _KEYS]
    if contract.order == "position":
        order = [F.col("position").asc(), F.col("doc_id").asc()]
    else:
        order = [F.col("score").desc(), F.col("doc_id").asc()]
    rows = rows.withColumn("_rn_all", F.row_number().over(Window.partitionBy(*keys).orderBy(*order)))
    rows = rows.withColumn("_rn_ranked", F.row_number().over(Window.partitionBy(*keys, ranked).orderBy(*order)))
    keep = (F.col("_rn_all") <= m) | (ranked & (F.col("_rn_ranked") <= m))
    if contract.ideal_from == "candidates":
        by_gain = Window.partitionBy(*keys, ranked).orderBy(F.coalesce(F.col("gain"), F.lit(0.0)).desc())
        rows = rows.withColumn("_rn_gain", F.row_number().over(by_gain))
        keep = keep | (ranked & (F.col("_rn_gain") <= m))
    if tie_aware:
        keep = keep | (ranked & (F.col("tie_start") < m))
    return rows.filter(keep).drop("_rn_all", "_rn_ranked", "_rn_gain")


def _score_prepared(
    rows: DataFrame, judgments: DataFrame | None, contract: Contract, *, trim: bool = False
) -> DataFrame:
    """One row per request (``_KEYS``, counts) with ``metrics``: an array of one struct per K
    (``k, dcg, idcg, n_unjudged_in_top_k``), exploded by the caller after the attributes join.
    ``trim``: collect only the rows that can reach the top max(K) (:func:`_trim`), and take the
    counts from every row."""
    ks = contract.k
    keys = [F.col(c) for c in _KEYS]
    tie_aware = contract.order == "score" and contract.ties == "average"
    if contract.order == "position":
        sort_key = [F.col("position").alias("o1"), F.col("doc_id").alias("o2")]
    else:
        sort_key = [(-F.col("score")).alias("o1"), F.col("doc_id").alias("o2")]
    item_fields = [*sort_key, F.col("gain"), F.col("judged")]
    if tie_aware:
        # Ties are formed among the candidates that are ranked (judged ones only under `exclude`).
        ranked = F.col("judged") if contract.unjudged == "exclude" else F.lit(True)
        rows = rows.withColumn("ranked", ranked)
        by_request = Window.partitionBy(*keys, "ranked")
        rows = rows.withColumn("tie_start", F.rank().over(by_request.orderBy(F.col("score").desc())) - 1).withColumn(
            "tie_size", F.count(F.lit(1)).over(Window.partitionBy(*keys, "ranked", "score"))
        )
        item_fields += [F.col("tie_start"), F.col("tie_size")]

    # The ideal from candidates is collected beside the items as plain doubles (the gains of the
    # ranked candidates, unjudged as 0; none of them under `exclude`): sorting an array of
    # doubles is far cheaper than deriving it from the sorted structs.
    ideal_gain = F.coalesce(F.col("gain"), F.lit(0.0))
    if contract.unjudged == "exclude":
        ideal_gain = F.when(F.col("judged"), ideal_gain)  # collect_list skips the nulls
    ideal_agg = (
        [F.sort_array(F.collect_list(ideal_gain), asc=False).alias("ideal")]
        if contract.ideal_from == "candidates"
        else []
    )
    counts = [
        F.count(F.lit(1)).alias("n_candidates"),
        F.count("grade").alias("n_judged"),
        F.count(F.when(F.col("grade") > 0, True)).alias("n_positive"),
    ]
    collected = rows
    if trim:
        ranked_rows = F.col("judged") if contract.unjudged == "exclude" else F.lit(True)
        collected = _trim(rows, contract, ranked_rows, tie_aware)
    grouped = collected.groupBy(*keys).agg(
        # sort_array orders structs field by field with no comparator lambda (array_sort's
        # default comparator is a lambda, evaluated interpreted for every comparison)
        F.sort_array(F.collect_list(F.struct(*item_fields))).alias("items"),
        *ideal_agg,
        *([] if trim else counts),
    )
    if trim:  # the counts of every candidate, not of the rows kept
        grouped = join_null_safe(grouped, rows.groupBy(*keys).agg(*counts), _KEYS)
    if contract.ideal_from == "judgments":
        assert judgments is not None  # checked in prepare_candidates
        ideal = (
            prepare_judgments(judgments, contract)
            .filter(F.col("grade").isNotNull())
            .groupBy("request_id")
            .agg(F.sort_array(F.collect_list(gain(F.col("grade"), contract.gain)), asc=False).alias("ideal"))
        )
        grouped = grouped.join(ideal, "request_id", "left").withColumn(
            "ideal", F.coalesce(F.col("ideal"), F.array().cast("array<double>"))
        )
    if contract.unjudged == "exclude":
        # the condensed list, computed once (a column of its own) for every K
        grouped = grouped.withColumn("ranked_items", F.filter(F.col("items"), lambda x: x["judged"]))
        ranked_items = F.col("ranked_items")
    else:
        ranked_items = F.col("items")

    items, ideal = F.col("items"), F.col("ideal")
    per_k = []
    for k in ks:
        if tie_aware:
            shown = expected_dcg(ranked_items, k)
        else:
            shown = dcg(ranked_items, k, lambda x: x["gain"])
        per_k.append((k, shown, dcg(ideal, k), count_unjudged(items, k)))
    return _keys_as_strings(grouped.select(*_KEYS, "n_candidates", "n_judged", "n_positive", _metrics(contract, per_k)))


def _per_k_rows(per_request: DataFrame, contract: Contract) -> DataFrame:
    """One row per request x K from :func:`_score_prepared`'s ``metrics``, with the NDCG and the
    empty-ideal flag under the contract's policy."""
    scored = per_request.select("*", F.explode_outer("metrics").alias("m")).drop("metrics").select("*", "m.*").drop("m")
    empty = F.col("idcg") <= 0
    if contract.empty_ideal == "zero":
        on_empty = F.lit(0.0)
    else:  # exclude (and error, which fails the run before anything is written)
        on_empty = F.lit(None).cast("double")
    return scored.withColumn("empty_ideal", empty).withColumn(
        "ndcg", F.when(empty, on_empty).otherwise(F.col("dcg") / F.col("idcg"))
    )


def _attach_attributes(
    per_request: DataFrame, candidates: DataFrame, attributes: Attributes, contract: Contract
) -> DataFrame:
    wanted = [c for c in (attributes.weight, *attributes.slices) if c is not None]
    if wanted:
        if attributes.table is not None:
            source_df, source_name = attributes.table, "attributes"
            source_id = contract.columns.request_id
        else:
            source_df, source_name = candidates, "candidates"
            source_id = contract.columns.request_id
        require_column(source_df, source_id, "request_id", source_name)
        for c in wanted:
            require_column(source_df, c, c, source_name, numeric=(c == attributes.weight))
        # min() per request keeps the choice deterministic should a column vary within a request.
        attrs = source_df.groupBy(F.col(source_id).cast("string").alias("request_id")).agg(
            *[F.min(c).alias(c) for c in wanted]
        )
        per_request = per_request.join(attrs, "request_id", "left")
    if attributes.weight is None:
        weight = F.lit(1.0)
    elif attributes.default_weight is None:
        weight = F.col(attributes.weight).cast("double")
    else:
        weight = F.coalesce(F.col(attributes.weight).cast("double"), F.lit(float(attributes.default_weight)))
    per_request = per_request.withColumn("weight", weight)
    if attributes.weight is not None and attributes.default_weight is None:
        missing = per_request.filter(F.col("weight").isNull()).select("request_id").limit(1).collect()
        if missing:
            raise InputError(
                f"attributes.weight: request {missing[0]['request_id']!r} has no weight and "
                "attributes.default_weight is not set (rule: weight_missing)"
            )
    return per_request


def _fail_on_empty_ideal(per_request: DataFrame) -> None:
    empty = per_request.filter(F.col("empty_ideal")).select("system", "request_id").distinct()
    example = empty.limit(1).collect()
    if example:
        n = empty.count()
        raise EmptyIdealError(
            f"contract.empty_ideal is 'error' and {n} request(s) have no positive grade (IDCG = 0), "
            f"e.g. request {example[0]['request_id']!r} of system {example[0]['system']!r}. "
            "Use empty_ideal: exclude (flag and count them apart) or zero (score 0, flagged) to run anyway."
        )
