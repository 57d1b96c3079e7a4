"""Recall@K reproduces the peers' published recall: Spark's ``RankingMetrics.recallAt`` (its own
test suite's numbers, and ``RankingEvaluator(metricName="recallAtK")`` on random data) and
trec_eval's ``recall_K`` (through pytrec_eval, on random TREC files).

References, each independent of ndcg-spark:

* Spark's ``RankingMetricsSuite`` (mllib/src/test/scala/org/apache/spark/mllib/evaluation), written
  here as the literals it asserts: "Ranking metrics: MAP, NDCG, Recall" -- predictions
  ``[1, 6, 2, 7, 8, 3, 9, 10, 4, 5]`` / labels ``{1..5}``, ``[4, 1, 5, 6, 2, 7, 3, 8, 9, 10]`` /
  ``{1, 2, 3}`` and ``[1, 2, 3, 4, 5]`` / no label: ``recallAt`` = 1/15, 8/45, 11/45, 11/45,
  16/45, 2/3, 2/3 at K = 1, 2, 3, 4, 5, 10, 15 (an empty label set counts 0 in the mean); and
  "MAP, NDCG, Recall with few predictions (SPARK-14886)" -- ``[1, 6, 2]`` / ``{1..5}`` and an
  empty prediction / ``{1, 2, 3}``: ``recallAt(1) = recallAt(2) = 0.1``. The suite asserts them to
  1e-5; the fractions are exact, so here to 1e-9. Its ``ndcgAt`` literals (6 decimals, to the
  suite's 1e-5) are checked on the same rows: declaring recall beside NDCG leaves NDCG alone.
* Spark's ``RankingEvaluator(metricName="recallAtK", k=K)`` on seeded random rows with empty label
  arrays (answered, never judged relevant: judged only 0, or not judged at all), empty prediction
  arrays (judged, never answered) and both, against the ``ranking_evaluator`` preset's mean, to
  1e-12 at K = 1, 3, 10.
* pytrec_eval (trec_eval's ``recall.K``) on the random TREC files of tests/test_reference_tools.py
  (score ties, doc ids whose string order is not their numeric order, unjudged retrieved
  documents, judged documents never retrieved, queries judged only 0, run queries without qrels,
  qrels queries without a run line), per query and in the mean, to 1e-12.

trec_eval's own test suite (``recall_K`` of ``out.test.aq``, ``.aqc``, ``.aql``) is checked in
tests/test_trec_eval_suite.py beside its ``ndcg_cut`` lines.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from ndcg_spark import AggregateSpec, Contract, aggregate, read_trec_qrels, read_trec_run, score_requests

#: the float comparisons with a peer that computes the same fractions
TOL = 1e-12
#: the RankingMetricsSuite literals are exact fractions (the suite itself asserts them to 1e-5)
SUITE_TOL = 1e-9
#: its ndcgAt literals are printed to 6 decimals: the suite's own tolerance
SUITE_NDCG_TOL = 1e-5


def _ranking_rows(spark, rows: list[tuple[list[int], list[int]]]):
    """Spark's ``(prediction, label)`` rows as our inputs: request ``str(i)``; a candidate per
    predicted item (doc id the item as a string, position its index + 1); a judgment of grade 1 per
    label. An empty label set leaves the request without judgments; an empty prediction, without
    candidates."""
    cands = [(str(i), str(doc), p + 1) for i, (prediction, _) in enumerate(rows) for p, doc in enumerate(prediction)]
    judged = [(str(i), str(doc), 1.0) for i, (_, labels) in enumerate(rows) for doc in labels]
    return (spark.createDataFrame(cands, "request_id string, doc_id string, position int"),
            spark.createDataFrame(judged, "request_id string, doc_id string, grade double"))


def _score(candidates, judgments, contract) -> tuple[dict, dict]:
    """(per-request rows by ``(request_id, k)``, the overall aggregate rows by ``(metric, k)``)."""
    per_request = score_requests(candidates, judgments, contract).cache()
    rows = {(r.request_id, r.k): r for r in per_request.collect()}
    overall = aggregate(per_request, AggregateSpec(replicates=0)).filter("slice_dimension = 'overall'")
    means = {(r.metric, r.k): r for r in overall.collect()}
    per_request.unpersist()
    return rows, means


# --------------------------------------------------------------------------- RankingMetricsSuite
#: "Ranking metrics: MAP, NDCG, Recall"
SUITE_ROWS = [
    ([1, 6, 2, 7, 8, 3, 9, 10, 4, 5], [1, 2, 3, 4, 5]),
    ([4, 1, 5, 6, 2, 7, 3, 8, 9, 10], [1, 2, 3]),
    ([1, 2, 3, 4, 5], []),
]
SUITE_RECALL = {1: 1.0 / 15, 2: 8.0 / 45, 3: 11.0 / 45, 4: 11.0 / 45, 5: 16.0 / 45, 10: 2.0 / 3, 15: 2.0 / 3}
SUITE_NDCG = {3: 1.0 / 3, 5: 0.328788, 10: 0.487913}  # and ndcgAt(15) == ndcgAt(10)

#: "MAP, NDCG, Recall with few predictions (SPARK-14886)"
SPARK_14886_ROWS = [([1, 6, 2], [1, 2, 3, 4, 5]), ([], [1, 2, 3])]
SPARK_14886_RECALL = {1: 0.1, 2: 0.1}


def test_ranking_evaluator_preset_reproduces_ranking_metrics_suite_recall_at(spark):
    ks = sorted(SUITE_RECALL)
    contract = Contract.from_dict({"preset": "ranking_evaluator", "k": ks, "metrics": ["ndcg", "recall"]})
    rows, means = _score(*_ranking_rows(spark, SUITE_ROWS), contract)
    for k, published in SUITE_RECALL.items():
        mean = means[("recall", k)]
        assert abs(mean.macro - published) <= SUITE_TOL, (k, mean.macro, published)
        assert (mean.n_requests, mean.n_eligible) == (3, 3), k
        # the query without labels: answered, no relevant document, recall 0 (and counted above)
        empty = rows[("2", k)]
        assert empty.recall == 0.0 and empty.n_relevant == 0 and empty.empty_ideal and not empty.no_results, k
    for k, published in SUITE_NDCG.items():
        assert abs(means[("ndcg", k)].macro - published) <= SUITE_NDCG_TOL, (k, means[("ndcg", k)].macro, published)
    assert abs(means[("ndcg", 15)].macro - means[("ndcg", 10)].macro) <= SUITE_NDCG_TOL


def test_ranking_evaluator_preset_reproduces_spark_14886_recall_at(spark):
    ks = sorted(SPARK_14886_RECALL)
    contract = Contract.from_dict({"preset": "ranking_evaluator", "k": ks, "metrics": ["ndcg", "recall"]})
    rows, means = _score(*_ranking_rows(spark, SPARK_14886_ROWS), contract)
    for k, published in SPARK_14886_RECALL.items():
        mean = means[("recall", k)]
        assert abs(mean.macro - published) <= SUITE_TOL, (k, mean.macro, published)
        assert (mean.n_requests, mean.n_no_results, mean.n_eligible) == (2, 1, 2), k
        # the empty prediction: a no_results row, scored 0 under the preset's no_results: zero
        unanswered = rows[("1", k)]
        assert unanswered.no_results and unanswered.recall == 0.0 and unanswered.n_relevant == 3, k


# --------------------------------------------------------------------------- RankingEvaluator, random
RE_SEED = 20261207
RE_QUERIES = 240
RE_KS = [1, 3, 10]


def _random_ranking_rows(seed: int = RE_SEED) -> list[tuple[str, list[int], dict[int, int]]]:
    """``(request_id, prediction, {doc: grade})``: a grade >= 1 is a label, a grade 0 a judged
    non-relevant document (not a label). Some requests are answered but judged only 0 or not judged
    at all (empty label array), some judged but never answered (empty prediction), some judged only
    0 and never answered (both empty: they still are requests, through their judgments)."""
    rng = random.Random(seed)
    out = []
    for q in range(RE_QUERIES):
        kind = rng.random()
        pool = rng.sample(range(1, 120), rng.randint(1, 40))
        prediction = [] if 0.80 <= kind < 0.95 else pool[: rng.randint(1, min(len(pool), 25))]
        if kind < 0.07:
            grades = {}  # answered, never judged
        elif kind < 0.14 or 0.90 <= kind < 0.95:
            grades = {d: 0 for d in rng.sample(pool, rng.randint(1, len(pool)))}  # judged only 0
        else:
            judged = [d for d in pool if rng.random() < 0.5] or pool[:1]
            grades = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
            if not any(grades.values()):
                grades[judged[0]] = 1
        out.append((f"{q}", prediction, grades))
    return out


def _spark_recall(prediction: list[int], labels: set[int], k: int, capped: bool = False) -> float:
    """``RankingMetrics.recallAt``'s arithmetic, for the data check only (what the test compares
    against is RankingEvaluator itself)."""
    if not labels:
        return 0.0
    hits = sum(1 for d in prediction[:k] if d in labels)
    return hits / (min(k, len(labels)) if capped else len(labels))


def test_the_random_ranking_rows_tell_the_conventions_apart():
    """On this data, leaving out the empty label sets, or the empty predictions, or the capped
    denominator min(K, R) would each move the mean at every K (plain Python, no Spark)."""
    data = _random_ranking_rows()
    rows = [(prediction, {d for d, g in grades.items() if g >= 1}) for _, prediction, grades in data]
    assert sum(1 for p, labels in rows if not labels and p) >= 15
    assert sum(1 for p, labels in rows if not p and labels) >= 15
    assert sum(1 for p, labels in rows if not p and not labels) >= 5
    assert sum(1 for p, labels in rows if labels - set(p)) >= 50  # labels never predicted
    for k in RE_KS:
        spark_mean = sum(_spark_recall(p, labels, k) for p, labels in rows) / len(rows)
        variants = {
            "without empty labels": [_spark_recall(p, labels, k) for p, labels in rows if labels],
            "without empty predictions": [_spark_recall(p, labels, k) for p, labels in rows if p],
            "capped": [_spark_recall(p, labels, k, capped=True) for p, labels in rows],
        }
        for name, values in variants.items():
            assert abs(sum(values) / len(values) - spark_mean) > 1e-3, (k, name)


def test_ranking_evaluator_preset_matches_spark_ranking_evaluator_recall_at_k(spark):
    from pyspark.ml.evaluation import RankingEvaluator

    data = _random_ranking_rows()
    cands = [(q, str(d), p + 1) for q, prediction, _ in data for p, d in enumerate(prediction)]
    random.Random(RE_SEED + 1).shuffle(cands)  # the position column is the order, not the row order
    judged = [(q, str(d), float(g)) for q, _, grades in data for d, g in grades.items()]
    contract = Contract.from_dict({"preset": "ranking_evaluator", "k": RE_KS, "metrics": ["ndcg", "recall"]})
    rows, means = _score(spark.createDataFrame(cands, "request_id string, doc_id string, position int"),
                         spark.createDataFrame(judged, "request_id string, doc_id string, grade double"), contract)
    # Spark's rows: the prediction in order, the labels (grade >= 1) as doubles; an empty array either side
    frame = spark.createDataFrame(
        [([float(d) for d in prediction], [float(d) for d, g in grades.items() if g >= 1])
         for _, prediction, grades in data],
        "prediction array<double>, label array<double>").cache()
    n_no_labels = sum(1 for _, _, grades in data if not any(g >= 1 for g in grades.values()))
    n_unanswered = sum(1 for _, prediction, _ in data if not prediction)
    for k in RE_KS:
        reference = RankingEvaluator(metricName="recallAtK", k=k).evaluate(frame)
        mean = means[("recall", k)]
        assert abs(mean.macro - reference) <= TOL, (k, mean.macro, reference)
        assert (mean.n_requests, mean.n_eligible, mean.n_no_results) == (len(data), len(data), n_unanswered), k
        assert sum(1 for (q, kk), r in rows.items() if kk == k and r.n_relevant == 0 and r.recall == 0.0) == n_no_labels
        print(f"ranking_evaluator preset vs RankingEvaluator recallAtK k={k}: {len(data)} queries "
              f"({n_no_labels} without labels, {n_unanswered} without predictions), "
              f"|difference| {abs(mean.macro - reference):.3g}")
    frame.unpersist()


# --------------------------------------------------------------------------- pytrec_eval
PT_KS = [1, 3, 5, 10, 20]


@pytest.fixture(scope="module")
def trec_scored(spark, tmp_path_factory):
    """The random TREC files of tests/test_reference_tools.py under ``{preset: trec_eval, metrics:
    [ndcg, recall]}``: the per-request rows, the overall means, and the overall means of the
    requests in the qrels only (trec_eval's queries), collected once."""
    pytest.importorskip("pytrec_eval")
    try:  # tests/ may or may not be a package
        from tests.test_reference_tools import _write, generate
    except ImportError:  # pragma: no cover - depends on how pytest sets sys.path
        from test_reference_tools import _write, generate  # type: ignore[no-redef]

    run, qrels = generate()
    run_path, qrels_path = _write(tmp_path_factory.mktemp("recall_reference"), run, qrels)
    cands, judgs = read_trec_run(spark, run_path).cache(), read_trec_qrels(spark, qrels_path).cache()
    contract = Contract.from_dict({"preset": "trec_eval", "k": PT_KS, "metrics": ["ndcg", "recall"]})
    per_request = score_requests(cands, judgs, contract).cache()
    judged_ids = sorted({q for q, _, _ in qrels})
    in_qrels = per_request.filter(per_request.request_id.isin(judged_ids))
    out = {
        "run": run,
        "qrels": qrels,
        "rows": {(r.request_id, r.k): r for r in per_request.collect()},
        "means": {(r.metric, r.k): r for r in aggregate(per_request, AggregateSpec(replicates=0))
                  .filter("slice_dimension = 'overall'").collect()},
        "means_in_qrels": {(r.metric, r.k): r for r in aggregate(in_qrels, AggregateSpec(replicates=0))
                           .filter("slice_dimension = 'overall'").collect()},
    }
    for frame in (per_request, cands, judgs):
        frame.unpersist()
    return out


def _pytrec_recall(trec_scored) -> tuple[dict, dict, dict]:
    """(pytrec_eval's ``recall_K`` per query, the qrels and the run as its dicts)."""
    import pytrec_eval

    qrels, run = defaultdict(dict), defaultdict(dict)
    for q, d, rel in trec_scored["qrels"]:
        qrels[q][d] = rel
    for q, d, _, s in trec_scored["run"]:
        run[q][d] = s
    measure = "recall." + ",".join(map(str, PT_KS))
    return pytrec_eval.RelevanceEvaluator(dict(qrels), {measure}).evaluate(dict(run)), qrels, run


def test_trec_eval_preset_recall_matches_pytrec_eval_per_query(trec_scored):
    reference, qrels, run = _pytrec_recall(trec_scored)
    rows = trec_scored["rows"]
    assert set(reference) == set(run) & set(qrels)  # pytrec_eval: the queries of both
    diffs = [abs(rows[(q, k)].recall - values[f"recall_{k}"]) for q, values in reference.items() for k in PT_KS]
    assert len(diffs) == len(reference) * len(PT_KS) and max(diffs) <= TOL, max(diffs)
    # the data exercises recall: most answered queries have relevant documents, some not all retrieved
    assert sum(1 for values in reference.values() if 0 < values[f"recall_{PT_KS[-1]}"] < 1) >= 50
    # its relevant count is trec_eval's num_rel (grade >= 1), counted over the qrels, retrieved or not
    num_rel = {q: sum(1 for rel in docs.values() if rel >= 1) for q, docs in qrels.items()}
    assert all(rows[(q, k)].n_relevant == num_rel[q] for q in reference for k in PT_KS)
    # a query judged only 0: pytrec_eval scores it 0 (num_rel 0), here too, flagged
    all_zero = [q for q in reference if not num_rel[q]]
    assert all_zero and all(rows[(q, k)].recall == 0.0 and rows[(q, k)].empty_ideal for q in all_zero for k in PT_KS)
    # a qrels query the run has no line for: left out by pytrec_eval; here no_results, no recall
    unanswered = set(qrels) - set(run)
    assert unanswered and all(rows[(q, k)].no_results and rows[(q, k)].recall is None
                              for q in unanswered for k in PT_KS)
    print(f"trec_eval preset recall vs pytrec_eval: {len(reference)} queries x {len(PT_KS)} cutoffs, "
          f"max |difference| {max(diffs):.3g}")


def test_trec_eval_preset_mean_recall_matches_pytrec_eval_mean(trec_scored):
    reference, qrels, run = _pytrec_recall(trec_scored)
    no_qrels = set(run) - set(qrels)  # scored 0 here (an empty ideal), absent from trec_eval's mean
    assert no_qrels
    for k in PT_KS:
        values = [v[f"recall_{k}"] for v in reference.values()]
        # the requests trec_eval evaluates (those of the qrels): its mean, over the same count
        mean = trec_scored["means_in_qrels"][("recall", k)]
        assert abs(mean.macro - sum(values) / len(values)) <= TOL, (k, mean.macro, sum(values) / len(values))
        assert mean.n_eligible == len(reference) and mean.n_no_results == len(set(qrels) - set(run)), k
        # every request: the run-only ones count 0 in the mean too
        overall = trec_scored["means"][("recall", k)]
        assert overall.n_eligible == len(reference) + len(no_qrels), k
        assert abs(overall.macro - sum(values) / overall.n_eligible) <= TOL, (k, overall.macro)
