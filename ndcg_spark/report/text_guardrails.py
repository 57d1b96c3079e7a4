"""The guardrail table in words: the words of each verdict, how a guardrail's values, difference,
margin and reach rates are written, and the lines ``ndcg-spark compare`` prints (pure Python).

:func:`format_guardrails` is the CLI summary (re-exported by :mod:`ndcg_spark.report.text`); the
report's section (:mod:`ndcg_spark.report.sections_guardrails`) writes every number with the same
functions and every verdict with the same :data:`VERDICT_WORDS`, so the page and the terminal agree.
Rows are the guardrail table's (:data:`ndcg_spark.guardrails.columns.GUARDRAIL_COLUMNS`) as mappings.

A rate is written as a percentage, any other statistic with 3 significant digits; the difference
is relative (in %) under a relative margin, in points for a rate under an absolute one, else in
the statistic's units. The margin carries the sign of "worse" (``+`` when lower is better):

>>> latency = {"guardrail": "latency_p95", "statistic": "p95", "better": "lower", "margin_kind": "relative",
...            "margin": 0.1, "baseline_value": 412.3, "candidate_value": 1535.0, "relative_difference": 0.298,
...            "relative_ci_low": 0.251, "relative_ci_high": 0.34}
>>> fmt_value(latency, "baseline"), fmt_value(latency, "candidate"), fmt_difference(latency), fmt_margin(latency)
('412', '1,540', ('+29.8%', '[+25.1%, +34.0%]'), '+10.0%')
>>> completed = {"statistic": "rate", "better": "higher", "margin_kind": "absolute", "margin": 0.02,
...              "baseline_value": 0.812, "difference": 0.008, "difference_ci_low": -0.004, "difference_ci_high": 0.02}
>>> fmt_value(completed, "baseline"), fmt_difference(completed), fmt_margin(completed)
('81.2%', ('+0.8 pts', '[-0.4 pts, +2.0 pts]'), '-2.0 pts')
>>> fmt_reach({"statistic": "mean", "baseline_observed_share": 0.851, "candidate_observed_share": 0.86,
...            "observed_share_difference": 0.009}), fmt_reach(completed)
('reached 85.1% → 86.0% (+0.9 pts)', '')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ndcg_spark.config.statistic import Statistic
from ndcg_spark.report.format import OVERALL, fmt_count, fmt_delta, fmt_interval, fmt_points, fmt_share, sort_key
from ndcg_spark.measures import LEGACY_METRIC
from ndcg_spark.report.panel import declared, label, metric_of
from ndcg_spark.report.sections_comparison import comparison_pairs

__all__ = ["HEADLINE_K", "headline_label", "VERDICT_WORDS", "Words", "disagreeing_slices", "fmt_arm_interval", "fmt_difference",
           "fmt_margin", "fmt_reach", "fmt_sig", "fmt_value", "format_guardrails", "guardrail_label", "is_conditional",
           "offline_headline", "overall_rows", "overall_verdict", "release_counts", "verdict_words"]

Row = Mapping[str, Any]

#: the offline delta beside the guardrails is the comparison's at its largest K up to this one
HEADLINE_K = 10


class Words(NamedTuple):
    """How a verdict is said: ``flag`` (the CLI's first line), ``word`` (in a line or a cell),
    ``css`` (the report's colour class) and ``meaning`` (the report's legend)."""

    flag: str
    word: str
    css: str
    meaning: str


#: the one table of words per verdict, for the CLI and the report
VERDICT_WORDS: dict[str, Words] = {
    "pass": Words("PASS", "pass", "better", "the interval of how much worse the candidate is lies clear of the margin"),
    "fail": Words("FAIL", "fail", "worse", "the interval lies wholly beyond the margin"),
    "inconclusive": Words("INCONCLUSIVE", "inconclusive", "no-clear-difference",
                          "the interval straddles the margin: neither shown within it nor beyond it"),
}
_NO_VERDICT = Words("NO VERDICT", "no verdict", "no-interval", "no interval: too few rows with a value")


def verdict_words(verdict: Any) -> Words:
    """The words of ``pass`` / ``fail`` / ``inconclusive`` (``no verdict`` for anything else)."""
    return VERDICT_WORDS.get(str(verdict).strip().lower(), _NO_VERDICT) if verdict is not None else _NO_VERDICT


def _number(x: Any) -> float | None:
    """A table value as a float (a CSV table reads numbers back as text); None when missing."""
    try:
        v = None if x is None or x == "" else float(x)
    except (TypeError, ValueError):
        return None
    return None if v is None or math.isnan(v) else v


def fmt_sig(x: Any, digits: int = 3, sign: bool = False) -> str:
    """``x`` with ``digits`` significant digits and thousands separators (``1,230``, ``0.0123``); ``n/a``."""
    v = _number(x)
    if v is None:
        return "n/a"
    decimals = 0 if v == 0 else digits - 1 - math.floor(math.log10(abs(v)))
    return f"{round(v, decimals):{'+' if sign else ''},.{max(decimals, 0)}f}"


def _signed_percent(x: Any) -> str:
    v = _number(x)
    return "n/a" if v is None else f"{v * 100:+.1f}%"


def is_conditional(row: Row) -> bool:
    """A mean or percentile: over the rows that reached the event, so never shown without its reach rate."""
    return Statistic.parse(row.get("statistic")).conditional


def guardrail_label(row: Row) -> str:
    """The guardrail's name, with ``@K`` when it has one (offline ``top_k_lacks``)."""
    k = row.get("k")
    return str(row.get("guardrail")) + ("" if k is None else f"@{k}")


def _fmt_statistic(row: Row) -> Callable[[Any], str]:
    return fmt_sig if is_conditional(row) else fmt_share


def fmt_value(row: Row, side: str) -> str:
    """One arm's statistic (``side``: ``baseline`` or ``candidate``): a rate in %, else 3 significant digits."""
    return _fmt_statistic(row)(row.get(f"{side}_value"))


def fmt_arm_interval(row: Row, side: str) -> str:
    """One arm's bootstrap interval, written like its value; empty without one."""
    return fmt_interval(row.get(f"{side}_ci_low"), row.get(f"{side}_ci_high"), _fmt_statistic(row))


def fmt_difference(row: Row) -> tuple[str, str]:
    """The difference (candidate − baseline) and its interval, in the margin's terms."""
    if row.get("margin_kind") == "relative":
        names, fmt = ("relative_difference", "relative_ci_low", "relative_ci_high"), _signed_percent
    else:
        names = ("difference", "difference_ci_low", "difference_ci_high")
        fmt = (lambda x: fmt_sig(x, sign=True)) if is_conditional(row) else fmt_points
    value, lo, hi = (row.get(n) for n in names)
    return fmt(value), fmt_interval(lo, hi, fmt)


def fmt_margin(row: Row) -> str:
    """How much worse the candidate may be, signed in the worse direction (``+`` when lower is better)."""
    margin = _number(row.get("margin"))
    if margin is None:
        return "n/a"
    worse = margin if row.get("better") == "lower" else -margin
    if row.get("margin_kind") == "relative":
        return _signed_percent(worse)
    return fmt_sig(worse, sign=True) if is_conditional(row) else fmt_points(worse)


def fmt_reach(row: Row) -> str:
    """``reached 85.1% → 86.0% (+0.9 pts)`` for a conditional statistic; empty for a rate."""
    if not is_conditional(row):
        return ""
    change = row.get("observed_share_difference")
    shares = f"{fmt_share(row.get('baseline_observed_share'))} → {fmt_share(row.get('candidate_observed_share'))}"
    return f"reached {shares}" + ("" if change is None else f" ({fmt_points(change)})")


def _order(row: Row) -> tuple:
    """Release guardrails first, then by name and K (a number even when read back as text)."""
    k = _number(row.get("k"))
    return row.get("source") != "release", str(row.get("guardrail")), k is None, k or 0.0


def overall_rows(rows: Sequence[Row]) -> list[Row]:
    """The overall-slice rows, release guardrails first."""
    return sorted((r for r in rows if r.get("slice_dimension") == OVERALL), key=_order)


def disagreeing_slices(rows: Sequence[Row]) -> list[tuple[Row, Row]]:
    """``(slice row, its overall row)`` for every slice whose verdict differs from the overall one (one comparison)."""
    overall = {(r.get("guardrail"), r.get("k")): r for r in rows if r.get("slice_dimension") == OVERALL}
    slices = sorted((r for r in rows if r.get("slice_dimension") != OVERALL),
                    key=lambda r: (*_order(r), *sort_key(r, "slice_dimension", "slice_value")))
    pairs = ((r, overall.get((r.get("guardrail"), r.get("k")))) for r in slices)
    return [(r, o) for r, o in pairs if o is not None and r.get("verdict") != o.get("verdict")]


def overall_verdict(rows: Sequence[Row]) -> Any:
    """The comparison's ``overall_verdict`` (recomputed from the overall rows when the column is empty)."""
    stamped = next((r.get("overall_verdict") for r in rows if r.get("overall_verdict") is not None), None)
    if stamped is not None:
        return stamped
    verdicts = {r.get("verdict") for r in overall_rows(rows)}
    return next((v for v in ("fail", "inconclusive") if v in verdicts), "pass" if verdicts else None)


def offline_headline(comparison_rows: Sequence[Row], baseline: Any, candidate: Any,
                     stamped: Row | None = None) -> Row | None:
    """The comparison's overall row of the guardrails' headline metric, or None: the metric and K
    ``stamped`` on the guardrail rows (``headline_metric``, ``headline_k``: ``guardrails.headline``),
    else -- rows from before the stamp -- the first declared metric (NDCG by default) at its
    largest K up to :data:`HEADLINE_K` (else its smallest K)."""
    metric = (stamped or {}).get("headline_metric") or (declared(comparison_rows)[0] if comparison_rows else None)
    overall = [r for r in comparison_rows if r.get("slice_dimension") == OVERALL and _number(r.get("k")) is not None
               and (r.get("baseline"), r.get("candidate")) == (baseline, candidate) and metric_of(r) == metric]
    k = _number((stamped or {}).get("headline_k"))
    if k is not None:
        return next((r for r in overall if _number(r.get("k")) == k), None)
    within = [r for r in overall if _number(r.get("k")) <= HEADLINE_K]
    if within:
        return max(within, key=lambda r: _number(r.get("k")))
    return min(overall, key=lambda r: _number(r.get("k"))) if overall else None


def release_counts(rows: Sequence[Row]) -> tuple[str, str] | None:
    """The release rows read and set aside as bad input (``8,040``, ``12``); None without a release guardrail."""
    release = next((r for r in rows if r.get("rows_read") is not None), None)
    return None if release is None else (fmt_count(release.get("rows_read")), fmt_count(release.get("rows_set_aside")))


def headline_label(stamped: Row | None) -> str:
    """``NDCG@10``: the guardrail rows' headline (``NDCG`` for rows from before the stamp)."""
    stamped = stamped or {}
    return label(stamped.get("headline_metric") or LEGACY_METRIC, stamped.get("headline_k"))


def _offline_words(row: Row | None, stamped: Row | None = None) -> str:
    if row is None:
        return f"{headline_label(stamped)}: no comparison row"
    interval = fmt_interval(row.get("delta_macro_ci_low"), row.get("delta_macro_ci_high"), fmt_delta)
    return f"{label(metric_of(row), row.get('k'))} {fmt_delta(row.get('delta_macro'))}" + (f" {interval}" if interval else "")


# --- the CLI summary ---------------------------------------------------------------------------


def format_guardrails(rows: Sequence[Row], comparison_rows: Sequence[Row]) -> list[str]:
    """The lines printed after ``compare``: per baseline x candidate of the guardrail rows, the verdict
    beside the headline metric's delta (NDCG's by default), one line per overall guardrail, the slices
    that disagree, the settings.

    Parameters
    ----------
    rows : sequence of mappings
        Guardrail table rows (one run), every slice.
    comparison_rows : sequence of mappings
        The comparison table's rows of the same run: the headline metric's delta (overall, largest K <= 10).

    Returns
    -------
    list of str
        No line when there is no guardrail row.

    Examples
    --------
    >>> p95 = {"baseline": "bm25", "candidate": "hybrid", "guardrail": "latency_p95", "source": "release",
    ...        "statistic": "p95", "better": "lower", "margin_kind": "relative", "margin": 0.1, "k": None,
    ...        "slice_dimension": "overall", "baseline_value": 412.0, "candidate_value": 535.0,
    ...        "baseline_observed_share": 1.0, "candidate_observed_share": 0.98, "relative_difference": 0.298,
    ...        "relative_ci_low": 0.251, "relative_ci_high": 0.34, "verdict": "fail", "overall_verdict": "fail",
    ...        "ci_level": 0.95, "bootstrap_replicates": 200, "seed": 0, "guardrail_fingerprint": "7c1e",
    ...        "rows_read": 8040, "rows_set_aside": 12}
    >>> ndcg = {"baseline": "bm25", "candidate": "hybrid", "slice_dimension": "overall", "k": 10, "metric": "ndcg",
    ...         "delta_macro": 0.0912, "delta_macro_ci_low": 0.0711, "delta_macro_ci_high": 0.1104}
    >>> for line in format_guardrails([p95, dict(p95, slice_dimension="site", slice_value="b", verdict="pass")],
    ...                               [ndcg]):  # doctest: +NORMALIZE_WHITESPACE
    ...     print(line)
    guardrails hybrid vs bm25: FAIL — NDCG@10 +0.0912 [+0.0711, +0.1104]; latency_p95 +29.8% (fail)
      guardrail                stat   baseline → candidate  difference [interval]                 margin  verdict
      latency_p95              p95               412 → 535  +29.8% [+25.1%, +34.0%]               +10.0%  fail
        reached 100.0% → 98.0%
      slices whose verdict differs from the overall one:
        latency_p95 in site=b: +29.8% [+25.1%, +34.0%] pass (overall fail); reached 100.0% → 98.0%
      guardrails 7c1e: 95% intervals, 200 bootstrap replicates, seed 0; release rows 8,040 read, 12 set aside
    """
    lines: list[str] = []
    for (baseline, candidate), pair in comparison_pairs(rows).items():
        overall = overall_rows(pair)
        lines.append(_headline(baseline, candidate, pair, overall, comparison_rows))
        lines.append(f"  {'guardrail':<24} {'stat':<5} {'baseline → candidate':>21}  {'difference [interval]':<34} "
                     f"{'margin':>9}  verdict")
        lines += [_overall_line(r) for r in overall]
        slices = disagreeing_slices(pair)
        if slices:
            lines.append("  slices whose verdict differs from the overall one:")
        lines += [f"    {_slice_line(r, o)}" for r, o in slices]
        lines.append(_settings_line(pair))
    return lines


def _headline(baseline: Any, candidate: Any, pair: Sequence[Row], overall: Sequence[Row],
              comparison_rows: Sequence[Row]) -> str:
    """``guardrails hybrid vs bm25: FAIL — NDCG@10 +0.0912 [...]; latency_p95 +29.8% (fail)``"""
    named = [f"{guardrail_label(r)} {fmt_difference(r)[0]} ({verdict_words(r.get('verdict')).word})"
             for r in overall if r.get("verdict") != "pass"]
    rest = "; ".join(named) if named else f"all {len(overall)} guardrails pass"
    return (f"guardrails {candidate} vs {baseline}: {verdict_words(overall_verdict(pair)).flag} — "
            f"{_offline_words(offline_headline(comparison_rows, baseline, candidate, pair[0]), pair[0])}; {rest}")


def _overall_line(r: Row) -> str:
    values = f"{fmt_value(r, 'baseline')} → {fmt_value(r, 'candidate')}"
    difference = " ".join(t for t in fmt_difference(r) if t)
    reach = fmt_reach(r)
    return (f"  {guardrail_label(r):<24} {str(r.get('statistic')):<5} {values:>21}  {difference:<34} "
            f"{fmt_margin(r):>9}  {verdict_words(r.get('verdict')).word}" + (f"  {reach}" if reach else ""))


def _slice_line(r: Row, overall: Row) -> str:
    """``time_to_procedure in equipment_rarity=rare: +24.9% [...] fail (overall pass); reached …``"""
    difference = " ".join(t for t in fmt_difference(r) if t)
    reach = fmt_reach(r)
    return (f"{guardrail_label(r)} in {r.get('slice_dimension')}={r.get('slice_value')}: {difference} "
            f"{verdict_words(r.get('verdict')).word} (overall {verdict_words(overall.get('verdict')).word})"
            + (f"; {reach}" if reach else ""))


def _settings_line(pair: Sequence[Row]) -> str:
    """The fingerprint, interval settings and the release rows read / set aside."""
    first, counts = pair[0], release_counts(pair)
    level = _number(first.get("ci_level"))
    rows = "" if counts is None else f"; release rows {counts[0]} read, {counts[1]} set aside"
    intervals = "n/a" if level is None else f"{level:.0%}"
    return (f"  guardrails {first.get('guardrail_fingerprint')}: {intervals} intervals, "
            f"{first.get('bootstrap_replicates')} bootstrap replicates, seed {first.get('seed')}{rows}")
