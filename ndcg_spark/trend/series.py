"""Night over night: each run's aggregate rows beside the previous comparable run's.

A *series* is one system's metric at one K in one slice (:data:`~ndcg_spark.trend.columns.SERIES_KEYS`),
run after run in run-id order (the default run id is the UTC date, so run-id order is night order).
Two consecutive runs of a series are **comparable** only when they were scored under the same
contract fingerprint over the same pool version; where either changes the series is *broken*,
not joined: the row has no delta and says why (which pool version, which contract fields). A
break is never bridged to an older run: after a changed night, the next comparison starts anew.

A comparable night is flagged ``moved`` when its bootstrap interval does not overlap the previous
night's, and ``empty_ideal_shift`` when its share of empty-ideal requests (no-answer traffic)
moved by more than the declared amount: a move on such a night may be traffic, not ranking.

:func:`trend` takes the aggregate rows of the runs to compare -- the *published* ones; the job
reads them through the run-status table -- and returns one row per run x system x pool version x
K x slice (:data:`~ndcg_spark.trend.columns.TREND_COLUMNS`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.aggregation.columns import AGGREGATE_LEGACY
from ndcg_spark.config.trend_spec import LABEL_AND, LABEL_WITH, SHIFTS, TREND_FLAGS, TrendSpec
from ndcg_spark.legacy import as_current, with_legacy_columns
from ndcg_spark.trend.columns import MEANS_AND_DENOMINATORS, SERIES_KEYS, TREND_COLUMNS, TREND_LEGACY

__all__ = ["contract_changes", "trend"]

#: the aggregate columns a trend carries over, as they are
_CARRIED = (*MEANS_AND_DENOMINATORS, "unjudged_share", "below_min_eligible")
#: what the previous night contributes to a row: its fingerprint, means, intervals and empty-ideal share
_PREVIOUS = ("contract_fingerprint", "macro", "macro_ci_low", "macro_ci_high", "weighted",
             "weighted_ci_low", "weighted_ci_high", *[f.share for f in SHIFTS])
_CHANGES_SCHEMA = "from_fingerprint string, to_fingerprint string, changed_fields string"


def trend(aggregates: DataFrame, spec: TrendSpec = TrendSpec(), run_metadata: DataFrame | None = None) -> DataFrame:
    """Each run's aggregate rows with the change from the previous comparable run.

    Parameters
    ----------
    aggregates : DataFrame
        Aggregate-table rows (:data:`~ndcg_spark.aggregation.columns.AGGREGATE_COLUMNS`) of the runs
        to compare: pass only published runs (``read_published``); every row passed is a night.
        A night written before the ``metric`` column is read as NDCG's (:func:`~ndcg_spark.legacy.as_current`).
    spec : TrendSpec
        Which runs to return (``last``, ``since``: the earlier runs still serve as the previous
        night of the first one shown) and the empty-ideal shift that flags a night.
    run_metadata : DataFrame, optional
        Run-metadata rows (``contract_fingerprint``, ``contract`` as JSON): with them a contract
        break names the fields that changed; without, it names the two fingerprints only.

    Returns
    -------
    DataFrame
        :data:`~ndcg_spark.trend.columns.TREND_COLUMNS`, ordered by series, pool version and run.

    Examples
    --------
    >>> cols = ("run_id", "system", "pool_version", "k", "slice_dimension", "slice_value", "contract_fingerprint",
    ...         "macro", "macro_ci_low", "macro_ci_high", "n_empty_ideal", "n_requests")
    >>> night = lambda run, fp, mean, lo, hi, empty: (run, "bm25", "p1", 10, "overall", "all", fp, mean, lo, hi, empty, 100)
    >>> aggs = spark.createDataFrame([night("2026-11-27", "a", 0.60, 0.58, 0.62, 10),
    ...     night("2026-11-28", "a", 0.52, 0.50, 0.54, 18), night("2026-11-29", "b", 0.55, 0.53, 0.57, 18)], cols)
    >>> for r in trend(aggs).collect():
    ...     print(r.run_id, r.comparable, r.delta_macro and round(r.delta_macro, 2), r.flag, r.break_reason)
    2026-11-27 None None None None
    2026-11-28 True -0.08 moved_with_empty_ideal_shift None
    2026-11-29 False None None contract changed: a → b
    """
    rows = _with_previous_rows(_trend_inputs(aggregates))
    rows = _compared(rows, _contract_changes_frame(aggregates, run_metadata), spec)
    rows = with_legacy_columns(_window(rows, spec), TREND_LEGACY, [])
    order = [*SERIES_KEYS[:1], "pool_version", *SERIES_KEYS[1:], "run_id"]
    return rows.select(*TREND_COLUMNS).orderBy(*[F.asc_nulls_first(c) for c in order])


def contract_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The contract fields whose values differ between two resolved contracts (``Contract.to_dict()``).

    >>> contract_changes({"k": [5, 10], "gain": "exponential"}, {"k": [5, 10], "gain": "linear"})
    ['gain']
    """
    return sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))


def _trend_inputs(aggregates: DataFrame) -> DataFrame:
    """The aggregate columns a trend reads (missing optional ones as nulls) and the share of each
    shift flag (:data:`~ndcg_spark.config.trend_spec.SHIFTS`: its count over all requests)."""
    aggregates = as_current(aggregates, AGGREGATE_LEGACY)
    present = set(aggregates.columns)
    typed = {"macro_ci_low": "double", "macro_ci_high": "double", "weighted": "double",
             "weighted_ci_low": "double", "weighted_ci_high": "double", "n_eligible": "bigint", "n_no_results": "bigint",
             "unjudged_share": "double", "below_min_eligible": "boolean"}
    carried = [F.col(c) if c in present else F.lit(None).cast(typed.get(c, "double")).alias(c) for c in _CARRIED]
    rows = aggregates.select("run_id", *SERIES_KEYS, "pool_version", "contract_fingerprint", *carried)
    counts = {f.count: F.col(f.count) if f.count in present else F.lit(None).cast("bigint") for f in SHIFTS}
    return rows.withColumns({f.share: F.when(F.col("n_requests") > 0, counts[f.count] / F.col("n_requests"))
                             for f in SHIFTS})


def _with_previous_rows(rows: DataFrame) -> DataFrame:
    """``previous_run_id`` (the run before this one in the series, whatever its pool or contract),
    that run's row of the same pool version (``previous_*``, null when that pool was not in it),
    and the pool versions and fingerprints the previous run had in the series.

    One window over the series: the runs are ranked, and a frame of exactly one rank back holds
    the previous run's rows (one shuffle, no self-join).
    """
    by_run = Window.partitionBy(*SERIES_KEYS).orderBy("run_id")
    rows = rows.withColumn("_run", F.dense_rank().over(by_run))
    one_back = Window.partitionBy(*SERIES_KEYS).orderBy("_run").rangeBetween(-1, -1)
    fields = ["run_id", "pool_version", *_PREVIOUS]
    rows = rows.withColumn("_before", F.collect_list(F.struct(*fields)).over(one_back))
    same_pool = F.get(F.filter("_before", lambda x: x["pool_version"].eqNullSafe(F.col("pool_version"))), 0)
    return rows.select(
        "*",
        F.get(F.col("_before"), 0)["run_id"].alias("previous_run_id"),
        *[same_pool[c].alias(f"previous_{c}") for c in _PREVIOUS],
        F.array_sort(F.array_distinct(F.transform("_before", lambda x: x["pool_version"]))).alias("previous_pools"),
        F.array_sort(F.array_distinct(F.transform("_before", lambda x: x["contract_fingerprint"])))
        .alias("previous_fingerprints"),
    ).drop("_run", "_before")


def _compared(rows: DataFrame, changes: DataFrame, spec: TrendSpec) -> DataFrame:
    """Comparability, the break's reason, the deltas and the movement flags."""
    has_previous = F.col("previous_run_id").isNotNull()
    same_pool = F.col("previous_contract_fingerprint").isNotNull()
    comparable = same_pool & (F.col("previous_contract_fingerprint") == F.col("contract_fingerprint"))
    rows = rows.withColumn("comparable", F.when(has_previous, comparable))
    # the fingerprint the contract changed from: this pool's in the previous run, else the previous run's first
    before = F.coalesce(F.col("previous_contract_fingerprint"), F.element_at("previous_fingerprints", 1))
    contract_changed = has_previous & ~F.array_contains("previous_fingerprints", F.col("contract_fingerprint")) | (
        same_pool & ~comparable)
    rows = rows.withColumn("_from", F.when(contract_changed, before))
    rows = rows.join(changes, (rows["_from"] == changes["from_fingerprint"])
                     & (rows["contract_fingerprint"] == changes["to_fingerprint"]), "left")
    pool_reason = F.when(has_previous & ~same_pool, F.concat(
        F.lit("pool version changed: "), F.array_join("previous_pools", ", ", "NULL"), F.lit(" → "),
        F.coalesce(F.col("pool_version"), F.lit("NULL"))))
    fields = F.when(F.col("changed_fields").isNotNull(), F.concat(F.lit(" ("), F.col("changed_fields"), F.lit(")")))
    contract_reason = F.when(contract_changed, F.concat(
        F.lit("contract changed"), F.coalesce(fields, F.lit("")), F.lit(": "), F.col("_from"), F.lit(" → "),
        F.col("contract_fingerprint")))
    rows = rows.withColumn("break_reason", F.concat_ws("; ", pool_reason, contract_reason))
    rows = rows.withColumn("break_reason", F.when(F.col("break_reason") != "", F.col("break_reason")))
    return _movement(rows, spec)


def _movement(rows: DataFrame, spec: TrendSpec) -> DataFrame:
    """Deltas from the previous comparable night and the flags of :data:`TREND_FLAGS`: ``moved``
    (the macro or the weighted interval does not overlap the previous night's) and each shift (its
    share moved by more than the spec's threshold), a boolean column each, then the ``flag`` label
    derived from them."""
    comparable = F.coalesce(F.col("comparable"), F.lit(False))

    def delta(name: str) -> Column:
        return F.when(comparable, F.col(name) - F.col(f"previous_{name}"))

    def moved(mean: str) -> Column:
        lo, hi, plo, phi = (F.col(c) for c in (f"{mean}_ci_low", f"{mean}_ci_high",
                                               f"previous_{mean}_ci_low", f"previous_{mean}_ci_high"))
        known = lo.isNotNull() & hi.isNotNull() & plo.isNotNull() & phi.isNotNull()
        return F.when(comparable & known, (lo > phi) | (hi < plo))

    rows = rows.select(
        "*",
        delta("macro").alias("delta_macro"),
        delta("weighted").alias("delta_weighted"),
        *[delta(f.share).alias(f.change) for f in SHIFTS],
        moved("macro").alias("moved_macro"),
        moved("weighted").alias("moved_weighted"),
    )
    moves = F.coalesce(F.col("moved_macro"), F.lit(False)) | F.coalesce(F.col("moved_weighted"), F.lit(False))
    flags = {"moved": F.when(comparable, moves)}
    for f in SHIFTS:
        threshold = float(getattr(spec, f.threshold))
        flags[f.name] = F.when(F.col(f.change).isNotNull(), F.abs(F.col(f.change)) > F.lit(threshold))
        rows = rows.withColumn(f.threshold, F.lit(threshold))
    rows = rows.withColumns({f.column: flags[f.name] for f in TREND_FLAGS})
    return rows.withColumn("flag", _label())


def _label() -> Column:
    """The ``flag`` column: :func:`~ndcg_spark.config.trend_spec.flag_label` of the raised flags."""
    def names(kind: str) -> Column:
        return F.concat_ws(LABEL_AND, *[F.when(F.col(f.column), F.lit(f.name)) for f in TREND_FLAGS if f.kind == kind])

    moves, shifts = names("move"), names("shift")
    label = (F.when((moves != "") & (shifts != ""), F.concat(moves, F.lit(LABEL_WITH), shifts))
             .when(moves != "", moves).when(shifts != "", shifts))
    return label


def _window(rows: DataFrame, spec: TrendSpec) -> DataFrame:
    """The runs the spec asks for: ``run_id >= since``, then the last ``last`` of them."""
    if spec.since is not None:
        rows = rows.filter(F.col("run_id") >= F.lit(spec.since))
    if spec.last is not None:
        runs = sorted((r.run_id for r in rows.select("run_id").distinct().collect()), reverse=True)
        rows = rows.filter(F.col("run_id").isin(runs[: spec.last]))
    return rows


def _contract_changes_frame(aggregates: DataFrame, run_metadata: DataFrame | None) -> DataFrame:
    """``from_fingerprint, to_fingerprint, changed_fields`` for every pair of contracts in the run metadata."""
    spark = aggregates.sparkSession
    if run_metadata is None:
        return spark.createDataFrame([], _CHANGES_SCHEMA)
    found = run_metadata.select("contract_fingerprint", "contract").distinct().collect()
    contracts = {r.contract_fingerprint: json.loads(r.contract) for r in found if r.contract}
    return spark.createDataFrame(list(_pairs(contracts)), _CHANGES_SCHEMA)


def _pairs(contracts: Mapping[str, Mapping[str, Any]]) -> Iterable[tuple[str, str, str]]:
    for a, before in contracts.items():
        for b, after in contracts.items():
            if a != b:
                yield a, b, ", ".join(contract_changes(before, after))
