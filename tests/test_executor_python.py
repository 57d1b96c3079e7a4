"""The nodes' Python: what docs/operations.md and docs/deploy.md say it needs, and what happens without.

Both pages carry one statement (:data:`NODES`): a Python 3.11+ *with numpy, pyarrow and pandas*,
because the bootstrap and sign-flip replicates run in the executors' Python workers. The standalone
cluster test runs its executors with this virtualenv's interpreter, so it cannot tell; here a run's
executors get a bare Python (a virtualenv of the same interpreter with nothing installed) and the
night must stop at its first resampling with the documented one-paragraph message naming the
missing module -- not a Python traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the statement both pages make, word for word
NODES = ("The nodes need a Python 3.11+ with numpy, pyarrow and pandas (<3), pyspark's `sql` extra: "
         "the bootstrap and sign-flip replicates run in the executors' Python workers.")


def test_both_pages_make_the_same_statement_about_the_nodes():
    for page in ("operations.md", "deploy.md"):
        text = " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())
        assert NODES in text, f"docs/{page} lacks the statement about the nodes"
        assert "nothing else is installed" not in text


@pytest.mark.slow  # a second driver JVM
@pytest.mark.e2e
def test_an_executor_python_without_numpy_stops_the_night_naming_the_missing_module(sample_dir, tmp_path):
    bare = tmp_path / "bare-python"
    venv.EnvBuilder(with_pip=False).create(bare)  # the same interpreter, no package at all
    probe = subprocess.run([str(bare / "bin" / "python"), "-c", "import numpy"], capture_output=True, text=True)
    assert probe.returncode != 0, "the bare virtualenv has numpy: the test would prove nothing"
    config = tmp_path / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(textwrap.dedent(f"""
        version: 1
        contract: {{k: [3]}}
        inputs:
          candidates: {{path: {sample_dir['candidates']}}}
          judgments: {{path: {sample_dir['judgments']}}}
        outputs:
          per_request: {{path: out/per_request}}
          aggregate: {{path: out/aggregate}}
          run_metadata: {{path: out/run_metadata}}
        aggregate: {{bootstrap: {{replicates: 50}}}}
        spark: {{master: "local[1]", shuffle_partitions: 1}}
        """))
    # the executors' Python is the bare one (spark-submit's spark.pyspark.python sets the same
    # variable); they find the package as a cluster's would (the --py-files zip): on their path
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": str(bare / "bin" / "python")}
    done = subprocess.run([sys.executable, "-m", "ndcg_spark.cli", "run", "--config", str(config), "--run-id", "bare"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode != 0
    # the console script's own last words (above them Spark's log may print the task's failure)
    failed, message = done.stderr.strip().splitlines()[-2:]
    assert failed == "ndcg-spark run: failed.", done.stderr[-3000:]
    assert message.startswith("the Python workers of this Spark application cannot import 'numpy': the executors' "
                              "Python needs ndcg_spark itself and numpy, pyarrow and pandas"), message
    assert "docs/deploy.md" in message and "Check the input tables" not in message
    assert done.returncode == 2  # the nodes' set-up: a retry fails the same way


@pytest.mark.slow  # a second driver JVM
@pytest.mark.e2e
def test_in_a_plain_python_session_workers_without_the_package_are_one_paragraph_at_aggregate(sample_dir, tmp_path):
    """The library, not the console script: the workers' Python has numpy, pyarrow and pandas but
    not ndcg_spark (the driver finds it on its own sys.path only): ``aggregate`` with the default
    bootstrap raises the paragraph itself, before any action."""
    import sysconfig

    workers = tmp_path / "workers-python"
    venv.EnvBuilder(with_pip=False).create(workers)
    site = subprocess.check_output([str(workers / "bin" / "python"), "-c",
                                    "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip()
    # the suite's packages, without its editable ndcg_spark (a .pth file a .pth file adds is not read)
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    probe = subprocess.run([str(workers / "bin" / "python"), "-c", "import numpy, pyarrow; import ndcg_spark"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert "No module named 'ndcg_spark'" in probe.stderr, probe.stderr
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from pyspark.sql import SparkSession
        import ndcg_spark
        from ndcg_spark.errors import ExecutorEnvironmentError
        spark = SparkSession.builder.master("local[1]").getOrCreate()
        rows = ndcg_spark.score_requests(spark.read.parquet({sample_dir['candidates']!r}).limit(200),
                                         spark.read.parquet({sample_dir['judgments']!r}), ndcg_spark.Contract(k=[3]))
        try:
            ndcg_spark.aggregate(rows)
        except ExecutorEnvironmentError as exc:
            print("PARAGRAPH", exc)
        """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = str(workers / "bin" / "python")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    said = [line for line in done.stdout.splitlines() if line.startswith("PARAGRAPH ")]
    assert said, done.stderr[-3000:]
    assert said[0].startswith("PARAGRAPH the Python workers of this Spark application cannot import 'ndcg_spark': "
                              "the executors' Python needs ndcg_spark itself"), said
    assert "Traceback" not in done.stdout
