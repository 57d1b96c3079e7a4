"""The trend section of the report: each system's headline metric (NDCG by default) at each K over the last runs.

A pure function of ``data["trend"]`` (rows of :func:`ndcg_spark.trend.series.trend` in the
overall slice, as dicts): per system x K, a chart of the macro mean and its interval night after
night (:func:`~ndcg_spark.report.trend_chart.trend_chart`) -- a line joins comparable nights only,
a break is a gap whose reason is written under the chart, a flagged night is marked -- and a table
of every night's numbers with their denominators. :func:`night_words` and :func:`flag_words` say
how a night stands to the one before it; the first screen uses them too.

>>> row = {"run_id": "n2", "previous_run_id": "n1", "comparable": True, "delta_macro": -0.08,
...        "moved": True, "moved_macro": True, "moved_weighted": False, "empty_ideal_shifted": True,
...        "empty_ideal_share_change": 0.031}
>>> night_words(row)
('comparable', '-0.0800 vs n1')
>>> for words in flag_words(row):
...     print(words)
macro interval does not overlap the previous night's
empty-ideal share moved by +3.1 pts: may be traffic, not ranking
>>> night_words(dict(row, comparable=False, break_reason="pool version changed: p1 → p2"))
('break', 'break: pool version changed: p1 → p2')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.config.trend_spec import TREND_FLAGS, TrendFlag, flag_mark, raised_flags
from ndcg_spark.report.format import (
    OVERALL,
    escape,
    fmt_count,
    fmt_delta,
    fmt_interval,
    fmt_mean,
    fmt_points,
    fmt_share,
    is_true,
    mean_cell,
    sort_key,
    td,
)
from ndcg_spark.report.panel import headline, label
from ndcg_spark.report.trend_chart import MARK_COLOURS, trend_chart

__all__ = ["flag_words", "night_words", "overall_trend", "section_trend", "trend_row"]

Row = Mapping[str, Any]


def overall_trend(data: Mapping[str, Any]) -> list[Row]:
    """The trend rows of the overall slice (``data["trend"]``; none when the key is missing)."""
    return [r for r in data.get("trend") or [] if r.get("slice_dimension", OVERALL) == OVERALL]


def trend_row(rows: Sequence[Row], run_id: Any, system: Any, pool: Any, k: Any) -> Row | None:
    """The trend row of one run x system x pool version x K, or None."""
    return next((r for r in rows if str(r.get("run_id")) == str(run_id) and r.get("system") == system
                 and r.get("pool_version") == pool and r.get("k") == k), None)


def night_words(row: Row | None) -> tuple[str, str]:
    """How a night stands to the run before it: ``(kind, words)``.

    ``kind`` is ``comparable`` (the change of the macro mean and the run it is from),
    ``break`` (not comparable: why), ``first`` (no run before it) or ``missing`` (no trend row).
    """
    if row is None:
        return "missing", "not in the trend"
    comparable = row.get("comparable")
    if comparable is None or row.get("previous_run_id") is None:
        return "first", "first run"
    if not is_true(comparable):
        return "break", f"break: {row.get('break_reason') or 'not comparable'}"
    return "comparable", f"{fmt_delta(row.get('delta_macro'))} vs {row.get('previous_run_id')}"


def flag_words(row: Row | None) -> list[str]:
    """The row's flags in plain words, one line each (nothing when the night is not flagged)."""
    out = []
    for flag in raised_flags(row):
        if flag.kind == "move":
            which = [m for m in ("macro", "weighted") if is_true(row.get(f"moved_{m}"))]
            out.append("macro and weighted intervals do not overlap the previous night's" if len(which) == 2
                       else "".join(w + " " for w in which) + "interval does not overlap the previous night's")
        else:
            out.append(f"{flag.words} moved by {fmt_points(row.get(flag.change))}: may be traffic, not ranking")
    return out


def section_trend(data: Mapping[str, Any]) -> list[str]:
    """One chart and one table per system x K of the trend (nothing when there is no trend row)."""
    rows = overall_trend(data)
    if not rows:
        return []
    runs = sorted({str(r.get("run_id")) for r in rows})
    current = None if data.get("run_id") is None else str(data.get("run_id"))
    title = escape(label(headline(data)))
    if len(runs) < 2:  # a chart per system x K with one point each says nothing a sentence does not
        return ["<h2 id='trend'>Trend</h2>",
                f"<p class='sub'>{escape(runs[0])} is the first night in the trend table: its charts start with "
                f"the next night (its macro {title}@K is in the table above).</p>"]
    out = [f"<h2 id='trend'>Trend: the last {len(runs)} runs</h2>",
           f"<p class='sub'>Macro {title}@K of each night with its interval (the bar), "
           f"{escape(runs[0])} to {escape(runs[-1])}. A line joins a night to the previous one only when they "
           "are comparable (same contract, same pool version); a break is a gap, its reason written beside the "
           f"chart. {' '.join(_legend(flag, rows) for flag in TREND_FLAGS)} Every night's numbers, with their "
           "denominators, are in the table under each chart.</p>"]
    for system, k in sorted({(r.get("system"), r.get("k")) for r in rows},
                            key=lambda s: sort_key({"system": s[0], "k": s[1]}, "system", "k")):
        series = sorted((r for r in rows if r.get("system") == system and r.get("k") == k),
                        key=lambda r: (str(r.get("run_id")), str(r.get("pool_version"))))
        out += _series_card(system, k, series, runs, current, headline(data))
    return out


def _series_card(system: Any, k: Any, series: Sequence[Row], runs: Sequence[str], current: str | None,
                 metric: str) -> list[str]:
    """One system x K: the chart, the breaks and flags in words, every night in a folded table."""
    index = {(str(r.get("run_id")), r.get("pool_version")): i for i, r in enumerate(series)}
    points, notes, breaks = [], [], 0
    for r in series:
        run, (kind, _) = str(r.get("run_id")), night_words(r)
        point = {"run": run, "value": r.get("macro"), "lo": r.get("macro_ci_low"), "hi": r.get("macro_ci_high"),
                 "mark": flag_mark(raised_flags(r)), "note": _denominators(r)}
        if kind == "comparable":
            point["previous"] = index.get((str(r.get("previous_run_id")), r.get("pool_version")))
        elif kind == "break":
            breaks += 1
            point["break"], point["break_from"] = str(breaks), r.get("previous_run_id")
            reason = r.get("break_reason") or "not comparable"
            notes.append(f"<div class='brk note'>break {breaks} · {escape(run)} (after "
                         f"{escape(r.get('previous_run_id'))}): {escape(reason)}</div>")
        notes += [f"<div class='flag note'>⚑ {escape(run)}: {escape(w)}</div>" for w in flag_words(r)]
        points.append(point)
    nights = f"{len(series)} night" + ("" if len(series) == 1 else "s")
    notes = notes or ["<div class='sub note'>No break, no flag.</div>"]
    return [f"<div class='card trend'><b>{escape(system)} @{escape(k)}</b> <span class='sub'>macro "
            f"{escape(label(metric, k))}, {nights}</span><div class='series'>" + trend_chart(points, runs, current=current),
            "<div class='notes'>", *notes, "</div></div>", *_series_table(series, metric), "</div>"]


def _legend(flag: TrendFlag, rows: Sequence[Row]) -> str:
    """What a flag's mark on the chart means (a shift: with the declared threshold of the rows)."""
    mark = f"<b style='color:{MARK_COLOURS[flag.kind]}'>{escape(flag.mark)}</b>"
    if flag.kind == "move":
        return f"{mark}: the night's {escape(flag.advice.removeprefix('its '))}."
    threshold = next((r.get(flag.threshold) for r in rows if r.get(flag.threshold) is not None), None)
    amount = fmt_points(threshold).lstrip("+") if threshold is not None else "the declared amount"
    return f"{mark}: its {escape(flag.words)} moved by more than {escape(amount)}, so a move may be traffic, not ranking."


def _denominators(r: Row) -> str:
    """A night's eligible of all requests, e.g. ``1,834 eligible / 2,000 requests``."""
    return f"{fmt_count(r.get('n_eligible'))} eligible / {fmt_count(r.get('n_requests'))} requests"


def _series_table(series: Sequence[Row], metric: str) -> list[str]:
    """Every night of one series with its means, intervals, deltas, denominators and note, folded away."""
    title = escape(label(metric))
    out = [f"<details><summary>every night's numbers ({len(series)} row{'' if len(series) == 1 else 's'})</summary>"
           f"<table><tr><th class='l'>run</th><th class='l'>pool version</th><th>macro {title} [interval]</th>"
           f"<th>Δ macro</th><th>weighted {title} [interval], Δ</th><th>eligible / all requests</th>"
           "<th>empty-ideal share</th><th class='l'>vs the run before</th></tr>"]
    for r in sorted(series, key=lambda r: sort_key(r, "run_id", "pool_version")):
        kind, words = night_words(r)
        note = "; ".join([f"comparable ({r.get('previous_run_id')})" if kind == "comparable" else words, *flag_words(r)])
        share = (f"{fmt_share(r.get('empty_ideal_share'))} ({fmt_count(r.get('n_empty_ideal'))} / "
                 f"{fmt_count(r.get('n_requests'))})")
        out.append("<tr>" + td(r.get("run_id"), "l") + td(r.get("pool_version"), "l")
                   + mean_cell(r.get("macro"), r.get("macro_ci_low"), r.get("macro_ci_high"))
                   + td(fmt_delta(r.get("delta_macro")) if kind == "comparable" else "") + _weighted_cell(r, kind)
                   + td(f"{fmt_count(r.get('n_eligible'))} / {fmt_count(r.get('n_requests'))}")
                   + td(share) + td(note, "l wrap") + "</tr>")
    out.append("</table></details>")
    return out


def _weighted_cell(r: Row, kind: str) -> str:
    """The weighted mean with its interval and, on a comparable night, its change."""
    delta = f" <span class='ci'>Δ {escape(fmt_delta(r.get('delta_weighted')))}</span>" if kind == "comparable" else ""
    return (f"<td><span class='num'>{escape(fmt_mean(r.get('weighted')))}</span> <span class='ci'>"
            f"{escape(fmt_interval(r.get('weighted_ci_low'), r.get('weighted_ci_high')))}</span>{delta}</td>")
