"""Operable on a shared cluster: tagged jobs, progress lines, Spark-native output maintenance.

docs/operations.md, "Spark Connect, tags and logs": every Spark job of a run carries
``ndcg-spark:<run_id>`` and ``ndcg-spark:<run_id>:<step>``; the console script prints one line
per step with its time (stderr); outputs are kept with the DataFrame reader/writer, the catalog
and parameterized SQL only (what a Connect session has too). The same checks over Spark Connect
are in tests/test_connect.py.
"""

from __future__ import annotations

import gc
import logging
import re
import textwrap

import pytest

from ndcg_spark.errors import ContractError
from ndcg_spark.frames import ADAPTIVE_EXECUTION as ADAPTIVE
from ndcg_spark.frames import ADVISORY_PARTITION_SIZE as ADVISORY
from ndcg_spark.frames import SHUFFLE_PARTITIONS
from ndcg_spark.config.job import Source
from ndcg_spark.storage.io import clear_run, read_run, read_written, write_run_partitioned


def current_tags(spark) -> set[str]:
    """The tags set now: the session's (pyspark 4.x), or on classic pyspark 3.5 (where
    ``SparkSession.getTags`` is Spark Connect only) the SparkContext's job tags."""
    try:
        return set(spark.getTags())
    except RuntimeError:
        return set(spark.sparkContext.getJobTags())


def _carries(job_tags: set[str], tag: str) -> bool:
    """Spark 4 prefixes a session's tags with the session and thread
    (``spark-session-<id>-thread-<id>-<tag>``); 3.5's SparkContext job tags stand as they are."""
    return any(t == tag or t.endswith("-" + tag) for t in job_tags)


def test_every_job_of_a_step_carries_the_run_and_step_tags(spark):
    from ndcg_spark.publishing.steps import step

    with step(spark, "t1", "score"):
        inside = current_tags(spark)
        spark.range(5).count()
    assert inside >= {"ndcg-spark:t1", "ndcg-spark:t1:score"}
    assert not {t for t in current_tags(spark) if t.startswith("ndcg-spark:t1")}
    # the jobs themselves, as the UI and a listener see them
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    tags = [set(jobs.apply(i).jobTags().mkString("\n").splitlines()) for i in range(jobs.size())]
    tagged = [t for t in tags if _carries(t, "ndcg-spark:t1:score")]
    assert tagged and all(_carries(t, "ndcg-spark:t1") for t in tagged)


def test_a_step_says_when_it_starts_while_it_runs_and_when_it_ends(spark, monkeypatch, caplog):
    """A step logs its start, a line every PROGRESS_EVERY seconds while it runs (here 0.5 s) naming
    the Spark stage and its tasks done, and its end: a long step is never silent."""
    import logging
    import time

    from pyspark.sql import functions as F

    from ndcg_spark.publishing import steps

    monkeypatch.setattr(steps, "PROGRESS_EVERY", 0.5)
    slow = F.udf(lambda x: (time.sleep(0.5), x)[1], "long")
    with caplog.at_level(logging.INFO, logger="ndcg_spark.publishing.steps"), steps.step(spark, "t4", "aggregate"):
        spark.range(0, 8, 1, 2).select(slow("id").alias("x")).collect()
    said = [r.getMessage() for r in caplog.records if r.name == "ndcg_spark.publishing.steps"]
    assert said[0] == "run t4: step aggregate started" and said[-1].startswith("run t4: step aggregate done in ")
    running = said[1:-1]
    assert len(running) >= 2 and all(line.startswith("run t4: step aggregate running for ") for line in running)
    assert any(re.search(r"\(Spark stage \d+: \d of 2 tasks done\)$", line) for line in running), running


def test_a_step_of_a_plan_says_its_place_in_it(spark, caplog):
    """Inside a command's planned steps a step is announced as ``step 2 of 3: aggregate``; a step
    the plan does not name (the checks) by name alone."""
    import logging

    from ndcg_spark.publishing import steps

    with caplog.at_level(logging.INFO, logger="ndcg_spark.publishing.steps"), steps.planned(["score", "aggregate", "publish"]):
        with steps.step(spark, "t5", "aggregate"):
            pass
        with steps.step(spark, "t5", "checks"):
            pass
    said = [r.getMessage() for r in caplog.records if r.name == "ndcg_spark.publishing.steps"]
    assert said[:2] == ["run t5: step 2 of 3: aggregate started", said[1]]
    assert said[1].startswith("run t5: step 2 of 3: aggregate done in ") and said[2] == "run t5: step checks started"


def test_a_run_is_cancelled_from_another_thread_and_its_heartbeat_runs_apart(spark, tmp_path):
    """docs/operations.md, "Job tags": ``cancel_tagged`` with the run's tag, from another thread,
    cancels the job a step of this thread runs; the heartbeat's jobs carry its own tag only (not
    the run's) and run in a fair-scheduler pool of their own."""
    import threading
    import time

    from pyspark.sql import functions as F

    from ndcg_spark.config.publishing_spec import PublishingSpec
    from ndcg_spark.publishing.lease import publishing
    from ndcg_spark.publishing.tags import cancel_tagged
    from ndcg_spark.publishing.steps import step

    slow = F.udf(lambda x: (time.sleep(1), x)[1], "long")

    def cancel_once_running():
        while not spark.sparkContext.statusTracker().getActiveJobsIds():
            time.sleep(0.2)
        cancel_tagged(spark, "ndcg-spark:t9")

    canceller = threading.Thread(target=cancel_once_running, daemon=True)
    started = time.monotonic()
    canceller.start()
    with pytest.raises(Exception, match="cancel"), step(spark, "t9", "score"):
        spark.range(0, 100, 1, 1).select(slow("id").alias("x")).collect()
    canceller.join(10)
    assert time.monotonic() - started < 60, "the job of 100 s ran on"

    spec = PublishingSpec(stale_after_minutes=0.05, heartbeat_seconds=0.5)
    with publishing(spark, Source(path=str(tmp_path / "run_status")), "t9", spec=spec,
                    attempts=Source(path=str(tmp_path / "run_attempts"))):
        time.sleep(3)
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs, beats = store.jobsList(None), []
    for i in range(jobs.size()):
        tags = set(jobs.apply(i).jobTags().mkString("\n").splitlines())
        if _carries(tags, "ndcg-spark:t9:heartbeat"):
            assert not _carries(tags, "ndcg-spark:t9"), tags
            stage_ids = [int(x) for x in jobs.apply(i).stageIds().mkString(",").split(",") if x]
            beats += [store.lastStageAttempt(x).schedulingPool() for x in stage_ids]
    assert beats and set(beats) == {"heartbeat"}, beats


def test_a_run_tags_each_step_and_logs_one_line_per_step(spark, tmp_path, monkeypatch, caplog):
    """``run_job`` through the CLI's sequence: inside stage 1 the run's and the step's tags are
    set; the log has one ``step … done in … s`` line per step."""
    import ndcg_spark.job.run as run_module
    from ndcg_spark.config.job import JobConfig

    seen = {}
    real = run_module.score_stage

    def recording(session, config, run_id, **kw):
        seen["tags"] = current_tags(session)
        return real(session, config, run_id, **kw)

    monkeypatch.setattr(run_module, "score_stage", recording)
    cands = spark.createDataFrame([("q1", "a", 1, 1.0), ("q1", "b", 2, 0.0)], "request_id string, doc_id string, position int, grade double")
    cands.write.parquet(str(tmp_path / "cands"))
    config = tmp_path / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(textwrap.dedent("""
        version: 1
        contract: {k: [3]}
        inputs: {candidates: {path: cands}}
        outputs: {per_request: {path: out/per_request}}
        """))
    with caplog.at_level(logging.INFO, logger="ndcg_spark"):
        outcome = run_module.run_job(spark, JobConfig.from_yaml(config), "score", "t2")
    assert outcome.scored.rows_written == 1
    assert seen["tags"] >= {"ndcg-spark:t2", "ndcg-spark:t2:score"}
    done = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and " done in " in r.getMessage()]
    assert [m.split(" done in ")[0] for m in done] == ["run t2: step 1 of 2: score", "run t2: step 2 of 2: publish"]
    assert all(m.endswith(" s") for m in done)


def test_the_console_script_prints_the_steps_on_stderr(spark, tmp_path, capsys):
    from ndcg_spark.cli import main

    spark.createDataFrame([("q1", "a", 1, 2.0)], "request_id string, doc_id string, position int, grade double").write.parquet(
        str(tmp_path / "cands")
    )
    config = tmp_path / "job.yaml"
    config.write_text(f"version: 1\ninputs: {{candidates: {{path: {tmp_path}/cands}}}}\n"
                      f"outputs: {{per_request: {{path: {tmp_path}/out}}}}\n")
    assert main(["score", "--config", str(config), "--run-id", "t3"]) == 0
    shown = capsys.readouterr()
    assert "run t3: step 1 of 2: score done in " in shown.err and "run t3: step 2 of 2: publish done in " in shown.err
    assert "score done in" not in shown.out  # the results stay on stdout, the progress on stderr
    assert not logging.getLogger("ndcg_spark").handlers  # the CLI's handler is gone afterwards


def test_clearing_a_run_of_a_path_table_removes_its_rows_only(spark, tmp_path):
    target = Source(path=str(tmp_path / "quarantine"))
    assert read_written(spark, target) is None
    clear_run(spark, target, "r:1")  # nothing written yet: nothing to do
    rows = spark.createDataFrame([("r:1", "x"), ("r:1", "y"), ("r2", "z")], "run_id string, v string")
    write_run_partitioned(rows, target)
    assert read_written(spark, target).count() == 3
    clear_run(spark, target, "r:1")
    clear_run(spark, target, "r3")  # a run with no rows: nothing to do
    assert sorted(tuple(r) for r in read_run(spark, target).select("run_id", "v").collect()) == [("r2", "z")]
    assert sorted(p.name for p in (tmp_path / "quarantine").glob("run_id=*")) == ["run_id=r2"]  # the folder is gone
    assert not [v for v in spark.catalog.listTables() if v.name.startswith("ndcg_spark_")]  # its views dropped


def test_an_empty_folder_is_not_an_output(spark, tmp_path):
    (tmp_path / "empty").mkdir()
    assert read_written(spark, Source(path=str(tmp_path / "empty"))) is None
    assert read_written(spark, Source(path=str(tmp_path / "missing")), "r1") is None


def test_reading_a_written_output_infers_its_schema_once(spark, tmp_path):
    """read_written reads a path table once: Spark infers a Parquet table's schema with a job of
    its own, which asking whether the table exists first and then reading it would run twice."""
    target = Source(path=str(tmp_path / "aggregate"))
    write_run_partitioned(spark.createDataFrame([("r1", 1), ("r2", 2)], "run_id string, v int"), target)
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()

    def jobs_started() -> int:  # the id the next Spark job gets (an AtomicInteger where py4j does not unwrap it)
        value = scheduler.nextJobId()
        return value if isinstance(value, int) else value.get()

    before = jobs_started()
    rows = read_written(spark, target, "r2")
    assert jobs_started() - before == 1  # the schema's job, nothing else yet
    assert [tuple(r) for r in rows.select("run_id", "v").collect()] == [("r2", 2)]


def test_small_results_sorted_in_python_come_in_sparks_order(spark):
    """collect_sorted (Python's sort: no sampling job) orders rows as Spark's orderBy does: nulls
    first, strings by their UTF-8 bytes (code points), numbers by value, key after key."""
    import random

    from ndcg_spark.frames import collect_sorted

    rng = random.Random(5)
    words = [None, "", "a", "B", "b", "ab", "é", "z", "Ω", "漢", "😀", "a b", "10", "9"]
    rows = [(rng.choice(words), rng.choice([None, -3, 0, 2, 10]), rng.choice(words)) for _ in range(300)]
    df = spark.createDataFrame(rows, "s string, n int, t string")
    for keys in (("s",), ("n", "s"), ("s", "n", "t"), ("t", "s")):
        ours = [tuple(r[k] for k in keys) for r in collect_sorted(df, *keys)]
        assert ours == [tuple(r) for r in df.select(*keys).orderBy(*keys).collect()], keys
    assert len({r[0] for r in rows}) > 10  # the words, the null and the empty string all drawn


def test_clearing_a_run_of_a_catalog_table_drops_its_partition_only(spark):
    """A Parquet catalog table's run is cleared with ALTER TABLE … DROP PARTITION (the run id checked,
    then a literal: Spark 3.5 and 4.0 take no parameter there); Delta's and Iceberg's, one commit
    each, are tests/test_formats.py's (the format lane)."""
    target = Source(table="operability_it.quarantine")
    try:
        clear_run(spark, target, "r:1")  # no table yet: nothing to do
        assert read_written(spark, target) is None
        write_run_partitioned(spark.createDataFrame([("x", "r:1"), ("y", "r:1"), ("z", "r2")], "v string, run_id string"),
                              target)
        clear_run(spark, target, "r:1")
        clear_run(spark, target, "r3")  # a run with no rows: nothing to do
        assert [tuple(r) for r in read_run(spark, target).select("run_id", "v").collect()] == [("r2", "z")]
        assert [r[0] for r in spark.sql("SHOW PARTITIONS operability_it.quarantine").collect()] == ["run_id=r2"]
        with pytest.raises(ValueError, match="only letters, digits"):
            clear_run(spark, target, "x') OR (1=1")
        assert read_run(spark, target).count() == 1
    finally:
        spark.sql("DROP TABLE IF EXISTS operability_it.quarantine")


def test_the_documented_refusal_of_a_dropped_column_is_the_codes():
    """docs/operations.md, "Delta Lake and Iceberg tables": the message of a dropped column, word
    for word (the statements it names are run by tests/test_formats.py, in the format lane)."""
    import re
    from pathlib import Path

    from ndcg_spark.storage.tables import SchemaChange, _refusal

    page = (Path(__file__).resolve().parent.parent / "docs" / "operations.md").read_text(encoding="utf-8")
    shown = next(b for b in re.findall(r"```text\n(.*?)```", page, re.S) if "legacy_flag" in b).splitlines()
    refusal = _refusal(Source(table="main.ndcg.per_request", format="delta"), SchemaChange(dropped=("legacy_flag",)))
    assert shown == ["ndcg-spark run: failed.", str(refusal)]


def test_delta_may_be_a_path_iceberg_lives_in_a_catalog():
    assert Source.parse({"table": "ndcg.per_request", "format": "iceberg"}, "outputs.per_request", None).format == "iceberg"
    delta = Source.parse({"path": "/tmp/x", "format": "delta"}, "outputs.per_request", None)
    assert (delta.table_name, delta.describe()) == ("delta.`/tmp/x`", "delta /tmp/x")
    with pytest.raises(ContractError, match=r"^outputs\.per_request\.format: iceberg tables live in a catalog"):
        Source.parse({"path": "/tmp/x", "format": "iceberg"}, "outputs.per_request", None)


def test_a_column_function_is_three_round_trips_to_the_jvm_not_thirteen(spark, monkeypatch):
    """docs/operations.md, "Spark settings": ndcg-spark's sessions switch off pyspark 4's Python
    call sites in Spark's error messages, which cost every Column function a config read and two
    more round trips to the JVM before its own (F.col: 13 calls instead of 3)."""
    import py4j.clientserver
    from pyspark.sql import functions as F

    from ndcg_spark.job.session import PYTHON_CALL_SITES, is_connect

    if is_connect(spark):
        pytest.skip("a Connect client builds Columns without the JVM")
    assert spark.conf.get(PYTHON_CALL_SITES) == "false"
    F.col("warm")  # the first call in a process also loads the functions' JVM classes
    gc.collect()  # Python objects of earlier JVM objects freed now, not during the call
    sent = []
    original = py4j.clientserver.ClientServerConnection.send_command
    monkeypatch.setattr(
        py4j.clientserver.ClientServerConnection, "send_command",
        lambda self, command: sent.append(command) or original(self, command),
    )
    F.col("position")
    # a garbage collection during the call may free earlier objects' JVM handles ("m\nd\n...",
    # py4j's memory-delete command): the Python garbage collector's, not the function's round trips
    calls = [command for command in sent if not command.startswith("m\nd\n")]
    assert 0 < len(calls) <= 4, calls


@pytest.mark.parametrize("session_value", [None, "false"])
def test_an_intermediate_result_is_cached_in_coalesced_partitions(spark, session_value):
    """docs/operations.md, "Spark settings": an aggregate ndcg-spark caches for later jobs keeps
    adaptive execution's coalesced partitions, not spark.sql.shuffle.partitions nearly empty ones
    (Spark 4's default); the session's own setting is left as it was. On Spark 3.5 the helper
    persists under the session's setting (3.5.0's default coalesces, with SPARK-45282)."""
    from pyspark.sql import functions as F

    from ndcg_spark.compat import coalesces_cached_plans_safely
    from ndcg_spark.frames import CACHED_PLAN_PARTITIONING, persist_coalesced

    conf = spark.conf
    saved = {key: conf.get(key) for key in (ADAPTIVE, SHUFFLE_PARTITIONS)}
    conf.set(ADAPTIVE, "true")
    conf.set(SHUFFLE_PARTITIONS, "50")
    if session_value is None:
        conf.unset(CACHED_PLAN_PARTITIONING)
    else:
        conf.set(CACHED_PLAN_PARTITIONING, session_value)
    session_coalesces = conf.get(CACHED_PLAN_PARTITIONING) == "true"  # the value in force, default or set
    plain = coalesced = None
    try:
        def counted(modulus: int):  # two plans, so that neither cache serves the other
            return spark.range(2000).groupBy((F.col("id") % modulus).alias("request")).agg(F.count("*").alias("n"))

        plain = counted(300).persist()
        coalesced = persist_coalesced(counted(301))
        assert conf.get(CACHED_PLAN_PARTITIONING, None) == session_value
        assert (plain.rdd.getNumPartitions() < 50) == session_coalesces
        if coalesces_cached_plans_safely(spark):
            assert not session_coalesces and plain.rdd.getNumPartitions() == 50
            assert coalesced.rdd.getNumPartitions() < 50
        else:
            assert coalesced.rdd.getNumPartitions() == plain.rdd.getNumPartitions()
        assert sorted(tuple(r) for r in coalesced.collect()) == [(i, 7 if i < 2000 % 301 else 6) for i in range(301)]
    finally:
        for df in (plain, coalesced):
            if df is not None:
                df.unpersist()
        conf.unset(CACHED_PLAN_PARTITIONING)
        for key, value in saved.items():
            conf.set(key, value)


@pytest.fixture
def session_settings(spark):
    """The session's shuffle settings put back as they were after the test."""
    saved = {key: spark.conf.get(key, None) for key in (SHUFFLE_PARTITIONS, ADVISORY, ADAPTIVE)}
    yield spark.conf
    for key, value in saved.items():
        spark.conf.unset(key) if value is None else spark.conf.set(key, value)


def test_a_small_input_shuffles_on_one_partition_per_core_and_the_setting_comes_back(spark, session_settings):
    """docs/operations.md, "Spark settings": the jobs a call runs itself use one shuffle partition
    per core, planned without adaptive execution, when its inputs fit in one advisory partition
    per core; the session's settings (set or not) are back after the block, also when it raises;
    larger inputs keep them."""
    from pyspark.sql import functions as F

    from ndcg_spark.frames import shuffles_sized_to

    conf, cores = session_settings, spark.sparkContext.defaultParallelism
    small, huge = spark.range(1000), spark.range(10**12)  # Spark estimates 8 bytes a row
    conf.set(SHUFFLE_PARTITIONS, "50")
    conf.set(ADAPTIVE, "true")  # as in a session with Spark's defaults (the suite's own has it off)
    with shuffles_sized_to(small, None):
        assert (conf.get(SHUFFLE_PARTITIONS), conf.get(ADAPTIVE)) == (str(cores), "false")
        grouped = small.groupBy((F.col("id") % 7).alias("g")).count()
        assert grouped.rdd.getNumPartitions() == cores  # planned as is: no adaptive coalescing
        assert sorted(r["count"] for r in grouped.collect()) == [142] * 1 + [143] * 6
    assert (conf.get(SHUFFLE_PARTITIONS), conf.get(ADAPTIVE)) == ("50", "true")
    with shuffles_sized_to(small, huge):
        assert (conf.get(SHUFFLE_PARTITIONS), conf.get(ADAPTIVE)) == ("50", "true")
    conf.set(ADVISORY, "1b")  # every input larger than one advisory partition per core
    with shuffles_sized_to(small):
        assert conf.get(SHUFFLE_PARTITIONS) == "50"
    conf.unset(ADVISORY)
    conf.unset(SHUFFLE_PARTITIONS)
    with pytest.raises(ZeroDivisionError), shuffles_sized_to(small):
        assert conf.get(SHUFFLE_PARTITIONS) == str(cores)
        1 / 0
    assert conf.get(SHUFFLE_PARTITIONS, None) is None  # unset, as it was
    conf.set(SHUFFLE_PARTITIONS, str(cores))
    with shuffles_sized_to(small):
        assert conf.get(SHUFFLE_PARTITIONS) == str(cores)


def test_score_requests_and_compare_give_the_same_bits_on_sized_partitions(spark, sample_dir, session_settings,
                                                                            monkeypatch):
    """The shared sample scored (checked) and compared twice under a session of 7 shuffle
    partitions with adaptive execution on: once kept (every input 'large'), once sized to the
    cores and planned without adaptive execution by the calls: the per-request rows and the
    comparison table are the same bits."""
    import datetime as dt

    from ndcg_spark import Attributes, Contract, compare, pool_summary, score_requests
    from ndcg_spark import frames

    decided = []
    original = frames._partitions_for_small
    monkeypatch.setattr(frames, "_partitions_for_small", lambda dfs: decided.append(original(dfs)) or decided[-1])
    c, j, a = (spark.read.parquet(sample_dir[name]) for name in ("candidates", "judgments", "attributes"))
    contract = Contract(k=[10])
    attributes = Attributes(table=a, weight="weight", slices=("equipment_rarity",))

    def scored_and_compared() -> tuple[list, list]:
        per_request = score_requests(c, j, contract, attributes=attributes)
        table = compare(per_request, pool_summary(c, j, contract), baseline="bm25", candidate="hybrid",
                        replicates=20, permutations=19, created_at=dt.datetime(2026, 12, 3))
        return sorted(per_request.collect()), table.collect()

    conf = session_settings
    conf.set(SHUFFLE_PARTITIONS, "7")
    conf.set(ADAPTIVE, "true")
    conf.set(ADVISORY, "1b")
    kept = scored_and_compared()
    assert decided and set(decided) == {None}
    decided.clear()
    conf.unset(ADVISORY)
    sized = scored_and_compared()
    cores = spark.sparkContext.defaultParallelism
    # score_requests (first) and compare (last) sized their jobs; a check inside a sized call finds
    # them sized already (None)
    assert decided[0] == decided[-1] == cores and set(decided) <= {cores, None}, decided
    assert (conf.get(SHUFFLE_PARTITIONS), conf.get(ADAPTIVE)) == ("7", "true")
    assert len(kept[0]) == sample_dir.n_requests * 2 and len(kept[1]) > 2  # requests x systems; overall + slices
    assert sized == kept  # exact: the same bits
