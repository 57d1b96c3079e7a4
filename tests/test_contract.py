"""The contract: defaults, validation with dotted paths, fingerprint, YAML round trip."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ndcg_spark.job.config import JobConfig
from ndcg_spark.config.contract import Contract, GainMapping
from ndcg_spark.errors import ContractError


def test_defaults_are_the_spec_defaults():
    c = Contract()
    assert c.k == (1, 3, 5, 10)
    assert (c.gain.kind, c.discount, c.order, c.ties) == ("exponential", "log2", "auto", "doc_id")
    assert (c.ideal_from, c.unjudged, c.empty_ideal) == ("candidates", "separate", "exclude")


def test_contract_is_immutable():
    with pytest.raises(AttributeError):
        Contract().k = (5,)  # type: ignore[misc]


def test_fingerprint_ignores_key_order_and_columns_but_not_choices():
    a = Contract.from_dict({"k": [10, 3], "gain": "linear", "ties": "average"})
    b = Contract.from_dict({"ties": "average", "gain": "linear", "k": [3, 10, 3]})
    assert a.fingerprint == b.fingerprint
    assert Contract(columns={"request_id": "qid"}).fingerprint == Contract().fingerprint
    variants = [
        Contract(k=[10]),
        Contract(gain="linear"),
        Contract(gain={"table": {0: 0, 1: 1, 2: 3, 3: 7}}),
        Contract(order="score"),
        Contract(ties="average"),
        Contract(ideal_from="judgments"),
        Contract(unjudged="zero"),
        Contract(empty_ideal="zero"),
    ]
    prints = {v.fingerprint for v in variants} | {Contract().fingerprint}
    assert len(prints) == len(variants) + 1


def test_table_gain_with_yaml_string_keys_equals_numeric_keys():
    assert GainMapping.parse({"table": {"0": 0, "3": 7}}) == GainMapping.parse({"table": {0: 0.0, 3: 7.0}})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": [3, 0]}, r"contract\.k\[1\]: must be an integer >= 1, got 0"),
        ({"k": []}, r"contract\.k: must list at least one cutoff"),
        ({"k": "10"}, r"contract\.k: must be a list of integers"),
        ({"k": [2.5]}, r"contract\.k\[0\]: must be an integer"),
        ({"gain": "cubic"}, r"contract\.gain: must be one of exponential, linear, table"),
        ({"gain": {"table": {1: -2}}}, r"contract\.gain\.table\[1\]: must be a non-negative number"),
        ({"gain": {"table": {"high": 1}}}, r"contract\.gain\.table\[0\]: grade: must be a finite number"),
        ({"discount": "log10"}, r"contract\.discount: must be one of log2"),
        ({"order": "rank"}, r"contract\.order: must be one of auto, position, score"),
        ({"ties": "random"}, r"contract\.ties"),
        ({"ideal_from": "oracle"}, r"contract\.ideal_from"),
        ({"unjudged": "drop"}, r"contract\.unjudged: must be one of zero, exclude, separate"),
        ({"empty_ideal": "skip"}, r"contract\.empty_ideal: must be one of exclude, zero, error"),
        ({"columns": {"query": "qid"}}, r"contract\.columns\.query: is not a column role"),
        ({"columns": {"request_id": "q id; drop"}}, r"contract\.columns\.request_id: must be an identifier"),
    ],
)
def test_bad_values_name_the_dotted_path(kwargs, message):
    with pytest.raises(ContractError, match=message):
        Contract.from_dict(kwargs)


def test_unknown_field_is_named():
    with pytest.raises(ContractError, match=r"contract\.cutoffs: is not a contract field"):
        Contract.from_dict({"cutoffs": [10]})


def test_readable_serialization_round_trips():
    c = Contract(k=[5], gain={"table": {0: 0, 1: 1, 2: 3}}, ties="average", columns={"grade": "rel"})
    assert Contract.from_dict(c.to_dict()) == c
    assert c.to_dict()["gain"] == {"table": {"0": 0.0, "1": 1.0, "2": 3.0}}


def test_from_yaml_reads_the_contract_section(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent("""
        version: 1
        contract:
          k: [10, 5]
          gain: {table: {0: 0, 1: 1, 2: 3, 3: 7}}
          unjudged: exclude
          columns: {request_id: qid, grade: rel}
        inputs:
          candidates: {path: data/c}
    """))
    c = Contract.from_yaml(path)
    assert c.k == (5, 10) and c.unjudged == "exclude" and c.columns.request_id == "qid"
    job = JobConfig.from_yaml(path)
    assert job.contract == c
    assert job.candidates.path == str((tmp_path.parent / "data/c").resolve())


def test_yaml_is_read_safely(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("version: 1\ncontract: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ContractError, match="not valid YAML"):
        JobConfig.from_yaml(path)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"inputs": {"candidates": "x"}}, r"version: must be 1"),
        ({"version": 1}, r"inputs\.candidates: is required"),
        ({"version": 1, "inputs": {"candidates": {"table": "db.t; DROP TABLE x"}}}, r"inputs\.candidates\.table"),
        ({"version": 1, "inputs": {"candidates": {"path": "p", "format": "json"}}}, r"inputs\.candidates\.format"),
        ({"version": 1, "inputs": {"candidates": "p"}, "attributes": {"slices": ["ok", "not ok"]}}, r"attributes\.slices\[1\]"),
        ({"version": 1, "inputs": {"candidates": "p"}, "run_id": "../../etc"}, r"run_id: must be"),
    ],
)
def test_job_config_errors(data, message):
    with pytest.raises(ContractError, match=message):
        JobConfig.from_dict(data)


def test_import_is_instant_and_starts_nothing():
    code = "import sys, ndcg_spark; assert 'pyspark' not in sys.modules, 'pyspark imported'; print(ndcg_spark.__version__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
