"""Comparing two rankers honestly: paired deltas, a significance test, and a candidate-pool guard.

"Is ranker B better than ranker A?" is answered on the requests **both** can score, request by
request: the delta ``candidate − baseline`` of each request's NDCG@K, its mean (macro: each
request once; weighted: by traffic weight), a paired bootstrap interval, a paired randomization
(sign-flip) test and win / tie / loss counts — overall and per slice.

A higher NDCG can come from a different candidate *pool* rather than a better ranking: ranker B
may simply have been handed the relevant documents. So :func:`compare` first checks the pools:

- the two sides carry the same ``pool_version`` **and** rank the same documents for every
  request they share → a ``reranker`` comparison (the per-request NDCG as scored in stage 1);
- otherwise → an ``end_to_end`` comparison: each side's NDCG is recomputed against **one shared
  ideal from the judgments** (every judged document of the request, retrieved or not), and each
  side's **candidate recall** (positives in its pool ÷ all known positives) is reported beside it.
  Asked for a reranker comparison (``kind: reranker``, the default) across different pools, it
  refuses with :class:`PoolMismatchError` unless the caller opts in with ``kind: end_to_end``
  (or ``auto``: label whichever it is).

The pool check needs the candidates themselves: :func:`pool_summary` reduces them (and the
judgments) to one row per system × pool version × request × K — a hash of the request's sorted
doc ids, pool size, known positives and the IDCG@K of every judged document (the positives *in*
each pool are the per-request table's ``n_positive``).

Everything is native Spark: the bootstrap and the sign-flip test are Spark aggregations over
replicates whose Poisson counts and signs are pure functions of ``(seed, replicate, request_id)``
(``xxhash64``), so the same seed and data give the same result whatever the partitioning (floats
to rounding: sums of doubles may be added in another order), and no per-request row is collected
to the driver.

Examples
--------
>>> from ndcg_spark import Contract, score_requests
>>> cands = spark.createDataFrame(
...     [("q1", "a", "A", 1), ("q1", "b", "A", 2), ("q1", "c", "A", 3),
...      ("q1", "a", "B", 2), ("q1", "b", "B", 3), ("q1", "c", "B", 1),
...      ("q2", "d", "A", 1), ("q2", "e", "A", 2), ("q2", "d", "B", 2), ("q2", "e", "B", 1),
...      ("q3", "f", "A", 1), ("q3", "f", "B", 1)],
...     "request_id string, doc_id string, system string, position int")
>>> judgments = spark.createDataFrame(
...     [("q1", "a", 1.0), ("q1", "b", 0.0), ("q1", "c", 3.0), ("q2", "d", 0.0), ("q2", "e", 2.0),
...      ("q3", "f", 0.0)], "request_id string, doc_id string, grade double")
>>> contract = Contract(k=[3])
>>> per_request = score_requests(cands, judgments, contract)
>>> pools = pool_summary(cands, judgments, contract)
>>> spec = CompareSpec(baseline="A", candidate="B", replicates=50, permutations=50)
>>> out = compare(per_request, pools, spec)
>>> out.select("comparison_kind", "k", "n_paired", "n_neither", F.round("delta_macro", 4).alias("delta"),
...            "wins", "ties", "losses").show()
+---------------+---+--------+---------+------+----+----+------+
|comparison_kind|  k|n_paired|n_neither| delta|wins|ties|losses|
+---------------+---+--------+---------+------+----+----+------+
|       reranker|  3|       2|        1|0.3897|   2|   0|     0|
+---------------+---+--------+---------+------+----+----+------+
<BLANKLINE>
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.aggregation.means import OVERALL, OVERALL_VALUE, poisson_weight
from ndcg_spark.config.contract import Contract, validate_identifier
from ndcg_spark.errors import ContractError, InputError, NdcgError
from ndcg_spark.frames import join_null_safe
from ndcg_spark.scoring.score import PER_REQUEST_COLUMNS, STAMP_COLUMNS, gain, prepare_judgments, request_keys, require_column

__all__ = [
    "COMPARISON_COLUMNS",
    "KINDS",
    "POOL_COLUMNS",
    "CompareSpec",
    "PoolMismatchError",
    "Side",
    "compare",
    "pool_summary",
    "sign_flip",
]

KINDS = ("reranker", "end_to_end", "auto")

#: Columns of :func:`pool_summary`, in order.
POOL_COLUMNS = (
    "system",
    "pool_version",
    "request_id",
    "k",
    "pool_hash",
    "n_pool",
    "n_known_positive",
    "idcg_known",
    "contract_fingerprint",
)

#: Columns of the comparison table, in order (``run_id`` first; it is the partition column).
COMPARISON_COLUMNS = (
    "run_id",
    "baseline",
    "candidate",
    "comparison_kind",
    "baseline_pool_version",
    "candidate_pool_version",
    "pools_differ",
    "ndcg_ideal",
    "slice_dimension",
    "slice_value",
    "k",
    "n_requests",
    "n_paired",
    "n_only_baseline_missing",
    "n_only_baseline_empty",
    "n_only_candidate_missing",
    "n_only_candidate_empty",
    "n_neither",
    "n_pool_differs",
    "paired_weight",
    "baseline_ndcg_macro",
    "candidate_ndcg_macro",
    "delta_macro",
    "delta_macro_ci_low",
    "delta_macro_ci_high",
    "p_value_macro",
    "baseline_ndcg_weighted",
    "candidate_ndcg_weighted",
    "delta_weighted",
    "delta_weighted_ci_low",
    "delta_weighted_ci_high",
    "p_value_weighted",
    "wins",
    "ties",
    "losses",
    "n_recall_requests",
    "baseline_recall_macro",
    "candidate_recall_macro",
    "baseline_recall_weighted",
    "candidate_recall_weighted",
    "below_min_paired",
    "min_paired",
    "tie_tolerance",
    "ci_level",
    "bootstrap_replicates",
    "permutations",
    "seed",
    "contract_fingerprint",
    "code_version",
    "created_at",
)

# A permuted statistic counts as "at least as extreme" when |T*| >= |T| - EXTREME_TOLERANCE * sum|d|:
# T and T* are sums of the same |d_i| with signs, so they agree to rounding (n * 2^-53 relative).
EXTREME_TOLERANCE = 1e-9
_MAX_REPLICATES = 100_000


class PoolMismatchError(NdcgError):
    """A reranker comparison was asked for, but the two sides ranked different candidate pools."""


def _int(value: Any, path: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (maximum is not None and value > maximum):
        bound = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
        raise ContractError(path, f"must be {bound}, got {value!r}")
    return value


def _float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ContractError(path, f"must be a finite number, got {value!r}")
    return float(value)


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ContractError(path, f"must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a system, optionally pinned to one pool version."""

    system: str
    pool_version: str | None = None

    @classmethod
    def parse(cls, value: Any, path: str) -> Side:
        """``"bm25"`` or ``{system: bm25, pool_version: pool-2026-11-28}``."""
        if isinstance(value, Side):
            return value
        if isinstance(value, str):
            return cls(_text(value, path))
        if isinstance(value, Mapping):
            for key in value:
                if key not in ("system", "pool_version"):
                    raise ContractError(f"{path}.{key}", "is not a known field; known: pool_version, system")
            if "system" not in value:
                raise ContractError(f"{path}.system", "is required")
            pool = value.get("pool_version")
            return cls(
                _text(value["system"], f"{path}.system"),
                None if pool is None else _text(pool, f"{path}.pool_version"),
            )
        raise ContractError(path, f"must be a system name or {{system: …, pool_version: …}}, got {value!r}")

    def describe(self) -> str:
        return self.system if self.pool_version is None else f"{self.system} (pool {self.pool_version})"


@dataclass(frozen=True)
class CompareSpec:
    """What to compare and how: the ``compare:`` section of the job YAML.

    Parameters
    ----------
    baseline, candidate : the two sides (:class:`Side`, or a system name); deltas are
        ``candidate − baseline``.
    kind : ``reranker`` (default: the two must have ranked the same candidate pool, else
        :class:`PoolMismatchError`), ``end_to_end`` (opt in: NDCG against one shared ideal from the
        judgments, with candidate recall) or ``auto`` (whichever the pools say, labelled).
    tie_tolerance : ``|delta| <= tie_tolerance`` is a tie (default 1e-9: float noise only).
    min_paired : slices with fewer paired requests are reported and flagged ``below_min_paired``.
    ci_level : two-sided level of the percentile bootstrap interval (YAML ``bootstrap.level``).
    replicates : paired Poisson-bootstrap replicates (YAML ``bootstrap.replicates``; 0: no interval,
        else at least 20).
    permutations : sign-flip replicates of the randomization test (0: no p-value, else at least
        19); the smallest reportable p-value is ``1 / (permutations + 1)``.
    seed : seeds both (YAML ``bootstrap.seed``); the same seed and data give the same numbers.
    slices : slice columns of the per-request table to break the comparison down by; ``None``
        (default) takes every slice column present.

    Examples
    --------
    >>> CompareSpec.from_dict({"baseline": "bm25", "candidate": "hybrid", "bootstrap": {"replicates": 200}}).replicates
    200
    >>> CompareSpec.from_dict({"baseline": "bm25", "candidate": "hybrid", "kind": "rerank"})
    Traceback (most recent call last):
    ...
    ndcg_spark.errors.ContractError: compare.kind: must be one of reranker, end_to_end, auto; got 'rerank'
    """

    baseline: Side
    candidate: Side
    kind: str = "reranker"
    tie_tolerance: float = 1e-9
    min_paired: int = 30
    ci_level: float = 0.95
    replicates: int = 1000
    permutations: int = 1000
    seed: int = 0
    slices: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "baseline", Side.parse(self.baseline, "compare.baseline"))
        object.__setattr__(self, "candidate", Side.parse(self.candidate, "compare.candidate"))
        if self.baseline == self.candidate:
            raise ContractError("compare.candidate", f"is the same side as compare.baseline ({self.baseline.describe()})")
        if self.kind not in KINDS:
            raise ContractError("compare.kind", f"must be one of {', '.join(KINDS)}; got {self.kind!r}")
        tol = _float(self.tie_tolerance, "compare.tie_tolerance")
        if tol < 0:
            raise ContractError("compare.tie_tolerance", f"must be a non-negative number, got {self.tie_tolerance!r}")
        object.__setattr__(self, "tie_tolerance", tol)
        _int(self.min_paired, "compare.min_paired", 0)
        level = _float(self.ci_level, "compare.bootstrap.level")
        if not 0 < level < 1:
            raise ContractError("compare.bootstrap.level", f"must be a number strictly between 0 and 1, got {level!r}")
        object.__setattr__(self, "ci_level", level)
        for value, path, least in ((self.replicates, "compare.bootstrap.replicates", 20),
                                   (self.permutations, "compare.permutations", 19)):
            if isinstance(value, bool) or not isinstance(value, int) or not (value == 0 or least <= value <= _MAX_REPLICATES):
                raise ContractError(path, f"must be 0 (none) or an integer from {least} to {_MAX_REPLICATES}, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not -(2**63) <= self.seed < 2**63:
            raise ContractError("compare.bootstrap.seed", f"must be a 64-bit integer, got {self.seed!r}")
        if self.slices is not None:
            if isinstance(self.slices, (str, bytes)) or not isinstance(self.slices, Sequence):
                raise ContractError("compare.slices", f"must be a list of column names, got {self.slices!r}")
            object.__setattr__(
                self, "slices", tuple(validate_identifier(s, f"compare.slices[{i}]") for i, s in enumerate(self.slices))
            )

    @classmethod
    def from_dict(cls, data: Any, path: str = "compare") -> CompareSpec:
        """Build from the ``compare:`` section (a mapping); every error names its dotted path."""
        if data is None:
            raise ContractError(path, "is required to compare: at least {baseline: …, candidate: …}")
        if not isinstance(data, Mapping):
            raise ContractError(path, f"must be a mapping, got {type(data).__name__}")
        known = {"baseline", "candidate", "kind", "tie_tolerance", "min_paired", "bootstrap", "permutations", "slices"}
        for key in data:
            if key not in known:
                raise ContractError(f"{path}.{key}", f"is not a known field; known: {', '.join(sorted(known))}")
        for key in ("baseline", "candidate"):
            if key not in data:
                raise ContractError(f"{path}.{key}", "is required (a system name)")
        boot = data.get("bootstrap") or {}
        if not isinstance(boot, Mapping):
            raise ContractError(f"{path}.bootstrap", f"must be a mapping (level, replicates, seed), got {boot!r}")
        for key in boot:
            if key not in ("level", "replicates", "seed"):
                raise ContractError(f"{path}.bootstrap.{key}", "is not a known field; known: level, replicates, seed")
        kwargs = {k: data[k] for k in ("baseline", "candidate", "kind", "tie_tolerance", "min_paired", "permutations")
                  if k in data}
        if "slices" in data:
            slices = data["slices"]
            if not isinstance(slices, list):
                raise ContractError(f"{path}.slices", f"must be a list of column names, got {slices!r}")
            kwargs["slices"] = tuple(slices)
        kwargs.update({name: boot[key] for key, name in (("level", "ci_level"), ("replicates", "replicates"),
                                                          ("seed", "seed")) if key in boot})
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The readable copy, in the YAML's shape."""
        def side(s: Side) -> Any:
            return s.system if s.pool_version is None else {"system": s.system, "pool_version": s.pool_version}

        return {
            "baseline": side(self.baseline),
            "candidate": side(self.candidate),
            "kind": self.kind,
            "tie_tolerance": self.tie_tolerance,
            "min_paired": self.min_paired,
            "bootstrap": {"level": self.ci_level, "replicates": self.replicates, "seed": self.seed},
            "permutations": self.permutations,
            "slices": None if self.slices is None else list(self.slices),
        }


# ------------------------------------------------------------------------------------- pools


def _ideal_dcg(gains: Column, k: int) -> Column:
    """DCG@k of gains already sorted descending: one log2 term per position (0 past the end);
    above k = 32 a higher-order function loops over the array instead of a k-term expression."""
    if k > 32:
        return F.aggregate(
            F.transform(F.slice(gains, 1, k), lambda g, i: g / F.log2(i + F.lit(2.0))), F.lit(0.0), lambda a, x: a + x
        )
    terms = [F.coalesce(F.get(gains, p), F.lit(0.0)) / F.lit(math.log2(p + 2.0)) for p in range(k)]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def pool_summary(
    candidates: DataFrame,
    judgments: DataFrame | None = None,
    contract: Contract | None = None,
    *,
    system: str | None = None,
    pool_version: str | None = None,
) -> DataFrame:
    """What the pool guard needs, per system × pool version × request × K (:data:`POOL_COLUMNS`).

    Parameters
    ----------
    candidates, judgments, contract, system, pool_version : as given to
        :func:`~ndcg_spark.scoring.score.score_requests` for the run being compared.

    Returns
    -------
    DataFrame
        ``pool_hash`` (``xxhash64`` of the request's doc ids, sorted: equal sets, equal hash),
        ``n_pool`` (candidate rows; must equal the per-request ``n_candidates``),
        ``n_known_positive`` (known documents of the request with grade > 0) and ``idcg_known``
        (IDCG@K of every known judged document: the shared ideal of an end-to-end comparison).
        The *known* judgments are the judgments table; for a pre-joined candidates table (no
        judgments table) they are the judged candidates of every system and pool pooled together
        (a document's highest grade), the classic pooled-judgments view. The positives *in* a pool
        are the per-request table's ``n_positive``; candidates and judgments are not joined here.
    """
    contract = (contract or Contract()).resolve(candidates.columns)
    cols = contract.columns
    require_column(candidates, cols.request_id, "request_id", "candidates")
    require_column(candidates, cols.doc_id, "doc_id", "candidates")
    if judgments is None:
        require_column(candidates, cols.grade, "grade", "candidates (no judgments table given)", numeric=True)
    rows = candidates.select(
        *request_keys(candidates, contract, system, pool_version),
        F.col(cols.doc_id).cast("string").alias("doc_id"),
        *([F.col(cols.grade).cast("double").alias("grade")] if judgments is None else []),
    )
    if judgments is not None:
        known = prepare_judgments(judgments, contract)
    else:
        known = rows.select("request_id", "doc_id", "grade")
    known = (
        known.filter(F.col("grade").isNotNull() & F.col("request_id").isNotNull())
        .groupBy("request_id", "doc_id")
        .agg(F.max("grade").alias("grade"))
        .groupBy("request_id")
        .agg(
            F.count(F.when(F.col("grade") > 0, True)).alias("n_known_positive"),
            F.sort_array(F.collect_list(gain(F.col("grade"), contract.gain)), asc=False).alias("ideal"),
        )
    )
    pools = rows.groupBy("system", "pool_version", "request_id").agg(
        F.xxhash64(F.array_sort(F.collect_list(F.coalesce(F.col("doc_id"), F.lit(""))))).alias("pool_hash"),
        F.count(F.lit(1)).alias("n_pool"),
    )
    per_k = F.array(*[F.struct(F.lit(k).alias("k"), _ideal_dcg(F.col("ideal"), k).alias("idcg_known")) for k in contract.k])
    return (
        pools.join(known, "request_id", "left")
        .withColumn("n_known_positive", F.coalesce(F.col("n_known_positive"), F.lit(0)).cast("long"))
        .withColumn("ideal", F.coalesce(F.col("ideal"), F.array().cast("array<double>")))
        .select("*", F.explode(per_k).alias("m"))
        .select(
            "system",
            "pool_version",
            "request_id",
            "m.k",
            "pool_hash",
            "n_pool",
            "n_known_positive",
            "m.idcg_known",
            F.lit(contract.fingerprint).alias("contract_fingerprint"),
        )
    )


# ------------------------------------------------------------------------------------- compare


def _side_rows(per_request: DataFrame, side: Side) -> DataFrame:
    cond = F.col("system") == F.lit(side.system)
    if side.pool_version is not None:
        cond = cond & (F.col("pool_version") == F.lit(side.pool_version))
    return per_request.filter(cond)


def _describe_sides(per_request: DataFrame, spec: CompareSpec) -> dict[str, dict[str, Any]]:
    """Pool version, contract and run of each side (a handful of distinct values to the driver)."""
    info: dict[str, dict[str, Any]] = {}
    distinct = (
        per_request.filter(F.col("system").isin(spec.baseline.system, spec.candidate.system))
        .select("system", "pool_version", "contract_fingerprint", "run_id", "k")
        .distinct()
        .limit(10_000)
        .collect()
    )
    for name, side in (("baseline", spec.baseline), ("candidate", spec.candidate)):
        found = [
            r for r in distinct
            if r.system == side.system and (side.pool_version is None or r.pool_version == side.pool_version)
        ]
        if not found:
            present = sorted(
                f"{r.system} (pool {r.pool_version})"
                for r in per_request.select("system", "pool_version").distinct().limit(50).collect()
            )
            raise InputError(
                f"compare.{name}: no per-request rows for {side.describe()}; present: {', '.join(present) or 'none'}"
            )
        pools = sorted({r.pool_version for r in found}, key=str)
        if len(pools) > 1:
            raise InputError(
                f"compare.{name}: {side.system} was scored over several pool versions ({', '.join(map(str, pools))}); "
                f"pick one with compare.{name}: {{system: {side.system}, pool_version: …}}"
            )
        runs = sorted({r.run_id for r in found}, key=str)
        if len(runs) > 1:
            raise InputError(f"compare: the per-request rows span several runs ({', '.join(runs)}); pass one run")
        prints = sorted({r.contract_fingerprint for r in found}, key=str)
        if len(prints) > 1:
            raise InputError(f"compare.{name}: rows of several contracts ({', '.join(prints)}); pass one contract's rows")
        info[name] = {
            "pool_version": pools[0],
            "run_id": runs[0],
            "contract_fingerprint": prints[0],
            "ks": {r.k for r in found},
        }
    b, c = info["baseline"], info["candidate"]
    if b["contract_fingerprint"] != c["contract_fingerprint"]:
        raise InputError(
            f"compare: the two sides were scored under different contracts ({b['contract_fingerprint']} vs "
            f"{c['contract_fingerprint']}); NDCGs of different contracts are different numbers — score both "
            "under one contract"
        )
    if b["run_id"] != c["run_id"]:
        raise InputError(f"compare: the two sides come from different runs ({b['run_id']} vs {c['run_id']})")
    info["ks"] = sorted(set(b.pop("ks")) | set(c.pop("ks")))
    return info


def _slice_columns(per_request: DataFrame, spec: CompareSpec) -> tuple[str, ...]:
    known = set(PER_REQUEST_COLUMNS) | set(STAMP_COLUMNS)
    if spec.slices is None:
        return tuple(c for c in per_request.columns if c not in known)
    for i, s in enumerate(spec.slices):
        if s not in per_request.columns:
            raise InputError(f"compare.slices[{i}]: the per-request table has no column {s!r}")
        if s in known:
            raise InputError(f"compare.slices[{i}]: {s!r} is a per-request table column, not a slice")
    return spec.slices


def _side(per_request: DataFrame, pools: DataFrame, side: Side, pool_version: Any, prefix: str, slices: tuple[str, ...]) -> DataFrame:
    """One side's rows joined to its pool summary, columns prefixed ``b_`` or ``c_``."""
    rows = _side_rows(per_request, side).select(
        "request_id", "k", "dcg", "ndcg", "empty_ideal", "n_candidates", "n_positive", "weight", *slices
    )
    pool_cond = F.col("system") == F.lit(side.system)
    pool_cond = pool_cond & (
        F.col("pool_version").isNull() if pool_version is None else F.col("pool_version") == F.lit(pool_version)
    )
    pool = pools.filter(pool_cond).select(
        "request_id", "k", "pool_hash", "n_pool", "n_known_positive", "idcg_known",
        F.col("contract_fingerprint").alias("pool_fingerprint"), F.lit(True).alias("has_pool"),
    )
    joined = rows.join(pool, ["request_id", "k"], "left")
    keep = ("request_id", "k")
    return joined.select(*keep, *[F.col(c).alias(f"{prefix}{c}") for c in joined.columns if c not in keep])


def sign_flip(seed: int, replicate: Column, request_id: Column) -> Column:
    """The ±1 sign of one request in one sign-flip replicate: a pure function of the three keys.

    The top bit of ``xxhash64(seed as bigint, "sign_flip", replicate as int, request_id as string)``.
    Keyed by the request only (not the system), so both sides of a pair flip together.

    >>> flips = spark.range(20000).select(sign_flip(7, F.lit(1), F.col("id").cast("string")).alias("s"))
    >>> flips.select(F.round(F.avg("s"), 1).alias("mean"), F.round(F.variance("s"), 1).alias("var")).show()
    +----+---+
    |mean|var|
    +----+---+
    | 0.0|1.0|
    +----+---+
    <BLANKLINE>
    """
    h = F.xxhash64(F.lit(int(seed)).cast("long"), F.lit("sign_flip"), replicate.cast("int"), request_id.cast("string"))
    return F.lit(1) - F.lit(2) * F.shiftrightunsigned(h, 63).cast("int")


def _ratio(num: Column, den: Column) -> Column:
    return F.when(den > 0, num / den)


def compare(
    per_request: DataFrame,
    pools: DataFrame,
    spec: CompareSpec | None = None,
    *,
    baseline: str | Side | None = None,
    candidate: str | Side | None = None,
    created_at: dt.datetime | None = None,
    code_version: str | None = None,
    **options: Any,
) -> DataFrame:
    """Compare ``spec.candidate`` with ``spec.baseline``: one row per slice × K (:data:`COMPARISON_COLUMNS`).

    Parameters
    ----------
    per_request : the per-request table of one run (stage 1), both systems under one contract.
    pools : :func:`pool_summary` of the same candidates and judgments.
    spec : what to compare and how (:class:`CompareSpec`); or, instead, ``baseline=``,
        ``candidate=`` and any other :class:`CompareSpec` field as keywords.
    created_at : stamped on every row (default: now, UTC).
    code_version : stamped on every row (default: the package version, as in the aggregates).

    Returns
    -------
    DataFrame
        The overall row (``slice_dimension = 'overall'``, ``slice_value = 'all'``) and one row per
        value of each slice column, for each K. A request is *paired* when both sides can score it
        (a row on each side, neither an empty ideal); deltas, intervals, p-values and win / tie /
        loss are over paired requests; the ``n_only_*`` and ``n_neither`` columns count the rest.

    Raises
    ------
    PoolMismatchError
        ``spec.kind == 'reranker'`` and the sides differ in pool version or in the candidate
        set of a request they share.
    InputError
        a side is missing, spans several pool versions / runs / contracts, or the pool summary
        does not match the per-request table.

    Notes
    -----
    *Interval*: percentile interval of ``spec.replicates`` paired Poisson-bootstrap
    replicates (each request drawn with a Poisson(1) count, the same for both sides).
    *p-value*: two-sided sign-flip randomization test of "the two sides are exchangeable within a
    request": ``(1 + #{r : |T_r| >= |T|}) / (R + 1)`` with ``T = sum(d_i)`` (macro) or
    ``sum(w_i d_i)`` (weighted) and ``T_r`` the same sum with each request's delta multiplied by a
    random sign; ties up to :data:`EXTREME_TOLERANCE` × sum |d_i| count as extreme.
    *Recall*: over the requests present on both sides that have a known positive.
    *Eager*: unlike most functions here, ``compare`` runs its Spark jobs when called (the pool
    guard must decide before anything is computed, and its cached inputs are released before it
    returns); the result is a small DataFrame of one row per slice × K built from the collected
    rows. Nothing per request is collected.
    """
    from ndcg_spark import __version__

    if spec is None:
        spec = CompareSpec(baseline=baseline, candidate=candidate, **options)
    elif baseline is not None or candidate is not None or options:
        raise TypeError("compare: give either spec or baseline=/candidate=/options, not both")
    for name in ("system", "pool_version", "request_id", "k", "dcg", "ndcg", "empty_ideal", "n_candidates",
                 "n_positive", "weight", "run_id", "contract_fingerprint"):
        if name not in per_request.columns:
            raise InputError(f"compare: the per-request table has no column {name!r} (is it a stage-1 table?)")
    for name in POOL_COLUMNS:
        if name not in pools.columns:
            raise InputError(f"compare: the pool summary has no column {name!r} (build it with pool_summary())")
    created_at = created_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    code_version = code_version or __version__
    info = _describe_sides(per_request, spec)
    slices = _slice_columns(per_request, spec)
    b_pool, c_pool = info["baseline"]["pool_version"], info["candidate"]["pool_version"]

    base = _side(per_request, pools, spec.baseline, b_pool, "b_", slices)
    cand = _side(per_request, pools, spec.candidate, c_pool, "c_", slices)
    both = base.join(cand, ["request_id", "k"], "full")
    b_in, c_in = F.col("b_empty_ideal").isNotNull(), F.col("c_empty_ideal").isNotNull()
    common = b_in & c_in
    differs = common & (
        ~F.col("b_pool_hash").eqNullSafe(F.col("c_pool_hash")) | ~F.col("b_n_pool").eqNullSafe(F.col("c_n_pool"))
    )
    # Used by the guard, the point estimates and the replicates: computed once, released below.
    both = both.withColumn("b_in", b_in).withColumn("c_in", c_in).withColumn("pool_differs", differs).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    try:
        return _compare_prepared(both, spec, info, slices, created_at, code_version)
    finally:
        both.unpersist()


def _compare_prepared(
    both: DataFrame,
    spec: CompareSpec,
    info: dict[str, Any],
    slices: tuple[str, ...],
    created_at: dt.datetime,
    code_version: str,
) -> DataFrame:
    b_pool, c_pool = info["baseline"]["pool_version"], info["candidate"]["pool_version"]
    common = F.col("b_in") & F.col("c_in")

    # --- the pool guard: one small aggregation to the driver
    check = both.agg(
        F.count(F.when((F.col("b_in") & F.col("b_has_pool").isNull()) | (F.col("c_in") & F.col("c_has_pool").isNull()), 1)).alias("no_pool"),
        F.count(F.when((F.col("b_in") & (F.col("b_n_pool") != F.col("b_n_candidates")))
                       | (F.col("c_in") & (F.col("c_n_pool") != F.col("c_n_candidates"))), 1)).alias("size_mismatch"),
        F.countDistinct(F.when(F.col("pool_differs"), F.col("request_id"))).alias("requests_differ"),
        F.countDistinct(F.when(common, F.col("request_id"))).alias("requests_common"),
        F.min(F.when(F.col("pool_differs"), F.col("request_id"))).alias("example"),
        F.array_sort(F.collect_set(F.coalesce(F.col("b_pool_fingerprint"), F.col("c_pool_fingerprint")))).alias(
            "pool_fingerprints"
        ),
    ).first()
    fingerprint = info["baseline"]["contract_fingerprint"]
    if check["pool_fingerprints"] and set(check["pool_fingerprints"]) != {fingerprint}:
        others = ", ".join(sorted(set(check["pool_fingerprints"]) - {fingerprint}))
        raise InputError(
            f"compare: the per-request rows were scored under contract {fingerprint} but the pool summary was "
            f"built under {others}; build it with the run's contract (did the config change since the run?)"
        )
    if check["no_pool"] or check["size_mismatch"]:
        raise InputError(
            f"compare: the pool summary does not match the per-request table ({check['no_pool']} row(s) without a "
            f"pool, {check['size_mismatch']} with another candidate count): build it from the same candidates, "
            "judgments and contract as the run (did the inputs change since the run?)"
        )
    versions_differ = b_pool != c_pool
    pools_differ = versions_differ or check["requests_differ"] > 0
    if pools_differ and spec.kind == "reranker":
        reasons = []
        if versions_differ:
            reasons.append(f"their pool versions differ ({b_pool} vs {c_pool})")
        if check["requests_differ"]:
            reasons.append(
                f"{check['requests_differ']:,} of the {check['requests_common']:,} requests they share have different "
                f"candidate sets (e.g. request {check['example']!r})"
            )
        raise PoolMismatchError(
            f"compare: refusing a reranker comparison of {spec.candidate.describe()} against "
            f"{spec.baseline.describe()}: {' and '.join(reasons)}. A reranker comparison assumes both ranked the "
            "same candidates; here a difference in NDCG can come from the pool (what was retrieved) rather than "
            "from the ranking. Set compare.kind: end_to_end to compare them end to end — NDCG against one "
            "shared ideal from the judgments, with each side's candidate recall reported — or compare two "
            "rankings of the same pool."
        )
    kind = "end_to_end" if spec.kind == "end_to_end" or pools_differ else "reranker"

    # --- per request x K: each side's NDCG under the comparison's denominator
    if kind == "end_to_end":
        def score(p: str) -> Column:
            return F.when(F.col(f"{p}idcg_known") > 0, F.col(f"{p}dcg") / F.col(f"{p}idcg_known"))
    else:
        def score(p: str) -> Column:
            return F.when(~F.col(f"{p}empty_ideal"), F.col(f"{p}ndcg"))
    b_ok = F.col("b_in") & score("b_").isNotNull()
    c_ok = F.col("c_in") & score("c_").isNotNull()
    paired = b_ok & c_ok
    known = F.coalesce(F.col("b_n_known_positive"), F.col("c_n_known_positive"))
    recall_req = common & (known > 0)
    rows = both.select(
        "request_id",
        "k",
        *[F.coalesce(F.col(f"b_{s}"), F.col(f"c_{s}")).alias(s) for s in slices],
        F.coalesce(F.col("b_weight"), F.col("c_weight")).alias("w"),
        paired.alias("paired"),
        F.when(paired, score("b_")).alias("b"),
        F.when(paired, score("c_")).alias("c"),
        F.when(paired, score("c_") - score("b_")).alias("d"),
        (b_ok & ~F.col("c_in")).alias("only_b_missing"),
        (b_ok & F.col("c_in") & ~c_ok).alias("only_b_empty"),
        (c_ok & ~F.col("b_in")).alias("only_c_missing"),
        (c_ok & F.col("b_in") & ~b_ok).alias("only_c_empty"),
        (~b_ok & ~c_ok).alias("neither"),
        F.col("pool_differs"),
        recall_req.alias("recall_req"),
        F.when(recall_req, F.col("b_n_positive") / known).alias("b_recall"),
        F.when(recall_req, F.col("c_n_positive") / known).alias("c_recall"),
    )

    groupings = F.array(
        F.struct(F.lit(OVERALL).alias("dim"), F.lit(OVERALL_VALUE).alias("val")),
        *[F.struct(F.lit(s).alias("dim"), F.col(s).cast("string").alias("val")) for s in slices],
    )
    group = ["slice_dimension", "slice_value", "k"]
    tol = F.lit(spec.tie_tolerance)
    d, w = F.col("d"), F.col("w")

    def n(cond: Column) -> Column:
        return F.count(F.when(cond, True))

    def mean(x: Column, weighted: bool = False) -> Column:
        return _ratio(F.sum(x * w), F.sum(F.when(x.isNotNull(), w))) if weighted else F.avg(x)

    point = (
        rows.select("*", F.explode(groupings).alias("g"))
        .withColumn("slice_dimension", F.col("g.dim"))
        .withColumn("slice_value", F.col("g.val"))
        .groupBy(*group)
        .agg(
            F.count(F.lit(1)).alias("n_requests"),
            n(F.col("paired")).alias("n_paired"),
            n(F.col("only_b_missing")).alias("n_only_baseline_missing"),
            n(F.col("only_b_empty")).alias("n_only_baseline_empty"),
            n(F.col("only_c_missing")).alias("n_only_candidate_missing"),
            n(F.col("only_c_empty")).alias("n_only_candidate_empty"),
            n(F.col("neither")).alias("n_neither"),
            n(F.col("pool_differs")).alias("n_pool_differs"),
            F.sum(F.when(F.col("paired"), w)).alias("paired_weight"),
            mean(F.col("b")).alias("baseline_ndcg_macro"),
            mean(F.col("c")).alias("candidate_ndcg_macro"),
            mean(d).alias("delta_macro"),
            mean(F.col("b"), True).alias("baseline_ndcg_weighted"),
            mean(F.col("c"), True).alias("candidate_ndcg_weighted"),
            mean(d, True).alias("delta_weighted"),
            n(d > tol).alias("wins"),
            n(F.abs(d) <= tol).alias("ties"),
            n(d < -tol).alias("losses"),
            n(F.col("recall_req")).alias("n_recall_requests"),
            mean(F.col("b_recall")).alias("baseline_recall_macro"),
            mean(F.col("c_recall")).alias("candidate_recall_macro"),
            mean(F.col("b_recall"), True).alias("baseline_recall_weighted"),
            mean(F.col("c_recall"), True).alias("candidate_recall_weighted"),
            F.sum(d).alias("t_macro"),
            F.sum(w * d).alias("t_weighted"),
            F.sum(F.abs(d)).alias("abs_macro"),
            F.sum(F.abs(w * d)).alias("abs_weighted"),
        )
    )

    B, R = spec.replicates, spec.permutations
    lo, hi = (1.0 - spec.ci_level) / 2.0, 1.0 - (1.0 - spec.ci_level) / 2.0
    if max(B, R) > 0:
        r = F.col("r")

        def extreme(t: str, obs: str, scale: str) -> Column:
            return F.abs(F.col(t)) >= F.abs(F.col(obs)) - F.lit(EXTREME_TOLERANCE) * F.col(scale)

        stats = (
            join_null_safe(
                _replicates(rows, slices, info["ks"], spec),
                point.select(*group, "t_macro", "t_weighted", "abs_macro", "abs_weighted"),
                group,
            )
            .groupBy(*group)
            .agg(
                F.percentile(F.when(r <= B, _ratio(F.col("s_cd"), F.col("s_c"))), [lo, hi]).alias("ci_m"),
                F.percentile(F.when(r <= B, _ratio(F.col("s_cwd"), F.col("s_cw"))), [lo, hi]).alias("ci_w"),
                F.count(F.when((r <= R) & extreme("t_sd", "t_macro", "abs_macro"), True)).alias("x_m"),
                F.count(F.when((r <= R) & extreme("t_swd", "t_weighted", "abs_weighted"), True)).alias("x_w"),
            )
        )
        out = join_null_safe(point, stats, group, "left")
    else:
        out = point.select("*", *[F.lit(None).alias(c) for c in ("ci_m", "ci_w", "x_m", "x_w")])

    def p_value(extremes: str) -> Column:
        if R == 0:
            return F.lit(None).cast("double")
        return F.when(F.col("n_paired") > 0, (F.lit(1.0) + F.coalesce(F.col(extremes), F.lit(0))) / F.lit(R + 1.0))

    def ci(name: str, i: int) -> Column:
        return F.lit(None).cast("double") if B == 0 else F.col(name).getItem(i).cast("double")

    stamps = {
        "run_id": F.lit(info["baseline"]["run_id"]).cast("string"),
        "baseline": F.lit(spec.baseline.system),
        "candidate": F.lit(spec.candidate.system),
        "comparison_kind": F.lit(kind),
        "baseline_pool_version": F.lit(b_pool).cast("string"),
        "candidate_pool_version": F.lit(c_pool).cast("string"),
        "pools_differ": F.lit(pools_differ),
        "ndcg_ideal": F.lit("judgments" if kind == "end_to_end" else "contract"),
        "delta_macro_ci_low": ci("ci_m", 0),
        "delta_macro_ci_high": ci("ci_m", 1),
        "p_value_macro": p_value("x_m"),
        "delta_weighted_ci_low": ci("ci_w", 0),
        "delta_weighted_ci_high": ci("ci_w", 1),
        "p_value_weighted": p_value("x_w"),
        "below_min_paired": F.col("n_paired") < F.lit(spec.min_paired),
        "min_paired": F.lit(spec.min_paired).cast("int"),
        "tie_tolerance": F.lit(spec.tie_tolerance).cast("double"),
        "ci_level": F.lit(spec.ci_level if B else None).cast("double"),
        "bootstrap_replicates": F.lit(B).cast("int"),
        "permutations": F.lit(R).cast("int"),
        "seed": F.lit(spec.seed).cast("long"),
        "contract_fingerprint": F.lit(info["baseline"]["contract_fingerprint"]),
        "code_version": F.lit(code_version),
        "created_at": F.lit(created_at).cast("timestamp"),
    }
    out = out.select(*[stamps[c].alias(c) if c in stamps else F.col(c) for c in COMPARISON_COLUMNS])
    # One row per slice x K: small. Materialise it so the cached inputs can be released.
    result = out.orderBy(F.col("slice_dimension") != F.lit(OVERALL), "slice_dimension", "slice_value", "k")
    return both.sparkSession.createDataFrame(result.collect(), schema=result.schema)


def _replicates(rows: DataFrame, slices: tuple[str, ...], ks: Sequence[int], spec: CompareSpec) -> DataFrame:
    """Per slice × K × replicate ``r``: the bootstrap and sign-flip sums over paired requests.

    Each paired request is expanded into ``max(B, R)`` replicates once, carrying its deltas at
    every K side by side (so the expansion is not repeated per K). The sums are first taken per
    combination of slice values (few groups), then rolled up to the overall row and to each slice
    dimension in one small pass, so the expansion is not repeated per slice dimension either.
    """
    n_rep = max(spec.replicates, spec.permutations)
    r, request = F.col("r"), F.col("request_id")
    count = F.when(r <= spec.replicates, poisson_weight(spec.seed, r, request))
    sign = F.when(r <= spec.permutations, sign_flip(spec.seed, r, request))
    w = F.col("w")
    by_request = (
        rows.filter(F.col("paired"))
        .groupBy("request_id", *slices)
        .agg(F.first("w").alias("w"), *[F.first(F.when(F.col("k") == k, F.col("d")), ignorenulls=True).alias(f"d{i}") for i, k in enumerate(ks)])
    )
    expanded = by_request.select(
        "request_id", *slices, "w", *[f"d{i}" for i in range(len(ks))],
        F.explode(F.sequence(F.lit(1), F.lit(n_rep))).alias("r"),
    ).select("*", count.alias("c"), sign.alias("s"))
    names = ("s_c", "s_cd", "s_cw", "s_cwd", "t_sd", "t_swd")
    sums = []
    for i in range(len(ks)):
        d, c, sg = F.col(f"d{i}"), F.col("c"), F.col("s")
        parts = (F.when(d.isNotNull(), c), c * d, F.when(d.isNotNull(), c * w), c * w * d, sg * d, sg * w * d)
        sums += [F.sum(x).alias(f"{name}_{i}") for name, x in zip(names, parts)]
    combos = expanded.groupBy(*slices, "r").agg(*sums)
    groupings = F.array(
        F.struct(F.lit(OVERALL).alias("dim"), F.lit(OVERALL_VALUE).alias("val")),
        *[F.struct(F.lit(s).alias("dim"), F.col(s).cast("string").alias("val")) for s in slices],
    )
    rolled = (
        combos.select("*", F.explode(groupings).alias("g"))
        .groupBy(F.col("g.dim").alias("slice_dimension"), F.col("g.val").alias("slice_value"), "r")
        .agg(*[F.sum(f"{name}_{i}").alias(f"{name}_{i}") for i in range(len(ks)) for name in names])
    )
    per_k = F.array(
        *[F.struct(F.lit(k).alias("k"), *[F.col(f"{name}_{i}").alias(name) for name in names]) for i, k in enumerate(ks)]
    )
    return rolled.select("slice_dimension", "slice_value", "r", F.explode(per_k).alias("m")).select(
        "slice_dimension", "slice_value", "m.k", "r", *[f"m.{name}" for name in names]
    )


# ------------------------------------------------------------------------------------- summary


def format_comparison(rows: Sequence[Mapping[str, Any]]) -> str:
    """A readable summary of a comparison table (its rows as mappings): the CLI's closing lines.

    The overall row of every K, the end-to-end notice when the pools differ (with candidate recall
    on both sides), and per slice dimension the slice with the smallest macro delta at the largest K.
    """
    if not rows:
        return "comparison: no rows"
    first = rows[0]
    b, c = first["baseline"], first["candidate"]
    overall = sorted((r for r in rows if r["slice_dimension"] == OVERALL), key=lambda r: r["k"])
    top = overall[-1] if overall else first

    def num(x: Any, fmt: str = "{:.4f}") -> str:
        return "n/a" if x is None else fmt.format(x)

    def signed(x: Any) -> str:
        return num(x, "{:+.4f}")

    def interval(lo: Any, hi: Any) -> str:
        return "" if lo is None else f" [{signed(lo)}, {signed(hi)}]"

    lines = [
        f"comparison of run {first['run_id']}: {c} (candidate) vs {b} (baseline): {first['comparison_kind']} comparison",
        f"  pools: {b} {first['baseline_pool_version']}, {c} {first['candidate_pool_version']}; "
        + (f"{top['n_pool_differs']:,} shared request(s) with different candidate sets"
           if first["pools_differ"] else "same candidates for every shared request"),
        f"  contract {first['contract_fingerprint']}; NDCG ideal: {first['ndcg_ideal']}; "
        f"{first['bootstrap_replicates']} bootstrap replicates"
        + (f" ({first['ci_level']:.0%} intervals)" if first["ci_level"] is not None else "")
        + f", {first['permutations']} sign flips, seed {first['seed']}, tie if |delta| <= {first['tie_tolerance']:g}",
    ]
    if first["comparison_kind"] == "end_to_end":
        lines += [
            "",
            "  NOTICE: END-TO-END comparison, not a reranker comparison."
            + (" The two sides ranked different candidate pools, so a difference below can come from what was"
               " retrieved as well as from how it was ranked." if first["pools_differ"] else
               " (Requested; the two sides ranked the same candidates.)"),
            "  Both sides' NDCG uses one shared ideal from the judgments. Candidate recall (positives in the pool /"
            f" all known positives, {top['n_recall_requests']:,} shared requests with a known positive):",
            f"    {b:<12} macro {num(top['baseline_recall_macro'])}  weighted {num(top['baseline_recall_weighted'])}",
            f"    {c:<12} macro {num(top['candidate_recall_macro'])}  weighted {num(top['candidate_recall_weighted'])}",
            "",
        ]
    lines.append(
        f"  {'k':>3} {'paired':>8} {b[:8]:>8} {c[:8]:>8}  {'delta macro [interval]':<27} {'p':>6}  "
        f"{'delta weighted [interval]':<27} {'p':>6}  win/tie/loss"
    )
    for r in overall:
        lines.append(
            f"  {r['k']:>3} {r['n_paired']:>8,} {num(r['baseline_ndcg_macro']):>8} {num(r['candidate_ndcg_macro']):>8}  "
            f"{signed(r['delta_macro']) + interval(r['delta_macro_ci_low'], r['delta_macro_ci_high']):<27} "
            f"{num(r['p_value_macro'], '{:.3f}'):>6}  "
            f"{signed(r['delta_weighted']) + interval(r['delta_weighted_ci_low'], r['delta_weighted_ci_high']):<27} "
            f"{num(r['p_value_weighted'], '{:.3f}'):>6}  "
            f"{r['wins']:,}/{r['ties']:,}/{r['losses']:,}"
        )
    lines.append(
        f"  requests: {top['n_requests']:,} in all; {top['n_paired']:,} paired; {b} only: "
        f"{top['n_only_baseline_missing']:,} ({c} has no row) + {top['n_only_baseline_empty']:,} ({c}'s ideal empty); "
        f"{c} only: {top['n_only_candidate_missing']:,} + {top['n_only_candidate_empty']:,}; "
        f"neither: {top['n_neither']:,}"
    )
    k = top["k"]
    dims = sorted({r["slice_dimension"] for r in rows if r["slice_dimension"] != OVERALL})
    if dims:
        lines.append(f"  smallest macro delta per slice dimension at k={k} (* fewer than {first['min_paired']} paired):")
    for dim in dims:
        cells = [r for r in rows if r["slice_dimension"] == dim and r["k"] == k and r["delta_macro"] is not None]
        if not cells:
            continue
        worst = min(cells, key=lambda r: (r["below_min_paired"], r["delta_macro"]))
        lines.append(
            f"    {dim}={worst['slice_value']}{'*' if worst['below_min_paired'] else ''}: "
            f"{signed(worst['delta_macro'])}{interval(worst['delta_macro_ci_low'], worst['delta_macro_ci_high'])}, "
            f"p {num(worst['p_value_macro'], '{:.3f}')}, {worst['n_paired']:,} paired"
        )
    return "\n".join(lines)
