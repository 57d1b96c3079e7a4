"""Stage 2: from the per-request table to means that travel with their denominators.

For every run x contract x pool version x system x K x metric -- each metric of the per-request
table (``ndcg``, ``recall`` ...) and each one's what-ifs (``ndcg_unjudged_low`` / ``_high``, when
the contract declares a scale) -- and every *slice* -- the overall slice and each value of each
declared slice dimension -- :func:`aggregate` computes the macro mean (every eligible request counts
once), the traffic-weighted mean, the counts behind them (eligible, empty-ideal, no-result and all
requests, summed weights), the mean share of unjudged candidates in the top K, and a
Poisson-bootstrap confidence interval for both means.
:func:`~ndcg_spark.aggregation.worst_slice.audit` then names, per slice dimension, the worst slice
and its gap to the overall mean.

Everything is native Spark: nothing per request reaches the driver, and the only driver-side
collect is the list of run x contract x pool x system x K groups (a handful of rows).

Exact and reproducible
    Sums are taken in 64-bit integer fixed point (:class:`~ndcg_spark.metrics.exact.FixedPoint`: each term is rounded
    once, to 2^-56 of the largest possible term, then added exactly), so a mean does not depend
    on the order Spark happens to add rows in: the same per-request table and the same
    :class:`~ndcg_spark.config.aggregate_spec.AggregateSpec` give bit-identical aggregates, whatever the
    partitioning.
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
>>> out.select("metric", "slice_dimension", F.round("macro", 4).alias("macro"),
...            F.round("weighted", 4).alias("weighted"), "n_eligible", "n_empty_ideal",
...            "n_requests", "below_min_eligible").show()
+------+---------------+------+--------+----------+-------------+----------+------------------+
|metric|slice_dimension| macro|weighted|n_eligible|n_empty_ideal|n_requests|below_min_eligible|
+------+---------------+------+--------+----------+-------------+----------+------------------+
|  ndcg|        overall|0.8155|  0.9631|         2|            1|         3|              true|
+------+---------------+------+--------+----------+-------------+----------+------------------+
<BLANKLINE>

``q1`` is perfect (NDCG 1.0) and ``q2`` is not (0.6309); ``q3`` has no positive grade, so it is
set aside and counted. The macro mean is (1.0 + 0.6309) / 2; the weighted mean counts ``q1``
nine times as often as ``q2``: (9 * 1.0 + 1 * 0.6309) / 10.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.aggregation.columns import AGGREGATE_COLUMNS, AGGREGATE_LEGACY, GROUP_KEYS, INTERVAL_COLUMNS
from ndcg_spark.aggregation.intervals import bootstrap_intervals
from ndcg_spark.aggregation.point import (check_one_row_per_request, check_weights_and_values, point_estimates,
                                          stage2_rows)
from ndcg_spark.config.aggregate_spec import AggregateSpec
from ndcg_spark.frames import join_null_safe, shuffles_sized_to
from ndcg_spark.legacy import with_legacy_columns
from ndcg_spark.version import __version__

__all__ = ["aggregate"]


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
        request_id, k, empty_ideal, n_candidates, n_unjudged_in_top_k, weight``, a column per metric
        (``ndcg``, ``recall`` ...; and its what-ifs) and the slice columns named in ``spec.slices``.
    spec : the declared choices (:class:`~ndcg_spark.config.aggregate_spec.AggregateSpec`; default: overall slice only,
        1000 replicates, 95 %, seed 0, minimum 30 eligible requests).
    created_at : stamped on every row (default: the time the query runs).

    Returns
    -------
    DataFrame with :data:`~ndcg_spark.aggregation.columns.AGGREGATE_COLUMNS`: per run x contract
    x pool version x system x K x metric, one ``overall``/``all`` row and one row per value of each
    slice dimension. The ``ndcg`` rows also carry the columns of the table from before the ``metric``
    column (``macro_ndcg`` ...: :data:`~ndcg_spark.aggregation.columns.AGGREGATE_LEGACY`).

    Notes
    -----
    * ``macro``: the mean of the metric over eligible requests (its value not null).
      ``weighted``: sum(weight * value) / sum(weight) over the same requests.
    * Empty-ideal requests (no ideal for some declared metric): under ``empty_ideal: exclude`` every
      metric of theirs is null, so they are eligible for none; under ``zero`` they are eligible with
      0 for the metric whose ideal is missing. Either way ``n_empty_ideal`` counts them (the same
      number in every metric's rows), and ``n_requests`` counts every request of the group. A
      what-if has its own ideal: its ``n_eligible`` may be larger.
    * ``unjudged_share``: mean over all requests of ``n_unjudged_in_top_k / min(k, n_candidates)``
      (null under ``unjudged: zero``, which does not count them).
    * Intervals: percentile intervals of ``spec.replicates`` Poisson-bootstrap replicates of
      each mean (see :func:`~ndcg_spark.metrics.resampling.poisson_weight`); a replicate that
      draws no eligible request of a slice is left out of that slice's percentiles. Null when
      ``replicates`` is 0.
    * When every weight is the same positive number, ``weighted`` *is* ``macro`` (and so are its
      interval bounds): the weighted sums are skipped.
    * Runs one small job at once: the list of groups, a check that every weight and value is
      usable, and the scale of the exact sums. A null, negative or NaN weight (a null one only
      when ``spec.default_weight`` is None) or a value outside [0, 1] raises
      :class:`~ndcg_spark.errors.InputError`; so does a request with two rows for one group
      (rule ``duplicate_request``): without intervals one more small job asks at once, with them
      the query that computes the result fails.
    """

    spec = spec or AggregateSpec()
    rows, slice_cols = stage2_rows(per_request, spec)
    groups = check_weights_and_values(rows)
    kept = sorted({key[GROUP_KEYS.index("metric")] for key in groups.keys})
    rows = rows.filter(F.col("metric").isin(kept))  # a what-if no request has a value for: none declared
    out = point_estimates(rows, spec, slice_cols, groups)
    if spec.replicates and groups.keys:
        intervals = bootstrap_intervals(rows, spec, slice_cols, groups)
        out = join_null_safe(out, intervals, (*GROUP_KEYS, "slice_dimension", "slice_value"), "left")
    else:
        if groups.keys:
            with shuffles_sized_to(per_request):  # a job of the call's own: few partitions for a small input
                check_one_row_per_request(rows)  # the bootstrap's pivot checks it as it goes; here, once
        out = out.select("*", *[F.lit(None).cast("double").alias(name) for name in INTERVAL_COLUMNS])

    stamp = F.current_timestamp() if created_at is None else F.lit(created_at).cast("timestamp")
    computed = {
        "below_min_eligible": F.col("n_eligible") < F.lit(spec.min_eligible),
        "min_eligible": F.lit(spec.min_eligible).cast("int"),
        "ci_level": (F.lit(spec.ci_level) if spec.replicates else F.lit(None)).cast("double"),
        "code_version": F.lit(__version__),
        "created_at": stamp,
    }
    out = with_legacy_columns(out.select("*", *[value.alias(name) for name, value in computed.items()]),
                              AGGREGATE_LEGACY, [c for c in (*GROUP_KEYS, "slice_dimension", "slice_value")
                                                 if c != "metric"])
    return out.select(*AGGREGATE_COLUMNS)

