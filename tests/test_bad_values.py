"""No value gives a raw trace: every value of the right type in any input column is scored or refused
by a named rule -- in the shell's default check and in the job's error and quarantine paths.

A seeded sweep. Each malformed value (null, NaN, +-inf, +-1e300, 2^63, 1e30, 2^31, -1, 0.5, -0.0;
for text: blank, NUL, 10,000 characters, non-ASCII, number-like text) goes into one column of one
row of a request of its own, every value of a column in one batch, under both orders and two gain
kinds (and a declared scale); a second sweep puts two bad values in one row, drawn by a seeded
generator. Each batch goes through

* the shell: ``score_requests`` with its default check: rows whose NDCGs are null or in [0, 1],
  or a :class:`~ndcg_spark.errors.NdcgError` naming a rule of the catalogue;
* the job's error path: ``validate_inputs`` with every rule ``error``, then scoring: the same;
* the job's quarantine path: every rule ``quarantine``: never an error; every request is either
  quarantined with a rule as its reason or scored with a sound NDCG, and
  ``rows read = rows scored + rows quarantined``.

What this caught (issue 48): an infinite or huge grade crashed the input check itself
(``ARITHMETIC_OVERFLOW`` from ``floor`` under ANSI mode), and a position of 2^31 or more crashed
the dense plan (``CAST_OVERFLOW``).
"""

from __future__ import annotations

import math
import random

import pytest

from ndcg_spark import Attributes, Contract, ValidationSpec, score_requests, validate_inputs
from ndcg_spark.config.validation_spec import RULE_NAMES
from ndcg_spark.errors import NdcgError

NUMBERS = [None, float("nan"), float("inf"), float("-inf"), 1e300, -1e300, 2.0**63, 1e30, 2.0**31, -1.0, 0.5,
           -0.0, 0.0]
TEXTS = [None, "", "   ", "\x00", "x" * 10_000, "ünïcødé ✓", "1e300", "NaN", "-inf", "0x10", "3"]
#: column -> (input, the values it takes)
COLUMNS = {
    "request_id": ("candidates", TEXTS),
    "doc_id": ("candidates", TEXTS),
    "position": ("candidates", NUMBERS),
    "score": ("candidates", NUMBERS),
    "grade": ("judgments", NUMBERS),
    "grade_text": ("judgments", TEXTS),
    "judged_request_id": ("judgments", TEXTS),
    "judged_doc_id": ("judgments", TEXTS),
    "weight": ("attributes", NUMBERS),
}
CONTRACTS = {
    "position-exponential": dict(order="position"),
    "score-linear": dict(order="score", gain="linear"),
    "position-binary-scale": dict(order="position", gain="binary", max_grade=3),
    "score-exponential-scale": dict(order="score", max_grade=3, ties="average"),
}
QUARANTINE_ALL = ValidationSpec(default="quarantine", max_quarantined_share=1.0)


def _clean(rid: str) -> tuple[list[list], list[list], list[list]]:
    """One clean request: three candidates, their grades (the last unjudged), a weight."""
    cands = [[rid, f"d{p}", float(p), 1.0 - p / 10] for p in (1, 2, 3)]
    judgs = [[rid, "d1", 2.0, "2"], [rid, "d2", 0.0, "0"]]
    return cands, judgs, [[rid, 1.0]]


def _batch(cases: list[dict[str, object]]) -> tuple[list, list, list]:
    """The clean requests ``c0 ..`` with each case's values put into its request's first row."""
    cands, judgs, attrs = [], [], []
    for i, case in enumerate(cases):
        c, j, a = _clean(f"c{i}")
        for column, value in case.items():
            if column in ("request_id", "doc_id", "position", "score"):
                c[0][("request_id", "doc_id", "position", "score").index(column)] = value
            elif column == "weight":
                a[0][1] = value
            else:
                j[0][{"judged_request_id": 0, "judged_doc_id": 1, "grade": 2, "grade_text": 3}[column]] = value
        cands += c
        judgs += j
        attrs += a
    return cands, judgs, attrs


def _frames(spark, rows, text_grade: bool):
    cands, judgs, attrs = rows
    c = spark.createDataFrame(cands, "request_id string, doc_id string, position double, score double")
    j = spark.createDataFrame(judgs, "request_id string, doc_id string, grade_num double, grade_str string")
    j = j.selectExpr("request_id", "doc_id", f"{'grade_str' if text_grade else 'grade_num'} AS grade")
    a = spark.createDataFrame(attrs, "request_id string, weight double")
    return c, j, a


def _sound(rows) -> list[str]:
    """The scored rows' problems: an NDCG or what-if that is not null and not within [0, 1]."""
    problems = []
    for r in rows:
        for column in ("ndcg", "ndcg_unjudged_low", "ndcg_unjudged_high"):
            v = r[column]
            if v is not None and not (math.isfinite(v) and -1e-12 <= v <= 1 + 1e-12):
                problems.append(f"{r['request_id']!r} k={r['k']} {column}={v!r}")
    return problems


def _named(exc: BaseException) -> bool:
    """A refusal the user can act on: the product's own error, naming a rule of the catalogue."""
    return isinstance(exc, NdcgError) and any(rule in str(exc) for rule in RULE_NAMES)


def _check(spark, cases: list[dict[str, object]], contract_fields: dict) -> dict:
    text_grade = any("grade_text" in case for case in cases)
    cands, judgs, attrs = _frames(spark, _batch(cases), text_grade)
    contract = Contract(k=[1, 3], **contract_fields)
    attributes = Attributes(table=attrs, weight="weight")
    if contract_fields["order"] == "score":
        cands = cands.drop("position")
    outcome = {}
    # the shell's default check, and the job's error path
    for path, run in (("shell", lambda: score_requests(cands, judgs, contract, attributes=attributes).collect()),
                      ("error", lambda: _validated_then_scored(cands, judgs, contract, attributes, ValidationSpec()))):
        try:
            rows = run()
        except Exception as exc:  # noqa: BLE001 - what kind of error is the test
            assert _named(exc), f"{path}: {cases[:3]}...: raw {type(exc).__name__}: {str(exc)[:300]}"
            outcome[path] = "refused"
        else:
            assert not _sound(rows), f"{path}: {_sound(rows)[:3]}"
            outcome[path] = "scored"
    # the quarantine path: never an error, every request accounted for
    validated = validate_inputs(cands, judgs, contract, QUARANTINE_ALL, attributes=attributes)
    scored = score_requests(validated.candidates, validated.judgments, contract, attributes=validated.attributes,
                            validate=False, grade_scale=validated.grade_scale).collect()
    assert not _sound(scored), _sound(scored)[:3]
    quarantined = [] if validated.quarantine is None else validated.quarantine.select("rule").collect()
    assert all(q["rule"] in RULE_NAMES for q in quarantined), {q["rule"] for q in quarantined}
    for item in validated.accounting.inputs:
        assert item.rows_read == item.rows_scored + item.rows_quarantined, item
    validated.unpersist()
    return outcome


def _validated_then_scored(cands, judgs, contract: Contract, attributes: Attributes, spec: ValidationSpec) -> list:
    """The job's path: validate under ``spec``, then score what passed (without checking again)."""
    validated = validate_inputs(cands, judgs, contract, spec, attributes=attributes)
    try:
        return score_requests(validated.candidates, validated.judgments, contract, attributes=validated.attributes,
                              validate=False, grade_scale=validated.grade_scale).collect()
    finally:
        validated.unpersist()


def _single_cases(column: str) -> list[dict[str, object]]:
    return [{column: value} for value in COLUMNS[column][1]]


#: one value at a time: every column under the fast lane's contract, and under score order in the
#: whole suite; every contract meets every column in the two-value sweep below
CORE, SINGLES = "position-binary-scale", ("position-binary-scale", "score-exponential-scale")


@pytest.mark.parametrize("contract", [c if c == CORE else pytest.param(c, marks=pytest.mark.slow) for c in SINGLES])
@pytest.mark.parametrize("column", list(COLUMNS))
def test_one_bad_value_is_scored_or_refused_by_a_named_rule(production_spark, column, contract):
    _check(production_spark, _single_cases(column), CONTRACTS[contract])


def test_a_huge_or_infinite_grade_is_refused_by_name_not_by_an_overflow(production_spark):
    """The two regressions of the issue, by hand: the grade's check and the dense plan's position
    (under a nightly run's settings, as every test here: Spark shares a ``floor`` or a cast between
    expressions only when it generates code, and so evaluates it before the check that guards it)."""
    spark = production_spark
    for value in (float("inf"), 2.0**63, 1e300, 1e30):
        cands, judgs, attrs = _frames(spark, _batch([{"grade": value}]), text_grade=False)
        with pytest.raises(NdcgError, match="grade_not_finite"):
            score_requests(cands, judgs, Contract(k=[3])).collect()
    cands, judgs, attrs = _frames(spark, _batch([{"position": 2.0**31}, {"position": 1e300}]), text_grade=False)
    rows = score_requests(cands, judgs, Contract(k=[3])).collect()  # positions only order the list
    assert {r.request_id for r in rows} == {"c0", "c1"} and not _sound(rows)


@pytest.mark.slow
@pytest.mark.parametrize("contract", list(CONTRACTS))
def test_two_bad_values_in_one_row_are_scored_or_refused_by_a_named_rule(production_spark, contract):
    rng = random.Random(48)
    cases = []
    numeric = [c for c, (_, values) in COLUMNS.items() if values is NUMBERS]
    for _ in range(24):
        a, b = rng.sample([c for c in COLUMNS if c != "grade_text"], 2)
        cases.append({a: rng.choice(COLUMNS[a][1]), b: rng.choice(COLUMNS[b][1])})
    assert any(set(case) <= set(numeric) for case in cases)
    _check(production_spark, cases, CONTRACTS[contract])
