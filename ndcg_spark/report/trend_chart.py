"""The trend chart: one series' mean night after night, as hand-built inline SVG.

x: the runs in run-id order, one slot each (the page passes every chart the same runs, so the
nights line up from chart to chart); y: the mean with its interval as a vertical bar. A line joins
a point to the one it names as its ``previous`` (a comparable night) and nothing else, so a break
is a gap: a dashed rule between the two nights with a numbered marker, whose reason the caller
writes beside the chart. A flagged night gets a ring and a word (red ``moved``: its interval does
not overlap the previous night's; amber ``shift``: the empty-ideal share moved).

>>> points = [{"run": "n1", "value": 0.60, "lo": 0.58, "hi": 0.62},
...           {"run": "n2", "value": 0.50, "lo": 0.48, "hi": 0.52, "previous": 0, "mark": ("moved", "move")},
...           {"run": "n3", "value": 0.55, "lo": 0.53, "hi": 0.57, "break": "1", "break_from": "n2"}]
>>> svg = trend_chart(points, ["n1", "n2", "n3"], current="n3")
>>> svg.count('class="join"'), svg.count('class="break"'), svg.count('class="ring"'), ">moved</text>" in svg
(1, 1, 1, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ndcg_spark.report.charts import BLUE, ORANGE, RED, domain, ticks
from ndcg_spark.report.format import escape, fmt_interval, fmt_mean

__all__ = ["trend_chart"]

#: the colour of a flagged night's marker, by its kind (:func:`~ndcg_spark.config.trend_spec.flag_mark`)
MARK_COLOURS = {"move": RED, "shift": ORANGE}
_LEFT, _RIGHT, _TOP, _BOTTOM = 46, 58, 24, 34
_MIN_LABEL_SLOT = 66  # pixels a run id's label needs; thinner slots label every n-th run


def trend_chart(points: Sequence[Mapping[str, Any]], runs: Sequence[str], *, current: str | None = None,
                width: int = 540, height: int = 200) -> str:
    """The SVG of one series: ``points`` (``{run, value, lo, hi, previous, break, break_from, mark, note}``)
    on ``runs`` (the x axis, in order).

    ``previous`` is the index in ``points`` of the comparable night a line joins this one to;
    ``break`` the marker of a break before this night (from ``break_from``, the run before it);
    ``mark`` a flagged night's ``(word, kind)`` (:func:`~ndcg_spark.config.trend_spec.flag_mark`);
    ``note`` goes into the point's tooltip. ``current``
    (this run) is labelled in bold and its value written beside it.
    """
    slot = (width - _LEFT - _RIGHT) / max(len(runs), 1)
    where = {run: _LEFT + slot * (i + 0.5) for i, run in enumerate(runs)}
    lo, hi = domain([v for p in points for v in (p.get("value"), p.get("lo"), p.get("hi"))], clamp=(0.0, 1.0))

    def y(v: float) -> float:
        return _TOP + (hi - float(v)) / (hi - lo) * (height - _TOP - _BOTTOM) if hi > lo else height / 2

    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    parts += _axes(runs, where, slot, y, lo, hi, current, width, height)
    for p in points:
        parts += _joins_and_breaks(p, points, where, slot, y, height)
    for p in points:
        parts += _point(p, where, y, current)
    parts.append("</svg>")
    return "".join(parts)


def _axes(runs: Sequence[str], where: Mapping[str, float], slot: float, y: Callable[[float], float], lo: float,
          hi: float, current: str | None, width: int, height: int) -> list[str]:
    """Horizontal grid lines with their values on the left; the run ids below (every n-th when crowded)."""
    parts = []
    for t in ticks(lo, hi, 4):
        parts.append(f'<line x1="{_LEFT}" y1="{y(t):.1f}" x2="{width - _RIGHT}" y2="{y(t):.1f}" stroke="#edf0f5"/>')
        parts.append(f'<text class="muted" x="{_LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end">'
                     f'{escape(fmt_mean(t))}</text>')
    every = max(1, -(-_MIN_LABEL_SLOT // max(int(slot), 1)))
    for i, run in enumerate(runs):
        if (len(runs) - 1 - i) % every:
            continue  # counted from the last run, so this night is always labelled
        bold = ' font-weight="bold"' if run == current else ""
        parts.append(f'<text class="muted" x="{where[run]:.1f}" y="{height - _BOTTOM + 16}" text-anchor="middle" '
                     f'font-size="10"{bold}>{escape(run)}</text>')
    return parts


def _joins_and_breaks(p: Mapping[str, Any], points: Sequence[Mapping[str, Any]], where: Mapping[str, float],
                      slot: float, y: Callable[[float], float], height: int) -> list[str]:
    """The line from the previous comparable night to ``p``, or the dashed rule of a break before it."""
    x = where.get(str(p.get("run")))
    if x is None:
        return []
    prev = points[p["previous"]] if p.get("previous") is not None else None
    if prev is not None and prev.get("value") is not None and p.get("value") is not None:
        px = where.get(str(prev.get("run")))
        if px is not None:
            return [f'<line class="join" x1="{px:.1f}" y1="{y(prev["value"]):.1f}" x2="{x:.1f}" '
                    f'y2="{y(p["value"]):.1f}" stroke="{BLUE}" stroke-width="1.5"/>']
    if p.get("break") is None:
        return []
    before = where.get(str(p.get("break_from")), x - slot)
    bx = (before + x) / 2
    return [f'<line class="break" x1="{bx:.1f}" y1="{_TOP - 6}" x2="{bx:.1f}" y2="{height - _BOTTOM}" '
            f'stroke="#8a6d00" stroke-dasharray="3 3"/>',
            f'<text x="{bx:.1f}" y="{_TOP - 10}" text-anchor="middle" style="fill:#8a6d00">'
            f'break {escape(p.get("break"))}</text>']


def _point(p: Mapping[str, Any], where: Mapping[str, float], y: Callable[[float], float],
           current: str | None) -> list[str]:
    """One night: its interval bar, its dot, a ring and a word when flagged, its value when it is this run."""
    x, value, a, b = where.get(str(p.get("run"))), p.get("value"), p.get("lo"), p.get("hi")
    if x is None or value is None:
        return []
    tip = f"{p.get('run')}: {fmt_mean(value)} {fmt_interval(a, b)} {p.get('note') or ''}".strip()
    parts = [f"<g><title>{escape(tip)}</title>"]
    if a is not None and b is not None:
        parts.append(f'<line x1="{x:.1f}" y1="{y(a):.1f}" x2="{x:.1f}" y2="{y(b):.1f}" stroke="{BLUE}" '
                     'stroke-width="5" stroke-opacity="0.35"/>')
    parts.append(f'<circle cx="{x:.1f}" cy="{y(value):.1f}" r="3.5" fill="{BLUE}"/>')
    mark = p.get("mark")
    if mark is not None:
        word, color = mark[0], MARK_COLOURS[mark[1]]
        top = y(b) if b is not None else y(value)
        parts.append(f'<circle class="ring" cx="{x:.1f}" cy="{y(value):.1f}" r="7" fill="none" stroke="{color}" '
                     'stroke-width="2"/>')
        parts.append(f'<text x="{x:.1f}" y="{top - 5:.1f}" text-anchor="middle" font-size="10" '
                     f'style="fill:{color}" font-weight="bold">{escape(word)}</text>')
    if current is not None and str(p.get("run")) == current:
        parts.append(f'<text x="{x + 9:.1f}" y="{y(value) + 4:.1f}" font-weight="bold">'
                     f'{escape(fmt_mean(value))}</text>')
    parts.append("</g>")
    return parts
