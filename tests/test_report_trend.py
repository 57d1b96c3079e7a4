"""The report's first screen and trend section: pure renders of hand-written rows (no Spark), and a
headless-Chromium check that the first screen's headline fits a 1400x900 window without scrolling."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

from ndcg_spark.report.format import fmt_count, fmt_delta, fmt_interval, fmt_mean, fmt_points, fmt_share
from ndcg_spark.report.html import render_html, render_pages

from tests.test_report import _chromium, _chromium_args

RUN = "2026-11-29"
NIGHTS = ("2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28", RUN)
HOSTILE = "<b>x</b>"
POOL_BREAK = "pool version changed: pool-0 → pool-a"
CONTRACT_BREAK = "contract changed (gain): 3f2a… → 9b1c…"


def _night(run, system, k, macro, lo, hi, eligible, empty, all_, previous=None, comparable=None, **extra):
    """One trend row; ``extra`` sets the break, delta and flag columns."""
    row = {
        "run_id": run, "system": system, "pool_version": "pool-a", "k": k, "slice_dimension": "overall",
        "slice_value": "all", "contract_fingerprint": "9b1c", "macro": macro, "macro_ci_low": lo,
        "macro_ci_high": hi, "weighted": macro + 0.02, "weighted_ci_low": lo + 0.02,
        "weighted_ci_high": hi + 0.02, "n_eligible": eligible, "n_empty_ideal": empty, "n_requests": all_,
        "empty_ideal_share": empty / all_, "unjudged_share": 0.1, "below_min_eligible": False,
        "previous_run_id": previous, "comparable": comparable, "break_reason": None, "delta_macro": None,
        "delta_weighted": None, "empty_ideal_share_change": None, "moved_macro": None, "moved_weighted": None,
        "empty_ideal_shifted": None, "flag": None, "max_empty_ideal_shift": 0.02,
    }
    return row | extra


def _trend():
    """bm25@10: a first night, a comparable night, a moved night, a pool break, an empty-ideal shift tonight;
    hybrid@10: moved with a shift tonight; hybrid@5: a contract break tonight; bm25@5: its first run tonight."""
    n25, n26, n27, n28, n29 = NIGHTS
    return [
        _night(n25, "bm25", 10, 0.5911, 0.5802, 0.6020, 1790, 210, 2000, pool_version="pool-0"),
        _night(n26, "bm25", 10, 0.5933, 0.5821, 0.6044, 1801, 199, 2000, n25, True, pool_version="pool-0",
               delta_macro=0.0022, delta_weighted=0.0022),
        _night(n27, "bm25", 10, 0.6377, 0.6265, 0.6489, 1822, 178, 2000, n26, True, pool_version="pool-0",
               delta_macro=0.0444, delta_weighted=0.0444, moved_macro=True, moved_weighted=False, flag="moved"),
        _night(n28, "bm25", 10, 0.6019, 0.5905, 0.6133, 1777, 223, 2000, n27, False, break_reason=POOL_BREAK),
        _night(n29, "bm25", 10, 0.6123, 0.6001, 0.6246, 1834, 166, 2000, n28, True, delta_macro=0.0104,
               delta_weighted=0.0104, empty_ideal_share_change=-0.0285, empty_ideal_shifted=True,
               flag="empty_ideal_shift"),
        _night(n28, "hybrid", 10, 0.6512, 0.6409, 0.6615, 1777, 223, 2000),
        _night(n29, "hybrid", 10, 0.6877, 0.6770, 0.6980, 1834, 166, 2000, n28, True, delta_macro=0.0365,
               delta_weighted=0.0365, moved_macro=True, moved_weighted=True, empty_ideal_share_change=-0.0285,
               empty_ideal_shifted=True, flag="moved_with_empty_ideal_shift"),
        _night(n28, "hybrid", 5, 0.6210, 0.6101, 0.6319, 1777, 223, 2000, contract_fingerprint="3f2a"),
        _night(n29, "hybrid", 5, 0.6655, 0.6549, 0.6761, 1834, 166, 2000, n28, False, break_reason=CONTRACT_BREAK),
        _night(n29, "bm25", 5, 0.5811, 0.5698, 0.5924, 1834, 166, 2000),
    ]


def _agg(row):
    keep = ("system", "pool_version", "k", "slice_dimension", "slice_value", "macro", "macro_ci_low",
            "macro_ci_high", "weighted", "weighted_ci_low", "weighted_ci_high", "n_eligible", "n_empty_ideal",
            "n_requests", "unjudged_share", "below_min_eligible")
    return {name: row[name] for name in keep} | {"run_id": RUN, "min_eligible": 30, "ci_level": 0.95}


def _audit(system, k, dim, value, mean, lo, hi, n, overall, below, ranked=3):
    return {"system": system, "pool_version": "pool-a", "k": k, "slice_dimension": dim, "n_slices": 4,
            "n_slices_ranked": ranked, "worst_slice_value": value, "worst_macro": mean, "worst_ci_low": lo,
            "worst_ci_high": hi, "worst_n_eligible": n, "overall_macro": overall,
            "gap_to_overall": None if mean is None else mean - overall, "ci_below_overall": below}


def _comparison(baseline, candidate, k, delta, lo, hi, paired, kind="reranker", pools_differ=False):
    return {"run_id": RUN, "baseline": baseline, "candidate": candidate, "comparison_kind": kind,
            "pools_differ": pools_differ, "baseline_pool_version": "pool-a",
            "candidate_pool_version": "pool-d" if pools_differ else "pool-a", "slice_dimension": "overall",
            "slice_value": "all", "k": k, "n_requests": 2000, "n_paired": paired, "delta_macro": delta,
            "delta_macro_ci_low": lo, "delta_macro_ci_high": hi, "p_value_macro": 0.004, "below_min_paired": False}


@pytest.fixture
def data():
    trend = _trend()
    tonight = [_agg(r) for r in trend if r["run_id"] == RUN]
    audit = [_audit("bm25", 10, "rarity", HOSTILE, 0.4123, 0.3507, 0.4739, 321, 0.6123, True),
             _audit("hybrid", 10, "rarity", "rare", 0.6311, 0.5502, 0.7120, 287, 0.6877, False),
             _audit("bm25", 5, "rarity", "rare", 0.5012, 0.4433, 0.5591, 321, 0.5811, False),
             _audit("hybrid", 5, "rarity", None, None, None, None, None, 0.6655, None, ranked=0)]
    comparisons = [_comparison("bm25", "hybrid", 10, 0.0912, 0.0711, 0.1104, 1812),
                   _comparison("bm25", "hybrid", 5, 0.0093, -0.0051, 0.0242, 1812),
                   _comparison("bm25", "dense", 10, -0.0433, -0.0610, -0.0251, 1650, "end_to_end", True)]
    return {"run_id": RUN, "aggregates": tonight, "audit": audit, "histograms": [], "comparisons": comparisons,
            "metadata": None, "chart_k": 10, "trend": trend}


def _with_panel(data: dict) -> dict:
    """``data`` with recall@K declared beside NDCG: a panel row per system and K, recall's deltas."""
    panel = [dict(r, metric="recall", macro=r["macro"] + 0.1, macro_ci_low=r["macro_ci_low"] + 0.1,
                  macro_ci_high=r["macro_ci_high"] + 0.1, n_eligible=r["n_eligible"] - (7 if r["system"] == "hybrid" else 0))
             for r in data["aggregates"]]
    recall = [dict(c, metric="recall", delta_macro=0.0123, delta_macro_ci_low=0.0101, delta_macro_ci_high=0.0144)
              for c in data["comparisons"]]
    return dict(data, metrics=["ndcg", "recall"], panel=panel, comparisons=data["comparisons"] + recall)


def test_first_screen_shows_the_other_metrics_beside_the_headline(data):
    """recall@K declared beside NDCG: a compact table at the chart K, each mean with its interval and its
    eligible count where it differs from the headline's; each comparison line adds recall's delta."""
    first = _first_screen(render_html(_with_panel(data)))
    panel = first[first.index("<table class='panel'>"):]
    panel = panel[:panel.index("</table>")]
    assert "macro recall@10 [interval]" in panel and "recall@5" not in panel  # the chart K only
    rows = {re.search(r"<b>(\w+)</b>", row).group(1): row for row in panel.split("<tr data-headline='panel'>")[1:]}
    bm25 = next(r for r in data["aggregates"] if r["system"] == "bm25" and r["k"] == 10)
    assert fmt_mean(bm25["macro"] + 0.1) in rows["bm25"] and "eligible" not in rows["bm25"]  # the headline's count
    assert "1,827 eligible" in rows["hybrid"]  # 7 fewer than NDCG's 1,834
    verdict = next(line for line in first.split("<li ") if "hybrid vs bm25 @10" in line)
    assert "recall@10 <span class='num'>+0.0123</span> <span class='ci'>[+0.0101, +0.0144]</span>" in verdict
    assert "recall" not in next(line for line in first.split("<li ") if "hybrid vs bm25 @5" in line)
    assert first.count("data-headline='verdict'") == 3  # the headline metric's lines only


def _section(page: str, start: str, end: str) -> str:
    return page[page.index(start):page.index(end, page.index(start))]


def _first_screen(page: str) -> str:
    return _section(page, "<section id='first-screen'", "</section>")


def test_first_screen_shows_each_systems_headline_with_denominator_and_change(data):
    page = render_html(data)
    first = _first_screen(page)
    assert page.index("<h1>") < page.index("id='first-screen'") < page.index("id='overall'")
    for r in data["aggregates"]:  # 2 systems x 2 K fit the headline: every K is shown
        row = re.search(rf"<tr data-headline='{r['system']}'>(?:(?!</tr>).)*<td>{r['k']}</td>(?:(?!</tr>).)*</tr>",
                        first)
        assert row, (r["system"], r["k"])
        for text in (fmt_mean(r["macro"]), fmt_interval(r["macro_ci_low"], r["macro_ci_high"]),
                     f"{fmt_count(r['n_eligible'])} eligible of {fmt_count(r['n_requests'])}"):
            assert text in row.group(0), text
    # the change from the previous comparable night, or why there is none
    assert fmt_delta(0.0104) in first and "vs 2026-11-28" in first  # bm25@10 after the pool break
    assert fmt_delta(0.0365) in first  # hybrid@10
    assert f"break: {CONTRACT_BREAK}" in first  # hybrid@5
    assert "first run" in first  # bm25@5
    # the flags, in plain words
    assert "empty-ideal share moved by " + fmt_points(-0.0285) + ": may be traffic, not ranking" in first
    assert "macro and weighted intervals do not overlap the previous night&#x27;s" in first


def test_first_screen_verdicts_per_comparison_and_k(data):
    first = _first_screen(render_html(data))
    lines = re.findall(r"<li data-headline='verdict'>.*?</li>", first)
    assert len(lines) == 3
    better, unclear, worse = (next(li for li in lines if key in li) for key in (
        "hybrid vs bm25 @10", "hybrid vs bm25 @5", "dense vs bm25 @10"))
    for line, c, word in ((better, data["comparisons"][0], "candidate better"),
                          (unclear, data["comparisons"][1], "no clear difference"),
                          (worse, data["comparisons"][2], "candidate worse")):
        assert fmt_delta(c["delta_macro"]) in line
        assert fmt_interval(c["delta_macro_ci_low"], c["delta_macro_ci_high"], fmt_delta) in line
        assert f">{word}</b>" in line and f"{fmt_count(c['n_paired'])} paired of 2,000 requests" in line
    assert "end-to-end (different pools)" in worse and "end-to-end" not in better


def test_first_screen_worst_slices_are_one_table_with_the_below_overall_highlighted(data):
    page = render_html(data)
    first = _first_screen(page)
    assert first.count("<table class='worst'>") == 1
    # at the chart K only (a row per dimension): a row per dimension x K did not fit a 1400x900 window
    assert "<th class='l'>rarity @10</th>" in first and "rarity @5" not in first
    assert "Per dimension at K = 10," in first
    highlighted = re.findall(r"<td class='l below'>.*?</td>", first)
    assert len(highlighted) == 1 and "&lt;b&gt;x&lt;/b&gt;" in highlighted[0]
    for text in (fmt_mean(0.4123), fmt_interval(0.3507, 0.4739), fmt_delta(0.4123 - 0.6123), "321 eligible"):
        assert text in highlighted[0], text
    assert "<b>rare</b> " + "<span class='num'>" + fmt_mean(0.6311) in first  # not below: shown, not red
    assert "no slice ranked (0 of 4 ranked)" not in first  # K = 5's cell
    five = _first_screen(render_html(dict(data, chart_k=5)))
    assert "rarity @5" in five and "no slice ranked (0 of 4 ranked)" in five
    # the old call-outs, one per system x K, are gone from the slices section
    assert "Worst slice of" not in page and "class='callout'" not in page


def test_first_screen_shows_only_the_chart_k_when_every_k_would_not_fit(data):
    more = [dict(r, system=f"{r['system']}-v{i}") for i in range(2) for r in data["aggregates"]]
    first = _first_screen(render_html(dict(data, aggregates=data["aggregates"] + more)))  # 6 systems x 2 K
    assert "At a glance: macro NDCG@10<" in first
    assert first.count("<tr data-headline=") == 6 and "<td>5</td>" not in first
    lines = re.findall(r"<li data-headline='verdict'>.*?</li>", first)
    assert len(lines) == 2 and all("@10" in li for li in lines)


def test_without_a_trend_there_is_no_change_column_and_no_trend_section(data):
    page = render_html(dict(data, trend=[]))
    assert "change from the previous comparable night" not in page
    assert "id='trend'" not in page and "href='#trend'" not in page
    assert fmt_mean(0.6123) in _first_screen(page)
    assert "not in the trend" in render_html(dict(data, trend=[r for r in data["trend"] if r["system"] != "bm25"]))


def test_trend_section_draws_each_system_and_k_with_breaks_and_flags(data):
    page = render_html(data)
    trend = _section(page, "<h2 id='trend'>", "<h2 id='comparison")
    assert "Trend: the last 5 runs" in trend and "href='#trend'" in page
    cards = trend.split("<div class='card trend'>")[1:]
    assert [c[:c.index("</b>")] for c in cards] == ["<b>bm25 @5", "<b>bm25 @10", "<b>hybrid @5", "<b>hybrid @10"]
    bm25 = cards[1]
    assert bm25.count("<svg") == 1 and all(f">{night}</text>" in bm25 for night in NIGHTS)
    # lines only between comparable nights: 25-26, 26-27, 28-29; the pool break is a gap with its reason
    assert bm25.count('class="join"') == 3 and bm25.count('class="break"') == 1
    assert f"break 1 · 2026-11-28 (after 2026-11-27): {POOL_BREAK}" in bm25.replace("&gt;", ">")
    assert bm25.count('class="ring"') == 2 and ">moved</text>" in bm25 and ">shift</text>" in bm25
    assert "2026-11-27: macro interval does not overlap the previous night&#x27;s" in bm25
    assert ">moved + shift</text>" in cards[3] and CONTRACT_BREAK.replace(">", "&gt;") in cards[2]
    assert ">2026-11-25</text>" in cards[2]  # every chart has every night's slot, so nights line up


def test_trend_tables_give_every_nights_numbers_with_denominators(data):
    trend = _section(render_html(data), "<h2 id='trend'>", "<h2 id='comparison")
    cards = trend.split("<div class='card trend'>")[1:]
    for r in data["trend"]:
        card = cards[["bm25 @5", "bm25 @10", "hybrid @5", "hybrid @10"].index(f"{r['system']} @{r['k']}")]
        row = re.search(rf'<tr><td class="l">{r["run_id"]}</td>.*?</tr>', card)
        assert row, (r["system"], r["k"], r["run_id"])
        cells = row.group(0)
        share = f"{fmt_share(r['n_empty_ideal'] / r['n_requests'])} ({r['n_empty_ideal']} / 2,000)"
        for text in (r["pool_version"], fmt_mean(r["macro"]), fmt_interval(r["macro_ci_low"], r["macro_ci_high"]),
                     fmt_mean(r["weighted"]), f"{fmt_count(r['n_eligible'])} / 2,000", share):
            assert text in cells, (text, cells)
        if r["comparable"]:
            assert f"<td>{fmt_delta(r['delta_macro'])}</td>" in cells
            assert f"comparable ({r['previous_run_id']})" in cells
            assert f"Δ {fmt_delta(r['delta_weighted'])}</span>" in cells
        elif r["comparable"] is False:
            assert "break: " + r["break_reason"].replace(">", "&gt;") in cells
        else:
            assert "first run" in cells


def test_trend_values_are_escaped_and_comparison_pages_have_no_trend(data):
    trend = [dict(r, run_id="<i>" + r["run_id"], previous_run_id=r["previous_run_id"] and "<i>" + r["previous_run_id"],
                  break_reason=r["break_reason"] and "<script>" + r["break_reason"]) for r in data["trend"]]
    page = render_html(dict(data, trend=trend, run_id="<i>" + RUN))
    assert "<script" not in page.lower() and "<i>" not in page and "&lt;script&gt;pool version changed" in page
    pages = render_pages(data)
    assert "id='trend'" not in pages["comparison-bm25-vs-hybrid.html"]
    assert "id='first-screen'" not in pages["comparison-bm25-vs-hybrid.html"]


# -------------------------------------------------------------------------------- browser
_MEASURE = """<script>
const items = [...document.querySelectorAll('[data-headline]')].map(e => {
  const r = e.getBoundingClientRect();
  return {name: e.dataset.headline, top: r.top, bottom: r.bottom, text: e.textContent};
});
const out = document.createElement('pre');
out.id = 'measured';
const worst = document.querySelector('table.worst');
out.textContent = JSON.stringify({width: innerWidth, height: innerHeight, scrollY: scrollY, items: items,
                                  worst: worst ? worst.getBoundingClientRect().bottom : null});
document.body.appendChild(out);
</script>"""


@pytest.mark.slow
def test_first_screen_fits_1400x900_and_the_trend_shows_in_chromium(data, tmp_path):
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed here (apt-get install chromium); CI installs it")
    data = _with_panel(data)  # recall@K beside NDCG: the panel must fit too
    page = render_html(data)
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    args = [a for a in _chromium_args(binary, tmp_path / "profile") if not a.startswith("--window-size=")]
    args.append("--window-size=1400,900")
    shot = Path("/tmp/first_screen.png")  # kept, to be looked at
    shot.unlink(missing_ok=True)
    subprocess.run([*args, f"--screenshot={shot}", path.as_uri()], check=True, capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000
    dom = subprocess.run([*args, "--dump-dom", path.as_uri()], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    for expected in ("At a glance", "candidate better", f"break: {CONTRACT_BREAK}", "Trend: the last 5 runs",
                     "break 1", "moved + shift", POOL_BREAK, fmt_delta(0.0104),
                     *(fmt_mean(r["macro"]) for r in data["trend"])):
        assert expected in text, expected
    # a test-only copy without the CSP, with a script that measures the headline where the window shows it
    probe = tmp_path / "probe.html"
    csp = re.search(r"<meta http-equiv='Content-Security-Policy'[^>]*>", page).group(0)
    probe.write_text(page.replace(csp, "").replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    dom = subprocess.run([*args, "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    measured = json.loads(html.unescape(re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S).group(1)))
    # the page's viewport in a 1400x900 window: less than 900 tall (the window's own frame), so stricter
    assert measured["width"] == 1400 and measured["height"] <= 900 and measured["scrollY"] == 0
    items = measured["items"]
    systems = {r["system"] for r in data["aggregates"]}
    assert len(items) == len(data["aggregates"]) + 3 + len(systems)  # every headline row, panel row, verdict line
    below_the_fold = [it for it in items if not 0 <= it["top"] < it["bottom"] <= measured["height"]]
    assert not below_the_fold, below_the_fold
    # the worst slices at the chart K, a row per dimension, on the first screen too
    assert measured["worst"] is not None and measured["worst"] <= measured["height"], measured["worst"]
    shown = " ".join(it["text"] for it in items)
    for r in data["aggregates"]:
        assert fmt_mean(r["macro"]) in shown and fmt_interval(r["macro_ci_low"], r["macro_ci_high"]) in shown
    assert fmt_delta(0.0912) in shown and "candidate worse" in shown


def test_a_single_night_gets_a_sentence_not_a_chart_per_system_and_k(data):
    one = [r for r in data["trend"] if r["run_id"] == RUN]
    page = render_html(dict(data, trend=one))
    trend = page.split("<h2 id='trend'>", 1)[1].split("<h2", 1)[0]
    assert f"{RUN} is the first night in the trend table" in trend
    assert "<svg" not in trend and "class='card'" not in trend
