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
