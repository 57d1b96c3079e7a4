"""The benchmark (``benchmarks/run.py``) at a tiny size: it runs end to end and the three
contenders compute the same NDCG@10. No timing is asserted: on a shared machine it means nothing.

Spark's ``RankingEvaluator`` (``ndcgAtK``) only knows binary relevance: per request, the doc ids
in ranked order and the set of relevant doc ids; DCG sums ``1 / log(i + 2)`` over the top K that
are relevant, the ideal over ``min(|relevant|, K)`` positions, and a request with no relevant
document scores 0 and still counts in the mean (``RankingMetrics.ndcgAt``). ndcg-spark computes
the same number under an explicit contract -- gain table {0: 0, 1: 1, 2: 1, 3: 1}, unjudged
candidates as gain 0, empty ideal scored 0 -- and so does the numpy contender with a 0/1 gain.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    from tests import faults
except ImportError:  # pragma: no cover - run from inside tests/
    import faults  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
TOL = 1e-9


def _benchmark_module(name: str):
    """A module of benchmarks/ (not a package), imported from there."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.mark.slow
def test_benchmark_runs_and_the_contenders_agree(tmp_path):
    pytest.importorskip("numpy")
    pytest.importorskip("pyarrow")
    result_file = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--rows", "20000", "--check", "--replicates", "20",
         "--shuffle-partitions", "2",
         "--contenders", "ndcg_spark,ndcg_spark_evaluator_number,evaluator,numpy,floor_job,lazy_table",
         "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--json", str(result_file)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "PYSPARK_SUBMIT_ARGS": faults.CHILD_DRIVER_SUBMIT_ARGS},  # a smoke: no figure is kept
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "a/b" in proc.stdout and "a/c" in proc.stdout  # the figures table was printed

    (case,) = json.loads(result_file.read_text())["cases"]
    assert case["rows"] == 20000 and case["requests"] == 1000
    results = case["results"]
    assert set(results) == {"ndcg_spark", "ndcg_spark_evaluator_number", "evaluator", "numpy", "floor_job",
                            "lazy_table"}
    for name, res in results.items():
        assert res["work_s"] > 0, name
        assert res["peak_python_mib"] > 0, name
    assert results["ndcg_spark"]["peak_jvm_mib"] > 0 and results["evaluator"]["peak_jvm_mib"] > 0
    assert "e/b" in proc.stdout  # (b)'s number through score_requests, and its ratio
    assert "g/b" in proc.stdout and "a/g" in proc.stdout  # the floor under (a), and the ratios to it
    assert case["agreement"]["floor_job_ndcg10_mean_diff"] <= TOL
    assert "h/b" in proc.stdout and "e/h" in proc.stdout  # (e)'s table as one lazy plan, and the ratios to it

    binary = {name: res["binary_ndcg10_mean"] for name, res in results.items() if name != "floor_job"}
    assert 0.0 < binary["evaluator"] < 1.0
    assert binary["ndcg_spark"] == pytest.approx(binary["evaluator"], abs=TOL)
    assert binary["numpy"] == pytest.approx(binary["evaluator"], abs=TOL)
    assert binary["lazy_table"] == pytest.approx(binary["evaluator"], abs=TOL)

    # the timed computation itself (exponential gain, empty ideals set aside): ndcg-spark's stage 2
    # overall macro mean at K=10 equals numpy's mean over the requests with a positive ideal
    a, c = results["ndcg_spark"], results["numpy"]
    assert a["ndcg10_mean"] == pytest.approx(c["ndcg10_mean"], abs=TOL)
    assert a["n_requests"] == c["n_requests"] == 1000
    assert a["n_empty_ideal"] == c["n_empty_ideal"] > 0


@pytest.mark.slow  # a benchmark's contender: the whole suite runs it, the fast lane does not
def test_the_floor_contender_computes_the_evaluators_number(spark):
    """benchmarks/contenders.py's floor (one unchecked hash aggregate per request, valid on the
    generated data's dense positions) gives RankingEvaluator's number: here through the contract
    that contender (e) scores it with (the test above checks (e) against the evaluator itself)."""
    from pyspark.sql import functions as F

    from ndcg_spark import score_requests

    contenders, datagen = _benchmark_module("contenders"), _benchmark_module("datagen")
    candidates, _ = datagen.generate(spark, datagen.DataSpec(requests=300), partitions=2)
    binary = contenders.binary_contract()
    expected = score_requests(candidates, contract=binary).agg(F.avg("ndcg"), F.min("ndcg")).first()
    assert expected[1] == 0.0  # some request has no relevant candidate: it scores 0 and counts
    assert contenders.floor_ndcg10_mean(candidates) == pytest.approx(expected[0], abs=TOL)


@pytest.mark.slow  # a benchmark's contender: the whole suite runs it, the fast lane does not
def test_the_lazy_table_scores_every_request_as_score_requests_does(spark):
    """benchmarks/lazy_table.py, (e)'s table as one lazy plan: its rows are score_requests'
    for the same contract, bit for bit, also for requests out of dense position order (positions
    with gaps, positions repeated: collected and sorted by position, then doc id); and the
    candidates' aggregation is computed once for both of its readers (the exchange reused)."""
    from pyspark.sql import functions as F

    from ndcg_spark import score_requests

    contenders, datagen = _benchmark_module("contenders"), _benchmark_module("datagen")
    lazy_table = _benchmark_module("lazy_table")
    candidates, _ = datagen.generate(spark, datagen.DataSpec(requests=300), partitions=2)
    request, position = F.col("request_id"), F.col("position")
    out_of_order = F.when(request % 7 == 0, position * 2).when(request % 11 == 0, F.floor(position / 2))
    candidates = candidates.withColumn("position", out_of_order.otherwise(position).cast("int"))
    lazy = lazy_table.lazy_table(candidates, contenders.binary_contract())
    ours = lazy.collect()
    theirs = score_requests(candidates, contract=contenders.binary_contract(), validate=False).collect()
    assert len(ours) == 300
    assert sorted(map(tuple, ours), key=repr) == sorted(map(tuple, theirs), key=repr)
    assert lazy.columns == list(theirs[0].asDict())
    assert "ReusedExchange" in lazy._jdf.queryExecution().executedPlan().toString()


@pytest.mark.slow  # a benchmark's contender: the whole suite runs it, the fast lane does not
def test_the_floor_under_the_whole_job_writes_what_the_job_writes(spark):
    """benchmarks/floor_job.py, the floor under (a): its per-request table holds (a)'s rows (the same
    columns; each request and K's DCG, IDCG and NDCG to rounding, its counts, weight and slices
    exactly), and its aggregates (a)'s counts and means; only the bootstrap's draws differ, so its
    intervals are only checked to hold their means. Against ndcg-spark under (a)'s contract."""
    pytest.importorskip("numpy")
    pytest.importorskip("pyarrow")
    from ndcg_spark import AggregateSpec, Attributes, Contract, aggregate, score_requests

    floor_job, datagen = _benchmark_module("floor_job"), _benchmark_module("datagen")
    candidates, attributes = datagen.generate(spark, datagen.DataSpec(requests=300), partitions=2)
    floor_rows = floor_job.floor_per_request(candidates, attributes)
    job_rows = score_requests(candidates, contract=Contract(k=list(floor_job.KS)), run_id="bench", system="bench",
                              pool_version="bench", validate=False,
                              attributes=Attributes(table=attributes, weight="weight", slices=floor_job.SLICES))
    assert floor_rows.columns == job_rows.columns
    ours = {(r["request_id"], r["k"]): r for r in floor_rows.collect()}
    theirs = {(r["request_id"], r["k"]): r for r in job_rows.collect()}
    assert ours.keys() == theirs.keys() and len(ours) == 300 * 4
    exact = ("empty_ideal", "n_candidates", "n_judged", "n_positive", "n_unjudged_in_top_k", "weight",
             *floor_job.SLICES)
    for key, row in theirs.items():
        assert all(ours[key][c] == row[c] for c in exact), key
        for c in ("dcg", "idcg", "ndcg"):  # ndcg: null for an empty ideal (empty_ideal: exclude)
            if row[c] is None:
                assert ours[key][c] is None, (key, c)
            else:
                assert ours[key][c] == pytest.approx(row[c], abs=1e-12), (key, c)
    assert any(r["empty_ideal"] for r in theirs.values()) and any(r["n_unjudged_in_top_k"] for r in theirs.values())

    rows = floor_job.floor_aggregates(floor_job.arrow_of(floor_job.floor_group_sums(floor_rows)), replicates=50)
    names = [field.split()[0] for field in floor_job.AGGREGATE_SCHEMA.split(", ")]
    ours = {(r["k"], r["slice_dimension"], r["slice_value"]): r for r in (dict(zip(names, row)) for row in rows)}
    spec = AggregateSpec(slices=floor_job.SLICES, replicates=0, min_eligible=1)
    theirs = {(r["k"], r["slice_dimension"], r["slice_value"]): r for r in aggregate(job_rows, spec).collect()}
    assert ours.keys() == theirs.keys() and len(ours) == 4 * (1 + 3 + 4 + 3)
    for key, row in theirs.items():
        assert [ours[key][c] for c in ("n_requests", "n_eligible", "n_empty_ideal")] == \
            [row[c] for c in ("n_requests", "n_eligible", "n_empty_ideal")], key
        for c in ("macro_ndcg", "weighted_ndcg", "unjudged_share"):
            assert ours[key][c] == pytest.approx(row[c], abs=1e-12), (key, c)
        assert ours[key]["macro_ci_low"] <= ours[key]["macro_ndcg"] <= ours[key]["macro_ci_high"], key
        assert ours[key]["weighted_ci_low"] <= ours[key]["weighted_ndcg"] <= ours[key]["weighted_ci_high"], key


def test_rounds_take_each_ratio_within_a_round_and_report_its_median_and_spread():
    """benchmarks/run.py --rounds N: a ratio is taken between contenders of the same round (run
    back to back), then its median and range over the rounds are reported; each contender's own
    figures are its median round. Here the machine slows down between rounds: the ratio within a
    round stays 0.5 while the ratio of the two contenders' median times would be 0.4."""
    run = _benchmark_module("run")

    def result(work_s: float) -> dict:
        return {"work_s": work_s, "start_s": 5.0}

    case = {"rounds": [{"ndcg_spark_evaluator_number": result(e), "evaluator": result(b)}
                       for e, b in ((5.0, 10.0), (8.0, 16.0), (12.0, 20.0))]}
    spread = run.round_ratios(case)
    assert spread["e/b"] == {"median": 0.5, "low": 0.5, "high": 0.6}
    medians = {name: run._median_round([r[name] for r in case["rounds"]]) for name in ("evaluator",)}
    assert medians["evaluator"]["work_s"] == 16.0
    assert run._median_round([result(3.0), result(1.0)])["work_s"] == 1.0  # even count: the lower middle
    assert run.ratios({"results": {"ndcg_spark_evaluator_number": result(8.0), "evaluator": result(20.0)}})["e/b"] \
        == 0.4  # what mixing rounds would give


def test_the_ui_metric_texts_are_read_as_totals_and_seconds():
    """benchmarks/sparkui.py reads Spark's UI metrics: a summed metric is shown as a header line,
    then the total and its spread; a single task's as the value alone."""
    sparkui = _benchmark_module("sparkui")
    assert sparkui._total("total (min, med, max (stageId: taskId))\n5.8 s (2.9 s, 2.9 s, 2.9 s (stage 1.0: task 3))") \
        == "5.8 s"
    assert sparkui._total("6 ms") == "6 ms" and sparkui._total("4,000,000") == "4,000,000"
    assert [sparkui.seconds(v) for v in ("984 ms", "5.8 s", "1.5 m", "2 h", "1,000,000", "")] \
        == [0.984, 5.8, 90.0, 7200.0, 0.0, 0.0]


def test_the_time_some_job_ran_counts_overlapping_jobs_once_and_only_inside_the_window():
    """benchmarks/sparkui.py's busy_seconds: the union of the jobs' spans, cut to the run's window
    (warm.py's planning time is the rest of the window)."""
    sparkui = _benchmark_module("sparkui")
    assert sparkui.busy_seconds([(1.0, 3.0), (2.0, 4.0), (6.0, 7.0), (9.5, 12.0)], 0.0, 10.0) == 4.5
    assert sparkui.busy_seconds([(2.0, 8.0), (3.0, 4.0), (1.0, 2.5)], 0.0, 10.0) == 7.0  # one inside another
    assert sparkui.busy_seconds([(-5.0, 1.0), (11.0, 12.0)], 0.0, 10.0) == 1.0  # before and after the window
    assert sparkui.busy_seconds([(4.0, 4.0)], 0.0, 10.0) == 0.0 and sparkui.busy_seconds([], 0.0, 10.0) == 0.0


@pytest.mark.slow  # a benchmark's contender in a fresh process
def test_the_breakdown_names_the_jobs_and_each_operators_time(tmp_path):
    """benchmarks/breakdown.py runs one contender with Spark's UI on and prints its jobs, the JVM's
    compiling, and each operator's time and rows: here the floor's one aggregate per request."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "breakdown.py"), "floor", "--rows", "20000", "--shuffle-partitions",
         "2", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--min-seconds", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYSPARK_SUBMIT_ARGS": faults.CHILD_DRIVER_SUBMIT_ARGS},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    out = proc.stdout
    assert "(f) floor: one hash aggregate, 20,000 rows: work" in out
    assert re.search(r"^JVM during the work: JIT compilation \d+\.\d s, garbage collection \d+\.\d s", out, re.M)
    assert len(re.findall(r"^  job +\d+  \+ *\d+\.\d\d \.\. \+ *\d+\.\d\d", out, re.M)) >= 2
    # the candidates read (20,000 rows) and the aggregate per request (1,000 requests), with their times
    assert re.search(r"^    Scan parquet +scan time \d[\d.]* m?s;.* 20,000 rows out$", out, re.M), out
    assert re.search(r"^    HashAggregate +time in aggregation build \d[\d.]* m?s; 1,000 rows out$", out, re.M), out


@pytest.mark.slow  # the one-mean contenders in a fresh process
def test_the_warm_session_runs_each_contender_in_turn_and_they_agree(tmp_path):
    """benchmarks/warm.py runs the contenders that compute RankingEvaluator's number in one session,
    in turn: each one's first run (its cold one) and best later run are reported, with the warm
    ratios; the four (the floor, score_requests, the lazy table, Spark's evaluator) compute the same
    number in every run."""
    result_file = tmp_path / "warm.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "warm.py"), "--rows", "20000", "--repeat", "2",
         "--shuffle-partitions", "2", "--data-dir", str(tmp_path / "data"), "--json", str(result_file)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYSPARK_SUBMIT_ARGS": faults.CHILD_DRIVER_SUBMIT_ARGS},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    figures = json.loads(result_file.read_text())
    assert figures["order"] == ["floor", "ndcg_spark_evaluator_number", "lazy_table", "evaluator"]
    assert {name: len(runs) for name, runs in figures["runs"].items()} == dict.fromkeys(figures["order"], 2)
    means = [r["mean"] for runs in figures["runs"].values() for r in runs]
    assert 0.0 < means[0] < 1.0 and max(means) - min(means) <= TOL
    assert set(figures["ratios"]) == {"e/b", "h/b", "f/b", "e/f"}
    for name, runs in figures["runs"].items():
        for r in runs:  # every contender runs Spark jobs; the rest of its time is the driver's planning
            assert 0.0 < r["jobs_s"] <= r["work_s"] + 0.05 and r["planning_s"] >= 0.0, (name, r)
    for name, c in figures["contenders"].items():
        assert c["best_warm_s"] == figures["runs"][name][1]["work_s"], name
        assert c["own_start_s"] == pytest.approx(c["first_s"] - c["best_warm_s"]), name
    assert re.search(r"^warm ratios: e/b \d+\.\d\d, h/b \d+\.\d\d, f/b \d+\.\d\d, e/f \d+\.\d\d$", proc.stdout, re.M)
    assert "(e) score_requests, (b)'s number" in proc.stdout
    split = r"-?\d+\.\d\d = +-?\d+\.\d\d \+ +-?\d+\.\d\d"  # seconds = planning + jobs (a warm run may plan longer)
    assert re.search(rf"^  \(e\) score_requests, \(b\)'s number +{split} +{split} +{split} ", proc.stdout, re.M)
