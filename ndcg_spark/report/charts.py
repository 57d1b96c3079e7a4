"""The report's charts: hand-built inline SVG (no script, no font, nothing fetched).

Two shapes: :func:`interval_chart` (a dot with its interval per row, against a reference line)
and :func:`bar_chart` (counts per bucket). Every label goes through :func:`~ndcg_spark.report.format.escape`.

>>> svg = interval_chart([{"label": "bm25", "value": 0.61, "lo": 0.6, "hi": 0.62}], reference=0.6)
>>> svg.startswith("<svg") and "overall 0.6000" in svg and "bm25" in svg
True
>>> ticks(0.0, 1.0)
[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ndcg_spark.report.format import escape, fmt_count, fmt_interval, fmt_mean

__all__ = ["BLUE", "GREY", "ORANGE", "RED", "bar_chart", "chart_k", "domain", "interval_chart", "ticks"]

BLUE, RED, GREY, ORANGE = "#2e6bb8", "#c0392b", "#9aa3b2", "#d68910"


def chart_k(data: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> Any:
    """The cutoff the slice charts are drawn at: ``data["chart_k"]`` if the rows have it, else their largest K."""
    ks = sorted({r.get("k") for r in rows if r.get("k") is not None})
    wanted = data.get("chart_k")
    return wanted if wanted in ks else (ks[-1] if ks else None)


def ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) from ``lo`` to ``hi``."""
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, x = [], first
    while x <= hi + 1e-9:
        out.append(round(x, 10))
        x += step
    return out


def domain(values: Iterable[Any], *, clamp: tuple[float, float] | None,
           include: Iterable[float] = ()) -> tuple[float, float]:
    """The axis range of ``values`` (and ``include``), padded by 8 %, within ``clamp`` when given."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    vals += list(include)
    if not vals:
        return (0.0, 1.0) if clamp else (-0.1, 0.1)
    lo, hi = min(vals), max(vals)
    pad = max((hi - lo) * 0.08, 0.01)
    lo, hi = lo - pad, hi + pad
    if clamp:
        lo, hi = max(lo, clamp[0]), min(hi, clamp[1])
    return lo, hi


def interval_chart(
    items: Sequence[Mapping[str, Any]],
    *,
    reference: float | None = None,
    reference_label: str = "overall",
    clamp: tuple[float, float] | None = (0.0, 1.0),
    fmt: Callable[[Any], str] = fmt_mean,
    width: int = 620,
    label_width: int = 190,
) -> str:
    """A horizontal dot-and-whisker chart: one row per item ``{label, value, lo, hi, style, note}``.

    ``style`` is ``None``, ``"worst"`` (red) or ``"small"`` (hollow, amber, below the minimum);
    ``reference`` draws a dashed vertical line (the overall mean, or 0 for deltas).
    """
    row_h, top, bottom, right = 22, 22, 26, 70
    height = top + bottom + row_h * max(len(items), 1)
    include = [reference] if reference is not None else []
    lo, hi = domain([v for it in items for v in (it.get("value"), it.get("lo"), it.get("hi"))], clamp=clamp,
                    include=include)
    plot_w = width - label_width - right

    def x(v: float) -> float:
        return label_width + (float(v) - lo) / (hi - lo) * plot_w if hi > lo else label_width + plot_w / 2

    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for t in ticks(lo, hi):
        parts.append(f'<line x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{height - bottom}" stroke="#edf0f5"/>')
        parts.append(f'<text class="muted" x="{x(t):.1f}" y="{height - bottom + 14}" text-anchor="middle">'
                     f'{escape(fmt(t))}</text>')
    if reference is not None:
        rx = x(reference)
        parts.append(f'<line x1="{rx:.1f}" y1="{top - 8}" x2="{rx:.1f}" y2="{height - bottom}" stroke="#333" '
                     'stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{rx:.1f}" y="{top - 10}" text-anchor="middle">'
                     f'{escape(reference_label)} {escape(fmt(reference))}</text>')
    for i, it in enumerate(items):
        parts += _interval_row(it, x, top + row_h * i + row_h / 2, fmt, label_width, width - right)
    parts.append("</svg>")
    return "".join(parts)


def _interval_row(item: Mapping[str, Any], x: Callable[[float], float], cy: float, fmt: Callable[[Any], str],
                  label_width: int, value_x: int) -> list[str]:
    """One row of :func:`interval_chart`: its label, its whisker, its dot and its value (``value_x`` on)."""
    style = item.get("style")
    color = RED if style == "worst" else ORANGE if style == "small" else BLUE
    label = str(item.get("label"))
    label = label if len(label) <= 28 else label[:27] + "…"
    weight = ' font-weight="bold"' if style == "worst" else ""
    parts = [f'<text x="{label_width - 8}" y="{cy + 4:.1f}" text-anchor="end"{weight}>{escape(label)}</text>']
    value, a, b = item.get("value"), item.get("lo"), item.get("hi")
    tip = f"{item.get('label')}: {fmt(value)} {fmt_interval(a, b, fmt)} {item.get('note') or ''}".strip()
    parts.append(f"<g><title>{escape(tip)}</title>")
    if a is not None and b is not None:
        parts.append(f'<line x1="{x(a):.1f}" y1="{cy:.1f}" x2="{x(b):.1f}" y2="{cy:.1f}" stroke="{color}" '
                     'stroke-width="2"/>')
        for end in (a, b):
            parts.append(f'<line x1="{x(end):.1f}" y1="{cy - 5:.1f}" x2="{x(end):.1f}" y2="{cy + 5:.1f}" '
                         f'stroke="{color}"/>')
    if value is not None:
        fill = "#fff" if style == "small" else color
        parts.append(f'<circle cx="{x(value):.1f}" cy="{cy:.1f}" r="4.5" fill="{fill}" stroke="{color}" '
                     'stroke-width="2"/>')
        parts.append(f'<text x="{value_x + 6}" y="{cy + 4:.1f}">{escape(fmt(value))}</text>')
    parts.append("</g>")
    return parts


def bar_chart(bars: Sequence[tuple[str, int]], *, title: str, width: int = 270, height: int = 150,
              extra: tuple[str, int] | None = None) -> str:
    """Vertical bars (label, count), with ``extra`` drawn apart in grey (e.g. requests without an NDCG).

    >>> svg = bar_chart([("0.0", 3), ("0.5", 1)], title="bm25 @10", extra=("none", 2))
    >>> svg.count("<rect"), "max 3" in svg
    (3, True)
    """
    top, bottom, left = 22, 30, 8
    all_bars = list(bars) + ([extra] if extra else [])
    peak = max([c for _, c in all_bars] + [1])
    n = max(len(all_bars), 1) + (0.6 if extra else 0)
    slot = (width - left * 2) / n
    plot_h = height - top - bottom
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
             f'<text x="{left}" y="13" font-weight="bold">{escape(title)}</text>']
    for i, (label, count) in enumerate(all_bars):
        is_extra = extra is not None and i == len(all_bars) - 1
        x0 = left + slot * (i + (0.6 if is_extra else 0))
        h = plot_h * count / peak
        color = GREY if is_extra else BLUE
        parts.append(f"<g><title>{escape(label)}: {escape(fmt_count(count))} requests</title>"
                     f'<rect x="{x0 + 1:.1f}" y="{top + plot_h - h:.1f}" width="{max(slot - 2, 1):.1f}" '
                     f'height="{h:.1f}" fill="{color}"/></g>')
        if len(all_bars) <= 16 or i % 2 == 0 or is_extra:
            parts.append(f'<text class="muted" x="{x0 + slot / 2:.1f}" y="{height - bottom + 12}" '
                         f'text-anchor="middle" font-size="9">{escape(label)}</text>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - left}" y2="{top + plot_h}" stroke="#888"/>')
    parts.append(f'<text class="muted" x="{width - left}" y="13" text-anchor="end">'
                 f'max {escape(fmt_count(peak))}</text>')
    parts.append("</svg>")
    return "".join(parts)
