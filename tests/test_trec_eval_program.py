"""The ``trec_eval`` preset against trec_eval itself: the program (9.0.4, from Maven Central:
tests/trec_eval_tool.py) and pytrec_eval (its C code), on random TREC files.

Negative relevance levels (issue 48): real qrels carry them (the Web track's -2 "junk", -1 in
trec_eval's own ``qrels.rel_level``). trec_eval reads such a document as judged, gain 0, and leaves it
out of the ideal; under the preset so does ndcg-spark (``negative_grades: zero``, counted in the
row accounting), while outside it a negative grade still breaks ``grade_negative``. (trec_eval 9.0.4
and pytrec_eval crash -- a segmentation fault -- on a query whose every judgment is negative, so
the data gives each judged query a non-negative one; ndcg-spark reads such a query's ideal as
empty: NDCG 0 under the preset, flagged.)
"""

from __future__ import annotations

import random

import pytest

from ndcg_spark import Contract, read_trec_qrels, read_trec_run, score_requests, validate_inputs
from ndcg_spark.errors import ValidationError

try:
    from tests.trec_eval_tool import run_trec_eval, trec_eval_binary
except ImportError:  # pragma: no cover - run from tests/
    from trec_eval_tool import run_trec_eval, trec_eval_binary  # type: ignore[no-redef]

pytrec_eval = pytest.importorskip("pytrec_eval")

SEED = 48_0008
KS = [1, 3, 5, 10, 20]
#: trec_eval prints four decimals
PRINTED = 5e-5


def generate(seed: int = SEED, n_queries: int = 200) -> tuple[list[tuple], list[tuple]]:
    """(run lines ``(qid, docno, rank, score)``, qrels lines ``(qid, docno, rel)``) with rels from -2 to 4."""
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(n_queries):
        qid = f"{300 + q}"
        m = rng.randint(1, 25)
        docs = [f"FT{n:05d}" for n in rng.sample(range(1, 5000), m + rng.choice([0, 2, 5]))]
        for rank, doc in enumerate(docs[:m], start=1):
            run.append((qid, doc, rank, rng.choice([round(rng.uniform(0, 10), 3), 5.0])))
        rels = [(doc, rng.choice([-2, -1, -1, 0, 0, 1, 2, 3, 4])) for doc in docs if rng.random() < 0.75]
        if rels and all(rel < 0 for _, rel in rels):
            rels.append((docs[0] + "x", 0))  # trec_eval 9.0.4 (and pytrec_eval) crash on a query judged only negative
        qrels += [(qid, doc, rel) for doc, rel in rels]
    return run, qrels


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    run, qrels = generate()
    folder = tmp_path_factory.mktemp("trec")
    run_path, qrels_path = folder / "run.txt", folder / "qrels.txt"
    run_path.write_text("".join(f"{q} Q0 {d} {r} {s!r} tag\n" for q, d, r, s in run), encoding="utf-8")
    qrels_path.write_text("".join(f"{q} 0 {d} {rel}\n" for q, d, rel in qrels), encoding="utf-8")
    return {"run": run, "qrels": qrels, "run_path": run_path, "qrels_path": qrels_path}


@pytest.fixture(scope="module")
def preset_rows(spark, files):
    cands = read_trec_run(spark, str(files["run_path"]))
    judgs = read_trec_qrels(spark, str(files["qrels_path"]))
    contract = Contract.from_dict({"preset": "trec_eval", "k": KS})
    rows = score_requests(cands, judgs, contract).collect()
    return {(f"ndcg_cut_{r.k}", r.request_id): r.ndcg for r in rows}


def test_the_data_has_negative_levels_that_matter(files):
    negative = [rel for _, _, rel in files["qrels"] if rel < 0]
    assert len(negative) > 100
    retrieved = {(q, d) for q, d, _, _ in files["run"]}
    assert sum(1 for q, d, rel in files["qrels"] if rel < 0 and (q, d) in retrieved) > 50


def test_the_preset_reads_negative_levels_as_trec_eval_does_pytrec_eval(preset_rows, files):
    judged, ranked = {}, {}
    for q, d, rel in files["qrels"]:
        judged.setdefault(q, {})[d] = rel
    for q, d, _, s in files["run"]:
        ranked.setdefault(q, {})[d] = s
    measures = {f"ndcg_cut.{','.join(map(str, KS))}"}
    reference = pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(ranked)
    compared = 0
    for query, values in reference.items():
        for k in KS:
            assert preset_rows[(f"ndcg_cut_{k}", query)] == pytest.approx(values[f"ndcg_cut_{k}"], abs=1e-12)
            compared += 1
    assert compared == len(KS) * len(reference) >= 900


def test_the_preset_reads_negative_levels_as_trec_eval_does_the_program(preset_rows, files):
    binary, why = trec_eval_binary()
    if binary is None:
        pytest.skip(why)
    reference = run_trec_eval(binary, files["qrels_path"], files["run_path"], "-m", "ndcg_cut." + ",".join(map(str, KS)))
    per_query = {key: value for key, value in reference.items() if key[1] != "all"}
    assert len(per_query) == len(KS) * len({q for q, *_ in files["run"]})
    for key, value in per_query.items():
        assert abs(preset_rows[key] - value) <= PRINTED, key


def test_outside_the_preset_a_negative_grade_breaks_its_rule_and_under_it_is_counted(spark, files):
    cands = read_trec_run(spark, str(files["run_path"]))
    judgs = read_trec_qrels(spark, str(files["qrels_path"]))
    with pytest.raises(ValidationError, match="grade_negative"):
        score_requests(cands, judgs, Contract.from_dict({"preset": "trec_eval", "negative_grades": "error"}))
    preset = Contract.from_dict({"preset": "trec_eval"})
    assert preset.negative_grades == "zero" and preset.to_dict()["negative_grades"] == "zero"
    assert "negative_grades" not in Contract().to_dict()  # other contracts keep their fingerprints
    accounting = validate_inputs(cands, judgs, preset).accounting
    negative = sum(1 for *_, rel in files["qrels"] if rel < 0)
    assert accounting["judgments"].negative_grades_as_zero == negative
    assert f"{negative:,} negative grade(s) read as judged, gain 0" in accounting.summary()
