"""A guardrail's verdict from the interval of how much worse the candidate is (pure Python).

"Worse" follows the declared direction: for ``better: lower`` it is the difference
``candidate - baseline``, for ``better: higher`` the difference ``baseline - candidate``; in the
statistic's units for an ``absolute`` margin, as a share of the baseline's value for a
``relative`` one. Non-inferiority, read off the bootstrap interval of "worse":

- ``pass``: the whole interval lies below the margin (at most this much worse, at the level);
- ``fail``: the whole interval lies above it (worse by more than the margin);
- ``inconclusive``: the interval straddles the margin, or there is no interval.

>>> verdict("lower", "relative", 0.10, relative_interval=[0.21, 0.38])
'fail'
>>> verdict("higher", "absolute", 0.02, difference_interval=[-0.004, 0.031])
'pass'
>>> verdict("higher", "absolute", 0.02, difference_interval=[-0.035, 0.001])
'inconclusive'
>>> overall_verdict(["pass", "inconclusive", "pass"])
'inconclusive'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["overall_verdict", "verdict", "worse_interval"]


def worse_interval(
    better: str,
    margin_kind: str,
    *,
    difference_interval: Sequence[float] | None = None,
    relative_interval: Sequence[float] | None = None,
) -> tuple[float, float] | None:
    """The interval of how much worse the candidate is, in the margin's terms (None without one)."""
    interval = relative_interval if margin_kind == "relative" else difference_interval
    if interval is None or any(v is None for v in interval):
        return None
    low, high = float(interval[0]), float(interval[1])
    return (low, high) if better == "lower" else (-high, -low)


def verdict(
    better: str,
    margin_kind: str,
    margin: float,
    *,
    difference_interval: Sequence[float] | None = None,
    relative_interval: Sequence[float] | None = None,
) -> str:
    """``pass``, ``fail`` or ``inconclusive`` (module docstring)."""
    worse = worse_interval(better, margin_kind, difference_interval=difference_interval,
                           relative_interval=relative_interval)
    if worse is None:
        return "inconclusive"
    if worse[1] < margin:
        return "pass"
    if worse[0] > margin:
        return "fail"
    return "inconclusive"


def overall_verdict(verdicts: Iterable[str]) -> str:
    """``fail`` if any guardrail fails, else ``inconclusive`` if any is, else ``pass``."""
    found = set(verdicts)
    for word in ("fail", "inconclusive"):
        if word in found:
            return word
    return "pass"
