"""Stage 2: from the per-request table to means that travel with their denominators.

For every run x contract x pool version x system x K and every *slice* -- the overall slice
and each value of each declared slice dimension -- :func:`aggregate` computes the macro mean
NDCG (every eligible request counts once), the traffic-weighted mean NDCG, the counts behind
them (eligible, empty-ideal and all requests, summed weights), the mean share of unjudged
candidates in the top K, and a Poisson-bootstrap confidence interval for both means.
:func:`audit` then names, per slice dimension, the worst slice and its gap to the overall mean.

Everything is native Spark: nothing per request reaches the driver, and the only driver-side
collect is the list of run x contract x pool x system x K groups (a handful of rows).

Exact and reproducible
    Sums are taken in 64-bit integer fixed point (:class:`~ndcg_spark.metrics.exact.FixedPoint`: each term is rounded
    once, to 2^-56 of the largest possible term, then added exactly), so a mean does not depend
    on the order Spark happens to add rows in: the same per-request table and the same
    :class:`AggregateSpec` give bit-identical aggregates, whatever the partitioning.
    Bootstrap counts are a pure function of ``(seed, replicate, request_id)`` (``xxhash64`` ->
    uniform -> Poisson(1) by inverse CDF), never of ``rand()``.

One resample of requests
    The sampling unit is the request: in replicate ``r`` a request carries the same Poisson
    count for every system, K, pool version and slice, so one replicate is one coherent
    resampled set of requests (and a paired comparison can reuse the same draws).

Examples
--------
>>> from ndcg_spark import Attributes, Contract, score_requests
>>> cands = spark.createDataFrame(
...     [("q1", "a", 1, 3.0, 9.0), ("q1", "b", 2, 0.0, 9.0),
...      ("q2", "a", 1, 0.0, 1.0), ("q2", "b", 2, 1.0, 1.0),
...      ("q3", "a", 1, 0.0, 1.0)],
...     "request_id string, doc_id string, position int, grade double, weight double")
>>> per_request = score_requests(cands, contract=Contract(k=[2]),
...                              attributes=Attributes(weight="weight"))
>>> out = aggregate(per_request, AggregateSpec(min_eligible=3, replicates=0))
>>> out.select("slice_dimension", F.round("macro_ndcg", 4).alias("macro"),
...            F.round("weighted_ndcg", 4).alias("weighted"), "n_eligible", "n_empty_ideal",
...            "n_requests", "below_min_eligible").show()
+---------------+------+--------+----------+-------------+----------+------------------+
|slice_dimension| macro|weighted|n_eligible|n_empty_ideal|n_requests|below_min_eligible|
+---------------+------+--------+----------+-------------+----------+------------------+
|        overall|0.8155|  0.9631|         2|            1|         3|              true|
+---------------+------+--------+----------+-------------+----------+------------------+
<BLANKLINE>

``q1`` is perfect (NDCG 1.0) and ``q2`` is not (0.6309); ``q3`` has no positive grade, so it is
set aside and counted. The macro mean is (1.0 + 0.6309) / 2; the weighted mean counts ``q1``
nine times as often as ``q2``: (9 * 1.0 + 1 * 0.6309) / 10.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.config.bootstrap import (
    MAX_BUCKETS,
    MAX_REPLICATES,
    MIN_BUCKETS,
    MIN_REPLICATES,
    bootstrap_fields,
    quantiles,
    require_level,
    require_replicates,
    require_seed,
)
from ndcg_spark.config.checks import is_int
from ndcg_spark.config.contract import Contract, validate_identifier
from ndcg_spark.errors import ContractError, InputError
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.exact import FixedPoint
from ndcg_spark.metrics.resampling import expand_replicates, group_unit, poisson_weight, random_group
from ndcg_spark.metrics.slices import OVERALL, OVERALL_VALUE, percentile_interval, roll_up

#: What one aggregate row is "per" (besides the slice): never pooled across any of these.
GROUP_KEYS = ("run_id", "contract_fingerprint", "pool_version", "system", "k")

#: The columns of the aggregate table, in order.
AGGREGATE_COLUMNS = (
    "run_id",
    "system",
    "pool_version",
    "k",
    "slice_dimension",
    "slice_value",
    "macro_ndcg",
    "macro_ci_low",
    "macro_ci_high",
    "weighted_ndcg",
    "weighted_ci_low",
    "weighted_ci_high",
    "n_eligible",
    "n_empty_ideal",
    "n_requests",
    "weight_eligible",
    "weight_all",
    "unjudged_share",
    "below_min_eligible",
    "min_eligible",
    "ci_level",
    "contract_fingerprint",
    "code_version",
    "created_at",
)

#: The columns of the audit table, in order.
AUDIT_COLUMNS = (
    "run_id",
    "system",
    "pool_version",
    "k",
    "slice_dimension",
    "n_slices",
    "n_slices_ranked",
    "worst_slice_value",
    "worst_macro_ndcg",
    "worst_ci_low",
    "worst_ci_high",
    "worst_n_eligible",
    "overall_macro_ndcg",
    "gap_to_overall",
    "ci_below_overall",
    "min_eligible",
    "ci_level",
    "contract_fingerprint",
    "code_version",
    "created_at",
)

#: The run-metadata table: one row per run.
RUN_METADATA_SCHEMA = T.StructType(
    [
        T.StructField("run_id", T.StringType(), False),
        T.StructField("contract_fingerprint", T.StringType(), False),
        T.StructField("contract", T.StringType(), False),
        T.StructField("aggregate_spec", T.StringType(), False),
        T.StructField("row_counts", T.MapType(T.StringType(), T.LongType(), False), False),
        T.StructField("code_version", T.StringType(), False),
        T.StructField("created_at", T.TimestampType(), False),
    ]
)

_REQUIRED = (
    "run_id",
    "contract_fingerprint",
    "pool_version",
    "system",
    "request_id",
    "k",
    "ndcg",
    "empty_ideal",
    "n_candidates",
    "n_unjudged_in_top_k",
    "weight",
)
#: bootstrap groups pivoted into columns per pass over the data: 8 keeps the generated code of
#: the hot loop under the JVM's 8 KB JIT limit (measured: 3.8 KB for 8 groups)
_GROUPS_PER_PASS = 8


# --------------------------------------------------------------------------------------- spec
@dataclass(frozen=True)
class AggregateSpec:
    """The declared choices of stage 2 (``aggregate:`` in the job YAML).

    Parameters
    ----------
    slices : slice dimensions to aggregate by, besides the overall slice; each must be a column
        of the per-request table (stage 1 carries ``attributes.slices``). In the YAML the
        default is every ``attributes.slices`` column.
    min_eligible : a slice with fewer eligible requests is still reported, flagged
        ``below_min_eligible``, and left out of the audit's worst-slice ranking.
    ci_level : two-sided confidence level of the intervals, e.g. 0.95.
    replicates : Poisson-bootstrap replicates (0: no interval; else at least 20).
    seed : the bootstrap seed; the same seed gives the same intervals.
    buckets : the resampling unit. ``0``: every request is drawn on its own (the plain request
        bootstrap; cost requests x replicates). ``B > 0``: within each slice cell the requests
        are hashed into ``B`` random groups and the groups are drawn (the random-group
        bootstrap; cost at most ``B`` x cells x replicates, whatever the number of requests).
        A cell with far fewer requests than ``B`` gets almost one request per group, so small
        slices are resampled request by request either way; a large slice gets ``B``
        independent units, ample for a percentile interval (see the README, *Intervals*).
    default_weight : weight of a per-request row whose ``weight`` is null; ``None`` makes a null
        weight an error. (Stage 1 already applies ``attributes.default_weight``, so this only
        matters for per-request tables built by hand.) A negative or NaN weight is always an error.

    Examples
    --------
    >>> AggregateSpec.from_dict({"bootstrap": {"level": 0.9, "replicates": 200}}, carried_slices=["rarity"])
    AggregateSpec(slices=('rarity',), min_eligible=30, ci_level=0.9, replicates=200, seed=0, buckets=1024, default_weight=None)
    >>> AggregateSpec.from_dict({"slices": ["region"]}, carried_slices=["rarity"])
    Traceback (most recent call last):
    ...
    ndcg_spark.errors.ContractError: aggregate.slices[0]: 'region' is not carried onto the per-request table; add it to attributes.slices (carried: rarity)
    """

    slices: tuple[str, ...] = ()
    min_eligible: int = 30
    ci_level: float = 0.95
    replicates: int = 1000
    seed: int = 0
    buckets: int = 1024
    default_weight: float | None = None

    def __post_init__(self) -> None:
        slices = self.slices
        if isinstance(slices, (str, bytes)) or not isinstance(slices, Iterable):
            raise ContractError("aggregate.slices", f"must be a list of column names, got {slices!r}")
        slices = tuple(slices)
        for i, name in enumerate(slices):
            validate_identifier(name, f"aggregate.slices[{i}]")
            if name == OVERALL:
                raise ContractError(f"aggregate.slices[{i}]", f"{OVERALL!r} names the overall slice; rename the column")
            if name in slices[:i]:
                raise ContractError(f"aggregate.slices[{i}]", f"lists {name!r} twice")
        object.__setattr__(self, "slices", slices)
        if not is_int(self.min_eligible) or self.min_eligible < 1:
            raise ContractError("aggregate.min_eligible", f"must be an integer >= 1, got {self.min_eligible!r}")
        object.__setattr__(self, "ci_level", require_level(self.ci_level, "aggregate.bootstrap.level"))
        require_replicates(self.replicates, "aggregate.bootstrap.replicates", minimum=MIN_REPLICATES,
                           maximum=MAX_REPLICATES, zero_means="no interval")
        require_seed(self.seed, "aggregate.bootstrap.seed")
        require_replicates(self.buckets, "aggregate.bootstrap.buckets", minimum=MIN_BUCKETS, maximum=MAX_BUCKETS,
                           zero_means="resample single requests")
        w = self.default_weight
        if w is not None:
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
                raise ContractError("aggregate.default_weight", f"must be a non-negative number or null, got {w!r}")
            object.__setattr__(self, "default_weight", float(w))

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any] | None,
        *,
        carried_slices: Sequence[str] | None = None,
        path: str = "aggregate",
    ) -> AggregateSpec:
        """Build from the ``aggregate:`` section of a job YAML.

        ``carried_slices`` are the slice columns stage 1 carries (``attributes.slices``): they are
        the default ``slices``, and a declared slice must be one of them.
        """
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ContractError(path, f"must be a mapping, got {type(data).__name__}")
        known = {"slices", "min_eligible", "bootstrap", "default_weight"}
        for key in data:
            if key not in known:
                raise ContractError(f"{path}.{key}", f"is not a known field; known: {', '.join(sorted(known))}")
        kwargs = bootstrap_fields(data.get("bootstrap"), f"{path}.bootstrap", ("level", "replicates", "seed", "buckets"))
        if "slices" in data:
            slices = data["slices"] if data["slices"] is not None else []
            if not isinstance(slices, list):
                raise ContractError(f"{path}.slices", f"must be a list of column names, got {slices!r}")
            kwargs["slices"] = tuple(slices)
        elif carried_slices is not None:
            kwargs["slices"] = tuple(carried_slices)
        for key, name in (("min_eligible", "min_eligible"), ("default_weight", "default_weight")):
            if key in data:
                kwargs[name] = data[key]
        spec = cls(**kwargs)
        if carried_slices is not None:
            for i, name in enumerate(spec.slices):
                if name not in carried_slices:
                    raise ContractError(
                        f"{path}.slices[{i}]",
                        f"{name!r} is not carried onto the per-request table; add it to attributes.slices "
                        f"(carried: {', '.join(carried_slices) or 'none'})",
                    )
        return spec

    @classmethod
    def from_config(cls, config: Any) -> AggregateSpec:
        """The spec of a :class:`~ndcg_spark.job.config.JobConfig` (its ``aggregate:`` section)."""
        return cls.from_dict(config.section("aggregate"), carried_slices=config.attributes.slices)

    def to_dict(self) -> dict[str, Any]:
        """The readable copy stamped into run metadata (the YAML's shape)."""
        return {
            "slices": list(self.slices),
            "min_eligible": self.min_eligible,
            "bootstrap": {"level": self.ci_level, "replicates": self.replicates, "seed": self.seed,
                          "buckets": self.buckets},
            "default_weight": self.default_weight,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def quantiles(self) -> tuple[float, float]:
        """The lower and upper percentile of the bootstrap distribution, e.g. (0.025, 0.975)."""
        return quantiles(self.ci_level)


# -------------------------------------------------------------------------------- aggregation
def aggregate(
    per_request: DataFrame,
    spec: AggregateSpec | None = None,
    *,
    created_at: dt.datetime | None = None,
) -> DataFrame:
    """Aggregate a per-request table: one row per group x slice, with its denominators.

    Parameters
    ----------
    per_request : the stage-1 table (:func:`~ndcg_spark.scoring.score.score_requests`): one row per
        request x system x K with ``run_id, contract_fingerprint, pool_version, system,
        request_id, k, ndcg, empty_ideal, n_candidates, n_unjudged_in_top_k, weight`` and the
        slice columns named in ``spec.slices``.
    spec : the declared choices (:class:`AggregateSpec`; default: overall slice only,
        1000 replicates, 95 %, seed 0, minimum 30 eligible requests).
    created_at : stamped on every row (default: the time the query runs).

    Returns
    -------
    DataFrame with :data:`AGGREGATE_COLUMNS`: per run x contract x pool version x system x K,
    one ``overall``/``all`` row and one row per value of each slice dimension.

    Notes
    -----
    * ``macro_ndcg``: the mean of ``ndcg`` over eligible requests (``ndcg`` not null).
      ``weighted_ndcg``: sum(weight * ndcg) / sum(weight) over the same requests.
    * Empty-ideal requests: under ``empty_ideal: exclude`` their ``ndcg`` is null, so they are
      not eligible; under ``zero`` they are eligible with 0. Either way ``n_empty_ideal``
      counts them, and ``n_requests`` counts every request of the group.
    * ``unjudged_share``: mean over all requests of ``n_unjudged_in_top_k / min(k, n_candidates)``
      (null under ``unjudged: zero``, which does not count them).
    * Intervals: percentile intervals of ``spec.replicates`` Poisson-bootstrap replicates of
      each mean (see :func:`poisson_weight`); a replicate that draws no eligible request of a
      slice is left out of that slice's percentiles. Null when ``replicates`` is 0.
    * When every weight is the same positive number, ``weighted_ndcg`` *is* ``macro_ndcg`` (and
      so are its interval bounds): the weighted sums are skipped.
    * Runs one small job at once: the list of groups, a check that every weight and NDCG is
      usable, and the scale of the exact sums. A null, negative or NaN weight (a null one only
      when ``spec.default_weight`` is None) or an NDCG outside [0, 1] raises
      :class:`~ndcg_spark.errors.InputError`; a request with two rows for one group fails the
      query that computes the result (rule ``duplicate_request``).
    """
    spec = spec or AggregateSpec()
    rows, slice_cols = _prepare(per_request, spec)
    scan = _scan(rows)
    point = _point_estimates(rows, spec, slice_cols, scan)
    if spec.replicates and scan.groups:
        intervals = _bootstrap_intervals(rows, spec, slice_cols, scan)
        out = join_null_safe(point, intervals, (*GROUP_KEYS, "slice_dimension", "slice_value"), "left")
    else:
        out = point
        for name in ("macro_ci_low", "macro_ci_high", "weighted_ci_low", "weighted_ci_high"):
            out = out.withColumn(name, F.lit(None).cast("double"))
    from ndcg_spark import __version__

    stamp = F.current_timestamp() if created_at is None else F.lit(created_at).cast("timestamp")
    computed = {
        "below_min_eligible": F.col("n_eligible") < F.lit(spec.min_eligible),
        "min_eligible": F.lit(spec.min_eligible).cast("int"),
        "ci_level": (F.lit(spec.ci_level) if spec.replicates else F.lit(None)).cast("double"),
        "code_version": F.lit(__version__),
        "created_at": stamp,
    }
    return out.select(*[computed[c].alias(c) if c in computed else F.col(c) for c in AGGREGATE_COLUMNS])


def _prepare(per_request: DataFrame, spec: AggregateSpec) -> tuple[DataFrame, list[str]]:
    """The columns stage 2 needs, typed (a CSV per-request table arrives as strings); slice
    columns renamed ``_s0, _s1, ...`` so no slice name can collide with a working column."""
    present = set(per_request.columns)
    missing = [c for c in (*_REQUIRED, *spec.slices) if c not in present]
    if missing:
        raise InputError(
            f"per_request: missing column(s) {', '.join(missing)} (a stage-1 table carries "
            f"{', '.join(_REQUIRED)} and the attributes.slices columns); columns present: "
            f"{', '.join(sorted(present)) or 'none'}"
        )
    weight = F.col("weight").cast("double")
    if spec.default_weight is not None:
        weight = F.coalesce(weight, F.lit(spec.default_weight))
    k = F.col("k").cast("int")
    slots = F.least(k, F.col("n_candidates").cast("long"))
    share = F.when(slots > 0, F.col("n_unjudged_in_top_k").cast("double") / slots)
    slice_cols = [f"_s{i}" for i in range(len(spec.slices))]
    rows = per_request.select(
        F.col("run_id").cast("string").alias("run_id"),
        F.col("contract_fingerprint").cast("string").alias("contract_fingerprint"),
        F.col("pool_version").cast("string").alias("pool_version"),
        F.col("system").cast("string").alias("system"),
        k.alias("k"),
        F.col("request_id").cast("string").alias("request_id"),
        F.col("ndcg").cast("double").alias("ndcg"),
        F.col("empty_ideal").cast("boolean").alias("empty_ideal"),
        weight.alias("weight"),
        share.alias("unjudged"),
        *[F.col(name).cast("string").alias(alias) for name, alias in zip(spec.slices, slice_cols)],
    )
    return rows, slice_cols


@dataclass(frozen=True)
class _Scan:
    """What the one eager job learns: the groups, in order, and the scale of the exact sums."""

    groups: list[tuple[Any, ...]]
    ndcg_sum: FixedPoint
    weight_sum: FixedPoint
    #: every weight is the same positive number: the weighted mean *is* the macro mean
    uniform_weight: bool


def _scan(rows: DataFrame) -> _Scan:
    """List the run x contract x pool x system x K groups; fail on an unusable weight or NDCG."""
    weight, ndcg = F.col("weight"), F.col("ndcg")
    bad_weight = weight.isNull() | F.isnan(weight) | (weight < 0)
    bad_ndcg = ndcg.isNotNull() & (F.isnan(ndcg) | (ndcg < 0) | (ndcg > 1.0 + 1e-9))
    stats = (
        rows.groupBy(*GROUP_KEYS)
        .agg(
            # numeric aggregates only: a string min here would turn the job into a sort of every
            # row (measured 10.7 s vs 2.8 s warm on 4M rows); the example is looked up on failure
            F.count(F.when(bad_weight, 1)).alias("n_bad_weight"),
            F.count(F.when(bad_ndcg, 1)).alias("n_bad_ndcg"),
            F.max(F.when(~bad_weight, weight)).alias("max_weight"),
            F.min(F.when(~bad_weight, weight)).alias("min_weight"),
        )
        .orderBy(*[F.col(c).asc_nulls_first() for c in GROUP_KEYS])
        .collect()
    )
    for what, bad, rule, hint in (
        ("weight", bad_weight, "weight_invalid", "weights must be non-negative numbers; aggregate.default_weight "
         "gives a missing one a value"),
        ("ndcg", bad_ndcg, "ndcg_out_of_range", "NDCG lies in [0, 1]; is this a per-request table written by stage 1?"),
    ):
        broken = [r for r in stats if r[f"n_bad_{what}"]]
        if broken:
            n, first = sum(r[f"n_bad_{what}"] for r in broken), broken[0]
            in_first = [F.col(c).eqNullSafe(F.lit(first[c])) for c in GROUP_KEYS]
            example = rows.filter(functools.reduce(operator.and_, in_first, bad)).agg(F.min("request_id")).first()[0]
            raise InputError(
                f"per_request.{what}: {n} row(s) have a missing, negative, NaN or out-of-range {what} "
                f"(rule: {rule}), e.g. request {example!r} of system {first['system']!r} "
                f"at k={first['k']}; {hint}"
            )
    max_weight = max((r["max_weight"] or 0.0 for r in stats), default=0.0)
    min_weight = min((r["min_weight"] or 0.0 for r in stats), default=0.0)
    return _Scan(
        groups=[tuple(r[c] for c in GROUP_KEYS) for r in stats],
        ndcg_sum=FixedPoint.for_bound(1.0),
        weight_sum=FixedPoint.for_bound(max_weight),
        uniform_weight=0.0 < min_weight == max_weight,
    )


def _point_estimates(rows: DataFrame, spec: AggregateSpec, slice_cols: list[str], scan: _Scan) -> DataFrame:
    ndcg, weight = F.col("ndcg"), F.col("weight")
    x, w = scan.ndcg_sum, scan.weight_sum
    terms = rows.select(
        *GROUP_KEYS,
        *slice_cols,
        "ndcg",
        "empty_ideal",
        "unjudged",
        *x.parts(ndcg, "sx"),
        *w.parts(weight * ndcg, "swx"),
        *w.parts(F.when(ndcg.isNotNull(), weight), "sw_eligible"),
        *w.parts(weight, "sw_all"),
        *x.parts(F.col("unjudged"), "s_unjudged"),
    )
    counts = {
        "n_requests": F.count(F.lit(1)),
        "n_eligible": F.count("ndcg"),
        "n_empty_ideal": F.count(F.when(F.col("empty_ideal"), 1)),
        "n_unjudged": F.count("unjudged"),
    }
    fixed = [n for base in ("sx", "swx", "sw_eligible", "sw_all", "s_unjudged") for n in FixedPoint.names(base)]
    # Sum per finest cell (group x every slice column), then roll the cells up to each slice:
    # integer sums make the two levels equal to one pass, and the expansion runs on few rows.
    rolled = roll_up(terms, GROUP_KEYS, spec.slices, slice_cols, {**counts, **{n: F.sum(n) for n in fixed}})
    n_eligible, sw_eligible = F.col("n_eligible"), w.value("sw_eligible")
    return rolled.select(
        *GROUP_KEYS,
        "slice_dimension",
        "slice_value",
        F.when(n_eligible > 0, x.value("sx") / n_eligible).alias("macro_ndcg"),
        (
            F.when(n_eligible > 0, x.value("sx") / n_eligible)
            if scan.uniform_weight
            else F.when(sw_eligible > 0, w.value("swx") / sw_eligible)
        ).alias("weighted_ndcg"),
        "n_eligible",
        "n_empty_ideal",
        "n_requests",
        F.coalesce(sw_eligible, F.lit(0.0)).alias("weight_eligible"),
        F.coalesce(w.value("sw_all"), F.lit(0.0)).alias("weight_all"),
        F.when(F.col("n_unjudged") > 0, x.value("s_unjudged") / F.col("n_unjudged")).alias("unjudged_share"),
    )


def _bootstrap_intervals(rows: DataFrame, spec: AggregateSpec, slice_cols: list[str], scan: _Scan) -> DataFrame:
    """Percentile intervals of both means from ``spec.replicates`` Poisson-bootstrap replicates.

    Layout: each group (run x contract x pool x system x K) becomes a column index ``g``; the
    rows of a request are pivoted into one row per request (its NDCG and weight terms per group,
    already in fixed point), exploded once per replicate with the request's Poisson count, and
    summed per finest slice cell and replicate -- so the hash and the shuffle cost
    requests x replicates, not requests x systems x K x slices x replicates. Cells are then
    rolled up to slices and unpivoted back to one row per group x slice x replicate (few rows),
    where the replicate means and their percentiles are taken.
    """
    spark = rows.sparkSession
    group_table = spark.createDataFrame(
        [(i, *g) for i, g in enumerate(scan.groups)],
        T.StructType([T.StructField("_g", T.IntegerType(), False), *[rows.schema[c] for c in GROUP_KEYS]]),
    )
    indexed = join_null_safe(rows, F.broadcast(group_table), GROUP_KEYS, "inner")
    passes = []
    for start in range(0, len(scan.groups), _GROUPS_PER_PASS):
        chunk = list(range(start, min(start + _GROUPS_PER_PASS, len(scan.groups))))
        part = indexed.filter(F.col("_g").between(chunk[0], chunk[-1]))
        passes.append(_bootstrap_pass(part, spec, slice_cols, chunk, scan))
    replicate_means = passes[0]
    for more in passes[1:]:
        replicate_means = replicate_means.unionByName(more)
    intervals = replicate_means.groupBy("_g", "slice_dimension", "slice_value").agg(
        percentile_interval(F.col("_macro"), spec.ci_level).alias("_mq"),
        percentile_interval(F.col("_weighted"), spec.ci_level).alias("_wq"),
    )
    return intervals.join(F.broadcast(group_table), "_g").select(
        *GROUP_KEYS,
        "slice_dimension",
        "slice_value",
        F.col("_mq")[0].alias("macro_ci_low"),
        F.col("_mq")[1].alias("macro_ci_high"),
        F.col("_wq")[0].alias("weighted_ci_low"),
        F.col("_wq")[1].alias("weighted_ci_high"),
    )


def _bootstrap_pass(
    part: DataFrame, spec: AggregateSpec, slice_cols: list[str], chunk: list[int], scan: _Scan
) -> DataFrame:
    g = F.col("_g")
    xs, ws = scan.ndcg_sum, scan.weight_sum
    eligible = F.col("ndcg").isNotNull()
    # One row per request (and slice cell): its NDCG and weight in each group of the chunk. A
    # request listed twice for one group would be silently collapsed here, so it fails instead.
    duplicated = F.greatest(*[F.count(F.when(g == i, 1)) for i in chunk], F.lit(0)) > 1
    wide = part.groupBy("request_id", *slice_cols).agg(
        F.when(
            duplicated,
            F.raise_error(
                F.concat(
                    F.lit("per_request: request "),
                    F.col("request_id"),
                    F.lit(
                        " has more than one row for one run, contract, pool version, system and K "
                        "(rule: duplicate_request); the per-request table holds one row per request x system x K"
                    ),
                )
            ),
        ).alias("_dup"),
        *[F.max(F.when((g == i) & eligible, F.col("ndcg"))).alias(f"_x{i}") for i in chunk],
        *[F.max(F.when((g == i) & eligible, F.col("weight"))).alias(f"_w{i}") for i in chunk],
    )
    # Per request and group, once: eligibility and the fixed-point terms (so the per-replicate
    # work below is only count x term). `_dup` is null unless it raised; folding it into the
    # bootstrap unit keeps the check from being pruned away.
    terms, term_names = [], []
    for i in chunk:
        x, w = F.col(f"_x{i}"), F.col(f"_w{i}")
        terms += [F.when(x.isNotNull(), F.lit(1)).alias(f"_e{i}"), *xs.parts(x, f"_sx{i}")]
        term_names += [f"_e{i}", *xs.names(f"_sx{i}")]
        if not scan.uniform_weight:
            terms += [*ws.parts(w * x, f"_swx{i}"), *ws.parts(w, f"_sw{i}")]
            term_names += [*ws.names(f"_swx{i}"), *ws.names(f"_sw{i}")]
    per_request = wide.select(
        *slice_cols, *terms, F.coalesce(F.col("_dup").cast("string"), F.col("request_id")).alias("_unit")
    )
    if spec.buckets:
        # Random groups: a request's group is a hash of the seed and its id; the group's terms
        # are exact sums, so drawing the group c times adds c times each member's terms.
        group = random_group(spec.seed, F.col("_unit"), spec.buckets)
        per_request = (
            per_request.groupBy(*slice_cols, group.alias("_group"))
            .agg(*[F.sum(n).alias(n) for n in term_names])
            .select(*slice_cols, *term_names, group_unit(F.col("_group"), slice_cols).alias("_unit"))
        )
    # a unit drawn 0 times adds nothing: only the rows drawn at least once are kept
    drawn = expand_replicates(per_request, F.col("_unit"), spec.seed, bootstrap=spec.replicates)
    c = F.col("_count")
    rolled = roll_up(drawn, ["_replicate"], spec.slices, slice_cols, {n: F.sum(c * F.col(n)) for n in term_names})
    means = []
    for i in chunk:
        n = F.col(f"_e{i}")
        macro = F.when(n > 0, xs.value(f"_sx{i}") / n)
        if scan.uniform_weight:
            weighted = macro
        else:
            sw = ws.value(f"_sw{i}")
            weighted = F.when(sw > 0, ws.value(f"_swx{i}") / sw)
        means.append(F.struct(F.lit(i).alias("_g"), macro.alias("_macro"), weighted.alias("_weighted")))
    return rolled.select("slice_dimension", "slice_value", F.explode(F.array(*means)).alias("_m")).select(
        "_m._g", "slice_dimension", "slice_value", "_m._macro", "_m._weighted"
    )


# -------------------------------------------------------------------------------------- audit
def audit(aggregates: DataFrame) -> DataFrame:
    """Per slice dimension, the worst slice by macro NDCG and its gap to the overall mean.

    Parameters
    ----------
    aggregates : the output of :func:`aggregate` (or the aggregate table read back).

    Returns
    -------
    DataFrame with :data:`AUDIT_COLUMNS`: one row per run x contract x pool version x system x K
    x slice dimension. Only slices with at least ``min_eligible`` eligible requests are ranked
    (``n_slices_ranked`` of ``n_slices``); ties go to the smaller slice value. ``gap_to_overall``
    is ``worst_macro_ndcg - overall_macro_ndcg`` (negative: below the overall mean).
    ``ci_below_overall`` is true when the worst slice's whole interval lies below the overall
    mean. With no slice above the minimum the ``worst_*`` columns are null.

    Notes
    -----
    The worst of several slices is selected *because* it is low, and it is part of the overall
    mean it is compared with; ``ci_below_overall`` is a screening flag, not a significance test.

    Examples
    --------
    >>> rows = [("r", "fp", "p", "s", 10, "overall", "all", 0.60, 0.58, 0.62, 300, False),
    ...         ("r", "fp", "p", "s", 10, "rarity", "common", 0.65, 0.62, 0.68, 200, False),
    ...         ("r", "fp", "p", "s", 10, "rarity", "rare", 0.50, 0.45, 0.55, 90, False),
    ...         ("r", "fp", "p", "s", 10, "rarity", "unknown", 0.10, 0.00, 0.40, 10, True)]
    >>> aggs = spark.createDataFrame(rows, "run_id string, contract_fingerprint string, "
    ...     "pool_version string, system string, k int, slice_dimension string, slice_value string, "
    ...     "macro_ndcg double, macro_ci_low double, macro_ci_high double, n_eligible long, "
    ...     "below_min_eligible boolean")
    >>> audit(aggs).select("slice_dimension", "n_slices", "n_slices_ranked", "worst_slice_value",
    ...     F.round("gap_to_overall", 2).alias("gap"), "ci_below_overall").show()
    +---------------+--------+---------------+-----------------+----+----------------+
    |slice_dimension|n_slices|n_slices_ranked|worst_slice_value| gap|ci_below_overall|
    +---------------+--------+---------------+-----------------+----+----------------+
    |         rarity|       3|              2|             rare|-0.1|            true|
    +---------------+--------+---------------+-----------------+----+----------------+
    <BLANKLINE>
    """
    keys = list(GROUP_KEYS)
    stamps = [c for c in ("min_eligible", "ci_level", "code_version", "created_at") if c in aggregates.columns]
    overall = aggregates.filter(F.col("slice_dimension") == OVERALL).select(
        *keys, F.col("macro_ndcg").alias("overall_macro_ndcg")
    )
    slices = aggregates.filter(F.col("slice_dimension") != OVERALL)
    ranked = ~F.col("below_min_eligible") & F.col("macro_ndcg").isNotNull()
    counts = slices.groupBy(*keys, "slice_dimension").agg(
        F.count(F.lit(1)).alias("n_slices"),
        F.count(F.when(ranked, 1)).alias("n_slices_ranked"),
        *[F.max(c).alias(c) for c in stamps],
    )
    order = Window.partitionBy(*keys, "slice_dimension").orderBy(
        F.col("macro_ndcg").asc(), F.col("slice_value").asc_nulls_last()
    )
    worst = (
        slices.filter(ranked)
        .withColumn("_rank", F.row_number().over(order))
        .filter(F.col("_rank") == 1)
        .select(
            *keys,
            "slice_dimension",
            F.col("slice_value").alias("worst_slice_value"),
            F.col("macro_ndcg").alias("worst_macro_ndcg"),
            F.col("macro_ci_low").alias("worst_ci_low"),
            F.col("macro_ci_high").alias("worst_ci_high"),
            F.col("n_eligible").alias("worst_n_eligible"),
        )
    )
    out = join_null_safe(counts, worst, (*keys, "slice_dimension"), "left")
    out = join_null_safe(out, overall, keys, "left")
    missing_stamps = {
        "min_eligible": F.lit(None).cast("int"),
        "ci_level": F.lit(None).cast("double"),
        "code_version": F.lit(None).cast("string"),
        "created_at": F.lit(None).cast("timestamp"),
    }
    for name, value in missing_stamps.items():
        if name not in stamps:
            out = out.withColumn(name, value)
    return out.select(
        "run_id",
        "system",
        "pool_version",
        "k",
        "slice_dimension",
        "n_slices",
        "n_slices_ranked",
        "worst_slice_value",
        "worst_macro_ndcg",
        "worst_ci_low",
        "worst_ci_high",
        "worst_n_eligible",
        "overall_macro_ndcg",
        (F.col("worst_macro_ndcg") - F.col("overall_macro_ndcg")).alias("gap_to_overall"),
        (F.col("worst_ci_high") < F.col("overall_macro_ndcg")).alias("ci_below_overall"),
        "min_eligible",
        "ci_level",
        "contract_fingerprint",
        "code_version",
        "created_at",
    )


# ------------------------------------------------------------------------------- run metadata
def run_metadata(
    spark: SparkSession,
    run_id: str,
    *,
    contract: Contract,
    spec: AggregateSpec,
    row_counts: Mapping[str, int],
    created_at: dt.datetime | None = None,
) -> DataFrame:
    """The run-metadata row of ``run_id``: the readable contract, the aggregate spec, row counts.

    ``contract`` must be the *resolved* contract the per-request table was scored under (its
    fingerprint is the one stamped on every row of the run); ``row_counts`` maps a table (or an
    input's counter, e.g. ``candidates.rows_read``) to its row count.

    Examples
    --------
    >>> meta = run_metadata(spark, "2026-11-29", contract=Contract(k=[3], order="position"),
    ...                     spec=AggregateSpec(), row_counts={"per_request": 6, "aggregate": 2})
    >>> meta.select("run_id", "contract_fingerprint", F.col("row_counts")["per_request"].alias("rows")).show()
    +----------+--------------------+----+
    |    run_id|contract_fingerprint|rows|
    +----------+--------------------+----+
    |2026-11-29|    f8a3a72347d4e364|   6|
    +----------+--------------------+----+
    <BLANKLINE>
    """
    from ndcg_spark import __version__

    stamp = created_at or dt.datetime.now(dt.timezone.utc)
    counts = {str(k): int(v) for k, v in sorted(row_counts.items())}
    return spark.createDataFrame(
        [(run_id, contract.fingerprint, contract.to_json(), spec.to_json(), counts, __version__, stamp)],
        RUN_METADATA_SCHEMA,
    )


__all__ = [
    "AGGREGATE_COLUMNS",
    "AUDIT_COLUMNS",
    "AggregateSpec",
    "GROUP_KEYS",
    "OVERALL",
    "OVERALL_VALUE",
    "RUN_METADATA_SCHEMA",
    "aggregate",
    "audit",
    "poisson_weight",
    "run_metadata",
]
