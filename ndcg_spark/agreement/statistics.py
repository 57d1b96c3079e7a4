"""The agreement's statistics, in numpy on the driver: an experiment history is small (one row per
experiment × metric × K × outcome; a team has tens or hundreds of experiments, not millions).

Pure functions of plain rows, testable without Spark:

- :func:`wilson_interval`: the Wilson score interval of a share (directional agreement);
- :func:`spearman`: the rank correlation of two samples (average ranks for ties);
- :func:`bootstrap_spearman`: its percentile interval over experiments resampled with replacement;
- :func:`summarize`: the summary rows of a history's rows, per contract × metric × K × outcome,
  with the best-agreeing metric × K of each outcome.

>>> [round(v, 4) for v in wilson_interval(8, 10, 0.95)]
[0.4902, 0.9433]
>>> spearman([1.0, 2.0, 3.0, 4.0], [10.0, 30.0, 20.0, 40.0])
0.8
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from ndcg_spark.config.agreement_spec import AgreementSpec
from ndcg_spark.config.bootstrap import quantiles

__all__ = ["BEST", "GROUP", "POOLED", "TIED", "bootstrap_indices", "bootstrap_spearman", "ranks", "spearman",
           "summarize", "too_few", "wilson_interval"]

#: ``contract_fingerprint`` of a summary that pools every contract (``pool_contracts: true``)
POOLED = "*"
#: a summary row's group: one statistic per contract × metric × K × outcome
GROUP = ("contract_fingerprint", "metric", "k", "outcome")
#: ``best``: the metric × K of the outcome whose correlation interval lies above every other's
BEST = "best"
#: ``best``: among the top, intervals overlapping the highest one's: not ranked against each other
TIED = "tied"
#: rows per chunk of the vectorized ranking (chunk × n × n booleans at most ~4 million)
_CELLS = 4_000_000


def wilson_interval(successes: int, n: int, level: float) -> tuple[float, float]:
    """The Wilson score interval of ``successes / n`` at two-sided ``level`` (``n`` > 0).

    >>> wilson_interval(0, 5, 0.95)[0], wilson_interval(5, 5, 0.95)[1]
    (0.0, 1.0)
    """
    if n <= 0:
        raise ValueError("wilson_interval: n must be > 0")
    z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; ties share their mean rank) along the last axis.

    >>> ranks(np.array([[3.0, 1.0, 3.0, 2.0]])).tolist()
    [[3.5, 1.0, 3.5, 2.0]]
    """
    x = np.asarray(values, dtype=float)
    below = (x[..., :, None] > x[..., None, :]).sum(-1)
    equal = (x[..., :, None] == x[..., None, :]).sum(-1)
    return below + (equal + 1) / 2.0


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's correlation of each row of ``a`` with the same row of ``b``; nan where a row is constant."""
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    denominator = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (a * b).sum(-1) / np.where(denominator > 0, denominator, 1.0), np.nan)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (Pearson's of their average ranks); nan when
    either is constant."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return float(_pearson_rows(ranks(xa[None, :]), ranks(ya[None, :]))[0])


def bootstrap_indices(n: int, replicates: int, seed: int) -> np.ndarray:
    """The experiments of each bootstrap replicate: ``replicates × n`` indices drawn with replacement
    by ``numpy.random.default_rng(seed).integers(0, n, size=(replicates, n))`` (documented so that a
    test, or a reader, can redraw them)."""
    return np.random.default_rng(seed).integers(0, n, size=(replicates, n))


def bootstrap_spearman(x: Sequence[float], y: Sequence[float], replicates: int, seed: int,
                       level: float) -> tuple[float | None, float | None]:
    """The percentile interval (numpy's linear interpolation, as Spark's ``percentile``) of Spearman's
    correlation over ``replicates`` resamples of the experiments (:func:`bootstrap_indices`); a
    resample whose values are all equal on one side has no correlation and is left out. ``(None,
    None)`` without replicates or when no resample has one."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if replicates == 0 or len(xa) < 2:
        return None, None
    draws = bootstrap_indices(len(xa), replicates, seed)
    chunk = max(1, _CELLS // (len(xa) * len(xa)))
    rhos = np.concatenate([_pearson_rows(ranks(xa[draws[i:i + chunk]]), ranks(ya[draws[i:i + chunk]]))
                           for i in range(0, replicates, chunk)])
    rhos = rhos[~np.isnan(rhos)]
    if rhos.size == 0:
        return None, None
    low, high = np.quantile(rhos, quantiles(level))
    return float(low), float(high)


def too_few(n: int, minimum: int) -> str:
    """The summary's note below the declared minimum.

    >>> too_few(5, 8)
    'too few experiments (5 < 8): counts only, no statistic'
    """
    return f"too few experiments ({n} < {minimum}): counts only, no statistic"


def _group_key(row: Mapping[str, Any], spec: AgreementSpec) -> tuple:
    fingerprint = POOLED if spec.pool_contracts else row["contract_fingerprint"]
    return fingerprint, row["metric"], row["k"], row["outcome"]


def summarize(history: Iterable[Mapping[str, Any]], spec: AgreementSpec) -> list[dict[str, Any]]:
    """The summary of an experiment history's rows (:func:`~ndcg_spark.agreement.history.experiment_history`,
    as dicts), one row per contract × metric × K × outcome, sorted so.

    Per group: ``n_experiments``; the counts (offline significant, outcome significant, both, of
    those the ones pointing the same way, false wins); and, from ``spec.min_experiments`` experiments
    on, the statistics: ``sensitivity`` (share of significant offline deltas), ``agreement`` (share
    of the both-significant pointing the same way) with its Wilson interval, ``spearman`` (offline
    delta against the outcome's improvement) with its bootstrap interval. Below it, ``note`` says
    there are too few and every statistic is None. ``best`` marks, per contract × outcome, the
    metric × K of the highest correlation when its interval lies above every other's (``best``), or
    every one whose interval overlaps the highest one's (``tied``: not ranked).
    """
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in history:
        groups.setdefault(_group_key(row, spec), []).append(row)
    out = []
    for key in sorted(groups, key=lambda g: (g[0], g[3], g[1], g[2])):
        rows = groups[key]
        out.append(_summary_row(key, rows, spec))
    _mark_best(out)
    return out


def _summary_row(key: tuple, rows: list[Mapping[str, Any]], spec: AgreementSpec) -> dict[str, Any]:
    fingerprint, metric, k, outcome = key
    n = len({(r["experiment_run"], r["baseline"], r["candidate"]) for r in rows})
    if n != len(rows):
        raise ValueError(f"summarize: {len(rows) - n} experiment(s) appear twice under {key}: one row each expected")
    both = [r for r in rows if r["offline_significant"] and r["outcome_significant"]]
    row: dict[str, Any] = {
        "contract_fingerprint": fingerprint, "metric": metric, "k": k, "outcome": outcome,
        "better": rows[0]["better"],
        "n_experiments": n,
        "enough": n >= spec.min_experiments,
        "note": None if n >= spec.min_experiments else too_few(n, spec.min_experiments),
        "n_offline_significant": sum(bool(r["offline_significant"]) for r in rows),
        "n_outcome_significant": sum(bool(r["outcome_significant"]) for r in rows),
        "n_both_significant": len(both),
        "n_agree": sum(bool(r["agrees"]) for r in both),
        "n_false_wins": sum(bool(r["false_win"]) for r in rows),
        "sensitivity": None, "agreement": None, "agreement_ci_low": None, "agreement_ci_high": None,
        "spearman": None, "spearman_ci_low": None, "spearman_ci_high": None, "best": None,
        "first_experiment": min(r["experiment_run"] for r in rows),
        "last_experiment": max(r["experiment_run"] for r in rows),
    }
    if not row["enough"]:
        return row
    row["sensitivity"] = row["n_offline_significant"] / n
    if both:
        row["agreement"] = row["n_agree"] / len(both)
        row["agreement_ci_low"], row["agreement_ci_high"] = wilson_interval(row["n_agree"], len(both), spec.ci_level)
    ordered = sorted(rows, key=lambda r: (r["experiment_run"], r["baseline"], r["candidate"]))
    x = [r["offline_delta"] for r in ordered]
    y = [r["outcome_improvement"] for r in ordered]
    rho = spearman(x, y)
    if not math.isnan(rho):
        row["spearman"] = rho
        row["spearman_ci_low"], row["spearman_ci_high"] = bootstrap_spearman(x, y, spec.replicates, spec.seed,
                                                                             spec.ci_level)
    return row


def _mark_best(rows: list[dict[str, Any]]) -> None:
    """``best`` per contract × outcome, among the rows with a correlation interval."""
    by_outcome: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        if row["spearman_ci_low"] is not None:
            by_outcome.setdefault((row["contract_fingerprint"], row["outcome"]), []).append(row)
    for candidates in by_outcome.values():
        top = max(candidates, key=lambda r: (r["spearman"], -r["k"]))
        overlapping = [r for r in candidates if r is not top and r["spearman_ci_high"] >= top["spearman_ci_low"]]
        if not overlapping:
            top["best"] = BEST
        else:
            for r in (top, *overlapping):
                r["best"] = TIED
