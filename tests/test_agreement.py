"""Offline–online agreement across past experiments (SPEC §12): the statistics against scipy and
plain-Python counts on generated histories, the planted relation found and none found without it,
the history read from hand-built comparison and guardrail tables, and its bad input named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ndcg_spark.agreement.history import HISTORY_COLUMNS, HistoryError, experiment_history
from ndcg_spark.agreement.statistics import (
    BEST,
    POOLED,
    TIED,
    bootstrap_spearman,
    spearman,
    summarize,
    wilson_interval,
)
from ndcg_spark.agreement.summary import SUMMARY_COLUMNS, agreement_summary
from ndcg_spark.config.agreement_spec import AgreementSpec
from ndcg_spark.errors import ContractError

stats = pytest.importorskip("scipy.stats")

TOL = 1e-12


# ------------------------------------------------------------------------------ generated histories


def generated_history(n: int, seed: int, *, planted: bool = True, fingerprint: str = "fp") -> list[dict]:
    """``n`` experiments: offline deltas of ``reciprocal_rank@5`` and ``ndcg@10`` (and their
    intervals), release outcomes ``task_completion`` (better: higher) and ``latency_p95`` (better:
    lower). Planted: task completion's improvement is ``2 × rr delta`` plus noise; ``ndcg@10`` is
    rr's delta plus as much noise again; latency follows nothing. Without the plant, task completion
    follows nothing either."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        rr = float(rng.normal(0.0, 0.02))
        deltas = {("reciprocal_rank", 5): rr, ("ndcg", 10): rr + float(rng.normal(0.0, 0.03))}
        task = (2.0 * rr if planted else 0.0) + float(rng.normal(0.0, 0.01))
        latency = float(rng.normal(0.0, 10.0))
        outcomes = {"task_completion": ("rate", "higher", task, 0.012), "latency_p95": ("p95", "lower", latency, 8.0)}
        for (metric, k), delta in deltas.items():
            for outcome, (statistic, better, difference, half) in outcomes.items():
                sign = 1.0 if better == "higher" else -1.0
                low, high = difference - half, difference + half
                improvement = sign * difference
                off_sig = bool(abs(delta) > 0.015)
                out_sig = bool(low > 0 or high < 0)
                rows.append({
                    "experiment_run": f"2026-10-{i + 1:02d}", "baseline": "bm25", "candidate": f"ranker{i}",
                    "comparison_kind": "reranker", "contract_fingerprint": fingerprint, "metric": metric, "k": k,
                    "mean": "macro", "offline_delta": delta, "offline_ci_low": delta - 0.015,
                    "offline_ci_high": delta + 0.015, "offline_significant": off_sig,
                    "outcome": outcome, "statistic": statistic, "better": better, "outcome_difference": difference,
                    "outcome_ci_low": low, "outcome_ci_high": high, "outcome_improvement": improvement,
                    "outcome_improvement_ci_low": min(sign * low, sign * high),
                    "outcome_improvement_ci_high": max(sign * low, sign * high),
                    "outcome_significant": out_sig, "verdict": "pass",
                    "agrees": bool(np.sign(delta) == np.sign(improvement)) if off_sig and out_sig else None,
                    "false_win": bool(off_sig and out_sig and delta > 0 and improvement < 0),
                })
    return rows


def by_group(summary: list[dict]) -> dict[tuple, dict]:
    return {(r["metric"], r["k"], r["outcome"]): r for r in summary}


# -------------------------------------------------------------------------------- the statistics


@pytest.mark.parametrize("successes, n, level", [(8, 10, 0.95), (0, 7, 0.95), (12, 12, 0.9), (3, 41, 0.99)])
def test_wilson_interval_is_scipys(successes, n, level):
    expected = stats.binomtest(successes, n).proportion_ci(level, method="wilson")
    low, high = wilson_interval(successes, n, level)
    assert low == pytest.approx(expected.low, abs=1e-9)
    assert high == pytest.approx(expected.high, abs=1e-9)


def test_spearman_is_scipys_with_ties_and_nan_when_constant():
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.integers(0, 6, 15).astype(float)  # ties on purpose
        y = x + rng.normal(0, 2, 15)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=TOL)
    assert math.isnan(spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))


def test_bootstrap_interval_is_the_percentiles_of_scipys_correlation_over_resampled_experiments():
    rng = np.random.default_rng(5)
    x = rng.normal(size=12)
    y = x + rng.normal(size=12)
    low, high = bootstrap_spearman(x, y, 300, seed=9, level=0.9)
    draws = np.random.default_rng(9).integers(0, 12, size=(300, 12))  # the documented draw
    rhos = []
    for idx in draws:
        if len(set(x[idx])) > 1 and len(set(y[idx])) > 1:
            rhos.append(stats.spearmanr(x[idx], y[idx]).statistic)
    assert low == pytest.approx(np.percentile(rhos, 5), abs=1e-9)
    assert high == pytest.approx(np.percentile(rhos, 95), abs=1e-9)
    assert bootstrap_spearman(x, y, 300, seed=9, level=0.9) == (low, high)  # deterministic for a seed
    assert bootstrap_spearman(x, y, 0, seed=9, level=0.9) == (None, None)


def test_summary_counts_and_statistics_against_plain_python():
    history = generated_history(20, seed=1)
    spec = AgreementSpec(replicates=200, seed=4)
    summary = by_group(summarize(history, spec))
    assert set(summary) == {(m, k, o) for m, k in (("reciprocal_rank", 5), ("ndcg", 10))
                            for o in ("task_completion", "latency_p95")}
    for (metric, k, outcome), row in summary.items():
        rows = [r for r in history if (r["metric"], r["k"], r["outcome"]) == (metric, k, outcome)]
        off = [r for r in rows if abs(r["offline_delta"]) > 0.015]
        out = [r for r in rows if r["outcome_ci_low"] > 0 or r["outcome_ci_high"] < 0]
        both = [r for r in off if r in out]
        agree = [r for r in both if (r["offline_delta"] > 0) == (r["outcome_improvement"] > 0)]
        false_wins = [r for r in both if r["offline_delta"] > 0 and r["outcome_improvement"] < 0]
        assert row["n_experiments"] == 20
        assert (row["n_offline_significant"], row["n_outcome_significant"]) == (len(off), len(out))
        assert (row["n_both_significant"], row["n_agree"], row["n_false_wins"]) == (len(both), len(agree),
                                                                                  len(false_wins))
        assert row["sensitivity"] == pytest.approx(len(off) / 20, abs=TOL)
        if both:
            expected = stats.binomtest(len(agree), len(both)).proportion_ci(0.95, method="wilson")
            assert row["agreement"] == pytest.approx(len(agree) / len(both), abs=TOL)
            assert (row["agreement_ci_low"], row["agreement_ci_high"]) == pytest.approx(
                (expected.low, expected.high), abs=1e-9)
        else:
            assert row["agreement"] is None
        rows.sort(key=lambda r: r["experiment_run"])
        x = [r["offline_delta"] for r in rows]
        y = [r["outcome_improvement"] for r in rows]
        assert row["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=TOL)
        assert row["spearman_ci_low"] <= row["spearman"] <= row["spearman_ci_high"]
        assert row["better"] == ("higher" if outcome == "task_completion" else "lower")
    assert summarize(history, spec) == summarize(list(reversed(history)), spec)  # deterministic, order-free


def test_below_the_minimum_counts_only_and_says_too_few():
    summary = summarize(generated_history(7, seed=2), AgreementSpec())
    for row in summary:
        assert row["n_experiments"] == 7 and row["enough"] is False
        assert row["note"] == "too few experiments (7 < 8): counts only, no statistic"
        for name in ("sensitivity", "agreement", "agreement_ci_low", "spearman", "spearman_ci_high", "best"):
            assert row[name] is None, name
        assert row["n_offline_significant"] is not None
    assert all(r["enough"] for r in summarize(generated_history(8, seed=2), AgreementSpec(replicates=50)))


def test_contracts_are_summarized_apart_unless_pooled():
    history = generated_history(10, seed=3, fingerprint="old") + [
        {**r, "experiment_run": "2026-11-" + r["experiment_run"][-2:]}
        for r in generated_history(10, seed=4, fingerprint="new")]
    apart = summarize(history, AgreementSpec(replicates=50))
    assert sorted({r["contract_fingerprint"] for r in apart}) == ["new", "old"]
    assert {r["n_experiments"] for r in apart} == {10}
    pooled = summarize(history, AgreementSpec(replicates=50, pool_contracts=True))
    assert {r["contract_fingerprint"] for r in pooled} == {POOLED}
    assert {r["n_experiments"] for r in pooled} == {20}


def test_the_planted_relation_is_found():
    summary = by_group(summarize(generated_history(24, seed=7), AgreementSpec(replicates=1000)))
    rr = summary[("reciprocal_rank", 5, "task_completion")]
    ndcg10 = summary[("ndcg", 10, "task_completion")]
    assert rr["spearman_ci_low"] > 0  # task completion follows rr: its interval lies above 0
    assert rr["spearman"] > ndcg10["spearman"]
    assert rr["agreement"] == 1.0 and rr["n_false_wins"] == 0
    assert rr["best"] in (BEST, TIED)
    for metric, k in (("reciprocal_rank", 5), ("ndcg", 10)):  # latency follows nothing
        latency = summary[(metric, k, "latency_p95")]
        assert latency["spearman_ci_low"] < 0 < latency["spearman_ci_high"]
        assert latency["best"] != BEST


def test_none_is_found_without_it():
    summary = summarize(generated_history(24, seed=7, planted=False), AgreementSpec(replicates=1000))
    for row in summary:  # at the declared level (0.95): every interval holds 0, no metric is best
        assert row["spearman_ci_low"] < 0 < row["spearman_ci_high"], row
        assert row["best"] != BEST


def test_best_is_not_ranked_when_intervals_overlap():
    history = generated_history(24, seed=7)
    twin = [{**r, "metric": "ndcg", "k": 3} for r in history if r["metric"] == "reciprocal_rank"]
    summary = by_group(summarize(history + twin, AgreementSpec(replicates=500)))
    # two identical metrics: the same interval, so neither is ranked above the other
    assert summary[("reciprocal_rank", 5, "task_completion")]["best"] == TIED
    assert summary[("ndcg", 3, "task_completion")]["best"] == TIED


def test_the_spec_refuses_bad_values():
    with pytest.raises(ContractError, match="agreement.mean"):
        AgreementSpec.from_dict({"mean": "median"})
    with pytest.raises(ContractError, match="agreement.bootstrap.replicates"):
        AgreementSpec.from_dict({"bootstrap": {"replicates": 5}})
    with pytest.raises(ContractError, match="agreement.metrics"):
        AgreementSpec.from_dict({"metrics": "ndcg"})
    spec = AgreementSpec.from_dict({"bootstrap": {"level": 0.9, "replicates": 100, "seed": 3}, "metrics": ["ndcg"]})
    assert (spec.ci_level, spec.replicates, spec.seed, spec.metrics) == (0.9, 100, 3, ("ndcg",))


# ------------------------------------------------------------------- the history from the two tables

COMPARISON_DDL = (
    "run_id string, baseline string, candidate string, comparison_kind string, metric string, "
    "slice_dimension string, slice_value string, k int, delta_macro double, delta_macro_ci_low double, "
    "delta_macro_ci_high double, delta_weighted double, delta_weighted_ci_low double, "
    "delta_weighted_ci_high double, contract_fingerprint string")
GUARDRAILS_DDL = (
    "run_id string, baseline string, candidate string, guardrail string, source string, statistic string, "
    "better string, slice_dimension string, slice_value string, difference double, difference_ci_low double, "
    "difference_ci_high double, verdict string, contract_fingerprint string")


def comparison_row(run, metric="ndcg", k=10, delta=0.02, half=0.01, slice_=("overall", "all"), fp="fp",
                   candidate="hybrid"):
    return (run, "bm25", candidate, "reranker", metric, *slice_, k, delta, delta - half, delta + half,
            -delta, -delta - half, -delta + half, fp)


def guardrail_row(run, name="task_completion", better="higher", diff=0.03, half=0.01, source="release",
                  slice_=("overall", "all"), fp="fp", candidate="hybrid", verdict="pass"):
    low, high = (None, None) if diff is None else (diff - half, diff + half)
    return (run, "bm25", candidate, name, source, "rate", better, *slice_, diff, low, high, verdict, fp)


def tables(spark, comparison_rows, guardrail_rows):
    return (spark.createDataFrame(comparison_rows, COMPARISON_DDL),
            spark.createDataFrame(guardrail_rows, GUARDRAILS_DDL))


def test_history_pairs_each_overall_metric_with_each_release_outcome(spark):
    comparison, guardrails = tables(spark, [
        comparison_row("n1"), comparison_row("n1", k=5, delta=-0.03),
        comparison_row("n1", slice_=("rarity", "rare"), delta=0.5),         # a slice: not read
        comparison_row("n1", metric="ndcg_unjudged_low"),                   # a what-if: not read
        comparison_row("n2", delta=0.001),                                  # no guardrail row: no experiment
    ], [
        guardrail_row("n1"), guardrail_row("n1", "latency_p95", "lower", diff=5.0, half=2.0, verdict="fail"),
        guardrail_row("n1", slice_=("rarity", "rare"), diff=-1.0),          # a slice: not read
        guardrail_row("n1", "stale_first_result", "lower", source="offline"),  # offline: not an outcome
    ])
    rows = {(r["k"], r["outcome"]): r.asDict()
            for r in experiment_history(comparison, guardrails).collect()}
    assert set(rows) == {(10, "task_completion"), (10, "latency_p95"), (5, "task_completion"), (5, "latency_p95")}
    assert all(r["experiment_run"] == "n1" and r["mean"] == "macro" for r in rows.values())
    win = rows[(10, "task_completion")]
    assert (win["offline_delta"], win["offline_significant"], win["outcome_improvement"], win["agrees"],
            win["false_win"]) == (0.02, True, 0.03, True, False)
    slower = rows[(10, "latency_p95")]  # better: lower, difference +5 ± 2: significantly worse
    assert (slower["outcome_improvement"], slower["outcome_improvement_ci_low"],
            slower["outcome_improvement_ci_high"]) == pytest.approx((-5.0, -7.0, -3.0), abs=TOL)
    assert (slower["agrees"], slower["false_win"], slower["verdict"]) == (False, True, "fail")
    loss = rows[(5, "latency_p95")]  # offline significantly worse, outcome worse: agrees, not a false win
    assert (loss["agrees"], loss["false_win"]) == (True, False)
    weighted = experiment_history(comparison, guardrails, AgreementSpec(mean="weighted", outcomes=("latency_p95",)))
    assert sorted(r["offline_delta"] for r in weighted.collect()) == pytest.approx([-0.02, 0.03], abs=TOL)
    assert tuple(experiment_history(comparison, guardrails).columns) == HISTORY_COLUMNS


@pytest.mark.parametrize("rule, comparison_rows, guardrail_rows, example", [
    ("experiment_without_release", [comparison_row("n1"), comparison_row("n2")],
     [guardrail_row("n1"), guardrail_row("n2", "stale", "lower", source="offline")], "run n2 (hybrid vs bm25)"),
    ("outcome_missing_on_one_arm", [comparison_row("n1")], [guardrail_row("n1", diff=None)], "task_completion"),
    ("experiment_without_comparison", [comparison_row("n1")], [guardrail_row("n1"), guardrail_row("n3")],
     "run n3"),
    ("experiment_mixes_contracts", [comparison_row("n1", fp="a")], [guardrail_row("n1", fp="b")], "a, b"),
])
def test_bad_history_is_named(spark, rule, comparison_rows, guardrail_rows, example):
    comparison, guardrails = tables(spark, comparison_rows, guardrail_rows)
    with pytest.raises(HistoryError, match=rule) as caught:
        experiment_history(comparison, guardrails)
    assert caught.value.rule == rule and caught.value.count == 1
    assert example in str(caught.value)


def test_agreement_dataframe_is_the_summary_of_the_collected_history(spark):
    history_rows = generated_history(9, seed=5)
    history = spark.createDataFrame([tuple(r[c] for c in HISTORY_COLUMNS) for r in history_rows],
                                    ", ".join(f"{c} {t}" for c, t in zip(HISTORY_COLUMNS, _HISTORY_TYPES)))
    spec = AgreementSpec(replicates=100)
    table = agreement_summary(history, spec)
    assert tuple(table.columns) == SUMMARY_COLUMNS
    got = {(r["metric"], r["k"], r["outcome"]): r.asDict() for r in table.collect()}
    expected = by_group(summarize(history_rows, spec))
    assert set(got) == set(expected)
    for key, row in expected.items():
        for name in ("n_experiments", "n_false_wins", "spearman", "spearman_ci_low", "agreement", "best", "note"):
            assert got[key][name] == (pytest.approx(row[name], abs=TOL) if isinstance(row[name], float)
                                      else row[name]), name
        assert got[key]["bootstrap_replicates"] == 100 and got[key]["mean"] == "macro"


_HISTORY_TYPES = ["string"] * 6 + ["int", "string", "double", "double", "double", "boolean", "string", "string",
                                   "string"] + ["double"] * 6 + ["boolean", "string", "boolean", "boolean"]


# ------------------------------------------------------------------------------- the command


def test_the_command_reads_published_experiments_only_and_writes_both_tables(spark, tmp_path, capsys):
    from pyspark.sql import functions as F

    from ndcg_spark.cli import main
    from ndcg_spark.config.job import Source
    from ndcg_spark.publishing.status import COMPLETE, RUNNING, mark_run
    from ndcg_spark.storage.io import write_run_partitioned

    rng = np.random.default_rng(12)
    comparison_rows, guardrail_rows, published = [], [], {}
    for i in range(11):
        run = f"2026-10-{i + 1:02d}"
        small, large = float(rng.normal(0, 0.02)), float(rng.normal(0, 0.02))
        task = 2 * small + float(rng.normal(0, 0.005))
        if i == 10:  # never published: a flagrant false win that must not count
            small, large, task = 0.5, 0.5, -0.5
        comparison_rows += [comparison_row(run, k=5, delta=small), comparison_row(run, k=10, delta=large)]
        guardrail_rows += [guardrail_row(run, diff=task, half=0.004, verdict="pass"),
                           guardrail_row(run, "stale_first_result", "lower", source="offline")]
        published[run] = i < 10
    comparison, guardrails = tables(spark, comparison_rows, guardrail_rows)
    warehouse = tmp_path / "warehouse"
    write_run_partitioned(comparison, Source(path=str(warehouse / "comparison")), ("run_id", "baseline", "candidate"))
    write_run_partitioned(guardrails, Source(path=str(warehouse / "guardrails")), ("run_id", "baseline", "candidate"))
    for run, done in published.items():
        mark_run(spark, Source(path=str(warehouse / "run_status")), run, COMPLETE if done else RUNNING)
    config = tmp_path / "job.yaml"
    config.write_text(
        "version: 2\n"
        "inputs: {candidates: {path: nowhere}}\n"
        "outputs:\n"
        "  per_request: {path: warehouse/per_request}\n"
        "  comparison: {path: warehouse/comparison}\n"
        "  guardrails: {path: warehouse/guardrails}\n"
        "  agreement: {path: warehouse/agreement}\n"
        "agreement: {bootstrap: {replicates: 300, seed: 1}}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["agreement", "--config", str(config), "--run-id", "agr-1"]) == 0
    out = capsys.readouterr().out
    assert "10 experiments, 1 contract" in out and "contract fp · task_completion (better: higher)" in out
    assert "stale_first_result" not in out  # an offline guardrail is not a release outcome

    summary = {r["k"]: r.asDict() for r in spark.read.parquet(str(warehouse / "agreement")).collect()}
    history = spark.read.parquet(str(warehouse / "agreement_history"))
    assert set(summary) == {5, 10} and {r["run_id"] for r in summary.values()} == {"agr-1"}
    assert history.filter(F.col("experiment_run") == "2026-10-11").count() == 0
    assert history.count() == 20
    # the statistics, against scipy over the published experiments only
    for k, position in ((5, 0), (10, 1)):
        xs = [comparison_rows[2 * i + position][8] for i in range(10)]
        ys = [guardrail_rows[2 * i][9] for i in range(10)]
        false_wins = sum(x > 0.01 and y < -0.004 for x, y in zip(xs, ys))  # both intervals clear of 0, opposite
        assert summary[k]["n_experiments"] == 10 and summary[k]["n_false_wins"] == false_wins
        assert history.filter((F.col("k") == k) & F.col("false_win")).count() == false_wins
        assert summary[k]["spearman"] == pytest.approx(stats.spearmanr(xs, ys).statistic, abs=TOL)
        assert f"ndcg@{k}" in out
    assert summary[5]["spearman_ci_low"] > 0  # the planted relation, found
    from ndcg_spark.config.schemas import AGREEMENT, AGREEMENT_HISTORY

    for table, declared in ((spark.read.parquet(str(warehouse / "agreement")), AGREEMENT), (history, AGREEMENT_HISTORY)):
        written = {f.name: f.dataType.simpleString() for f in table.schema.fields}
        assert written == {c.name: c.type for c in declared.columns}  # every declared column, its declared type
    # a second run keeps the first one's partition
    assert main(["agreement", "--config", str(config), "--run-id", "agr-2"]) == 0
    runs = {r["run_id"] for r in spark.read.parquet(str(warehouse / "agreement")).select("run_id").collect()}
    assert runs == {"agr-1", "agr-2"}


# ------------------------------------------------------------------------------ the sample's history


def _per_ranker(data):
    """Each ranker's offline deltas against bm25 (plain pandas: RR@5 and NDCG@10, exponential gain,
    log2 discount, ideal from the judgments, empty ideals left out) and its release's differences."""
    import pandas as pd

    rows = data.candidates.merge(data.judgments, on=["request_id", "doc_id"])

    def means(system):
        r = rows[rows["system"] == system]
        first = r[r["grade"] >= 1].groupby("request_id")["position"].min().reindex(r["request_id"].unique())
        rr5 = np.where(first <= 5, 1.0 / first, 0.0)
        top = r[r["position"] <= 10]
        dcg = ((2 ** top["grade"] - 1) / np.log2(top["position"] + 1)).groupby(top["request_id"]).sum()
        ideal = r.sort_values(["request_id", "grade"], ascending=[True, False])
        ideal = ideal.assign(p=ideal.groupby("request_id").cumcount() + 1).query("p <= 10")
        idcg = ((2 ** ideal["grade"] - 1) / np.log2(ideal["p"] + 1)).groupby(ideal["request_id"]).sum()
        ndcg = (dcg.reindex(idcg.index).fillna(0.0) / idcg)[idcg > 0]
        return np.nanmean(np.nan_to_num(rr5)), ndcg.mean()

    base = means("bm25")
    out = []
    for ranker, release in data.releases.items():
        rr5, ndcg10 = means(ranker)
        arm = release["arm"] == ranker
        out.append({"rr5": rr5 - base[0], "ndcg10": ndcg10 - base[1],
                    "task": release[arm]["task_completed"].mean() - release[~arm]["task_completed"].mean(),
                    "latency": release[arm]["latency_ms"].quantile(0.95) - release[~arm]["latency_ms"].quantile(0.95)})
    return pd.DataFrame(out)


def test_the_sample_history_plants_task_completion_on_reciprocal_rank_and_latency_on_nothing():
    from ndcg_spark.sample.history import history

    data = history()
    assert data.candidates.groupby(["request_id", "system"])["position"].apply(
        lambda p: sorted(p) == list(range(1, len(p) + 1))).all()  # positions 1..M per request and system
    per_ranker = _per_ranker(data)
    assert len(per_ranker) == 24
    rr = stats.spearmanr(per_ranker["rr5"], per_ranker["task"])
    ndcg10 = stats.spearmanr(per_ranker["ndcg10"], per_ranker["task"])
    assert rr.statistic > 0.8 and rr.pvalue < 0.001
    assert rr.statistic > ndcg10.statistic + 0.1  # task completion follows RR@5 more closely than NDCG@10
    for metric in ("rr5", "ndcg10"):  # latency: no offline metric (no significant rank correlation)
        assert stats.spearmanr(per_ranker[metric], per_ranker["latency"]).pvalue > 0.05
    again = history()
    assert again.candidates.equals(data.candidates) and again.releases["ranker-07"].equals(data.releases["ranker-07"])


# ------------------------------------------------------------------------------------ the report


def test_the_report_section_draws_one_scatter_per_outcome_with_false_wins_ringed():
    import re

    from ndcg_spark.report.sections_agreement import section_agreement

    history = generated_history(24, seed=7)
    flipped = history[0]  # make one experiment a false win on the top metric: offline better, outcome worse
    for r in history:
        if r["experiment_run"] == flipped["experiment_run"] and r["outcome"] == "task_completion":
            r.update(offline_delta=0.05, offline_ci_low=0.035, offline_ci_high=0.065, offline_significant=True,
                     outcome_improvement=-0.05, outcome_improvement_ci_low=-0.06, outcome_improvement_ci_high=-0.04,
                     outcome_significant=True, agrees=False, false_win=True)
    summary = summarize(history, AgreementSpec(replicates=200))
    html = "\n".join(section_agreement({"agreement": summary, "agreement_history": history,
                                        "agreement_headline": ("ndcg", 10)}))
    assert "Does the offline metric predict the release?" in html and "Over 24 past experiments" in html
    blocks = html.split("<h3>")[1:]
    assert [b.split(" ")[0] for b in blocks] == ["latency_p95", "task_completion"]
    for block in blocks:
        svgs = re.findall(r"<svg.*?</svg>", block, re.S)
        assert 1 <= len(svgs) <= 2  # the best-correlated metric × K, and the headline NDCG@10 when another
        for svg in svgs:
            assert svg.count("<title>") - 1 == 24  # one point per experiment (each with its tooltip)
        assert block.count("<tr>") == 1 + 2  # the header, then each metric × K
    task = blocks[1]
    assert len(re.findall(r"<svg", task)) == 2  # reciprocal_rank@5 (the best) and the headline, ndcg@10
    false_wins = sum(bool(r["false_win"]) for r in history if r["outcome"] == "task_completion")
    assert false_wins >= 2 and task.count('r="8"') == false_wins  # every false win ringed, in its scatter
    assert "false win" in task


def test_the_docs_page_carries_the_declared_columns():
    from pathlib import Path

    from ndcg_spark.config.schemas import AGREEMENT, AGREEMENT_HISTORY

    page = (Path(__file__).resolve().parent.parent / "docs" / "agreement.md").read_text(encoding="utf-8")
    assert AGREEMENT.markdown() in page and AGREEMENT_HISTORY.markdown() in page


def test_every_public_name_stays_the_function_once_its_modules_are_imported():
    """A top-level name that is also a subpackage's name (``ndcg_spark.agreement`` once was both)
    turns into the module as soon as anything imports the subpackage: the lazy export is then
    shadowed, and ``from ndcg_spark import agreement`` gave a module. Each export, after every module
    that defines one is imported, is still its module's own object."""
    import importlib
    import pkgutil

    import ndcg_spark

    exports = ndcg_spark._EXPORTS
    subpackages = {m.name for m in pkgutil.iter_modules(ndcg_spark.__path__)}
    assert not set(exports) & subpackages, sorted(set(exports) & subpackages)
    for module in set(exports.values()):
        importlib.import_module(module)
    for name, module in exports.items():
        assert getattr(ndcg_spark, name) is getattr(importlib.import_module(module), name), name
