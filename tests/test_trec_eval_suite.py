"""trec_eval's own test suite, reproduced by the ``trec_eval`` preset: its inputs and the outputs it
publishes (``test/`` of https://github.com/usnistgov/trec_eval, made by its Makefile's
``quicktest``), every ``ndcg_cut`` and ``recall`` value, and the ``num_rel`` / ``num_rel_ret``
counts behind recall.

Those files are not ours to commit, so this module runs where a checkout's ``test/`` folder is
named by ``TREC_EVAL_TEST_DIR``, or else lies at ``../shared/peers/trec_eval_test`` beside the
checkout (tests/peers.py: skipped elsewhere, but never in CI, which sets ``NDCG_REQUIRE_PEERS=1``; CI also checks the same conventions against trec_eval the program on
random data: tests/test_trec_eval_program.py)::

    TREC_EVAL_TEST_DIR=~/src/trec_eval/test bash dev.sh test tests/test_trec_eval_suite.py

Each input is scored once (``{preset: trec_eval, metrics: [ndcg, recall]}``), its NDCG and recall
checked by separate tests:

* ``out.test.aq`` -- ``trec_eval -m all_trec -q qrels.test results.test``: 3 queries x 9 cutoffs
  and the ``all`` means;
* ``out.test.meas_params`` -- ``-m ndcg_cut.10,20,23.4 -m recall.20,2000``: the cutoff 23 too, and
  recall at 2000, deeper than the run (500 documents a query);
* ``out.test.aql`` -- ``-q -l2`` on the multi-level ``qrels.rel_level`` (grades -1 .. 4): the preset
  reads the 304 judgments of grade -1 as judged, gain 0 (``negative_grades: zero``), as trec_eval
  does; ``-l2`` is trec_eval's relevance level, ``relevant_grade: 2`` (recall's relevant documents:
  97, not the 559 of grade >= 1; NDCG's gains do not depend on it);
* ``out.test.aqc`` -- ``trec_eval -m all_trec -q -c qrels.test results.trunc``: the run answers 301
  and 303 only (and 5 of its lines carry fields past the tag, which trec_eval ignores): with
  ``no_results: zero`` query 302 scores 0 and every mean is over the 3 judged queries.

The values are compared to the four decimals trec_eval prints; the counts exactly.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from ndcg_spark import AggregateSpec, Contract, aggregate, read_trec_qrels, read_trec_run, score_requests
from tests.peers import TREC_EVAL_SUITE, needs_trec_eval_suite


SUITE = TREC_EVAL_SUITE
pytestmark = needs_trec_eval_suite
#: trec_eval prints four decimals (and a float's error on top)
PRINTED = 5e-5 + 1e-12


def published(name: str, measure: str = "ndcg_cut_") -> dict[tuple[str, str], float]:
    """``{(measure, query): value}`` of one measure's lines (``ndcg_cut_``: every ``ndcg_cut_K``;
    ``recall_``: every ``recall_K``; ``num_rel``: that line alone) of a published output file."""
    out = {}
    for line in (SUITE / name).read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and (fields[0].startswith(measure) if measure.endswith("_") else fields[0] == measure):
            out[(fields[0], fields[1])] = float(fields[2])
    return out


#: each input scored once for the module: ``{(qrels, results, ks, fields): ours}``
_SCORED: dict[tuple, dict[tuple[str, str], float]] = {}


def ours(spark, qrels: str, results: str, ks: list[int], **fields) -> dict[tuple[str, str], float]:
    """The preset's per-query NDCGs and recalls and their means (``all``), keyed like
    :func:`published` (a request the run has no line for too: its ``no_results`` row); and recall's
    counts: ``num_rel`` (the relevant judged documents, ``n_relevant``; ``all``: their sum over the
    queries the means count) and, when 1000 is a cutoff (deeper than these runs), ``num_rel_ret``
    (the relevant documents retrieved at any depth). Scored once per input and contract."""
    key = (qrels, results, tuple(ks), tuple(sorted(fields.items())))
    if key in _SCORED:
        return _SCORED[key]
    contract = Contract.from_dict({"preset": "trec_eval", "k": ks, "metrics": PANEL, **fields})
    run = read_trec_run(spark, str(SUITE / results), trailing_fields="ignore")
    judged = read_trec_qrels(spark, str(SUITE / qrels))
    per_request = score_requests(run, judged, contract).cache()
    out: dict[tuple[str, str], float] = {}
    counted = set()
    for r in per_request.collect():
        out[(f"ndcg_cut_{r.k}", r.request_id)] = r.ndcg
        out[(f"recall_{r.k}", r.request_id)] = r.recall
        out[(f"P_{r.k}", r.request_id)] = r.precision
        out[(f"map_cut_{r.k}", r.request_id)] = r.average_precision
        out[(f"success_{r.k}", r.request_id)] = r.hit_rate
        if r.k == max(ks):
            out[("recip_rank", r.request_id)] = r.reciprocal_rank
        out[("num_rel", r.request_id)] = r.n_relevant
        if r.k == 1000:
            out[("num_rel_ret", r.request_id)] = r.relevant_in_top_k
        if r.recall is not None:
            counted.add(r.request_id)
    for r in aggregate(per_request, AggregateSpec(replicates=0)).filter("slice_dimension = 'overall'").collect():
        if r.metric == "reciprocal_rank":
            if r.k == max(ks):
                out[("recip_rank", "all")] = r.macro
            continue
        out[(TREC_NAMES[r.metric] + f"_{r.k}", "all")] = r.macro
    out[("num_rel", "all")] = sum(out[("num_rel", q)] for q in counted)
    if 1000 in ks:
        out[("num_rel_ret", "all")] = sum(out[("num_rel_ret", q)] for q in counted)
    per_request.unpersist()
    _SCORED[key] = out
    return out


#: trec_eval's panel as the ``trec_eval`` preset's metrics read it: ``P_K``, ``recall_K``, ``map_cut_K``,
#: ``success_K``, ``recip_rank`` (no cutoff: within the largest K, 1000, deeper than these runs), ``ndcg_cut_K``
PANEL = ["ndcg", "recall", "precision", "average_precision", "hit_rate", {"reciprocal_rank": {"cutoff": "deepest"}}]
TREC_NAMES = {"ndcg": "ndcg_cut", "recall": "recall", "precision": "P", "average_precision": "map_cut",
              "hit_rate": "success"}


def _agree(expected: dict, got: dict) -> list[str]:
    return [f"{key}: trec_eval {value:.4f}, ndcg-spark {got.get(key)!r}" for key, value in sorted(expected.items())
            if got.get(key) is None or abs(got[key] - value) > PRINTED]


def _counts_agree(name: str, got: dict) -> list[str]:
    """``num_rel`` and ``num_rel_ret``, every query and ``all``: exactly."""
    expected = {**published(name, "num_rel"), **published(name, "num_rel_ret")}
    assert len(expected) == 8
    return [f"{key}: trec_eval {value:.0f}, ndcg-spark {got.get(key)!r}" for key, value in sorted(expected.items())
            if got.get(key) != value]


CUTOFFS = [1, 5, 10, 15, 20, 30, 100, 200, 500, 1000]
#: ``out.test.meas_params``: ``ndcg_cut.10,20,23.4``, ``recall.20,2000``
MEAS_PARAMS_CUTOFFS = [10, 20, 23, 2000]
#: ``out.test.aql``'s command line: ``-l2``
AQL = {"relevant_grade": 2}


def test_the_runs_are_shallower_than_1000():
    """``num_rel_ret`` counts the relevant documents retrieved at any depth: the relevant in the top
    1000 on these runs, and recall_2000 is num_rel_ret / num_rel."""
    for results in ("results.test", "results.trunc"):
        depth = defaultdict(int)
        for line in (SUITE / results).read_text(encoding="utf-8").splitlines():
            depth[line.split()[0]] += 1
        assert 0 < max(depth.values()) <= 1000, (results, depth)


def test_out_test_aq_every_query_and_cutoff(spark):
    expected = published("out.test.aq")
    assert len(expected) == 36
    assert not _agree(expected, ours(spark, "qrels.test", "results.test", CUTOFFS))


def test_out_test_meas_params_the_cutoff_23(spark):
    expected = {key: v for key, v in published("out.test.meas_params").items() if key[0] == "ndcg_cut_23"}
    assert len(expected) == 4
    assert not _agree(expected, ours(spark, "qrels.test", "results.test", MEAS_PARAMS_CUTOFFS))


def test_out_test_aql_negative_levels_read_as_trec_eval_reads_them(spark):
    expected = published("out.test.aql")
    assert len(expected) == 36
    assert not _agree(expected, ours(spark, "qrels.rel_level", "results.test", CUTOFFS, **AQL))


def test_out_test_aqc_the_unanswered_query_counts_as_0_under_c(spark):
    expected = published("out.test.aqc")
    assert len(expected) == 36 and expected[("ndcg_cut_10", "302")] == 0.0  # -a -c: 302's line, at 0
    got = ours(spark, "qrels.test", "results.trunc", CUTOFFS, no_results="zero")
    assert not _agree(expected, got)
    # without -c (the preset's default, exclude) the mean is over the 2 answered queries
    default = ours(spark, "qrels.test", "results.trunc", [10])
    assert default[("ndcg_cut_10", "302")] is None
    assert default[("ndcg_cut_10", "all")] == pytest.approx(
        (expected[("ndcg_cut_10", "301")] + expected[("ndcg_cut_10", "303")]) / 2, abs=PRINTED)


# --------------------------------------------------------------------------- recall
def test_out_test_aq_recall_every_query_and_cutoff(spark):
    expected = published("out.test.aq", "recall_")
    assert len(expected) == 36
    got = ours(spark, "qrels.test", "results.test", CUTOFFS)
    assert not _agree(expected, got)
    assert not _counts_agree("out.test.aq", got)


def test_out_test_meas_params_recall_deeper_than_the_run(spark):
    expected = published("out.test.meas_params", "recall_")
    assert sorted({m for m, _ in expected}) == ["recall_20", "recall_2000"] and len(expected) == 8
    assert not _agree(expected, ours(spark, "qrels.test", "results.test", MEAS_PARAMS_CUTOFFS))


def test_out_test_aql_recall_at_relevance_level_2(spark):
    expected = published("out.test.aql", "recall_")
    assert len(expected) == 36
    got = ours(spark, "qrels.rel_level", "results.test", CUTOFFS, **AQL)
    assert not _agree(expected, got)
    assert not _counts_agree("out.test.aql", got)
    # -l2 matters on these qrels: at grade >= 1 query 301 would count 474 relevant documents, not 12
    at_1 = defaultdict(int)
    for line in (SUITE / "qrels.rel_level").read_text(encoding="utf-8").splitlines():
        q, _, _, grade = line.split()
        at_1[q] += int(grade) >= 1
    assert at_1["301"] == 474 and got[("num_rel", "301")] == 12


def test_out_test_aqc_recall_the_unanswered_query_counts_as_0_under_c(spark):
    expected = published("out.test.aqc", "recall_")
    assert len(expected) == 36 and expected[("recall_1000", "302")] == 0.0
    got = ours(spark, "qrels.test", "results.trunc", CUTOFFS, no_results="zero")
    assert not _agree(expected, got)
    assert not _counts_agree("out.test.aqc", got)  # 302: num_rel 77, num_rel_ret 0, in the sums
    # without -c (the preset's default, exclude) 302 has no recall and the mean is over 301 and 303
    default = ours(spark, "qrels.test", "results.trunc", [10])
    assert default[("recall_10", "302")] is None
    assert default[("recall_10", "all")] == pytest.approx(
        (expected[("recall_10", "301")] + expected[("recall_10", "303")]) / 2, abs=PRINTED)


# --------------------------------------------------------------------------- the rest of the panel
#: trec_eval's lines of the other metrics: P_K, map_cut_K, success_K and recip_rank
OTHERS = ("P_", "map_cut_", "success_", "recip_rank")


def _others(name: str) -> dict:
    out = {}
    for measure in OTHERS:
        out.update(published(name, measure))
    return out


def test_out_test_aq_precision_map_cut_success_recip_rank(spark):
    expected = _others("out.test.aq")
    assert len(expected) == (9 + 9 + 3 + 1) * 4
    assert not _agree(expected, ours(spark, "qrels.test", "results.test", CUTOFFS))


def test_out_test_aql_the_panel_at_relevance_level_2(spark):
    expected = _others("out.test.aql")
    assert len(expected) == (9 + 9 + 3 + 1) * 4
    assert not _agree(expected, ours(spark, "qrels.rel_level", "results.test", CUTOFFS, **AQL))


def test_out_test_aqc_the_panel_the_unanswered_query_counts_as_0_under_c(spark):
    expected = _others("out.test.aqc")
    assert len(expected) == (9 + 9 + 3 + 1) * 4 and expected[("recip_rank", "302")] == 0.0
    assert not _agree(expected, ours(spark, "qrels.test", "results.trunc", CUTOFFS, no_results="zero"))
