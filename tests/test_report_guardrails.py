"""How guardrails are shown: the CLI lines after ``compare`` and the report's Guardrails section, on
hand-written guardrail rows (the SPEC's story: hybrid beats bm25 on NDCG, is faster to the procedure
overall but slower on rare equipment, fails p95 latency and is inconclusive on safety); the page is
unchanged without guardrail rows; the rows reach the page from a DataFrame and from the job's table."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
import yaml

from ndcg_spark.guardrails.columns import GUARDRAIL_COLUMNS
from ndcg_spark.report.html import render_html, render_pages
from ndcg_spark.report.sections_guardrails import guardrail_verdict_html
from ndcg_spark.report.text import format_guardrails

from tests.test_report_trend import RUN, _comparison, data  # noqa: F401  (data: one night, three comparisons)

FINGERPRINT = "7c1e9a0b52d4f311"
HOSTILE = "<i>rare</i>"
_COUNTS = {"k", "headline_k", "baseline_n", "baseline_n_observed", "candidate_n", "candidate_n_observed", "rows_read",
           "rows_set_aside", "bootstrap_replicates", "seed"}
_TEXT = {"run_id", "headline_metric", "baseline", "candidate", "guardrail", "source", "statistic", "better", "margin_kind", "design",
         "slice_dimension", "slice_value", "verdict", "overall_verdict", "declaration", "guardrail_fingerprint",
         "contract_fingerprint", "code_version", "created_at"}
SCHEMA = ", ".join(f"{c} {'string' if c in _TEXT else 'bigint' if c in _COUNTS else 'double'}"
                   for c in GUARDRAIL_COLUMNS)


def _guard(name, statistic, better, kind, margin, values, diff, rel, verdict, *, source="release", k=None,
           dim="overall", value="all", n=(2000, 2010), reach=None):
    """One guardrail row: ``values`` (baseline, candidate), ``diff`` / ``rel`` (value, low, high), ``reach``
    (baseline, candidate observed share) for a conditional statistic."""
    row = dict.fromkeys(GUARDRAIL_COLUMNS)
    row.update(run_id=RUN, baseline="bm25", candidate="hybrid", guardrail=name, source=source, statistic=statistic,
               better=better, margin_kind=kind, margin=margin, design="two_sample" if source == "release" else None,
               k=k, slice_dimension=dim, slice_value=value, verdict=verdict, overall_verdict="fail",
               ci_level=0.95, bootstrap_replicates=200, seed=0, guardrail_fingerprint=FINGERPRINT,
               contract_fingerprint="9b1c", code_version="0.1.0", created_at="2026-11-29 02:10:00",
               declaration=f'{{"better":"{better}","margin":{{"{kind}":{margin}}},"name":"{name}"}}',
               rows_read=8040 if source == "release" else None, rows_set_aside=12 if source == "release" else None)
    for side, v, count, share in zip(("baseline", "candidate"), values, n, reach or (None, None)):
        observed = count if share is None else round(count * share)
        row.update({f"{side}_n": count, f"{side}_n_observed": observed, f"{side}_observed_share": share,
                    f"{side}_value": v, f"{side}_ci_low": v * 0.97, f"{side}_ci_high": v * 1.03})
    row.update(zip(("difference", "difference_ci_low", "difference_ci_high"), diff))
    row.update(zip(("relative_difference", "relative_ci_low", "relative_ci_high"), rel))
    if reach:
        row["observed_share_difference"] = reach[1] - reach[0]
    return row


def _rows():
    ttp = dict(statistic="mean", better="lower", kind="relative", margin=0.1)
    perm = dict(statistic="rate", better="lower", kind="absolute", margin=0.02, source="offline", n=(200, 200))
    return [
        _guard("task_completion", "rate", "higher", "absolute", 0.02, (0.812, 0.820), (0.008, -0.004, 0.02),
               (0.0099, -0.005, 0.025), "pass"),
        _guard("time_to_procedure", **ttp, values=(412.3, 388.4), diff=(-23.9, -37.5, -9.9),
               rel=(-0.058, -0.091, -0.024), verdict="pass", reach=(0.851, 0.86)),
        _guard("time_to_procedure", **ttp, values=(380.0, 474.6), diff=(94.6, 45.6, 144.8), rel=(0.249, 0.12, 0.381),
               verdict="fail", dim="equipment_rarity", value=HOSTILE, n=(300, 310), reach=(0.61, 0.582)),
        _guard("time_to_procedure", **ttp, values=(420.0, 390.0), diff=(-30.0, -45.0, -15.0),
               rel=(-0.071, -0.11, -0.05), verdict="pass", dim="equipment_rarity", value="common",
               n=(1400, 1410), reach=(0.9, 0.91)),
        _guard("latency_p95", "p95", "lower", "relative", 0.1, (412.0, 535.0), (123.0, 103.4, 140.1),
               (0.298, 0.251, 0.34), "fail", reach=(1.0, 1.0)),
        _guard("safety_incident", "rate", "lower", "absolute", 0.005, (0.01, 0.012), (0.002, -0.003, 0.007),
               (0.2, -0.3, 0.7), "inconclusive"),
        *(_guard("permission_gap", **perm, k=k, values=(0.1, 0.09), diff=(-0.01, -0.03, 0.01), rel=(-0.1, -0.3, 0.1),
                 verdict="pass") for k in (10, 5)),
        _guard("permission_gap", **perm, k=5, values=(0.2, 0.15), diff=(-0.05, -0.09, -0.01), rel=(-0.25, -0.45, -0.05),
               verdict="pass", dim="permission_group", value="contractor"),
        _guard("stale_first", **perm, values=(0.05, 0.04), diff=(-0.01, -0.02, 0.0), rel=(-0.2, -0.4, 0.0),
               verdict="pass"),
    ]


def _passing(rows, verdict="pass", overall="pass"):
    """The same rows with every non-pass verdict replaced by ``verdict``."""
    return [dict(r, verdict=r["verdict"] if r["verdict"] == "pass" else verdict, overall_verdict=overall) for r in rows]


def _comparisons():
    return [_comparison("bm25", "hybrid", k, 0.0912 + k / 1000, 0.0711, 0.1104, 1812) for k in (3, 10, 20)]


# ------------------------------------------------------------------------------------ CLI text
def test_cli_lines_read_at_a_glance_then_one_line_per_guardrail():
    lines = format_guardrails(_rows(), _comparisons())
    assert lines[0] == ("guardrails hybrid vs bm25: FAIL — NDCG@10 +0.1012 [+0.0711, +0.1104]; "
                        "latency_p95 +29.8% (fail); safety_incident +0.2 pts (inconclusive)")
    by_name = {line.split()[0]: line for line in lines[2:9]}
    assert list(by_name) == ["latency_p95", "safety_incident", "task_completion", "time_to_procedure",
                             "permission_gap@5", "permission_gap@10", "stale_first"]  # release first
    words = {name: line.split() for name, line in by_name.items()}
    # a fail (relative margin: the difference in %), an inconclusive and a pass (absolute on a rate: points)
    assert words["latency_p95"][1:] == ["p95", "412", "→", "535", "+29.8%", "[+25.1%,", "+34.0%]", "+10.0%", "fail",
                                        "reached", "100.0%", "→", "100.0%", "(+0.0", "pts)"]
    assert words["safety_incident"][1:] == ["rate", "1.0%", "→", "1.2%", "+0.2", "pts", "[-0.3", "pts,", "+0.7",
                                            "pts]", "+0.5", "pts", "inconclusive"]
    assert " ".join(words["task_completion"][1:]) == "rate 81.2% → 82.0% +0.8 pts [-0.4 pts, +2.0 pts] -2.0 pts pass"
    # a conditional statistic is never without the rates of reaching the event
    assert by_name["time_to_procedure"].endswith("pass  reached 85.1% → 86.0% (+0.9 pts)")
    assert "412 → 388" in by_name["time_to_procedure"] and "-5.8% [-9.1%, -2.4%]" in by_name["time_to_procedure"]
    assert lines[9:] == [
        "  slices whose verdict differs from the overall one:",
        f"    time_to_procedure in equipment_rarity={HOSTILE}: +24.9% [+12.0%, +38.1%] fail (overall pass); "
        "reached 61.0% → 58.2% (-2.8 pts)",
        f"  guardrails {FINGERPRINT}: 95% intervals, 200 bootstrap replicates, seed 0; "
        "release rows 8,040 read, 12 set aside",
    ]


def test_cli_first_line_says_all_pass_or_names_the_inconclusive():
    assert format_guardrails(_passing(_rows()), _comparisons())[0] == (
        "guardrails hybrid vs bm25: PASS — NDCG@10 +0.1012 [+0.0711, +0.1104]; all 7 guardrails pass")
    inconclusive = format_guardrails(_passing(_rows(), "inconclusive", "inconclusive"), [])[0]
    assert inconclusive == ("guardrails hybrid vs bm25: INCONCLUSIVE — NDCG: no comparison row; "
                            "latency_p95 +29.8% (inconclusive); safety_incident +0.2 pts (inconclusive)")
    assert format_guardrails([], _comparisons()) == []


def test_cli_ndcg_beside_the_guardrails_is_at_the_largest_k_up_to_10_else_the_smallest():
    at = {ks: format_guardrails(_rows(), [c for c in _comparisons() if c["k"] in ks])[0].split(" — ")[1][:7]
          for ks in ((3, 10, 20), (3, 20), (20,))}
    assert at == {(3, 10, 20): "NDCG@10", (3, 20): "NDCG@3 ", (20,): "NDCG@20"}


def test_cli_shows_the_declared_headline_beside_the_verdict():
    """``guardrails.headline`` stamped on the rows: that metric at that K, whatever the others are;
    a declared headline the comparison has no row for says so under its own name."""
    panel = _comparisons() + [dict(c, metric="recall", delta_macro=c["delta_macro"] / 2) for c in _comparisons()]
    stamped = [dict(r, headline_metric="recall", headline_k=3) for r in _passing(_rows())]
    assert format_guardrails(stamped, panel)[0] == (
        "guardrails hybrid vs bm25: PASS — recall@3 +0.0471 [+0.0711, +0.1104]; all 7 guardrails pass")
    at_20 = [dict(r, headline_metric="ndcg", headline_k=20) for r in _passing(_rows())]
    assert format_guardrails(at_20, panel)[0].split(" — ")[1].startswith("NDCG@20 +0.1112 ")
    missing = [dict(r, headline_metric="recall", headline_k=5) for r in _passing(_rows())]
    assert format_guardrails(missing, panel)[0].split(" — ")[1].startswith("recall@5: no comparison row;")


def test_page_shows_the_declared_headline_beside_the_verdict(data):  # noqa: F811
    comparisons = data["comparisons"] + [dict(c, metric="recall", delta_macro=0.0321) for c in data["comparisons"]]
    page = render_html(dict(data, comparisons=comparisons,
                            guardrails=[dict(r, headline_metric="recall", headline_k=5) for r in _rows()]))
    glance = re.search(r"<p class='big' data-guardrails='glance'>.*?</p>", page).group(0)
    assert re.sub(r"<[^>]+>", "", glance).startswith("recall@5 +0.0321 [-0.0051, +0.0242] · latency_p95 +29.8%")


def test_cli_reads_rows_read_back_from_csv_as_text():
    def text(rows):
        return [{k: None if v is None else str(v) for k, v in r.items()} for r in rows]

    assert format_guardrails(text(_rows()), text(_comparisons())) == format_guardrails(_rows(), _comparisons())


# ------------------------------------------------------------------------------------ the page
def _without_guardrails(page: str) -> str:
    """The page with the guardrail section, its link and the first screen's guardrail verdicts cut out."""
    page = re.sub(r"\n<section class='guardrails'>.*?</section>", "", page, flags=re.S)
    page = page.replace(" · <a href='#guardrails'>Guardrails</a>", "")
    return re.sub(r"<span class='guardrail-verdict'>.*?</span>", "", page)


def test_page_is_unchanged_without_guardrail_rows(data):  # noqa: F811
    page = render_html(data)
    assert render_html(dict(data, guardrails=[])) == page and render_html(dict(data, guardrails=None)) == page
    assert "guardrail" not in page.lower()
    with_rows = render_html(dict(data, guardrails=_rows()))
    assert with_rows != page and _without_guardrails(with_rows) == page


def test_page_puts_the_ndcg_delta_beside_every_guardrail_verdict(data):  # noqa: F811
    page = render_html(dict(data, guardrails=_rows()))
    section = re.search(r"<section class='guardrails'>.*?</section>", page, flags=re.S).group(0)
    assert "<a href='#guardrails'>Guardrails</a>" in page and "<h2 id='guardrails'>Guardrails</h2>" in section
    glance = re.search(r"<p class='big' data-guardrails='glance'>.*?</p>", section).group(0)
    text = re.sub(r"<[^>]+>", "", glance)
    assert text.startswith("NDCG@10 +0.0912 [+0.0711, +0.1104] · latency_p95 +29.8% (fail) · "
                           "safety_incident +0.2 pts (inconclusive) · task_completion +0.8 pts (pass)")
    assert "time_to_procedure -5.8% (pass)" in text and "permission_gap@5" in text
    assert "<b class='worse'>fail</b>" in glance and "<b class='no-clear-difference'>inconclusive</b>" in glance
    assert "guardrails <b class='worse'>fail</b></h3>" in section


def test_page_table_shows_both_arms_the_margin_and_the_reach_rates(data):  # noqa: F811
    section = re.search(r"data-guardrails='glance'>.*?</table>",
                        render_html(dict(data, guardrails=_rows())), flags=re.S).group(0)  # the overall table
    rows = {re.sub(r"<[^>]+>", "", m.group(1)): m.group(0)
            for m in re.finditer(r"<tr><td class='l'>([^<]*)<br>.*?</tr>", section)}
    ttp = " ".join(re.sub(r"<[^>]+>", " ", rows["time_to_procedure"]).split())
    for expected in ("412 [400, 425]", "reached 85.1% (1,702 of 2,000)", "388 [377, 400]",
                     "reached 86.0% (1,729 of 2,010)", "-5.8% [-9.1%, -2.4%]", "reach rate +0.9 pts", "+10.0%",
                     "mean, lower is better"):
        assert expected in ttp, expected
    completion = re.sub(r"<[^>]+>", " ", rows["task_completion"])
    assert "81.2%" in completion and "n = 2,000" in completion and "reached" not in completion
    assert "<b class='better'>pass</b>" in rows["task_completion"]
    assert "<b class='worse'>fail</b>" in rows["latency_p95"]


def test_page_lists_only_the_slices_that_disagree_escaped(data):  # noqa: F811
    page = render_html(dict(data, guardrails=_rows()))
    slices = re.search(r"Slices whose verdict differs.*?</table>", page, flags=re.S).group(0)
    assert "(1 of 3 slice rows)" in slices and "contractor" not in slices and "common" not in slices
    assert "equipment_rarity = &lt;i&gt;rare&lt;/i&gt;" in slices and HOSTILE not in page
    assert "+24.9%" in slices and "reached 61.0% (183 of 300)" in slices
    assert "<td class='l'><b class='worse'>fail</b></td><td class='l'><b class='better'>pass</b></td>" in slices
    agreeing = render_html(dict(data, guardrails=[r for r in _rows() if r["slice_value"] != HOSTILE]))
    assert "Every slice agrees with its overall verdict (2 slice rows)." in agreeing


def test_page_keeps_the_fingerprint_and_declarations_collapsed(data):  # noqa: F811
    page = render_html(dict(data, guardrails=_rows()))
    details = re.search(r"<details><summary>guardrail fingerprint.*?</details>", page, flags=re.S).group(0)
    assert f"guardrail fingerprint {FINGERPRINT} · 6 declarations</summary>" in details
    assert "{&quot;better&quot;: &quot;lower&quot;, &quot;margin&quot;: {&quot;relative&quot;: 0.1}" in details
    assert "8,040 / 12" in details


def test_first_screen_gives_the_guardrails_verdict_once_per_comparison(data):  # noqa: F811
    first = re.search(r"<section id='first-screen'.*?</section>", render_html(dict(data, guardrails=_rows())),
                      flags=re.S).group(0)
    lines = re.findall(r"<li data-headline='verdict'>.*?</li>", first)
    marked = [li for li in lines if "guardrail-verdict" in li]
    assert len(lines) == 3 and len(marked) == 1 and "hybrid vs bm25 @10" in marked[0]
    assert "<a href='#guardrails'>guardrails</a> <b class='worse'>fail</b>: latency_p95</span>" in marked[0]
    # it names the guardrails that carry the overall verdict, and none when all pass
    fragment = {verdict: guardrail_verdict_html(_passing(_rows(), verdict, verdict), "bm25", "hybrid")
                for verdict in ("pass", "inconclusive")}
    assert fragment["pass"].endswith("<b class='better'>pass</b></span>")
    assert fragment["inconclusive"].endswith("inconclusive</b>: latency_p95, safety_incident</span>")


def test_each_comparison_page_shows_its_own_guardrails(data):  # noqa: F811
    pages = render_pages(dict(data, guardrails=_rows()))
    assert "<h2 id='guardrails'>" in pages["comparison-bm25-vs-hybrid.html"]
    assert "guardrail" not in pages["comparison-bm25-vs-dense.html"].lower()


# ------------------------------------------------------------------------------------ the data
def test_rows_reach_the_page_from_a_dataframe(spark, data):  # noqa: F811
    from ndcg_spark.report.data import ReportSources, collect_report_data

    aggregate = spark.createDataFrame(data["aggregates"])
    per_request = spark.createDataFrame([("bm25", "pool-a", 10, 0.5, 0)],
                                        "system string, pool_version string, k int, ndcg double, "
                                        "n_unjudged_in_top_k int")
    audit = spark.createDataFrame([], "system string")
    comparison = spark.createDataFrame(_comparisons())
    guardrails = spark.createDataFrame([tuple(r[c] for c in GUARDRAIL_COLUMNS) for r in _rows()], SCHEMA)
    sources = ReportSources(aggregate=aggregate, per_request=per_request, audit=audit, comparison=comparison)
    assert collect_report_data(sources, RUN)["guardrails"] == []
    collected = collect_report_data(replace(sources, guardrails=guardrails), RUN)
    assert sorted(collected["guardrails"], key=str) == sorted(_rows(), key=str)
    assert format_guardrails(collected["guardrails"], collected["comparisons"]) == format_guardrails(
        _rows(), _comparisons())
    assert "<h2 id='guardrails'>Guardrails</h2>" in render_html(collected)


@pytest.mark.e2e
def test_job_reads_the_guardrail_table_when_configured_and_written(spark, sample_run, tmp_path):
    from ndcg_spark.config.job import JobConfig, Source
    from ndcg_spark.storage.io import write_run_partitioned
    from ndcg_spark.job.report_files import report_sources

    job = yaml.safe_load(sample_run.config.read_text(encoding="utf-8"))
    assert report_sources(spark, JobConfig.from_dict(job, base=sample_run.root), sample_run.run_id).guardrails is None
    job["outputs"]["guardrails"] = {"path": str(tmp_path / "guardrails")}
    config = JobConfig.from_dict(job, base=sample_run.root)
    assert report_sources(spark, config, sample_run.run_id).guardrails is None  # configured, not written
    rows = [dict(r, run_id=sample_run.run_id) for r in _rows()]
    df = spark.createDataFrame([tuple(r[c] for c in GUARDRAIL_COLUMNS) for r in rows], SCHEMA)
    write_run_partitioned(df, Source(path=str(tmp_path / "guardrails")))
    assert report_sources(spark, config, sample_run.run_id).guardrails.count() == len(rows)
