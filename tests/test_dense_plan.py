"""The dense-position plan (ndcg_spark.scoring.dense) against the oracle and against the collecting plan.

The oracle data's lists are dense (positions a permutation of 1..M), so with a max K the plan
serves (<= 32) every request of the position-order contracts goes through it. Here a share of the
requests is perturbed so that the same run mixes both plans: positions 0-based (still dense),
with a gap, fractional, or dense only in the top max K; the plan's evidence must mark exactly the
requests that are not dense, and every request must agree with the oracle (to 1e-9) and with the
collecting plan (exactly: the same expressions over the same values in the same order). The fast
lane runs the combinations that hold every value of every choice; the whole suite runs them all.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
from pyspark.sql import functions as F

try:  # tests/ may or may not be a package
    from tests import oracle
    from tests.test_oracle_agreement import (COMPARED, GAINS, MAX_GRADE, METRIC_SETS, PANEL_SETS, GridParts,
                                            collect_concurrently, compared, contract_of, each_value_once, generate,
                                            grid_params, mismatches, subset)
except ImportError:  # pragma: no cover - depends on how pytest sets sys.path
    import oracle  # type: ignore[no-redef]
    from test_oracle_agreement import (COMPARED, GAINS, MAX_GRADE, METRIC_SETS, PANEL_SETS, GridParts,  # noqa
                                       collect_concurrently, compared, contract_of, each_value_once, generate,
                                       grid_params, mismatches, subset)

from ndcg_spark import Contract, score_requests
from ndcg_spark.metrics.gain import gain
from ndcg_spark.scoring import dense
from ndcg_spark.scoring.inputs import prepare_candidates

KS = [1, 3, 5, 10, 20]
N_REQUESTS = 600
SCHEMA = "request_id string, system string, doc_id string, position double, score double"
#: how a request's positions are rewritten, and whether the list is still dense for max K = 20
PERTURBATIONS = {
    "zero_based": (lambda ps: [p - 1 for p in ps], lambda ps: True),
    # 1, 3, 4, ...: rank != position (a one-candidate list is untouched)
    "gap_at_2": (lambda ps: [p + 1 if p >= 2 else p for p in ps], lambda ps: len(ps) == 1),
    "fractional": (lambda ps: [p + 0.5 for p in ps], lambda ps: False),
    "gap_after_top": (lambda ps: [p + 100 if p > 20 else p for p in ps], lambda ps: True),  # only ranks > 20 move
    "doubled": (lambda ps: [2 * p for p in ps], lambda ps: False),
    # the last candidate of a list longer than max K moved to 2.5: every top position still seen
    # once, but one more candidate sits among them (only the count of the top catches it)
    "moved_into_top": (lambda ps: [2.5 if p == max(ps) > 20 else p for p in ps], lambda ps: len(ps) <= 20),
}


def _perturbed(seed: int = 7):
    """The oracle data set with a fifth of the (request, system) lists' positions rewritten;
    returns (candidate rows, judgment rows, {(request, system): perturbation name})."""
    cands, judgments = generate()
    cands, judgments = subset(cands, N_REQUESTS), subset(judgments, N_REQUESTS)
    rng = random.Random(seed)
    lists: dict[tuple, list[dict]] = {}
    for row in cands:
        lists.setdefault((row["request_id"], row["system"]), []).append(row)
    applied = {}
    for key, rows in lists.items():
        if rng.random() < 0.3:
            name = rng.choice(sorted(PERTURBATIONS))
            rewrite, still_dense = PERTURBATIONS[name]
            positions = [r["position"] for r in rows]
            for row, p in zip(rows, rewrite(positions)):
                row["position"] = float(p)
            applied[key] = (name, still_dense(positions))
    for row in cands:
        row["position"] = float(row["position"])
    return cands, judgments, applied


@pytest.fixture(scope="module")
def mixed(spark):
    cands, judgments, applied = _perturbed()
    cdf = spark.createDataFrame([tuple(r[c] for c in ("request_id", "system", "doc_id", "position", "score"))
                                 for r in cands], SCHEMA).cache()
    jdf = spark.createDataFrame([(j["request_id"], j["doc_id"], j["grade"]) for j in judgments],
                                "request_id string, doc_id string, grade double").cache()
    cdf.count(), jdf.count()
    yield {"rows": (cands, judgments), "prepared": oracle.prepare(cands, judgments), "frames": (cdf, jdf),
           "applied": applied}
    cdf.unpersist(), jdf.unpersist()


def test_the_perturbations_do_what_their_names_say(mixed):
    kinds = {name for name, _ in mixed["applied"].values()}
    assert kinds == set(PERTURBATIONS), kinds
    cands = mixed["rows"][0]
    for name, moved in (("gap_after_top", lambda p: p > 100), ("moved_into_top", lambda p: p == 2.5)):
        lists = {k for k, (n, _) in mixed["applied"].items() if n == name}
        assert any(moved(r["position"]) for r in cands if (r["request_id"], r["system"]) in lists), (
            f"some list must be longer than max K for {name} to test anything"
        )


def test_the_evidence_marks_exactly_the_requests_that_are_not_dense(mixed):
    cdf, jdf = mixed["frames"]
    contract = Contract(k=KS).resolve(cdf.columns)
    rows = prepare_candidates(cdf, jdf, contract).withColumn("gain", gain(F.col("grade"), contract.gain))
    rows = rows.withColumn("judged", F.col("grade").isNotNull())
    levels = dense.gain_levels(contract, jdf.select("grade"))
    groups, _ = mixed["prepared"]
    shown_grades = {c.grade for cs in groups.values() for c in cs if c.grade is not None and c.grade > 0}
    judged_grades = {j["grade"] for j in mixed["rows"][1] if j["grade"] > 0}
    assert shown_grades <= judged_grades
    assert levels == pytest.approx(sorted((2.0**g - 1.0 for g in judged_grades), reverse=True), rel=1e-12)
    assert len(levels) >= 5
    summed = dense.aggregate_dense(rows, contract, ("system", "pool_version", "request_id"), levels)
    not_served = summed.filter(~F.col("_served")).select("system", "request_id").collect()
    expected = {key for key, (_, still_dense) in mixed["applied"].items() if not still_dense}
    got = {(r.request_id, r.system) for r in not_served}
    assert got == expected, f"{len(got ^ expected)} differ, e.g. {sorted(got ^ expected)[:5]}"
    assert len(got) > 50


def test_declared_gains_need_no_job_and_a_gain_off_them_is_collected(spark):
    """A gain table, binary gain or ``max_grade`` declare the gains (no job: no grades given); a
    request whose grades fall off the declared scale is not served by the plan but collected,
    with the same result as the collecting plan."""
    assert dense.gain_levels(Contract(gain={"table": {0: 0, 1: 1, 2: 3, 3: 3}}), None) == [3.0, 1.0]
    assert dense.gain_levels(Contract(gain="binary"), None) == [1.0]
    assert dense.gain_levels(Contract(max_grade=3), None) == [7.0, 3.0, 1.0]
    assert dense.gain_levels(Contract(gain="linear", max_grade=2.5), None) == [2.0, 1.0]
    assert dense.gain_levels(Contract(), None) is None
    # q2 holds a grade 3 (above the declared 2) and q3 a fractional 1.5: both off the scale
    table = spark.createDataFrame(
        [(q, f"d{i}", float(i + 1), float(g)) for q, grades in (("q1", [2, 0, 1]), ("q2", [1, 3, 0]), ("q3", [1.5, 2]))
         for i, g in enumerate(grades)],
        "request_id string, doc_id string, position double, grade double")
    contract = Contract(k=[1, 2, 3], max_grade=2)
    resolved = contract.resolve(table.columns)
    rows = prepare_candidates(table, None, resolved).withColumn("gain", gain(F.col("grade"), contract.gain))
    rows = rows.withColumn("judged", F.col("grade").isNotNull())
    summed = dense.aggregate_dense(rows, resolved, ("request_id",), dense.gain_levels(resolved, None))
    assert {r.request_id: r._served for r in summed.collect()} == {"q1": True, "q2": False, "q3": False}
    a, b = (score_requests(table, contract=contract, dense_plan=p, validate=False).orderBy("request_id", "k").collect()
            for p in (True, False))
    assert a == b and len(a) == 9


def test_the_checks_grade_scale_declares_the_gains_without_reading_them(spark, monkeypatch):
    """The input check notes the largest grade when every grade is a whole number from 0 to 64
    (``ValidatedInputs.grade_scale``); the checked ``score_requests`` then counts the ideal over the
    gains of 1 .. that grade without reading them (``gain_levels`` gets the scale), and a fractional,
    negative or larger grade leaves the gains to be read. Either way the dense plan gives the
    collecting plan's bits, in a judgments table and in a pre-joined one."""
    from ndcg_spark import validate_inputs

    seen = []
    real = dense.gain_levels

    def recording(contract, grades, grade_scale=None):
        levels = real(contract, grades, grade_scale)
        seen.append((grade_scale, levels))
        return levels

    monkeypatch.setattr(dense, "gain_levels", recording)
    cands = spark.createDataFrame([(f"q{q}", f"d{i}", float(i + 1)) for q in range(4) for i in range(5)],
                                  "request_id string, doc_id string, position double")

    def judged(grades):  # a judgment per (request, doc) but the last doc of each request: unjudged
        rows = [(f"q{q}", f"d{i}", grades[(q + i) % len(grades)]) for q in range(4) for i in range(4)]
        return spark.createDataFrame(rows, "request_id string, doc_id string, grade double")

    cases = [  # (grades, the scale noted, the levels gain_levels returns)
        ([0.0, 1.0, 3.0, -0.0], 3, [7.0, 3.0, 1.0]),  # 2 never occurs: its count column is all zeros
        ([0.0, 0.0], 0, []),
        ([0.0, 1.0, 16.0], 16, [2.0**g - 1.0 for g in range(16, 0, -1)]),
        ([0.0, 1.5, 2.0], None, [3.0, 2.0**1.5 - 1.0]),  # fractional: read from the grades
        ([0.0, 1.0, 65.0], None, [2.0**65 - 1.0, 1.0]),  # above 64: not noted, read
        ([0.0, 1.0, 17.0], 17, [2.0**17 - 1.0, 1.0]),  # noted, but more levels than the plan counts: read
    ]
    for grades, scale, levels in cases:
        judgments = judged(grades)
        assert validate_inputs(cands, judgments, Contract(k=[3])).grade_scale == scale, grades
        seen.clear()
        by_dense = score_requests(cands, judgments, Contract(k=[1, 3]))
        assert [noted for noted, _ in seen] == [scale], grades
        assert seen[0][1] == pytest.approx(levels, rel=1e-15), grades  # Spark's pow, read: not Python's bits
        by_collecting = score_requests(cands, judgments, Contract(k=[1, 3]), dense_plan=False)
        assert sorted(map(repr, by_dense.collect())) == sorted(map(repr, by_collecting.collect())), grades
    # pre-joined: the candidates' own grades; linear gain
    joined = cands.withColumn("grade", (F.col("position") % 3).cast("double"))
    assert validate_inputs(joined, None, Contract(k=[3])).grade_scale == 2
    seen.clear()
    by_dense = score_requests(joined, contract=Contract(k=[2], gain="linear")).collect()
    assert seen == [(2, [2.0, 1.0])]
    by_collecting = score_requests(joined, contract=Contract(k=[2], gain="linear"), dense_plan=False).collect()
    assert sorted(map(repr, by_dense)) == sorted(map(repr, by_collecting))
    # a declared scale wins over the one noted
    assert real(Contract(max_grade=1), None, 3) == [1.0]


#: The plan branches on the gains (their distinct values are counted), on ``zero`` vs ``separate``
#: (whether the unjudged are reported) and on whether a metric reads relevance (the positions of the
#: relevant candidates, one bit each); the empty-ideal policy is applied after it. Every pair of
#: values of the four choices occurs.
COMBOS = [("exponential", "zero", "exclude", "ndcg"), ("exponential", "zero", "exclude", "ndcg+recall"),
          ("exponential", "separate", "zero", "recall_capped_at_2+ndcg"), ("linear", "zero", "exclude", "ndcg"),
          ("linear", "zero", "zero", "ndcg+recall"), ("linear", "separate", "exclude", "recall_capped_at_2+ndcg"),
          ("table", "separate", "zero", "ndcg"), ("table", "separate", "exclude", "ndcg+recall"),
          ("table", "zero", "exclude", "recall_capped_at_2+ndcg")]
OPTIONS = [list(GAINS), ["zero", "separate"], ["exclude", "zero"], list(METRIC_SETS)]
#: every value of every choice: the fast lane's; the other combinations are marked slow
CORE_COMBOS = each_value_once(COMBOS, OPTIONS)


def test_the_combinations_cover_every_pair_of_choices():
    for a, b in itertools.combinations(range(len(OPTIONS)), 2):
        assert {(c[a], c[b]) for c in COMBOS} == {(x, y) for x in OPTIONS[a] for y in OPTIONS[b]}
    for i, values in enumerate(OPTIONS):  # the core: every value
        assert {c[i] for c in CORE_COMBOS} == set(values)


#: the panel of metrics through both plans: each set of its choices under both unjudged policies the plan
#: serves and both empty-ideal policies
PANEL_COMBOS = [("exponential", "zero", "exclude", "panel"), ("linear", "separate", "zero", "panel"),
                ("table", "zero", "zero", "panel_other_choices_at_2"),
                ("exponential", "separate", "exclude", "panel_other_choices_at_2")]


def _agreement(mixed, combos: list[tuple]) -> dict:
    """Each combination of ``combos`` scored by both plans; per combination the mismatches of the
    dense plan's run with the oracle, the rows that differ between the plans, and the row count
    (or an exception)."""
    cdf, jdf = mixed["frames"]

    def choices(combo):
        g, u, e, m = combo
        return dict(gain=GAINS[g], order="position", unjudged=u, empty_ideal=e, ideal_from="candidates",
                    max_grade=MAX_GRADE, **{**METRIC_SETS, **PANEL_SETS}[m])

    def build(run):
        combo, plan = run
        contract = contract_of(KS, choices(combo))
        return score_requests(cdf, jdf, contract, run_id="dense", dense_plan=plan, validate=False).select(
            *compared(choices(combo)))

    collected = collect_concurrently([(c, plan) for c in combos for plan in (True, False)], build)
    results = {}
    for combo in combos:
        both = [collected[(combo, plan)] for plan in (True, False)]
        failed = [r for r in both if isinstance(r, BaseException)]
        if failed:
            results[combo] = failed[0]
            continue
        got, by_collecting = (sorted(rows, key=lambda r: (r["request_id"], r["system"], r["k"])) for rows in both)
        columns = set(compared(choices(combo)))
        expected = {key: {c: v for c, v in values.items() if c in columns}
                    for key, values in oracle.score_prepared(mixed["prepared"], k=KS, **choices(combo)).items()}
        differences = [(a, b) for a, b in zip(got, by_collecting) if a != b]
        if len(got) != len(by_collecting):
            differences.append((f"{len(got)} rows", f"{len(by_collecting)} rows"))
        results[combo] = (mismatches(got, expected), differences, len(got))
    return results


@pytest.fixture(scope="module")
def agreement(mixed) -> GridParts:
    return GridParts(lambda combos: _agreement(mixed, combos), CORE_COMBOS, COMBOS)


@pytest.mark.parametrize("combo", grid_params(COMBOS, CORE_COMBOS, "-".join))
def test_mixed_plans_agree_with_the_oracle_and_with_the_collecting_plan_exactly(agreement, combo):
    result = agreement[combo]
    if isinstance(result, BaseException):
        raise result
    oracle_problems, plan_differences, n_rows = result
    assert not oracle_problems, f"{len(oracle_problems)} mismatches with the oracle, e.g.\n  " + "\n  ".join(
        oracle_problems[:10])
    assert not plan_differences, f"{len(plan_differences)} rows differ between the plans, e.g. {plan_differences[:2]}"
    assert n_rows > 3000


@pytest.fixture(scope="module")
def panel_agreement(mixed) -> dict:
    return _agreement(mixed, PANEL_COMBOS)


@pytest.mark.parametrize("combo", PANEL_COMBOS, ids="-".join)
def test_the_panel_agrees_with_the_oracle_and_the_collecting_plan_exactly(panel_agreement, combo):
    oracle_problems, plan_differences, n_rows = panel_agreement[combo]
    assert not oracle_problems, f"{len(oracle_problems)} mismatches with the oracle, e.g.\n  " + "\n  ".join(
        oracle_problems[:10])
    assert not plan_differences, f"{len(plan_differences)} rows differ between the plans, e.g. {plan_differences[:2]}"
    assert n_rows > 3000


def test_only_contracts_the_plan_serves_use_it():
    """Score order, `exclude`, an ideal from judgments or a max K above 32 keep the collecting plan."""
    for contract in (Contract(k=[3], order="score"), Contract(k=[3], unjudged="exclude"),
                     Contract(k=[3], ideal_from="judgments"), Contract(k=[33])):
        assert not dense.applies(contract.resolve(["position", "score"]))
    assert dense.applies(Contract(k=[32]).resolve(["position"]))


def test_too_many_gain_levels_or_a_negative_gain_fall_back_to_collecting(spark):
    """Gains of 17 distinct values, or a negative one, are not counted per value: every request is
    collected, and the result still matches the collecting plan."""
    many = spark.createDataFrame([("q", f"d{i}", float(i + 1), float(i % 17)) for i in range(40)],
                                 "request_id string, doc_id string, position double, grade double")
    linear = Contract(k=[5, 10], gain="linear")
    resolved = linear.resolve(many.columns)
    negative = many.withColumn("grade", F.col("grade") - 1.0)
    for table in (many, negative):  # the list is dense: only the gains rule the plan out
        assert dense.gain_levels(resolved, table.select("grade")) is None
    for table in (many, negative):
        a, b = (score_requests(table, contract=linear, dense_plan=p, validate=False).orderBy("k").collect()
                for p in (True, False))
        assert a == b


def test_shown_gains_coded_per_position_come_back_exactly(spark):
    """The plan reads each shown gain back from a 5-bit code per position, 12 positions to a word:
    with 15 gain levels, max K 32 (three words: a K on each side of a word's edge), unjudged
    candidates and a gain of -0.0 (a request showing only -0.0 and unjudged in its top 32 has DCG
    -0.0), both plans give the same bits: every double compared by its repr, so -0.0 is told from 0.0."""
    def grade(request: int, position: int) -> float | None:
        if request == 0:  # only -0.0 and unjudged in the top 32, a positive gain below them
            return 1.0 if position == 40 else -0.0 if position % 3 else None
        if (request + position) % 7 == 0:
            return None  # unjudged
        value = float((request * 5 + position * 3) % 16)  # 0 .. 15: fifteen positive levels
        return -0.0 if value == 0 and position % 2 else value

    rows = [(f"q{r}", f"d{p}", float(p), grade(r, p)) for r in range(24) for p in range(1, 41)]
    table = spark.createDataFrame(rows, "request_id string, doc_id string, position double, grade double")
    contract = Contract(k=[1, 11, 12, 13, 32], gain="linear")
    assert len(dense.gain_levels(contract.resolve(table.columns), table.select("grade"))) == 15
    assert dense.CODES_PER_WORD == 12
    by_dense, by_collecting = (
        sorted(score_requests(table, contract=contract, dense_plan=p, validate=False).collect()) for p in (True, False)
    )
    assert len(by_dense) == 24 * 5
    assert [repr(tuple(r)) for r in by_dense] == [repr(tuple(r)) for r in by_collecting]
    (top,) = [r["dcg"] for r in by_dense if r["request_id"] == "q0" and r["k"] == 1]
    assert top == 0.0 and math.copysign(1.0, top) == -1.0  # the -0.0 gain at position 1 came back as -0.0


def test_a_table_gain_gives_each_listed_grade_its_gain_and_any_other_grade_null(spark):
    """A table gain, one comparison per listed grade: -0.0 is the grade 0.0 (as SQL compares them),
    a listed gain of -0.0 keeps its sign, and an unlisted grade, NaN or null gives null."""
    from ndcg_spark.config.contract import GainMapping

    grades = [0.0, -0.0, 1.0, 2.5, 3.0, float("nan"), None]
    table = spark.createDataFrame([(g,) for g in grades], "grade double")
    mapping = GainMapping("table", ((0.0, 5.0), (1.0, 1.0), (2.5, -0.0)))
    got = [r[0] for r in table.select(gain(F.col("grade"), mapping)).collect()]
    assert [repr(g) for g in got] == ["5.0", "5.0", "1.0", "-0.0", "None", "None", "None"]


@pytest.mark.parametrize("mapping", ["exponential", "binary", {"table": {0: -0.0, 1: 1.0, 2: 3.0}},
                                     {"table": {0: 0.0, 1: 1.0, 2: 3.0}}], ids=str)
def test_a_zero_gain_keeps_its_sign_under_every_mapping(spark, mapping):
    """The plan tells a gain of -0.0 from +0.0 only where the mapping can give -0.0 (a table listing
    it; linear: the test above); ``2^g - 1`` and binary give +0.0 for a grade of -0.0 or 0. Either
    way both plans give the same bits: requests whose top 10 show only grades of -0.0 and 0 and
    unjudged candidates (DCG +0.0 or -0.0), every double compared by its repr."""
    def grade(request: int, position: int) -> float | None:
        if position > 10:
            return 2.0 if position == 12 else None  # a positive gain below the top 10: an ideal
        return (None, -0.0, 0.0)[(request + position) % 3] if request % 2 else -0.0

    rows = [(f"q{r}", f"d{p}", float(p), grade(r, p)) for r in range(8) for p in range(1, 13)]
    table = spark.createDataFrame(rows, "request_id string, doc_id string, position double, grade double")
    contract = Contract(k=[1, 10], gain=mapping)
    by_dense, by_collecting = (
        sorted(score_requests(table, contract=contract, dense_plan=p, validate=False).collect()) for p in (True, False)
    )
    assert len(by_dense) == 8 * 2
    assert [repr(tuple(r)) for r in by_dense] == [repr(tuple(r)) for r in by_collecting]
    (top,) = [r["dcg"] for r in by_dense if r["request_id"] == "q0" and r["k"] == 1]  # grade -0.0 at position 1
    negative = isinstance(mapping, dict) and math.copysign(1.0, mapping["table"][0]) < 0
    assert top == 0.0 and math.copysign(1.0, top) == (-1.0 if negative else 1.0)


def test_a_path_read_again_after_its_files_were_rewritten_is_scored_from_them(spark, tmp_path):
    """The dense plan caches its aggregation for the call's result. A later call over the same
    path, read again after another process rewrote its files, must score the new rows: Spark
    answers any equal plan from a cache and knows nothing of the files under it (before each call
    cached under a token of its own, the second call was answered from the first one's rows)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "candidates"

    def rewrite(grades: dict[str, list[float]]) -> None:  # outside Spark, as the nightly job on the cluster
        path.mkdir(exist_ok=True)
        for old in path.glob("*.parquet"):
            old.unlink()
        # each request's candidates at positions 1..n: dense, so the plan serves them
        rows = [(q, f"d{i}", i + 1, g) for q, listed in grades.items() for i, g in enumerate(listed)]
        pq.write_table(pa.table({name: list(values) for name, values in
                                 zip(("request_id", "doc_id", "position", "grade"), zip(*rows))}),
                       path / "part-0.parquet")

    handles: list = []  # the calls' cached aggregations, kept (as in a shell) until the end
    try:
        # the same grades, reordered: the same gains counted, so the same plan (another scale would differ)
        for grades in ({"q1": [0.0, 0.0, 3.0], "q2": [1.0, 0.0]}, {"q1": [3.0, 0.0, 0.0], "q2": [0.0, 1.0]}):
            rewrite(grades)
            scored = score_requests(spark.read.parquet(str(path)), contract=Contract(k=[3]), validate=False,
                                    cache_handles=handles)
            got = {r.request_id: r.ndcg for r in scored.collect()}
            assert got == pytest.approx({q: oracle.ndcg_of_grades(g, 3) for q, g in grades.items()}, abs=1e-12)
        assert len(handles) == 2  # the dense plan scored both (a cached aggregation each)
    finally:
        for handle in handles:
            handle.unpersist()
