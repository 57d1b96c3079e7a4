"""Stage 2: aggregates with their denominators, worked out by hand, plus the bootstrap's behaviour.

Floats are compared with an explicit tolerance: 1e-12 for means computed from a handful of
values (the sums are exact fixed-point, so the only error is the final division and the
2^-56 quantization of each term).
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest
import yaml
from chispa import assert_approx_df_equality, assert_df_equality
from pyspark.sql import functions as F

import ndcg_spark
from ndcg_spark.aggregation.columns import AGGREGATE_COLUMNS, AUDIT_COLUMNS
from ndcg_spark.aggregation.means import aggregate
from ndcg_spark.aggregation.worst_slice import audit
from ndcg_spark.config.aggregate_spec import AggregateSpec
from ndcg_spark.config.job import Source
from ndcg_spark.metrics.resampling import poisson_weight
from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import ContractError, EmptyIdealError, InputError
from ndcg_spark.scoring.score import score_requests

TOL = 1e-12

PER_REQUEST = (
    "run_id string, contract_fingerprint string, pool_version string, system string, request_id string, "
    "k int, ndcg double, empty_ideal boolean, n_candidates long, n_unjudged_in_top_k int, weight double, "
    "rarity string, age string"
)


def per_request_rows(spark, rows, schema=PER_REQUEST):
    return spark.createDataFrame(rows, schema)


@pytest.fixture(scope="module")
def traffic_table(spark):
    """Four requests of one system at K = 10.

    The heavily searched request (``r1``: a common pump, weight 8) is served well (0.9); the two
    rarely searched ones (``r2``, ``r3``: rare equipment, weight 1 each) are served badly (0.5,
    0.4). ``r4`` has no positive grade (empty ideal, weight 2). So the macro mean -- every judged
    request once -- is (0.9 + 0.5 + 0.4) / 3 = 0.6, while the traffic-weighted mean -- what a
    search drawn from live traffic gets -- is (8*0.9 + 0.5 + 0.4) / 10 = 0.81: the head is good,
    the tail is not.
    """
    return per_request_rows(
        spark,
        [
            ("n1", "fp", "pool-1", "bm25", "r1", 10, 0.9, False, 5, 1, 8.0, "common", "new"),
            ("n1", "fp", "pool-1", "bm25", "r2", 10, 0.5, False, 20, 5, 1.0, "rare", "old"),
            ("n1", "fp", "pool-1", "bm25", "r3", 10, 0.4, False, 10, 0, 1.0, "rare", "new"),
            ("n1", "fp", "pool-1", "bm25", "r4", 10, None, True, 2, 2, 2.0, "common", "new"),
        ],
    )


MEASURES = (
    "slice_dimension string, slice_value string, macro_ndcg double, weighted_ndcg double, n_eligible long, "
    "n_empty_ideal long, n_requests long, weight_eligible double, weight_all double, unjudged_share double, "
    "below_min_eligible boolean"
)


def measures(df):
    return df.select(*[c.split()[0] for c in MEASURES.split(", ")]).orderBy("slice_dimension", "slice_value")


def test_macro_and_weighted_means_by_hand(spark, traffic_table):
    out = aggregate(traffic_table, AggregateSpec(slices=("rarity", "age"), min_eligible=2, replicates=0))
    # unjudged share = n_unjudged_in_top_k / min(k, n_candidates), averaged over *all* requests:
    #   r1 1/5 = 0.2, r2 5/10 = 0.5, r3 0/10 = 0, r4 2/2 = 1
    expected = spark.createDataFrame(
        [
            ("age", "new", (0.9 + 0.4) / 2, (8 * 0.9 + 0.4) / 9, 2, 1, 3, 9.0, 11.0, (0.2 + 0 + 1) / 3, False),
            ("age", "old", 0.5, 0.5, 1, 0, 1, 1.0, 1.0, 0.5, True),
            ("overall", "all", 0.6, 0.81, 3, 1, 4, 10.0, 12.0, (0.2 + 0.5 + 0 + 1) / 4, False),
            ("rarity", "common", 0.9, 0.9, 1, 1, 2, 8.0, 10.0, (0.2 + 1) / 2, True),
            ("rarity", "rare", 0.45, 0.45, 2, 0, 2, 2.0, 2.0, 0.25, False),
        ],
        MEASURES,
    )
    assert_approx_df_equality(measures(out), expected, TOL, ignore_nullable=True)
    # every row says which group it belongs to and what it was computed under
    stamps = out.select("run_id", "system", "pool_version", "k", "contract_fingerprint", "code_version",
                        "min_eligible", "ci_level").distinct().collect()
    assert [tuple(r) for r in stamps] == [("n1", "bm25", "pool-1", 10, "fp", ndcg_spark.__version__, 2, None)]
    assert out.filter(F.col("created_at").isNull()).count() == 0
    assert out.filter(F.col("macro_ci_low").isNotNull()).count() == 0  # replicates: 0 -> no interval
    assert tuple(out.columns) == AGGREGATE_COLUMNS


def test_the_shell_spelling_is_the_same_function():
    """``ndcg_spark.aggregate`` (the shell's spelling, README) is stage 2's function itself, not a
    wrapper that could drift from it."""
    assert ndcg_spark.aggregate is aggregate


@pytest.mark.parametrize(
    "policy, macro, eligible",
    [
        # SPEC §2: [1, 3, 0, 2] -> 0.5766666455..., [2, 0, 1] -> 0.9639404333..., [0, 0] has no ideal
        ("exclude", 0.7703035394, 2),
        ("zero", (0.5766666455 + 0.9639404333 + 0.0) / 3, 3),
    ],
)
def test_empty_ideal_requests_are_counted_under_each_policy(spark, policy, macro, eligible):
    cands = spark.createDataFrame(
        [("q1", "a", 1, 1.0), ("q1", "b", 2, 3.0), ("q1", "c", 3, 0.0), ("q1", "d", 4, 2.0),
         ("q2", "a", 1, 2.0), ("q2", "b", 2, 0.0), ("q2", "c", 3, 1.0),
         ("q3", "a", 1, 0.0), ("q3", "b", 2, 0.0)],
        "request_id string, doc_id string, position int, grade double",
    )
    per_request = score_requests(cands, contract=Contract(k=[3], empty_ideal=policy))
    row = aggregate(per_request, AggregateSpec(replicates=0)).collect()
    assert len(row) == 1
    row = row[0]
    # exclude: q3 is set aside, not in the mean; zero: q3 is in the mean as 0. Both count it.
    assert row["macro_ndcg"] == pytest.approx(macro, abs=1e-9)
    assert (row["n_eligible"], row["n_empty_ideal"], row["n_requests"]) == (eligible, 1, 3)


def test_empty_ideal_error_fails_before_anything_is_aggregated(spark):
    cands = spark.createDataFrame(
        [("q1", "a", 1, 1.0), ("q3", "a", 1, 0.0)], "request_id string, doc_id string, position int, grade double"
    )
    with pytest.raises(EmptyIdealError):
        score_requests(cands, contract=Contract(k=[3], empty_ideal="error"))
    clean = score_requests(cands.filter("request_id = 'q1'"), contract=Contract(k=[3], empty_ideal="error"))
    row = aggregate(clean, AggregateSpec(replicates=0)).collect()[0]
    assert (row["n_eligible"], row["n_empty_ideal"], row["n_requests"], row["macro_ndcg"]) == (1, 0, 1, 1.0)


def test_small_slices_are_flagged_reported_and_left_out_of_the_audit(spark, traffic_table):
    aggs = aggregate(traffic_table, AggregateSpec(slices=("rarity", "age"), min_eligible=2, replicates=0))
    flagged = {(r["slice_dimension"], r["slice_value"]) for r in aggs.filter("below_min_eligible").collect()}
    assert flagged == {("age", "old"), ("rarity", "common")}  # 1 eligible request each: reported, flagged
    rows = {r["slice_dimension"]: r for r in audit(aggs).collect()}
    # age: 'old' (0.5) is lower than 'new' (0.65) but has 1 eligible request < 2: not ranked
    assert rows["age"]["worst_slice_value"] == "new"
    assert (rows["age"]["n_slices"], rows["age"]["n_slices_ranked"]) == (2, 1)
    assert rows["age"]["gap_to_overall"] == pytest.approx(0.65 - 0.6, abs=TOL)
    assert rows["rarity"]["worst_slice_value"] == "rare"
    assert rows["rarity"]["gap_to_overall"] == pytest.approx(0.45 - 0.6, abs=TOL)
    assert rows["rarity"]["ci_below_overall"] is None  # no interval without replicates
    # nothing ranks when every slice is small; the row is still there
    none = {r["slice_dimension"]: r for r in audit(
        aggregate(traffic_table, AggregateSpec(slices=("rarity",), min_eligible=5, replicates=0))).collect()}
    assert none["rarity"]["worst_slice_value"] is None and none["rarity"]["n_slices_ranked"] == 0
    assert tuple(audit(aggs).columns) == AUDIT_COLUMNS


def test_pool_versions_runs_and_contracts_are_never_pooled(spark, traffic_table):
    other_pool = traffic_table.withColumn("pool_version", F.lit("pool-2")).withColumn("ndcg", F.col("ndcg") / 2)
    other_contract = traffic_table.withColumn("contract_fingerprint", F.lit("fp2"))
    both = traffic_table.unionByName(other_pool).unionByName(other_contract)
    rows = aggregate(both, AggregateSpec(replicates=0)).orderBy("contract_fingerprint", "pool_version").collect()
    assert [(r["contract_fingerprint"], r["pool_version"], r["n_requests"]) for r in rows] == [
        ("fp", "pool-1", 4), ("fp", "pool-2", 4), ("fp2", "pool-1", 4)]
    assert rows[1]["macro_ndcg"] == pytest.approx(0.3, abs=TOL)


def test_a_null_slice_value_is_a_slice_of_its_own(spark, traffic_table):
    table = traffic_table.withColumn("rarity", F.when(F.col("request_id") == "r3", None).otherwise(F.col("rarity")))
    rows = aggregate(table, AggregateSpec(slices=("rarity",), min_eligible=1, replicates=50)).filter(
        "slice_dimension = 'rarity'").orderBy(F.col("slice_value").asc_nulls_first()).collect()
    assert [(r["slice_value"], r["n_requests"]) for r in rows] == [(None, 1), ("common", 2), ("rare", 1)]
    assert rows[0]["macro_ci_low"] == pytest.approx(0.4) and rows[0]["macro_ci_high"] == pytest.approx(0.4)


def test_weights_missing_negative_or_defaulted(spark, traffic_table):
    missing = traffic_table.withColumn("weight", F.when(F.col("request_id") == "r2", None).otherwise(F.col("weight")))
    with pytest.raises(InputError, match=r"weight_invalid.*request 'r2'"):
        aggregate(missing, AggregateSpec(replicates=0))
    row = aggregate(missing, AggregateSpec(replicates=0, default_weight=3.0)).collect()[0]
    assert row["weighted_ndcg"] == pytest.approx((8 * 0.9 + 3 * 0.5 + 0.4) / 12, abs=TOL)
    negative = traffic_table.withColumn("weight", F.lit(-1.0))
    with pytest.raises(InputError, match="weight_invalid"):
        aggregate(negative, AggregateSpec(replicates=0, default_weight=1.0))


def test_uniform_weights_make_the_weighted_mean_the_macro_mean(spark, traffic_table):
    row = aggregate(traffic_table.withColumn("weight", F.lit(1.0)), AggregateSpec(replicates=50)).collect()[0]
    assert row["weighted_ndcg"] == row["macro_ndcg"] == pytest.approx(0.6, abs=TOL)
    assert (row["weighted_ci_low"], row["weighted_ci_high"]) == (row["macro_ci_low"], row["macro_ci_high"])


def test_bad_per_request_tables_are_refused_with_the_rule(spark, traffic_table):
    with pytest.raises(InputError, match="missing column.*weight"):
        aggregate(traffic_table.drop("weight"), AggregateSpec(replicates=0))
    with pytest.raises(InputError, match="missing column.*region"):
        aggregate(traffic_table, AggregateSpec(slices=("region",), replicates=0))
    with pytest.raises(InputError, match=r"4 row\(s\).*metric_out_of_range.*request 'r1'"):
        aggregate(traffic_table.withColumn("ndcg", F.lit(1.5)), AggregateSpec(replicates=0))
    one_bad = traffic_table.withColumn("ndcg", F.when(F.col("request_id") == "r3", -0.1).otherwise(F.col("ndcg")))
    with pytest.raises(InputError, match=r"1 row\(s\).*metric_out_of_range.*request 'r3' of system 'bm25' at k=10"):
        aggregate(one_bad, AggregateSpec(replicates=0))
    twice = traffic_table.unionByName(traffic_table.filter("request_id = 'r1'"))
    with pytest.raises(Exception, match="duplicate_request"):
        aggregate(twice, AggregateSpec(replicates=20)).collect()
    # without intervals too (before, the point estimates alone counted r1's rows twice): each of
    # r1's rows is one group's, so each is a repeat; the example is the smallest system and K
    r1 = sorted((r["system"], r["k"]) for r in traffic_table.filter("request_id = 'r1'").collect())
    message = (rf"request 'r1' of system '{r1[0][0]}' at k={r1[0][1]} has more than one row for one run"
               rf".*duplicate_request.*\({len(r1)} request\(s\) with a repeated row")
    with pytest.raises(InputError, match=message):
        aggregate(twice, AggregateSpec(replicates=0))


def test_spec_from_yaml_section_and_its_errors():
    spec = AggregateSpec.from_dict(
        {"min_eligible": 50, "bootstrap": {"level": 0.9, "replicates": 500, "seed": 7}}, carried_slices=["a", "b"]
    )
    assert (spec.slices, spec.min_eligible, spec.ci_level, spec.replicates, spec.seed) == (("a", "b"), 50, 0.9, 500, 7)
    assert spec.buckets == 1024  # the default resampling unit: 1024 random groups per slice cell
    assert AggregateSpec.from_dict({"bootstrap": {"buckets": 0}}).buckets == 0
    assert spec.quantiles == pytest.approx((0.05, 0.95))
    assert AggregateSpec.from_dict({"slices": ["b"]}, carried_slices=["a", "b"]).slices == ("b",)
    assert AggregateSpec.from_dict(None).slices == ()
    assert AggregateSpec.from_dict(spec.to_dict(), carried_slices=["a", "b"]) == spec  # metadata round-trips
    bad = [
        ({"bootstrap": {"level": 1.0}}, "aggregate.bootstrap.level"),
        ({"bootstrap": {"replicates": 5}}, "aggregate.bootstrap.replicates"),
        ({"bootstrap": {"replicates": True}}, "aggregate.bootstrap.replicates"),
        ({"bootstrap": {"sed": 1}}, "aggregate.bootstrap.sed"),
        ({"bootstrap": {"buckets": 8}}, "aggregate.bootstrap.buckets"),
        ({"bootstrap": {"buckets": -1}}, "aggregate.bootstrap.buckets"),
        ({"bootstrap": {"buckets": 1.5}}, "aggregate.bootstrap.buckets"),
        ({"min_eligible": 0}, "aggregate.min_eligible"),
        ({"slices": ["a", "a"]}, r"aggregate.slices\[1\]"),
        ({"slices": ["c"]}, r"aggregate.slices\[0\]: 'c' is not carried"),
        ({"slices": "a"}, "aggregate.slices"),
        ({"default_weight": -1}, "aggregate.default_weight"),
        ({"weights": 1}, "aggregate.weights"),
    ]
    for section, path in bad:
        with pytest.raises(ContractError, match=f"^{path}"):
            AggregateSpec.from_dict(section, carried_slices=["a", "b"])
    with pytest.raises(ContractError, match=r"^aggregate.slices\[0\]: 'overall' names the overall slice"):
        AggregateSpec.from_dict({}, carried_slices=["overall"])


def test_poisson_weights_have_mean_and_variance_one(spark):
    draws = spark.range(200_000).select(poisson_weight(3, F.col("id") % 7, F.col("id")).alias("c"))
    row = draws.agg(F.avg("c").alias("mean"), F.variance("c").alias("var"),
                    F.avg((F.col("c") == 0).cast("double")).alias("p0")).collect()[0]
    # standard errors at n = 200,000: mean 0.0022, variance ~0.0035, P(0) 0.0011
    assert row["mean"] == pytest.approx(1.0, abs=0.01)
    assert row["var"] == pytest.approx(1.0, abs=0.02)
    assert row["p0"] == pytest.approx(math.exp(-1), abs=0.005)


def _simulated(spark, datasets: int, requests: int, seed: int):
    """``datasets`` independent samples of ``requests`` requests each, as slice values of one
    system: NDCG = u^2 (skewed; true mean 1/3), 10% empty ideal, weight 1 + 4u (so the true
    traffic-weighted mean is E[w u^2] / E[w] = (1/3 + 1) / 3 = 4/9)."""
    def unit(salt: str):
        h = F.xxhash64(F.lit(seed), F.lit(salt), F.col("id"))
        return F.shiftrightunsigned(h, 11).cast("double") * F.lit(2.0**-53)

    u, empty = unit("u"), unit("empty") < 0.1
    return spark.range(datasets * requests).select(
        F.lit("sim").alias("run_id"),
        F.lit("fp").alias("contract_fingerprint"),
        F.lit("pool").alias("pool_version"),
        F.lit("sim").alias("system"),
        F.concat(F.lit("d"), (F.col("id") / requests).cast("long"), F.lit("-r"), F.col("id") % requests).alias(
            "request_id"),
        F.lit(10).alias("k"),
        F.when(empty, None).otherwise(u * u).alias("ndcg"),
        empty.alias("empty_ideal"),
        F.lit(10).cast("long").alias("n_candidates"),
        F.lit(0).alias("n_unjudged_in_top_k"),
        (F.lit(1.0) + F.lit(4.0) * u).alias("weight"),
        (F.col("id") / requests).cast("long").cast("string").alias("dataset"),
    )


def _coverage(out):
    """Over the ``dataset`` slices of ``out`` (datasets of :func:`_simulated`): how many, the
    share of macro and of weighted intervals covering the true mean, the mean macro width."""
    truth_macro, truth_weighted = 1 / 3, 4 / 9
    return (
        out.filter("slice_dimension = 'dataset'")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.avg(((F.col("macro_ci_low") <= truth_macro) & (truth_macro <= F.col("macro_ci_high"))).cast("double"))
            .alias("macro"),
            F.avg(((F.col("weighted_ci_low") <= truth_weighted) & (truth_weighted <= F.col("weighted_ci_high")))
                  .cast("double")).alias("weighted"),
            F.avg(F.col("macro_ci_high") - F.col("macro_ci_low")).alias("width"),
        )
        .collect()[0]
    )


def _assert_coverage(row, *, datasets: int, band: tuple[float, float], eligible: int, rel_width: float) -> None:
    message = f"coverage macro {row['macro']:.3f}, weighted {row['weighted']:.3f}, mean width {row['width']:.4f}"
    assert row["n"] == datasets, message
    assert band[0] <= row["macro"] <= band[1], message
    assert band[0] <= row["weighted"] <= band[1], message
    # the width matches the normal-theory 2 * 1.96 * sd / sqrt(n): sd(u^2) = sqrt(4/45)
    assert row["width"] == pytest.approx(2 * 1.96 * math.sqrt(4 / 45) / math.sqrt(eligible), rel=rel_width), message


@pytest.mark.slow
@pytest.mark.usefixtures("nightly_spark")  # its cost is its rows: computed as a nightly run computes
def test_interval_covers_the_true_mean_at_about_the_declared_rate(spark):
    """200 simulated datasets of 60 requests (about 54 eligible), evaluated in one Spark job as
    200 slices; 95% percentile intervals from 200 replicates each. Coverage of a percentile
    bootstrap at n = 54 on a skewed metric is a little under nominal; with 200 datasets the
    binomial standard error is 0.015, so [0.88, 0.99] is the acceptance band (measured with these
    seeds: 0.945 macro, 0.945 weighted; the default 1024 random groups per cell leave almost
    every one of the 60 requests a group of its own)."""
    table = _simulated(spark, datasets=200, requests=60, seed=5)
    out = aggregate(table, AggregateSpec(slices=("dataset",), min_eligible=1, replicates=200, seed=11))
    _assert_coverage(_coverage(out), datasets=200, band=(0.88, 0.99), eligible=54, rel_width=0.15)


@pytest.mark.usefixtures("nightly_spark")  # its cost is its rows: computed as a nightly run computes
def test_random_group_intervals_cover_large_slices_at_about_the_declared_rate(spark):
    """The random-group bootstrap where it differs from the request bootstrap: 150 datasets of
    600 requests, each cell resampled as 32 groups of ~19 requests (``buckets=32``), 200
    replicates. The group sums are i.i.d. across groups, so the percentile interval of the ratio
    of sums still covers at about the nominal rate, only with 32 units' worth of precision in
    its width. Binomial standard error at 150 datasets: 0.018, hence the band [0.88, 0.995]
    (measured with these seeds: 0.907 macro, 0.920 weighted, width 0.0491 against 0.0503). With
    32 groups the widths carry the noise of 32 units: within 25 % of normal theory."""
    table = _simulated(spark, datasets=150, requests=600, seed=8)
    out = aggregate(table, AggregateSpec(slices=("dataset",), min_eligible=1, replicates=200, seed=3, buckets=32))
    _assert_coverage(_coverage(out), datasets=150, band=(0.88, 0.995), eligible=540, rel_width=0.25)


@pytest.mark.slow
@pytest.mark.parametrize("buckets", [0, 16], ids=["request-bootstrap", "random-groups"])
def test_same_seed_same_output_whatever_the_partitioning(spark, buckets):
    table = _simulated(spark, datasets=4, requests=50, seed=2)
    spec = AggregateSpec(slices=("dataset",), replicates=100, seed=42, buckets=buckets)
    stamp = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
    one = aggregate(table.repartition(1), spec, created_at=stamp).orderBy("slice_dimension", "slice_value")
    many = aggregate(table.repartition(7, "request_id"), spec, created_at=stamp).orderBy(
        "slice_dimension", "slice_value")
    assert_df_equality(one, many)  # exact: bit for bit, not approximately
    other_seed = aggregate(table, AggregateSpec(slices=("dataset",), replicates=100, seed=43, buckets=buckets),
                           created_at=stamp)
    low = {r["slice_value"]: r["macro_ci_low"] for r in one.collect()}
    assert {r["slice_value"]: r["macro_ci_low"] for r in other_seed.collect()} != low  # the seed is used


# ----------------------------------------------------------------------------- CLI end to end
def _tiny_inputs(spark, root: Path) -> dict[str, str]:
    """Two systems over one pool: 40 requests, 4 candidates each, graded 0..3 (every 5th request
    all zero: empty ideal), weights 1..4, a rarity slice."""
    requests = spark.range(40).select(F.format_string("q%02d", "id").alias("request_id"), F.col("id"))
    docs = requests.select("request_id", "id", F.explode(F.sequence(F.lit(1), F.lit(4))).alias("d"))
    grade = F.when(F.col("id") % 5 == 0, 0.0).otherwise(((F.col("id") * 7 + F.col("d") * 3) % 4).cast("double"))
    judgments = docs.select("request_id", F.format_string("doc%d", "d").alias("doc_id"), grade.alias("grade"))
    candidates = docs.select(
        "request_id", F.format_string("doc%d", "d").alias("doc_id"),
        F.explode(F.array(
            F.struct(F.lit("bm25").alias("system"), F.col("d").alias("position")),
            F.struct(F.lit("hybrid").alias("system"), (F.lit(5) - F.col("d")).alias("position")),
        )).alias("s"),
    ).select("request_id", "doc_id", "s.system", F.col("s.position").cast("int").alias("position"),
             F.lit("pool-1").alias("pool_version"))
    attributes = requests.select(
        "request_id", (F.col("id") % 4 + 1).cast("double").alias("weight"),
        F.when(F.col("id") % 3 == 0, "rare").otherwise("common").alias("rarity"))
    paths = {}
    for name, df in (("candidates", candidates), ("judgments", judgments), ("attributes", attributes)):
        paths[name] = str(root / "data" / name)
        df.write.mode("overwrite").parquet(paths[name])
    return paths


@pytest.mark.e2e
def test_cli_run_scores_aggregates_and_prints_the_summary(spark, tmp_path, capsys):
    from ndcg_spark.cli import main
    from ndcg_spark.storage.io import read_run

    paths = _tiny_inputs(spark, tmp_path)
    out = tmp_path / "warehouse"
    job = {
        "version": 1,
        "contract": {"k": [3, 10]},
        "inputs": {"candidates": {"path": paths["candidates"]}, "judgments": {"path": paths["judgments"]}},
        "attributes": {"path": paths["attributes"], "weight": "weight", "slices": ["rarity"]},
        "aggregate": {"min_eligible": 10, "bootstrap": {"level": 0.9, "replicates": 50, "seed": 1}},
        "outputs": {name: {"path": str(out / name)} for name in ("per_request", "aggregate", "audit", "run_metadata")},
        "spark": {"master": "local[2]", "shuffle_partitions": 2},
    }
    config = tmp_path / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump(job), encoding="utf-8")

    assert main(["run", "--config", str(config), "--run-id", "night-1"]) == 0
    printed = capsys.readouterr().out
    assert "macro NDCG [90% interval]" in printed and "worst slice per dimension at k=10" in printed
    overall_lines = [line.split() for line in printed.splitlines() if line.startswith(("bm25 ", "hybrid "))]
    assert len(overall_lines) == 4  # 2 systems x 2 K
    assert all(line[-4:] == ["32", "8", "0", "40"] for line in overall_lines)  # eligible, empty ideal, no results, all

    aggs = read_run(spark, Source(path=str(out / "aggregate")), "night-1")
    assert aggs.count() == 2 * 2 * (1 + 2)  # systems x K x (overall + 2 rarity values)
    assert aggs.filter("macro_ci_low IS NULL OR macro_ci_low > macro_ndcg OR macro_ci_high < macro_ndcg").count() == 0
    meta = read_run(spark, Source(path=str(out / "run_metadata")), "night-1").collect()
    assert len(meta) == 1
    resolved = Contract(k=[3, 10], order="position")
    assert meta[0]["contract"] == resolved.to_json() and meta[0]["contract_fingerprint"] == resolved.fingerprint
    assert meta[0]["row_counts"]["per_request"] == 2 * 2 * 40 and meta[0]["row_counts"]["aggregate"] == 12
    assert meta[0]["row_counts"]["audit"] == 2 * 2 * 1
    assert meta[0]["row_counts"]["population"] == 40  # the night's requests, stamped
    assert AggregateSpec.from_dict(yaml.safe_load(meta[0]["aggregate_spec"]), carried_slices=["rarity"]) == \
        AggregateSpec(slices=("rarity",), min_eligible=10, ci_level=0.9, replicates=50, seed=1)

    # stage 2 alone re-aggregates the same run: same numbers, the run's partitions replaced
    before = sorted(tuple(r) for r in aggs.drop("created_at").collect())
    assert main(["aggregate", "--config", str(config), "--run-id", "night-1"]) == 0
    capsys.readouterr()
    again = read_run(spark, Source(path=str(out / "aggregate")), "night-1")
    assert sorted(tuple(r) for r in again.drop("created_at").collect()) == before

    # a run that was never scored: one readable paragraph, exit 2, and no run-status row for it
    assert main(["aggregate", "--config", str(config), "--run-id", "night-9"]) == 2
    assert "has no rows in the per-request table" in capsys.readouterr().err
    status = read_run(spark, Source(path=str(out / "run_status"))).collect()
    assert sorted((r["run_id"], r["status"]) for r in status) == [("night-1", "complete")]

    # a bad aggregate: section fails `run` before stage 1 scores anything
    job["aggregate"]["bootstrap"]["replicates"] = 5
    config.write_text(yaml.safe_dump(job), encoding="utf-8")
    assert main(["run", "--config", str(config), "--run-id", "night-2"]) == 2
    assert "aggregate.bootstrap.replicates" in capsys.readouterr().err
    assert read_run(spark, Source(path=str(out / "per_request")), "night-2").count() == 0
