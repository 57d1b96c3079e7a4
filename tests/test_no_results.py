"""Requests a ranker returned nothing for (issue 52): a row each, flagged ``no_results``, scored under
the contract's ``no_results`` and counted everywhere the empty-ideal requests are.

References, each independent of ndcg-spark:

* Spark's own ``RankingMetricsSuite`` ("MAP, NDCG with few predictions (SPARK-14886)"): predictions
  ``[1, 6, 2]`` with labels ``{1..5}`` and an **empty** prediction with labels ``{1, 2, 3}`` give
  ``ndcgAt(1) = 0.5`` and ``ndcgAt(2) = 0.30657`` (the suite's tolerance, 1e-5) -- and Spark's
  ``RankingEvaluator`` itself on the same rows;
* trec_eval the program (tests/trec_eval_tool.py), with and without ``-c``, and pytrec_eval, on
  random TREC files where some judged queries have no run line;
* the plain-Python oracle (tests/oracle.py) for every other request, with the no-result rule read
  plainly: no candidates, DCG 0, the ideal of the request's judged documents; NDCG 0 under
  ``zero``, none under ``exclude``; an empty ideal first (the empty-ideal policy).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict

import pytest
from pyspark.sql import functions as F

from ndcg_spark import AggregateSpec, Attributes, Contract, aggregate, read_trec_qrels, read_trec_run, score_requests
from ndcg_spark.comparison.paired import compare
from ndcg_spark.comparison.pools import pool_summary
from ndcg_spark.config.compare_spec import CompareSpec
from ndcg_spark.config.trend_spec import TrendSpec
from ndcg_spark.trend.series import trend

try:  # tests/ may or may not be a package
    from tests import oracle
    from tests.trec_eval_tool import run_trec_eval, trec_eval_binary
except ImportError:  # pragma: no cover - depends on how pytest sets sys.path
    import oracle  # type: ignore[no-redef]
    from trec_eval_tool import run_trec_eval, trec_eval_binary  # type: ignore[no-redef]

TOL = 1e-12
#: trec_eval prints four decimals
PRINTED = 5e-5


# --------------------------------------------------------------------------- SPARK-14886
def _spark_14886(spark):
    """RankingMetricsSuite's rows: query 0 predicts [1, 6, 2] (labels 1..5), query 1 predicts nothing
    (labels 1, 2, 3)."""
    cands = spark.createDataFrame([("0", "1", 1), ("0", "6", 2), ("0", "2", 3)],
                                  "request_id string, doc_id string, position int")
    labels = {"0": ["1", "2", "3", "4", "5"], "1": ["1", "2", "3"]}
    judged = spark.createDataFrame([(q, d, 1.0) for q, docs in labels.items() for d in docs],
                                   "request_id string, doc_id string, grade double")
    return cands, judged


def test_the_ranking_evaluator_preset_reproduces_spark_14886(spark):
    from pyspark.ml.evaluation import RankingEvaluator

    cands, judged = _spark_14886(spark)
    rows = score_requests(cands, judged, Contract.from_dict({"preset": "ranking_evaluator", "k": [1, 2]}))
    means = {r.k: r for r in aggregate(rows, AggregateSpec(replicates=0)).filter("metric = 'ndcg'").collect()}
    published = {1: 0.5, 2: 0.30657}  # RankingMetricsSuite, to its tolerance 1e-5
    for k, value in published.items():
        assert means[k].macro_ndcg == pytest.approx(value, abs=1e-5)
        assert (means[k].n_requests, means[k].n_no_results, means[k].n_eligible) == (2, 1, 2)
        frame = spark.createDataFrame([([1.0, 6.0, 2.0], [1.0, 2.0, 3.0, 4.0, 5.0]), ([], [1.0, 2.0, 3.0])],
                                      "prediction array<double>, label array<double>")
        assert means[k].macro_ndcg == pytest.approx(RankingEvaluator(metricName="ndcgAtK", k=k).evaluate(frame),
                                                    abs=TOL)
    flagged = {r.request_id: (r.no_results, r.n_candidates, r.ndcg) for r in rows.filter("k = 1").collect()}
    assert flagged == {"0": (False, 3, 1.0), "1": (True, 0, 0.0)}


def test_excluded_the_unanswered_query_is_set_aside_and_counted(spark):
    cands, judged = _spark_14886(spark)
    contract = Contract.from_dict({"preset": "ranking_evaluator", "k": [1, 2], "no_results": "exclude"})
    means = {r.k: r for r in aggregate(score_requests(cands, judged, contract), AggregateSpec(replicates=0))
             .filter("metric = 'ndcg'").collect()}
    # query 0 alone: DCG@2 = 1 (doc 1; doc 6 is not a label), ideal 1 + 1/log2(3)
    assert means[1].macro_ndcg == pytest.approx(1.0, abs=TOL)
    assert means[2].macro_ndcg == pytest.approx(1 / (1 + 1 / 1.584962500721156), abs=1e-12)
    assert (means[2].n_requests, means[2].n_no_results, means[2].n_eligible) == (2, 1, 1)


# --------------------------------------------------------------------------- the oracle, both plans
def _random_night(seed: int):
    """Two systems over 60 requests; ``b`` answers about a quarter fewer; some requests are only
    judged, some judged only 0, some (in the attributes table) neither ranked nor judged."""
    rng = random.Random(seed)
    cands, judged, population = [], [], []
    for q in range(60):
        rid = f"r{q:02d}"
        population.append(rid)
        if q >= 56:
            continue  # in the traffic sample, never ranked nor judged
        docs = [f"d{n}" for n in rng.sample(range(40), rng.randint(1, 9))]
        only_zero = rng.random() < 0.1
        for d in docs + [f"x{q}"]:  # one judged document no system shows
            if rng.random() < 0.7:
                judged.append((rid, d, 0.0 if only_zero else float(rng.choice([0, 0, 1, 2, 3]))))
        if q >= 52:
            continue  # judged, answered by no system
        for system in ("a", "b"):
            if system == "b" and rng.random() < 0.25:
                continue  # b returned nothing
            shown = docs[:]
            rng.shuffle(shown)
            cands += [(rid, d, system, p + 1, rng.choice([0.5, 1.0, 1.5])) for p, d in enumerate(shown)]
    return cands, judged, population


def _expected(cands, judged, population, policy: str, ideal_from: str, ks, empty_ideal: str = "exclude"):
    """Per (request, system, k): the oracle's row, a no-result request's row as the rule reads:
    set aside under ``exclude``; under ``zero`` 0, or the empty-ideal policy's value."""
    rows = [dict(zip(("request_id", "doc_id", "system", "position", "score"), c)) for c in cands]
    jrows = [dict(zip(("request_id", "doc_id", "grade"), j)) for j in judged]
    out = oracle.score_all(rows, jrows, k=ks, ideal_from=ideal_from, unjudged="separate", bounds=False,
                           empty_ideal=empty_ideal)
    for values in out.values():
        values["no_results"] = False
    grades = defaultdict(list)
    for rid, _, grade in judged:
        grades[rid].append(grade)
    for system in ("a", "b"):
        for rid in population:
            if any((rid, system, k) in out for k in ks):
                continue
            for k in ks:
                idcg = oracle.dcg_at_k(sorted((2 ** g - 1 for g in grades[rid]), reverse=True), k)
                on_empty = 0.0 if empty_ideal == "zero" else None
                ndcg = None if policy == "exclude" else on_empty if idcg <= 0 else 0.0
                out[(rid, system, k)] = {"dcg": 0.0, "idcg": idcg, "ndcg": ndcg, "empty_ideal": idcg <= 0,
                                         "n_candidates": 0, "no_results": True}
    return out


@pytest.mark.parametrize("policy", ["exclude", "zero"])
@pytest.mark.parametrize("dense_plan", [True, False])
@pytest.mark.parametrize("ideal_from, empty_ideal", [("judgments", "exclude"), ("candidates", "zero")])
def test_every_request_of_the_population_has_a_row_as_the_oracle_says(spark, policy, dense_plan, ideal_from,
                                                                        empty_ideal):
    cands, judged, population = _random_night(52)
    ks = [1, 3, 10]
    cdf = spark.createDataFrame(cands, "request_id string, doc_id string, system string, position int, score double")
    jdf = spark.createDataFrame(judged, "request_id string, doc_id string, grade double")
    attrs = Attributes(table=spark.createDataFrame([(r,) for r in population], "request_id string"))
    contract = Contract(k=ks, ideal_from=ideal_from, no_results=policy, empty_ideal=empty_ideal)
    got = score_requests(cdf, jdf, contract, attributes=attrs, dense_plan=dense_plan).collect()
    expected = _expected(cands, judged, population, policy, ideal_from, ks, empty_ideal)
    assert len(got) == len(expected) == 2 * len(population) * len(ks)
    for g in got:
        e = expected[(g.request_id, g.system, g.k)]
        where = (g.request_id, g.system, g.k)
        assert (g.no_results, g.empty_ideal, g.n_candidates) == (e["no_results"], e["empty_ideal"], e["n_candidates"]), where
        assert g.dcg == pytest.approx(e["dcg"], abs=TOL) and g.idcg == pytest.approx(e["idcg"], abs=TOL), where
        assert (g.ndcg is None) == (e["ndcg"] is None) and (g.ndcg is None or abs(g.ndcg - e["ndcg"]) <= TOL), where
    by_system = defaultdict(set)
    for (rid, system, _), e in expected.items():
        if e["no_results"]:
            by_system[system].add(rid)
    assert len(by_system["a"]) == 8 and len(by_system["b"]) > 15  # 52..59 for both, and b's misses


@pytest.mark.parametrize("policy", ["exclude", "zero"])
def test_the_aggregate_counts_them_beside_the_empty_ideal_requests(spark, policy):
    cands, judged, population = _random_night(7)
    cdf = spark.createDataFrame(cands, "request_id string, doc_id string, system string, position int, score double")
    jdf = spark.createDataFrame(judged, "request_id string, doc_id string, grade double")
    contract = Contract(k=[5], ideal_from="judgments", no_results=policy)
    per_request = score_requests(cdf, jdf, contract)  # the population: every request judged or ranked
    got = {r.system: r for r in aggregate(per_request, AggregateSpec(replicates=0))
           .filter("slice_dimension = 'overall'").collect()}
    expected = _expected(cands, judged, sorted({j[0] for j in judged} | {c[0] for c in cands}), policy,
                         "judgments", [5])
    for system in ("a", "b"):
        mine = [e for (_, s, _), e in expected.items() if s == system]
        scored = [e["ndcg"] for e in mine if e["ndcg"] is not None]
        g = got[system]
        assert g.n_requests == len(mine) == 56
        assert g.n_no_results == sum(e["no_results"] for e in mine)
        assert g.n_empty_ideal == sum(e["empty_ideal"] for e in mine)
        assert g.n_eligible == len(scored)
        assert g.macro_ndcg == pytest.approx(sum(scored) / len(scored), abs=TOL)
    assert got["b"].n_no_results > got["a"].n_no_results == 4


# --------------------------------------------------------------------------- trec_eval, pytrec_eval
def _trec_files(tmp_path, seed: int = 52):
    """Random run and qrels: every run query judged; 40 of the 200 judged queries have no run line."""
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(200):
        qid = f"{400 + q}"
        docs = [f"FT{n:05d}" for n in rng.sample(range(1, 5000), 12)]
        rels = [(d, rng.choice([0, 0, 1, 2, 3])) for d in docs if rng.random() < 0.6] or [(docs[0], 0)]
        qrels += [(qid, d, rel) for d, rel in rels]
        if q % 5 == 3:
            continue  # judged, not answered
        for rank, doc in enumerate(docs[: rng.randint(1, 12)], start=1):
            run.append((qid, doc, rank, rng.choice([round(rng.uniform(0, 10), 3), 5.0])))
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run_path.write_text("".join(f"{q} Q0 {d} {r} {s!r} tag\n" for q, d, r, s in run), encoding="utf-8")
    qrels_path.write_text("".join(f"{q} 0 {d} {rel}\n" for q, d, rel in qrels), encoding="utf-8")
    return run, qrels, run_path, qrels_path


@pytest.fixture(scope="module")
def trec(spark, tmp_path_factory):
    run, qrels, run_path, qrels_path = _trec_files(tmp_path_factory.mktemp("no_results"))
    cands, judgs = read_trec_run(spark, str(run_path)).cache(), read_trec_qrels(spark, str(qrels_path)).cache()
    out = {"run": run, "qrels": qrels, "run_path": run_path, "qrels_path": qrels_path}
    for policy in ("exclude", "zero"):
        contract = Contract.from_dict({"preset": "trec_eval", "k": [5, 10], "no_results": policy})
        rows = score_requests(cands, judgs, contract).cache()
        out[policy] = {(f"ndcg_cut_{r.k}", r.request_id): r for r in rows.collect()}
        for r in aggregate(rows, AggregateSpec(replicates=0)).filter("slice_dimension = 'overall' AND metric = 'ndcg'").collect():
            out[policy][(f"ndcg_cut_{r.k}", "all")] = r
        rows.unpersist()
    cands.unpersist()
    judgs.unpersist()
    return out


def test_the_data_has_judged_queries_without_a_run_line(trec):
    unanswered = {q for q, _, _ in trec["qrels"]} - {q for q, *_ in trec["run"]}
    assert len(unanswered) == 40
    assert {q for q, *_ in trec["run"]} <= {q for q, _, _ in trec["qrels"]}


@pytest.mark.parametrize("policy, options", [("exclude", ()), ("zero", ("-c",))])
def test_the_trec_eval_preset_is_trec_eval_with_and_without_c(trec, policy, options):
    binary, why = trec_eval_binary()
    if binary is None:
        pytest.skip(why)
    expected = run_trec_eval(binary, trec["qrels_path"], trec["run_path"], "-m", "ndcg_cut.5,10", *options)
    ours = trec[policy]
    # per query: the answered queries either way; -c averages over every judged query, the 40 unanswered at 0
    assert len({key for key in expected if key[1] != "all"}) == 320
    for key, value in expected.items():
        got = ours[key].macro_ndcg if key[1] == "all" else ours[key].ndcg
        assert got is not None and abs(got - value) <= PRINTED, (key, value, got)
    n_all = ours[("ndcg_cut_10", "all")]
    assert (n_all.n_requests, n_all.n_no_results, n_all.n_eligible) == (200, 40, 200 if options else 160)
    if not options:  # the unanswered are set aside: flagged, no NDCG
        assert all(r.no_results and r.ndcg is None for key, r in ours.items() if key[1] != "all" and key not in expected)


def test_the_trec_eval_preset_excludes_what_pytrec_eval_leaves_out(trec):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    judged, ranked = defaultdict(dict), defaultdict(dict)
    for q, d, rel in trec["qrels"]:
        judged[q][d] = rel
    for q, d, _, s in trec["run"]:
        ranked[q][d] = s
    reference = pytrec_eval.RelevanceEvaluator(dict(judged), {"ndcg_cut.5,10"}).evaluate(dict(ranked))
    ours = trec["exclude"]
    assert len(reference) == 160
    for q, values in reference.items():
        for measure, value in values.items():
            assert abs(ours[(measure, q)].ndcg - value) <= TOL, (measure, q)
    for k in (5, 10):
        mean = sum(v[f"ndcg_cut_{k}"] for v in reference.values()) / len(reference)
        assert ours[(f"ndcg_cut_{k}", "all")].macro_ndcg == pytest.approx(mean, abs=TOL)
    assert {q for (m, q), r in ours.items() if q != "all" and r.no_results} == set(judged) - set(reference)


# --------------------------------------------------------------------------- a night where one ranker answers fewer
def _two_nights(spark):
    """Two nights of 200 requests; on the second, hybrid returns nothing for 30 of them."""
    rng = random.Random(11)
    cands, judged = [], []
    for q in range(200):
        rid = f"q{q:03d}"
        docs = [f"d{n}" for n in rng.sample(range(50), 6)]
        judged += [(rid, d, float(rng.choice([0, 1, 2]))) for d in docs]
        for system in ("bm25", "hybrid"):
            shown = docs[:]
            rng.shuffle(shown)
            cands += [(rid, d, system, p + 1, "pool-1") for p, d in enumerate(shown)]
    schema = "request_id string, doc_id string, system string, position int, pool_version string"
    night_1 = spark.createDataFrame(cands, schema)
    timed_out = [f"q{q:03d}" for q in range(0, 200, 6)][:30]
    night_2 = night_1.filter(~((F.col("system") == "hybrid") & F.col("request_id").isin(timed_out)))
    jdf = spark.createDataFrame(judged, "request_id string, doc_id string, grade double")
    return night_1, night_2, jdf, timed_out


def test_a_ranker_answering_fewer_shows_in_the_counts_the_trend_and_the_comparison(spark):
    night_1, night_2, jdf, timed_out = _two_nights(spark)
    contract = Contract(k=[10], ideal_from="judgments")
    first = score_requests(night_1, jdf, contract, run_id="2026-12-01")
    second = score_requests(night_2, jdf, contract, run_id="2026-12-02").cache()
    spec = AggregateSpec(replicates=50, seed=1)
    nights = aggregate(first, spec).unionByName(aggregate(second, spec)).cache()
    overall = {(r.run_id, r.system): r for r in nights.filter("slice_dimension = 'overall'").collect()}
    assert overall[("2026-12-02", "hybrid")].n_no_results == 30
    assert overall[("2026-12-02", "bm25")].n_no_results == overall[("2026-12-01", "hybrid")].n_no_results == 0
    assert overall[("2026-12-02", "hybrid")].n_requests == 200  # still in the denominator's count

    moves = {(r.run_id, r.system): r for r in trend(nights, TrendSpec(max_no_results_shift=0.02))
             .filter("slice_dimension = 'overall'").collect()}
    hybrid = moves[("2026-12-02", "hybrid")]
    assert hybrid.no_results_shifted is True and "no_results_shift" in hybrid.flag
    assert hybrid.no_results_share_change == pytest.approx(30 / 200, abs=TOL)
    assert moves[("2026-12-02", "bm25")].no_results_shifted is False

    pools = pool_summary(night_2, jdf, contract)
    out = compare(second, pools, CompareSpec(baseline="bm25", candidate="hybrid", replicates=0, permutations=0),
                  created_at=dt.datetime(2026, 12, 2, 6)).filter("slice_dimension = 'overall'").collect()[0]
    assert (out.n_candidate_no_results, out.n_baseline_no_results) == (30, 0)
    assert out.n_only_baseline_missing == 30 and out.n_paired == 170  # set aside under exclude, never paired
    assert out.pools_differ is False  # a ranker that answered nothing has no other pool: not a pool change
    second.unpersist()
    nights.unpersist()


def test_the_default_leaves_every_fingerprint_as_it_was():
    assert Contract().fingerprint == Contract(no_results="exclude").fingerprint != Contract(no_results="zero").fingerprint
    assert Contract.from_dict({"preset": "ranking_evaluator"}).no_results.name == "zero"
    assert Contract.from_dict({"preset": "trec_eval"}).no_results.name == "exclude"


def test_a_night_read_back_keeps_its_new_columns_beside_older_nights(spark, tmp_path):
    """A path table whose earlier nights were written before ``n_no_results`` existed: this night,
    read back, still has the column (and an older night reads it as null)."""
    from ndcg_spark.config.job import Source
    from ndcg_spark.storage.io import read_run, write_run_partitioned

    target = Source(path=str(tmp_path / "aggregate"))
    write_run_partitioned(spark.createDataFrame([("2026-01-01", 0.5)], "run_id string, macro_ndcg double"), target)
    write_run_partitioned(spark.createDataFrame([("2026-12-02", 0.6, 3)], "run_id string, macro_ndcg double, n_no_results int"),
                          target)
    assert read_run(spark, target, "2026-12-02").first().n_no_results == 3
    assert read_run(spark, target, "2026-01-01").first().n_no_results is None


@pytest.mark.parametrize("policy", ["exclude", "zero"])
def test_a_list_the_shell_check_quarantined_is_not_a_request_returned_nothing_for(spark, policy):
    """In the shell: ``q1``'s list repeats a document and ``validate_inputs`` quarantines it (its
    judgments stay). ``score_requests(v.candidates, v.judgments, v.contract)`` must count it in the
    quarantine -- the ranker answered, its list broke doc_repeated -- not as nothing returned, and never
    score it 0 under ``no_results: zero``: the validated frame of candidates carries the lists it set aside."""
    from ndcg_spark import AggregateSpec, ValidationSpec, aggregate, score_requests, validate_inputs

    cands = spark.createDataFrame([("q1", "a", 1), ("q1", "a", 2), ("q2", "b", 1), ("q2", "c", 2)],
                                  "request_id string, doc_id string, position int")
    judged = spark.createDataFrame([("q1", "a", 2.0), ("q2", "b", 1.0), ("q2", "c", 0.0)],
                                   "request_id string, doc_id string, grade double")
    spec = ValidationSpec.from_dict({"rules": {"doc_repeated": "quarantine"}, "max_quarantined_share": 1.0})
    v = validate_inputs(cands, judged, Contract(k=[3], no_results=policy), spec)
    assert v.accounting["candidates"].rows_quarantined == 2
    rows = score_requests(v.candidates, v.judgments, v.contract).collect()
    assert [(r.request_id, r.no_results) for r in rows] == [("q2", False)]
    out = aggregate(score_requests(v.candidates, v.judgments, v.contract), AggregateSpec(replicates=0)).first()
    assert (out.n_requests, out.n_no_results, out.macro) == (1, 0, 1.0)
    # a frame derived from the validated one is another frame: the keys are passed explicitly then
    derived = v.candidates.select("*")
    assert {r.request_id for r in score_requests(derived, v.judgments, v.contract).collect()} == {"q1", "q2"}
    kept = score_requests(derived, v.judgments, v.contract, set_aside=v.set_aside).collect()
    assert [r.request_id for r in kept] == ["q2"]
