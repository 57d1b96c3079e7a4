"""The first screen of the run's page: the morning question answered in a few lines.

Right under the title: per system, the headline metric's macro mean (NDCG's by default) with its
interval and denominator and the change from the previous comparable night (or why there is none,
and the night's flag); beside it the contract's other metrics at the chart K (the panel), each with
its eligible count where it differs; the verdict of every comparison, with the panel's deltas and its
guardrails' overall verdict when it has guardrail rows; and
the worst slice of every slice dimension x K per system as one compact table, highlighted where
its whole interval lies below the overall mean. The headline rows and verdicts carry
``data-headline`` (the browser test measures that they fit a 1400x900 window without scrolling).
Pure functions of the report data.

>>> comparison = {"baseline": "bm25", "candidate": "hybrid", "comparison_kind": "reranker", "k": 10,
...               "slice_dimension": "overall", "n_paired": 1800, "n_requests": 2000, "delta_macro": 0.091,
...               "delta_macro_ci_low": 0.071, "delta_macro_ci_high": 0.11, "p_value_macro": 0.001}
>>> verdict(comparison)
'better'
>>> verdict(dict(comparison, delta_macro_ci_low=-0.01)), verdict(dict(comparison, delta_macro_ci_low=None))
('no clear difference', 'no interval')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.report.charts import chart_k
from ndcg_spark.report.format import (
    OVERALL,
    escape,
    fmt_count,
    fmt_delta,
    fmt_interval,
    fmt_mean,
    fmt_p,
    is_true,
    sort_key,
)
from ndcg_spark.report.panel import headline, label, metric_of, of_metric
from ndcg_spark.report.sections_guardrails import guardrail_verdict_html
from ndcg_spark.report.text_guardrails import offline_headline
from ndcg_spark.report.sections_trend import flag_words, night_words, overall_trend, trend_row

__all__ = ["section_first_screen", "verdict"]

Row = Mapping[str, Any]

#: the headline shows every K while systems x K stay within this many rows, else the chart K only
MAX_HEADLINE_ROWS = 6


def section_first_screen(data: Mapping[str, Any]) -> list[str]:
    """The headline table, the comparisons' verdicts and the worst-slice table (nothing without aggregates)."""
    overall = sorted((r for r in data.get("aggregates") or [] if r.get("slice_dimension") == OVERALL),
                     key=lambda r: sort_key(r, "system", "pool_version", "k"))
    if not overall:
        return []
    ks = _headline_ks(data, overall)
    at = ", ".join(f"@{k}" for k in ks)
    metric = headline(data)
    out = ["<section id='first-screen' class='first'>",
           f"<h2 class='first'>At a glance: macro {escape(label(metric))}{escape(at)}</h2>"]
    out += _headline(overall, ks, data)
    out += _verdicts(data.get("comparisons") or [], ks, data)
    # the other metrics and the worst slices side by side (one above the other they ran past 1400x900)
    beside = _panel(data, overall) + _worst_slices(data.get("audit") or [], chart_k(data, overall))
    out += ["<div class='beside'>", *beside, "</div>"] if beside else []
    out.append("</section>")
    return out


def _headline_ks(data: Mapping[str, Any], overall: Sequence[Row]) -> list[Any]:
    """Every K of the run when the headline stays short, else the chart K alone."""
    ks = sorted({r.get("k") for r in overall if r.get("k") is not None})
    return ks if len(overall) <= MAX_HEADLINE_ROWS else [chart_k(data, overall)]


def _headline(overall: Sequence[Row], ks: Sequence[Any], data: Mapping[str, Any]) -> list[str]:
    """One row per system x pool x K: the mean, its interval and denominator, and the change since the last night."""
    trend = overall_trend(data)
    out = ["<table class='headline'><tr><th class='l'>system</th><th class='l'>pool version</th><th>K</th>"
           f"<th>macro {escape(label(headline(data)))} [interval]</th><th>eligible / all requests</th>"
           + ("<th class='l'>change from the previous comparable night</th>" if trend else "") + "</tr>"]
    for r in (r for r in overall if r.get("k") in ks):
        tonight = trend_row(trend, data.get("run_id"), r.get("system"), r.get("pool_version"), r.get("k"))
        change = _change_cell(tonight) if trend else ""
        out.append(f"<tr data-headline='{escape(r.get('system'))}'><td class='l'><b>{escape(r.get('system'))}</b></td>"
                   f"<td class='l'>{escape(r.get('pool_version'))}</td><td>{escape(r.get('k'))}</td>"
                   f"<td><span class='num big'>{escape(fmt_mean(r.get('macro')))}</span> <span class='ci'>"
                   f"{escape(fmt_interval(r.get('macro_ci_low'), r.get('macro_ci_high')))}</span></td>"
                   f"<td class='den'>{escape(fmt_count(r.get('n_eligible')))} eligible of "
                   f"{escape(fmt_count(r.get('n_requests')))}{_no_results(r)}</td>{change}</tr>")
    out.append("</table>")
    return out


def _panel(data: Mapping[str, Any], overall: Sequence[Row]) -> list[str]:
    """The contract's other metrics at the chart K, a row per system: each one's macro mean and interval,
    with its eligible count where it differs from the headline's (nothing with a single metric)."""
    metrics = [m for m in (data.get("metrics") or [])[1:]]
    rows = [r for r in data.get("panel") or [] if r.get("slice_dimension") == OVERALL and metric_of(r) in metrics]
    if not rows:
        return []
    k = chart_k(data, overall)
    systems = list(dict.fromkeys((r.get("system"), r.get("pool_version")) for r in overall))
    eligible = {(r.get("system"), r.get("pool_version")): r.get("n_eligible") for r in overall if r.get("k") == k}
    cells = {(metric_of(r), r.get("system"), r.get("pool_version")): r for r in rows if r.get("k") == k}
    out = ["<table class='panel'><tr><th class='l'>system</th>"
           + "".join(f"<th>macro {escape(label(m, k))} [interval]</th>" for m in metrics) + "</tr>"]
    for system, pool in systems:
        line = f"<tr data-headline='panel'><td class='l'><b>{escape(system)}</b></td>"
        for m in metrics:
            r = cells.get((m, system, pool))
            if r is None:
                line += "<td></td>"
                continue
            own = "" if r.get("n_eligible") == eligible.get((system, pool)) else (
                f" <span class='den'>{escape(fmt_count(r.get('n_eligible')))} eligible</span>")
            line += (f"<td><span class='num'>{escape(fmt_mean(r.get('macro')))}</span> <span class='ci'>"
                     f"{escape(fmt_interval(r.get('macro_ci_low'), r.get('macro_ci_high')))}</span>{own}</td>")
        out.append(line + "</tr>")
    out.append("</table>")
    return out


def _no_results(r: Row) -> str:
    """``300 returned nothing`` under the denominators, when the system returned nothing for some requests."""
    n = r.get("n_no_results")
    return f"<br><span class='flag'>{escape(fmt_count(n))} returned nothing</span>" if n else ""


def _change_cell(row: Row | None) -> str:
    """The change from the previous comparable night, the break's reason or ``first run``; then the flag."""
    kind, words = night_words(row)
    if kind == "comparable":
        text = (f"<span class='num'>{escape(fmt_delta(row.get('delta_macro')))}</span> "
                f"<span class='sub'>vs {escape(row.get('previous_run_id'))}</span>")
    else:
        text = f"<span class='{'brk' if kind == 'break' else 'sub'}'>{escape(words)}</span>"
    flags = "".join(f"<div class='flag'>⚑ {escape(w)}</div>" for w in flag_words(row))
    return f"<td class='l wrap'>{text}{flags}</td>"


def verdict(r: Row) -> str:
    """A comparison row's verdict on the macro delta: ``better`` / ``worse`` (the whole interval above / below
    0), ``no clear difference``, or ``no interval`` (no bootstrap)."""
    lo, hi = r.get("delta_macro_ci_low"), r.get("delta_macro_ci_high")
    if lo is None or hi is None:
        return "no interval"
    return "better" if float(lo) > 0 else "worse" if float(hi) < 0 else "no clear difference"


def _verdicts(rows: Sequence[Row], ks: Sequence[Any], data: Mapping[str, Any]) -> list[str]:
    """One line per comparison x K (the headline's K, else the comparison's chart K), overall slice."""
    every = [r for r in rows if r.get("slice_dimension") == OVERALL]
    metric = headline(data)
    overall = of_metric(every, metric)
    if not overall:
        return []
    shown = [r for r in overall if r.get("k") in ks] or [r for r in overall if r.get("k") == chart_k(data, overall)]
    pairs = list(dict.fromkeys((r.get("baseline"), r.get("candidate")) for r in rows))
    shown.sort(key=lambda r: (pairs.index((r.get("baseline"), r.get("candidate"))), sort_key(r, "k")))
    guardrails = data.get("guardrails") or []
    beside = [_guarded(shown, pair, metric, guardrails) for pair in pairs] if guardrails else []
    panel = [m for m in (data.get("metrics") or [])[1:]]
    top = max(r.get("k") for r in shown)
    lines = [_verdict_line(r, guardrail_verdict_html(guardrails, r.get("baseline"), r.get("candidate"))
                           if any(r is b for b in beside) else "",
                           _panel_deltas(every, r, panel) if r.get("k") == top else "") for r in shown]
    return ["<ul class='verdicts'>", *lines, "</ul>"]


def _guarded(shown: Sequence[Row], pair: tuple[Any, Any], metric: str, guardrails: Sequence[Row]) -> Row | None:
    """The line the pair's guardrail verdict goes on: at the guardrails' headline K (stamped on their
    rows), else -- that K not shown, or rows from before the stamp -- the largest K up to 10."""
    stamped = next((g for g in guardrails if (g.get("baseline"), g.get("candidate")) == pair), {})
    return (offline_headline(shown, *pair, {"headline_metric": metric, "headline_k": stamped.get("headline_k")})
            or offline_headline(shown, *pair, {"headline_metric": metric}))


def _panel_deltas(rows: Sequence[Row], at: Row, metrics: Sequence[str]) -> str:
    """``· recall@10 +0.0123 [+0.0101, +0.0144]`` for each panel metric of ``at``'s comparison and K."""
    same = {metric_of(r): r for r in rows if (r.get("baseline"), r.get("candidate"), r.get("k"))
            == (at.get("baseline"), at.get("candidate"), at.get("k"))}
    parts = []
    for m in metrics:
        r = same.get(m)
        if r is not None:
            interval = fmt_interval(r.get("delta_macro_ci_low"), r.get("delta_macro_ci_high"), fmt_delta)
            parts.append(f"{escape(label(m, r.get('k')))} <span class='num'>{escape(fmt_delta(r.get('delta_macro')))}"
                         f"</span> <span class='ci'>{escape(interval)}</span>")
    # each metric's delta unbroken, the line breaking between them (six metrics outgrow a screen)
    return "<br>" + " · ".join(f"<span class='den'>{part}</span>" for part in parts) if parts else ""


def _verdict_line(r: Row, guardrails: str = "", panel: str = "") -> str:
    """``hybrid vs bm25 @10: +0.0912 [+0.0711, +0.1104], candidate better · 1,812 paired of 2,000 requests …``"""
    word = verdict(r)
    said = {"better": "candidate better", "worse": "candidate worse"}.get(word, word)
    kind = ("end-to-end (different pools)" if is_true(r.get("pools_differ"))
            else "end-to-end" if r.get("comparison_kind") == "end_to_end" else "reranker")
    small = " · <b>small</b> (below the minimum paired)" if is_true(r.get("below_min_paired")) else ""
    interval = fmt_interval(r.get("delta_macro_ci_low"), r.get("delta_macro_ci_high"), fmt_delta)
    return (f"<li data-headline='verdict'><b>{escape(r.get('candidate'))} vs {escape(r.get('baseline'))} "
            f"@{escape(r.get('k'))}</b>: <span class='num'>{escape(fmt_delta(r.get('delta_macro')))}</span> "
            f"<span class='ci'>{escape(interval)}</span>, <b class='{escape(word.replace(' ', '-'))}'>"
            f"{escape(said)}</b> "
            f"<span class='den'>· {escape(fmt_count(r.get('n_paired')))} paired of "
            f"{escape(fmt_count(r.get('n_requests')))} requests · p = {escape(fmt_p(r.get('p_value_macro')))} · "
            f"{escape(kind)}</span>{small}{panel}{guardrails}</li>")


def _worst_slices(audit: Sequence[Row], k: Any) -> list[str]:
    """The audit at the headline's chart K as one table: a row per slice dimension, a column per
    system; red where the worst slice's whole interval lies below the overall mean. (A row per
    dimension x K made the first screen longer than a 1400x900 window; every K is below, in Slices.)"""
    audit = [a for a in audit if a.get("k") == k] or list(audit)
    if not audit:
        return []
    systems = sorted({(a.get("system"), a.get("pool_version")) for a in audit}, key=lambda s: tuple(map(str, s)))
    cells = {(a.get("slice_dimension"), a.get("k"), a.get("system"), a.get("pool_version")): a for a in audit}
    rows = sorted({(a.get("slice_dimension"), a.get("k")) for a in audit},
                  key=lambda d: sort_key({"d": d[0], "k": d[1]}, "d", "k"))
    pools = len({p for _, p in systems}) > 1
    out = ["<table class='worst'><tr><th class='l'>worst slice of</th>"
           + "".join(f"<th class='l'>{escape(s)}" + (f" <span class='sub'>({escape(p)})</span>" if pools else "")
                     + "</th>" for s, p in systems) + "</tr>"]
    for dim, k in rows:
        out.append(f"<tr><th class='l'>{escape(dim)} @{escape(k)}</th>"
                   + "".join(_worst_cell(cells.get((dim, k, s, p))) for s, p in systems) + "</tr>")
    out.insert(0, "<div>")
    out.append(f"</table><p class='sub legend'>Per dimension at K = {escape(k)}, the ranked slice with the lowest macro mean: "
               "its mean [interval], gap to the overall mean, eligible requests. <span class='below-key'>Red</span>: "
               "its whole interval lies below the overall mean (a screening flag: the worst of several is low "
               "partly by selection). Every slice is in <a href='#slices'>Slices</a>.</p></div>")
    return out


def _worst_cell(a: Row | None) -> str:
    """One system's worst slice of one dimension x K (empty when the audit has no row for it)."""
    if a is None:
        return "<td></td>"
    ranked = f"{fmt_count(a.get('n_slices_ranked'))} of {fmt_count(a.get('n_slices'))} ranked"
    if a.get("worst_slice_value") is None and a.get("worst_macro") is None:
        return f"<td class='l sub'>no slice ranked ({escape(ranked)})</td>"
    below = is_true(a.get("ci_below_overall"))
    return (f"<td class='l{' below' if below else ''}'><b>{escape(a.get('worst_slice_value'))}</b> "
            f"<span class='num'>{escape(fmt_mean(a.get('worst_macro')))}</span> <span class='ci'>"
            f"{escape(fmt_interval(a.get('worst_ci_low'), a.get('worst_ci_high')))}</span><br><span class='den'>"
            f"gap {escape(fmt_delta(a.get('gap_to_overall')))} to {escape(fmt_mean(a.get('overall_macro')))} · "
            f"{escape(fmt_count(a.get('worst_n_eligible')))} eligible · {escape(ranked)}</span></td>")
