"""Spark's ``xxhash64`` in numpy: the same 64 bits for the same longs, ints and strings.

Spark's ``xxhash64(a, b, ...)`` hashes ``a`` with the seed 42, then ``b`` with that hash as its
seed, and so on (Spark's ``XXH64``: ``hashLong`` for a long, ``hashInt`` for an int,
``hashUnsafeBytes`` for a string's UTF-8 bytes). The resampling draws are such hashes of
``(seed, replicate, unit)``; here they are computed for every replicate x unit at once, as arrays
(:mod:`ndcg_spark.metrics.draws`). tests/test_draws.py checks them bit for bit against Spark's
own function.

Every value is a ``uint64`` array (wrapping arithmetic, as the JVM's ``long``); a signed
``long`` as Spark shows it is ``value.view(np.int64)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["SPARK_SEED", "Strings", "hash_int", "hash_long"]

_U = np.uint64
P1, P2, P3, P4, P5 = (_U(0x9E3779B185EBCA87), _U(0xC2B2AE3D27D4EB4F), _U(0x165667B19E3779F9),
                      _U(0x85EBCA77C2B2AE63), _U(0x27D4EB2F165667C5))

#: the seed of Spark's ``xxhash64`` (the hash of its first argument)
SPARK_SEED = _U(42)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U(r)) | (x >> _U(64 - r))


def hash_long(value: int | np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``XXH64.hashLong(value, seed)``."""
    with np.errstate(over="ignore"):
        h = seed + P5 + _U(8)
        h = h ^ (_rotl(np.asarray(value).astype(np.int64).view(_U) * P2, 31) * P1)
        return _finish(np.atleast_1d(_rotl(h, 27) * P1 + P4), None, [])


def hash_int(value: int | np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``XXH64.hashInt(value, seed)``."""
    with np.errstate(over="ignore"):
        h = seed + P5 + _U(4)
        h = h ^ ((np.asarray(value).astype(np.int64).view(_U) & _U(0xFFFFFFFF)) * P1)
        return _finish(np.atleast_1d(_rotl(h, 23) * P2 + P3), None, [])


class Strings:
    """Strings as Spark hashes them (their UTF-8 bytes), prepared once for many seeds: grouped by
    byte length, each group's 8-byte words read once (and, for the short-string loop, already
    multiplied into the form the hash mixes in)."""

    def __init__(self, values: Sequence[str | None]):
        self.size = len(values)
        # Spark's xxhash64 skips a null argument: its hash is the seed it was given
        self._nulls = np.flatnonzero(np.fromiter((v is None for v in values), dtype=bool, count=len(values)))
        encoded = [b"" if value is None else value.encode("utf-8") for value in values]
        lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        self._groups = []
        for length in np.unique(lengths):
            at = np.flatnonzero(lengths == length)
            raw = np.frombuffer(b"".join(encoded[i] for i in at), dtype=np.uint8).reshape(len(at), int(length))
            self._groups.append((at, _Words(raw)))

    def hash(self, seeds: np.ndarray) -> np.ndarray:
        """``hashUnsafeBytes`` of every string under every seed: shape ``(len(seeds), size)``."""
        seeds = np.asarray(seeds, dtype=_U).reshape(-1, 1)
        out = np.empty((seeds.shape[0], self.size), dtype=_U)
        for at, words in self._groups:
            out[:, at] = words.hash(seeds)
        out[:, self._nulls] = seeds
        return out


class _Words:
    """Strings of one length (rows of ``raw``), read as the JVM reads them (little-endian): full
    8-byte words (as they are, and as ``rotl(w * P2, 31) * P1``, the form the word loop mixes in),
    then a 4-byte word, then single bytes (both already times their prime)."""

    def __init__(self, raw: np.ndarray):
        n, self.length = raw.shape
        self.n = n
        full = self.length // 8
        with np.errstate(over="ignore"):
            self.raw = [raw[:, 8 * j:8 * j + 8].copy().view("<u8").reshape(n) for j in range(full)]
            self.mixed = [_rotl(w * P2, 31) * P1 for w in self.raw]
            offset, self.tail4 = 8 * full, None
            if offset + 4 <= self.length:
                self.tail4 = raw[:, offset:offset + 4].copy().view("<u4").reshape(n).astype(_U) * P1
                offset += 4
            self.tail_bytes = [raw[:, i].astype(_U) * P5 for i in range(offset, self.length)]

    def hash(self, seeds: np.ndarray) -> np.ndarray:
        """``hashUnsafeBytes`` under each seed, in place on one (seeds x strings) array; strings of 32
        bytes or more first mix their 32-byte stripes into four lanes (:meth:`_stripes`)."""
        with np.errstate(over="ignore"):
            if self.length >= 32:
                h, first_word = self._stripes(seeds)
            else:
                h, first_word = np.empty((seeds.shape[0], self.n), dtype=_U), 0
                h[...] = seeds + P5
            h += _U(self.length)
            tmp = np.empty_like(h)
            for k in self.mixed[first_word:]:
                _mix_word(h, k, tmp)
            return _finish(h, self.tail4, self.tail_bytes, tmp)

    def _stripes(self, seeds: np.ndarray) -> tuple[np.ndarray, int]:
        """Spark's four lanes over each 32-byte stripe, merged: the hash before the remaining words,
        and the index of the first of them."""
        stripes = self.length // 32
        lanes = [np.broadcast_to(seeds + init, (seeds.shape[0], self.n)).copy()
                 for init in (P1 + P2, P2, _U(0), _U(0) - P1)]
        for s in range(stripes):
            for lane in range(4):
                lanes[lane] = _rotl(lanes[lane] + self.raw[4 * s + lane] * P2, 31) * P1
        h = _rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)
        for lane in lanes:
            h = (h ^ (_rotl(lane * P2, 31) * P1)) * P1 + P4
        return h, 4 * stripes


def _rotl_inplace(h: np.ndarray, r: int, tmp: np.ndarray) -> None:
    np.right_shift(h, _U(64 - r), out=tmp)
    np.left_shift(h, _U(r), out=h)
    np.bitwise_or(h, tmp, out=h)


def _mix_word(h: np.ndarray, k: np.ndarray, tmp: np.ndarray) -> None:
    """``hash ^= k; hash = rotl(hash, 27) * P1 + P4`` (``k`` already ``rotl(word * P2, 31) * P1``)."""
    np.bitwise_xor(h, k, out=h)
    _rotl_inplace(h, 27, tmp)
    np.multiply(h, P1, out=h)
    np.add(h, P4, out=h)


def _finish(h: np.ndarray, tail4, tail_bytes, tmp: np.ndarray | None = None) -> np.ndarray:
    """The last 4-byte word and single bytes, then Spark's final mix (``fmix``), in place on ``h``."""
    tmp = np.empty_like(h) if tmp is None else tmp
    with np.errstate(over="ignore"):
        if tail4 is not None:
            np.bitwise_xor(h, tail4, out=h)
            _rotl_inplace(h, 23, tmp)
            np.multiply(h, P2, out=h)
            np.add(h, P3, out=h)
        for b in tail_bytes:
            np.bitwise_xor(h, b, out=h)
            _rotl_inplace(h, 11, tmp)
            np.multiply(h, P1, out=h)
        for shift, prime in ((33, P2), (29, P3)):
            np.right_shift(h, _U(shift), out=tmp)
            np.bitwise_xor(h, tmp, out=h)
            np.multiply(h, prime, out=h)
        np.right_shift(h, _U(32), out=tmp)
        np.bitwise_xor(h, tmp, out=h)
    return h
