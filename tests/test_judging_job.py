"""``ndcg-spark judge-next`` end to end on the shared sample's published night: the plan table, the
judges' files, the report's section, a re-run, and the refusals that name the setting to fix.

What the plan says is checked against the raw inputs, not against the plan: a planned document is
unjudged in the judgments files, each system listed as showing it shows it there at that rank, the
CSV's attribute cells are the attributes file's, and the filled qrels template reads back as the
grades written into it. The shell's ``judge_next`` on the same inputs gives the same rows (the
command is wiring: ``tests/test_judging.py`` checks the numbers against the oracle).
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import shutil

import pytest
import yaml
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from ndcg_spark import Attributes, Contract, JudgingSpec, judge_next
from ndcg_spark.cli import main
from ndcg_spark.errors import InputError
from ndcg_spark.formats.trec import read_trec_qrels
from ndcg_spark.judging.files import CSV_COLUMNS

pytestmark = pytest.mark.e2e

BUDGET = 40
SLICES = ("equipment_rarity", "permission_group")


@pytest.fixture(scope="module")
def job(spark, sample_run, tmp_path_factory):
    """A copy of the shared sample's published night (its tables and report) and its job YAML with
    the judging scale, the plan's outputs and a ``judging:`` section of a comparison."""
    root = tmp_path_factory.mktemp("judging_job")
    shutil.copytree(sample_run.root / "out", root / "out")
    data = yaml.safe_load(sample_run.config.read_text(encoding="utf-8"))
    data["contract"]["max_grade"] = 3
    data["outputs"].update({"judging_plan": {"path": "out/judging_plan"}, "judging_dir": "out/judging"})
    data["judging"] = {"target": "compare", "budget": 1000}
    config = root / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    return root, config, data, sample_run.run_id


def _judge_next(config, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["judge-next", "--config", str(config), *args])
    return status, out.getvalue(), err.getvalue()


def _plan(spark, root, run_id):
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(root / "out" / "judging_plan"))
            .filter(F.col("run_id") == run_id).orderBy("plan_rank").collect()]


def _inputs(spark, data):
    return (spark.read.parquet(data["inputs"]["candidates"]["path"]), spark.read.parquet(data["inputs"]["judgments"]["path"]),
            spark.read.parquet(data["attributes"]["path"]))


def test_the_command_writes_the_plan_the_judges_files_and_the_report(spark, job):
    root, config, data, run_id = job
    status, out, err = _judge_next(config, "--run-id", run_id, "--budget", str(BUDGET))
    assert status == 0, err[-3000:]
    plan = _plan(spark, root, run_id)
    assert [r["plan_rank"] for r in plan] == list(range(1, BUDGET + 1))
    assert len({(r["request_id"], r["doc_id"]) for r in plan}) == BUDGET  # one judgment per document
    assert {(r["target"], tuple(r["systems"]), r["k"], r["mean"]) for r in plan} == {("compare", ("hybrid", "bm25"), 10,
                                                                                      "macro")}
    for request in {r["request_id"] for r in plan}:  # a request's documents in swing order (ties: doc id)
        mine = [(-r["swing"], r["doc_id"]) for r in plan if r["request_id"] == request]
        assert mine == sorted(mine)
    remaining = [r["spread_remaining"] for r in plan]
    assert plan[0]["spread_now"] > 0 and all(0 <= v for v in remaining) and remaining[-1] < plan[0]["spread_now"]
    assert all(a >= b for a, b in itertools.pairwise([plan[0]["spread_now"], *remaining]))  # judging only narrows it

    # against the raw inputs: unjudged there, shown by exactly the systems listed, at those ranks
    candidates, judgments, attributes = _inputs(spark, data)
    keys = spark.createDataFrame([(r["request_id"], r["doc_id"]) for r in plan], "request_id string, doc_id string")
    judged = judgments.filter(F.col("grade").isNotNull()).join(keys, ["request_id", "doc_id"]).count()
    assert judged == 0
    ranked = candidates.withColumn("rank", F.row_number().over(
        Window.partitionBy("request_id", "system").orderBy("position", "doc_id")))
    shown = {}
    for r in ranked.join(keys, ["request_id", "doc_id"]).collect():
        shown.setdefault((r.request_id, r.doc_id), set()).add((r.system, r.rank))
    for r in plan:
        assert {(s["system"], s["rank"]) for s in r["shown_by"]} == shown.get((r["request_id"], r["doc_id"]), set())

    # the shell function on the same inputs gives the same rows
    contract = Contract.from_dict(data["contract"])
    attrs = Attributes(table=attributes, weight="weight", slices=SLICES)
    shell = judge_next(candidates, judgments, contract, JudgingSpec(target="compare", budget=BUDGET), attributes=attrs,
                       baseline="bm25", candidate="hybrid", run_id=run_id).orderBy("plan_rank").collect()
    assert [r.asDict(recursive=True) for r in shell] == plan

    # the judges' files: the qrels template in plan order, read back once filled
    folder = root / "out" / "judging" / run_id
    template = (folder / "qrels-template.txt").read_text(encoding="utf-8")
    lines = [line for line in template.splitlines() if not line.startswith("#")]
    assert lines == [f"{r['request_id']} 0 {r['doc_id']} ?" for r in plan]
    assert "(0, 1, 2, 3)" in template and "the macro delta hybrid - bm25 of NDCG@10" in template
    grades = {(r["request_id"], r["doc_id"]): float(i % 4) for i, r in enumerate(plan)}
    filled = folder / "filled.txt"
    filled.write_text("\n".join(f"{q} 0 {d} {int(grades[(q, d)])}" for q, d in grades) + "\n", encoding="utf-8")
    back = {(r.request_id, r.doc_id): r.grade for r in read_trec_qrels(spark, str(filled)).collect()}
    assert back == grades
    with pytest.raises(InputError, match="trec_not_numeric"):
        read_trec_qrels(spark, str(folder / "qrels-template.txt")).collect()

    # the CSV: the plan's columns, an empty grade, the request's attribute cells from the attributes file
    rows = list(csv.DictReader((folder / "to-judge.csv").read_text(encoding="utf-8").splitlines()))
    by_request = {r.request_id: r.asDict() for r in attributes.collect()}
    assert list(rows[0])[:len(CSV_COLUMNS)] == list(CSV_COLUMNS)
    assert set(list(rows[0])[len(CSV_COLUMNS):]) == set(attributes.columns) - {"request_id"}
    for written, r in zip(rows, plan, strict=True):
        assert (written["request_id"], written["doc_id"], written["grade"]) == (r["request_id"], r["doc_id"], "")
        assert float(written["swing"]) == r["swing"]
        for column in set(attributes.columns) - {"request_id"}:
            value = by_request[r["request_id"]][column]
            assert written[column] == ("" if value is None else str(value))

    # the summary and the report's section
    assert f"judging plan {BUDGET} documents -> parquet" in out
    assert "unjudged spread of the macro delta hybrid - bm25 of NDCG@10" in out and "leaves at most" in out
    page = (root / "out" / "reports" / run_id / "report.html").read_text(encoding="utf-8")
    assert "<h2 id='judging'>What to judge next</h2>" in page and "<a href='#judging'>" in page
    assert f'<td class="l">{plan[0]["doc_id"]}</td>' in page


def test_a_rerun_replaces_only_its_own_run(spark, job):
    root, config, _, run_id = job
    before = len(_plan(spark, root, run_id))
    for budget in (7, 4):
        status, _, err = _judge_next(config, "--run-id", "night-2", "--budget", str(budget), "--target", "aggregate",
                                     "--k", "3")
        assert status == 0, err[-3000:]
        plan = _plan(spark, root, "night-2")
        assert len(plan) == budget
        assert {(r["target"], tuple(r["systems"]), r["k"]) for r in plan} == {("aggregate", ("hybrid",), 3)}
    assert len(_plan(spark, root, run_id)) == before  # the other run's plan is untouched


@pytest.mark.parametrize("change, args, named", [
    (lambda d: d["contract"].pop("max_grade"), [], "contract.max_grade"),
    (lambda d: d["outputs"].pop("judging_plan"), [], "outputs.judging_plan"),
    (lambda d: d.pop("compare"), ["--target", "compare"], "compare"),
    (lambda d: None, ["--k", "5"], "judging.k: must be one of the contract's cutoffs [3, 10], got 5"),
    (lambda d: None, ["--budget", "0"], "judging.budget: must be an integer >= 1, got 0"),
])
def test_a_plan_it_cannot_make_is_refused_naming_the_setting(job, tmp_path, change, args, named):
    _, _, data, run_id = job
    data = yaml.safe_load(yaml.safe_dump(data))
    change(data)
    config = tmp_path / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    status, out, err = _judge_next(config, "--run-id", run_id, *args)
    # the one paragraph, after nothing but the version-1 file's warning about its relative paths
    before, failed, _ = err.partition("ndcg-spark judge-next: failed.\n")
    assert status == 2 and failed and (not before or "version 1 resolves a relative path" in before), err
    assert named in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing written
