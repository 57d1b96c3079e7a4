"""The presets reproduce the real tools: pytrec_eval (trec_eval's ``ndcg_cut``) and Spark's
``RankingEvaluator(metricName="ndcgAtK")``, on random data written as TREC files.

The data (seeded) has score ties (most queries score on a coarse grid), doc ids whose string order
is not their numeric order ("d10" < "d9"), rank fields that disagree with the scores (trec_eval
ignores them; RankingEvaluator's prediction order is the rank), unjudged retrieved documents,
judged documents never retrieved, queries whose qrels are all 0 (empty ideal), run queries with
no qrels at all and qrels queries with no run. The files are read with
:func:`ndcg_spark.read_trec_run` / :func:`ndcg_spark.read_trec_qrels`, scored once per preset
(one module-scoped fixture, one collect each), and compared per query to 1e-12.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

try:  # tests/ may or may not be a package
    from tests import oracle
except ImportError:  # pragma: no cover - depends on how pytest sets sys.path
    import oracle  # type: ignore[no-redef]

SEED = 20261201
N_QUERIES = 300
KS = [1, 3, 5, 10, 20]
KS_SPARK = [3, 10]
TOL = 1e-12


def generate(seed: int = SEED) -> tuple[list[tuple], list[tuple]]:
    """(run lines ``(qid, docno, rank, score)``, qrels lines ``(qid, docno, rel)``)."""
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(N_QUERIES):
        qid = f"q{q:03d}"
        m = rng.randint(1, 30)
        docs = [f"d{n}" for n in rng.sample(range(1, 400), m + rng.choice([0, 0, 2, 6]))]
        retrieved, never = docs[:m], docs[m:]
        coarse = rng.random() < 0.6
        ranks = list(range(1, m + 1))
        rng.shuffle(ranks)
        for doc, rank in zip(retrieved, ranks):
            score = rng.choice([0.0, 0.5, 1.0, 1.5]) if coarse else round(rng.uniform(-5, 5), 4)
            run.append((qid, doc, rank, score))
        kind = rng.random()
        if kind < 0.08:
            continue  # a run query without any qrels
        judged = [d for d in retrieved if rng.random() < 0.6] + never
        if not judged:
            judged = retrieved[:1]
        for doc in judged:
            qrels.append((qid, doc, 0 if kind < 0.18 else rng.choice([0, 0, 1, 2, 3])))
    for q in range(5):  # qrels queries no run retrieved for
        qrels.append((f"unretrieved{q}", "d1", 1))
    return run, qrels


def _write(tmp_path, run, qrels) -> tuple[str, str]:
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run_path.write_text("".join(f"{q} Q0 {d} {r} {s!r} bm25\n" for q, d, r, s in run), encoding="utf-8")
    qrels_path.write_text("".join(f"{q} 0 {d} {rel}\n" for q, d, rel in qrels), encoding="utf-8")
    return str(run_path), str(qrels_path)


@pytest.fixture(scope="module")
def scored(spark, tmp_path_factory):
    """Both presets' per-request NDCG and the aggregate under ranking_evaluator, collected once."""
    from ndcg_spark import AggregateSpec, Contract, aggregate, read_trec_qrels, read_trec_run, score_requests

    run, qrels = generate()
    run_path, qrels_path = _write(tmp_path_factory.mktemp("reference"), run, qrels)
    cands, judgs = read_trec_run(spark, run_path).cache(), read_trec_qrels(spark, qrels_path).cache()
    trec = score_requests(cands, judgs, Contract.from_dict({"preset": "trec_eval", "k": KS}))
    trec_j = score_requests(cands, judgs, Contract.from_dict({"preset": "trec_eval", "k": KS, "unjudged": "exclude"}))
    spark_like = score_requests(cands, judgs, Contract.from_dict({"preset": "ranking_evaluator", "k": KS_SPARK}))
    macro = aggregate(spark_like, AggregateSpec(replicates=0)).filter("metric = 'ndcg'").select("k", "macro_ndcg", "n_requests", "n_empty_ideal",
                                                                 "n_no_results")
    out = {
        "run": run,
        "qrels": qrels,
        "trec": {(r["request_id"], r["k"]): r for r in trec.collect()},
        "trec_j": {(r["request_id"], r["k"]): r["ndcg"] for r in trec_j.collect()},
        "spark_like": {(r["request_id"], r["k"]): r["ndcg"] for r in spark_like.collect()},
        "macro": {r["k"]: r for r in macro.collect()},
    }
    cands.unpersist()
    judgs.unpersist()
    return out


def test_the_data_has_the_edge_cases():
    run, qrels = generate()
    by_query = defaultdict(list)
    for q, d, _, s in run:
        by_query[q].append(s)
    rels = defaultdict(dict)
    for q, d, rel in qrels:
        rels[q][d] = rel
    retrieved = {(q, d) for q, d, _, _ in run}
    assert sum(1 for s in by_query.values() if len(set(s)) < len(s)) >= 100  # score ties
    assert sum(1 for q, d, _, _ in run if d not in rels.get(q, {})) >= 500  # unjudged retrieved
    assert sum(1 for q in rels for d in rels[q] if (q, d) not in retrieved) >= 200  # judged, never retrieved
    assert sum(1 for q in by_query if q in rels and not any(rels[q].values())) >= 20  # empty ideal
    assert sum(1 for q in by_query if q not in rels) >= 15  # run queries without qrels


def test_the_data_tells_the_conventions_apart():
    """On this data, ties by doc id ascending, or the rank field's order, or exponential gain
    would change many values (oracle, no Spark): the agreement below is not a coincidence."""
    run, qrels = generate()
    cands = [{"request_id": q, "doc_id": d, "position": r, "score": s} for q, d, r, s in run]
    judgs = [{"request_id": q, "doc_id": d, "grade": float(rel)} for q, d, rel in qrels]
    trec_eval = dict(k=KS, gain="linear", order="score", ties="doc_id_desc", ideal_from="judgments",
                     unjudged="zero", empty_ideal="zero")
    expected = oracle.score_all(cands, judgs, **trec_eval)
    for change in ({"ties": "doc_id"}, {"order": "position"}, {"gain": "exponential"}):
        other = oracle.score_all(cands, judgs, **{**trec_eval, **change})
        assert sum(abs(other[key]["ndcg"] - v["ndcg"]) > 1e-6 for key, v in expected.items()) >= 30, change


def _pytrec_eval(scored, **options) -> tuple[dict, dict, dict]:
    """(pytrec_eval's ndcg_cut per query, the qrels and the run as its dicts)."""
    qrels, run = defaultdict(dict), defaultdict(dict)
    for q, d, rel in scored["qrels"]:
        qrels[q][d] = rel
    for q, d, _, s in scored["run"]:
        run[q][d] = s
    measure = "ndcg_cut." + ",".join(map(str, KS))
    return pytrec_eval.RelevanceEvaluator(dict(qrels), {measure}, **options).evaluate(dict(run)), qrels, run


def test_trec_eval_preset_matches_pytrec_eval_per_query(scored):
    reference, qrels, run = _pytrec_eval(scored)
    # pytrec_eval (like trec_eval) evaluates the queries of both the run and the qrels
    assert set(reference) == set(run) & set(qrels)
    diffs = [abs(scored["trec"][(q, k)]["ndcg"] - values[f"ndcg_cut_{k}"]) for q, values in reference.items() for k in KS]
    assert len(diffs) == len(reference) * len(KS) and max(diffs) <= TOL, max(diffs)
    # a query whose qrels are all 0: trec_eval scores it 0 and counts it; here too, and flagged
    all_zero = [q for q in reference if not any(qrels[q].values())]
    assert all_zero and all(scored["trec"][(q, k)]["empty_ideal"] for q in all_zero for k in KS)
    # a run query without any qrels: absent from pytrec_eval; here an empty ideal, scored 0, flagged
    no_qrels = set(run) - set(qrels)
    ours = {q for q, _ in scored["trec"]}
    assert ours == set(run) | set(qrels) and no_qrels
    # a qrels query the run has no line for: left out by pytrec_eval; here a row flagged no_results,
    # set aside (no NDCG) under the preset's no_results: exclude
    unanswered = set(qrels) - set(run)
    assert unanswered and all(scored["trec"][(q, k)]["no_results"] and scored["trec"][(q, k)]["ndcg"] is None
                              for q in unanswered for k in KS)
    assert all(scored["trec"][(q, k)]["ndcg"] == 0.0 and scored["trec"][(q, k)]["empty_ideal"]
               for q in no_qrels for k in KS)
    print(f"trec_eval preset vs pytrec_eval: {len(reference)} queries x {len(KS)} cutoffs, "
          f"max |difference| {max(diffs):.3g}")


def test_trec_eval_preset_with_unjudged_exclude_matches_pytrec_eval_judged_docs_only(scored):
    """trec_eval -J drops unjudged documents and moves the later ones up: ``unjudged: exclude``."""
    reference, _, _ = _pytrec_eval(scored, judged_docs_only_flag=True)
    diffs = [abs(scored["trec_j"][(q, k)] - values[f"ndcg_cut_{k}"]) for q, values in reference.items() for k in KS]
    assert max(diffs) <= TOL, max(diffs)
    plain, _, _ = _pytrec_eval(scored)  # and -J changes the numbers on this data
    assert sum(abs(plain[q][m] - reference[q][m]) > 1e-6 for q in reference for m in reference[q]) >= 30
    print(f"trec_eval preset + unjudged: exclude vs pytrec_eval -J: {len(reference)} queries, max |difference| {max(diffs):.3g}")


def test_ranking_evaluator_preset_matches_spark_ranking_evaluator(spark, scored):
    from pyspark.ml.evaluation import RankingEvaluator

    labels = defaultdict(list)
    for q, d, rel in scored["qrels"]:
        if rel > 0:
            labels[q].append(float(d[1:]))  # RankingEvaluator takes arrays of doubles
    shown = defaultdict(list)
    for q, d, rank, _ in scored["run"]:
        shown[q].append((rank, float(d[1:])))
    rows = [([doc for _, doc in sorted(docs)], labels.get(q, [])) for q, docs in shown.items()]
    # a judged query the run has no line for is an empty prediction (SPARK-14886: it scores 0)
    rows += [([], labels.get(q, [])) for q in {q for q, _, _ in scored["qrels"]} - set(shown)]
    frame = spark.createDataFrame(rows, "prediction array<double>, label array<double>")
    for k in KS_SPARK:
        reference = RankingEvaluator(metricName="ndcgAtK", k=k).evaluate(frame)
        ours = [v for (_, kk), v in scored["spark_like"].items() if kk == k]
        assert len(ours) == len(rows)
        mean = sum(ours) / len(ours)
        assert abs(mean - reference) <= TOL, (k, mean, reference)
        macro = scored["macro"][k]
        assert abs(macro["macro_ndcg"] - reference) <= TOL and macro["n_requests"] == len(rows)
        assert macro["n_empty_ideal"] == sum(1 for _, label in rows if not label)
        assert macro["n_no_results"] == sum(1 for prediction, _ in rows if not prediction) == 5
        print(f"ranking_evaluator preset vs RankingEvaluator ndcgAtK k={k}: {len(rows)} queries, "
              f"|difference of the means| {abs(mean - reference):.3g} (macro_ndcg {abs(macro['macro_ndcg'] - reference):.3g})")
