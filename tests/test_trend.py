"""Night over night: the comparability rule, breaks, movement flags, the run window, and that only
published runs appear -- checked against a plain-Python reading of the rule on random histories."""

from __future__ import annotations

import html
import json
import random
import re
import subprocess
from collections import defaultdict

import pytest
import yaml
from pyspark.sql import functions as F

from ndcg_spark.config.trend_spec import TrendSpec
from ndcg_spark.trend.columns import TREND_COLUMNS
from ndcg_spark.trend.series import trend

TOL = 1e-12
AGG_SCHEMA = (
    "run_id string, system string, pool_version string, k int, slice_dimension string, slice_value string, "
    "contract_fingerprint string, macro_ndcg double, macro_ci_low double, macro_ci_high double, "
    "weighted_ndcg double, weighted_ci_low double, weighted_ci_high double, n_eligible bigint, "
    "n_empty_ideal bigint, n_requests bigint, unjudged_share double, below_min_eligible boolean"
)
FIELDS = [f.split()[0] for f in AGG_SCHEMA.split(", ")]


def _history(seed: int, n_runs: int = 9) -> list[dict]:
    """Random aggregate rows: pools and contracts that change now and then, a system with two pools
    in one run, slices missing some nights, intervals sometimes missing, a NULL slice value."""
    rng = random.Random(seed)
    rows = []
    for night in range(n_runs):
        run_id = f"2026-11-{night + 1:02d}"
        fingerprint = "fb" if (night + seed) % 4 == 3 else "fa"  # a contract change every few nights
        for system in ("bm25", "hybrid"):
            pools = rng.choice([["p1"], ["p1"], ["p1"], ["p2"], ["p1", "p2"]])
            for pool in pools:
                for k in (3, 10):
                    for dim, value in (("overall", "all"), ("rarity", "rare"), ("rarity", None)):
                        if dim != "overall" and rng.random() < 0.2:
                            continue  # a slice that had no request that night
                        n = rng.randint(40, 400)
                        empty = rng.randint(0, n // 4)
                        macro, weighted = rng.uniform(0.3, 0.8), rng.uniform(0.3, 0.8)
                        width = rng.uniform(0.005, 0.05)
                        ci = rng.random() < 0.85
                        rows.append(dict(
                            run_id=run_id, system=system, pool_version=pool, k=k, slice_dimension=dim,
                            slice_value=value, contract_fingerprint=fingerprint, macro_ndcg=macro,
                            macro_ci_low=macro - width if ci else None, macro_ci_high=macro + width if ci else None,
                            weighted_ndcg=weighted, weighted_ci_low=weighted - width, weighted_ci_high=weighted + width,
                            n_eligible=n - empty, n_empty_ideal=empty, n_requests=n, unjudged_share=rng.random(),
                            below_min_eligible=n - empty < 50))
    return rows


def _oracle(rows: list[dict], max_shift: float) -> dict[tuple, dict]:
    """The rule, read plainly: the previous run of the series; comparable when it has this pool
    version under this contract; deltas and flags only then."""
    series = defaultdict(list)
    for r in rows:
        series[(r["system"], r["k"], r["slice_dimension"], r["slice_value"])].append(r)
    out = {}
    for members in series.values():
        runs = sorted({r["run_id"] for r in members})
        for r in members:
            i = runs.index(r["run_id"])
            previous = runs[i - 1] if i else None
            before = [p for p in members if p["run_id"] == previous]
            same_pool = [p for p in before if p["pool_version"] == r["pool_version"]]
            p = same_pool[0] if same_pool else None
            comparable = None if previous is None else (p is not None and p["contract_fingerprint"] == r["contract_fingerprint"])
            e = {"previous_run_id": previous, "comparable": comparable, "pool_break": previous is not None and p is None,
                 "contract_break": previous is not None and (
                     (p is not None and p["contract_fingerprint"] != r["contract_fingerprint"])
                     or r["contract_fingerprint"] not in {b["contract_fingerprint"] for b in before})}
            share = r["n_empty_ideal"] / r["n_requests"]
            if comparable:
                change = share - p["n_empty_ideal"] / p["n_requests"]

                def moved(m):
                    bounds = [r[f"{m}_ci_low"], r[f"{m}_ci_high"], p[f"{m}_ci_low"], p[f"{m}_ci_high"]]
                    return None if None in bounds else (bounds[0] > bounds[3] or bounds[1] < bounds[2])
                e |= {"delta_macro": r["macro_ndcg"] - p["macro_ndcg"],
                      "delta_weighted": r["weighted_ndcg"] - p["weighted_ndcg"],
                      "empty_ideal_share_change": change, "moved_macro": moved("macro"),
                      "moved_weighted": moved("weighted"), "empty_ideal_shifted": abs(change) > max_shift}
            else:
                e |= dict.fromkeys(("delta_macro", "delta_weighted", "empty_ideal_share_change", "moved_macro",
                                    "moved_weighted", "empty_ideal_shifted"))
            move = bool(e["moved_macro"]) or bool(e["moved_weighted"])
            e["flag"] = ("moved_with_empty_ideal_shift" if move and e["empty_ideal_shifted"] else "moved" if move
                         else "empty_ideal_shift" if e["empty_ideal_shifted"] else None)
            e["empty_ideal_share"] = share
            out[(r["run_id"], r["system"], r["pool_version"], r["k"], r["slice_dimension"], r["slice_value"])] = e
    return out


def _frame(spark, rows):
    return spark.createDataFrame([tuple(r[f] for f in FIELDS) for r in rows], AGG_SCHEMA)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_row_follows_the_comparability_rule_of_the_oracle(spark, seed):
    rows = _history(seed)
    got = trend(_frame(spark, rows), TrendSpec(max_empty_ideal_shift=0.03)).collect()
    assert tuple(got[0].asDict()) == TREND_COLUMNS
    expected = _oracle(rows, 0.03)
    assert len(got) == len(rows) == len(expected)
    seen = {"comparable": 0, "pool": 0, "contract": 0, "moved": 0, "shift": 0}
    for g in got:
        e = expected[(g.run_id, g.system, g.pool_version, g.k, g.slice_dimension, g.slice_value)]
        where = (g.run_id, g.system, g.pool_version, g.k, g.slice_value)
        assert (g.previous_run_id, g.comparable, g.flag) == (e["previous_run_id"], e["comparable"], e["flag"]), where
        for name in ("delta_macro", "delta_weighted", "empty_ideal_share_change"):
            assert (g[name] is None) == (e[name] is None) and (e[name] is None or abs(g[name] - e[name]) <= TOL), name
        for name in ("moved_macro", "moved_weighted", "empty_ideal_shifted"):
            assert g[name] == e[name], (name, where)
        assert abs(g.empty_ideal_share - e["empty_ideal_share"]) <= TOL
        reason = g.break_reason or ""
        assert ("pool version changed" in reason) == e["pool_break"], (reason, where)
        assert ("contract changed" in reason) == e["contract_break"], (reason, where)
        assert (g.break_reason is not None) == (g.comparable is False), where
        seen["comparable"] += bool(g.comparable)
        seen["pool"] += e["pool_break"]
        seen["contract"] += e["contract_break"]
        seen["moved"] += g.flag in ("moved", "moved_with_empty_ideal_shift")
        seen["shift"] += bool(g.empty_ideal_shifted)
    assert all(seen.values()), seen  # every branch of the rule was exercised


def test_a_break_is_never_bridged_and_names_the_pool_versions(spark):
    base = _history(5, n_runs=1)[0] | {"system": "s", "k": 10, "slice_dimension": "overall", "slice_value": "all"}
    nights = [base | {"run_id": r, "pool_version": p} for r, p in
              (("2026-11-01", "p1"), ("2026-11-02", "p2"), ("2026-11-03", "p1"))]
    got = sorted(trend(_frame(spark, nights)).collect(), key=lambda g: g.run_id)
    assert [g.comparable for g in got] == [None, False, False]  # night 3 is not compared with night 1
    assert got[1].break_reason == "pool version changed: p1 → p2"
    assert got[2].break_reason == "pool version changed: p2 → p1" and got[2].delta_macro is None


def test_the_window_keeps_the_previous_night_of_the_first_run_shown(spark):
    rows = _history(7)
    full = {(g.run_id, g.system, g.pool_version, g.k, g.slice_value): g for g in trend(_frame(spark, rows)).collect()}
    last3 = trend(_frame(spark, rows), TrendSpec(last=3)).collect()
    assert sorted({g.run_id for g in last3}) == ["2026-11-07", "2026-11-08", "2026-11-09"]
    for g in last3:  # identical to the full trend's rows, deltas from nights outside the window included
        assert g == full[(g.run_id, g.system, g.pool_version, g.k, g.slice_value)]
    since = trend(_frame(spark, rows), TrendSpec(since="2026-11-05", last=2)).select("run_id").distinct().collect()
    assert sorted(r.run_id for r in since) == ["2026-11-08", "2026-11-09"]


def test_a_contract_break_names_the_fields_that_changed(spark):
    from ndcg_spark.config.contract import Contract

    old, new = Contract(gain="linear"), Contract()
    base = _history(5, n_runs=1)[0] | {"system": "s", "pool_version": "p", "k": 10,
                                        "slice_dimension": "overall", "slice_value": "all"}
    nights = [base | {"run_id": "2026-11-01", "contract_fingerprint": old.fingerprint},
              base | {"run_id": "2026-11-02", "contract_fingerprint": new.fingerprint}]
    metadata = spark.createDataFrame([(c.fingerprint, c.to_json()) for c in (old, new)],
                                     "contract_fingerprint string, contract string")
    got = trend(_frame(spark, nights), run_metadata=metadata).collect()
    assert got[1].break_reason == f"contract changed (gain): {old.fingerprint} → {new.fingerprint}"


# ----------------------------------------------------------------------------- the job's tables


@pytest.fixture()
def warehouse(spark, tmp_path):
    """Aggregate, run-metadata and run-status tables written by hand: three nights published, the
    fourth still running."""
    rows = [r for r in _history(11, n_runs=4)]
    root = tmp_path / "w"
    _frame(spark, rows).write.partitionBy("run_id").parquet(str(root / "aggregate"))
    status = [(f"2026-11-0{i}", "complete" if i < 4 else "running") for i in range(1, 5)]
    (spark.createDataFrame(status, "run_id string, status string")
     .withColumn("updated_at", F.current_timestamp()).withColumn("code_version", F.lit("t"))
     .write.partitionBy("run_id").parquet(str(root / "run_status")))
    job = {"version": 1, "inputs": {"candidates": {"path": "unused"}},
           "outputs": {"per_request": {"path": str(root / "per_request")}, "aggregate": {"path": str(root / "aggregate")},
                       "run_status": {"path": str(root / "run_status")}},
           "trend": {"max_empty_ideal_shift": 0.03}}
    config = tmp_path / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump(job), encoding="utf-8")
    return rows, config


def test_only_published_runs_appear_unless_one_is_being_published(spark, warehouse):
    from ndcg_spark.config.job import JobConfig
    from ndcg_spark.job.trends import trend_rows

    rows, config_file = warehouse
    config = JobConfig.from_yaml(config_file)
    shown = trend_rows(spark, config).collect()
    assert sorted({g.run_id for g in shown}) == ["2026-11-01", "2026-11-02", "2026-11-03"]
    published = [r for r in rows if r["run_id"] != "2026-11-04"]
    expected = _oracle(published, 0.03)
    assert len(shown) == len(published)
    for g in shown:
        e = expected[(g.run_id, g.system, g.pool_version, g.k, g.slice_dimension, g.slice_value)]
        assert (g.comparable, g.flag) == (e["comparable"], e["flag"])
    publishing = trend_rows(spark, config, including="2026-11-04").select("run_id").distinct().collect()
    assert sorted(r.run_id for r in publishing) == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]


def test_cli_trend_prints_the_published_nights_with_denominators(spark, warehouse, capsys):
    from ndcg_spark.cli import main

    rows, config_file = warehouse
    assert main(["trend", "--config", str(config_file), "--last", "2"]) == 0
    out = capsys.readouterr().out
    assert "2026-11-01" not in out and "2026-11-04" not in out  # outside the window / not published
    for r in rows:
        if r["run_id"] in ("2026-11-02", "2026-11-03") and r["slice_dimension"] == "overall":
            assert f"{r['macro_ndcg']:.4f}" in out and f"{r['n_eligible']}/{r['n_requests']}" in out
    assert main(["trend", "--config", str(config_file), "--last", "0"]) == 2
    assert "trend.last: must be an integer >= 1" in capsys.readouterr().err


# ------------------------------------------------------------------------------ three nights, end to end


@pytest.fixture(scope="module")
def three_nights(spark, sample_dir, tmp_path_factory):
    """Three published nights of the shared sample through ``ndcg-spark run``: night 2 with more
    no-answer traffic (the same sample with 30 % of the requests without a positive), night 3
    under a changed contract (gain linear). Returns the warehouse folder, the last night's YAML,
    what the runs printed and the report folder."""
    import contextlib
    import io

    from ndcg_spark.cli import main
    from ndcg_spark.sample.generate import write_sample

    root = tmp_path_factory.mktemp("nights")
    noanswer = write_sample(spark, root / "noanswer", n_requests=sample_dir.n_requests, seed=sample_dir.seed,
                            no_positive_share=0.3)

    def job(name, candidates, judgments, gain="exponential"):
        document = {
            "version": 1, "contract": {"k": [3, 10], "gain": gain},
            "inputs": {"candidates": {"path": candidates}, "judgments": {"path": judgments}},
            "attributes": {"path": sample_dir.attributes, "weight": "weight", "slices": ["equipment_rarity"]},
            "outputs": {name: {"path": str(root / "w" / name)} for name in
                        ("per_request", "aggregate", "run_metadata", "trend")} | {"report_dir": str(root / "r")},
            "aggregate": {"bootstrap": {"replicates": 20}, "min_eligible": 20},
            "trend": {"max_empty_ideal_shift": 0.05},
        }
        path = root / "conf" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
        return path

    nights = [("2026-11-27", job("plain", sample_dir.candidates, sample_dir.judgments)),
              ("2026-11-28", job("noanswer", noanswer["candidates"], noanswer["judgments"])),
              ("2026-11-29", job("linear", sample_dir.candidates, sample_dir.judgments, gain="linear"))]
    printed, errors = io.StringIO(), io.StringIO()
    for run_id, config in nights:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
            status = main(["run", "--config", str(config), "--run-id", run_id])
        assert status == 0, errors.getvalue()[-3000:]
    return root / "w", nights, printed.getvalue(), root / "r"


@pytest.mark.e2e
def test_three_nights_the_trend_table_flags_the_no_answer_night_and_breaks_at_the_contract(
        spark, three_nights, capsys):
    """The trend table written with each night flags night 2 (its empty-ideal share moved) and
    breaks at night 3 (contract changed: gain), equals the trend computed afresh, and the CLI
    prints it."""
    from ndcg_spark.cli import main
    from ndcg_spark.config.job import JobConfig
    from ndcg_spark.job.trends import trend_rows

    warehouse, nights, printed, _ = three_nights
    table = spark.read.parquet(str(warehouse / "trend"))
    overall = {(r.run_id, r.system, r.k): r for r in table.filter("slice_dimension = 'overall'").collect()}
    assert {key[0] for key in overall} == {n for n, _ in nights}
    for system in ("bm25", "hybrid"):
        for k in (3, 10):
            first, second, third = (overall[(n, system, k)] for n, _ in nights)
            assert first.previous_run_id is None and first.comparable is None
            assert second.comparable is True and second.empty_ideal_shifted is True
            assert second.empty_ideal_share_change > 0.05 and second.flag in ("empty_ideal_shift",
                                                                              "moved_with_empty_ideal_shift")
            assert abs(second.delta_macro - (second.macro_ndcg - first.macro_ndcg)) <= TOL
            assert third.comparable is False and third.delta_macro is None
            assert third.break_reason.startswith("contract changed (gain): ")
    # each night's rows, written when it was published, are the trend computed afresh
    config = JobConfig.from_yaml(nights[-1][1])
    afresh = trend_rows(spark, config)
    assert afresh.count() == table.count() and afresh.exceptAll(table.select(*afresh.columns)).count() == 0
    assert "BREAK (contract changed (gain)" in printed and "the empty-ideal share moved" in printed
    assert main(["trend", "--config", str(nights[-1][1])]) == 0
    out = capsys.readouterr().out
    assert out.count("BREAK (contract changed (gain)") == 4  # 2 systems x 2 K


@pytest.mark.slow
@pytest.mark.e2e
def test_three_nights_report_in_chromium_shows_the_trend_tables_numbers(spark, three_nights, tmp_path):
    """The last night's report, as a browser shows it: the first screen has each system's headline
    (mean, interval, denominator) and the break's reason; the trend section every night's mean."""
    from ndcg_spark.report.format import fmt_count, fmt_interval, fmt_mean
    from tests.test_report import _chromium, _chromium_args
    from tests.test_report_trend import _MEASURE

    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed here (apt-get install chromium); CI installs it")
    warehouse, nights, _, reports = three_nights
    page = reports / nights[-1][0] / "report.html"
    args = _chromium_args(binary, tmp_path / "profile")
    dom = subprocess.run([*args, "--dump-dom", page.resolve().as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    rows = spark.read.parquet(str(warehouse / "trend")).filter("slice_dimension = 'overall'").collect()
    first_screen = text[: text.index("Overall NDCG@K per system")]
    for r in rows:
        assert fmt_mean(r.macro_ndcg) in text.split("Trend", 1)[1], (r.run_id, r.system, r.k)
        if r.run_id == nights[-1][0]:
            for expected in (fmt_mean(r.macro_ndcg), fmt_interval(r.macro_ci_low, r.macro_ci_high),
                             fmt_count(r.n_eligible), r.break_reason.split(":")[0]):
                assert expected in first_screen, (expected, r.system, r.k)
    # at 1400x900 every headline row is on the first screen (a test-only copy without the CSP, measured)
    source = page.read_text(encoding="utf-8")
    csp = re.search(r"<meta http-equiv='Content-Security-Policy'[^>]*>", source).group(0)
    probe = tmp_path / "probe.html"
    probe.write_text(source.replace(csp, "").replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    window = [a for a in args if not a.startswith("--window-size=")] + ["--window-size=1400,900"]
    dom = subprocess.run([*window, "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    measured = json.loads(html.unescape(re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S).group(1)))
    last = [r for r in rows if r.run_id == nights[-1][0]]
    assert len(measured["items"]) == len(last) == 4  # 2 systems x 2 K
    for item in measured["items"]:
        assert 0 <= item["top"] < item["bottom"] <= measured["height"] <= 900, item
    shown = " ".join(item["text"] for item in measured["items"])
    for r in last:
        assert fmt_mean(r.macro_ndcg) in shown and fmt_count(r.n_eligible) in shown
