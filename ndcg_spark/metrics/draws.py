"""The resampling draws as arrays, and the replicate sums they weigh: the bootstrap and the sign flips.

A unit's Poisson count in bootstrap replicate ``r`` and its sign in sign-flip replicate ``r`` are
pure functions of ``(seed, r, unit)``: the top 53 bits of Spark's ``xxhash64(seed, r, unit)`` as a
uniform in [0, 1) through the Poisson(1) inverse CDF, and the top bit of ``xxhash64(seed,
"sign_flip", r, unit)`` (the column forms are :func:`~ndcg_spark.metrics.resampling.poisson_weight`
and :func:`~ndcg_spark.metrics.resampling.sign_flip`). Here they are drawn for every replicate x
unit of a batch at once (:mod:`ndcg_spark.metrics.xxhash`, the same bits as Spark's function), and
each replicate's sums of count x term and sign x term taken per slice cell as matrix products:
no row per unit x replicate is ever built. Integer terms (fixed-point parts, counts) give exact
sums: in doubles while no partial sum can reach 2^52, else in 64-bit integers, and a sum that
could pass 2^62 is an error, never a wrap-around.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ndcg_spark.config.aggregate_spec import OVERALL, OVERALL_VALUE
from ndcg_spark.metrics.xxhash import SPARK_SEED, Strings, hash_int, hash_long

__all__ = ["POISSON_CDF", "CellSums", "Draws", "cell_sums", "drawn_sums", "sums_of_batches"]


def _poisson_cdf() -> tuple[float, ...]:
    """P(X <= j) for X ~ Poisson(1), j = 0, 1, ..., up to where a 53-bit uniform can still fall."""
    terms, out = [], []
    term = math.exp(-1.0)
    for j in range(40):
        if j:
            term /= j
        terms.append(term)
        cdf = math.fsum(terms)
        if cdf >= 1.0 - 2.0**-53:
            break
        out.append(cdf)
    return tuple(out)


#: the Poisson(1) inverse CDF's thresholds: a uniform ``u`` draws the first ``j`` with ``u < POISSON_CDF[j]``
POISSON_CDF = _poisson_cdf()
_CDF = np.array(POISSON_CDF)

#: replicates x units drawn per step (a few MB per array)
_STEP = 1 << 20


class Draws:
    """The draws of one batch of units (their ids as strings), for any replicates."""

    def __init__(self, seed: int, units: Sequence[str | None]):
        self._units = Strings(units)
        self._seed = hash_long(int(seed), SPARK_SEED)
        self._sign_seed = Strings(["sign_flip"]).hash(np.array([self._seed]))[0, 0]

    def counts(self, replicates: np.ndarray) -> np.ndarray:
        """Poisson(1) counts, shape ``(len(replicates), units)``."""
        h = self._units.hash(hash_int(replicates, self._seed))
        uniform = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
        return np.searchsorted(_CDF, uniform, side="right").astype(np.float64)

    def signs(self, replicates: np.ndarray) -> np.ndarray:
        """+1 or -1, shape ``(len(replicates), units)``."""
        h = self._units.hash(hash_int(replicates, self._sign_seed))
        return 1.0 - 2.0 * (h >> np.uint64(63)).astype(np.float64)


@dataclass
class CellSums:
    """Per cell (of ``cell_sums``' numbering) and replicate ``1..n``: the sums, and how many known
    terms went into each (0: the sum is null, as Spark's ``sum`` of no value)."""

    drawn: np.ndarray  # (cells, n, drawn terms) int64: sum of count x term
    drawn_known: np.ndarray  # (cells, n, drawn terms) int64; 0 past the bootstrap's replicates
    flipped: np.ndarray  # (cells, n, flipped terms) int64: sum of sign x term
    flipped_known: np.ndarray  # (cells, n, flipped terms) int64; 0 past the sign flips
    present: np.ndarray  # (cells, n) bool: a unit of the cell took part in the replicate


def cell_sums(
    draws: Draws,
    cells: np.ndarray,
    n_cells: int,
    drawn: tuple[np.ndarray, np.ndarray],
    flipped: tuple[np.ndarray, np.ndarray],
    *,
    bootstrap: int,
    sign_flips: int,
) -> CellSums:
    """Replicate sums per cell of one batch of units.

    Parameters
    ----------
    draws : the batch's units.
    cells : each unit's cell, ``0 .. n_cells - 1``.
    drawn, flipped : each unit's integer terms and which of them are known (two units x terms
        arrays: int64 with nulls as 0, and bool), to sum weighted by the unit's Poisson count
        (replicates ``1..bootstrap``) and by its sign (``1..sign_flips``).

    A unit takes part in every replicate when there are sign flips, else only where it is drawn
    (the rows a replicate expansion with a pure bootstrap keeps).
    """
    n = max(bootstrap, sign_flips)
    # every sum over any cells of the batch (the slices they are rolled up to) stays exact
    _exact_bound(drawn[0], _MAX_COUNT)
    _exact_bound(flipped[0], 1.0)
    order = np.argsort(cells, kind="stable")
    bounds = np.searchsorted(cells[order], np.arange(n_cells + 1))
    spans = [(c, slice(a, b)) for c, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])) if a < b]
    d_known = drawn[1][order].astype(np.float64)
    d_terms = [_Terms(drawn[0][order][at], _MAX_COUNT) for _, at in spans]
    f_terms = [_Terms(flipped[0][order][at], 1.0) for _, at in spans]
    out = CellSums(
        drawn=np.zeros((n_cells, n, drawn[0].shape[1]), np.int64),
        drawn_known=np.zeros((n_cells, n, drawn[0].shape[1]), np.int64),
        flipped=np.zeros((n_cells, n, flipped[0].shape[1]), np.int64),
        flipped_known=np.zeros((n_cells, n, flipped[0].shape[1]), np.int64),
        present=np.zeros((n_cells, n), bool),
    )
    if sign_flips:
        f_known = flipped[1][order]
        for c, at in spans:
            out.present[c] = True
            out.drawn_known[c] = d_known[at].sum(axis=0)
            out.flipped_known[c] = f_known[at].sum(axis=0)
    step = max(1, _STEP // max(len(order), 1))
    for start in range(0, n, step):
        replicates = np.arange(start + 1, min(n, start + step) + 1)
        rows = slice(start, start + len(replicates))
        counts = draws.counts(replicates)[:, order] if bootstrap else None
        signs = draws.signs(replicates)[:, order] if sign_flips else None
        for (c, at), d_cell, f_cell in zip(spans, d_terms, f_terms):
            if bootstrap:
                out.drawn[c, rows] = d_cell.weighed(counts[:, at])
            if sign_flips:
                out.flipped[c, rows] = f_cell.weighed(signs[:, at])
            else:
                taking_part = (counts[:, at] > 0).astype(np.float64)
                out.present[c, rows] = taking_part.any(axis=1)
                out.drawn_known[c, rows] = taking_part @ d_known[at]
    out.drawn_known[:, bootstrap:] = 0
    out.flipped_known[:, sign_flips:] = 0
    return out


def sums_of_batches(
    batches: Iterator[pa.RecordBatch], *, dimensions: Sequence[str], columns: Sequence[str],
    drawn: Sequence[str], flipped: Sequence[str], seed: int, bootstrap: int, sign_flips: int, schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """:func:`~ndcg_spark.metrics.resampling.replicate_sums` on a Python worker (``mapInArrow``):
    per batch of units (columns ``_unit``, ``columns`` holding the values of ``dimensions`` as
    strings, the terms), one batch of ``schema``: a row per slice and replicate a unit of the slice
    took part in, with the batch's sums (null where no term was known). The sums are taken per
    cell (one combination of slice values) and the cells added up to the overall slice and to
    each value of each dimension, here, so Spark only adds the batches' rows."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        cell_of, first = _cell_index(batch, columns)
        sums = cell_sums(Draws(seed, batch.column("_unit").to_pylist()), cell_of, len(first),
                         _terms(batch, drawn), _terms(batch, flipped), bootstrap=bootstrap, sign_flips=sign_flips)
        slices = _slices(batch, dimensions, columns, first)
        present = np.stack([sums.present[at].any(axis=0) for _, _, at in slices])
        at_slice, at_replicate = np.nonzero(present)
        names = np.array([(dimension, value) for dimension, value, _ in slices], dtype=object)[at_slice]
        arrays = [pa.array(names[:, 0], pa.string()), pa.array(names[:, 1], pa.string()),
                  pa.array((at_replicate + 1).astype(np.int32))]
        for total, known in ((sums.drawn, sums.drawn_known), (sums.flipped, sums.flipped_known)):
            rolled = np.stack([total[at].sum(axis=0) for _, _, at in slices])[at_slice, at_replicate]
            rolled_known = np.stack([known[at].sum(axis=0) for _, _, at in slices])[at_slice, at_replicate]
            arrays += [pa.array(rolled[:, j], mask=rolled_known[:, j] == 0) for j in range(total.shape[2])]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _slices(
    batch: pa.RecordBatch, dimensions: Sequence[str], columns: Sequence[str], first: np.ndarray
) -> list[tuple[str, str | None, np.ndarray]]:
    """The slices the batch's cells belong to: the overall one, and one per value of each dimension
    (``columns`` hold the values, as strings; null a value of its own) -- each with its cells."""
    cells = np.arange(len(first))
    found = [(OVERALL, OVERALL_VALUE, cells)]
    for dimension, column in zip(dimensions, columns):
        values = batch.column(column).take(pa.array(first)).to_pylist()
        by_value: dict[str | None, list[int]] = {}
        for cell, value in enumerate(values):
            by_value.setdefault(value, []).append(cell)
        found += [(dimension, value, np.array(at)) for value, at in by_value.items()]
    return found


def _terms(batch: pa.RecordBatch, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The integer columns ``names`` as a units x terms int64 matrix (nulls as 0) and which are known."""
    values = np.zeros((batch.num_rows, len(names)), np.int64)
    known = np.zeros((batch.num_rows, len(names)), bool)
    for j, name in enumerate(names):
        column = batch.column(name)
        values[:, j] = column.fill_null(0).to_numpy(zero_copy_only=False)
        known[:, j] = column.is_valid().to_numpy(zero_copy_only=False)
    return values, known


def _cell_index(batch: pa.RecordBatch, cells: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cell (``0 ..``) among the distinct combinations of ``cells`` in ``batch`` (null a
    value of its own), and the first row of each cell."""
    key = np.zeros(batch.num_rows, np.int64)
    for c in cells:
        encoded = pc.dictionary_encode(batch.column(c))
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        key = key * (len(encoded.dictionary) + 1) + codes
        key = np.unique(key, return_inverse=True)[1].reshape(-1)  # kept below the rows: never overflows
    _, first, cell_of = np.unique(key, return_index=True, return_inverse=True)
    return cell_of.reshape(-1), first


#: the largest Poisson count a draw can give
_MAX_COUNT = float(len(POISSON_CDF))


def drawn_sums(counts: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """``counts @ terms``, exact, as int64: Poisson counts (replicates x units, as :meth:`Draws.counts`
    gives them) times integer terms (units x terms); a sum that could pass 2^62 is an error.

    Without BLAS (``einsum``'s own loop, one thread): on a driver whose cores the executors share,
    BLAS's threads made the products many times slower than one thread, for a few columns."""
    if _exact_bound(terms, _MAX_COUNT) < _EXACT_IN_DOUBLES:
        return np.einsum("ru,ut->rt", counts, terms.astype(np.float64)).astype(np.int64)
    return counts.astype(np.int64) @ terms


class _Terms:
    """One cell's integer terms, ready to be weighed exactly by small integer weights (at most
    ``max_weight`` in absolute value): as doubles when no partial sum can reach 2^53, else as
    64-bit integers; a sum that could pass 2^62 is an error."""

    def __init__(self, terms: np.ndarray, max_weight: float):
        self._in_doubles = _exact_bound(terms, max_weight) < _EXACT_IN_DOUBLES
        self._terms = terms.astype(np.float64) if self._in_doubles else terms

    def weighed(self, weights: np.ndarray) -> np.ndarray:
        """``weights @ terms`` (weights: replicates x units, small integers held as doubles), exact, int64."""
        if self._in_doubles:
            return (weights @ self._terms).astype(np.int64)
        return weights.astype(np.int64) @ self._terms


def _exact_bound(terms: np.ndarray, max_weight: float) -> float:
    """The largest absolute sum of weight x term (weights at most ``max_weight``) over the units of
    ``terms`` (units x terms); an error when it could pass 2^62."""
    bound = max_weight * np.abs(terms).astype(np.float64).sum(axis=0).max(initial=0.0)
    if bound >= _EXACT_IN_LONGS:
        raise ArithmeticError(
            f"replicate sums: a sum of count x term could pass 2^62 (rule: exact_sum_overflow); bound {bound:.3g}"
        )
    return bound


#: below this bound a double product of integers is exact whatever the order of its additions
#: (2^53, with room for the bound itself being computed in doubles)
_EXACT_IN_DOUBLES = 2.0**52
#: below this an int64 product cannot wrap around
_EXACT_IN_LONGS = 2.0**62
