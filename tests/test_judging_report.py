"""What a judging plan says where users look: the CLI's lines and the report's "What to judge next"
section (pure functions of the plan's rows), and the rows the report reads of a plan table."""

from __future__ import annotations

import re

from ndcg_spark.judging.plan import PLAN_COLUMNS, PLAN_SCHEMA
from ndcg_spark.report.data import judging_rows
from ndcg_spark.report.html import render_html
from ndcg_spark.report.sections_judging import section_judging
from ndcg_spark.report.text_judging import format_judging, judging_summary, milestones
from tests.test_report_trend import data  # noqa: F401  (data: one night of report rows)

NOW = 0.0625


def _plan(n: int, *, exact_from: int | None = None) -> list[dict]:
    """``n`` rows of a comparison's plan whose remaining spread falls by 1/20000 per document."""
    return [{"run_id": "2026-11-29", "target": "compare", "systems": ["hybrid", "bm25"], "k": 10, "mean": "weighted",
             "plan_rank": r, "request_id": f"q{r % 7}", "doc_id": f"<d{r}>", "swing": 0.5 / r,
             "shown_by": [] if r == 3 else [{"system": "hybrid", "pool_version": "p", "rank": r % 10 + 1}],
             "spread_now": NOW, "spread_remaining": max(NOW - r / 20000, 0.0),
             "remaining_exact": exact_from is not None and r >= exact_from, "worst_case_grade": 0.0,
             "contract_fingerprint": "f"} for r in range(1, n + 1)]


def test_milestones_state_what_the_first_100_500_1000_and_all_documents_settle():
    rows = _plan(1200, exact_from=1000)
    got = milestones(list(reversed(rows)))  # any order
    assert [m["documents"] for m in got] == [100, 500, 1000, 1200]
    for m in got:
        remaining = max(NOW - m["documents"] / 20000, 0.0)
        assert abs(m["remaining"] - remaining) < 1e-15 and abs(m["settled"] - (NOW - remaining)) < 1e-15
        assert abs(m["share"] - (NOW - remaining) / NOW) < 1e-12
        assert m["exact"] is (m["documents"] >= 1000)
    assert [m["documents"] for m in milestones(_plan(60))] == [60]  # a short plan: its last row only
    assert [m["documents"] for m in milestones(_plan(500))] == [100, 500]
    assert milestones([]) == []
    nothing = [dict(r, spread_now=0.0, spread_remaining=0.0) for r in _plan(3)]
    assert milestones(nothing)[0]["share"] is None


def test_the_cli_says_the_spread_what_the_milestones_settle_and_the_head():
    rows = _plan(600)
    line = judging_summary(rows)
    assert line == ("unjudged spread of the weighted delta hybrid - bm25 of NDCG@10: 0.0625; judging the first 100 "
                    "documents leaves at most 0.0575 whatever the grades (settled: 8.0%), 500: 0.0375 (40.0%), "
                    "600: 0.0325 (48.0%)")
    lines = format_judging(rows, "parquet /x/judging_plan", 2.04, ["a.txt", "b.csv"])
    assert lines[0] == "judging plan 600 documents -> parquet /x/judging_plan (2.0 s); for the judges: a.txt, b.csv"
    assert lines[1] == line and len(lines) == 2 + 5
    assert lines[2] == "    1. q1 <d1> (hybrid@2) swing 0.50000" and "(not shown)" in lines[4]
    assert judging_summary([]).startswith("judging plan: nothing unjudged")


def test_the_section_shows_the_milestones_and_the_head_escaped():
    rows = _plan(1200)
    html = "".join(section_judging({"judging": rows}))
    assert html.startswith("<h2 id='judging'>What to judge next</h2>")
    assert "the weighted delta hybrid - bm25 of NDCG@10" in html and "0.0625" in html
    cells = re.findall(r"<tr><td>([\d,]+)</td><td>([\d.]+)</td><td>([\d.]+)</td><td>([\d.]+%)</td>", html)
    assert [c[0] for c in cells] == ["100", "500", "1,000", "1,200"]
    assert cells[1] == ("500", "0.0375", "0.0250", "40.0%")
    head = re.findall(r'<td class="l">(&lt;d\d+&gt;)</td>', html)
    assert head == [f"&lt;d{r}&gt;" for r in range(1, 11)]  # the first ten, in plan order, escaped
    assert "<d1>" not in html and "not shown" in html
    assert section_judging({"judging": []}) == [] and section_judging({}) == []


def test_the_page_gains_the_section_and_its_link_only_with_plan_rows(data):  # noqa: F811
    page = render_html(data)
    assert render_html(dict(data, judging=[])) == page and "What to judge next" not in page
    with_plan = render_html(dict(data, judging=_plan(30)))
    assert "<a href='#judging'>What to judge next</a>" in with_plan and "<h2 id='judging'>" in with_plan
    assert with_plan.index("<h2 id='slices'>") < with_plan.index("<h2 id='judging'>") < with_plan.index("<h2 id='contract'>")


def test_the_report_reads_the_head_the_milestones_and_the_last_row_of_a_plan(spark):
    rows = _plan(1234)
    table = spark.createDataFrame([tuple(r[c] for c in PLAN_COLUMNS) for r in rows], PLAN_SCHEMA)
    read = judging_rows(table)
    assert sorted(r["plan_rank"] for r in read) == [*range(1, 11), 100, 500, 1000, 1234]
    assert milestones(read) == milestones(rows) and section_judging({"judging": read}) == section_judging(
        {"judging": rows})
    assert judging_rows(table.limit(0)) == []
