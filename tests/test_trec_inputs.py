"""TREC run and qrels files as inputs: the readers, and their malformed lines under the named rules.

The files are small and hand-written, so every expected value can be checked on paper.
"""

from __future__ import annotations

import pytest

RUN = """\
# a comment line, and a blank line below: neither is a row
q1 Q0 d1 1 3.0 sysA

q1\tQ0  d2 2 2.0   sysA
q1 Q0 d10 3 2.0 sysA
q2 Q0 d1 1 1.0 sysA
"""

QRELS = """\
q1 0 d1 2
q1 0 d2 0
q2 0 d1 1
q2 0 d7 3
"""

# One line per problem: q2's second line has a rank that is not a number, q3's first line lacks
# its tag; q4's qrels line has a rel that is not a number.
BAD_RUN = RUN + """\
q2 Q0 d2 two 0.5 sysA
q3 Q0 d1 1 2.0
q3 Q0 d2 2 1.0 sysA
q4 Q0 d1 1 1.0 sysA
"""
BAD_QRELS = QRELS + """\
q3 0 d2 1
q4 0 d1 x
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trec")
    paths = {}
    for name, text in {"run": RUN, "qrels": QRELS, "bad_run": BAD_RUN, "bad_qrels": BAD_QRELS}.items():
        paths[name] = folder / f"{name}.txt"
        paths[name].write_text(text, encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}


def test_read_trec_run_splits_on_any_whitespace_and_skips_blank_and_comment_lines(spark, files):
    from ndcg_spark import read_trec_run

    df = read_trec_run(spark, files["run"])
    assert df.columns == ["request_id", "doc_id", "position", "score", "system"]
    assert dict(df.dtypes) == {"request_id": "string", "doc_id": "string", "position": "bigint",
                               "score": "double", "system": "string"}
    assert sorted(tuple(r) for r in df.collect()) == [
        ("q1", "d1", 1, 3.0, "sysA"), ("q1", "d10", 3, 2.0, "sysA"), ("q1", "d2", 2, 2.0, "sysA"),
        ("q2", "d1", 1, 1.0, "sysA"),
    ]


def test_read_trec_qrels(spark, files):
    from ndcg_spark import read_trec_qrels

    df = read_trec_qrels(spark, files["qrels"])
    assert df.columns == ["request_id", "doc_id", "grade"] and dict(df.dtypes)["grade"] == "double"
    assert sorted(tuple(r) for r in df.collect()) == [
        ("q1", "d1", 2.0), ("q1", "d2", 0.0), ("q2", "d1", 1.0), ("q2", "d7", 3.0),
    ]


def test_trec_eval_preset_on_trec_files_by_hand(spark, files):
    """q1: d1 (3.0, rel 2), then the tie at 2.0 goes to the larger doc id: "d2" > "d10", so d2
    (rel 0) is second and d10 (unjudged) third; the ideal is the qrels' [2, 0]: NDCG@3 = 1. q2: d1
    (rel 1) first; the ideal [3, 1] holds the never-retrieved d7: NDCG@1 = 1/3."""
    from ndcg_spark import Contract, read_trec_qrels, read_trec_run, score_requests

    contract = Contract.from_dict({"preset": "trec_eval", "k": [1, 2, 3]})
    out = score_requests(read_trec_run(spark, files["run"]), read_trec_qrels(spark, files["qrels"]), contract)
    got = {(r["request_id"], r["k"]): (r["ndcg"], r["n_unjudged_in_top_k"]) for r in out.collect()}
    assert got[("q1", 3)] == (pytest.approx(1.0, abs=1e-15), 1)
    assert got[("q2", 1)][0] == pytest.approx(1 / 3, abs=1e-15)
    # ties by doc id ascending would put d10 (unjudged) second: same DCG here, so check the order itself
    ascending = score_requests(read_trec_run(spark, files["run"]), read_trec_qrels(spark, files["qrels"]),
                               Contract.from_dict({"preset": "trec_eval", "k": [2], "ties": "doc_id"}))
    assert {r["request_id"]: r["n_unjudged_in_top_k"] for r in ascending.collect()}["q1"] == 1
    assert got[("q1", 2)][1] == 0


@pytest.mark.parametrize("reader, path, lines", [
    ("read_trec_run", "bad_run", {"trec_field_count": ["q3 Q0 d1 1 2.0"], "trec_not_numeric": ["q2 Q0 d2 two 0.5 sysA"]}),
    ("read_trec_qrels", "bad_qrels", {"trec_not_numeric": ["q4 0 d1 x"]}),
])
def test_the_readers_refuse_malformed_lines_naming_rule_count_and_line(spark, files, reader, path, lines):
    import ndcg_spark
    from ndcg_spark import ValidationError

    with pytest.raises(ValidationError) as caught:
        getattr(ndcg_spark, reader)(spark, files[path])
    message = str(caught.value)
    listed = [line for line in message.splitlines() if line.startswith("- ")]
    assert [line.split(":")[0][2:] for line in listed] == list(lines), message
    for rule, examples in lines.items():
        line = next(line for line in listed if line.startswith(f"- {rule}: "))
        assert line.startswith(f"- {rule}: {len(examples)} ") and f'e.g. {{"trec_line":"{examples[0]}"}}' in line, line
    assert caught.value.counts == {rule: len(examples) for rule, examples in lines.items()}


def test_keep_malformed_returns_every_line_with_its_rule(spark, files):
    from ndcg_spark import read_trec_run

    rows = read_trec_run(spark, files["bad_run"], keep_malformed=True).collect()
    assert len(rows) == 8
    assert sorted((r["trec_line"], r["trec_rule"]) for r in rows if r["trec_rule"]) == [
        ("q2 Q0 d2 two 0.5 sysA", "trec_not_numeric"), ("q3 Q0 d1 1 2.0", "trec_field_count"),
    ]


def _job(files, tmp_path, handling):
    from ndcg_spark.config.job import JobConfig

    return JobConfig.from_dict({
        "version": 1,
        "contract": {"preset": "trec_eval", "k": [1, 3]},
        "inputs": {"candidates": {"path": files["bad_run"], "format": "trec_run"},
                   "judgments": {"path": files["bad_qrels"], "format": "trec_qrels"}},
        "validation": {"default": handling, "max_quarantined_share": 1.0},
        "outputs": {"per_request": {"path": str(tmp_path / "per_request")},
                    "quarantine": {"path": str(tmp_path / "quarantine")}},
    })


def test_malformed_lines_in_the_job_fail_by_default_naming_each_rule(spark, files, tmp_path):
    from ndcg_spark import ValidationError
    from ndcg_spark.job.stages import score_stage

    with pytest.raises(ValidationError) as caught:
        score_stage(spark, _job(files, tmp_path, "error"), "r1")
    listed = [line for line in str(caught.value).splitlines() if line.startswith("- ")]
    # the malformed lines break their TREC rule only (not request_id_missing, score_invalid ...)
    assert [line.split(" (")[0] for line in listed] == [
        "- trec_field_count: 1 candidates row", "- trec_not_numeric: 1 candidates row",
        "- trec_not_numeric: 1 judgments row"]
    assert '"trec_line":"q3 Q0 d1 1 2.0"' in listed[0] and '"trec_line":"q4 0 d1 x"' in listed[2]


def test_malformed_lines_in_the_job_quarantined_and_counted(spark, files, tmp_path):
    """Candidates: 8 rows = 4 scored (q1's three, q3's good line) + 4 quarantined: q2's list (its
    bad line and the line along with it), q3's line without a tag (no tag, so no list: alone), q4's
    line (its request goes with its bad judgment). Judgments: 6 = 5 + 1 (q4's)."""
    from pyspark.sql import functions as F

    from ndcg_spark.config.job import Source
    from ndcg_spark.storage.io import read_run
    from ndcg_spark.job.stages import score_stage

    result = score_stage(spark, _job(files, tmp_path, "quarantine"), "r1")
    cands, judgs = result.accounting["candidates"], result.accounting["judgments"]
    assert (cands.rows_read, cands.rows_scored, cands.rows_quarantined) == (8, 4, 4)
    assert dict(cands.quarantined_by_rule) == {"trec_field_count": 1, "trec_not_numeric": 3}
    assert (judgs.rows_read, judgs.rows_scored, judgs.rows_quarantined) == (6, 5, 1)
    assert cands.balanced and judgs.balanced
    quarantine = read_run(spark, Source(path=str(tmp_path / "quarantine")), "r1")
    assert sorted((r["input"], r["request_id"], r["rule"]) for r in quarantine.collect()) == [
        ("candidates", "q2", "trec_not_numeric"), ("candidates", "q2", "trec_not_numeric"),
        ("candidates", "q3", "trec_field_count"), ("candidates", "q4", "trec_not_numeric"),
        ("judgments", "q4", "trec_not_numeric")]
    scored = read_run(spark, result.target, "r1").filter(F.col("k") == 3)
    assert {r["request_id"]: r["ndcg"] for r in scored.collect()} == {"q1": pytest.approx(1.0, abs=1e-15),
                                                                      "q3": pytest.approx(1.0, abs=1e-15)}


def test_the_guardrails_first_result_follows_doc_id_desc(spark):
    """Both systems tie "a" and "b" at the top; "b" is unjudged. Ties by doc id ascending show "a"
    first (judged), descending "b" (unjudged): the first_result_unjudged flag tells them apart."""
    from pyspark.sql import functions as F

    from ndcg_spark import Contract, GuardrailSpec
    from ndcg_spark.config.compare_spec import Side
    from ndcg_spark.guardrails.offline import offline_rows

    cands = spark.createDataFrame(
        [("q1", "a", s, 2.0) for s in ("x", "y")] + [("q1", "b", s, 2.0) for s in ("x", "y")],
        "request_id string, doc_id string, system string, score double")
    judgs = spark.createDataFrame([("q1", "a", 1.0)], "request_id string, doc_id string, grade double")
    per_request = cands.select("system", F.lit(None).cast("string").alias("pool_version"), "request_id").distinct()
    spec = GuardrailSpec.from_dict({"bootstrap": {"replicates": 0}, "checks": [
        {"name": "unjudged_first", "source": "offline", "flag": "first_result_unjudged", "better": "lower",
         "margin": {"absolute": 0.05}}]})
    flags = {}
    for ties in ("doc_id", "doc_id_desc"):
        rows, measures = offline_rows(per_request, cands, spec.checks, (Side("x"), Side("y")),
                                      Contract(k=[1], order="score", ties=ties), [], judgments=judgs)
        flags[ties] = {r[0] for r in rows.select(measures[0][2].column).collect()}
    assert flags == {"doc_id": {0.0}, "doc_id_desc": {1.0}}
