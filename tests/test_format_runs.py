"""Whole nights on Delta Lake and Iceberg tables, through the console script (the format lane).

- every table of a night -- the inputs (candidates, judgments, attributes, release outcomes,
  documents) and every output (per-request, aggregate, audit, run metadata, quarantine, run status,
  trend, comparison, guardrails) -- a table of the format; a re-run of a night adds commits to
  each table's history that replace that night's files and nothing else, and the documented
  reader SQL sees only published nights;
- two attempts of one night started together (real processes) against a Delta and an Iceberg
  run-status table: one publishes, the other stops with the lease's message, never a trace;
- a driver SIGKILLed during the Delta commit of the per-request table: the table stays at its
  previous version, and the re-run completes the night.

The child drivers run the console script with the format's settings in their job YAML
(``tests/lakehouse.py``): Delta tables by path and Iceberg tables of the lane session's JDBC
catalog, which every process of a test sees. Outside the lane these are skipped, saying why.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
import yaml
from pyspark.sql import functions as F

from ndcg_spark.cli import EXIT_LEASE_LOST, EXIT_OK, EXIT_RUN_IN_PROGRESS, main

try:
    from tests import faults, lakehouse
except ImportError:  # pragma: no cover - run from inside tests/
    import faults  # type: ignore[no-redef]
    import lakehouse  # type: ignore[no-redef]

pytestmark = pytest.mark.formats
lakehouse_session = lakehouse.lakehouse

OUTPUTS = ("per_request", "aggregate", "audit", "run_metadata", "quarantine", "trend", "comparison", "guardrails")
INPUTS = ("candidates", "judgments", "attributes", "release_outcomes", "documents")
#: what differs between two clean runs of a night: when and by whom it was written
NOT_COMPARED = {"created_at", "updated_at", "started_at", "ended_at", "attempt_id", "app_id", "host", "inputs"}


def _table(fmt: str, database: str, name: str, root: Path) -> dict:
    """A table of the format: Delta by path under ``root``, Iceberg in the lane's catalog."""
    if fmt == "delta":
        return {"path": str(root / "tables" / name), "format": "delta"}
    return {"table": f"{lakehouse.CATALOG}.{database}.{name}", "format": "iceberg"}


def _source(spec: dict):
    from ndcg_spark.config.job import Source

    return Source(path=spec.get("path"), table=spec.get("table"), format=spec["format"])


def _write_inputs(spark, sample_dir, fmt: str, database: str, root: Path) -> dict[str, dict]:
    """The sample's inputs as tables of the format; the candidates with one repeated row (a
    quarantined request every night)."""
    tables = {name: _table(fmt, database, f"in_{name}", root) for name in INPUTS}
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lakehouse.CATALOG}.{database}")
    for name in INPUTS:
        df = spark.read.parquet(str(Path(sample_dir.root) / name))
        if name == "candidates":
            df = df.unionByName(df.orderBy("request_id", "system", "position").limit(1))
        writer = df.writeTo(_source(tables[name]).table_name).using(fmt)
        writer.create()
    return tables


def _job(root: Path, inputs: dict[str, dict], outputs: dict[str, dict], conf: dict | None = None) -> Path:
    local = yaml.safe_load((faults.ROOT / "conf" / "local.yaml").read_text(encoding="utf-8"))
    guardrails = local["guardrails"]
    guardrails["release"]["outcomes"] = inputs["release_outcomes"]
    guardrails["documents"] = inputs["documents"]
    guardrails["bootstrap"] = {"replicates": 20, "seed": 0}
    job = {
        "version": 1,
        "contract": {"k": [3, 10]},
        "inputs": {"candidates": inputs["candidates"], "judgments": inputs["judgments"]},
        "attributes": {**inputs["attributes"], "weight": "weight", "slices": ["equipment_rarity"]},
        "outputs": {**outputs, "report_dir": str(root / "reports")},
        **({"validation": {"rules": {"doc_repeated": "quarantine", "position_repeated": "quarantine"}}}
           if "quarantine" in outputs else {}),
        "aggregate": {"bootstrap": {"replicates": 20}},
        "compare": {"baseline": "bm25", "candidate": "hybrid", "bootstrap": {"replicates": 20}, "permutations": 19},
        "guardrails": guardrails,
        "spark": {"master": "local[2]", "shuffle_partitions": 2, **({"conf": conf} if conf else {})},
    }
    path = root / "conf" / f"job-{uuid.uuid4().hex[:6]}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return path


def _rows(spark, source, run_id: str) -> list[tuple]:
    night = spark.read.table(source.table_name).filter(F.col("run_id") == run_id)
    cols = sorted(c for c in night.columns if c not in NOT_COMPARED)
    return sorted((tuple(r) for r in night.select(*cols).collect()), key=repr)


def _files(spark, source, run_id: str) -> set[str]:
    night = spark.read.table(source.table_name).filter(F.col("run_id") == run_id)
    return {r[0] for r in night.select(F.input_file_name()).distinct().collect()}


def _run(config: Path, *commands: str, run_id: str) -> None:
    for command in commands:
        assert main([command, "--config", str(config), "--run-id", run_id]) == 0, f"{command} {run_id}"


# ------------------------------------------------------------------------------- a night, replaced
def _dashboard_sql(per_request: str, run_status: str) -> str:
    """docs/operations.md's dashboard query, on the given tables instead of its views."""
    page = (faults.ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    query = next(block for block in re.findall(r"```sql\n(.*?)```", page, re.S) if "avg(p.ndcg)" in block)
    query = query.replace("FROM per_request p", f"FROM {per_request} p").replace("JOIN run_status  s", f"JOIN {run_status} s")
    return query.replace("WHERE p.run_id = '2026-11-29'", "WHERE p.run_id IN ('n1', 'n2')").rstrip().rstrip(";")


@pytest.mark.e2e
@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_every_table_of_a_night_is_the_formats_and_a_rerun_replaces_that_night_only(lakehouse_session, sample_dir,
                                                                                     tmp_path, fmt):
    from ndcg_spark.publishing.status import mark_run

    spark = lakehouse_session
    database = f"runs_{uuid.uuid4().hex[:6]}"
    inputs = _write_inputs(spark, sample_dir, fmt, database, tmp_path)
    outputs = {name: _table(fmt, database, name, tmp_path) for name in OUTPUTS}
    config = _job(tmp_path, inputs, outputs)
    for night in ("n1", "n2"):
        _run(config, "run", "compare", run_id=night)
    tables = {name: _source(spec) for name, spec in outputs.items()}
    tables["run_status"] = _source(_table(fmt, database, "run_status", tmp_path))  # beside per_request, its format
    assert lakehouse.provider(spark, tables["run_status"]) == fmt
    before = {name: (lakehouse.commits(spark, t), _rows(spark, t, "n1"), _files(spark, t, "n1"),
                     _rows(spark, t, "n2"), _files(spark, t, "n2")) for name, t in tables.items()}
    assert all(before[name][1] and before[name][3] for name in tables), "every table has both nights"

    _run(config, "run", "compare", run_id="n2")  # the night again

    for name, table in tables.items():
        commits, n1_rows, n1_files, n2_rows, n2_files = before[name]
        after = lakehouse.commits(spark, table)
        assert after[:len(commits)] == commits, f"{name}: its history was rewritten"
        added = after[len(commits):]
        # one commit per write: running and complete on the status table, one for every other table
        assert len(added) == (2 if name == "run_status" else 1), (name, added)
        assert _rows(spark, table, "n1") == n1_rows and _files(spark, table, "n1") == n1_files, name
        assert _rows(spark, table, "n2") == n2_rows, name  # the same night, the same rows
        assert not (_files(spark, table, "n2") & n2_files), f"{name}: night n2 was not rewritten"
        removed = lakehouse.replaced(spark, added[-1], table)["removed_files"]
        assert removed == len(n2_files), (name, removed, len(n2_files))  # n2's files, not one more

    query = _dashboard_sql(lakehouse.quoted(tables["per_request"]), lakehouse.quoted(tables["run_status"]))
    assert {r.run_id for r in spark.sql(query).collect()} == {"n1", "n2"}
    mark_run(spark, tables["run_status"], "n2", "running")  # a re-run of n2 under way: hidden
    assert {r.run_id for r in spark.sql(query).collect()} == {"n1"}
    mark_run(spark, tables["run_status"], "n2", "complete")
    assert {r.run_id for r in spark.sql(query).collect()} == {"n1", "n2"}


# ------------------------------------------------------------------------- two attempts, one night
def _held(root: Path, name: str, config: Path, run_id: str) -> tuple[list[str], Path, Path]:
    folder = root / name
    folder.mkdir()
    marker = folder / "holding"
    cmd = faults.stalled_cli(folder, "hold", marker, "ndcg_spark.job.run:score_stage",
                             "score", "--config", str(config), "--run-id", run_id)
    return cmd, marker, folder / "driver.log"


def _two_attempts_together(root: Path, config: Path, run_id: str, trial: int) -> tuple[int, list[str]]:
    """Two ``score`` attempts of ``run_id`` started at the same instant; the one that holds the run
    (reaches stage 1) is let go. Returns the winner's index and both logs."""
    attempts = [_held(root, f"trial{trial}-{name}", config, run_id) for name in ("a", "b")]
    procs = []
    try:
        for cmd, _, log in attempts:
            procs.append(faults.spawn(cmd, log, env=faults.env(), cwd=root))

        def one_holds_one_stopped():
            held = [marker.exists() for _, marker, _ in attempts]
            ended = [p.poll() is not None for p in procs]
            return all(held) or all(ended) or (any(held) and any(ended))

        faults.wait_for(one_holds_one_stopped, 400, "one attempt to hold the run and the other to stop")
        held = [marker.exists() for _, marker, _ in attempts]
        assert sum(held) == 1, f"held: {held}; logs: {[log.read_text()[-2000:] for _, _, log in attempts]}"
        winner = held.index(True)
        attempts[winner][1].with_suffix(".release").write_text("go")
        for p in procs:
            p.wait(timeout=400)
    finally:
        for p in procs:
            faults.stop(p)
    logs = [log.read_text() for _, _, log in attempts]
    # the loser: refused while the winner holds the run (75), or stopped on losing it (3) -- never a failure
    assert procs[winner].returncode == EXIT_OK, logs
    assert procs[1 - winner].returncode in (EXIT_LEASE_LOST, EXIT_RUN_IN_PROGRESS), logs
    return winner, logs


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_two_attempts_started_together_publish_the_night_once(lakehouse_session, sample_dir, tmp_path, fmt):
    """The first night (the run-status table created by whichever attempt commits first), then the
    same night again (its row replaced): each time one attempt publishes and the other stops with
    the lease's message, having written no data."""
    spark = lakehouse_session
    database = f"race_{uuid.uuid4().hex[:6]}"
    inputs = {name: {"path": str(Path(sample_dir.root) / name)} for name in INPUTS}
    outputs = {"per_request": _table(fmt, database, "per_request", tmp_path)}
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lakehouse.CATALOG}.{database}")
    config = _job(tmp_path, inputs, outputs, conf=lakehouse.settings(lakehouse.warehouse_of(spark)))
    status = _source(_table(fmt, database, "run_status", tmp_path))
    per_request = _source(outputs["per_request"])
    for number, trial in enumerate(("first night", "the night again")):
        winner, logs = _two_attempts_together(tmp_path, config, "n1", number)
        loser = logs[1 - winner]
        said = re.search(r"another attempt is running it: attempt \w+|no longer holds the run|another attempt "
                         r"committed to the run-status table", loser)
        assert said, f"{trial}: {loser[-3000:]}"
        assert "Traceback" not in loser and "\tat org." not in loser and "Check the input" not in loser, loser[-3000:]
        published_by = re.search(r"published by attempt (\w+)", logs[winner]).group(1)
        row = spark.read.table(status.table_name).filter("run_id = 'n1'").collect()
        assert [(r.status, r.attempt_id) for r in row] == [("complete", published_by)], trial
        print(f"{fmt}, {trial}: attempt {'ab'[winner]} published; the other said: {said.group(0)}")
        faults.assert_no_duplicates(spark.read.table(per_request.table_name))
        assert spark.read.table(per_request.table_name).count() == sample_dir.n_requests * 2 * 2


# ------------------------------------------------------------------- a driver killed mid-commit
@pytest.mark.slow
def test_a_driver_killed_during_the_delta_commit_leaves_the_previous_version(lakehouse_session, sample_dir, tmp_path,
                                                                              capsys):
    spark = lakehouse_session
    inputs = {name: {"path": str(Path(sample_dir.root) / name)} for name in INPUTS}
    outputs = {name: _table("delta", "unused", name, tmp_path) for name in ("per_request", "aggregate", "run_metadata")}
    config = _job(tmp_path, inputs, outputs)
    for night in ("n1", "n2"):
        _run(config, "run", run_id=night)
    per_request = _source(outputs["per_request"])
    status = _source(_table("delta", "unused", "run_status", tmp_path))
    before = lakehouse.commits(spark, per_request)
    rows = {night: _rows(spark, per_request, night) for night in ("n1", "n2")}

    stalled = _job(tmp_path, inputs, outputs, conf={**lakehouse.settings(lakehouse.warehouse_of(spark)),
                                                    **lakehouse.stalling_log_store(tmp_path / "log_store")})
    marker, log = tmp_path / "committing", tmp_path / "driver.log"
    env = faults.env(NDCG_STALL_DELTA_COMMIT="per_request", NDCG_STALL_MARKER=str(marker))
    proc = faults.spawn([*faults.CLI, "score", "--config", str(stalled), "--run-id", "n2"], log, env=env, cwd=tmp_path)
    try:
        faults.wait_for(lambda: marker.exists() or proc.poll() is not None, 400, "the Delta commit of per_request")
        assert proc.poll() is None, log.read_text()[-3000:]
        version = int(re.search(r"_delta_log/(\d{20})\.json", marker.read_text()).group(1))
        assert version == before[-1]["version"] + 1  # the next version, being committed
        faults.kill_driver(proc)
    finally:
        faults.stop(proc)

    assert lakehouse.commits(spark, per_request) == before  # still the previous version
    assert not (Path(outputs["per_request"]["path"]) / "_delta_log" / f"{version:020d}.json").exists()
    assert {night: _rows(spark, per_request, night) for night in ("n1", "n2")} == rows  # the data, as it was
    dead = spark.read.table(status.table_name).filter("run_id = 'n2'").first()
    assert dead.status == "running"  # the documented reader hides n2 until an attempt completes it
    capsys.readouterr()
    assert main(["run", "--config", str(config), "--run-id", "n2", "--take-over"]) == 0
    after = lakehouse.commits(spark, per_request)
    assert after[:len(before)] == before and len(after) == len(before) + 1
    assert _rows(spark, per_request, "n2") == rows["n2"] and _rows(spark, per_request, "n1") == rows["n1"]
    assert spark.read.table(status.table_name).filter("run_id = 'n2'").first().status == "complete"
