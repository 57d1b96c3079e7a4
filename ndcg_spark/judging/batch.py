"""Each request's swings, range and bound in one vectorised pass over each partition's lists.

A plan needs, per request of its target, every reachable document's swing on the target
(:mod:`ndcg_spark.judging.target`), the request's unjudged range and the bound on what judging
its first documents in swing order can settle (:mod:`ndcg_spark.judging.spread`). Here they are
computed together, on the executors, by a numpy worker over Arrow batches of the request lists
(``mapInArrow``, the way :mod:`ndcg_spark.metrics.resampling`'s workers run): one pass, one
Python worker call per batch, no row-by-row Spark expression.

The swing rests on :func:`graded_ndcg`: a list's NDCG at K with one document judged at each gain
of the scale, for every reachable document at once. NDCG's DCG is a sum over groups of places
(a place, or a tie group under ``ties: average``) of the group's gain times its discount, and
judging one document changes one group's gain (``unjudged: zero`` / ``separate``) or inserts one
place and moves the later groups one down (``unjudged: exclude``); the ideal gets the gain
inserted in its sorted place. So with prefix and suffix sums over the groups and over the ideal,
each (document, gain) costs O(1) after O(M log M) per list: O(M log M + U x S) per list instead
of rescoring the whole list U x S times. Every value is the one the native expressions of
:func:`~ndcg_spark.judging.swings.graded_rows` give, up to the doubles' rounding (the sums are
added in another order); ``tests/test_judging.py`` holds both to the plain-Python oracle scoring
every grade.

>>> import numpy as np
>>> graded = graded_ndcg(np.array([1.0, np.nan, np.nan]), np.array([True, False, False]), None,
...                      np.array([1, 2]), 3, np.array([0.0, 1.0, 3.0, 7.0]), condenses=False, tie_aware=False,
...                      ideal=np.array([1.0, 0.0]))
>>> np.round(graded, 4)  # judging_swings' example: b (place 2) and c (place 3) at gains 0, 1, 3, 7
array([[1.    , 1.    , 0.7967, 0.7098],
       [1.    , 0.9197, 0.6885, 0.5897]])
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ndcg_spark.judging.spread import RequestLists, Scale, Shown, discounts, settle_bound, value_range

__all__ = ["graded_ndcg", "list_now", "measure_batches"]


@lru_cache(maxsize=64)
def _logs(k: int) -> np.ndarray:
    """``log2(p + 2)`` for the places ``p = 0 .. k`` (what a gain at place p is divided by)."""
    return np.array([math.log2(p + 2.0) for p in range(k + 1)])


@lru_cache(maxsize=64)
def _prefix(k: int) -> np.ndarray:
    """``D[j] = sum over p = 1..j of 1/log2(p + 1)``, ``j = 0 .. k``
    (:func:`~ndcg_spark.metrics.dcg.discount_prefix`)."""
    out = [0.0]
    for p in range(1, k + 1):
        out.append(out[-1] + 1.0 / math.log2(p + 1))
    return np.array(out)


def _contribution(total: np.ndarray, size: np.ndarray, start: np.ndarray, k: int, tie_aware: bool) -> np.ndarray:
    """What a group of places adds to DCG@k: its gains' ``total`` over ``size`` places from
    ``start`` (0-based): the tie group's average discount under ``tie_aware``, else (one place)
    ``total / log2(start + 2)``; 0 from K on."""
    inside = start < k
    at = np.where(inside, start, 0)
    if tie_aware:
        d = _prefix(k)
        out = total / size * (d[np.minimum(start + size, k)] - d[at])
    else:
        out = total / _logs(k)[at]
    return np.where(inside, out, 0.0)


def _groups(gains: np.ndarray, o1: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The groups of a sequence of places: each place its own, or with ``o1`` (``ties: average``)
    the runs of equal ``o1``: each group's start, size and gain total, and each place's group."""
    n = len(gains)
    if o1 is None or n == 0:
        idx = np.arange(n)
        return idx, np.ones(n, dtype=np.int64), gains.astype(float), idx
    new = np.ones(n, dtype=bool)
    new[1:] = o1[1:] != o1[:-1]
    starts = np.flatnonzero(new)
    of = np.cumsum(new) - 1
    sizes = np.diff(np.append(starts, n))
    totals = np.add.reduceat(gains.astype(float), starts)
    return starts, sizes, totals, of


def _ideal_sums(ideal: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ideal's gains (largest first) cut to K, and for each insertion point ``q``: what its
    first ``q`` add to IDCG@k in place, and what the rest add one place down."""
    top = np.asarray(ideal, dtype=float)[:k]
    logs = _logs(k)
    n = len(top)
    here = top / logs[:n]
    down = np.where(np.arange(n) + 1 < k, top / logs[1:n + 1], 0.0)
    before = np.concatenate([[0.0], np.cumsum(here)])
    after = np.concatenate([np.cumsum(down[::-1])[::-1], [0.0]])
    return top, before, after


def graded_ndcg(gains: np.ndarray, judged: np.ndarray, o1: np.ndarray | None, places: np.ndarray, k: int,
                xs: np.ndarray, *, condenses: bool, tie_aware: bool, ideal: np.ndarray) -> np.ndarray:
    """A list's NDCG@k with each of some unjudged documents judged alone at each gain of ``xs``.

    Parameters
    ----------
    gains, judged : the list's candidates in displayed order: each gain (NaN when unjudged) and
        whether it is judged.
    o1 : the candidates' sort keys (their tie groups under ``ties: average``); None otherwise.
    places : each document's place in the list (0-based), -1 when it is not shown there (under
        ``ideal_from: judgments`` it still enters the ideal).
    k : the cutoff.
    xs : the gains, ascending.
    condenses : ``unjudged: exclude`` (the other unjudged are dropped; the judged one takes a place).
    tie_aware : ``ties: average``.
    ideal : the ideal's gains without the document, largest first (the list's others, or the
        request's judged gains).

    Returns
    -------
    ``(len(places), len(xs))`` doubles; NaN where the ideal is empty (no NDCG).
    """
    places = np.asarray(places, dtype=np.int64)
    xs = np.asarray(xs, dtype=float)
    shown = places >= 0
    values = np.where(judged, gains, 0.0)
    if condenses:
        seq = np.flatnonzero(judged)
        before = np.concatenate([[0], np.cumsum(judged)])[np.where(shown, places, 0)]  # judged places above each
    else:
        seq = np.arange(len(gains))
        before = np.where(shown, places, 0)
    starts, sizes, totals, of = _groups(values[seq], None if (o1 is None or not tie_aware) else o1[seq])
    here = _contribution(totals, sizes, starts, k, tie_aware)
    prefix = np.concatenate([[0.0], np.cumsum(here)])
    if condenses:  # the groups below the document move one place down
        moved = _contribution(totals, sizes, starts + 1, k, tie_aware)
    else:
        moved = here
    suffix = np.concatenate([np.cumsum(moved[::-1])[::-1], [0.0]])
    n_groups = len(starts)
    x = xs[None, :]
    if condenses:
        joins = np.zeros(len(places), dtype=bool)
        group = np.full(len(places), n_groups)  # the first group below the document
        if n_groups:
            below = before < len(seq)
            group = np.where(below, of[np.minimum(before, len(seq) - 1)], n_groups)
            if tie_aware:  # a judged group of its own score takes it in
                mine = o1[np.where(shown, places, 0)]
                seq_o1 = o1[seq]
                above = (before > 0) & (seq_o1[np.maximum(before - 1, 0)] == mine)
                level = below & (seq_o1[np.minimum(before, len(seq) - 1)] == mine)
                joins = above | level
                group = np.where(above, of[np.maximum(before - 1, 0)], group)
        g = np.minimum(group, max(n_groups - 1, 0))
        joined = _contribution(totals[g][:, None] + x, sizes[g][:, None] + 1, starts[g][:, None], k, tie_aware) \
            if n_groups else np.zeros((len(places), len(xs)))
        alone = _contribution(x + 0.0 * before[:, None], np.ones((len(places), 1), dtype=np.int64),
                              before[:, None], k, tie_aware)
        after = suffix[np.minimum(group + 1, n_groups)][:, None]
        dcg = np.where(joins[:, None], prefix[group][:, None] + joined + after,
                       prefix[group][:, None] + alone + suffix[group][:, None])
    else:
        group = of[before] if len(of) else np.zeros(len(places), dtype=np.int64)
        g = group
        dcg = prefix[g][:, None] + _contribution(totals[g][:, None] + x, sizes[g][:, None], starts[g][:, None], k,
                                                  tie_aware) + suffix[g + 1][:, None] if n_groups else \
            np.zeros((len(places), len(xs)))
    dcg = np.where(shown[:, None], dcg, prefix[-1])
    top, above_sums, below_sums = _ideal_sums(ideal, k)
    q = np.sum(top[None, :] >= xs[:, None], axis=1)  # the gain's place in the ideal
    logs = _logs(k)
    idcg = above_sums[q] + np.where(q < k, xs / logs[np.minimum(q, k)], 0.0) + below_sums[q]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idcg[None, :] > 0, dcg / idcg[None, :], np.nan)


def list_now(gains: np.ndarray, judged: np.ndarray, o1: np.ndarray | None, k: int, *, condenses: bool,
             tie_aware: bool, ideal: np.ndarray) -> float:
    """The list's NDCG@k as it is (NaN without an ideal); ``ideal``: every gain of it, largest first."""
    values = np.where(judged, gains, 0.0)
    seq = np.flatnonzero(judged) if condenses else np.arange(len(gains))
    starts, sizes, totals, _ = _groups(values[seq], None if (o1 is None or not tie_aware) else o1[seq])
    dcg = float(np.sum(_contribution(totals, sizes, starts, k, tie_aware)))
    top = np.asarray(ideal, dtype=float)[:k]
    idcg = float(np.sum(top / _logs(k)[:len(top)]))
    return dcg / idcg if idcg > 0 else math.nan


# ------------------------------------------------------------------------------------------ the worker


@dataclass(frozen=True)
class Setting:
    """What the worker needs of the contract, the target and its sums (plain values: pickled to the executors)."""

    sides: tuple[tuple[str, str | None], ...]
    k: int
    kind: str
    xs: tuple[float, ...]
    scale: Scale
    condenses: bool
    tie_aware: bool
    from_judgments: bool
    empty_is_zero: bool
    total: float
    count: float


@dataclass
class _List:
    """One system's list of a request, as numpy arrays in displayed order."""

    system: str
    pool_version: str | None
    doc_ids: list
    gains: np.ndarray
    judged: np.ndarray
    o1: np.ndarray


def _unjudged(lst: _List) -> list:
    return [d for d, j in zip(lst.doc_ids, lst.judged) if not j]


def _request_wide(lists: list[_List]) -> list:
    """Every list's unjudged documents, once each, in order: what a judgment can move when the
    ideal comes from the judgments (a document judged moves every list's ideal)."""
    return list(dict.fromkeys(d for lst in lists for d in _unjudged(lst)))


def _places(lst: _List, docs: list) -> np.ndarray:
    """Each of ``docs``' place in ``lst`` (0-based), -1 where the list does not show it."""
    place = {d: p for p, d in enumerate(lst.doc_ids)}
    return np.array([place.get(d, -1) for d in docs], dtype=np.int64)


def _ideal_of(lst: _List, judged_ideal: Sequence[float] | None, setting: Setting) -> np.ndarray:
    """The ideal's gains without the document judged, largest first: the request's judged gains,
    or the list's others (unjudged as 0; under ``exclude`` only the judged)."""
    if setting.from_judgments:
        return np.asarray(() if judged_ideal is None else judged_ideal, dtype=float)
    if setting.condenses:
        others = lst.gains[lst.judged]
    else:
        values = np.where(lst.judged, lst.gains, 0.0)
        first = np.flatnonzero(~lst.judged)
        others = np.delete(values, first[0]) if len(first) else values
    return -np.sort(-np.asarray(others, dtype=float))


def _request(request_id, lists: list[_List], judged_ideal, row: dict, setting: Setting,
             ranges: _OneListRanges | None = None) -> tuple:
    """One request's ``((range, bound), docs)``: its unjudged range and the bound of what its first
    documents in swing order settle, and its documents' swings on the target with the sides that
    show them. With ``ranges``, a one-list request's ``(range, bound)`` is a function of the
    solved ranges, its problems handed to ``ranges``."""
    by_side = {(lst.system, lst.pool_version): lst for lst in lists}
    xs = np.asarray(setting.xs)
    request_wide = _request_wide(lists) if setting.from_judgments else None
    graded: dict = {}
    shown: dict = {}
    for i, side in enumerate(setting.sides):
        lst = by_side.get(side)
        if lst is None:
            continue
        docs = request_wide if request_wide is not None else _unjudged(lst)
        if not docs:
            continue
        places = _places(lst, docs)
        values = graded_ndcg(lst.gains, lst.judged, lst.o1, places, setting.k, xs, condenses=setting.condenses,
                             tie_aware=setting.tie_aware, ideal=_ideal_of(lst, judged_ideal, setting))
        for d, p, v in zip(docs, places, values):
            graded.setdefault(d, {})[i] = v
            if p >= 0:
                shown.setdefault(d, []).append((side[0], side[1], int(p) + 1))
    out_docs = []
    for d, swing in zip(graded, _swings(graded, row, setting)):
        by = sorted(shown.get(d, []), key=lambda s: (s[0], s[1] is not None, s[1] or "", s[2]))
        out_docs.append((d, swing, by))
    order = [d for _, d in sorted(((-s if s is not None else -math.inf, d) for d, s, _ in out_docs),
                                  key=lambda t: (t[0], t[1]))]
    if len(setting.sides) == 1 and setting.sides[0] in by_side and ranges is not None:
        job = _one_list_job(by_side[setting.sides[0]], lists, judged_ideal, order, row["weight"], setting, ranges)
        if job is not None:
            return job, out_docs
    request = _request_lists(request_id, by_side, lists, judged_ideal, setting)
    if request is None or not request.unjudged():
        return (0.0, None), out_docs
    low, high = value_range(request, setting.scale)
    whole = high - low
    if not out_docs:
        return (whole, None), out_docs
    return (whole, row["weight"] * settle_bound(request, setting.scale, order, whole)), out_docs


def _one_list_job(lst: _List, lists: list[_List], judged_ideal, order: list, weight, setting: Setting,
                  ranges: "_OneListRanges"):
    """A one-list request's range and bound as :func:`~ndcg_spark.judging.spread.value_range` and
    :func:`~ndcg_spark.judging.spread.settle_bound` give them, its problems handed to ``ranges``
    (solved with every other request's of the batch): a function of the solved ranges. None when
    a gain is negative (the general path then)."""
    k = setting.k
    weights = discounts(len(lst.doc_ids), k, lst.o1.tolist() if setting.tie_aware else None)
    judged_dcg = 0.0
    for gain, judged, w in zip(lst.gains.tolist(), lst.judged.tolist(), weights):
        if judged:
            judged_dcg += gain * w
    fixed = (list(judged_ideal.tolist()) if judged_ideal is not None else []) if setting.from_judgments else \
        [g for g, j in zip(lst.gains.tolist(), lst.judged.tolist()) if j]
    if any(g < 0 for g in fixed) or any(g < 0 for g in setting.scale.gains):
        return None
    place_weight = {d: w for d, w, j in zip(lst.doc_ids, weights, lst.judged.tolist()) if not j}
    open_docs = set(place_weight)
    if setting.from_judgments:
        open_docs |= {d for other in lists for d in _unjudged(other)}
    if not open_docs:
        return 0.0, None
    doc_weights = [place_weight.get(d, 0.0) for d in order]
    fixed.sort(reverse=True)
    whole = ranges.add(judged_dcg, fixed[:k], doc_weights)
    gains = sorted(setting.scale.gains)
    ends = sorted({gains[0], gains[-1]})
    steps = []
    for j in range(1, len(order) + 1):
        moved = math.fsum(doc_weights[:j])
        steps.append([ranges.add(judged_dcg + g * moved, sorted(fixed + [g] * j, reverse=True)[:k], doc_weights[j:])
                      for g in ends])
    if not order:
        return lambda solved: (solved[whole][1] - solved[whole][0], None)

    def finish(solved):
        low, high = solved[whole]
        span = high - low
        best = span / len(order) if set(order) >= open_docs else 0.0
        for j, problems in enumerate(steps, start=1):
            least = 0.0
            for i in problems:
                least = max(least, solved[i][1] - solved[i][0])
            best = max(best, (span - least) / j)
        return span, weight * best

    return finish


class _OneListRanges:
    """The value ranges of one-list problems (a request with some documents judged), solved
    together, by their shape: :meth:`ndcg_spark.judging.spread._Problem._solve_one_list` over
    arrays of problems instead of one at a time."""

    def __init__(self, scale: Scale) -> None:
        self.scale = scale
        self.shapes: dict[tuple[int, int], list[tuple[int, float, list[float], list[float]]]] = {}
        self.count = 0

    def add(self, judged_dcg: float, fixed: list[float], weights: Sequence[float]) -> int:
        """A problem: the judged DCG, the fixed ideal's top K (largest first), the open documents'
        discounts (0: it moves only the ideal); its index in :meth:`solve`'s answer."""
        counted = sorted((w for w in weights if w != 0.0), reverse=True)
        rest = min(sum(1 for w in weights if w == 0.0), self.scale.k)
        self.shapes.setdefault((len(counted), rest), []).append((self.count, judged_dcg, fixed, counted))
        self.count += 1
        return self.count - 1

    def solve(self) -> list[tuple[float, float]]:
        """Every problem's ``(low, high)``, by index."""
        from ndcg_spark.judging.spread import _options

        k, scale = self.scale.k, self.scale
        out: list[tuple[float, float]] = [(0.0, 0.0)] * self.count
        logs = _logs(k)[:k]
        for (m, rest), problems in self.shapes.items():
            parts = (([_options(True, False, m, scale)] if m else [])
                     + ([_options(False, True, rest, scale)] if rest else []))
            picks = (np.indices([len(p) for p in parts]).reshape(len(parts), -1) if parts
                     else np.zeros((0, 1), dtype=int))
            extra = np.concatenate([p[i] for p, i in zip(parts, picks)], axis=1) if parts else np.zeros((1, 0))
            n_combos, width = extra.shape[0], k + extra.shape[1]
            chunk = max(1, 2_000_000 // (n_combos * width))
            for at in range(0, len(problems), chunk):
                part = problems[at:at + chunk]
                index = np.array([p[0] for p in part])
                dcg = np.array([p[1] for p in part])
                fixed = np.zeros((len(part), k))
                for r, p in enumerate(part):
                    fixed[r, :len(p[2])] = p[2]
                ideals = np.concatenate([np.broadcast_to(fixed[:, None, :], (len(part), n_combos, k)),
                                         np.broadcast_to(extra[None, :, :], (len(part), n_combos, extra.shape[1]))],
                                        axis=2)
                ideals = -np.sort(-ideals, axis=2)[:, :, :k]
                idcg = (ideals / logs).sum(axis=2)
                inverse = np.where(idcg > 0, 1.0 / np.where(idcg > 0, idcg, 1.0), 0.0)
                top = bottom = dcg[:, None] * inverse
                if m:
                    weights = np.array([p[3] for p in part])
                    coefficients = weights[:, None, :] * inverse[:, :, None]
                    gains = extra[None, :, :m]
                    top = top + (coefficients * gains).sum(axis=2)
                    bottom = bottom + (coefficients[:, :, ::-1] * gains).sum(axis=2)
                low, high = bottom.min(axis=1), top.max(axis=1)
                for i, lo, hi in zip(index.tolist(), low.tolist(), high.tolist()):
                    out[i] = (lo, hi) if lo <= hi else (0.0, 0.0)
        return out


def _swings(graded: dict, row: dict, setting: Setting) -> list[float | None]:
    """Each graded document's ``max - min`` of the target's mean over the gains, its request at
    each (as :func:`~ndcg_spark.judging.target.target_swings`: the same terms, in the same order)."""
    n_docs, n_gains = len(graded), len(setting.xs)
    if not n_docs:
        return []
    sides = []
    for i in range(len(setting.sides)):
        now = row[f"v{i}"]
        values = np.full((n_docs, n_gains), math.nan if now is None else float(now))
        for u, per_side in enumerate(graded.values()):
            if i in per_side:
                v = per_side[i]
                zero = setting.empty_is_zero and setting.kind == "aggregate"  # no ideal counts 0 there
                values[u] = np.where(np.isnan(v), 0.0, v) if zero else v
        sides.append(values)
    counted = ~np.isnan(sides[0]) if len(sides) == 1 else ~np.isnan(sides[0]) & ~np.isnan(sides[1])
    value = sides[0] if len(sides) == 1 else sides[0] - sides[1]
    weight, in_mean = row["weight"], row["in_mean"]
    now = row["v0"] if len(sides) == 1 else (None if row["v0"] is None or row["v1"] is None else row["v0"] - row["v1"])
    total = (setting.total - (weight * now if in_mean else 0.0)) + np.where(counted, weight * value, 0.0)
    count = (setting.count - (weight if in_mean else 0.0)) + np.where(counted, weight, 0.0)
    means = np.where(count > 0, total / np.where(count > 0, count, 1.0), math.nan)
    known = ~np.isnan(means).all(axis=1)
    with np.errstate(invalid="ignore"):
        filled = np.where(known[:, None], means, 0.0)
        swing = np.nanmax(filled, axis=1) - np.nanmin(filled, axis=1)
    return [float(v) if k else None for v, k in zip(swing.tolist(), known.tolist())]


def _request_lists(request_id, by_side: dict, lists: list[_List], judged_ideal,
                   setting: Setting) -> RequestLists | None:
    """The request as the spread sees it (:func:`~ndcg_spark.judging.target.request_lists_of`)."""
    shown = []
    for side in setting.sides:
        lst = by_side.get(side)
        if lst is None:
            return None
        weights = discounts(len(lst.doc_ids), setting.k, lst.o1.tolist() if setting.tie_aware else None)
        shown.append(tuple(Shown(d, float(g) if j else None, w)
                           for d, g, j, w in zip(lst.doc_ids, lst.gains, lst.judged, weights)))
    if not setting.from_judgments:
        return RequestLists(request_id, tuple(shown), None)
    mine = {s.doc_id for side in shown for s in side}
    others = sorted({d for lst in lists for d in _unjudged(lst)} - mine)
    judged_gains = tuple(() if judged_ideal is None else judged_ideal.tolist())
    return RequestLists(request_id, tuple(shown), judged_gains, tuple(others))


def _offsets(array) -> np.ndarray:
    offsets = np.asarray(array.offsets, dtype=np.int64)
    return offsets - offsets[0]


def _fields(struct) -> dict:
    """A struct array's fields, its slice taken into account."""
    return dict(zip([f.name for f in struct.type], struct.flatten()))


def _numbers(array) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=float)


def _requests_of(columns: dict) -> Iterator[tuple]:
    """A batch's requests, in order: ``(request_id, its lists, its judged ideal)`` -- no list when
    the request's ``lists`` is null, no ideal when its ``judged_ideal`` is."""
    lists = columns["lists"]
    valid = np.asarray(lists.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    list_off = _offsets(lists)
    entries = _fields(lists.flatten())
    systems, pools = entries["system"].to_pylist(), entries["pool_version"].to_pylist()
    items = entries["items"]
    item_off = _offsets(items)
    item = _fields(items.flatten())
    doc_ids = item["doc_id"].to_pylist()
    gains, judged = _numbers(item["gain"]), np.asarray(item["judged"].to_numpy(zero_copy_only=False), dtype=bool)
    o1 = item["o1"].to_numpy(zero_copy_only=False)
    ideal_col = columns["judged_ideal"]
    ideal_valid = np.asarray(ideal_col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    ideal_off = _offsets(ideal_col)
    ideal_values = _numbers(ideal_col.flatten())
    for r, request_id in enumerate(columns["request_id"].to_pylist()):
        own = []
        if valid[r]:
            for e in range(list_off[r], list_off[r + 1]):
                a, b = item_off[e], item_off[e + 1]
                own.append(_List(systems[e], pools[e], doc_ids[a:b], gains[a:b], judged[a:b], o1[a:b]))
        yield request_id, own, ideal_values[ideal_off[r]:ideal_off[r + 1]] if ideal_valid[r] else None


def measure_batches(batches: Iterator, setting: Setting, schema) -> Iterator:
    """The worker (``mapInArrow``): per request row of ``batches`` (``request_id, weight, v0[, v1],
    in_mean, lists, judged_ideal``) one row ``request_id, weight, range, bound, docs``."""
    import pyarrow as pa

    for batch in batches:
        columns = {name: batch.column(name) for name in batch.schema.names}
        rows = {name: columns[name].to_pylist() for name in ("weight", "in_mean", *[f"v{i}" for i in
                                                                                   range(len(setting.sides))])}
        requests = _requests_of(columns)
        out = {"request_id": [], "weight": [], "range": [], "bound": [], "docs": []}
        ranges, pending = _OneListRanges(setting.scale), []
        for r, (request_id, own, judged_ideal) in enumerate(requests):
            row = {name: values[r] for name, values in rows.items()}
            measured, docs = _request(request_id, own, judged_ideal, row, setting, ranges) if own else ((0.0, None), [])
            out["request_id"].append(request_id)
            out["weight"].append(row["weight"])
            pending.append(measured)
            out["docs"].append([{"doc_id": d, "swing": s, "shown_by": [
                {"system": sy, "pool_version": pv, "rank": rank} for sy, pv, rank in by]} for d, s, by in docs])
        solved = ranges.solve()
        for measured in pending:
            whole, bound = measured(solved) if callable(measured) else measured
            out["range"].append(float(whole))
            out["bound"].append(None if bound is None else float(bound))
        yield pa.RecordBatch.from_pydict(out, schema=schema)


def request_measures(rows, lists, target, scale: Scale, contract, sums):
    """Per request of the target (``rows``: :func:`~ndcg_spark.judging.target.target_rows`), from
    its lists (:func:`~ndcg_spark.judging.lists.request_lists`), in one pass on the executors:
    ``request_id, weight, range, bound`` as :func:`~ndcg_spark.judging.target.request_ranges` gives
    them (with the swings) and ``docs``, each reachable document's ``doc_id, swing, shown_by`` as
    :func:`~ndcg_spark.judging.target.target_swings` gives them."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    from ndcg_spark.judging.swings import scale_of, tie_aware
    from ndcg_spark.metrics.resampling import check_python_workers

    check_python_workers(lists.sparkSession)
    setting = Setting(
        sides=tuple(target.sides), k=target.k, kind=target.kind,
        xs=tuple(sorted({float(gain) for _, gain in scale_of(contract)})), scale=scale,
        condenses=contract.unjudged.condenses, tie_aware=tie_aware(contract),
        from_judgments=contract.ideal_from == "judgments", empty_is_zero=not contract.empty_ideal.sets_aside,
        total=float(sums.total), count=float(sums.count))
    values = [f"v{i}" for i in range(len(target.sides))]
    reached = rows.select("request_id", "weight", *values, "in_mean").join(lists, "request_id", "left")
    doc_type = lists.schema["lists"].dataType.elementType["items"].dataType.elementType["doc_id"].dataType
    shown = T.ArrayType(T.StructType([T.StructField("system", T.StringType()),
                                      T.StructField("pool_version", T.StringType()),
                                      T.StructField("rank", T.IntegerType())]))
    schema = T.StructType([
        T.StructField("request_id", T.StringType()),
        T.StructField("weight", T.DoubleType()),
        T.StructField("range", T.DoubleType()),
        T.StructField("bound", T.DoubleType()),
        T.StructField("docs", T.ArrayType(T.StructType([T.StructField("doc_id", doc_type),
                                                         T.StructField("swing", T.DoubleType()),
                                                         T.StructField("shown_by", shown)]))),
    ])
    from functools import partial

    work = partial(measure_batches, setting=setting, schema=to_arrow_schema(schema))
    return reached.select("request_id", F.col("weight").cast("double").alias("weight"), *values, "in_mean", "lists",
                          "judged_ideal").mapInArrow(work, schema)


def _nulls(values) -> list:
    return [None if math.isnan(v) else float(v) for v in values]


def graded_batches(batches: Iterator, ks: tuple[int, ...], xs: tuple[float, ...], condenses: bool, tie_aware: bool,
                   from_judgments: bool, sides, schema) -> Iterator:
    """The worker of :func:`graded_lists`: per request row (``request_id, lists, judged_ideal``)
    one row per list x document its judgment can move."""
    import pyarrow as pa

    gains_x = np.asarray(xs, dtype=float)
    for batch in batches:
        columns = {name: batch.column(name) for name in batch.schema.names}
        requests = _requests_of(columns)
        out = {name: [] for name in ("system", "pool_version", "request_id", "doc_id", "rank", "now", "graded")}
        setting_ = Setting((), 0, "", xs, Scale((), 0), condenses, tie_aware, from_judgments, False, 0.0, 0.0)
        for request_id, own, judged_ideal in requests:
            request_wide = _request_wide(own) if from_judgments else None
            for lst in own:
                if sides is not None and (lst.system, lst.pool_version) not in sides:
                    continue
                docs = request_wide if request_wide is not None else _unjudged(lst)
                if not docs:
                    continue
                places = _places(lst, docs)
                ideal = _ideal_of(lst, judged_ideal, setting_)
                if from_judgments:
                    now_ideal = ideal
                else:
                    now_ideal = -np.sort(-np.where(lst.judged, lst.gains, 0.0)[
                        lst.judged if condenses else slice(None)])
                now = _nulls([list_now(lst.gains, lst.judged, lst.o1, k, condenses=condenses, tie_aware=tie_aware,
                                       ideal=now_ideal) for k in ks])
                per_k = [graded_ndcg(lst.gains, lst.judged, lst.o1, places, k, gains_x, condenses=condenses,
                                     tie_aware=tie_aware, ideal=ideal) for k in ks]
                for u, (d, p) in enumerate(zip(docs, places)):
                    out["system"].append(lst.system)
                    out["pool_version"].append(lst.pool_version)
                    out["request_id"].append(request_id)
                    out["doc_id"].append(d)
                    out["rank"].append(int(p) + 1 if p >= 0 else None)
                    out["now"].append(now)
                    out["graded"].append([_nulls([v[u, j] for v in per_k]) for j in range(len(xs))])
        yield pa.RecordBatch.from_pydict(out, schema=schema)


def graded_lists(lists, contract, sides=None):
    """:func:`~ndcg_spark.judging.swings.graded_rows`' rows (the same columns, the same values up to
    the doubles' rounding) from :func:`graded_ndcg` on a numpy worker per batch of requests."""
    from functools import partial

    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    from ndcg_spark.judging.swings import scale_of, tie_aware as ties_averaged
    from ndcg_spark.metrics.resampling import check_python_workers

    check_python_workers(lists.sparkSession)
    items = lists.schema["lists"].dataType.elementType
    schema = T.StructType([
        T.StructField("system", items["system"].dataType),
        T.StructField("pool_version", items["pool_version"].dataType),
        T.StructField("request_id", lists.schema["request_id"].dataType),
        T.StructField("doc_id", items["items"].dataType.elementType["doc_id"].dataType),
        T.StructField("rank", T.IntegerType()),
        T.StructField("now", T.ArrayType(T.DoubleType())),
        T.StructField("graded", T.ArrayType(T.ArrayType(T.DoubleType()))),
    ])
    work = partial(graded_batches, ks=tuple(contract.k), xs=tuple(sorted({float(g) for _, g in scale_of(contract)})),
                   condenses=contract.unjudged.condenses, tie_aware=ties_averaged(contract),
                   from_judgments=contract.ideal_from == "judgments",
                   sides=None if sides is None else {tuple(s) for s in sides}, schema=to_arrow_schema(schema))
    return lists.select("request_id", "lists", "judged_ideal").mapInArrow(work, schema)
