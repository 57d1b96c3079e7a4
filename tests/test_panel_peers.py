"""precision@K and average precision@K reproduce Spark's ``RankingMetrics`` by its own test suite's
numbers (``RankingMetricsSuite``, mllib/src/test/scala/org/apache/spark/mllib/evaluation), written
here as the literals it asserts, on the rows of tests/test_recall_peers.py:

* "Ranking metrics: MAP, NDCG, Recall": ``precisionAt`` = 1/3, 1/3, 1/3, 0.75/3, 0.8/3, 0.8/3, 8/45
  at K = 1, 2, 3, 4, 5, 10, 15 (``/ K``, a short list padded: ``precision: {denominator: k}``);
  ``meanAveragePrecisionAt`` = 0.333334, 0.25, 0.24074 at K = 1, 2, 3 (``/ min(|labels|, K)``:
  ``average_precision: {denominator: capped}``); ``meanAveragePrecision`` = 0.355026 (``/ |labels|``
  over the whole list: ``all_relevant`` at a K past every list);
* "MAP, NDCG, Recall with few predictions (SPARK-14886)": ``precisionAt(1)`` = 0.5,
  ``precisionAt(2)`` = 0.25 (the empty prediction counts 0 in the mean).

The suite asserts them to 1e-5 (its literals have 6 decimals); the fractions here to 1e-9.
"""

from __future__ import annotations

from test_recall_peers import SPARK_14886_ROWS, SUITE_ROWS, SUITE_TOL, _ranking_rows, _score

from ndcg_spark import Contract

#: the suite's literals (6 decimals): its own tolerance
SUITE_MAP_TOL = 1e-5
SUITE_PRECISION = {1: 1.0 / 3, 2: 1.0 / 3, 3: 1.0 / 3, 4: 0.75 / 3, 5: 0.8 / 3, 10: 0.8 / 3, 15: 8.0 / 45}
SUITE_MAP_AT = {1: 0.333334, 2: 0.25, 3: 0.24074}
SUITE_MAP = 0.355026
SPARK_14886_PRECISION = {1: 0.5, 2: 0.25}


def _contract(ks, *metrics) -> Contract:
    return Contract.from_dict({"preset": "ranking_evaluator", "k": ks, "metrics": list(metrics)})


def test_precision_at_reproduces_ranking_metrics_suite(spark):
    ks = sorted(SUITE_PRECISION)
    rows, means = _score(*_ranking_rows(spark, SUITE_ROWS), _contract(ks, "ndcg", "precision"))
    for k, published in SUITE_PRECISION.items():
        mean = means[("precision", k)]
        assert abs(mean.macro - published) <= SUITE_TOL, (k, mean.macro, published)
        assert (mean.n_requests, mean.n_eligible) == (3, 3), k
        assert rows[("2", k)].precision == 0.0 and rows[("2", k)].empty_ideal, k  # no label: 0, counted


def test_mean_average_precision_at_reproduces_ranking_metrics_suite(spark):
    ks = [1, 2, 3, 15]
    capped = _contract(ks, {"average_precision": {"denominator": "capped"}})
    _, means = _score(*_ranking_rows(spark, SUITE_ROWS), capped)
    for k, published in SUITE_MAP_AT.items():
        assert abs(means[("average_precision", k)].macro - published) <= SUITE_MAP_TOL, (k, published)
    # meanAveragePrecision: / |labels| over the whole list (K = 15 is past every list of 10)
    _, means = _score(*_ranking_rows(spark, SUITE_ROWS), _contract(ks, "average_precision"))
    assert abs(means[("average_precision", 15)].macro - SUITE_MAP) <= SUITE_MAP_TOL
    # at K = 2 the two denominators differ: / min(5, 2) and / min(3, 2) against / 5 and / 3
    assert means[("average_precision", 2)].macro < SUITE_MAP_AT[2] - 0.05


def test_precision_at_reproduces_spark_14886(spark):
    ks = sorted(SPARK_14886_PRECISION)
    rows, means = _score(*_ranking_rows(spark, SPARK_14886_ROWS), _contract(ks, "precision"))
    for k, published in SPARK_14886_PRECISION.items():
        mean = means[("precision", k)]
        assert abs(mean.macro - published) <= SUITE_TOL, (k, mean.macro, published)
        assert (mean.n_requests, mean.n_no_results, mean.n_eligible) == (2, 1, 2), k
        assert rows[("1", k)].precision == 0.0 and rows[("1", k)].no_results, k


# --------------------------------------------------------------------------- RankingEvaluator, random rows
def test_ranking_evaluator_preset_matches_every_ranking_evaluator_metric(spark):
    """The preset's whole panel against Spark's ``RankingEvaluator`` (``ndcgAtK``, ``precisionAtK``,
    ``recallAtK``, ``meanAveragePrecisionAtK``) on the random rows of tests/test_recall_peers.py
    (empty label sets, empty predictions, both), to 1e-12."""
    from pyspark.ml.evaluation import RankingEvaluator
    from test_recall_peers import RE_KS, TOL, _random_ranking_rows

    data = _random_ranking_rows()
    cands = [(q, str(d), p + 1) for q, prediction, _ in data for p, d in enumerate(prediction)]
    judged = [(q, str(d), float(g)) for q, _, grades in data for d, g in grades.items()]
    contract = Contract.from_dict({"preset": "ranking_evaluator", "k": RE_KS})  # its panel, declared by the preset
    _, means = _score(spark.createDataFrame(cands, "request_id string, doc_id string, position int"),
                      spark.createDataFrame(judged, "request_id string, doc_id string, grade double"), contract)
    frame = spark.createDataFrame(
        [([float(d) for d in prediction], [float(d) for d, g in grades.items() if g >= 1])
         for _, prediction, grades in data],
        "prediction array<double>, label array<double>").cache()
    names = {"ndcg": "ndcgAtK", "precision": "precisionAtK", "recall": "recallAtK",
             "average_precision": "meanAveragePrecisionAtK"}
    assert {m for m, _ in means} == set(names)  # the preset's panel, and only it
    for metric, spark_name in names.items():
        for k in RE_KS:
            reference = RankingEvaluator(metricName=spark_name, k=k).evaluate(frame)
            assert abs(means[(metric, k)].macro - reference) <= TOL, (spark_name, k, means[(metric, k)].macro, reference)
            assert means[(metric, k)].n_eligible == len(data), (metric, k)
    frame.unpersist()


# --------------------------------------------------------------------------- pytrec_eval, random TREC files
PT_KS = [1, 3, 5, 10, 20, 1000]


def test_trec_eval_preset_matches_pytrec_eval_panel_per_query(spark, tmp_path):
    """``P_K``, ``map_cut_K``, ``success_K`` and ``recip_rank`` of pytrec_eval (trec_eval's C code) on the
    random TREC files of tests/test_reference_tools.py, per query, to 1e-12: the preset's panel
    (recip_rank: within the largest K, 1000, past every list)."""
    pytrec_eval = __import__("pytest").importorskip("pytrec_eval")
    from collections import defaultdict

    from test_recall_peers import TOL
    from test_reference_tools import _write, generate

    from ndcg_spark import read_trec_qrels, read_trec_run, score_requests

    run, qrels = generate()
    run_path, qrels_path = _write(tmp_path, run, qrels)
    contract = Contract.from_dict({"preset": "trec_eval", "k": PT_KS})
    rows = {(r.request_id, r.k): r for r in score_requests(read_trec_run(spark, run_path),
                                                            read_trec_qrels(spark, qrels_path), contract).collect()}
    q_rels, q_run = defaultdict(dict), defaultdict(dict)
    for q, d, rel in qrels:
        q_rels[q][d] = rel
    for q, d, _, s in run:
        q_run[q][d] = s
    cut = ",".join(map(str, PT_KS))
    measures = {f"P.{cut}", f"map_cut.{cut}", f"success.{cut}", "recip_rank"}
    reference = pytrec_eval.RelevanceEvaluator(dict(q_rels), measures).evaluate(dict(q_run))
    assert max(len(docs) for docs in q_run.values()) < PT_KS[-1]
    compared = 0
    for q, values in reference.items():
        for k in PT_KS:
            row = rows[(q, k)]
            for ours, theirs in (("precision", f"P_{k}"), ("average_precision", f"map_cut_{k}"),
                                 ("hit_rate", f"success_{k}")):
                assert abs(getattr(row, ours) - values[theirs]) <= TOL, (q, theirs, getattr(row, ours), values[theirs])
                compared += 1
        assert abs(rows[(q, PT_KS[-1])].reciprocal_rank - values["recip_rank"]) <= TOL, q
        compared += 1
    assert compared >= 1000
    # the data tells the conventions apart: some first relevant documents below rank 1, some AP < 1
    assert sum(1 for v in reference.values() if 0 < v["recip_rank"] < 1) >= 20
