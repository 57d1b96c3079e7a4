"""Issue 18: the shell's input check runs once per cached input (ndcg_spark/validation/shell_check.py).

A check that the same cached DataFrames passed is answered from memory under another K; anything
that could change the answer -- an input not cached, another DataFrame, an input unpersisted, the
columns, gains or order the rules read, the literals, the attributes -- runs it again, and a failed
check is never remembered.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import ndcg_spark.validation.shell_check as shell_check_module
from ndcg_spark import Attributes, Contract, pool_summary, score_requests
from ndcg_spark.errors import ValidationError
from ndcg_spark.validation.validate import SHELL_CHECK
from tests.oracle import dcg_at_k

CANDS = "request_id string, doc_id string, position int, grade double"
ROWS = [("q1", "a", 1, 1.0), ("q1", "b", 2, 3.0), ("q1", "c", 3, 0.0), ("q2", "a", 1, 2.0), ("q2", "b", 2, 0.0)]
#: what the rules read of a contract, as shell_check.rules_read gives it
READ = ("columns", "gain", "max_grade", "order", "negative_grades")


@pytest.fixture
def checks(monkeypatch):
    """An empty memory, and the list of the checks that ran (the arguments validate_inputs got)."""
    ran = []
    real = shell_check_module.validate_inputs

    def counted(*args, **kwargs):
        ran.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(shell_check_module, "_passed", [])
    monkeypatch.setattr(shell_check_module, "validate_inputs", counted)
    return ran


def _expected_ndcg(k: int) -> dict[str, float]:
    """The plain-Python NDCG@k of ROWS (exponential gain, displayed order = position)."""
    out = {}
    for rid in ("q1", "q2"):
        rows = sorted((r for r in ROWS if r[0] == rid), key=lambda r: r[2])
        gains = [2.0 ** r[3] - 1.0 for r in rows]
        out[rid] = dcg_at_k(gains, k) / dcg_at_k(sorted(gains, reverse=True), k)
    return out


def _ndcg(df) -> dict[str, float]:
    return {r["request_id"]: r["ndcg"] for r in df.collect()}


def test_a_cached_input_that_passed_is_answered_from_memory_under_another_k(spark, checks):
    cands = spark.createDataFrame(ROWS, CANDS).cache()
    try:
        for k in (3, 1, 2):
            got = _ndcg(score_requests(cands, contract=Contract(k=[k])))
            for rid, value in _expected_ndcg(k).items():
                assert math.isclose(got[rid], value, rel_tol=0, abs_tol=1e-12), (k, rid)
        assert len(checks) == 1  # K is not read by the rules
        pool_summary(cands, contract=Contract(k=[5])).collect()  # the same check, another caller
        assert len(checks) == 1
    finally:
        cands.unpersist()


@pytest.mark.parametrize("change", ["not cached", "another DataFrame", "unpersisted", "gain", "columns",
                                    "system", "attributes"])
def test_whatever_could_change_the_answer_checks_again(spark, checks, change):
    cands = spark.createDataFrame(ROWS, CANDS)
    if change != "not cached":
        cands = cands.cache()
    contract, kwargs = Contract(k=[3]), {}
    try:
        score_requests(cands, contract=contract).collect()
        if change == "another DataFrame":
            cands.unpersist()
            cands = spark.createDataFrame(ROWS, CANDS).cache()  # the same rows, another plan
        elif change == "unpersisted":
            cands.unpersist()
        elif change == "gain":
            contract = Contract(k=[3], gain="linear")
        elif change == "columns":
            cands.unpersist()
            cands = cands.withColumnRenamed("grade", "label").cache()
            contract = Contract(k=[3], columns={"grade": "label"})
        elif change == "system":
            kwargs = {"system": "bm25"}
        elif change == "attributes":
            kwargs = {"attributes": Attributes(slices=("doc_id",))}
        score_requests(cands, contract=contract, **kwargs).collect()
        assert len(checks) == 2
    finally:
        cands.unpersist()


def test_a_failed_check_fails_every_time(spark, checks):
    repeated = spark.createDataFrame([*ROWS, ("q1", "a", 4, 0.0)], CANDS).cache()  # doc a twice in q1
    try:
        for _ in range(2):
            with pytest.raises(ValidationError) as caught:
                score_requests(repeated, contract=Contract(k=[3]))
            assert caught.value.rule == "doc_repeated"
        assert len(checks) == 2
    finally:
        repeated.unpersist()


def test_only_the_latest_checks_are_kept(spark, checks):
    frames = [spark.createDataFrame(ROWS, CANDS).cache() for _ in range(shell_check_module.REMEMBERED + 1)]
    try:
        for df in frames:
            shell_check_module.shell_check(df, None, Contract(k=[3]))
        assert len(shell_check_module._passed) == shell_check_module.REMEMBERED
        shell_check_module.shell_check(frames[-1], None, Contract(k=[3]))  # kept
        assert len(checks) == len(frames)
        shell_check_module.shell_check(frames[0], None, Contract(k=[3]))  # the oldest, let go
        assert len(checks) == len(frames) + 1
    finally:
        for df in frames:
            df.unpersist()


def test_the_memory_keys_on_every_contract_field_the_rules_read():
    # the input rules read these contract fields and no other (the quarantine table also stamps the
    # fingerprint, but the shell's check quarantines nothing); a rule that starts reading another
    # field must add it to shell_check.rules_read, or a check could be answered for another contract
    assert not SHELL_CHECK.quarantines
    contract = Contract(k=[3], gain="linear", max_grade=3, order="score")
    assert shell_check_module.rules_read(contract) == tuple(getattr(contract, f) for f in READ)
    package = Path(shell_check_module.__file__).parent
    read = set()
    for path in package.glob("*.py"):
        if path.name != "shell_check.py":
            read |= set(re.findall(r"\bcontract\.([a-z_]+)", path.read_text()))
    assert read - {"resolve", "fingerprint"} <= set(READ), read
    assert "fingerprint" not in {m for p in package.glob("*.py") if p.name not in ("quarantine.py", "shell_check.py")
                                 for m in re.findall(r"\bcontract\.([a-z_]+)", p.read_text())}
