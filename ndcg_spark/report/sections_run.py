"""The run's sections of the report: overall means, slices (with the audit) and distributions.

Each section is a pure function of rows (dicts of the aggregate, audit and histogram tables) and
returns the section's HTML as a list of fragments; :func:`~ndcg_spark.report.html.render_html`
joins them into the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.config.report_spec import DEFAULT_BINS
from ndcg_spark.measures import LEGACY_METRIC
from ndcg_spark.report.charts import RED, bar_chart, chart_k, interval_chart
from ndcg_spark.report.panel import headline, label
from ndcg_spark.report.format import (
    OVERALL,
    system_and_pool,
    escape,
    fmt_count,
    fmt_mean,
    is_true,
    mean_cell,
    sort_key,
    td,
)

__all__ = ["section_distributions", "section_overall", "section_slices"]

Row = Mapping[str, Any]


def section_overall(aggs: Sequence[Row], metric: str = LEGACY_METRIC) -> list[str]:
    """The overall means of ``metric`` (the headline) per system x pool x K, with intervals and
    denominators; one chart per K."""
    overall = sorted((r for r in aggs if r.get("slice_dimension") == OVERALL),
                     key=lambda r: sort_key(r, "system", "pool_version", "k"))
    level = next((r.get("ci_level") for r in overall if r.get("ci_level")), None)
    title = escape(label(metric))
    out = [f"<h2 id='overall'>Overall {title}@K per system</h2>",
           f"<p class='sub'>Macro mean: every eligible request counts once. Weighted: by traffic weight. "
           f"{escape(f'{level:.0%} bootstrap intervals over requests' if level else 'No intervals (replicates: 0)')}. "
           f"Beside every mean, its denominator: eligible requests (with a value), empty-ideal requests "
           "(no ideal for a declared metric, set aside or scored 0 as the contract says), requests the system "
           "returned nothing for (set aside or scored 0 as the contract says) and all requests.</p>",
           f"<table><tr><th class='l'>system</th><th class='l'>pool version</th><th>K</th><th>macro {title} [interval]</th>"
           f"<th>weighted {title} [interval]</th><th>eligible</th><th>empty-ideal</th><th>no results</th>"
           "<th>all requests</th><th>unjudged share of top K</th></tr>"]
    for r in overall:
        out.append("<tr>" + td(r.get("system"), "l") + td(r.get("pool_version"), "l") + td(r.get("k"))
                   + _means_and_counts(r) + td(fmt_mean(r.get("unjudged_share"))) + "</tr>")
    out.append("</table>")
    ks = sorted({r.get("k") for r in overall if r.get("k") is not None})
    out.append("<div class='grid'>")
    for k in ks:
        items = [{"label": system_and_pool(r.get('system'), r.get('pool_version')), "value": r.get("macro"),
                  "lo": r.get("macro_ci_low"), "hi": r.get("macro_ci_high"),
                  "note": f"{fmt_count(r.get('n_eligible'))} eligible / {fmt_count(r.get('n_requests'))} all"}
                 for r in overall if r.get("k") == k]
        out.append(f"<div class='card'><b>macro {escape(label(metric, k))}</b><br>"
                   + interval_chart(items, clamp=(0.0, 1.0), width=560, label_width=180) + "</div>")
    out.append("</div>")
    return out


def _means_and_counts(r: Row) -> str:
    """The cells both mean tables share: macro and weighted mean with intervals, then the four denominators."""
    return (mean_cell(r.get("macro"), r.get("macro_ci_low"), r.get("macro_ci_high"))
            + mean_cell(r.get("weighted"), r.get("weighted_ci_low"), r.get("weighted_ci_high"))
            + td(fmt_count(r.get("n_eligible"))) + td(fmt_count(r.get("n_empty_ideal")))
            + td(fmt_count(r.get("n_no_results"))) + td(fmt_count(r.get("n_requests"))))


def section_slices(data: Mapping[str, Any]) -> list[str]:
    """Per slice dimension: a chart per system at the chart K (the audit's worst slice red), every row in a table."""
    aggs, audit_rows = data.get("aggregates") or [], data.get("audit") or []
    dims = sorted({r.get("slice_dimension") for r in aggs if r.get("slice_dimension") != OVERALL}, key=str)
    if not dims:
        return ["<h2 id='slices'>Slices</h2><p>No slice dimensions were aggregated.</p>"]
    k = chart_k(data, aggs)
    metric = headline(data)
    min_el = next((r.get("min_eligible") for r in aggs if r.get("min_eligible") is not None), None)
    out = ["<h2 id='slices'>Slices</h2>",
           f"<p class='sub'>Per slice dimension, macro {escape(label(metric, k))} of every slice with its interval against the "
           f"overall mean (dashed). <span class='small'>Hollow amber: a small slice</span> (fewer than "
           f"{escape(fmt_count(min_el))} eligible requests: reported, not ranked). <b style='color:{RED}'>Red</b>: the "
           "worst ranked slice (the audit; every K's worst slice, with its gap to the overall mean, is in the "
           "<a href='#first-screen'>table at the top</a>). Every slice at every K is in the tables.</p>"]
    systems = sorted({(r.get("system"), r.get("pool_version")) for r in aggs}, key=lambda s: tuple(map(str, s)))
    for dim in dims:
        out.append(f"<h3>{escape(dim)}</h3>")
        out.append("<div class='grid'>")
        for system, pool in systems:
            out += _slice_chart(aggs, audit_rows, dim, system, pool, k, metric)
        out.append("</div>")
        out += _slice_table(aggs, dim, metric)
    return out


def _slice_chart(aggs: Sequence[Row], audit_rows: Sequence[Row], dim: Any, system: Any, pool: Any,
                 k: Any, metric: str) -> list[str]:
    """One system's slices of ``dim`` at K = ``k`` against its overall mean (nothing if it has none)."""
    def same_cell(r: Row) -> bool:
        return r.get("system") == system and r.get("pool_version") == pool and r.get("k") == k

    rows = [r for r in aggs if r.get("slice_dimension") == dim and same_cell(r)]
    if not rows:
        return []
    overall = next((r for r in aggs if r.get("slice_dimension") == OVERALL and same_cell(r)), {})
    worst = next((a.get("worst_slice_value") for a in audit_rows if a.get("slice_dimension") == dim
                  and same_cell(a)), None)
    items = []
    for r in sorted(rows, key=lambda r: sort_key(r, "slice_value")):
        small = is_true(r.get("below_min_eligible"))
        style = "worst" if (worst is not None and r.get("slice_value") == worst and not small) else (
            "small" if small else None)
        items.append({"label": f"{r.get('slice_value')}" + (" (small)" if small else "")
                      + (" ◀ worst" if style == "worst" else ""),
                      "value": r.get("macro"), "lo": r.get("macro_ci_low"), "hi": r.get("macro_ci_high"),
                      "style": style, "note": f"{fmt_count(r.get('n_eligible'))} eligible"})
    return [f"<div class='card'><b>{escape(system)}</b> <span class='sub'>{'' if pool is None else '(' + escape(pool) + ') · '}macro {escape(label(metric, k))}"
            "</span><br>" + interval_chart(items, reference=overall.get("macro"), width=560) + "</div>"]


def _slice_table(aggs: Sequence[Row], dim: Any, metric: str) -> list[str]:
    """Every slice of ``dim`` at every K, folded away under a ``<details>``."""
    rows = sorted((r for r in aggs if r.get("slice_dimension") == dim),
                  key=lambda r: sort_key(r, "system", "pool_version", "k", "slice_value"))
    title = escape(label(metric))
    out = [f"<details><summary>{escape(dim)}: every slice at every K ({len(rows)} rows)</summary><table>"
           f"<tr><th class='l'>system</th><th>K</th><th class='l'>slice</th><th>macro {title} [interval]</th>"
           f"<th>weighted {title} [interval]</th><th>eligible</th><th>empty-ideal</th><th>no results</th><th>all</th>"
           "<th>small</th></tr>"]
    for r in rows:
        out.append("<tr>" + td(r.get("system"), "l") + td(r.get("k")) + td(r.get("slice_value"), "l")
                   + _means_and_counts(r) + td("small" if is_true(r.get("below_min_eligible")) else "") + "</tr>")
    out.append("</table></details>")
    return out


def section_distributions(data: Mapping[str, Any]) -> list[str]:
    """Bar charts of the per-request headline metric and unjudged-in-top-K histograms, one per system x K."""
    hist = data.get("histograms") or []
    if not hist:
        return []
    bins = int(data.get("bins") or DEFAULT_BINS)
    groups = sorted({(h.get("system"), h.get("pool_version"), h.get("k")) for h in hist},
                    key=lambda g: (str(g[0]), str(g[1]), g[2] if g[2] is not None else -1))
    shown = headline(data)
    title = escape(label(shown))
    out = [f"<h2 id='distributions'>Distribution of per-request {title} and of unjudged-in-top-K</h2>",
           "<p class='sub'>Counts of requests per bucket (bucketed in Spark; no per-request row leaves the cluster). "
           f"{title} buckets are <code>[i/%d, (i+1)/%d)</code>, 1.0 in the last; the grey bar counts requests "
           f"without a value (empty ideal under <code>exclude</code>).</p>" % (bins, bins)]
    for metric, heading in ((shown, f"per-request {label(shown)}@K"), (UNJUDGED, "unjudged candidates in the top K")):
        out.append(f"<h3>{escape(heading)}</h3><div class='grid'>")
        for system, pool, k in groups:
            rows = [h for h in hist if h.get("metric") == metric
                    and (h.get("system"), h.get("pool_version"), h.get("k")) == (system, pool, k)]
            out.append(f"<div class='card'>{_histogram_chart(metric, rows, f'{system} @{k}', bins)}</div>")
        out.append("</div>")
    return out


#: the histograms' other measure: unjudged candidates in the top K (:func:`ndcg_spark.report.data.histograms`)
UNJUDGED = "unjudged_in_top_k"


def _histogram_chart(metric: str, rows: Sequence[Row], title: str, bins: int) -> str:
    """One histogram: a metric in ``bins`` buckets (plus the grey "none"), or unjudged counts 0, 1, 2 …"""
    counts = {h.get("bucket"): int(h.get("count") or 0) for h in rows}
    if metric != UNJUDGED:
        bars = [(f"{i / bins:.1f}", counts.get(i, 0)) for i in range(bins)]
        extra = ("none", counts[None]) if counts.get(None) else None
        return bar_chart(bars, title=title, extra=extra)
    if not rows or set(counts) == {None}:
        return bar_chart([], title=f"{title}: not counted (unjudged: zero)")
    top = max([b for b in counts if b is not None] + [0])
    return bar_chart([(str(i), counts.get(i, 0)) for i in range(top + 1)], title=title)
