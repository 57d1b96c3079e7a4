"""The report page: one self-contained static HTML file per run (and per comparison).

:func:`render_html` is a pure function of plain data (what
:func:`~ndcg_spark.report.data.collect_report_data` returns): one HTML string with inline CSS and
hand-built inline SVG (:mod:`ndcg_spark.report.charts`). No script, no font, no image is fetched
-- the page's Content-Security-Policy forbids it -- and every value is escaped, so a slice value
like ``<script>`` is shown, never run. :func:`render_pages` gives every page of a run by file name;
:mod:`ndcg_spark.job.report_files` writes them.

Examples
--------
>>> page = render_html({"run_id": "2026-11-29", "aggregates": [], "audit": [], "histograms": [],
...                     "comparisons": [], "metadata": None})
>>> page.startswith("<!DOCTYPE html>") and "run 2026-11-29" in page
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ndcg_spark.report.format import escape, safe_name
from ndcg_spark.report.panel import headline, label
from ndcg_spark.report.sections_agreement import section_agreement
from ndcg_spark.report.sections_comparison import comparison_pairs, section_comparisons
from ndcg_spark.report.sections_contract import section_contract
from ndcg_spark.report.sections_first import section_first_screen
from ndcg_spark.report.sections_guardrails import section_guardrails
from ndcg_spark.report.sections_judging import section_judging
from ndcg_spark.report.sections_run import section_distributions, section_overall, section_slices
from ndcg_spark.report.sections_trend import overall_trend, section_trend
from ndcg_spark.report.text_runs import attempts_summary

__all__ = ["CONTENT_SECURITY_POLICY", "RUN_PAGE", "render_html", "render_pages"]

#: nothing but the page's own inline styles: no script, no font, no image, no request
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
#: the file name of a run's page; each comparison's page is ``comparison-<baseline>-vs-<candidate>.html``
RUN_PAGE = "report.html"

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;
color:#1d2330;line-height:1.4;padding:0 16px}
h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:36px;border-bottom:2px solid #dde3ec;padding-bottom:4px}
h3{margin-bottom:6px}.sub{color:#5b6577}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.92em}
th,td{border:1px solid #d5dbe5;padding:4px 8px;text-align:right;vertical-align:top}td{white-space:nowrap}
td.wrap{white-space:normal;max-width:760px;overflow-wrap:anywhere}
th{background:#f1f4f9}td.l,th.l{text-align:left}
.num{font-variant-numeric:tabular-nums;font-weight:600}.ci{color:#5b6577;font-size:.9em}
.den{color:#39465c;font-size:.88em;white-space:nowrap}
.notice{border:3px solid #c0392b;background:#fdecea;padding:12px 16px;margin:16px 0;border-radius:6px}
.notice h3{margin-top:0;color:#a93226}.callout{border-left:5px solid #c0392b;background:#fbf3f2;padding:6px 12px;margin:6px 0}
.ok{border-left:5px solid #2e86c1;background:#eef6fb;padding:6px 12px;margin:6px 0}
.small{color:#8a6d00}.grid{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #e1e6ee;padding:6px;border-radius:4px}
svg text{font-family:inherit;font-size:11px;fill:#1d2330}svg .muted{fill:#6b7587}
code{background:#f1f4f9;padding:1px 4px;border-radius:3px}details{margin:8px 0}
section.first{border:1px solid #dde3ec;border-radius:6px;padding:2px 14px 4px;margin:12px 0 8px}
h2.first{margin:10px 0 6px;border:0;padding:0;font-size:1.25em}.first table{margin:4px 0 8px}
.big{font-size:1.15em}ul.verdicts{margin:4px 0 8px;padding-left:20px}ul.verdicts li{margin:2px 0}
.better{color:#1e7b34}.worse{color:#c0392b}.no-clear-difference,.no-interval{color:#5b6577}
.flag{color:#a93226;font-weight:600}.brk{color:#8a6d00}td.below{background:#fdecea;border-left:4px solid #c0392b}
.below-key{color:#c0392b;font-weight:600}.legend{font-size:.85em;margin:0 0 8px}
.beside{display:flex;flex-wrap:wrap;gap:0 24px;align-items:flex-start}.beside>div{flex:1 1 420px}
.card.trend{margin:10px 0}.series{display:flex;flex-wrap:wrap;gap:4px 16px;align-items:flex-start}
.series .notes{flex:1;min-width:280px;padding-top:20px}.note{font-size:.85em;font-weight:normal;margin:2px 0}
.card.trend table{font-size:.84em}.card.trend td.wrap{min-width:200px}.card.trend details{overflow-x:auto}
"""


def render_html(data: Mapping[str, Any]) -> str:
    """The report page for one run (or one comparison): a pure function of plain data.

    Parameters
    ----------
    data : Mapping
        As :func:`~ndcg_spark.report.data.collect_report_data` returns it: ``run_id``;
        ``aggregates``, ``audit``, ``comparisons`` (rows of those tables as dicts); ``histograms``
        (rows of :func:`~ndcg_spark.report.data.histograms`); ``metadata`` (the run-metadata row or
        None); optional ``trend`` (trend rows of the overall slice for the last runs: the trend
        charts and, on the first screen, the change from the previous comparable night),
        ``run_status`` (a notice unless ``complete``; leave the key out when unknown; a ``failed``
        run's ``run_failure``: its ``reason`` and ``ended_at``), ``attempts`` (the run's attempts,
        each with its ``outcome``: how many the night took), ``guardrails``
        (guardrail table rows: their section, and their verdict on the first screen), ``judging``
        (judging plan rows: the "What to judge next" section), ``bins``,
        ``chart_k``, ``contract_from_config``, ``config_file``, ``generated_at``. Missing sections
        are left out.

    Returns
    -------
    str
        The whole page, ``<!DOCTYPE html>`` to ``</html>``.
    """
    run_id = data.get("run_id")
    aggs = data.get("aggregates") or []
    only_comparison = not aggs and bool(data.get("comparisons"))
    title = f"{label(headline(data))}@K {'comparison' if only_comparison else 'report'} — run {run_id}"
    body = [f"<h1>{escape(title)}</h1>", *_page_head(data)]
    if aggs:
        body += section_first_screen(data)
        body += section_overall(aggs, headline(data))
        body += section_trend(data)
    body += section_comparisons(data)
    body += section_guardrails(data)
    if aggs:
        body += section_agreement(data)
        body += section_slices(data)
        body += section_judging(data)
    body += section_distributions(data)
    body += section_contract(data)
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CONTENT_SECURITY_POLICY}\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _page_head(data: Mapping[str, Any]) -> list[str]:
    """The line under the title, the links to the sections and, unless the run is published, a notice."""
    run_id = data.get("run_id")
    aggs = data.get("aggregates") or []
    pools = sorted({str(r.get("pool_version")) for r in aggs if r.get("pool_version") is not None})
    attempts = attempts_summary(data.get("attempts") or [])
    out = [f"<p class='sub'>run {escape(run_id)}" + (f" · pool version {escape(', '.join(pools))}" if pools else "")
           + (f" · {escape(attempts)} (<code>ndcg-spark runs --attempts</code>)" if attempts else "")
           + " · static page: no scripts, nothing fetched.</p>"]
    trend = [("trend", "Trend")] if overall_trend(data) else []
    guardrails = [("guardrails", "Guardrails")] if data.get("guardrails") else []
    judging = [("judging", "What to judge next")] if data.get("judging") else []
    guardrails += [("agreement", "Offline vs release")] if data.get("agreement") and aggs else []
    nav = [("overall", "Overall"), *trend, *guardrails, ("slices", "Slices"), *judging, ("distributions", "Distributions"),
           ("contract", "Contract & accounting")] if aggs else [*guardrails, ("contract", "Contract & accounting")]
    out.append("<p>" + " · ".join(f"<a href='#{a}'>{escape(t)}</a>" for a, t in nav) + "</p>")
    if "run_status" in data and data.get("run_status") != "complete":
        out.append(_not_published(data.get("run_status"), data.get("run_failure") or {}))
    return out


def _not_published(status: str | None, failure: Mapping[str, Any]) -> str:
    """The notice on the page of a run whose status row does not say ``complete`` (a failed one: why)."""
    if status == "failed":
        ended = failure.get("ended_at")
        when = f" at {ended:%Y-%m-%d %H:%M} UTC" if hasattr(ended, "strftime") else ""
        why = f"<p>Its last attempt failed{when}: {escape(' '.join(str(failure.get('reason') or 'no reason recorded').split()))}</p>"
    else:
        why = ("<p>Its run-status row " + (f"says <b>{escape(status)}</b>" if status else "is missing")
               + ": the run was still being written, its driver died before it was published, or its stages were "
               "run by hand.</p>")
    return ("<div class='notice' role='alert'><h3>⚠ This run is not published</h3>" + why
            + "<p>Its tables may be partial; nightly readers do not see it.</p></div>")


def render_pages(data: Mapping[str, Any]) -> dict[str, str]:
    """Every page of a run by file name: :data:`RUN_PAGE`, then one page per comparison of the run.

    A comparison's page shows that comparison, its guardrails and the run's contract section only.

    >>> pages = render_pages({"run_id": "r1", "comparisons": [{"baseline": "bm25", "candidate": "hybrid", "k": 10}]})
    >>> list(pages)
    ['report.html', 'comparison-bm25-vs-hybrid.html']
    """
    pages = {RUN_PAGE: render_html(data)}
    for pair, rows in comparison_pairs(data.get("comparisons") or []).items():
        baseline, candidate = pair
        guardrails = [g for g in data.get("guardrails") or [] if (g.get("baseline"), g.get("candidate")) == pair]
        page = dict(data, aggregates=[], audit=[], histograms=[], comparisons=rows, guardrails=guardrails)
        pages[f"comparison-{safe_name(str(baseline))}-vs-{safe_name(str(candidate))}.html"] = render_html(page)
    return pages
