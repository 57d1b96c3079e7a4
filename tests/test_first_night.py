"""A new user's first night: where a job YAML's relative paths start, and a mistyped input path
refused before Spark starts (issue 58). No Spark session here but the console script's."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from ndcg_spark import JobConfig
from ndcg_spark.errors import ContractError

CLI = [sys.executable, "-c", "import sys; from ndcg_spark.cli import main; sys.exit(main(sys.argv[1:]))"]

TREC_JOB = """\
version: {version}
contract: {{preset: trec_eval, k: [5, 10]}}
inputs:
  candidates: {{path: results.test, format: trec_run}}
  judgments: {{path: qrels.test, format: trec_qrels}}
outputs:
  per_request: {{path: {per_request}}}
"""


def _job(folder: Path, version: int, per_request: str = "warehouse/per_request") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "eval.yaml"
    path.write_text(TREC_JOB.format(version=version, per_request=per_request), encoding="utf-8")
    return path


def test_a_relative_path_resolves_against_the_yamls_own_folder(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ndcg_spark"):
        config = JobConfig.from_yaml(_job(tmp_path, version=2))
    assert config.candidates.path == str(tmp_path / "results.test")
    assert config.judgments.path == str(tmp_path / "qrels.test")
    assert config.per_request.path == str(tmp_path / "warehouse" / "per_request")
    assert config.output_folder("report_dir") == tmp_path / "reports"
    assert not caplog.records


def test_a_version_1_file_reads_as_before_and_says_how_to_move(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ndcg_spark"):
        config = JobConfig.from_yaml(_job(tmp_path / "conf", version=1))
    assert config.candidates.path == str(tmp_path / "results.test")  # the folder's parent
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "version 1 resolves a relative path against the YAML's folder's parent" in warning
    assert f"({tmp_path})" in warning and "set `version: 2` and put `../` before each relative path" in warning
    assert "inputs.candidates.path, inputs.judgments.path, outputs.per_request.path" in warning
    # moved as the warning says: the same tables
    moved = (tmp_path / "conf" / "eval.yaml").read_text(encoding="utf-8").replace("version: 1", "version: 2")
    moved = moved.replace("path: ", "path: ../")
    (tmp_path / "conf" / "eval.yaml").write_text(moved, encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ndcg_spark"):
        again = JobConfig.from_yaml(tmp_path / "conf" / "eval.yaml")
    assert (again.candidates, again.judgments, again.per_request) == (config.candidates, config.judgments,
                                                                      config.per_request)
    assert not caplog.records


def test_a_version_1_file_without_relative_paths_says_nothing(tmp_path, caplog):
    path = _job(tmp_path, version=1, per_request=str(tmp_path / "out"))
    path.write_text(path.read_text(encoding="utf-8").replace("path: results.test", f"path: {tmp_path}/r")
                    .replace("path: qrels.test", f"path: {tmp_path}/q"), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ndcg_spark"):
        JobConfig.from_yaml(path)
    assert not caplog.records


@pytest.mark.parametrize("version", [0, 3, "'2'", "true"])
def test_an_unknown_version_is_refused_naming_the_ones_read(tmp_path, version):
    path = tmp_path / "eval.yaml"
    path.write_text(TREC_JOB.format(version=version, per_request="w"), encoding="utf-8")
    with pytest.raises(ContractError, match=r"^version: must be 2 \(the config file format; 1 is still read\)"):
        JobConfig.from_yaml(path)


def test_a_missing_input_is_refused_before_spark_starts_with_the_rule_and_the_path(tmp_path):
    path = _job(tmp_path, version=2)
    (tmp_path / "qrels.test").write_text("q1 0 d1 1\n", encoding="utf-8")  # results.test is missing
    done = subprocess.run([*CLI, "run", "--config", str(path), "--run-id", "r1"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert (f"inputs.candidates.path: no such file or folder: {tmp_path / 'results.test'} (a relative path "
            f"resolves against the YAML's own folder, {tmp_path})") in done.stderr
    assert "log4j" not in done.stderr and "SparkContext" not in done.stderr  # no JVM was started


# ------------------------------------------------------------------ messages that lead to the fix
def _frames(spark, candidates, judgments, candidate_schema="request_id string, doc_id string, position int"):
    return (spark.createDataFrame(candidates, candidate_schema),
            spark.createDataFrame(judgments, "request_id string, doc_id string, grade double"))


def test_a_negative_grade_names_the_contract_choice_trec_eval_users_need(spark):
    from ndcg_spark import Contract, ValidationSpec, validate_inputs
    from ndcg_spark.errors import ValidationError

    cands, judged = _frames(spark, [("q1", "a", 1), ("q1", "b", 2)], [("q1", "a", 1.0), ("q1", "b", -1.0)])
    with pytest.raises(ValidationError) as refused:
        validate_inputs(cands, judged, Contract(k=[2]), ValidationSpec())
    said = str(refused.value)
    assert "- grade_negative: 1 judgments row (grade < 0), e.g. " in said
    assert "declare contract.negative_grades: zero (as the trec_eval preset does)" in said
    assert "validation.rules.grade_negative: quarantine" not in said  # a quarantine loses the judged rows
    # the fix it names works: judged, gain 0, counted
    validated = validate_inputs(cands, judged, Contract(k=[2], negative_grades="zero"), ValidationSpec())
    assert validated.judgments.count() == 2


def test_a_share_above_the_maximum_never_prints_a_placeholder(spark):
    from ndcg_spark import Contract, ValidationSpec, validate_inputs
    from ndcg_spark.errors import ValidationError

    cands, judged = _frames(spark, [("q1", "a", 1), ("q1", "b", 2)], [("q1", "a", 1.0), ("q1", "b", -1.0)])
    spec = ValidationSpec.from_dict({"rules": {"grade_negative": "quarantine"}, "max_quarantined_share": 0.1})
    with pytest.raises(ValidationError) as refused:
        validate_inputs(cands, judged, Contract(k=[2]), spec)
    said = str(refused.value)
    assert "would be quarantined, above validation.max_quarantined_share = 10.0% (by rule: grade_negative" in said
    assert "None" not in said and "contract.negative_grades: zero" in said


def test_a_rank_column_without_position_or_score_is_named_as_the_position(spark):
    from ndcg_spark import Contract, ValidationSpec, validate_inputs
    from ndcg_spark.errors import ValidationError

    cands, judged = _frames(spark, [("q1", "a", 1), ("q1", "b", 2)], [("q1", "a", 1.0)],
                            "request_id string, doc_id string, rank int")
    with pytest.raises(ValidationError) as refused:
        validate_inputs(cands, judged, Contract(k=[2]), ValidationSpec())
    said = str(refused.value)
    assert "missing column 'score'" in said and "nor is there a column 'position'" in said
    assert "(e.g. 'rank' here) is declared with contract.columns.position: <its name>" in said
    renamed = Contract.from_dict({"k": [2], "columns": {"position": "rank"}})
    assert validate_inputs(cands, judged, renamed, ValidationSpec()).candidates.count() == 2


def test_quick_lowers_the_replicates_the_yaml_declares_and_nothing_else():
    import yaml

    from ndcg_spark.job.demo import QUICK_REPLICATES, quick, starter_text

    shipped = yaml.safe_load(starter_text("local.yaml"))
    fast = quick(shipped)
    assert shipped["aggregate"]["bootstrap"]["replicates"] == 1000  # the document itself is left alone
    assert fast["aggregate"]["bootstrap"]["replicates"] == fast["compare"]["bootstrap"]["replicates"] == QUICK_REPLICATES
    assert fast["guardrails"]["bootstrap"]["replicates"] == fast["compare"]["permutations"] == QUICK_REPLICATES
    for section in ("aggregate", "compare", "guardrails"):
        shipped[section].get("bootstrap", {}).pop("replicates", None)
        fast[section].get("bootstrap", {}).pop("replicates", None)
        shipped[section].pop("permutations", None)
        fast[section].pop("permutations", None)
    assert fast == shipped
