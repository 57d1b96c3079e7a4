"""The same inputs give the same per-request rows on every supported pyspark (3.5 to 4.x).

The check runs in the older-pyspark lanes (``bash dev.sh test-on VERSION``, which CI runs for the
oldest supported 3.5.x; 4.0.x on demand): the rows are computed in this session and, by this file run as
a script, by the newest pyspark's own virtualenv (``NDCG_REFERENCE_PYTHON``); every column of every
row must be the same bits. On the newest pyspark itself there is nothing to compare, so the test
says so and skips.

Also: the package declares a pyspark range, never a pin, so installing it keeps a cluster's own
pyspark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REFERENCE = os.environ.get("NDCG_REFERENCE_PYTHON")

#: contracts over both stage-1 plans, the large-request cut and every policy branch
CONTRACTS = [
    ({"k": [1, 3, 5, 10]}, {}),  # position order: the dense-position plan
    ({"k": [2, 10], "order": "score", "ties": "average", "ideal_from": "judgments", "unjudged": "exclude",
      "empty_ideal": "zero", "gain": {"table": {0: 0, 0.5: 0.25, 1: 1, 1.5: 2, 2: 3, 2.5: 4.5, 3: 7.5}}}, {}),
    ({"k": [3, 5], "order": "score", "ties": "doc_id", "gain": "linear", "unjudged": "zero"}, {"large_request": 20}),
    ({"k": [10], "order": "position", "unjudged": "separate"}, {"dense_plan": False}),
]


def per_request_rows(spark) -> list[list]:
    """Every contract's per-request rows of the oracle tests' generated data, as plain values
    (floats as their exact hex form), in a fixed order."""
    from test_oracle_agreement import generate

    from ndcg_spark import Contract, score_requests

    cands, judgments = generate(n_requests=300)
    c_df = spark.createDataFrame(cands, "request_id string, system string, doc_id string, position int, score double")
    j_df = spark.createDataFrame(judgments, "request_id string, doc_id string, grade double")
    rows = []
    for i, (contract, options) in enumerate(CONTRACTS):
        scored = score_requests(c_df, j_df, Contract.from_dict(contract), **options).drop("run_id")
        for row in scored.collect():
            rows.append([i, *[v.hex() if isinstance(v, float) else v for v in row]])
    return sorted(rows, key=lambda r: [str(v) for v in r])


def test_the_package_declares_a_pyspark_range_not_a_pin():
    (pyspark,) = [r for r in requires("ndcg-spark") if r.startswith("pyspark") and "extra ==" not in r]
    assert "==" not in pyspark and ">=3.5" in pyspark and "<5" in pyspark, pyspark


@pytest.mark.slow  # builds the wheel (pip, an isolated build environment)
def test_the_wheel_ships_py_typed_and_requires_the_range(tmp_path):
    import zipfile

    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path),
                           str(HERE.parent)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("ndcg_spark-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [line for line in zf.read(metadata).decode().splitlines()
                    if line.startswith("Requires-Dist: ") and "extra ==" not in line]
    assert "ndcg_spark/py.typed" in names
    # a range, with pyspark's sql extra (numpy, pyarrow, pandas at its own versions: the replicates)
    assert [line for line in requires if "pyspark" in line] == ["Requires-Dist: pyspark[sql]<5,>=3.5"], requires
    assert "Requires-Dist: pandas<3" in requires, requires


def test_per_request_rows_are_the_same_bits_as_on_the_newest_pyspark(spark, tmp_path):
    import pyspark

    if not REFERENCE:
        pytest.skip("this is the newest pyspark's lane: the older lanes (bash dev.sh test-on VERSION) compare with it")
    out = tmp_path / "reference.json"
    proc = subprocess.run([REFERENCE, str(Path(__file__)), str(out)], cwd=HERE.parent, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    reference = json.loads(out.read_text())
    assert reference["pyspark"] != pyspark.__version__, "the reference must be another pyspark"
    here = json.loads(json.dumps(per_request_rows(spark)))  # the same JSON round trip as the reference's
    assert len(here) == len(reference["rows"]) > 1000
    differing = [(a, b) for a, b in zip(here, reference["rows"]) if a != b]
    assert not differing, f"{len(differing)} rows differ from pyspark {reference['pyspark']}'s, e.g. {differing[0]}"


if __name__ == "__main__":  # the reference side: python tests/test_versions.py OUT.json
    import pyspark

    sys.path.insert(0, str(HERE.parent))
    from ndcg_spark.job.session import build_session

    session = build_session(master="local[2]", app_name="ndcg-spark-version-rows", shuffle_partitions=2)
    Path(sys.argv[1]).write_text(json.dumps({"pyspark": pyspark.__version__, "rows": per_request_rows(session)}))
    session.stop()
