"""``ndcg-spark show --per-request``: a published night's per-request values as trec_eval prints
them with ``-q``. The ``trec_eval`` preset's night on trec_eval's own test files (``results.test``,
``qrels.test``), listed by the command: every line of a measure trec_eval also prints is the line of
trec_eval's published ``out.test.aq`` -- per query and ``all``, character for character -- and every
such line of ``out.test.aq`` is listed (tests/peers.py: skipped where trec_eval's ``test/`` files
are missing, except in CI)."""

from __future__ import annotations

import pytest
import yaml

from ndcg_spark.cli import main
from tests.peers import TREC_EVAL_SUITE as SUITE, needs_trec_eval_suite

pytestmark = needs_trec_eval_suite

KS = [1, 5, 10, 15, 20, 30, 100, 200, 500, 1000]


def _listing(tmp_path, capsys, *extra: str) -> tuple[int, list[str], str]:
    job = {
        "version": 1,
        "contract": {"preset": "trec_eval", "k": KS},
        "inputs": {"candidates": {"path": str(SUITE / "results.test"), "format": "trec_run"},
                   "judgments": {"path": str(SUITE / "qrels.test"), "format": "trec_qrels"}},
        "outputs": {"per_request": {"path": str(tmp_path / "warehouse" / "per_request")}},
        "spark": {"master": "local[2]", "shuffle_partitions": 2},
    }
    config = tmp_path / "trec.yaml"
    config.write_text(yaml.safe_dump(job), encoding="utf-8")
    assert main(["score", "--config", str(config), "--run-id", "suite"]) == 0
    capsys.readouterr()
    status = main(["show", "--config", str(config), "--run-id", "suite", "--per-request", *extra])
    said = capsys.readouterr()
    return status, said.out.splitlines(), said.err


@pytest.mark.e2e
def test_the_per_request_listing_is_trec_eval_q_output_line_for_line(tmp_path, capsys):
    status, ours, _ = _listing(tmp_path, capsys)
    assert status == 0
    published = (SUITE / "out.test.aq").read_text(encoding="utf-8").splitlines()
    ours_named = {line.split("\t")[0].strip() for line in ours}
    theirs = [line for line in published if line.split("\t")[0].strip() in ours_named]
    shared = {line.split("\t")[0].strip() for line in theirs}
    assert {"recip_rank", "P_5", "recall_1000", "ndcg_cut_10", "map_cut_100", "success_10", "runid", "num_q"} <= shared
    # every line of a measure trec_eval prints: the same characters, in trec_eval's order
    assert [line for line in ours if line.split("\t")[0].strip() in shared] == theirs
    # the measures trec_eval does not print at these K (P_1, success_15 ...) are listed too, named alike
    assert {"P_1", "success_15"} <= ours_named - shared


@pytest.mark.e2e
def test_a_system_the_night_does_not_have_is_refused_naming_the_run(tmp_path, capsys):
    status, _, said = _listing(tmp_path, capsys, "--system", "nosuch")
    assert status == 2
    assert "no published rows of system 'nosuch' in run suite" in said and "ndcg-spark runs" in said
