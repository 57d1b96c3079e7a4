"""The HTML report: a pure renderer checked on hand-made rows, end to end on a tiny run, and in a
real browser (headless Chromium) -- skipped only where Chromium is absent locally, never in CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ndcg_spark.config.report_spec import ReportSpec
from ndcg_spark.errors import ContractError
from ndcg_spark.report.format import fmt_count, fmt_delta, fmt_interval, fmt_mean
from ndcg_spark.report.html import render_html, render_pages

HOSTILE = "<script>alert('x')</script>"


def _agg(system, k, dim, value, macro, lo, hi, eligible, empty, all_, small=False):
    return {
        "run_id": "r1", "system": system, "pool_version": "pool-A", "k": k, "slice_dimension": dim,
        "slice_value": value, "macro": macro, "macro_ci_low": lo, "macro_ci_high": hi,
        "weighted": macro + 0.01, "weighted_ci_low": lo + 0.01, "weighted_ci_high": hi + 0.01,
        "n_eligible": eligible, "n_empty_ideal": empty, "n_requests": all_, "weight_eligible": float(eligible),
        "weight_all": float(all_), "unjudged_share": 0.125, "below_min_eligible": small, "min_eligible": 30,
        "ci_level": 0.95, "contract_fingerprint": "f8a3a72347d4e364", "code_version": "0.1.0",
    }


@pytest.fixture
def data():
    aggs = [
        _agg("bm25", 10, "overall", "all", 0.61234, 0.60011, 0.62456, 1834, 166, 2000),
        _agg("hybrid", 10, "overall", "all", 0.68765, 0.67702, 0.69801, 1834, 166, 2000),
        _agg("bm25", 10, "rarity", "common", 0.65, 0.63, 0.67, 1500, 100, 1600),
        _agg("bm25", 10, "rarity", HOSTILE, 0.41, 0.35, 0.47, 320, 60, 380),
        _agg("bm25", 10, "rarity", "tiny", 0.20, 0.0, 0.6, 14, 6, 20, small=True),
    ]
    audit = [{
        "system": "bm25", "pool_version": "pool-A", "k": 10, "slice_dimension": "rarity", "n_slices": 3,
        "n_slices_ranked": 2, "worst_slice_value": HOSTILE, "worst_macro": 0.41, "worst_ci_low": 0.35,
        "worst_ci_high": 0.47, "worst_n_eligible": 320, "overall_macro": 0.61234, "gap_to_overall": -0.20234,
        "ci_below_overall": True,
    }]
    hist = [{"system": "bm25", "pool_version": "pool-A", "k": 10, "metric": "ndcg", "bucket": b, "count": c}
            for b, c in ((None, 166), (0, 90), (5, 400), (9, 1344))]
    hist += [{"system": "bm25", "pool_version": "pool-A", "k": 10, "metric": "unjudged_in_top_k", "bucket": b,
              "count": c} for b, c in ((0, 1500), (1, 400), (3, 100))]
    comparison = {
        "run_id": "r1", "baseline": "bm25", "candidate": "hybrid", "comparison_kind": "end_to_end",
        "baseline_pool_version": "pool-A", "candidate_pool_version": "pool-B", "pools_differ": True,
        "ideal": "judgments", "slice_dimension": "overall", "slice_value": "all", "k": 10, "n_requests": 2000,
        "n_paired": 1800, "n_only_baseline_missing": 10, "n_only_baseline_empty": 4, "n_only_candidate_missing": 6,
        "n_only_candidate_empty": 3, "n_neither": 177, "n_pool_differs": 1200, "paired_weight": 1800.0,
        "baseline_macro": 0.6, "candidate_macro": 0.67, "delta_macro": 0.0712,
        "delta_macro_ci_low": 0.0601, "delta_macro_ci_high": 0.0833, "p_value_macro": 0.001,
        "baseline_weighted": 0.61, "candidate_weighted": 0.66, "delta_weighted": 0.05,
        "delta_weighted_ci_low": 0.04, "delta_weighted_ci_high": 0.06, "p_value_weighted": 0.002,
        "wins": 901, "ties": 555, "losses": 344, "n_pool_recall_requests": 1700, "baseline_pool_recall_macro": 0.7311,
        "candidate_pool_recall_macro": 0.8422, "baseline_pool_recall_weighted": 0.7, "candidate_pool_recall_weighted": 0.8,
        "below_min_paired": False, "min_paired": 30, "tie_tolerance": 1e-9, "ci_level": 0.95,
        "bootstrap_replicates": 200, "permutations": 199, "seed": 0, "contract_fingerprint": "f8a3a72347d4e364",
    }
    meta = {"run_id": "r1", "contract_fingerprint": "f8a3a72347d4e364",
            "contract": '{"empty_ideal":"exclude","gain":"exponential","k":[10],"ties":"doc_id"}',
            "aggregate_spec": '{"min_eligible":30}', "row_counts": {"per_request": 4000, "candidates.rows_read": 31337,
                                                                "candidates.rows_scored": 31300,
                                                                "candidates.rows_quarantined": 37},
            "code_version": "0.1.0", "created_at": "2026-11-29 02:00:00"}
    return {"run_id": "r1", "aggregates": aggs, "audit": audit, "histograms": hist, "comparisons": [comparison],
            "metadata": meta, "bins": 10}


def test_render_shows_every_overall_number_with_its_denominators(data):
    page = render_html(data)
    for row in (r for r in data["aggregates"] if r["slice_dimension"] == "overall"):
        for text in (fmt_mean(row["macro"]), fmt_interval(row["macro_ci_low"], row["macro_ci_high"]),
                     fmt_mean(row["weighted"]), fmt_count(row["n_eligible"]), fmt_count(row["n_empty_ideal"]),
                     fmt_count(row["n_requests"])):
            assert text in page, text
    assert "0.6123" in page and "[0.6001, 0.6246]" in page and "1,834" in page and "2,000" in page
    # the worst slice is in the first screen's table, red (its interval is below the overall), with its gap
    worst = re.search(r"<td class='l below'>(.*?)</td>", page).group(1)
    assert "&lt;script&gt;" in worst and fmt_delta(-0.20234) in worst and "320 eligible" in worst
    assert "tiny (small)" in page  # the small slice is marked
    # the contract, pool version, run id and row accounting
    for text in ("f8a3a72347d4e364", "pool-A", "run r1", "exponential", "candidates.rows_read", "31,337",
                 "candidates: 31,337 read = 31,300 scored + 37 quarantined"):
        assert text in page, text


def test_render_comparison_with_pool_notice_and_recall(data):
    page = render_html(data)
    assert "End-to-end comparison — not a reranker comparison" in page
    for text in ("+0.0712", "[+0.0601, +0.0833]", "901 / 555 / 344", "0.7311", "0.8422", "1,200"):
        assert text in page, text
    same_pool = dict(data["comparisons"][0], comparison_kind="reranker", pools_differ=False)
    assert "End-to-end" not in render_html(dict(data, comparisons=[same_pool]))


def test_render_escapes_hostile_values_and_references_nothing_outside(data):
    page = render_html(data)
    assert HOSTILE not in page and "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert not re.search(r"https?://", page)
    assert not re.search(r"<(link|img|iframe|object|embed)\b", page)


def test_render_reads_flags_read_back_from_csv_as_strings(data):
    rows = [dict(r, below_min_eligible=str(r["below_min_eligible"]).lower()) for r in data["aggregates"]]
    page = render_html(dict(data, aggregates=rows))
    assert "tiny (small)" in page and "common (small)" not in page


def test_render_tolerates_missing_sections():
    page = render_html({"run_id": "r1", "aggregates": [], "audit": [], "histograms": [], "comparisons": [],
                        "metadata": None, "contract_from_config": {"k": [3]}})
    assert "No row counts recorded" in page and "run r1" in page
    assert "This run is not published" not in page  # status unknown: no claim either way
    assert "This run is not published" in render_html({"run_id": "r1", "run_status": "running"})


def test_the_page_of_a_failed_run_says_when_and_why():
    import datetime as dt

    failure = {"reason": "stage 2: <disk> full\n(run again with --debug for the full trace)",
               "ended_at": dt.datetime(2026, 12, 1, 2, 13)}
    page = render_html({"run_id": "r1", "run_status": "failed", "run_failure": failure})
    assert "This run is not published" in page
    assert "Its last attempt failed at 2026-12-01 02:13 UTC: stage 2: &lt;disk&gt; full (run again with --debug" in page


def test_page_forbids_everything_but_its_inline_styles(data):
    page = render_html(data)
    csp = "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
    assert page.count(csp) == 1 and page.index(csp) < page.index("<title>")


def test_report_options_bins_and_k_from_the_yaml():
    from ndcg_spark.config.job import JobConfig

    job = {"version": 1, "inputs": {"candidates": "c"}, "report": {"bins": 5, "k": 3}}
    assert JobConfig.from_dict(job).report_spec() == ReportSpec(bins=5, k=3)
    assert JobConfig.from_dict(dict(job, report=None)).report_spec() == ReportSpec(bins=10, k=None)
    for section, message in (({"bins": 1}, "report.bins: must be an integer from 2 to 100, got 1"),
                             ({"bins": True}, "report.bins: must be an integer from 2 to 100, got True"),
                             ({"k": 0}, "report.k: must be an integer >= 1 (one of contract.k), got 0"),
                             ({"colour": "red"}, "report.colour: is not a known field; known: bins, k"),
                             ([5], "report: must be a mapping, got list")):
        with pytest.raises(ContractError) as raised:
            JobConfig.from_dict(dict(job, report=section)).report_spec()
        assert str(raised.value) == message


def test_render_draws_the_histogram_in_the_declared_bins_and_slices_at_the_declared_k(data):
    at_3 = [dict(r, k=3, macro=0.5) for r in data["aggregates"] if r["slice_dimension"] == "rarity"]
    rows = data["aggregates"] + at_3
    hist = [dict(h, bucket=min(h["bucket"], 4)) if h["metric"] == "ndcg" and h["bucket"] is not None else h
            for h in data["histograms"]]
    page = render_html(dict(data, aggregates=rows, histograms=hist, bins=5, chart_k=3))
    assert "<code>[i/5, (i+1)/5)</code>" in page and ">0.8</text>" in page and ">0.9</text>" not in page
    assert "macro NDCG@3 of every slice" in page
    assert "macro NDCG@10 of every slice" in render_html(dict(data, aggregates=rows, chart_k=None))
    assert "macro NDCG@10 of every slice" in render_html(dict(data, aggregates=rows, chart_k=5))  # not a K of the run


def test_render_pages_names_one_page_per_comparison(data):
    odd = dict(data["comparisons"][0], baseline="bm25 v2", candidate="a/b")
    pages = render_pages(dict(data, comparisons=[data["comparisons"][0], odd]))
    assert list(pages) == ["report.html", "comparison-bm25-vs-hybrid.html", "comparison-bm25_v2-vs-a_b.html"]
    assert "Overall NDCG@K per system" in pages["report.html"]
    comparison_page = pages["comparison-bm25_v2-vs-a_b.html"]
    assert "NDCG@K comparison — run r1" in comparison_page and "Overall NDCG@K per system" not in comparison_page
    assert "Comparison: hybrid (candidate)" not in comparison_page


# ------------------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    """A tiny run through the pipeline functions (stage 1, stage 2, comparison) and its report."""
    from ndcg_spark.config.job import JobConfig
    from ndcg_spark.job.stages import aggregate_stage, compare_stage, score_stage
    from ndcg_spark.publishing.lease import publishing
    from ndcg_spark.job.report_files import report_sources, write_report
    from ndcg_spark.sample.generate import write_sample

    root = tmp_path_factory.mktemp("report")
    paths = write_sample(spark, root / "data", n_requests=300)
    job = {
        "version": 1,
        "contract": {"k": [3, 10]},
        "inputs": {"candidates": {"path": paths["candidates"]}, "judgments": {"path": paths["judgments"]}},
        "attributes": {"path": paths["attributes"], "weight": "weight",
                       "slices": ["equipment_rarity", "permission_group"]},
        "outputs": {"per_request": {"path": str(root / "per_request")},
                    "aggregate": {"path": str(root / "aggregate")},
                    "run_metadata": {"path": str(root / "run_metadata")},
                    "comparison": {"path": str(root / "comparison")},
                    "report_dir": str(root / "reports")},
        "aggregate": {"min_eligible": 30, "bootstrap": {"replicates": 20}},
        "compare": {"baseline": "bm25", "candidate": "hybrid", "bootstrap": {"replicates": 20},
                    "permutations": 19},
    }
    config_file = root / "conf" / "job.yaml"
    config_file.parent.mkdir()
    config_file.write_text(yaml.safe_dump(job), encoding="utf-8")
    config = JobConfig.from_yaml(config_file)
    run_id = "2026-11-29"
    timings = {}
    with publishing(spark, config.run_status(), run_id):
        started = time.perf_counter()
        stage1 = score_stage(spark, config, run_id)
        timings["score"] = time.perf_counter() - started
        counts = {f"{i.input}.{name}": getattr(i, name) for i in stage1.accounting.inputs
                  for name in ("rows_read", "rows_scored", "rows_quarantined")}
        aggregate_stage(spark, config, run_id, row_counts=counts)
        timings["aggregate"] = time.perf_counter() - started - timings["score"]
    compare_stage(spark, config, run_id)  # compares published runs only
    timings["compare"] = time.perf_counter() - started - timings["score"] - timings["aggregate"]
    started = time.perf_counter()
    path = write_report(spark, config, run_id)
    timings["report"] = time.perf_counter() - started
    print("stage seconds:", {k: round(v, 1) for k, v in timings.items()})
    rows = [r.asDict() for r in report_sources(spark, config, run_id).aggregate.collect()]
    return path, rows, config_file


@pytest.mark.e2e
def test_build_report_writes_a_page_with_the_aggregate_numbers(built):
    path, all_rows, _ = built
    rows = [r for r in all_rows if r["slice_dimension"] == "overall"]
    page = path.read_text(encoding="utf-8")
    assert path.name == "report.html" and path.parent.name == "2026-11-29"
    assert len(rows) == 4  # 2 systems x 2 K
    for r in rows:
        assert fmt_mean(r["macro"]) in page and fmt_count(r["n_requests"]) in page
    assert "Comparison: hybrid (candidate) vs bm25 (baseline)" in page
    assert "unjudged candidates in the top K" in page
    slices = [r for r in all_rows if r["slice_dimension"] == "equipment_rarity"]
    assert len(slices) == 2 * 2 * 3  # systems x K x (common, uncommon, rare)
    for r in slices:  # every slice row in the slice table: system, K, value, then its macro NDCG
        cells = rf"<tr><td[^>]*>{r['system']}</td><td[^>]*>{r['k']}</td><td[^>]*>{r['slice_value']}</td><td[^>]*><span[^>]*>"
        assert re.search(cells + re.escape(fmt_mean(r["macro"])), page), r
    assert (path.parent / "comparison-bm25-vs-hybrid.html").is_file()
    assert not re.search(r"https?://", page)
    assert "This run is not published" not in page  # published: no warning
    assert re.search(r"candidates: [0-9,]+ read = [0-9,]+ scored \+ 0 quarantined", page)


@pytest.mark.e2e
def test_cli_report_and_compare_rewrite_the_page(built, capsys):
    from ndcg_spark.cli import main

    path, _, config_file = built
    path.unlink()
    assert main(["report", "--config", str(config_file), "--run-id", "2026-11-29"]) == 0
    assert path.is_file() and f"report -> {path}" in capsys.readouterr().out
    # `compare` rewrites the report (and the comparison's page) after writing the comparison table
    comparison_page = path.parent / "comparison-bm25-vs-hybrid.html"
    path.unlink()
    comparison_page.unlink()
    assert main(["compare", "--config", str(config_file), "--run-id", "2026-11-29"]) == 0
    shown = capsys.readouterr().out
    assert shown.index("comparison table") < shown.index(f"report -> {path}")
    assert comparison_page.is_file() and "Comparison: hybrid (candidate) vs bm25 (baseline)" in path.read_text("utf-8")


# -------------------------------------------------------------------------------- browser
def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.environ.get("CI") == "true":
        pytest.fail("CI=true but chromium is missing: .ci/run installs it (apt-get install chromium)")
    return found


def _chromium_args(binary: str, profile: Path) -> list[str]:
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--window-size=1280,2000"]


@pytest.mark.slow
def test_page_in_headless_chromium_shows_the_aggregate_numbers(built, tmp_path):
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed here (apt-get install chromium); CI installs it")
    path, all_rows, _ = built
    rows = [r for r in all_rows if r["slice_dimension"] == "overall"]
    url = path.resolve().as_uri()
    shot = tmp_path / "report.png"
    args = _chromium_args(binary, tmp_path / "profile")
    subprocess.run([*args, f"--screenshot={shot}", url], check=True, capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000  # a rendered page, not a blank one
    dom = subprocess.run([*args, "--dump-dom", url], check=True, capture_output=True, text=True, timeout=120).stdout
    text = re.sub(r"<[^>]+>", " ", dom)
    assert "Overall NDCG@K per system" in text
    for r in rows:
        for expected in (fmt_mean(r["macro"]), fmt_interval(r["macro_ci_low"], r["macro_ci_high"]),
                         fmt_count(r["n_eligible"]), fmt_count(r["n_empty_ideal"]), fmt_count(r["n_requests"])):
            assert expected in text, expected


def test_the_page_says_how_many_attempts_the_night_took():
    from ndcg_spark.report.html import render_html

    base = {"run_id": "r", "aggregates": [], "audit": [], "histograms": [], "comparisons": [], "metadata": None}
    page = render_html({**base, "attempts": [{"outcome": "interrupted"}, {"outcome": "abandoned"},
                                             {"outcome": "complete"}]})
    assert "3 attempts: 1 interrupted, 1 abandoned, 1 complete" in page
    assert "attempt" not in render_html(base).split("<h1>", 1)[1].split("</p>", 2)[0]  # none on record: no line
