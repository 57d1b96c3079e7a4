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
    assert config.output_folder("report_dir", "reports") == tmp_path / "reports"
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
