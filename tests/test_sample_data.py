"""The embedded sample-data generator: deterministic, realistic and shaped like SPEC §3.

Shares are checked on 2,000 requests (about 35,000 candidates per system) with tolerances
several binomial standard deviations wide, so they hold for any seed, not just the default. The
controlled release's effects are checked on 6,000 requests (about 900 sessions per arm), on plain
Python rows.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ndcg_spark.sample.generate import POOL_VERSION, REQUEST_TYPES, SampleData, generate, write_sample

N = 2_000
SEED = 7
TABLES = ("candidates", "judgments", "attributes", "release_outcomes", "documents")


@pytest.fixture(scope="module")
def data(spark: SparkSession) -> Iterator[SampleData]:
    generated = generate(spark, n_requests=N, seed=SEED)
    cached = SampleData(**{table.name: getattr(generated, table.name).cache() for table in fields(generated)})
    yield cached
    for table in fields(cached):
        getattr(cached, table.name).unpersist()


def _bm25(data: SampleData) -> DataFrame:
    return data.candidates.filter(F.col("system") == "bm25")


def _request_max_grades(data: SampleData) -> DataFrame:
    """Per request: best grade among judged candidates (0 if none) and among all judgments."""
    in_pool = (
        _bm25(data)
        .join(data.judgments, ["request_id", "doc_id"], "left")
        .groupBy("request_id")
        .agg(F.max(F.coalesce("grade", F.lit(0.0))).alias("best_candidate"))
    )
    judged = data.judgments.groupBy("request_id").agg(F.max("grade").alias("best_judged"))
    return in_pool.join(judged, "request_id", "full")


# --- shape ----------------------------------------------------------------------------------


def test_schemas_and_row_counts(data: SampleData) -> None:
    assert [(f.name, f.dataType.simpleString()) for f in data.candidates.schema] == [
        ("request_id", "string"),
        ("doc_id", "string"),
        ("system", "string"),
        ("position", "int"),
        ("score", "double"),
        ("pool_version", "string"),
    ]
    assert [(f.name, f.dataType.simpleString()) for f in data.judgments.schema] == [
        ("request_id", "string"),
        ("doc_id", "string"),
        ("grade", "double"),
    ]
    assert data.attributes.columns == [
        "request_id",
        "request_type",
        "weight",
        "equipment_rarity",
        "doc_age_bucket",
        "permission_group",
    ]
    assert data.attributes.count() == N
    assert data.attributes.select("request_id").distinct().count() == N
    assert {r.system for r in data.candidates.select("system").distinct().collect()} == {"bm25", "hybrid"}
    assert {r.pool_version for r in data.candidates.select("pool_version").distinct().collect()} == {POOL_VERSION}
    # every request has candidates and at least one judgment
    assert _bm25(data).select("request_id").distinct().count() == N
    assert data.judgments.select("request_id").distinct().count() == N


def test_no_duplicate_documents(data: SampleData) -> None:
    assert data.candidates.groupBy("request_id", "system", "doc_id").count().filter("count > 1").count() == 0
    assert data.judgments.groupBy("request_id", "doc_id").count().filter("count > 1").count() == 0


# --- determinism ----------------------------------------------------------------------------


def _sorted(df: DataFrame) -> DataFrame:
    return df.orderBy(*df.columns)


def test_same_seed_same_rows_whatever_the_partitioning(spark: SparkSession) -> None:
    one = generate(spark, n_requests=200, seed=SEED, num_partitions=1)
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        many = generate(spark, n_requests=200, seed=SEED, num_partitions=5)
        for name in TABLES:
            left = getattr(one, name)
            right = getattr(many, name).repartition(3)
            assert right.rdd.getNumPartitions() == 3
            assert_df_equality(_sorted(left), _sorted(right), ignore_nullable=True)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)


def test_rows_depend_on_the_request_number_not_on_n_requests(spark: SparkSession, data: SampleData) -> None:
    small = generate(spark, n_requests=50, seed=SEED)
    first_50 = data.candidates.filter(F.col("request_id") < "req-0000050")
    assert_df_equality(_sorted(small.candidates), _sorted(first_50), ignore_nullable=True)


def test_another_seed_gives_other_data(spark: SparkSession) -> None:
    a = generate(spark, n_requests=100, seed=SEED).judgments
    b = generate(spark, n_requests=100, seed=SEED + 1).judgments
    assert a.exceptAll(b).count() > 0.9 * a.count()


# --- rankings -------------------------------------------------------------------------------


def test_positions_are_a_permutation_per_request_and_system(data: SampleData) -> None:
    bad = (
        data.candidates.groupBy("request_id", "system")
        .agg(
            F.count("*").alias("n"),
            F.min("position").alias("lo"),
            F.max("position").alias("hi"),
            F.countDistinct("position").alias("distinct"),
        )
        .filter("lo != 1 OR hi != n OR distinct != n")
    )
    assert bad.count() == 0


def test_score_never_increases_with_position_and_has_ties(data: SampleData) -> None:
    by_position = Window.partitionBy("request_id", "system").orderBy("position")
    with_previous = data.candidates.withColumn("previous", F.lag("score").over(by_position))
    assert with_previous.filter(F.col("score") > F.col("previous")).count() == 0
    assert data.candidates.filter(F.col("score").isNull() | F.isnan("score")).count() == 0
    ties = data.candidates.groupBy("request_id", "system", "score").count().filter("count > 1")
    tied_requests = ties.select("request_id").distinct().count()
    assert 0.02 * N < tied_requests < 0.5 * N


def test_both_systems_rank_the_same_pool_where_both_answer(data: SampleData) -> None:
    bm25 = data.candidates.filter("system = 'bm25'").select("request_id", "doc_id")
    hybrid = data.candidates.filter("system = 'hybrid'").select("request_id", "doc_id")
    timed_out = bm25.select("request_id").distinct().subtract(hybrid.select("request_id").distinct())
    # hybrid times out on a small share of the requests (no candidates at all); bm25 answers every one
    assert bm25.select("request_id").distinct().count() == N
    assert 0.005 * N < timed_out.count() < 0.03 * N
    assert bm25.join(timed_out, "request_id", "left_anti").exceptAll(hybrid).count() == 0
    assert hybrid.exceptAll(bm25).count() == 0


def test_hybrid_ranks_positives_higher_than_bm25(data: SampleData) -> None:
    positives = data.candidates.join(data.judgments.filter("grade > 0"), ["request_id", "doc_id"])
    mean_position = {
        r.system: r.mean for r in positives.groupBy("system").agg(F.avg("position").alias("mean")).collect()
    }
    assert mean_position["hybrid"] < mean_position["bm25"] - 0.3


def test_candidates_per_request(data: SampleData) -> None:
    sizes = _bm25(data).groupBy("request_id").count()
    stats = sizes.agg(
        F.min("count").alias("lo"),
        F.max("count").alias("hi"),
        F.sum((F.col("count") == 1).cast("int")).alias("singles"),
        F.sum(((F.col("count") > 1) & (F.col("count") < 5)).cast("int")).alias("between"),
    ).first()
    assert (stats.lo, stats.hi, stats.between) == (1, 30, 0)
    assert 0 < stats.singles < 0.05 * N


# --- judgments ------------------------------------------------------------------------------


def test_grades_are_integers_0_to_3(data: SampleData) -> None:
    grades = {r.grade for r in data.judgments.select("grade").distinct().collect()}
    assert grades == {0.0, 1.0, 2.0, 3.0}


def test_about_15_percent_of_candidates_are_unjudged(data: SampleData) -> None:
    unjudged = (
        _bm25(data)
        .join(data.judgments, ["request_id", "doc_id"], "left")
        .agg(F.avg(F.col("grade").isNull().cast("double")))
        .first()[0]
    )
    assert unjudged == pytest.approx(0.15, abs=0.02)


def test_about_10_percent_of_requests_have_no_positive_grade(data: SampleData) -> None:
    best = _request_max_grades(data)
    no_positive = best.filter(F.col("best_judged") == 0).count() / N
    assert no_positive == pytest.approx(0.10, abs=0.025)


def test_some_judged_positives_were_not_retrieved(data: SampleData) -> None:
    unretrieved = data.judgments.filter("grade > 0").join(_bm25(data), ["request_id", "doc_id"], "left_anti")
    requests = unretrieved.select("request_id").distinct().count()
    assert 0.1 * N < requests < 0.4 * N
    # for about 3% every positive is outside the pool: empty ideal from candidates, not from judgments
    best = _request_max_grades(data)
    retrieval_miss = best.filter((F.col("best_candidate") == 0) & (F.col("best_judged") > 0)).count() / N
    assert retrieval_miss == pytest.approx(0.03, abs=0.015)


# --- attributes -----------------------------------------------------------------------------


def test_weights_positive_and_slices_known(data: SampleData) -> None:
    a = data.attributes
    assert a.filter(F.col("weight").isNull() | (F.col("weight") <= 0)).count() == 0
    for column in ("request_type", "equipment_rarity", "doc_age_bucket", "permission_group"):
        assert a.filter(F.col(column).isNull()).count() == 0, column
    values = {c: {r[0] for r in a.select(c).distinct().collect()} for c in a.columns[3:]}
    assert values == {
        "equipment_rarity": {"common", "uncommon", "rare"},
        "doc_age_bucket": {"<1y", "1-3y", "3-10y", ">10y"},
        "permission_group": {"public", "contractor", "restricted"},
    }
    types = {r.request_type for r in a.select("request_type").distinct().collect()}
    assert types == {t.name for t in REQUEST_TYPES}


def test_rare_equipment_is_a_minority_of_requests_and_of_traffic(data: SampleData) -> None:
    rare = F.col("equipment_rarity") == "rare"
    shares = data.attributes.agg(
        F.avg(rare.cast("double")).alias("requests"),
        (F.sum(F.when(rare, F.col("weight")).otherwise(0.0)) / F.sum("weight")).alias("traffic"),
    ).first()
    assert 0.05 < shares.requests < 0.2
    assert 0 < shares.traffic < 0.01  # the sample over-represents the tail relative to traffic


# --- the controlled release -----------------------------------------------------------------

RELEASE_N = 6_000


@pytest.fixture(scope="module")
def sessions(spark: SparkSession) -> list[dict]:
    """The release outcomes of 6,000 requests as plain Python rows."""
    return [r.asDict() for r in generate(spark, n_requests=RELEASE_N, seed=SEED).release_outcomes.collect()]


def _arm(sessions: list[dict], arm: str, rarity: str | None = None) -> list[dict]:
    return [s for s in sessions if s["arm"] == arm and rarity in (None, s["equipment_rarity"])]


def _mean_time(sessions: list[dict]) -> float:
    return statistics.mean(s["time_to_procedure_s"] for s in sessions if s["time_to_procedure_s"] is not None)


def _rate(sessions: list[dict], column: str) -> float:
    return sum(bool(s[column]) for s in sessions) / len(sessions)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def test_release_schema_and_sessions(data: SampleData, sessions: list[dict]) -> None:
    assert [(f.name, f.dataType.simpleString()) for f in data.release_outcomes.schema] == [
        ("session_id", "string"),
        ("request_id", "string"),
        ("technician_id", "string"),
        ("arm", "string"),
        ("equipment_rarity", "string"),
        ("task_completed", "boolean"),
        ("time_to_procedure_s", "double"),
        ("latency_ms", "double"),
        ("safety_incident", "boolean"),
    ]
    assert 0.27 < len(sessions) / RELEASE_N < 0.33  # about 30% of the requests, one session each
    assert len({s["session_id"] for s in sessions}) == len(sessions)
    assert len({s["request_id"] for s in sessions}) == len(sessions)
    assert all(s["session_id"].startswith("ses-") and len(s["session_id"]) == 11 for s in sessions)
    assert {s["arm"] for s in sessions} == {"bm25", "hybrid"}
    assert {s["equipment_rarity"] for s in sessions} == {"common", "uncommon", "rare"}


def test_release_rarity_is_the_requests(data: SampleData) -> None:
    same = data.release_outcomes.join(data.attributes, ["request_id", "equipment_rarity"])
    assert same.count() == data.release_outcomes.count()


def test_every_technician_sees_one_arm_and_about_three_sessions(sessions: list[dict]) -> None:
    arms: dict[str, set[str]] = {}
    for s in sessions:
        arms.setdefault(s["technician_id"], set()).add(s["arm"])
    assert all(len(seen) == 1 for seen in arms.values())
    assert 2.5 < len(sessions) / len(arms) < 3.5
    hybrid_technicians = sum(seen == {"hybrid"} for seen in arms.values()) / len(arms)
    assert 0.4 < hybrid_technicians < 0.6


def test_release_nulls_only_where_the_procedure_was_never_reached(sessions: list[dict]) -> None:
    for s in sessions:
        assert all(value is not None for name, value in s.items() if name != "time_to_procedure_s"), s
        assert s["time_to_procedure_s"] is None or s["time_to_procedure_s"] > 0, s
        assert s["latency_ms"] > 0, s


def test_release_rates_by_arm(sessions: list[dict]) -> None:
    bm25, hybrid = _arm(sessions, "bm25"), _arm(sessions, "hybrid")
    reached = {arm: 1 - sum(s["time_to_procedure_s"] is None for s in rows) / len(rows)
               for arm, rows in (("bm25", bm25), ("hybrid", hybrid))}
    assert reached == pytest.approx({"bm25": 0.85, "hybrid": 0.86}, abs=0.035)
    assert _rate(bm25, "task_completed") == pytest.approx(0.80, abs=0.035)
    assert _rate(hybrid, "task_completed") == pytest.approx(0.82, abs=0.035)
    assert _rate(bm25, "safety_incident") < 0.012 and _rate(hybrid, "safety_incident") < 0.012
    times = sorted(s["time_to_procedure_s"] for s in bm25 if s["time_to_procedure_s"] is not None)
    assert statistics.median(times) == pytest.approx(90, rel=0.1)
    assert times[-1] > 3 * statistics.median(times)  # skewed: a long right tail


def test_hybrid_is_faster_overall_but_slower_on_rare_equipment(sessions: list[dict]) -> None:
    overall = _mean_time(_arm(sessions, "hybrid")) / _mean_time(_arm(sessions, "bm25"))
    rare = _mean_time(_arm(sessions, "hybrid", "rare")) / _mean_time(_arm(sessions, "bm25", "rare"))
    assert overall <= 0.95
    assert rare >= 1.15


def test_hybrid_latency_is_about_30_percent_higher(sessions: list[dict]) -> None:
    latency = {arm: [s["latency_ms"] for s in _arm(sessions, arm)] for arm in ("bm25", "hybrid")}
    assert statistics.median(latency["bm25"]) == pytest.approx(120, rel=0.1)
    assert _p95(latency["bm25"]) == pytest.approx(260, rel=0.1)
    assert statistics.median(latency["hybrid"]) >= 1.2 * statistics.median(latency["bm25"])
    assert _p95(latency["hybrid"]) >= 1.2 * _p95(latency["bm25"])  # a 10% p95 guardrail fails


def test_release_rows_depend_on_the_request_number_not_on_n_requests(data: SampleData, sessions: list[dict]) -> None:
    smaller = {tuple(r) for r in data.release_outcomes.collect()}  # N = 2,000 requests, the same seed
    first = {tuple(s.values()) for s in sessions if s["request_id"] < f"req-{N:07d}"}
    assert smaller == first and len(first) > 0.25 * N


def test_another_seed_gives_another_release(spark: SparkSession, data: SampleData) -> None:
    other = generate(spark, n_requests=N, seed=SEED + 1).release_outcomes
    assert data.release_outcomes.exceptAll(other).count() > 0.9 * data.release_outcomes.count()


# --- documents ------------------------------------------------------------------------------


def test_documents_cover_every_pool_document_once(data: SampleData) -> None:
    assert [(f.name, f.dataType.simpleString()) for f in data.documents.schema] == [
        ("doc_id", "string"),
        ("doc_age_days", "int"),
        ("permission_group", "string"),
    ]
    known = data.candidates.select("doc_id").union(data.judgments.select("doc_id")).distinct()
    assert data.documents.count() == data.documents.select("doc_id").distinct().count() == known.count()
    assert data.documents.join(known, "doc_id", "left_anti").count() == 0
    assert known.join(data.documents, "doc_id", "left_anti").count() == 0


def test_documents_ages_and_permission_groups(data: SampleData) -> None:
    d = data.documents
    assert d.filter(F.col("doc_age_days").isNull() | ~F.col("doc_age_days").between(0, 3650)).count() == 0
    groups = {r.permission_group: r["count"] / d.count() for r in d.groupBy("permission_group").count().collect()}
    assert groups == pytest.approx({"technician": 0.60, "contractor": 0.25, "engineer": 0.15}, abs=0.02)


def test_rare_equipment_documents_are_older(data: SampleData) -> None:
    rarity = data.candidates.select("request_id", "doc_id").union(data.judgments.select("request_id", "doc_id"))
    by_doc = rarity.join(data.attributes, "request_id").select("doc_id", "equipment_rarity").distinct()
    assert by_doc.count() == data.documents.count()  # a document serves one equipment rarity
    old = {
        r.rare: r.old
        for r in by_doc.join(data.documents, "doc_id")
        .groupBy((F.col("equipment_rarity") == "rare").alias("rare"))
        .agg(F.avg((F.col("doc_age_days") > 730).cast("double")).alias("old"))
        .collect()
    }
    assert old[True] == pytest.approx(0.40, abs=0.04)
    assert old[False] == pytest.approx(0.165, abs=0.03)


# --- API ------------------------------------------------------------------------------------


def test_write_sample_writes_five_parquet_folders_and_overwrites(spark: SparkSession, tmp_path: Path) -> None:
    write_sample(spark, tmp_path / "sample", n_requests=60, seed=SEED)
    paths = write_sample(spark, tmp_path / "sample", n_requests=30, seed=SEED)  # replaces the first
    root = (tmp_path / "sample").resolve()
    assert paths == {name: str(root / name) for name in TABLES}
    expected = generate(spark, n_requests=30, seed=SEED)
    for name, path in paths.items():
        written = spark.read.parquet(path)
        assert_df_equality(_sorted(written), _sorted(getattr(expected, name)), ignore_nullable=True)


@pytest.mark.parametrize("kwargs", [{"n_requests": 0}, {"n_requests": 2.5}, {"seed": "7"}, {"seed": 2**64}, {"num_partitions": 0}])
def test_bad_arguments_are_refused(spark: SparkSession, kwargs: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        generate(spark, **kwargs)


def test_import_starts_no_spark() -> None:
    code = (
        "import ndcg_spark.sample.generate\n"
        "from pyspark.sql import SparkSession\n"
        "assert SparkSession.getActiveSession() is None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=Path(__file__).resolve().parents[1])


def test_no_positive_share_moves_only_which_requests_have_no_positive(spark) -> None:
    """``no_positive_share`` (the demo's no-answer night): the same requests and attributes, more
    requests without a positive grade, and every request that keeps a positive keeps its judgments."""
    from pyspark.sql import functions as F

    from ndcg_spark.sample.generate import generate

    plain = generate(spark, n_requests=400, seed=3)
    more = generate(spark, n_requests=400, seed=3, no_positive_share=0.3)
    assert more.attributes.exceptAll(plain.attributes).count() == 0 and plain.attributes.count() == 400

    def with_positive(data):
        return {r.request_id for r in data.judgments.filter(F.col("grade") > 0).select("request_id").distinct().collect()}

    kept, before = with_positive(more), with_positive(plain)
    assert kept < before  # a strict subset: only requests lost their positives
    assert 0.2 < 1 - len(kept) / 400 < 0.4 and 1 - len(before) / 400 < 0.2
    same = more.judgments.filter(F.col("request_id").isin(sorted(kept)))
    assert same.exceptAll(plain.judgments.filter(F.col("request_id").isin(sorted(kept)))).count() == 0
    with pytest.raises(ValueError, match="no_positive_share"):
        generate(spark, n_requests=4, no_positive_share=1.0)
