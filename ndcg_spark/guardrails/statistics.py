"""The guardrails' statistics core: per arm and slice a rate, a mean or a percentile with its
bootstrap interval, and the candidate-minus-baseline difference with its interval.

The input is one row per observation (a release session, or a request of one system) with its
arm, its resampling unit, its slice values and one column per *measure* (a double; null when
the event the measure is conditional on did not happen). Everything comes out of **one** Spark
job over the rows expanded into replicates ``0 .. R``:

- replicate 0 counts every row once: the point estimates and their denominators;
- replicate ``r >= 1`` counts a row :func:`~ndcg_spark.metrics.resampling.poisson_weight` times,
  a pure function of ``(seed, r, unit)`` -- so every row of a unit moves together (a cluster
  bootstrap), and a unit that appears in both arms (a paired design) draws the same count in both;
- rates and means are exact fixed-point sums (:class:`~ndcg_spark.metrics.exact.FixedPoint`) per
  unit and finest slice cell, rolled up to every slice; percentiles are Spark's exact
  ``percentile`` with the counts as frequencies, over the rows of each slice.

The percentile intervals of the replicates' statistics, and of their differences, come back as
plain Python rows (one per measure x slice: a handful), because the verdicts are decided on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.bootstrap import quantiles
from ndcg_spark.config.statistic import MEAN, Statistic
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.exact import FixedPoint
from ndcg_spark.metrics.resampling import poisson_weight
from ndcg_spark.metrics.slices import roll_up, slice_memberships

__all__ = ["ARM", "UNIT", "Measure", "arm_statistics"]

#: the input columns naming a row's arm and its resampling unit
ARM, UNIT = "_arm", "_unit"
_SLICE = ("slice_dimension", "slice_value")
_ARMS = ("baseline", "candidate")


@dataclass(frozen=True)
class Measure:
    """A column of the input and the statistic taken of it (:class:`~ndcg_spark.config.statistic.Statistic`:
    a rate, or the mean or a percentile of the non-null values)."""

    column: str
    statistic: Statistic = MEAN

    @property
    def percentile(self) -> float | None:
        return self.statistic.percentile

    @property
    def additive(self) -> bool:
        return self.statistic.additive


def arm_statistics(
    rows: DataFrame,
    measures: Sequence[Measure],
    arms: tuple[str, str],
    slices: Sequence[str],
    *,
    replicates: int,
    ci_level: float,
    seed: int,
) -> list[dict[str, Any]]:
    """Per measure x slice: each arm's statistic with its denominators and interval, and the
    difference (candidate - baseline) and relative difference (candidate / baseline - 1) with theirs.

    Parameters
    ----------
    rows : ``_arm``, ``_unit``, the ``slices`` columns and every measure's column; rows of other
        arms are left out.
    measures : what to compute.
    arms : ``(baseline, candidate)``: the values of ``_arm``.
    slices : the slice columns (each value a slice of its own, null included); the overall slice
        is always there.
    replicates, ci_level, seed : the bootstrap (0 replicates: point estimates only).

    Returns
    -------
    list of dict
        ``measure`` (its index), ``slice_dimension``, ``slice_value``, and per arm ``baseline_n``,
        ``baseline_n_observed``, ``baseline_value``, ``baseline_interval`` (``[low, high]`` or
        None), the same for ``candidate_``, and ``difference``, ``difference_interval``,
        ``relative``, ``relative_interval``.
    """
    rows = rows.filter(F.col(ARM).isin(*arms))
    bounds = rows.agg(*[F.max(F.abs(F.col(m.column))).alias(f"b{i}") for i, m in enumerate(measures)]).first()
    scales = [FixedPoint.for_bound(bounds[f"b{i}"] or 0.0) for i in range(len(measures))]
    prepared = _prepared(rows, arms, measures, scales, slices)
    per_replicate = _additive_sums(_expanded(_per_unit(prepared, measures, slices), replicates, seed), slices)
    if any(not m.additive for m in measures):
        percentiles = _percentiles(_expanded(prepared, replicates, seed), measures, slices)
        per_replicate = join_null_safe(per_replicate, percentiles, ("_replicate", *_SLICE))
    statistics = per_replicate.select("_replicate", *_SLICE, "a0_n", "a1_n", *_per_measure(measures, scales))
    summary = statistics.groupBy(*_SLICE).agg(*_summaries(measures, ci_level))
    return [_as_row(i, row) for row in summary.collect() for i in range(len(measures))]


def _prepared(rows: DataFrame, arms: tuple[str, str], measures: Sequence[Measure], scales: Sequence[FixedPoint],
              slices: Sequence[str]) -> DataFrame:
    """Each row with its arm's index ``_side``, its values ``v{i}`` and the fixed-point parts of
    the additive measures' values."""
    parts = [part for i, (m, scale) in enumerate(zip(measures, scales)) if m.additive
             for part in scale.parts(F.col(m.column), f"m{i}")]
    return rows.select(
        F.col(UNIT), *[F.col(s) for s in slices], (F.col(ARM) == F.lit(arms[1])).cast("int").alias("_side"),
        *[F.col(m.column).alias(f"v{i}") for i, m in enumerate(measures)], *parts,
    )


def _per_unit(prepared: DataFrame, measures: Sequence[Measure], slices: Sequence[str]) -> DataFrame:
    """Per unit x finest slice cell, per arm: its rows, its observed rows of every measure and the
    fixed-point sums of the additive ones (integers: exact). A unit is drawn as a whole, so its
    rows can be added up before the expansion -- a unit in both arms becomes one row."""
    sums = {}
    for side in (0, 1):
        mine = F.col("_side") == side
        sums[f"a{side}_n"] = F.count(F.when(mine, True))
        for i, m in enumerate(measures):
            sums[f"a{side}_obs{i}"] = F.count(F.when(mine & F.col(f"v{i}").isNotNull(), True))
            if m.additive:
                for part in FixedPoint.names(f"m{i}"):
                    sums[f"a{side}_{part}"] = F.sum(F.when(mine, F.col(part)))
    return prepared.groupBy(UNIT, *slices).agg(*[value.alias(name) for name, value in sums.items()])


def _expanded(rows: DataFrame, replicates: int, seed: int) -> DataFrame:
    """Each row once per replicate ``0 .. replicates`` its unit is drawn in, with the count
    ``_draws`` (1 in replicate 0)."""
    replicate = F.col("_replicate")
    draws = F.when(replicate == 0, F.lit(1)).otherwise(poisson_weight(seed, replicate, F.col(UNIT)))
    expanded = rows.select("*", F.explode(F.sequence(F.lit(0), F.lit(replicates))).alias("_replicate"))
    return expanded.withColumn("_draws", draws).filter(F.col("_draws") > 0)


def _additive_sums(expanded: DataFrame, slices: Sequence[str]) -> DataFrame:
    """Per replicate x slice: every per-unit count and sum of :func:`_per_unit`, times the draws
    (exact, rolled up from the finest cells)."""
    names = [c for c in expanded.columns if c.startswith("a") and c[1:2] in ("0", "1")]
    sums = {name: F.sum(F.col("_draws") * F.col(name)) for name in names}
    return roll_up(expanded, ["_replicate"], slices, slices, sums)


def _percentiles(expanded: DataFrame, measures: Sequence[Measure], slices: Sequence[str]) -> DataFrame:
    """Per replicate x slice, per arm: the exact percentile of each percentile measure, the
    drawn counts as frequencies."""
    found = []
    for i, m in enumerate(measures):
        if not m.additive:
            for side in (0, 1):
                mine = F.when(F.col("_side") == side, F.col(f"v{i}"))
                found.append(F.percentile(mine, F.lit(m.percentile), F.col("_draws")).alias(f"a{side}_p{i}"))
    exploded = expanded.select("_replicate", slice_memberships(list(slices)).alias("_slice"), "_side", "_draws",
                               *[f"v{i}" for i, m in enumerate(measures) if not m.additive])
    return exploded.groupBy("_replicate", *[F.col(f"_slice.{c}").alias(c) for c in _SLICE]).agg(*found)


def _per_measure(measures: Sequence[Measure], scales: Sequence[FixedPoint]) -> list[Column]:
    """Per measure: each arm's statistic in this replicate, their difference and ratio minus 1."""
    out = []
    for i, (m, scale) in enumerate(zip(measures, scales)):
        stats = []
        for side in (0, 1):
            observed = F.col(f"a{side}_obs{i}")
            if m.additive:
                value = F.when(observed > 0, scale.value(f"a{side}_m{i}") / observed)
            else:
                value = F.col(f"a{side}_p{i}")
            stats.append(value)
            out += [observed.alias(f"{_ARMS[side]}_obs{i}"), value.alias(f"{_ARMS[side]}_{i}")]
        out += [(stats[1] - stats[0]).alias(f"difference_{i}"),
                F.when(stats[0] != 0, stats[1] / stats[0] - F.lit(1.0)).alias(f"relative_{i}")]
    return out


def _summaries(measures: Sequence[Measure], ci_level: float) -> list[Column]:
    """Per slice: the replicate-0 values (point estimates, denominators) and the percentile
    intervals of the replicates >= 1."""
    point, drawn = F.col("_replicate") == 0, F.col("_replicate") > 0
    out = [F.max(F.when(point, F.col(f"a{side}_n"))).alias(f"{_ARMS[side]}_n") for side in (0, 1)]
    for i in range(len(measures)):
        for name in ("baseline", "candidate", "difference", "relative"):
            column = F.col(f"{name}_{i}")
            out += [F.max(F.when(point, column)).alias(f"{name}_{i}"),
                    F.percentile(F.when(drawn, column), list(quantiles(ci_level))).alias(f"{name}_{i}_interval")]
        out += [F.max(F.when(point, F.col(f"{arm}_obs{i}"))).alias(f"{arm}_obs{i}") for arm in _ARMS]
    return out


def _as_row(i: int, row: Any) -> dict[str, Any]:
    """Measure ``i``'s fields of one collected summary row."""
    out: dict[str, Any] = {"measure": i, "slice_dimension": row["slice_dimension"], "slice_value": row["slice_value"]}
    for arm in _ARMS:
        out[f"{arm}_n"] = int(row[f"{arm}_n"] or 0)
        out[f"{arm}_n_observed"] = int(row[f"{arm}_obs{i}"] or 0)
    for name, key in (("baseline", "baseline_value"), ("candidate", "candidate_value"),
                      ("difference", "difference"), ("relative", "relative")):
        out[key] = row[f"{name}_{i}"]
        interval = row[f"{name}_{i}_interval"]
        out[f"{key.removesuffix('_value')}_interval"] = None if interval is None else [float(v) for v in interval]
    return out
