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

__all__ = ["SPARK_SEED", "Strings", "hash_int", "hash_long", "hash_strings"]

_U = np.uint64
P1, P2, P3, P4, P5 = (_U(0x9E3779B185EBCA87), _U(0xC2B2AE3D27D4EB4F), _U(0x165667B19E3779F9),
                      _U(0x85EBCA77C2B2AE63), _U(0x27D4EB2F165667C5))

#: the seed of Spark's ``xxhash64`` (the hash of its first argument)
SPARK_SEED = _U(42)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U(r)) | (x >> _U(64 - r))


def _fmix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U(33))
    h = h * P2
    h = h ^ (h >> _U(29))
    h = h * P3
    return h ^ (h >> _U(32))


def hash_long(value: int | np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``XXH64.hashLong(value, seed)``."""
    with np.errstate(over="ignore"):
        h = seed + P5 + _U(8)
        h = h ^ (_rotl(np.asarray(value).astype(np.int64).view(_U) * P2, 31) * P1)
        return _fmix(_rotl(h, 27) * P1 + P4)


def hash_int(value: int | np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's ``XXH64.hashInt(value, seed)``."""
    with np.errstate(over="ignore"):
        h = seed + P5 + _U(4)
        h = h ^ ((np.asarray(value).astype(np.int64).view(_U) & _U(0xFFFFFFFF)) * P1)
        return _fmix(_rotl(h, 23) * P2 + P3)


class Strings:
    """Strings as Spark hashes them (their UTF-8 bytes), prepared once for many seeds: grouped by
    byte length, each group's 8-byte words already multiplied into the form the hash mixes in."""

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
            self._groups.append((int(length), at, _prepared(raw)))

    def hash(self, seeds: np.ndarray) -> np.ndarray:
        """``hashUnsafeBytes`` of every string under every seed: shape ``(len(seeds), size)``."""
        seeds = np.asarray(seeds, dtype=_U).reshape(-1, 1)
        out = np.empty((seeds.shape[0], self.size), dtype=_U)
        for length, at, (words, tail4, tail_bytes) in self._groups:
            out[:, at] = _hash_prepared(length, len(at), words, tail4, tail_bytes, seeds)
        out[:, self._nulls] = seeds
        return out


def hash_strings(values: Sequence[str], seeds: np.ndarray) -> np.ndarray:
    """Spark's ``XXH64.hashUnsafeBytes`` of each of ``values`` under each of ``seeds``."""
    return Strings(values).hash(seeds)


def _prepared(raw: np.ndarray) -> tuple[list[np.ndarray], np.ndarray | None, list[np.ndarray]]:
    """The words of strings of one length (rows of ``raw``), little-endian as the JVM reads them:
    full 8-byte words (already ``rotl(w * P2, 31) * P1``), then a 4-byte word, then single bytes."""
    n, length = raw.shape
    full = length // 8
    with np.errstate(over="ignore"):
        words = [_rotl(raw[:, 8 * j:8 * j + 8].copy().view("<u8").reshape(n) * P2, 31) * P1 for j in range(full)]
        offset, tail4 = 8 * full, None
        if offset + 4 <= length:
            tail4 = raw[:, offset:offset + 4].copy().view("<u4").reshape(n).astype(_U) * P1
            offset += 4
        tail_bytes = [raw[:, i].astype(_U) * P5 for i in range(offset, length)]
    return words, tail4, tail_bytes


def _hash_prepared(length: int, n: int, words, tail4, tail_bytes, seeds: np.ndarray) -> np.ndarray:
    """``hashUnsafeBytes`` of ``n`` strings of ``length`` bytes under each seed, in place on one
    (seeds x strings) array; strings of 32 bytes or more first mix their 32-byte stripes into four
    lanes (:func:`_long_strings`)."""
    if length >= 32:
        return _long_strings(length, words, tail4, tail_bytes, seeds)
    h = np.empty((seeds.shape[0], n), dtype=_U)
    with np.errstate(over="ignore"):
        h[...] = seeds + P5 + _U(length)
        tmp = np.empty_like(h)
        for k in words:
            _mix_word(h, k, tmp)
        return _finish(h, tail4, tail_bytes, tmp)


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


def _finish(h: np.ndarray, tail4, tail_bytes, tmp: np.ndarray) -> np.ndarray:
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


def _long_strings(length: int, words, tail4, tail_bytes, seeds: np.ndarray) -> np.ndarray:
    """Strings of 32 bytes or more: Spark's four lanes over each 32-byte stripe, merged, then the
    remaining words as for short strings."""
    stripes = (length - 32) // 32 + 1
    raw_words = [_unprepared(k) for k in words]
    n = raw_words[0].shape[0]
    with np.errstate(over="ignore"):
        lanes = [np.broadcast_to(seeds + init, (seeds.shape[0], n)).copy()
                 for init in (P1 + P2, P2, _U(0), _U(0) - P1)]
        for s in range(stripes):
            for lane in range(4):
                v = lanes[lane] + raw_words[4 * s + lane] * P2
                lanes[lane] = _rotl(v, 31) * P1
        h = _rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)
        for lane in lanes:
            h = h ^ (_rotl(lane * P2, 31) * P1)
            h = h * P1 + P4
        h = h + _U(length)
        tmp = np.empty_like(h)
        for k in words[4 * stripes:]:
            _mix_word(h, k, tmp)
        return _finish(h, tail4, tail_bytes, tmp)


_P1_INVERSE = _U(pow(int(P1), -1, 2**64))
_P2_INVERSE = _U(pow(int(P2), -1, 2**64))


def _unprepared(k: np.ndarray) -> np.ndarray:
    """The raw word back from its prepared form (``rotl(w * P2, 31) * P1``): both steps invert."""
    with np.errstate(over="ignore"):
        x = k * _P1_INVERSE
        return ((x >> _U(31)) | (x << _U(33))) * _P2_INVERSE
