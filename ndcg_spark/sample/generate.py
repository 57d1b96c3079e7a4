"""Embedded sample data: maintenance-search requests, two rankers, graded judgments.

Technicians search maintenance manuals, work orders, service bulletins and SOPs for a piece of
equipment. Each request belongs to a *request type* (an equipment type) with a traffic weight:
a heavy head (centrifugal pumps, gate valves) and a long rare tail (gas turbine lube skids,
cryogenic pumps). The evaluation sample over-represents the tail relative to traffic, as real
judged sets do, so the traffic-weighted mean and the macro mean differ.

:func:`generate` returns three DataFrames shaped like SPEC §3:

``candidates``
    ``request_id, doc_id, system, position, score, pool_version`` -- two systems, ``bm25`` and
    ``hybrid``, rank the *same* candidate pool per request (5..30 candidates, a few requests with
    a single one); ``hybrid`` orders it modestly better. ``position`` is 1..M per request and
    system; ``score`` is non-increasing with position and has some exact ties (broken by
    ``doc_id`` ascending, so position order and "score desc, doc_id asc" agree).
``judgments``
    ``request_id, doc_id, grade`` with integer grades 0..3 as doubles. About 15% of candidates
    have no judgment row (unjudged); about 10% of requests have only zero grades (empty ideal
    whichever way it is computed); about a quarter of requests have judged documents that were
    *not* retrieved, mostly positive, so the ideal from judgments differs from the ideal from
    candidates -- for about 3% of requests every positive is outside the pool (empty ideal from
    candidates only).
``attributes``
    ``request_id, request_type, weight, equipment_rarity, doc_age_bucket, permission_group``.

Everything is a pure function of ``(seed, request number, candidate number)`` through
``xxhash64`` computed by Spark expressions: no ``rand()``, no Python loop over rows. The data is
therefore identical whatever the partitioning and scales to millions of rows for benchmarks.

Examples
--------
>>> from ndcg_spark.sample.generate import generate
>>> data = generate(spark, n_requests=200, seed=7)
>>> data.attributes.count()
200
>>> data.candidates.select("system").distinct().orderBy("system").show()
+------+
|system|
+------+
|  bm25|
|hybrid|
+------+
<BLANKLINE>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

__all__ = [
    "DENSE_POOL_VERSION",
    "DENSE_SYSTEM",
    "POOL_VERSION",
    "REQUEST_TYPES",
    "RequestType",
    "SampleData",
    "generate",
    "write_sample",
]

POOL_VERSION = "pool-2026-11-28"
"""The ``pool_version`` stamped on every generated candidate row."""

SYSTEMS = ("bm25", "hybrid")
"""The two rankers; each is also the name of its score column inside the generator."""

DENSE_SYSTEM = "dense"
DENSE_POOL_VERSION = "pool-2026-11-28-dense"
"""The optional third ranker (``generate(..., dense_pool=True)``) and its own candidate pool."""


@dataclass(frozen=True)
class RequestType:
    """An equipment type technicians search for.

    Parameters
    ----------
    name : the request type, e.g. ``"centrifugal pump"``.
    rarity : ``"common"``, ``"uncommon"`` or ``"rare"``.
    monthly_searches : traffic: how often requests of this type are seen per month.
    """

    name: str
    rarity: str
    monthly_searches: float


REQUEST_TYPES: tuple[RequestType, ...] = (
    RequestType("centrifugal pump", "common", 5200),
    RequestType("gate valve", "common", 4100),
    RequestType("air compressor", "common", 3600),
    RequestType("belt conveyor", "common", 3100),
    RequestType("electric motor", "common", 2900),
    RequestType("ball valve", "common", 2400),
    RequestType("shell and tube heat exchanger", "common", 2000),
    RequestType("air handling unit", "common", 1800),
    RequestType("diaphragm pump", "uncommon", 700),
    RequestType("cooling tower", "uncommon", 600),
    RequestType("steam trap", "uncommon", 520),
    RequestType("helical gearbox", "uncommon", 480),
    RequestType("hydraulic press", "uncommon", 400),
    RequestType("overhead crane", "uncommon", 350),
    RequestType("boiler feedwater pump", "uncommon", 300),
    RequestType("screw conveyor", "uncommon", 240),
    RequestType("gas turbine lube skid", "rare", 60),
    RequestType("cryogenic pump", "rare", 45),
    RequestType("reciprocating gas compressor", "rare", 35),
    RequestType("emergency diesel generator", "rare", 30),
    RequestType("rotary kiln drive", "rare", 20),
    RequestType("vacuum distillation column", "rare", 15),
    RequestType("magnetic bearing chiller", "rare", 12),
    RequestType("molten salt pump", "rare", 8),
)
"""Request types with their traffic; heavy head, long rare tail."""

# Share of the *evaluation sample* per rarity (the tail is over-sampled relative to traffic);
# within a rarity, types are drawn proportionally to sqrt(traffic).
_SAMPLE_SHARE = {"common": 0.62, "uncommon": 0.28, "rare": 0.10}

_DOC_AGE_BUCKETS = ("<1y", "1-3y", "3-10y", ">10y")
_DOC_AGE_SHARE = {  # rare equipment is old equipment: its documents are older
    "common": (0.22, 0.38, 0.28, 0.12),
    "uncommon": (0.15, 0.32, 0.33, 0.20),
    "rare": (0.05, 0.20, 0.40, 0.35),
}
_PERMISSION_GROUPS = (("public", 0.60), ("contractor", 0.28), ("restricted", 0.12))
_DOC_PREFIXES = (("MAN", 0.40), ("WO", 0.35), ("SB", 0.15), ("SOP", 0.10))

_NO_POSITIVE_SHARE = 0.10  # requests whose judged grades are all 0
_RETRIEVAL_MISS_SHARE = 0.03  # requests whose only positives were not retrieved
_SINGLE_CANDIDATE_SHARE = 0.02
_MIN_CANDIDATES, _MAX_CANDIDATES = 5, 30
_UNRETRIEVED_SHARE = 0.25  # requests with 1..3 judged documents outside the candidate pool
_DENSE_DROP_SHARE = 0.25  # of the shared pool's candidates (all but the first), not retrieved by dense
_DENSE_FIND_SHARE = 0.7  # of the judged documents outside the shared pool, retrieved by dense
_DOCS_PER_TYPE = 100_000  # doc numbers per request type; 7919 is coprime with it
_DOC_STRIDE = 7919
_U53 = float(1 << 53)


@dataclass(frozen=True)
class SampleData:
    """The three generated inputs (SPEC §3)."""

    candidates: DataFrame
    judgments: DataFrame
    attributes: DataFrame


# --- expression builders ---------------------------------------------------------------------
# The generator is a handful of projections whose expressions are written as Spark SQL text:
# one JVM call per column instead of thousands of py4j round trips for nested Column objects,
# which keeps building the plan well under a second. Literals are typed explicitly (``D`` for
# doubles), so no decimal arithmetic sneaks in.


def _num(x: float) -> str:
    """A double literal."""
    return f"{float(x)!r}D"


def _str(x: str) -> str:
    """A string literal."""
    return "'" + x.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _lit(x: object) -> str:
    """A string, double or integer literal."""
    if isinstance(x, str):
        return _str(x)
    if isinstance(x, float):
        return _num(x)
    return str(x)


def _unit(seed: int, salt: str, *cols: str) -> str:
    """Uniform in [0, 1) from the low 53 bits of ``xxhash64(seed, salt, cols...)``."""
    keys = ", ".join((str(seed), _str(salt), *cols))
    return f"(CAST(xxhash64({keys}) & {(1 << 53) - 1} AS DOUBLE) / {_num(_U53)})"


def _normal(seed: int, salt: str, *cols: str) -> str:
    """Standard normal (Box-Muller) from two hash uniforms."""
    u1 = f"(1.0D - {_unit(seed, salt + '.1', *cols)})"  # (0, 1], so log() is finite
    u2 = _unit(seed, salt + ".2", *cols)
    return f"(sqrt(-2.0D * ln({u1})) * cos({_num(2 * math.pi)} * {u2}))"


def _choice(u: str, options: Sequence[tuple[object, float]]) -> str:
    """The value of ``options`` (``(value, share)`` pairs, shares as weights) drawn by ``u`` in [0, 1)."""
    total = sum(share for _, share in options)
    branches, cumulative = [], 0.0
    for value, share in options[:-1]:
        cumulative += share / total
        branches.append(f"WHEN {u} < {_num(cumulative)} THEN {_lit(value)}")
    return f"CASE {' '.join(branches)} ELSE {_lit(options[-1][0])} END"


def _array(values: Sequence[object]) -> str:
    return "array(" + ", ".join(_lit(v) for v in values) + ")"


def _type_options() -> list[tuple[object, float]]:
    """Request type index -> share of the evaluation sample."""
    options: list[tuple[object, float]] = []
    for rarity, share in _SAMPLE_SHARE.items():
        members = [(i, t) for i, t in enumerate(REQUEST_TYPES) if t.rarity == rarity]
        norm = sum(math.sqrt(t.monthly_searches) for _, t in members)
        options += [(i, share * math.sqrt(t.monthly_searches) / norm) for i, t in members]
    return options


def _exprs(columns: dict[str, str]) -> dict[str, Column]:
    return {name: F.expr(sql) for name, sql in columns.items()}


# --- the three stages -----------------------------------------------------------------------


def _requests(spark: SparkSession, n_requests: int, seed: int, num_partitions: int | None) -> DataFrame:
    """One row per request: attributes plus the hidden knobs of its candidates and judgments."""
    draws = (
        "type", "weight", "permission", "age", "no_positive", "retrieval_miss", "positive_rate",
        "n_candidates", "n_candidates.2", "doc_base", "unretrieved", "unretrieved.n", "ease",
    )  # fmt: skip
    # every draw is computed once, as a column ``u_<name>``, and referenced by name below
    u = {name: "u_" + name.replace(".", "_") for name in draws}
    type_at = "type_idx + 1"
    ages = {level: _choice(u["age"], list(zip(_DOC_AGE_BUCKETS, shares))) for level, shares in _DOC_AGE_SHARE.items()}
    miss_given_positive = _RETRIEVAL_MISS_SHARE / (1.0 - _NO_POSITIVE_SHARE)
    n_span = _MAX_CANDIDATES - _MIN_CANDIDATES + 1
    requests = spark.range(0, n_requests, 1, num_partitions).select(
        F.col("id").alias("rid"),
        F.format_string("req-%07d", F.col("id")).alias("request_id"),
        *[F.expr(_unit(seed, name, "id")).alias(column) for name, column in u.items()],
    )
    # one projection per dependency level (each withColumn would re-analyse the whole plan)
    requests = requests.withColumns(
        _exprs(
            {
                "type_idx": _choice(u["type"], _type_options()),
                "permission_group": _choice(u["permission"], _PERMISSION_GROUPS),
                "no_positive": f"{u['no_positive']} < {_num(_NO_POSITIVE_SHARE)}",
                "positive_rate": f"0.15D + 0.45D * {u['positive_rate']}",
                "n_candidates": (
                    f"CASE WHEN {u['n_candidates']} < {_num(_SINGLE_CANDIDATE_SHARE)} THEN 1"
                    f" ELSE {_MIN_CANDIDATES} + CAST(floor({u['n_candidates.2']} * {n_span}) AS INT) END"
                ),
                "doc_base": f"CAST(floor({u['doc_base']} * {_DOCS_PER_TYPE}) AS BIGINT)",
            }
        )
    )
    requests = requests.withColumns(
        _exprs(
            {
                "request_type": f"element_at({_array([t.name for t in REQUEST_TYPES])}, {type_at})",
                "equipment_rarity": f"element_at({_array([t.rarity for t in REQUEST_TYPES])}, {type_at})",
                "weight": (
                    f"round(element_at({_array([float(t.monthly_searches) for t in REQUEST_TYPES])}, {type_at})"
                    f" * (0.5D + {u['weight']}), 2)"
                ),
                "retrieval_miss": f"NOT no_positive AND {u['retrieval_miss']} < {_num(miss_given_positive)}",
            }
        )
    )
    requests = requests.withColumns(
        _exprs(
            {
                "n_unretrieved": (
                    f"CASE WHEN retrieval_miss OR {u['unretrieved']} < {_num(_UNRETRIEVED_SHARE)}"
                    f" THEN 1 + CAST(floor({u['unretrieved.n']} * 3) AS INT) ELSE 0 END"
                ),
                "doc_age_bucket": (
                    f"CASE equipment_rarity WHEN 'common' THEN {ages['common']}"
                    f" WHEN 'uncommon' THEN {ages['uncommon']} ELSE {ages['rare']} END"
                ),
            }
        )
    )
    return requests.withColumns(
        _exprs(
            {
                # how easy the request is for a ranker: rare equipment and old documents are harder
                "ease": (
                    "1.0D"
                    " - CASE equipment_rarity WHEN 'rare' THEN 0.35D WHEN 'uncommon' THEN 0.15D ELSE 0.0D END"
                    " - CASE doc_age_bucket WHEN '>10y' THEN 0.20D WHEN '3-10y' THEN 0.10D ELSE 0.0D END"
                    f" + 0.6D * ({u['ease']} - 0.5D)"
                ),
                # unjudged rate: higher for rare equipment and old documents (fewer assessors know them)
                "unjudged_rate": (
                    "0.135D"
                    " + CASE equipment_rarity WHEN 'rare' THEN 0.08D WHEN 'uncommon' THEN 0.03D ELSE 0.0D END"
                    " + CASE doc_age_bucket WHEN '>10y' THEN 0.04D ELSE 0.0D END"
                ),
            }
        )
    ).drop(*u.values())


def _pool(requests: DataFrame, seed: int) -> DataFrame:
    """Every document known for a request: its candidates, then judged documents not retrieved.

    Document ``i`` of a request is a candidate when ``i <= n_candidates``; ``i == 1`` is always
    judged and, unless the request has no positive (or a retrieval miss), positive.
    """
    pool = requests.withColumn("i", F.explode(F.sequence(F.lit(1), F.expr("n_candidates + n_unretrieved"))))
    pool = pool.withColumns(
        _exprs(
            {
                # doc numbers are unique within a request: the stride is coprime with _DOCS_PER_TYPE
                "doc_num": (
                    f"CAST(type_idx AS BIGINT) * {_DOCS_PER_TYPE}"
                    f" + pmod(doc_base + CAST(i AS BIGINT) * {_DOC_STRIDE}, {_DOCS_PER_TYPE})"
                ),
                "retrieved": "i <= n_candidates",
                "u_grade": _unit(seed, "grade", "rid", "i"),
                "u_level": _unit(seed, "grade.level", "rid", "i"),
                "u_judged": _unit(seed, "judged", "rid", "i"),
            }
        )
    )
    pool = pool.withColumns(
        _exprs(
            {
                "u_prefix": _unit(seed, "prefix", "doc_num"),
                "positive_grade": f"1.0D + {_choice('u_level', [(0.0, 0.5), (1.0, 0.3), (2.0, 0.2)])}",
            }
        )
    )
    return pool.withColumns(
        _exprs(
            {
                "doc_id": f"format_string('%s-%07d', {_choice('u_prefix', _DOC_PREFIXES)}, doc_num)",
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
        )
    )


def _candidates(pool: DataFrame, seed: int) -> DataFrame:
    """Both systems' rankings of the retrieved documents; positions follow score desc, doc_id asc."""
    noise_bm25 = _normal(seed, "noise.bm25", "rid", "i")
    noise_own = _normal(seed, "noise.hybrid", "rid", "i")
    scored = (
        pool.filter(F.col("retrieved"))
        .withColumns(_exprs({"noise_bm25": noise_bm25, "noise_own": noise_own}))
        .withColumns(
            _exprs(
                {
                    # lexical scores on a coarse grid: some exact ties
                    "bm25": "round(greatest(0.5D, 12.0D + 3.0D * (0.55D * ease * grade + noise_bm25)), 2)",
                    # hybrid shares part of bm25's lexical noise and sees relevance more clearly
                    "hybrid": (
                        "round(1.0D / (1.0D + exp(-(-1.0D + 0.7D * ease * grade"
                        " + 0.9D * (0.6D * noise_bm25 + 0.8D * noise_own)))), 4)"
                    ),
                }
            )
        )
    )
    pairs = ", ".join(f"{_str(name)}, {name}" for name in SYSTEMS)  # 'bm25', bm25, 'hybrid', hybrid
    ranked = Window.partitionBy("request_id", "system").orderBy(F.col("score").desc(), F.col("doc_id").asc())
    return (
        scored.select(
            "request_id",
            "doc_id",
            F.expr(f"stack({len(SYSTEMS)}, {pairs}) AS (system, score)"),
        )
        .withColumn("position", F.row_number().over(ranked).cast("int"))
        .select(
            "request_id",
            "doc_id",
            "system",
            "position",
            F.col("score").cast("double"),
            F.lit(POOL_VERSION).alias("pool_version"),
        )
    )


def _dense_candidates(pool: DataFrame, seed: int) -> DataFrame:
    """The optional third system: a dense retriever with its *own* candidate pool, ranked by itself.

    Its pool keeps each shared-pool candidate but the first with probability 1 - 25% and finds
    each judged document outside the shared pool with probability 70%, so its candidate sets
    differ from bm25's and hybrid's (and its candidate recall too).
    """
    in_pool = (
        f"CASE WHEN retrieved THEN i = 1 OR {_unit(seed, 'dense.keep', 'rid', 'i')} >= {_num(_DENSE_DROP_SHARE)}"
        f" ELSE {_unit(seed, 'dense.find', 'rid', 'i')} < {_num(_DENSE_FIND_SHARE)} END"
    )
    score = (
        "round(1.0D / (1.0D + exp(-(-1.0D + 0.7D * ease * grade"
        f" + 0.9D * {_normal(seed, 'noise.dense', 'rid', 'i')}))), 4)"
    )
    ranked = Window.partitionBy("request_id").orderBy(F.col("score").desc(), F.col("doc_id").asc())
    return (
        pool.filter(F.expr(in_pool))
        .select("request_id", "doc_id", F.expr(score).alias("score"))
        .withColumn("position", F.row_number().over(ranked).cast("int"))
        .select(
            "request_id",
            "doc_id",
            F.lit(DENSE_SYSTEM).alias("system"),
            "position",
            F.col("score").cast("double"),
            F.lit(DENSE_POOL_VERSION).alias("pool_version"),
        )
    )


def generate(
    spark: SparkSession,
    n_requests: int = 20_000,
    seed: int = 7,
    *,
    num_partitions: int | None = None,
    dense_pool: bool = False,
) -> SampleData:
    """Generate maintenance-search sample data: candidates of two systems, judgments, attributes.

    Parameters
    ----------
    spark : the session to build the DataFrames in.
    n_requests : number of requests (``attributes`` has exactly this many rows).
    seed : the data is a pure function of ``(n_requests, seed)``.
    num_partitions : partitions of the underlying ``spark.range``; changes the layout only,
        never the rows (``None``: Spark's default parallelism).
    dense_pool : also rank a third system, ``dense``, over its *own* candidate pool (pool version
        :data:`DENSE_POOL_VERSION`: some shared candidates dropped, some judged documents outside
        the shared pool found), to demonstrate the comparison's pool guard. ``False`` (default)
        leaves the output exactly as without it.

    Returns
    -------
    SampleData
        ``candidates`` (request_id, doc_id, system, position, score, pool_version),
        ``judgments`` (request_id, doc_id, grade) and ``attributes`` (request_id, request_type,
        weight, equipment_rarity, doc_age_bucket, permission_group). Lazy: nothing runs until
        an action.

    Notes
    -----
    Per request: 5..30 candidates (about 2% of requests have exactly one), ranked by ``bm25``
    and by ``hybrid`` over the same pool. About 15% of candidates are unjudged, about 10% of
    requests have only zero grades, about 3% have positives only among documents that were not
    retrieved (empty ideal from candidates, not from judgments), and about a quarter of requests
    have 1..3 judged documents that were not retrieved (mostly positive). Every random draw is
    ``xxhash64`` of the seed, a salt and row keys, so the output does not depend on partitioning;
    request ``req-0000042`` is the same whatever ``n_requests`` is.

    Examples
    --------
    >>> data = generate(spark, n_requests=3, seed=7)
    >>> data.attributes.orderBy("request_id").show()
    +-----------+----------------+-------+----------------+--------------+----------------+
    | request_id|    request_type| weight|equipment_rarity|doc_age_bucket|permission_group|
    +-----------+----------------+-------+----------------+--------------+----------------+
    |req-0000000|molten salt pump|   4.01|            rare|           <1y|      contractor|
    |req-0000001|      gate valve| 4966.0|          common|           <1y|      contractor|
    |req-0000002|centrifugal pump|3724.41|          common|          1-3y|      contractor|
    +-----------+----------------+-------+----------------+--------------+----------------+
    <BLANKLINE>

    The top of one ranking with its grades; a null grade is an unjudged candidate:

    >>> (data.candidates.filter("request_id = 'req-0000001' AND system = 'hybrid'")
    ...     .join(data.judgments, ["request_id", "doc_id"], "left")
    ...     .orderBy("position").select("position", "doc_id", "score", "grade").show(4))
    +--------+-----------+------+-----+
    |position|     doc_id| score|grade|
    +--------+-----------+------+-----+
    |       1| WO-0164532|0.7188| NULL|
    |       2|MAN-0148694|0.6394|  0.0|
    |       3| SB-0104127|0.6225|  1.0|
    |       4|SOP-0180370|0.4547|  0.0|
    +--------+-----------+------+-----+
    only showing top 4 rows
    """
    if isinstance(n_requests, bool) or not isinstance(n_requests, int) or n_requests < 1:
        raise ValueError(f"n_requests: must be an integer >= 1, got {n_requests!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        raise ValueError(f"seed: must be a 64-bit integer, got {seed!r}")
    if num_partitions is not None and (
        isinstance(num_partitions, bool) or not isinstance(num_partitions, int) or num_partitions < 1
    ):
        raise ValueError(f"num_partitions: must be an integer >= 1 or None, got {num_partitions!r}")
    requests = _requests(spark, n_requests, seed, num_partitions)
    pool = _pool(requests, seed)
    attributes = requests.select(
        "request_id", "request_type", "weight", "equipment_rarity", "doc_age_bucket", "permission_group"
    )
    judgments = pool.filter(F.col("judged")).select("request_id", "doc_id", F.col("grade").cast("double"))
    candidates = _candidates(pool, seed)
    if dense_pool:
        candidates = candidates.unionByName(_dense_candidates(pool, seed))
    return SampleData(candidates=candidates, judgments=judgments, attributes=attributes)


def write_sample(
    spark: SparkSession,
    out_dir: str | Path,
    n_requests: int = 20_000,
    seed: int = 7,
    *,
    dense_pool: bool = False,
) -> dict[str, str]:
    """Generate sample data and write it as Parquet folders ``candidates/``, ``judgments/``, ``attributes/``.

    Existing folders of those names under ``out_dir`` are overwritten (this is sample data, not a
    nightly table).

    Parameters
    ----------
    spark : the session.
    out_dir : folder to write under (created if missing).
    n_requests, seed, dense_pool : as for :func:`generate`.

    Returns
    -------
    dict[str, str]
        ``{"candidates": path, "judgments": path, "attributes": path}`` (absolute paths).

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> paths = write_sample(spark, tmp.name, n_requests=50)
    >>> sorted(paths)
    ['attributes', 'candidates', 'judgments']
    >>> spark.read.parquet(paths["attributes"]).count()
    50
    >>> tmp.cleanup()
    """
    root = Path(out_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    data = generate(spark, n_requests=n_requests, seed=seed, dense_pool=dense_pool)
    paths: dict[str, str] = {}
    for name, df in (("candidates", data.candidates), ("judgments", data.judgments), ("attributes", data.attributes)):
        path = str(root / name)
        df.write.mode("overwrite").parquet(path)
        paths[name] = path
    return paths
