"""Dirty inputs (issue 6): every named rule under both handlings, exact row accounting, a seeded fuzz
of malformed inputs (each ends in a clear error or a correct quarantine, never a crash, never a
silently changed score), and the console script's one-paragraph failure."""

from __future__ import annotations

import math
import random
import textwrap
from functools import reduce

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.cli import main
from ndcg_spark.config.contract import Contract
from ndcg_spark.config.validation_spec import RULES, ValidationSpec
from ndcg_spark.errors import ContractError, InputError, NdcgError, ValidationError, describe_spark_error
from ndcg_spark.config.job import JobConfig
from ndcg_spark.scoring.attributes import Attributes
from ndcg_spark.scoring.score import score_requests
from ndcg_spark.validation.counts import count_flagged_rows, detect_rule_counts
from ndcg_spark.validation.flagging import flag_every_rule, flag_row_rules
from ndcg_spark.validation.validate import validate_inputs

CANDS = "request_id string, doc_id string, system string, position int, score double"
JUDGS = "request_id string, doc_id string, grade double"
ATTRS = "request_id string, weight double"

# A clean base: q1 under two systems, q2 under one. Each rule's case adds request qx_<rule>, spoiled
# by that rule alone; the cases of one contract are validated together (one Spark run per handling),
# and each rule's test checks its own request.
BASE_C = [
    ("q1", "a", "s1", 1, 0.9), ("q1", "b", "s1", 2, 0.8), ("q1", "c", "s1", 3, 0.7),
    ("q1", "a", "s2", 2, 0.3), ("q1", "b", "s2", 1, 0.6),
    ("q2", "a", "s1", 1, 0.5), ("q2", "b", "s1", 2, 0.4),
]
BASE_J = [("q1", "a", 3.0), ("q1", "b", 0.0), ("q1", "c", 1.0), ("q2", "a", 2.0), ("q2", "b", 1.0)]
BASE_A = [("q1", 2.0), ("q2", 1.0)]
TABLE_GAIN = {"table": {0: 0.0, 1: 1.0, 2: 3.0, 3: 7.0}}
WIDE = {"candidates": 2, "judgments": 2, "attributes": 1}  # a request-wide quarantine of a two-doc request


def _case(rule):
    """Rows spoiling request ``qx_<rule>``: (candidates, judgments, attributes, rows breaking the rule
    themselves per input, rows quarantined per input)."""
    r = f"qx_{rule}"
    c = [(r, "a", "s1", 1, 0.9), (r, "b", "s1", 2, 0.8)]
    j = [(r, "a", 1.0), (r, "b", 2.0)]
    a = [(r, 1.0)]
    if rule == "request_id_missing":  # rows of no request: they go alone
        return [(None, "z", "s1", 1, 0.1)], [("  ", "a", 1.0)], [], {"candidates": 1, "judgments": 1}, {
            "candidates": 1, "judgments": 1}
    if rule == "doc_id_missing":
        return [c[0], (r, "", "s1", 2, 0.8)], j, a, {"candidates": 1}, {"candidates": 2}
    if rule == "grade_not_numeric":
        return c, [(r, "a", 1.0), (r, "b", "high")], a, {"judgments": 1}, WIDE
    if rule == "grade_negative":
        return c, [(r, "a", -1.0), j[1]], a, {"judgments": 1}, WIDE
    if rule == "grade_not_finite":
        return c, [(r, "a", float("nan")), j[1]], a, {"judgments": 1}, WIDE
    if rule == "grade_not_in_gain_table":
        return c, [(r, "a", 5.0), j[1]], a, {"judgments": 1}, WIDE
    if rule == "grade_above_max_grade":  # the batch declares max_grade: 3
        return c, [(r, "a", 4.0), j[1]], a, {"judgments": 1}, WIDE
    if rule == "position_invalid":
        return [c[0], (r, "b", "s1", 0, 0.8)], j, a, {"candidates": 1}, {"candidates": 2}
    if rule == "score_invalid":
        return [c[0], (r, "b", "s1", 2, None)], j, a, {"candidates": 1}, {"candidates": 2}
    if rule == "weight_invalid":
        return c, j, [(r, -2.0)], {"attributes": 1}, WIDE
    if rule == "doc_repeated":
        return [c[0], (r, "a", "s1", 2, 0.8)], j, a, {"candidates": 2}, {"candidates": 2}
    if rule == "position_repeated":
        return [c[0], (r, "b", "s1", 1, 0.8)], j, a, {"candidates": 2}, {"candidates": 2}
    if rule == "too_many_candidates":  # the batch declares max_candidates_per_request: 3
        many = [(r, d, "s1", p, 1.0 / p) for p, d in enumerate("abcd", start=1)]
        return many, j, a, {"candidates": 4}, {"candidates": 4}
    if rule == "judgment_conflict":
        return c, j + [(r, "a", 2.0)], a, {"judgments": 2}, {"candidates": 2, "judgments": 3, "attributes": 1}
    raise AssertionError(rule)  # pragma: no cover


# the TREC line rules have their cases in tests/test_trec_inputs.py (they need a TREC file)
DATA_RULES = [r.name for r in RULES if r.quarantinable and not r.name.startswith("trec_")]
SCORE_ORDER_RULES = ("score_invalid", "grade_not_in_gain_table")
BATCHES = {
    # position order, exponential gain, grades 0 .. 3; grades arrive as strings (so grade_not_numeric can happen)
    "position": (
        Contract(k=[1, 3], max_grade=3),
        {"max_candidates_per_request": 3},
        [r for r in DATA_RULES if r not in SCORE_ORDER_RULES],
        "request_id string, doc_id string, grade string",
    ),
    "score": (Contract(k=[1, 3], order="score", gain=TABLE_GAIN), {}, list(SCORE_ORDER_RULES), JUDGS),
}
BATCH_OF = {rule: name for name, (_, _, rules, _) in BATCHES.items() for rule in rules}


def _grade(g, schema):
    if g is None or "grade double" in schema:
        return g
    return g if isinstance(g, str) else f"{g:g}"


@pytest.fixture(scope="module")
def batches(spark):
    """Per batch: the ValidationError under 'error', and the outcome under 'quarantine'."""
    out = {}
    for name, (contract, extra, rules, j_schema) in BATCHES.items():
        c, j, a = list(BASE_C), list(BASE_J), list(BASE_A)
        want_j, want_a = list(BASE_J), list(BASE_A)  # judgments/attributes of a request whose candidate
        for rule in rules:  # list alone was quarantined pass: they may serve its other systems
            rc, rj, ra, _, expected = _case(rule)
            c, j, a = c + rc, j + rj, a + ra
            want_j += [] if "judgments" in expected else rj
            want_a += [] if "attributes" in expected else ra
        cands = spark.createDataFrame(c, CANDS)
        judgs = spark.createDataFrame([(r, d, _grade(g, j_schema)) for r, d, g in j], j_schema)
        attrs = Attributes(table=spark.createDataFrame(a, ATTRS), weight="weight")
        with pytest.raises(ValidationError) as info:
            validate_inputs(cands, judgs, contract, ValidationSpec(**extra), attributes=attrs)
        spec = ValidationSpec(default="quarantine", max_quarantined_share=1.0, **extra)
        v = validate_inputs(cands, judgs, contract, spec, attributes=attrs, run_id="r1")
        try:
            clean_c, clean_j, clean_a = _inputs(spark, BASE_C, BASE_J, BASE_A)
            out[name] = {
                "error": info.value,
                "quarantine": v.quarantine.collect(),
                "candidates": v.candidates.select(*CANDS_COLS).collect(),
                "judgments": v.judgments.collect(),
                "attributes": v.attributes.table.collect(),
                "accounting": v.accounting,
                "read": {"candidates": len(c), "judgments": len(j), "attributes": len(a)},
                "want_j": want_j,
                "want_a": want_a,
                # a list the check quarantined is counted there, not as a request its system returned nothing
                # for; another system, which never showed that request, did return nothing for it (its
                # attributes stay): those rows are the only ones the clean rows alone do not have
                "scores": sorted(r for r in score_requests(v.candidates, v.judgments, v.contract, attributes=v.attributes,
                                                           set_aside=v.set_aside).collect()
                                 if not (r.no_results and r.request_id.startswith("qx"))),
                "clean_scores": sorted(score_requests(clean_c, clean_j, contract, attributes=clean_a).collect()),
            }
        finally:
            v.unpersist()
    return out


CANDS_COLS = ["request_id", "doc_id", "system", "position", "score"]


def _inputs(spark, c, j, a, schemas=None):
    schemas = schemas or {"c": CANDS, "j": JUDGS, "a": ATTRS}
    return (
        spark.createDataFrame(c, schemas["c"]),
        spark.createDataFrame(j, schemas["j"]),
        Attributes(table=spark.createDataFrame(a, schemas["a"]), weight="weight"),
    )


def test_every_data_rule_has_a_case():
    assert set(DATA_RULES) == set(BATCH_OF) == {
        "request_id_missing", "doc_id_missing", "grade_not_numeric", "grade_negative", "grade_not_finite",
        "grade_not_in_gain_table", "grade_above_max_grade", "position_invalid", "score_invalid", "weight_invalid", "doc_repeated",
        "position_repeated", "too_many_candidates", "judgment_conflict",
    }


@pytest.mark.parametrize("rule", DATA_RULES)
def test_rule_under_error_fails_naming_rule_count_and_example(batches, rule):
    error = batches[BATCH_OF[rule]]["error"]
    _, _, _, own, _ = _case(rule)
    message = str(error)
    assert "nothing was written" in message
    assert "Traceback" not in message and "py4j" not in message.lower()
    lines = [line for line in message.splitlines() if line.startswith(f"- {rule}: ")]
    assert len(lines) == len(own), message
    for name, n in own.items():
        line = next(line for line in lines if f" {name} row" in line)
        assert line.startswith(f"- {rule}: {n} {name} row"), line
        assert "e.g. {" in line  # one example row, as JSON
        if rule != "request_id_missing":
            assert f'"qx_{rule}"' in line, line
    assert error.counts[rule] == sum(own.values())


@pytest.mark.parametrize("rule", DATA_RULES)
def test_rule_under_quarantine_sets_its_rows_aside_and_scores_the_rest(batches, rule):
    batch = batches[BATCH_OF[rule]]
    _, _, _, own, expected = _case(rule)
    rid = None if rule == "request_id_missing" else f"qx_{rule}"
    rows = [row for row in batch["quarantine"] if row["request_id"] == rid]
    got = {}
    for row in rows:
        got[row["input"]] = got.get(row["input"], 0) + 1
    assert got == expected
    assert {row["rule"] for row in rows} == {rule}
    broke = {}
    for row in rows:
        if rule in row["row_rules"].split(","):
            broke[row["input"]] = broke.get(row["input"], 0) + 1
    assert broke == own  # rows taken along with their request have empty row_rules
    assert all(row["row_rules"] == "" for row in rows if row["input"] not in own)
    assert {row["run_id"] for row in rows} == {"r1"} and all(row["row"].startswith("{") for row in rows)
    for name, n in expected.items():
        assert dict(batch["accounting"][name].quarantined_by_rule)[rule] == n


@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_quarantine_leaves_exactly_the_clean_rows_and_their_scores(batches, batch):
    b = batches[batch]
    assert sorted(b["candidates"]) == sorted(BASE_C)
    assert sorted((r, d, float(g)) for r, d, g in b["judgments"]) == sorted(b["want_j"])
    assert sorted(b["attributes"]) == sorted(b["want_a"])
    assert b["scores"] == b["clean_scores"]  # scoring the remainder = scoring the clean rows alone
    for name, read in b["read"].items():
        acc = b["accounting"][name]
        assert acc.rows_read == read and acc.balanced
        assert acc.rows_quarantined == sum(1 for row in b["quarantine"] if row["input"] == name)


# --------------------------------------------------------------------------- schema and contract rules
def test_column_missing_and_column_type_name_the_rule(spark):
    cands = spark.createDataFrame(BASE_C, CANDS)
    judgs = spark.createDataFrame(BASE_J, JUDGS)
    with pytest.raises(ValidationError, match=r"missing column 'doc_id'.*rule column_missing"):
        validate_inputs(cands.drop("doc_id"), judgs)
    with pytest.raises(ValidationError, match=r"judgments: column 'grade'.*boolean.*rule column_type"):
        validate_inputs(cands, judgs.withColumn("grade", F.lit(True)))
    with pytest.raises(ValidationError, match=r"column 'request_id'.*array<string>.*rule column_type"):
        validate_inputs(cands.withColumn("request_id", F.array("request_id")), judgs)
    with pytest.raises(ValidationError, match=r"attributes: missing column 'weight'.*rule column_missing"):
        validate_inputs(cands, judgs, attributes=Attributes(table=judgs, weight="weight"))
    # score_requests unchecked (validate=False: the plain metric) names the same rules
    with pytest.raises(InputError, match=r"rule column_missing"):
        score_requests(cands.drop("position", "score"), judgs, validate=False)
    with pytest.raises(InputError, match=r"rule column_type"):
        score_requests(cands, judgs.withColumn("grade", F.col("grade").cast("string")), validate=False)


def test_input_empty_is_an_error(spark):
    cands = spark.createDataFrame(BASE_C, CANDS)
    judgs = spark.createDataFrame([], JUDGS)
    with pytest.raises(ValidationError, match=r"judgments: the input has no rows \(rule input_empty\)"):
        validate_inputs(cands, judgs, spec=ValidationSpec(default="quarantine"))
    with pytest.raises(ValidationError, match=r"candidates: the input has no rows \(rule input_empty\)"):
        validate_inputs(cands.limit(0), spark.createDataFrame(BASE_J, JUDGS))


def test_k_below_one_is_rejected_by_the_contract_before_any_data():
    with pytest.raises(ContractError, match=r"contract\.k\[0\]: must be an integer >= 1, got 0"):
        Contract(k=[0])
    with pytest.raises(ContractError, match=r"contract\.k\[1\]"):
        JobConfig.from_dict({"version": 1, "contract": {"k": [3, -1]}, "inputs": {"candidates": "x"}})


@pytest.mark.parametrize("rule", ["column_missing", "column_type", "input_empty", "k_invalid"])
def test_schema_rules_cannot_be_quarantined(rule):
    with pytest.raises(ContractError, match=rf"validation\.rules\.{rule}: can only be 'error'"):
        ValidationSpec.from_dict({"rules": {rule: "quarantine"}})


def test_validation_section_errors_name_the_dotted_path():
    for section, path in [
        ({"default": "drop"}, "validation.default"),
        ({"rules": {"nope": "error"}}, "validation.rules.nope"),
        ({"rules": ["x"]}, "validation.rules"),
        ({"max_quarantined_share": 1.5}, "validation.max_quarantined_share"),
        ({"max_candidates_per_request": 0}, "validation.max_candidates_per_request"),
        ({"typo": 1}, "validation.typo"),
        ("quarantine", "validation"),
    ]:
        with pytest.raises(ContractError) as info:
            ValidationSpec.from_dict(section)
        assert str(info.value).startswith(path + ":"), str(info.value)
    spec = ValidationSpec.from_dict(None)
    assert spec.to_dict()["rules"] == {r.name: "error" for r in RULES}
    assert not spec.quarantines and spec.max_candidates_per_request == 10_000


def test_quarantine_handling_needs_an_output(tmp_path):
    base = {"version": 1, "inputs": {"candidates": "c"}, "outputs": {"per_request": "p"}}
    with pytest.raises(ContractError, match=r"outputs\.quarantine: is required .*doc_repeated"):  # when loaded
        JobConfig.from_dict({**base, "validation": {"rules": {"doc_repeated": "quarantine"}}}, base=tmp_path)
    config = JobConfig.from_dict(
        {**base, "validation": {"default": "quarantine"}, "outputs": {"per_request": "p", "quarantine": {"path": "q"}}},
        base=tmp_path,
    )
    spec, target = config.validation()
    assert spec.quarantines and target.path == str(tmp_path / "q")
    with pytest.raises(ContractError, match=r"outputs\.quarantine\.table"):
        JobConfig.from_dict({**base, "outputs": {"per_request": "p", "quarantine": {"table": "x; DROP"}}})


def test_share_above_the_maximum_fails_anyway(spark):
    c, j, a, _, _ = _case("doc_repeated")
    cands, judgs, attrs = _inputs(spark, BASE_C + c, BASE_J + j, BASE_A + a)
    spec = ValidationSpec(default="quarantine", max_quarantined_share=0.1)
    with pytest.raises(ValidationError, match=r"candidates: 2 of 9 rows \(22\.2%\) would be quarantined.*doc_repeated 2"):
        validate_inputs(cands, judgs, Contract(k=[3]), spec, attributes=attrs)


def test_identical_duplicate_judgments_are_merged_not_errors(spark, batches):
    cands, judgs, attrs = _inputs(spark, BASE_C, BASE_J + [BASE_J[0], BASE_J[0]], BASE_A)
    contract = BATCHES["position"][0]
    v = validate_inputs(cands, judgs, contract, attributes=attrs)
    assert v.accounting["judgments"].duplicates_merged == 2
    assert v.accounting["judgments"].rows_scored == len(BASE_J) + 2
    assert sorted(v.judgments.collect()) == sorted(BASE_J)  # Rows compare equal to tuples
    assert "2 identical duplicate(s) merged" in v.accounting.summary()
    # and the scores are those of the de-duplicated table (the join would otherwise double a candidate):
    # the clean base's scores under the same contract, computed once for the position batch
    got = score_requests(v.candidates, v.judgments, v.contract, attributes=v.attributes).collect()
    assert sorted(got) == batches["position"]["clean_scores"]


def test_unjudged_candidates_are_not_a_rule(spark):
    cands = spark.createDataFrame(BASE_C + [("q2", "zz", "s1", 3, 0.1)], CANDS)
    v = validate_inputs(cands, spark.createDataFrame(BASE_J, JUDGS), Contract(k=[3]))
    assert v.accounting["candidates"].rows_quarantined == 0
    assert v.candidates is cands  # all rules 'error', nothing broken: the input is handed on as read


def test_spark_errors_become_one_line():
    class Fake(Exception):
        pass

    assert describe_spark_error(Fake("x")) is None


def test_spark_analysis_error_is_described(spark):
    with pytest.raises(Exception) as info:
        spark.createDataFrame(BASE_J, JUDGS).select("nope").collect()
    text = describe_spark_error(info.value)
    assert text is not None and "nope" in text and "\n" not in text


# --------------------------------------------------------------------------- accounting on random dirt
def _random_dirty(spark, rng, n_requests, raw=False):
    """Random requests where every field is sometimes spoiled (null, blank, negative, NaN, repeated)."""
    c, j, a = [], [], []
    def sometimes(clean, *dirty, p=0.04):
        return rng.choice(dirty) if rng.random() < p else clean

    for i in range(n_requests):
        rid = sometimes(f"r{i}", None, "", " ")
        n = rng.randint(1, 7)
        for system in rng.choice([["s1"], ["s1", "s2"]]):
            for p in range(1, n + 1):
                doc = sometimes(f"d{p}", None, f"d{rng.randint(1, n)}", p=0.03)
                pos = sometimes(p, None, 0, -1, rng.randint(1, n), p=0.03)
                c.append((rid, doc, system, pos, rng.random()))
        for p in range(1, n + 1):
            if rng.random() < 0.8:
                grade = sometimes(rng.choice([0.0, 1.0, 2.0, 3.0]), -1.0, float("nan"), float("inf"), None)
                j.append((rid, f"d{p}", grade))
                if rng.random() < 0.05:
                    j.append((rid, f"d{p}", rng.choice([grade, 1.0])))
        a.append((rid, sometimes(rng.choice([1.0, 2.0, 0.5]), -1.0, float("inf"), None)))
    cands = spark.createDataFrame(c, CANDS)
    judgs = spark.createDataFrame(j, JUDGS)
    attrs = Attributes(table=spark.createDataFrame(a, ATTRS), weight="weight")
    return (cands, judgs, attrs, (c, j, a)) if raw else (cands, judgs, attrs)


def _rows_per_input(frames: dict[str, DataFrame]) -> dict[str, int]:
    """Rows of each DataFrame of ``frames`` (name -> DataFrame), counted in one Spark job."""
    tagged = [df.select(F.lit(name).alias("input")) for name, df in frames.items()]
    return dict(reduce(DataFrame.unionByName, tagged).groupBy("input").count().collect())


@pytest.mark.slow
def test_accounting_invariant_on_a_randomized_dirty_dataset(spark):
    cands, judgs, attrs, (c, j, a) = _random_dirty(spark, random.Random(20261129), 300, raw=True)
    spec = ValidationSpec(default="quarantine", max_quarantined_share=1.0, max_candidates_per_request=5)
    v = validate_inputs(cands, judgs, Contract(k=[1, 3]), spec, attributes=attrs)
    try:
        outputs = {"candidates": v.candidates, "judgments": v.judgments, "attributes": v.attributes.table}
        quarantined = dict(v.quarantine.groupBy("input").count().collect())
        passed = _rows_per_input(outputs)
        for name, original in {"candidates": c, "judgments": j, "attributes": a}.items():
            acc = v.accounting[name]
            n_q = quarantined.get(name, 0)
            n_out = passed.get(name, 0)
            assert acc.rows_read == len(original)
            assert acc.rows_quarantined == n_q > 0
            assert acc.rows_scored == n_out + acc.duplicates_merged
            assert acc.rows_read == acc.rows_scored + acc.rows_quarantined
            assert sum(n for _, n in acc.quarantined_by_rule) == n_q
        assert v.accounting.as_dict()["candidates"]["rows_read"] == len(c)
        # scoring what passed never fails and never yields an NDCG outside [0, 1]
        out = score_requests(v.candidates, v.judgments, v.contract, attributes=v.attributes)
        bad = out.filter(~F.col("ndcg").between(0.0, 1.0 + 1e-12) | F.isnan("weight") | (F.col("weight") < 0))
        assert bad.count() == 0
    finally:
        v.unpersist()


def test_fast_detector_counts_exactly_what_the_row_flags_count(spark):
    """Under all-'error' handling a count-only detector (no windows) decides; it must agree with
    the row-by-row flags (used for quarantine and for the error message) on every rule."""
    cands, judgs, attrs = _random_dirty(spark, random.Random(7), 150)
    contract = Contract(k=[3]).resolve(cands.columns)
    spec = ValidationSpec(max_candidates_per_request=6)
    rows = flag_row_rules(cands, judgs, contract, attrs, None, None)
    detected = {key: n for key, (n, _) in detect_rule_counts(rows, contract, spec).items()
                if key[1] not in ("merged", "grades")}
    flags = count_flagged_rows(flag_every_rule(rows, contract, spec, quarantining=False))
    flagged = {key: n for key, (n, _) in flags.items() if key[1] in ("read", "rule")}
    # a list is too long: the detector stops before collecting lists (the row flags then count repeats)
    repeats = {("candidates", "rule", "doc_repeated"), ("candidates", "rule", "position_repeated")}
    assert detected == {key: n for key, n in flagged.items() if key not in repeats}
    assert {key[2] for key in detected if key[1] == "rule"} >= {
        "request_id_missing", "doc_id_missing", "position_invalid", "grade_negative", "grade_not_finite",
        "judgment_conflict", "too_many_candidates",
    }
    # with no list too long, the second detector job counts repeats too (the row flags of repeats
    # do not depend on the skew guard: the flags counted above serve)
    unguarded = ValidationSpec(max_candidates_per_request=None)
    detected = {k: n for k, (n, _) in detect_rule_counts(rows, contract, unguarded).items()}
    for rule in ("doc_repeated", "position_repeated"):
        assert detected[("candidates", "rule", rule)] == flagged[("candidates", "rule", rule)] > 0


def _detector_passes(monkeypatch, rows, contract, spec) -> tuple[dict, int]:
    """The detector's counts (without examples) and how many times it collected counts (its jobs)."""
    from ndcg_spark.validation import counts

    passes = []
    real = counts._collect
    monkeypatch.setattr(counts, "_collect", lambda parts: passes.append(len(parts)) or real(parts))
    detected = {key: n for key, (n, _) in detect_rule_counts(rows, contract, spec).items()}
    return detected, len(passes)


def test_unguarded_detector_asks_once_and_counts_repeats_and_pairs_exactly(spark, monkeypatch):
    """Without a skew guard (the shell's check) the detector's first job only asks whether doc ids,
    positions or judged pairs repeat (hashes, distinct values); a second job counts them when they
    may. Its counts must equal the row flags' on every rule and on the merged duplicates, and clean
    input must cost one pass."""
    cands, judgs, attrs = _random_dirty(spark, random.Random(11), 150)
    contract = Contract(k=[3]).resolve(cands.columns)
    unguarded = ValidationSpec(max_candidates_per_request=None)
    rows = flag_row_rules(cands, judgs, contract, attrs, None, None)
    detected, _ = _detector_passes(monkeypatch, rows, contract, unguarded)
    flags = count_flagged_rows(flag_every_rule(rows, contract, unguarded, quarantining=False))
    flagged = {key: n for key, (n, _) in flags.items() if key[1] in ("read", "rule", "merged")}
    assert {key: n for key, n in detected.items() if key[1] != "grades"} == flagged
    assert detected[("judgments", "grades", "off")] > 0  # negative and not finite grades: no whole scale
    assert {"doc_repeated", "position_repeated", "judgment_conflict"} <= {key[2] for key in detected}
    assert detected.get(("judgments", "merged", None), 0) > 0

    clean_c = spark.createDataFrame(
        [(f"r{i}", f"d{p}", "s1", float(p), 0.5) for i in range(30) for p in range(1, 6)], FUZZ_C)
    clean_j = spark.createDataFrame([(f"r{i}", f"d{p}", 1.0) for i in range(30) for p in range(1, 4)], JUDGS)
    clean = flag_row_rules(clean_c, clean_j, contract)
    detected, jobs = _detector_passes(monkeypatch, clean, contract, unguarded)
    assert jobs == 1
    assert detected == {("candidates", "read", None): 150, ("judgments", "read", None): 90,
                        # the grades' scale: every grade whole, the largest 1
                        ("judgments", "grades", "top"): 1, ("judgments", "grades", "off"): 0}

    # one repeat of each kind, alone (two rows break it; one of two identical judgments is merged
    # away): -0.0 and 0.0 are one position
    cases = {
        "position_repeated": ([("r1", "d1", "s1", 0.0, 0.1), ("r1", "d2", "s1", -0.0, 0.2)], []),
        "doc_repeated": ([("r1", "d1", "s1", 1.0, 0.1), ("r1", "d1", "s1", 2.0, 0.2)], []),
        "merged": ([("r1", "d1", "s1", 1.0, 0.1)], [("r1", "d1", 2.0), ("r1", "d1", 2.0)]),
        "judgment_conflict": ([("r1", "d1", "s1", 1.0, 0.1)], [("r1", "d1", 2.0), ("r1", "d1", 1.0)]),
    }
    for rule, (c, j) in cases.items():
        rows = flag_row_rules(
            spark.createDataFrame(c, FUZZ_C), spark.createDataFrame(j or [("r1", "d1", 1.0)], JUDGS), contract)
        detected, jobs = _detector_passes(monkeypatch, rows, contract, unguarded)
        key = ("judgments", "merged", None) if rule == "merged" else (
            "judgments" if rule == "judgment_conflict" else "candidates", "rule", rule)
        assert (detected.get(key), jobs) == (1 if rule == "merged" else 2, 2), rule


# --------------------------------------------------------------------------- seeded fuzz
FUZZ_C = "request_id string, doc_id string, system string, position double, score double"
FUZZ_J = "request_id string, doc_id string, grade string"

# corruption -> (rules that may be reported as its reason, scope): scope "list" quarantines the
# spoiled system's list, "request" the whole request in every input, "row" the orphan row alone,
# "none" nothing (the case must be scored exactly like its clean version).
CORRUPTIONS_POSITION = {
    "cand_null_request": ({"request_id_missing"}, "row"),
    "cand_blank_doc": ({"doc_id_missing"}, "list"),
    "position_null": ({"position_invalid"}, "list"),
    "position_zero": ({"position_invalid"}, "list"),
    "position_negative": ({"position_invalid"}, "list"),
    "position_nan": ({"position_invalid"}, "list"),
    "position_repeated": ({"position_repeated"}, "list"),
    "doc_repeated": ({"doc_repeated"}, "list"),
    "doc_and_position_repeated": ({"doc_repeated"}, "list"),
    "too_many": ({"too_many_candidates"}, "list"),
    "grade_negative": ({"grade_negative"}, "request"),
    "grade_nan": ({"grade_not_finite"}, "request"),
    "grade_inf": ({"grade_not_finite"}, "request"),
    "grade_overflow": ({"grade_not_finite"}, "request"),
    "grade_huge_string": ({"grade_not_finite", "grade_not_numeric"}, "request"),
    "grade_text": ({"grade_not_numeric"}, "request"),
    "judgment_conflict": ({"judgment_conflict"}, "request"),
    "judgment_conflict_with_unjudged": ({"judgment_conflict"}, "request"),
    "judgment_blank_doc": ({"doc_id_missing"}, "request"),
    "judgment_null_request": ({"request_id_missing"}, "row"),
    "weight_negative": ({"weight_invalid"}, "request"),
    "weight_nan": ({"weight_invalid"}, "request"),
    "attributes_null_request": ({"request_id_missing"}, "row"),
    "judgment_identical_duplicate": (set(), "none"),
    "unjudged_candidate": (set(), "none"),
}
CORRUPTIONS_SCORE = {
    "score_null": ({"score_invalid"}, "list"),
    "score_nan": ({"score_invalid"}, "list"),
    "grade_not_in_table": ({"grade_not_in_gain_table"}, "request"),
    "grade_fraction_not_in_table": ({"grade_not_in_gain_table"}, "request"),
    "doc_repeated": ({"doc_repeated"}, "list"),
    "cand_blank_doc": ({"doc_id_missing"}, "list"),
    "grade_negative": ({"grade_negative"}, "request"),
    "unjudged_candidate": (set(), "none"),
}
MAX_CANDIDATES = 8


def _fuzz_batch(rng, n_cases, corruptions, order):
    """Rows of n_cases spoiled requests plus clean ones, with each row's expected fate.

    Returns (candidates, judgments, attributes, expected) where each input is a list of
    (row, quarantined?) and expected maps case request id -> (corruption, rules, scope, systems).
    """
    cands, judgs, attrs, expected = [], [], [], {}

    def request(rid, systems, n):
        docs = [f"d{k}" for k in range(n)]
        rows_c = []
        for system in systems:
            order_ = docs[:]
            rng.shuffle(order_)
            for p, d in enumerate(order_, start=1):
                rows_c.append([rid, d, system, float(p), round(1.0 - p / (n + 1), 6)])
        rows_j = [[rid, d, str(rng.choice([0, 1, 2, 3]))] for d in docs if rng.random() < 0.85]
        return rows_c, rows_j, [[rid, rng.choice([0.5, 1.0, 2.0])]]

    for i in range(n_cases):
        rid = f"f{i:04d}"
        kind = rng.choice(sorted(corruptions))
        rules, scope = corruptions[kind]
        systems = ["s1", "s2"] if rng.random() < 0.5 else ["s1"]
        n = MAX_CANDIDATES + rng.randint(1, 3) if kind == "too_many" else rng.randint(2, 6)
        rows_c, rows_j, rows_a = request(rid, systems, n)
        if kind == "too_many":  # only s1's list is too long; s2 shows its top 3 and is scored
            rows_c = [r for r in rows_c if r[2] == "s1" or r[3] <= 3]
        if not rows_j or kind.startswith("judgment") or kind.startswith("grade"):
            rows_j = rows_j or [[rid, "d0", "1"]]
        s1 = [r for r in rows_c if r[2] == "s1"]
        victim = rng.choice(s1)
        other = rng.choice([r for r in s1 if r is not victim])
        extra_c, extra_j, extra_a = [], [], []
        jv = rng.choice(rows_j)
        if kind == "too_many":
            pass  # more candidates than MAX_CANDIDATES, drawn above
        elif kind == "cand_null_request":
            extra_c.append([None, f"orphan{i}", "s1", 1.0, 0.5])
        elif kind == "cand_blank_doc":
            victim[1] = rng.choice(["", "   ", None])
        elif kind == "position_null":
            victim[3] = None
        elif kind == "position_zero":
            victim[3] = 0.0
        elif kind == "position_negative":
            victim[3] = -float(rng.randint(1, 5))
        elif kind == "position_nan":
            victim[3] = float("nan")
        elif kind == "position_repeated":
            victim[3] = other[3]
        elif kind == "doc_repeated":
            victim[1] = other[1]
        elif kind == "doc_and_position_repeated":
            victim[1], victim[3] = other[1], other[3]
        elif kind == "grade_negative":
            jv[2] = rng.choice(["-1", "-0.5", "-3"])
        elif kind == "grade_nan":
            jv[2] = "NaN"
        elif kind == "grade_inf":
            jv[2] = rng.choice(["Infinity", "-Infinity"])
            if jv[2] == "-Infinity":
                rules = {"grade_negative"}
        elif kind == "grade_overflow":
            jv[2] = "2000"
        elif kind == "grade_huge_string":
            jv[2] = "1e400"
        elif kind == "grade_text":
            jv[2] = rng.choice(["high", "n/a", "3 stars", "two"])
        elif kind == "judgment_conflict":
            extra_j.append([jv[0], jv[1], str(int(float(jv[2])) + 1)])
        elif kind == "judgment_conflict_with_unjudged":
            extra_j.append([jv[0], jv[1], None])
        elif kind == "judgment_blank_doc":
            jv[1] = rng.choice(["", " "])
        elif kind == "judgment_null_request":
            extra_j.append([None, "d0", "2"])
        elif kind == "weight_negative":
            rows_a[0][1] = -1.0
        elif kind == "weight_nan":
            rows_a[0][1] = float("nan")
        elif kind == "attributes_null_request":
            extra_a.append([None, 1.0])
        elif kind == "judgment_identical_duplicate":
            extra_j.append(list(jv))
        elif kind == "unjudged_candidate":
            s1.append([rid, "never_judged", "s1", float(len(s1) + 1), -1.0])
            rows_c.append(s1[-1])
        elif kind == "score_null":
            victim[4] = None
        elif kind == "score_nan":
            victim[4] = float("nan")
        elif kind == "grade_not_in_table":
            jv[2] = "4"
        elif kind == "grade_fraction_not_in_table":
            jv[2] = "1.5"
        else:  # pragma: no cover
            raise AssertionError(kind)
        expected[rid] = (kind, rules, scope, systems)
        for r in rows_c:
            out = scope == "request" or (scope == "list" and r[2] == "s1")
            cands.append((tuple(r), out))
        for r in rows_j:
            judgs.append((tuple(r), scope == "request"))
        for r in rows_a:
            attrs.append((tuple(r), scope == "request"))
        cands += [(tuple(r), True) for r in extra_c]
        attrs += [(tuple(r), True) for r in extra_a]
        for r in extra_j:
            judgs.append((tuple(r), scope in ("request", "row")))
    for i in range(max(10, n_cases // 5)):  # clean requests between the spoiled ones
        rows_c, rows_j, rows_a = request(f"c{i:04d}", ["s1", "s2"], rng.randint(1, 6))
        cands += [(tuple(r), False) for r in rows_c]
        judgs += [(tuple(r), False) for r in rows_j]
        attrs += [(tuple(r), False) for r in rows_a]
    return cands, judgs, attrs, expected


def _score_rows(df):
    return sorted(
        (r["system"], r["request_id"], r["k"], r["n_candidates"], r["n_judged"], r["n_positive"],
         r["n_unjudged_in_top_k"], r["empty_ideal"], r["dcg"], r["idcg"], r["ndcg"], r["weight"])
        for r in df.collect()
    )


def _close(a, b):
    if a is None or b is None or isinstance(a, (str, bool, int)):
        return a == b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize(
    "seed, n_cases, corruptions, contract",
    [
        (1, 220, CORRUPTIONS_POSITION, Contract(k=[1, 3, 5])),
        (2, 60, CORRUPTIONS_SCORE, Contract(k=[1, 3, 5], order="score", gain=TABLE_GAIN)),
    ],
    ids=["position-order", "score-order-gain-table"],
)
@pytest.mark.slow
def test_fuzz_each_malformed_request_is_quarantined_and_the_rest_scored_unchanged(
    spark, seed, n_cases, corruptions, contract
):
    rng = random.Random(seed)
    cands, judgs, attrs, expected = _fuzz_batch(rng, n_cases, corruptions, contract.order)
    spec = ValidationSpec(default="quarantine", max_quarantined_share=1.0, max_candidates_per_request=MAX_CANDIDATES)
    c_df = spark.createDataFrame([r for r, _ in cands], FUZZ_C)
    j_df = spark.createDataFrame([r for r, _ in judgs], FUZZ_J)
    a_df = spark.createDataFrame([r for r, _ in attrs], ATTRS)
    v = validate_inputs(c_df, j_df, contract, spec, attributes=Attributes(table=a_df, weight="weight"))
    try:
        # 1. each input's quarantine holds exactly the expected rows
        q = v.quarantine.collect()
        for name, rows in {"candidates": cands, "judgments": judgs, "attributes": attrs}.items():
            assert sum(1 for row in q if row["input"] == name) == sum(1 for _, out in rows if out), name
            acc = v.accounting[name]
            assert acc.balanced and acc.rows_read == len(rows)
        # 2. each spoiled request went for one of its corruption's rules
        reasons: dict[str, set] = {}
        for row in q:
            if row["request_id"] is not None:
                reasons.setdefault(row["request_id"], set()).add(row["rule"])
        for rid, (kind, rules, scope, _) in expected.items():
            if scope in ("list", "request"):
                assert reasons.get(rid, set()) and reasons[rid] <= rules, (rid, kind, reasons.get(rid))
            else:
                assert rid not in reasons, (rid, kind, reasons[rid])
        orphans = {row["rule"] for row in q if row["request_id"] is None}
        assert orphans <= {"request_id_missing"}
        # 3. what passed is exactly the expected clean rows ...
        want_c = sorted(r for r, out in cands if not out)
        got_c = sorted(tuple(r) for r in v.candidates.select(*c_df.columns).collect())
        assert len(got_c) == len(want_c) and all(
            all(_close(x, y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y)) for x, y in zip(g, w))
            for g, w in zip(got_c, want_c)
        )
        # 4. ... and its scores equal scoring the clean rows alone (identical duplicates merged)
        clean_j = sorted({(r, d, None if g is None else float(g)) for (r, d, g), out in judgs if not out})
        # a quarantined list was answered: no row, not one of a request s1 returned nothing for (its
        # other lists and judgments stay); the validated frame knows them, the clean rows alone do not
        broken_lists = spark.createDataFrame([(rid, "s1", None) for rid, (_, _, scope, _) in expected.items()
                                              if scope == "list"],
                                             "request_id string, system string, pool_version string")
        want = score_requests(
            spark.createDataFrame(want_c, FUZZ_C),
            spark.createDataFrame(clean_j, JUDGS),
            contract,
            attributes=Attributes(table=spark.createDataFrame([r for r, out in attrs if not out], ATTRS), weight="weight"),
            set_aside=broken_lists,
        )
        got = score_requests(v.candidates, v.judgments, v.contract, attributes=v.attributes)
        got_rows, want_rows = _score_rows(got), _score_rows(want)
        assert len(got_rows) == len(want_rows) > 0
        for g, w in zip(got_rows, want_rows):
            assert all(_close(x, y) for x, y in zip(g, w)), (g, w)
        scored = {r[1] for r in got_rows}
        for rid, (kind, _, scope, systems) in expected.items():
            if scope == "none":
                assert rid in scored, kind
            if scope == "request":
                assert rid not in scored, kind
    finally:
        v.unpersist()


@pytest.mark.slow
def test_fuzz_sample_under_error_each_fails_with_its_rule(spark):
    rng = random.Random(3)
    kinds = [k for k, (rules, scope) in CORRUPTIONS_POSITION.items() if rules and k != "too_many"]
    sample = rng.sample(kinds, 6)
    for n, kind in enumerate(sample):
        cands, judgs, attrs, expected = _fuzz_batch(random.Random(100 + n), 1, {kind: CORRUPTIONS_POSITION[kind]}, "position")
        rules = next(iter(expected.values()))[1]
        with pytest.raises(NdcgError) as info:
            validate_inputs(
                spark.createDataFrame([r for r, _ in cands], FUZZ_C),
                spark.createDataFrame([r for r, _ in judgs], FUZZ_J),
                Contract(k=[3]),
                attributes=Attributes(table=spark.createDataFrame([r for r, _ in attrs], ATTRS), weight="weight"),
            )
        assert isinstance(info.value, ValidationError)
        assert any(f"- {rule}: " in str(info.value) for rule in rules), (kind, str(info.value))


@pytest.mark.slow
def test_fuzz_malformed_schemas_each_fail_with_a_schema_rule(spark):
    rng = random.Random(4)
    base = {
        "candidates": spark.createDataFrame(BASE_C, CANDS),
        "judgments": spark.createDataFrame(BASE_J, JUDGS),
        "attributes": spark.createDataFrame(BASE_A, ATTRS),
    }
    needed = {
        "candidates": ["request_id", "doc_id", "position"],
        "judgments": ["request_id", "doc_id", "grade"],
        "attributes": ["request_id", "weight"],
    }
    spoilers = {
        "drop": ("column_missing", lambda df, col: df.drop(col)),
        "boolean": ("column_type", lambda df, col: df.withColumn(col, F.lit(True))),
        "array": ("column_type", lambda df, col: df.withColumn(col, F.array(F.col(col)))),
        "date": ("column_type", lambda df, col: df.withColumn(col, F.current_date())),
        "map": ("column_type", lambda df, col: df.withColumn(col, F.create_map(F.lit("k"), F.col(col)))),
    }
    cases = 0
    for _ in range(40):
        name = rng.choice(sorted(base))
        col = rng.choice(needed[name])
        spoil = rng.choice(sorted(spoilers))
        rule, fn = spoilers[spoil]
        frames = dict(base)
        frames[name] = fn(frames[name], col)
        with pytest.raises(ValidationError) as info:
            validate_inputs(
                frames["candidates"], frames["judgments"], Contract(k=[3], order="position"),
                attributes=Attributes(table=frames["attributes"], weight="weight"),
            )
        assert f"rule {rule}" in str(info.value) and name in str(info.value), (name, col, spoil, str(info.value))
        cases += 1
    for name in ("candidates", "judgments", "attributes"):
        frames = dict(base)
        frames[name] = frames[name].limit(0)
        with pytest.raises(ValidationError, match=rf"{name}: the input has no rows \(rule input_empty\)"):
            validate_inputs(
                frames["candidates"], frames["judgments"], Contract(k=[3]),
                attributes=Attributes(table=frames["attributes"], weight="weight"),
            )
        cases += 1
    assert cases >= 43


# --------------------------------------------------------------------------- the console script
@pytest.fixture(scope="module")
def dirty_job(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("dirty")
    spark.createDataFrame(BASE_C + [("qx", "a", "s1", 1, 0.9), ("qx", "a", "s1", 2, 0.8)], CANDS).write.parquet(
        str(root / "dirty" / "candidates")
    )
    spark.createDataFrame(BASE_C, CANDS).write.parquet(str(root / "clean" / "candidates"))
    spark.createDataFrame(BASE_J, JUDGS).write.parquet(str(root / "judgments"))
    (root / "broken").mkdir()
    (root / "broken" / "part-0.parquet").write_text("this is not parquet")

    def config(candidates: str, validation: str = "") -> str:
        path = root / "conf" / f"{candidates.replace('/', '_')}{abs(hash(validation))}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            textwrap.dedent(f"""
            version: 1
            contract: {{k: [1, 3]}}
            inputs:
              candidates: {{path: {root / candidates}}}
              judgments: {{path: {root / 'judgments'}}}
            outputs:
              per_request: {{path: {root / 'out' / 'per_request'}}}
              quarantine: {{path: {root / 'out' / 'quarantine'}}}
            spark: {{master: "local[2]", shuffle_partitions: 2}}
            """)
            + validation
        )
        return str(path)

    return root, config


def test_cli_dirty_input_exits_2_with_the_rule_and_no_trace(dirty_job, capsys):
    root, config = dirty_job
    status = main(["score", "--config", config("dirty/candidates"), "--run-id", "n1"])
    err = capsys.readouterr().err
    assert status == 2
    assert "doc_repeated" in err and "2 candidates rows" in err
    assert "Traceback" not in err and "py4j" not in err.lower() and "at org.apache" not in err
    assert not (root / "out" / "per_request").exists()  # nothing written


def test_cli_unreadable_input_exits_2_without_py4j(dirty_job, capsys):
    root, config = dirty_job
    status = main(["score", "--config", config("broken")])
    err = capsys.readouterr().err
    assert status == 2
    assert "Traceback" not in err and "py4j" not in err.lower(), err
    # the unreadable file itself is named, with Parquet's own reason (not just any read error)
    assert str(root / "broken") in err and "is not a Parquet file" in err, err


@pytest.mark.e2e
def test_cli_quarantine_run_reports_accounting_and_a_clean_rerun_clears_it(spark, dirty_job, capsys):
    root, config = dirty_job
    quarantine = "validation: {rules: {doc_repeated: quarantine}, max_quarantined_share: 0.5}\n"
    assert main(["score", "--config", config("dirty/candidates", quarantine), "--run-id", "n2"]) == 0
    out = capsys.readouterr().out
    assert "rows read = rows scored + rows quarantined: candidates 9 = 7 + 2 (doc_repeated 2); judgments 5 = 5 + 0" in out
    assert "quarantine: 2 rows -> parquet" in out
    q = spark.read.parquet(str(root / "out" / "quarantine"))
    assert sorted((r["run_id"], r["request_id"], r["rule"]) for r in q.collect()) == [("n2", "qx", "doc_repeated")] * 2
    per_request = spark.read.parquet(str(root / "out" / "per_request")).filter(F.col("run_id") == "n2")
    assert per_request.filter(F.col("request_id") == "qx").count() == 0
    answered = per_request.filter(~F.col("no_results"))  # a quarantined list is not a no-result request
    assert answered.select("request_id", "system").distinct().count() == 3
    # the same night again on clean input: its quarantine partition is gone, not left stale
    assert main(["score", "--config", config("clean/candidates", quarantine), "--run-id", "n2"]) == 0
    assert "candidates 7 = 7 + 0" in capsys.readouterr().out
    assert not (root / "out" / "quarantine" / "run_id=n2").exists()
