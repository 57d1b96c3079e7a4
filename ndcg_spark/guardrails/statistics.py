"""The guardrails' statistics core: per arm and slice a rate, a mean or a percentile with its
bootstrap interval, and the candidate-minus-baseline difference with its interval.

The input is one row per observation (a release session, or a request of one system) with its
arm, its resampling unit, its slice values and one column per *measure* (a double; null when
the event the measure is conditional on did not happen). Spark reduces the rows, once, to a row
per unit and finest slice cell -- per arm its rows, its observed rows, the exact fixed-point sums
(:class:`~ndcg_spark.metrics.exact.FixedPoint`) of the rates and means, the values of the
percentiles -- and the replicates ``0 .. R`` are drawn from those rows in numpy
(:mod:`ndcg_spark.guardrails.replicates`), as the aggregates and the comparison draw theirs:

- replicate 0 counts every row once: the point estimates and their denominators;
- replicate ``r >= 1`` counts a unit :func:`~ndcg_spark.metrics.resampling.poisson_weight` times,
  a pure function of ``(seed, r, unit)`` -- so every row of a unit moves together (a cluster
  bootstrap), and a unit that appears in both arms (a paired design) draws the same count in both;
- rates and means are the units' sums times their counts, exact, rolled up to every slice;
  percentiles are exact per replicate: Spark's ``percentile`` of the slice's values with the
  counts as frequencies, computed over the values sorted once, without a row per draw.

The statistics and the percentile intervals of the replicates come back as plain Python rows
(one per measure x slice: a handful), because the verdicts are decided on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.compat import to_arrow
from ndcg_spark.config.statistic import MEAN, Statistic
from ndcg_spark.guardrails.replicates import UnitRows, replicate_statistics
from ndcg_spark.metrics.exact import FixedPoint

__all__ = ["ARM", "UNIT", "Measure", "arm_statistics"]

#: the input columns naming a row's arm and its resampling unit
ARM, UNIT = "_arm", "_unit"


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
    # a mean's fixed-point grid follows its largest value; a rate's values are 0 or 1 (a rate of
    # zeros sums to 0 on any grid) and a percentile has no sum: neither needs a pass over the rows
    means = [i for i, m in enumerate(measures) if m.additive and not m.statistic.of_flags]
    bounds = rows.agg(*[F.max(F.abs(F.col(measures[i].column))).alias(f"b{i}") for i in means]).first() if means else {}
    scales = [FixedPoint.for_bound((bounds[f"b{i}"] or 0.0) if i in means else 1.0) for i in range(len(measures))]
    per_unit = _per_unit(_prepared(rows, arms, measures, scales, slices), measures, slices)
    collected = to_arrow(per_unit)  # a row per unit x finest cell: the replicates are drawn in numpy
    return replicate_statistics(
        _unit_rows(collected, measures, slices), slices,
        [(m.percentile, None) if not m.additive else (None, scale.exponent) for m, scale in zip(measures, scales)],
        replicates=replicates, ci_level=ci_level, seed=seed,
    )


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
            else:
                sums[f"a{side}_p{i}"] = F.collect_list(F.when(mine, F.col(f"v{i}")))
    cells = [F.col(s).cast("string").alias(f"_slice_{j}") for j, s in enumerate(slices)]
    grouped = prepared.groupBy(UNIT, *slices).agg(*[value.alias(name) for name, value in sums.items()])
    return grouped.select(F.col(UNIT).cast("string").alias(UNIT), *cells, *sums)


def _unit_rows(table: pa.Table, measures: Sequence[Measure], slices: Sequence[str]) -> UnitRows:
    """The collected per-unit rows as numpy arrays (:class:`~ndcg_spark.guardrails.replicates.UnitRows`)."""
    terms, samples = {}, {}
    for name in table.column_names:
        if name.startswith("a") and not pa.types.is_list(table.schema.field(name).type):
            terms[name] = table.column(name).fill_null(0).to_numpy().astype(np.int64)
    for i, m in enumerate(measures):
        if not m.additive:
            for side in (0, 1):
                lists = table.column(f"a{side}_p{i}").combine_chunks()
                lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
                values = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.float64)
                samples[(side, i)] = (values, np.repeat(np.arange(len(lengths)), lengths))
    return UnitRows(table.column(UNIT).to_pylist(),
                    [table.column(f"_slice_{j}").to_pylist() for j in range(len(slices))], terms, samples)
