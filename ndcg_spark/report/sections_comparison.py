"""The comparison sections of the report: one per baseline x candidate of the comparison table.

Each shows the comparison's settings, a notice when it is end-to-end (different candidate pools,
with each side's pool recall), the headline metric's deltas per K with intervals and p-values, every
other metric's (and what-if's) at each K, the request accounting, and the headline's deltas per
slice. Pure functions of the comparison rows (dicts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ndcg_spark.report.charts import chart_k, interval_chart
from ndcg_spark.report.panel import headline, label, metric_of, of_metric
from ndcg_spark.report.format import (
    OVERALL,
    delta_cell,
    escape,
    fmt_count,
    fmt_delta,
    fmt_mean,
    fmt_p,
    is_true,
    resampling_unit,
    safe_name,
    sort_key,
    td,
)

__all__ = ["comparison_pairs", "section_comparisons"]

Row = Mapping[str, Any]


def comparison_pairs(rows: Iterable[Row]) -> dict[tuple[Any, Any], list[Row]]:
    """The comparison rows grouped by ``(baseline, candidate)``, in the order the pairs first appear."""
    out: dict[tuple[Any, Any], list[Row]] = {}
    for r in rows:
        out.setdefault((r.get("baseline"), r.get("candidate")), []).append(r)
    return out


def section_comparisons(data: Mapping[str, Any]) -> list[str]:
    """One section per baseline x candidate in ``data["comparisons"]`` (nothing when there is none)."""
    out: list[str] = []
    metric = headline(data)
    for (baseline, candidate), every in comparison_pairs(data.get("comparisons") or []).items():
        rows = of_metric(every, metric) or every
        first = rows[0]
        overall = sorted((r for r in rows if r.get("slice_dimension") == OVERALL), key=lambda r: sort_key(r, "k"))
        top = overall[-1] if overall else first
        b, c = str(baseline), str(candidate)
        out.append(f"<h2 id='comparison-{escape(safe_name(b))}-{escape(safe_name(c))}'>Comparison: {escape(c)} "
                   f"(candidate) vs {escape(b)} (baseline)</h2>")
        out.append(_settings(first, b, c))
        if is_true(first.get("pools_differ")) or first.get("comparison_kind") == "end_to_end":
            out.append(_end_to_end_notice(first, top, b, c))
        out += _deltas_per_k(overall, b, c, metric)
        out += _panel(every, metric, b, c)
        out.append(_request_accounting(top, b, c))
        items = [{"label": f"K = {r.get('k')}", "value": r.get("delta_macro"), "lo": r.get("delta_macro_ci_low"),
                  "hi": r.get("delta_macro_ci_high")} for r in overall]
        out.append(f"<div class='card'><b>delta macro {escape(label(metric))} per K</b><br>"
                   + interval_chart(items, reference=0.0, reference_label="no difference", clamp=None, fmt=fmt_delta)
                   + "</div>")
        out += _deltas_per_slice(rows, chart_k(data, rows))
    return out


def _settings(first: Row, b: str, c: str) -> str:
    """The comparison's kind, pools, ideal and test settings, in one paragraph."""
    return (f"<p>Kind: <b>{escape(first.get('comparison_kind'))}</b>. Pools: {escape(b)} "
            f"<code>{escape(first.get('baseline_pool_version'))}</code>, {escape(c)} "
            f"<code>{escape(first.get('candidate_pool_version'))}</code>. Ideal: "
            f"<code>{escape(first.get('ideal'))}</code>. Delta = candidate − baseline over paired requests "
            f"(both sides have a value); {escape(first.get('bootstrap_replicates'))} paired bootstrap replicates, "
            f"{escape(first.get('permutations'))} sign flips{escape(resampling_unit(first.get('bootstrap_buckets')))}, "
            f"seed {escape(first.get('seed'))}, tie when |delta| ≤ "
            f"{escape(first.get('tie_tolerance'))}.</p>")


def _end_to_end_notice(first: Row, top: Row, b: str, c: str) -> str:
    """The alert of an end-to-end comparison: why, and each side's pool recall at the largest K."""
    if is_true(first.get("pools_differ")):
        why = ("The two sides ranked <b>different candidate pools</b> "
               f"({escape(fmt_count(top.get('n_pool_differs')))} shared requests with different candidate sets), so a "
               "difference can come from what was retrieved as well as from how it was ranked.")
    else:
        why = "Requested as end-to-end; the two sides ranked the same candidates."
    return ("<div class='notice' role='alert'><h3>⚠ End-to-end comparison — not a reranker comparison</h3>"
            f"<p>{why} Both sides' metrics use one shared ideal from the judgments.</p>"
            "<p>Pool recall (positives in the pool ÷ all known positives, over "
            f"{escape(fmt_count(top.get('n_pool_recall_requests')))} shared requests with a known positive):</p><table>"
            "<tr><th class='l'>side</th><th>pool recall (macro)</th><th>pool recall (weighted)</th></tr>"
            f"<tr>{td(b + ' (baseline)', 'l')}{td(fmt_mean(top.get('baseline_pool_recall_macro')))}"
            f"{td(fmt_mean(top.get('baseline_pool_recall_weighted')))}</tr>"
            f"<tr>{td(c + ' (candidate)', 'l')}{td(fmt_mean(top.get('candidate_pool_recall_macro')))}"
            f"{td(fmt_mean(top.get('candidate_pool_recall_weighted')))}</tr></table></div>")


def _win_tie_loss(r: Row) -> str:
    return td(f"{fmt_count(r.get('wins'))} / {fmt_count(r.get('ties'))} / {fmt_count(r.get('losses'))}")


def _panel(rows: Sequence[Row], metric: str, b: str, c: str) -> list[str]:
    """Every other metric and what-if of the comparison, overall, at each K: a row each."""
    others = sorted((r for r in rows if r.get("slice_dimension") == OVERALL and metric_of(r) != metric),
                    key=lambda r: sort_key(r, "k"))
    if not others:
        return []
    out = [f"<h3>The other metrics</h3><table><tr><th class='l'>metric</th><th>paired</th><th>{escape(b)} macro</th>"
           f"<th>{escape(c)} macro</th><th>delta macro [interval]</th><th>p</th><th>win / tie / loss</th></tr>"]
    for r in others:
        out.append("<tr>" + td(label(metric_of(r), r.get("k")), "l") + td(fmt_count(r.get("n_paired")))
                   + td(fmt_mean(r.get("baseline_macro"))) + td(fmt_mean(r.get("candidate_macro")))
                   + delta_cell(r, "macro") + td(fmt_p(r.get("p_value_macro"))) + _win_tie_loss(r) + "</tr>")
    out.append("</table>")
    return out


def _deltas_per_k(overall: Sequence[Row], b: str, c: str, metric: str) -> list[str]:
    """The overall rows: both sides' means, the deltas with intervals and p-values, wins/ties/losses."""
    out = [f"<h3>{escape(label(metric))}</h3>"
           "<table><tr><th>K</th><th>paired</th><th>" + escape(b) + " macro</th><th>" + escape(c) + " macro</th>"
           "<th>delta macro [interval]</th><th>p</th><th>delta weighted [interval]</th><th>p</th>"
           "<th>win / tie / loss</th><th>all requests</th></tr>"]
    for r in overall:
        out.append("<tr>" + td(r.get("k")) + td(fmt_count(r.get("n_paired")))
                   + td(fmt_mean(r.get("baseline_macro"))) + td(fmt_mean(r.get("candidate_macro")))
                   + delta_cell(r, "macro") + td(fmt_p(r.get("p_value_macro")))
                   + delta_cell(r, "weighted") + td(fmt_p(r.get("p_value_weighted")))
                   + _win_tie_loss(r) + td(fmt_count(r.get("n_requests"))) + "</tr>")
    out.append("</table>")
    return out


def _request_accounting(top: Row, b: str, c: str) -> str:
    """Where the requests at the largest K went: paired, one side only (and why), neither."""
    def count(name: str) -> str:
        return escape(fmt_count(top.get(name)))

    return (f"<p class='sub'>Requests at K={escape(top.get('k'))}: {count('n_requests')} in all; "
            f"{count('n_paired')} paired; {escape(b)} only: {count('n_only_baseline_missing')} "
            f"({escape(c)} returned nothing) + {count('n_only_baseline_empty')} ({escape(c)}'s ideal empty); "
            f"{escape(c)} only: {count('n_only_candidate_missing')} + {count('n_only_candidate_empty')}; "
            f"neither: {count('n_neither')}; returned nothing: {escape(b)} {count('n_baseline_no_results')}, "
            f"{escape(c)} {count('n_candidate_no_results')}.</p>")


def _deltas_per_slice(rows: Sequence[Row], k: Any) -> list[str]:
    """One delta chart per slice dimension at K = ``k``, and every slice row at every K under a ``<details>``."""
    dims = sorted({r.get("slice_dimension") for r in rows if r.get("slice_dimension") != OVERALL}, key=str)
    if not dims:
        return []
    out = [f"<h3>Delta per slice (macro, K = {escape(k)})</h3><div class='grid'>"]
    for dim in dims:
        srows = sorted((r for r in rows if r.get("slice_dimension") == dim and r.get("k") == k),
                       key=lambda r: sort_key(r, "slice_value"))
        items = [{"label": f"{r.get('slice_value')}" + (" (small)" if is_true(r.get("below_min_paired")) else ""),
                  "value": r.get("delta_macro"), "lo": r.get("delta_macro_ci_low"),
                  "hi": r.get("delta_macro_ci_high"), "style": "small" if is_true(r.get("below_min_paired")) else None,
                  "note": f"{fmt_count(r.get('n_paired'))} paired"} for r in srows]
        out.append(f"<div class='card'><b>{escape(dim)}</b><br>" + interval_chart(
            items, reference=0.0, reference_label="0", clamp=None, fmt=fmt_delta, width=560) + "</div>")
    out.append("</div>")
    srows = sorted((r for r in rows if r.get("slice_dimension") != OVERALL),
                   key=lambda r: sort_key(r, "slice_dimension", "k", "slice_value"))
    out.append(f"<details><summary>every slice at every K ({len(srows)} rows)</summary><table>"
               "<tr><th class='l'>dimension</th><th class='l'>slice</th><th>K</th><th>paired</th>"
               "<th>delta macro [interval]</th><th>p</th><th>win / tie / loss</th><th>small</th></tr>")
    for r in srows:
        out.append("<tr>" + td(r.get("slice_dimension"), "l") + td(r.get("slice_value"), "l")
                   + td(r.get("k")) + td(fmt_count(r.get("n_paired"))) + delta_cell(r, "macro")
                   + td(fmt_p(r.get("p_value_macro"))) + _win_tie_loss(r)
                   + td("small" if is_true(r.get("below_min_paired")) else "") + "</tr>")
    out.append("</table></details>")
    return out
