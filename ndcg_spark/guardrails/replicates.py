"""The guardrails' bootstrap replicates in numpy, from per-unit sums and values collected once.

The input is one row per resampling unit x finest slice cell (what
:func:`~ndcg_spark.guardrails.statistics.arm_statistics` collects from the executors): per arm its
rows, its observed rows of each measure, the fixed-point parts of the additive measures' sums
(integers) and the values of the percentile measures. Replicate ``r >= 1`` counts a unit
:class:`~ndcg_spark.metrics.draws.Draws` times -- the same Poisson counts, from the same hash of
``(seed, r, unit)``, as :func:`~ndcg_spark.metrics.resampling.poisson_weight` draws in Spark and
as the aggregates and the comparison draw -- and replicate 0 counts it once (the point estimates):

- a rate or a mean is a replicate's exact integer sums (:func:`~ndcg_spark.metrics.draws.drawn_sums`)
  recombined as :class:`~ndcg_spark.metrics.exact.FixedPoint` recombines them, over its count;
- a percentile is exact per replicate: the slice's values sorted once, and per replicate the
  percentile of that multiset with the units' counts as frequencies (:func:`weighted_percentile`,
  Spark's ``percentile`` with a frequency, to the bit);
- an interval is the percentile (:func:`weighted_percentile` again, every frequency 1) of the
  replicates' statistics, nulls left out.

No row per unit x replicate is ever built: a step of replicates is a matrix of counts.

Examples
--------
The median of 1, 2, 10 drawn once each; drawn 0, 3 and 1 times; not drawn at all:

>>> weighted_percentile(np.array([1.0, 2.0, 10.0]), np.array([[1, 1, 1], [0, 3, 1], [0, 0, 0]]), 0.5).tolist()
[2.0, 2.0, nan]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ndcg_spark.config.aggregate_spec import OVERALL, OVERALL_VALUE
from ndcg_spark.config.bootstrap import quantiles
from ndcg_spark.metrics.draws import Draws, drawn_sums
from ndcg_spark.metrics.exact import LOW_BITS

__all__ = ["UnitRows", "replicate_statistics", "weighted_percentile"]

_ARMS = ("baseline", "candidate")
#: replicates x drawn entries held at once (a few MB per array)
_STEP = 1 << 20
#: the most replicate sums (cells x replicates x terms) held at once: 256 MB
_MAX_HELD = 1 << 25


@dataclass(frozen=True)
class UnitRows:
    """One row per unit x finest slice cell, as numpy arrays.

    Attributes
    ----------
    units : each row's unit (its id as a string).
    slice_values : per slice dimension, each row's value (a string, or None).
    terms : integer columns (name -> int64 per row, nulls as 0): ``a{side}_n`` (rows),
        ``a{side}_obs{i}`` (observed rows of measure ``i``) and, for an additive measure,
        ``a{side}_m{i}_h`` / ``a{side}_m{i}_l`` (its fixed-point sum's parts).
    samples : for a percentile measure ``i``, per side: its values (float64) and the row each came from.
    """

    units: Sequence[str | None]
    slice_values: Sequence[Sequence[str | None]]
    terms: dict[str, np.ndarray]
    samples: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]


def weighted_percentile(values: np.ndarray, weights: np.ndarray, p: float) -> np.ndarray:
    """Per row of ``weights``, the percentile ``p`` of ``values`` each repeated its weight times,
    as Spark's ``percentile(value, p, frequency)`` computes it: position ``(N - 1) * p`` in the
    sorted multiset of ``N`` values, the two closest ranks interpolated linearly as
    ``low + (position - lower) * (high - low)`` (the value itself when they hold the same value;
    Spark 4's rounding, checked bit for bit by tests/test_guardrails.py); NaN where every weight is 0.

    ``values`` ascending, shape ``(m,)``; ``weights`` whole numbers, shape ``(rows, m)``.
    """
    rows, m = weights.shape
    if m == 0:
        return np.full(rows, np.nan)
    cumulative = np.cumsum(weights, axis=1, dtype=np.float64)
    total = cumulative[:, -1].copy()
    position = (total - 1.0) * p
    lower, higher = np.floor(position), np.ceil(position)
    # the entry holding 0-based rank x of the multiset: the first whose cumulative count passes x,
    # found for every row at once in the rows laid end to end (each shifted past the one before)
    shift = (np.max(total, initial=0.0) + 1.0) * np.arange(rows)
    cumulative += shift[:, None]
    flat = cumulative.ravel()
    first = np.arange(rows) * m
    at_lower = np.minimum(np.searchsorted(flat, lower + 1.0 + shift) - first, m - 1)
    at_higher = np.minimum(np.searchsorted(flat, higher + 1.0 + shift) - first, m - 1)
    low, high = values[at_lower], values[at_higher]
    with np.errstate(invalid="ignore"):
        between = low + (position - lower) * (high - low)
    out = np.where((higher == lower) | (low == high), low, between)
    out[total <= 0] = np.nan
    return out


def replicate_statistics(
    rows: UnitRows,
    dimensions: Sequence[str],
    measures: Sequence[tuple[float | None, int | None]],
    *,
    replicates: int,
    ci_level: float,
    seed: int,
) -> list[dict[str, Any]]:
    """Per measure x slice, each arm's statistic and the difference, with their intervals.

    Parameters
    ----------
    rows : the per-unit rows (:class:`UnitRows`).
    dimensions : the slice dimensions (``rows.slice_values`` holds their values); the overall
        slice is always there.
    measures : per measure, ``(percentile, None)`` for a percentile, or ``(None, exponent)`` for
        an additive one (its :class:`~ndcg_spark.metrics.exact.FixedPoint` scale).
    replicates, ci_level, seed : the bootstrap (0 replicates: point estimates only).

    Returns
    -------
    list of dict
        As :func:`~ndcg_spark.guardrails.statistics.arm_statistics` returns them.
    """
    if not len(rows.units):
        return []
    index: dict[str | None, int] = {}
    unit_of_row = np.fromiter((index.setdefault(u, len(index)) for u in rows.units), np.int64, len(rows.units))
    draws = Draws(seed, list(index))
    names = list(rows.terms)
    terms = np.stack([rows.terms[name] for name in names], axis=1)
    column = {name: j for j, name in enumerate(names)}
    cells, slices = _cells(rows, dimensions)
    if len(cells) * (replicates + 1) * len(names) > _MAX_HELD and len(cells) > len(slices):
        # too many cells to hold their sums: weigh each slice's rows instead (a row once per slice it is in)
        cells = [np.concatenate([cells[c] for c in of_slice]) for _, _, of_slice in slices]
        slices = [(dimension, value, np.array([s])) for s, (dimension, value, _) in enumerate(slices)]
    # the sums over all the rows stay exact (or this is an error): so do the cells' sums added up
    drawn_sums(np.zeros((1, len(terms))), terms)
    samples = {key: _sorted_samples(values, of_row, unit_of_row, cells, slices)
               for key, (values, of_row) in rows.samples.items()}
    by_cell = np.zeros((len(cells), replicates + 1, len(names)), np.int64)
    percentiles = {s: {key: np.full(replicates + 1, np.nan) for key in samples} for s in range(len(slices))}
    quantile_of = {(side, i): measures[i][0] for side, i in samples}
    for c, at in enumerate(cells):
        by_cell[c, 0] = terms[at].sum(axis=0)
    for s in range(len(slices)):
        for key, by_slice in samples.items():
            values, _ = by_slice[s]
            percentiles[s][key][0] = weighted_percentile(values, np.ones((1, len(values))), quantile_of[key])[0]
    widest = max([len(rows.units), *[len(v) for by_slice in samples.values() for v, _ in by_slice]])
    step = max(1, _STEP // widest)
    for start in range(1, replicates + 1, step):
        drawn = np.arange(start, min(replicates, start + step - 1) + 1)
        counts = draws.counts(drawn)
        at_rows = slice(start, start + len(drawn))
        for c, at in enumerate(cells):
            by_cell[c, at_rows] = drawn_sums(counts[:, unit_of_row[at]], terms[at])
        for s in range(len(slices)):
            for key, by_slice in samples.items():
                values, units = by_slice[s]
                percentiles[s][key][at_rows] = weighted_percentile(values, counts[:, units], quantile_of[key])
    # a slice's sums are its cells' (exact: integers)
    sums = {s: by_cell[of_slice].sum(axis=0) for s, (_, _, of_slice) in enumerate(slices)}
    found = []
    for s, (dimension, value, _) in enumerate(slices):
        for i, (percentile, exponent) in enumerate(measures):
            stats = {}
            for side in (0, 1):
                observed = sums[s][:, column[f"a{side}_obs{i}"]]
                if percentile is not None:
                    stats[side] = percentiles[s][(side, i)]
                else:
                    total = (sums[s][:, column[f"a{side}_m{i}_h"]].astype(np.float64) * 2.0 ** (LOW_BITS - exponent)
                             + sums[s][:, column[f"a{side}_m{i}_l"]].astype(np.float64) * 2.0**-exponent)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        stats[side] = np.where(observed > 0, total / observed, np.nan)
            with np.errstate(invalid="ignore", divide="ignore"):
                relative = np.where(stats[0] != 0, stats[1] / stats[0] - 1.0, np.nan)
            series = {"baseline": stats[0], "candidate": stats[1], "difference": stats[1] - stats[0],
                      "relative": relative}
            row: dict[str, Any] = {"measure": i, "slice_dimension": dimension, "slice_value": value}
            for side, arm in enumerate(_ARMS):
                row[f"{arm}_n"] = int(sums[s][0, column[f"a{side}_n"]])
                row[f"{arm}_n_observed"] = int(sums[s][0, column[f"a{side}_obs{i}"]])
            for name, key in (("baseline", "baseline_value"), ("candidate", "candidate_value"),
                              ("difference", "difference"), ("relative", "relative")):
                row[key] = _maybe(series[name][0])
                row[f"{key.removesuffix('_value')}_interval"] = _interval(series[name][1:], ci_level)
            found.append(row)
    return found


def _cells(rows: UnitRows, dimensions: Sequence[str]) -> tuple[
        list[np.ndarray], list[tuple[str, str | None, np.ndarray]]]:
    """The finest cells (one combination of slice values: their rows), and the slices -- the overall
    one and one per value (None a value of its own) of each dimension -- with their cells."""
    cell_of: dict[tuple[str | None, ...], list[int]] = {}
    keys_of_rows = list(zip(*rows.slice_values)) if dimensions else [()] * len(rows.units)
    for r, key in enumerate(keys_of_rows):
        cell_of.setdefault(key, []).append(r)
    keys = list(cell_of)
    found = [(OVERALL, OVERALL_VALUE, np.arange(len(keys)))]
    for d, dimension in enumerate(dimensions):
        by_value: dict[str | None, list[int]] = {}
        for c, key in enumerate(keys):
            by_value.setdefault(key[d], []).append(c)
        found += [(dimension, value, np.array(at, np.int64)) for value, at in by_value.items()]
    return [np.array(cell_of[key], np.int64) for key in keys], found


def _sorted_samples(values: np.ndarray, of_row: np.ndarray, unit_of_row: np.ndarray, cells: list[np.ndarray],
                    slices: list[tuple[str, str | None, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per slice, its values sorted ascending and the unit each came from."""
    out = []
    for _, _, of_slice in slices:
        member = np.zeros(len(unit_of_row), bool)
        member[np.concatenate([cells[c] for c in of_slice])] = True
        mine = member[of_row]
        order = np.argsort(values[mine], kind="stable")
        out.append((values[mine][order], unit_of_row[of_row[mine]][order]))
    return out


def _interval(series: np.ndarray, level: float) -> list[float] | None:
    """The percentile interval of the replicates' statistics (nulls left out), None without one."""
    known = np.sort(series[~np.isnan(series)])
    if not len(known):
        return None
    ones = np.ones((1, len(known)))
    return [float(weighted_percentile(known, ones, q)[0]) for q in quantiles(level)]


def _maybe(value: float) -> float | None:
    return None if np.isnan(value) else float(value)
