"""Guardrails (SPEC §5): each statistic, interval and verdict against an independent computation.

The oracle below is plain Python: rates, means of the non-null values, percentiles by linear
interpolation between closest ranks over the multiset of values (each repeated as often as it is
drawn), percentile intervals over replicates, and the verdict rule read from the SPEC. It shares
only the bootstrap *draws* with the code (they are a pure function of seed, replicate and unit,
collected from :func:`~ndcg_spark.metrics.resampling.poisson_weight`), never the statistics.
"""

from __future__ import annotations

import json
import re
import math
import random
from collections import defaultdict

import pytest
from pyspark.sql import functions as F

from ndcg_spark import CompareSpec, Contract, GuardrailSpec, guardrail_table, score_requests
from ndcg_spark.errors import ContractError, InputError, ValidationError
from ndcg_spark.guardrails.columns import GUARDRAIL_COLUMNS
from ndcg_spark.metrics.resampling import poisson_weight

TOLERANCE = 1e-9
OUTCOMES_SCHEMA = "session_id string, tech string, arm string, rarity string, done boolean, t double, lat double"


def _percentile(values: list[float], p: float) -> float | None:
    """Linear interpolation between closest ranks (position p * (n - 1)): Spark's and numpy's default."""
    if not values:
        return None
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _statistic(rows, column, statistic, weights):
    """The statistic over ``rows`` each counted ``weights[unit]`` times (None when nothing is observed)."""
    values = [v for r in rows for v in [r[column]] * weights(r["tech"]) if v is not None]
    if not values:
        return None
    if statistic == "p90":
        return _percentile(values, 0.9)
    return math.fsum(values) / len(values)


def _interval(values, level=0.95):
    values = [v for v in values if v is not None]
    return [_percentile(values, (1 - level) / 2), _percentile(values, 1 - (1 - level) / 2)]


def _release(seed: int, n: int = 240):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        tech = f"t{i // 3}"
        arm = "bm25" if rng.random() < 0.5 else "hybrid"
        arm = "bm25" if int(tech[1:]) % 2 else "hybrid"  # one arm per technician (two-sample)
        slow = 1.3 if arm == "hybrid" else 1.0
        reached = rng.random() < (0.8 if arm == "bm25" else 0.7)
        rows.append({"session_id": f"s{i}", "tech": tech, "arm": arm, "rarity": rng.choice(["rare", "common"]),
                     "done": rng.random() < 0.75, "t": round(rng.expovariate(1 / 90) * slow, 3) if reached else None,
                     "lat": float(rng.randint(80, 400))})
    return rows


def _spec(replicates=60, **release):
    return GuardrailSpec.from_dict(_spec_section(replicates, **release))


def _spec_section(replicates=60, **release):
    return ({
        "release": {"outcomes": {"path": "-"}, "arm": "arm", "unit": "tech", "slices": ["rarity"], **release},
        "bootstrap": {"replicates": replicates, "seed": 5},
        "checks": [
            {"name": "completion", "column": "done", "statistic": "rate", "better": "higher",
             "margin": {"absolute": 0.05}},
            {"name": "time_to_procedure", "column": "t", "statistic": "mean", "better": "lower",
             "margin": {"relative": 0.1}},
            {"name": "latency_p90", "column": "lat", "statistic": "p90", "better": "lower",
             "margin": {"relative": 0.5}, "range": [0, None]},
        ]})


@pytest.fixture(scope="module")
def per_request(spark):
    cands = spark.createDataFrame([(f"q{i}", f"d{j}", s, j + 1) for i in range(6) for j in range(3)
                                   for s in ("bm25", "hybrid")],
                                  "request_id string, doc_id string, system string, position int")
    grades = spark.createDataFrame([(f"q{i}", "d0", 1.0) for i in range(6)], "request_id string, doc_id string, grade double")
    return score_requests(cands, grades, Contract(k=[1, 3]))


def _oracle_verdict(better, kind, margin, difference_interval, relative_interval, observed=(30, 30)):
    """SPEC §5 read directly: 'worse' is the candidate's excess in the bad direction; fewer than
    30 observed rows in an arm (the default ``min_observed``) is no evidence."""
    if min(observed) < 30:
        return "inconclusive"
    interval = relative_interval if kind == "relative" else difference_interval
    if interval is None or None in interval:
        return "inconclusive"
    worse = interval if better == "lower" else [-interval[1], -interval[0]]
    return "pass" if worse[1] < margin else "fail" if worse[0] > margin else "inconclusive"


def test_release_statistics_intervals_and_verdicts_match_a_plain_python_oracle(spark, per_request):
    rows = _release(seed=1)
    outcomes = spark.createDataFrame([tuple(r[c.split()[0]] for c in OUTCOMES_SCHEMA.split(", ")) for r in rows],
                                     OUTCOMES_SCHEMA)
    spec = _spec()
    table = guardrail_table(per_request, spec, CompareSpec(baseline="bm25", candidate="hybrid"), outcomes=outcomes)
    assert table.columns == list(GUARDRAIL_COLUMNS)
    got = {(r["guardrail"], r["slice_dimension"], r["slice_value"]): r.asDict() for r in table.collect()}
    assert len(got) == 3 * 3  # overall + rare + common, per guardrail
    techs = sorted({r["tech"] for r in rows})
    draws = {(r["r"], r["u"]): r["c"] for r in spark.createDataFrame(
        [(rep, t) for rep in range(1, 61) for t in techs], "r int, u string").select(
        "r", "u", poisson_weight(5, F.col("r"), F.col("u")).alias("c")).collect()}
    checks = {"completion": ("done", "rate"), "time_to_procedure": ("t", "mean"), "latency_p90": ("lat", "p90")}
    for (name, dimension, value), row in got.items():
        column, statistic = checks[name]
        mine = [r for r in rows if dimension == "overall" or r["rarity"] == value]
        if column == "done":
            mine = [{**r, "done": float(r["done"])} for r in mine]
        arms = {arm: [r for r in mine if r["arm"] == arm] for arm in ("bm25", "hybrid")}
        per_replicate = defaultdict(list)
        for rep in range(1, 61):
            stats = [_statistic(arms[a], column, statistic, lambda u, rep=rep: draws[(rep, u)]) for a in ("bm25", "hybrid")]
            per_replicate["baseline"].append(stats[0])
            per_replicate["candidate"].append(stats[1])
            per_replicate["difference"].append(None if None in stats else stats[1] - stats[0])
            per_replicate["relative"].append(None if None in stats or stats[0] == 0 else stats[1] / stats[0] - 1)
        point = [_statistic(arms[a], column, statistic, lambda u: 1) for a in ("bm25", "hybrid")]
        for side, arm, value_ in (("baseline", "bm25", point[0]), ("candidate", "hybrid", point[1])):
            assert row[f"{side}_n"] == len(arms[arm])
            assert row[f"{side}_n_observed"] == sum(r[column] is not None for r in arms[arm])
            assert row[f"{side}_value"] == pytest.approx(value_, abs=TOLERANCE)
            low, high = _interval(per_replicate[side])
            assert (row[f"{side}_ci_low"], row[f"{side}_ci_high"]) == pytest.approx((low, high), abs=TOLERANCE)
        assert row["difference"] == pytest.approx(point[1] - point[0], abs=TOLERANCE)
        assert row["relative_difference"] == pytest.approx(point[1] / point[0] - 1, abs=TOLERANCE)
        difference, relative = _interval(per_replicate["difference"]), _interval(per_replicate["relative"])
        assert [row["difference_ci_low"], row["difference_ci_high"]] == pytest.approx(difference, abs=TOLERANCE)
        assert [row["relative_ci_low"], row["relative_ci_high"]] == pytest.approx(relative, abs=TOLERANCE)
        observed = [sum(r[column] is not None for r in arms[arm]) for arm in ("bm25", "hybrid")]
        assert row["below_min_observed"] == (min(observed) < 30)
        assert row["verdict"] == _oracle_verdict(row["better"], row["margin_kind"], row["margin"], difference, relative,
                                                 observed)
    overall = [row["verdict"] for (name, dim, _), row in got.items() if dim == "overall"]
    expected = "fail" if "fail" in overall else "inconclusive" if "inconclusive" in overall else "pass"
    assert {row["overall_verdict"] for row in got.values()} == {expected}
    first = got[("time_to_procedure", "overall", "all")]
    assert json.loads(first["declaration"])["margin"] == {"relative": 0.1}
    assert first["guardrail_fingerprint"] == spec.fingerprint and first["rows_read"] == len(rows)
    assert first["baseline_observed_share"] == pytest.approx(first["baseline_n_observed"] / first["baseline_n"])


def test_the_fingerprint_follows_the_declarations_not_their_spelling():
    spec = _spec()
    same = GuardrailSpec.from_dict({**json.loads(json.dumps({"checks": [g.to_dict() for g in spec.checks]})),
                                    "release": {"outcomes": "elsewhere", **spec.release.to_dict()},
                                    "bootstrap": {"seed": 5, "replicates": 60}})
    assert same.fingerprint == spec.fingerprint
    assert _spec(replicates=61).fingerprint != spec.fingerprint


@pytest.mark.parametrize("section, path, words", [
    ({"checks": []}, "guardrails.checks", "at least one"),
    ({"checks": [{"name": "x", "column": "x", "better": "up", "margin": {"absolute": 1}}]},
     "guardrails.checks[0].better", "higher, lower"),
    ({"checks": [{"name": "x", "column": "x", "better": "lower", "margin": 0.1}]},
     "guardrails.checks[0].margin", "{absolute: x}"),
    ({"checks": [{"name": "x", "column": "x", "better": "lower", "margin": {"absolute": 1}}]},
     "guardrails.checks[0]", "guardrails.release"),
    ({"checks": [{"name": "x", "source": "offline", "flag": "top_k_lacks", "column": "g", "better": "lower",
                  "margin": {"absolute": 1}}]}, "guardrails.checks[0].value", "required"),
    ({"release": {"arm": "arm"}, "checks": [{"name": "x", "column": "x", "better": "lower",
                                             "margin": {"absolute": 1}}]}, "guardrails.release.outcomes", "required"),
    ({"checks": [{"name": "x y", "source": "offline", "flag": "first_result_unjudged", "better": "lower",
                  "margin": {"absolute": 1}}]}, "guardrails.checks[0].name", "identifier"),
])
def test_declaration_errors_name_their_field(section, path, words):
    with pytest.raises(ContractError) as caught:
        GuardrailSpec.from_dict(section)
    assert str(caught.value).startswith(path + ":") and words in str(caught.value)


def test_the_headline_is_a_declared_metric_at_a_scored_k_refused_by_name_otherwise():
    """``guardrails.headline``: NDCG at the largest K unless declared; a metric the contract does not
    declare, or a K it does not score, is refused when the job's YAML is read; only a declared
    headline enters the fingerprint."""
    from ndcg_spark.config.job import JobConfig

    panel = Contract.from_dict({"k": [5, 10], "metrics": ["ndcg", "recall"]})
    assert _spec().headline(Contract.from_dict({"k": [3, 20]})) == ("ndcg", 20)
    assert GuardrailSpec.from_dict({**_spec_section(), "headline": "recall"}).headline(panel) == ("recall", 10)
    assert GuardrailSpec.from_dict({**_spec_section(), "headline": {"metric": "recall", "k": 5}}).headline(panel) \
        == ("recall", 5)
    assert GuardrailSpec.from_dict({**_spec_section(), "headline": "ndcg"}).fingerprint == _spec().fingerprint
    assert GuardrailSpec.from_dict({**_spec_section(), "headline": "recall"}).fingerprint != _spec().fingerprint

    def job(headline, metrics=("ndcg",)):
        return JobConfig.from_dict({"version": 1, "contract": {"k": [5, 10], "metrics": list(metrics)},
                                    "inputs": {"candidates": "c"},
                                    "guardrails": {**_spec_section(), "headline": headline}}, base=None)

    assert job("recall", ("ndcg", "recall")).guardrail_spec().headline_metric == "recall"
    for headline, path, words in [
        ("precision", "guardrails.headline.metric", "is 'precision', which contract.metrics does not declare (ndcg)"),
        ({"metric": "ndcg", "k": 3}, "guardrails.headline.k", "is 3, which contract.k does not score ([5, 10])"),
        ("ndcgg", "guardrails.headline.metric", "must be one of average_precision, hit_rate, ndcg"),
        ({"metric": "ndcg", "at": 3}, "guardrails.headline.at", "is not a known field"),
    ]:
        with pytest.raises(ContractError) as caught:
            job(headline).guardrail_spec()
        assert str(caught.value).startswith(f"{path}: {words}"), str(caught.value)


def _outcomes(spark, rows):
    return spark.createDataFrame([tuple(r[c.split()[0]] for c in OUTCOMES_SCHEMA.split(", ")) for r in rows],
                                 OUTCOMES_SCHEMA)


def test_bad_outcome_rows_fail_naming_the_rule_the_count_and_an_example(spark, per_request):
    rows = _release(seed=2, n=60)
    compare = CompareSpec(baseline="bm25", candidate="hybrid")
    two_arms = rows + [{**rows[0], "session_id": "extra", "arm": "hybrid" if rows[0]["arm"] == "bm25" else "bm25"}]
    with pytest.raises(ValidationError) as caught:
        guardrail_table(per_request, _spec(), compare, outcomes=_outcomes(spark, two_arms))
    message = str(caught.value)
    assert "outcome_unit_in_two_arms" in message and f"{sum(r['tech'] == rows[0]['tech'] for r in two_arms)} outcome rows" in message
    assert rows[0]["tech"] in message  # the example row
    negative = rows[:-1] + [{**rows[-1], "lat": -5.0}]
    with pytest.raises(ValidationError, match=r"1 outcome rows break rule outcome_out_of_range"):
        guardrail_table(per_request, _spec(), compare, outcomes=_outcomes(spark, negative))
    only_bm25 = [r for r in rows if r["arm"] == "bm25"]
    with pytest.raises(ValidationError, match=r"no row of arm 'hybrid' \(rule outcome_arm_missing"):
        guardrail_table(per_request, _spec(), compare, outcomes=_outcomes(spark, only_bm25))
    with pytest.raises(InputError, match=r"no column 'lat'"):
        guardrail_table(per_request, _spec(), compare, outcomes=_outcomes(spark, rows).drop("lat"))


def test_quarantined_outcome_rows_are_set_aside_and_counted(spark, per_request):
    rows = _release(seed=3, n=90)
    other_arm = "hybrid" if rows[0]["arm"] == "bm25" else "bm25"
    bad = rows + [{**rows[0], "session_id": "extra", "arm": other_arm, "lat": -2.0},  # breaks two rules: once aside
                  {**rows[5], "session_id": "neg", "lat": -1.0}]
    table = guardrail_table(per_request, _spec(replicates=0, on_bad_rows="quarantine"),
                            CompareSpec(baseline="bm25", candidate="hybrid"), outcomes=_outcomes(spark, bad))
    row = table.filter("guardrail = 'completion' AND slice_dimension = 'overall'").first()
    unit_rows = sum(r["tech"] == rows[0]["tech"] for r in bad)
    assert row["rows_read"] == len(bad) and row["rows_set_aside"] == unit_rows + 1
    assert row["baseline_n"] + row["candidate_n"] == len(bad) - unit_rows - 1
    assert row["verdict"] == "inconclusive" and row["baseline_ci_low"] is None  # no replicates, no interval


def test_a_slice_with_too_few_observed_rows_is_inconclusive_and_flagged(spark, per_request):
    rows = _release(seed=10, n=120)
    for i, r in enumerate(rows):
        r["rarity"] = "rare" if i < 12 else "common"  # about 6 rare sessions per arm
    spec = GuardrailSpec.from_dict({**_spec_section(replicates=20), "min_observed": 10})
    table = guardrail_table(per_request, spec, CompareSpec(baseline="bm25", candidate="hybrid"),
                            outcomes=_outcomes(spark, rows))
    for row in table.collect():
        small = min(row["baseline_n_observed"], row["candidate_n_observed"]) < 10
        assert row["below_min_observed"] == small and row["min_observed"] == 10
        if small:
            assert row["verdict"] == "inconclusive"
    assert table.filter("slice_value = 'rare' AND below_min_observed").count() == 3
    with pytest.raises(ContractError, match=r"guardrails.min_observed: must be an integer >= 0"):
        GuardrailSpec.from_dict({**_spec_section(), "min_observed": -1})


def test_a_rate_that_never_moved_in_either_arm_is_no_evidence(spark, per_request):
    """Zero incidents in both arms gives every replicate 0 % and a [0, 0] interval: inconclusive, not pass."""
    rows = [{**r, "done": False} for r in _release(seed=8, n=60)]
    spec = GuardrailSpec.from_dict({**_spec_section(replicates=20), "min_observed": 0})
    table = guardrail_table(per_request, spec, CompareSpec(baseline="bm25", candidate="hybrid"),
                            outcomes=_outcomes(spark, rows))
    row = table.filter("guardrail = 'completion' AND slice_dimension = 'overall'").first()
    assert (row["difference_ci_low"], row["difference_ci_high"]) == (0.0, 0.0)
    assert row["verdict"] == "inconclusive"


def test_a_paired_design_resamples_a_unit_in_both_arms_at_once(spark, per_request):
    """Every technician in both arms: the difference's interval is the paired one (the oracle
    draws one count per technician for both arms) and narrower than two independent draws give."""
    rng = random.Random(4)
    rows = [{"session_id": f"s{t}{a}", "tech": f"t{t}", "arm": a, "rarity": "x", "done": True,
             "t": base + (3.0 if a == "hybrid" else 0.0) + rng.gauss(0, 1), "lat": 1.0}
            for t, base in enumerate(rng.uniform(30, 300) for _ in range(80)) for a in ("bm25", "hybrid")]
    spec = _spec(replicates=100, design="paired")
    table = guardrail_table(per_request, spec, CompareSpec(baseline="bm25", candidate="hybrid"),
                            outcomes=_outcomes(spark, rows))
    row = table.filter("guardrail = 'time_to_procedure' AND slice_dimension = 'overall'").first()
    width = row["difference_ci_high"] - row["difference_ci_low"]
    assert 2.0 < row["difference"] < 4.0 and width < 1.0  # unpaired, the spread of base (~80 s) would dominate
    unpaired = rows[:-1]
    with pytest.raises(ValidationError, match="outcome_unit_unpaired"):
        guardrail_table(per_request, spec, CompareSpec(baseline="bm25", candidate="hybrid"),
                        outcomes=_outcomes(spark, unpaired))


def _offline_spec(**extra):
    return GuardrailSpec.from_dict({
        "bootstrap": {"replicates": 0},
        "checks": [
            {"name": "stale_first", "source": "offline", "flag": "first_result_older_than", "column": "age",
             "threshold": 700, "better": "lower", "margin": {"absolute": 0.05}},
            {"name": "unjudged_first", "source": "offline", "flag": "first_result_unjudged", "better": "lower",
             "margin": {"absolute": 0.05}},
            {"name": "no_contractor_doc", "source": "offline", "flag": "top_k_lacks", "column": "group",
             "value": "contractor", "better": "lower", "margin": {"absolute": 0.05}},
        ], **extra})


def test_offline_flags_per_system_k_and_slice_match_an_oracle(spark):
    rng = random.Random(6)
    docs = {f"d{j}": (rng.randint(0, 1500), rng.choice(["technician", "contractor", "engineer"])) for j in range(40)}
    cands, grades, attrs = [], [], []
    for i in range(50):
        pool = rng.sample(sorted(docs), 6)
        attrs.append((f"q{i}", rng.choice(["rare", "common"])))
        for system in ("bm25", "hybrid"):
            order = pool[:] if system == "bm25" else rng.sample(pool, 6)
            cands += [(f"q{i}", d, system, p + 1, 1.0 - p / 10) for p, d in enumerate(order)]
        grades += [(f"q{i}", d, float(rng.randint(0, 2))) for d in pool if rng.random() < 0.6]
    candidates = spark.createDataFrame(cands, "request_id string, doc_id string, system string, position int, score double")
    judgments = spark.createDataFrame(grades, "request_id string, doc_id string, grade double")
    documents = spark.createDataFrame([(d, a, g) for d, (a, g) in docs.items()], "doc_id string, age int, group string")
    attributes = spark.createDataFrame(attrs, "request_id string, rarity string")
    from ndcg_spark import Attributes
    contract = Contract(k=[1, 3])
    scored = score_requests(candidates, judgments, contract, attributes=Attributes(attributes, slices=("rarity",)))
    table = guardrail_table(scored, _offline_spec(), CompareSpec(baseline="bm25", candidate="hybrid"),
                            candidates=candidates, judgments=judgments, documents=documents, contract=contract)
    judged = {(q, d) for q, d, _ in grades}
    rarity = dict(attrs)
    ranked = defaultdict(list)
    for q, d, s, p, _ in sorted(cands, key=lambda c: c[3]):
        ranked[(s, q)].append(d)

    def flag(name, k, docs_shown, q):
        if name == "stale_first":
            return docs[docs_shown[0]][0] > 700
        if name == "unjudged_first":
            return (q, docs_shown[0]) not in judged
        return not any(docs[d][1] == "contractor" for d in docs_shown[:k])

    rows = table.collect()
    assert {(r["guardrail"], r["k"]) for r in rows} == {("stale_first", None), ("unjudged_first", None),
                                                         ("no_contractor_doc", 1), ("no_contractor_doc", 3)}
    for r in rows:
        for side, system in (("baseline", "bm25"), ("candidate", "hybrid")):
            qs = [q for (s, q) in ranked if s == system and (r["slice_dimension"] == "overall" or rarity[q] == r["slice_value"])]
            flags = [flag(r["guardrail"], r["k"], ranked[(system, q)], q) for q in qs]
            assert r[f"{side}_n"] == len(qs)
            assert r[f"{side}_value"] == pytest.approx(sum(flags) / len(flags), abs=TOLERANCE)
        assert r["design"] == "paired" and r["rows_read"] is None


def test_the_replicates_percentile_is_sparks_percentile_with_a_frequency_to_the_bit(spark):
    """The numpy percentile the replicates take (the drawn counts as frequencies) against Spark's own
    ``percentile(value, p, frequency)``: ties, zero counts, one value, and interpolation between
    different values, at the interval's and the guardrails' levels -- equal bits, not close."""
    import numpy as np

    from ndcg_spark.guardrails.replicates import weighted_percentile

    rng = random.Random(11)
    groups = []
    for g in range(60):
        size = rng.choice([1, 2, 5, 40])
        groups.append([(g, rng.choice([round(rng.uniform(0, 500), 1), rng.expovariate(0.01), 7.0]),
                        rng.choice([0, 1, 1, 2, 3])) for _ in range(size)])
        groups[-1][0] = (g, groups[-1][0][1], 1 + groups[-1][0][2])  # at least one drawn value per group
    rows = [row for group in groups for row in group]
    levels = [0.025, 0.5, 0.9, 0.95, 0.975]
    frame = spark.createDataFrame(rows, "g int, v double, w int").filter("w > 0")
    expected = {r["g"]: r["p"] for r in frame.groupBy("g").agg(
        F.array(*[F.percentile("v", F.lit(p), F.col("w")) for p in levels]).alias("p")).collect()}
    for g, group in enumerate(groups):
        ordered = sorted(group, key=lambda row: row[1])
        values = np.array([v for _, v, _ in ordered])
        weights = np.array([[w for _, _, w in ordered]], dtype=np.float64)
        got = [float(weighted_percentile(values, weights, p)[0]) for p in levels]
        assert got == expected[g], (g, got, expected[g])
    assert np.isnan(weighted_percentile(np.array([1.0, 2.0]), np.zeros((1, 2)), 0.5)[0])  # nothing drawn: null


@pytest.mark.slow
@pytest.mark.usefixtures("nightly_spark")  # its cost is its rows: computed as a nightly run computes
def test_intervals_cover_the_true_values_at_about_the_declared_rate(spark, per_request):
    """150 simulated releases (each a slice ``dataset``) of 60 sessions per arm with known truth:
    completion 0.70 vs 0.75, time to procedure exponential with mean 90 s vs 100 s (its 90th
    percentile ln(10) times the mean). Every 95 % interval -- each arm, the difference, the relative
    difference -- should cover the truth in about 95 % of the releases."""
    rng = random.Random(9)
    truth = {"bm25": (0.70, 90.0), "hybrid": (0.75, 100.0)}
    rows = [(f"s{d}-{i}-{arm}", f"u{d}-{i}-{arm}", arm, f"{d:03d}", rng.random() < truth[arm][0], 1.0,
             rng.expovariate(1 / truth[arm][1]))
            for d in range(150) for i in range(60) for arm in ("bm25", "hybrid")]
    outcomes = spark.createDataFrame(rows, OUTCOMES_SCHEMA.replace("rarity", "dataset"))
    spec = GuardrailSpec.from_dict({
        "release": {"outcomes": "-", "arm": "arm", "unit": "tech", "slices": ["dataset"]},
        "bootstrap": {"replicates": 200, "seed": 1},
        "checks": [{"name": "completion", "column": "done", "statistic": "rate", "better": "higher",
                    "margin": {"absolute": 0.05}},
                   {"name": "time_mean", "column": "lat", "statistic": "mean", "better": "lower",
                    "margin": {"relative": 0.1}},
                   {"name": "time_p90", "column": "lat", "statistic": "p90", "better": "lower",
                    "margin": {"relative": 0.1}}]})
    table = guardrail_table(per_request, spec, CompareSpec(baseline="bm25", candidate="hybrid"), outcomes=outcomes)
    released = [r for r in table.collect() if r["slice_dimension"] == "dataset"]
    true_values = {"completion": (0.70, 0.75), "time_mean": (90.0, 100.0),
                   "time_p90": (90.0 * math.log(10), 100.0 * math.log(10))}
    coverage = defaultdict(list)
    for r in released:
        base, cand = true_values[r["guardrail"]]
        for name, value, low, high in (
            ("baseline", base, r["baseline_ci_low"], r["baseline_ci_high"]),
            ("candidate", cand, r["candidate_ci_low"], r["candidate_ci_high"]),
            ("difference", cand - base, r["difference_ci_low"], r["difference_ci_high"]),
            ("relative", cand / base - 1, r["relative_ci_low"], r["relative_ci_high"]),
        ):
            coverage[(r["guardrail"], name)].append(low <= value <= high)
    rates = {key: sum(hits) / len(hits) for key, hits in coverage.items()}
    print("coverage of the 95 % intervals:", {f"{g} {n}": round(r, 3) for (g, n), r in sorted(rates.items())})
    assert all(len(hits) == 150 for hits in coverage.values())
    for (guardrail, name), rate in rates.items():
        band = (0.85, 0.99) if guardrail == "time_p90" else (0.88, 0.99)  # percentile bootstrap of a tail: a little low
        assert band[0] <= rate <= band[1], f"{guardrail} {name}: coverage {rate:.3f} (all: {rates})"


def _job_with_guardrails(sample_run, root, guardrails: dict, outputs: bool = True):
    """A copy of the shared sample run (its outputs copied: the fixture is read-only) whose job
    declares ``guardrails``; relative paths start at ``root``."""
    import shutil

    import yaml

    shutil.copytree(sample_run.root / "out", root / "out")
    job = yaml.safe_load(sample_run.config.read_text(encoding="utf-8"))
    job["guardrails"] = guardrails
    if outputs:
        job["outputs"]["guardrails"] = {"path": "out/guardrails"}
    (root / "conf").mkdir()
    config = root / "conf" / "job.yaml"
    config.write_text(yaml.safe_dump(job), encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def guarded(spark, sample_run, tmp_path_factory):
    """The shared sample run compared twice (a re-run replaces its partition) by the console
    script, with release and offline guardrails: (root, what the second compare printed)."""
    import contextlib
    import io

    from ndcg_spark.cli import main

    root = tmp_path_factory.mktemp("guarded")
    _outcomes(spark, _release(seed=7, n=300)).write.parquet(str(root / "outcomes"))
    guardrails = {
        "release": {"outcomes": {"path": str(root / "outcomes")}, "arm": "arm", "unit": "tech",
                    "slices": ["rarity"]},
        "bootstrap": {"replicates": 50},
        "checks": [
            {"name": "completion", "column": "done", "statistic": "rate", "better": "higher", "margin": {"absolute": 0.05}},
            {"name": "time_to_procedure", "column": "t", "statistic": "mean", "better": "lower",
             "margin": {"relative": 0.05}},
            {"name": "unjudged_first", "source": "offline", "flag": "first_result_unjudged", "better": "lower",
             "margin": {"absolute": 0.05}},
        ]}
    config = _job_with_guardrails(sample_run, root, guardrails)
    for _ in range(2):
        shown, errors = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(errors):
            status = main(["compare", "--config", str(config), "--run-id", sample_run.run_id])
        assert status == 0, errors.getvalue()[-3000:]
    return root, shown.getvalue()


@pytest.mark.e2e
def test_compare_writes_the_guardrail_table_and_prints_the_verdicts(spark, sample_run, guarded):
    root, out = guarded
    written = spark.read.parquet(str(root / "out" / "guardrails"))
    mine = written.filter((F.col("run_id") == sample_run.run_id) & (F.col("baseline") == "bm25")
                          & (F.col("candidate") == "hybrid"))
    release = mine.filter("source = 'release'").count()
    assert release == 2 * 3  # two guardrails x (overall, rare, common)
    assert mine.count() == written.count() == release + mine.filter("source = 'offline'").count()  # replaced
    verdict = mine.first()["overall_verdict"]
    assert re.search(rf"guardrails hybrid vs bm25: {verdict.upper()}", out), out
    for name in ("completion", "time_to_procedure", "unjudged_first"):
        assert name in out
    assert "reached" in out  # the conditional mean with its reach rates
    assert f"guardrail table {mine.count()} rows -> parquet {root / 'out' / 'guardrails'}" in out


@pytest.mark.slow
def test_the_report_shows_every_guardrail_beside_the_ndcg_delta_in_chromium(spark, sample_run, guarded, tmp_path):
    import html
    import subprocess

    from tests.test_report import _chromium, _chromium_args

    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed here (apt-get install chromium); CI installs it")
    root, _ = guarded
    page = root / "out" / "reports" / sample_run.run_id / "report.html"
    args = [a for a in _chromium_args(binary, tmp_path / "profile") if not a.startswith("--window-size=")]
    dom = subprocess.run([*args, "--window-size=1400,900", "--dump-dom", page.as_uri()], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())
    rows = spark.read.parquet(str(root / "out" / "guardrails")).filter("slice_dimension = 'overall'").collect()
    assert "Guardrails" in text and "NDCG@" in text
    for r in rows:
        assert r["guardrail"] in text
        assert re.search(rf"{r['guardrail']}.{{0,400}}{r['verdict']}", text), r["guardrail"]
    assert f"guardrails {rows[0]['overall_verdict']}" in text.lower()


@pytest.mark.e2e
def test_declared_guardrails_need_their_output_before_anything_is_compared(sample_run, tmp_path, capsys):
    from ndcg_spark.cli import main

    config = _job_with_guardrails(sample_run, tmp_path, {"checks": [
        {"name": "unjudged_first", "source": "offline", "flag": "first_result_unjudged", "better": "lower",
         "margin": {"absolute": 0.05}}]}, outputs=False)
    before = sorted(p.name for p in (tmp_path / "out" / "comparison").rglob("*.parquet"))
    capsys.readouterr()
    assert main(["compare", "--config", str(config), "--run-id", sample_run.run_id]) == 2
    assert "outputs.guardrails: is required" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out" / "comparison").rglob("*.parquet")) == before
