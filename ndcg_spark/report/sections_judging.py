"""The report's "What to judge next" section: what a judging plan settles, and the head of its list.

A pure function of the plan's rows (dicts of the ``judging_plan`` table: the head, the rows at
100 / 500 / 1,000 documents and the last one; :func:`~ndcg_spark.report.data.collect_report_data`
reads no more); the numbers and words are :mod:`ndcg_spark.report.text_judging`'s, so the page says
what the CLI says. Without plan rows the section is empty.

>>> rows = [{"plan_rank": 1, "target": "aggregate", "systems": ["hybrid"], "mean": "macro", "k": 10,
...          "request_id": "q1", "doc_id": "<d>", "swing": 0.002, "spread_now": 0.08, "spread_remaining": 0.07,
...          "remaining_exact": False, "shown_by": [{"system": "hybrid", "pool_version": None, "rank": 3}]}]
>>> html = "".join(section_judging({"judging": rows}))
>>> "What to judge next" in html and "&lt;d&gt;" in html and "hybrid@3" in html
True
>>> section_judging({"judging": []})
[]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ndcg_spark.judging.files import shown_by_text
from ndcg_spark.report.format import escape, fmt_count, fmt_mean, td
from ndcg_spark.report.text_judging import describe_plan, milestones, plan_head

__all__ = ["section_judging"]


def section_judging(data: Mapping[str, Any]) -> list[str]:
    """The section: the spread now, what the plan's first documents settle whatever the grades, the head."""
    rows = data.get("judging") or []
    if not rows:
        return []
    first = min(rows, key=lambda r: r["plan_rank"])
    out = ["<h2 id='judging'>What to judge next</h2>",
           f"<p>The unjudged spread of {escape(describe_plan(first))} is <span class='num'>"
           f"{escape(fmt_mean(first['spread_now']))}</span>: the mean, over its requests, of how far the grades "
           "of each request's unjudged documents can move it (every grading of them). "
           "Below, the most of it the plan's first documents can leave once judged, whatever grades the judges "
           "give (<code>ndcg-spark judge-next</code>; docs/judging.md):</p>",
           "<table><tr><th>documents judged</th><th>spread left (at most)</th><th>settled (at least)</th>"
           "<th>share settled</th><th class='l'>the same whatever the grades</th></tr>"]
    for m in milestones(rows):
        share = "n/a" if m["share"] is None else f"{m['share']:.1%}"
        out.append("<tr>" + td(fmt_count(m["documents"])) + td(fmt_mean(m["remaining"])) + td(fmt_mean(m["settled"]))
                   + td(share) + td("yes" if m["exact"] else "no: at most", "l") + "</tr>")
    out.append("</table>")
    out += ["<table><tr><th>#</th><th class='l'>request</th><th class='l'>document</th>"
            "<th class='l'>shown by (rank)</th><th>swing on the target</th></tr>"]
    for r in plan_head(rows):
        out.append("<tr>" + td(r["plan_rank"]) + td(r["request_id"], "l") + td(r["doc_id"], "l")
                   + td(shown_by_text(r.get("shown_by")) or "not shown", "l") + td(f"{r['swing']:.5f}") + "</tr>")
    out.append("</table>")
    return out
