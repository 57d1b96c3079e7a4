"""trec_eval's own test suite, reproduced by the ``trec_eval`` preset: its inputs and the outputs it
publishes (``test/`` of https://github.com/usnistgov/trec_eval), every ``ndcg_cut`` value.

Those files are not ours to commit, so this module runs where a checkout's ``test/`` folder is
named by ``TREC_EVAL_TEST_DIR`` and is skipped elsewhere (CI checks the same conventions against
trec_eval the program on random data: tests/test_trec_eval_program.py)::

    TREC_EVAL_TEST_DIR=~/src/trec_eval/test bash dev.sh test tests/test_trec_eval_suite.py

* ``out.test.aq`` -- ``trec_eval -a -q qrels.test results.test``: 3 queries x 9 cutoffs and the
  ``all`` means;
* ``out.test.meas_params`` -- ``-m ndcg_cut.10,20,23``: the cutoff 23 too;
* ``out.test.aql`` -- the multi-level ``qrels.rel_level`` (grades -1 .. 4): the preset reads the
  304 judgments of grade -1 as judged, gain 0 (``negative_grades: zero``), as trec_eval does;
* ``out.test.aqc`` -- ``trec_eval -a -q -c qrels.test results.trunc``: the run answers 301 and 303
  only (and 5 of its lines carry fields past the tag, which trec_eval ignores): with
  ``no_results: zero`` query 302 scores 0 and every mean is over the 3 judged queries.

The values are compared to the four decimals trec_eval prints.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ndcg_spark import AggregateSpec, Contract, aggregate, read_trec_qrels, read_trec_run, score_requests

SUITE = os.environ.get("TREC_EVAL_TEST_DIR")
pytestmark = pytest.mark.skipif(
    not SUITE or not (Path(SUITE) / "out.test.aq").is_file(),
    reason="TREC_EVAL_TEST_DIR does not name trec_eval's test/ folder (its files are not committed here)",
)
#: trec_eval prints four decimals
PRINTED = 5e-5


def published(name: str) -> dict[tuple[str, str], float]:
    """``{(measure, query): value}`` of the ``ndcg_cut`` lines of a published output file."""
    out = {}
    for line in (Path(SUITE) / name).read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0].startswith("ndcg_cut"):
            out[(fields[0], fields[1])] = float(fields[2])
    return out


def ours(spark, qrels: str, results: str, ks: list[int], **fields) -> dict[tuple[str, str], float]:
    """The preset's per-query NDCGs and their means (``all``), keyed like :func:`published` (a
    request the run has no line for too: its ``no_results`` row)."""
    contract = Contract.from_dict({"preset": "trec_eval", "k": ks, **fields})
    run = read_trec_run(spark, str(Path(SUITE) / results), trailing_fields="ignore")
    judged = read_trec_qrels(spark, str(Path(SUITE) / qrels))
    per_request = score_requests(run, judged, contract).cache()
    out = {(f"ndcg_cut_{r.k}", r.request_id): r.ndcg for r in per_request.collect()}
    for r in aggregate(per_request, AggregateSpec(replicates=0)).filter("slice_dimension = 'overall'").collect():
        out[(f"ndcg_cut_{r.k}", "all")] = r.macro_ndcg
    per_request.unpersist()
    return out


def _agree(expected: dict, got: dict) -> list[str]:
    return [f"{key}: trec_eval {value:.4f}, ndcg-spark {got.get(key)!r}" for key, value in sorted(expected.items())
            if got.get(key) is None or abs(got[key] - value) > PRINTED]


CUTOFFS = [5, 10, 15, 20, 30, 100, 200, 500, 1000]


def test_out_test_aq_every_query_and_cutoff(spark):
    expected = published("out.test.aq")
    assert len(expected) == 36
    assert not _agree(expected, ours(spark, "qrels.test", "results.test", CUTOFFS))


def test_out_test_meas_params_the_cutoff_23(spark):
    expected = {key: v for key, v in published("out.test.meas_params").items() if key[0] == "ndcg_cut_23"}
    assert len(expected) == 4
    assert not _agree(expected, ours(spark, "qrels.test", "results.test", [23]))


def test_out_test_aql_negative_levels_read_as_trec_eval_reads_them(spark):
    expected = published("out.test.aql")
    assert len(expected) == 36
    assert not _agree(expected, ours(spark, "qrels.rel_level", "results.test", CUTOFFS))


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
