"""The contract: defaults, validation with dotted paths, fingerprint, YAML round trip."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ndcg_spark.config.job import JobConfig
from ndcg_spark.config.contract import Contract, GainMapping
from ndcg_spark.errors import ContractError


def test_defaults_are_the_spec_defaults():
    c = Contract()
    assert c.k == (1, 3, 5, 10)
    assert (c.gain.kind, c.discount, c.order, c.ties) == ("exponential", "log2", "auto", "doc_id")
    assert (c.ideal_from, c.unjudged.name, c.empty_ideal.name) == ("candidates", "separate", "exclude")
    assert c.metric_names == ("ndcg",) and c.relevant_grade == 1.0


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
    assert c.k == (5, 10) and c.unjudged.name == "exclude" and c.columns.request_id == "qid"
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
        ({"inputs": {"candidates": "x"}}, r"version: must be 2"),
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


# ----------------------------------------------------------------------------- presets
TREC_EVAL_SPELLED_OUT = {"gain": "linear", "discount": "log2", "order": "score", "ties": "doc_id_desc",
                         "ideal_from": "judgments", "unjudged": "separate", "empty_ideal": "zero",
                         "negative_grades": "zero",
                         # trec_eval's panel: ndcg_cut, recall, P, map_cut, success, recip_rank (no cutoff)
                         "metrics": ["ndcg", {"recall": {"denominator": "all_relevant"}}, {"precision": {"denominator": "k"}},
                                     {"average_precision": {"denominator": "all_relevant"}}, "hit_rate",
                                     {"reciprocal_rank": {"cutoff": "deepest"}}]}


def test_preset_resolves_to_explicit_fields_with_the_same_fingerprint():
    preset = Contract.from_dict({"preset": "trec_eval", "k": [5, 10]})
    spelled = Contract.from_dict({**TREC_EVAL_SPELLED_OUT, "k": [10, 5]})
    assert preset == spelled and preset.fingerprint == spelled.fingerprint
    assert "preset" not in preset.to_dict() and Contract.from_dict(preset.to_dict()) == preset
    spark_like = Contract.from_dict({"preset": "ranking_evaluator"})
    assert (spark_like.gain.kind, spark_like.order, spark_like.ideal_from, spark_like.empty_ideal.name) == (
        "binary", "position", "judgments", "zero")
    assert spark_like.fingerprint != preset.fingerprint
    # Spark's RankingMetrics panel: ndcgAt, precisionAt (/ K), recallAt, meanAveragePrecisionAt (/ min(|labels|, K))
    assert [m.to_plain() for m in spark_like.metrics] == [
        "ndcg", {"precision": {"denominator": "k"}}, {"recall": {"denominator": "all_relevant"}},
        {"average_precision": {"denominator": "capped"}}]


def test_a_field_beside_the_preset_overrides_it():
    c = Contract.from_dict({"preset": "trec_eval", "gain": "exponential", "empty_ideal": "exclude"})
    assert (c.gain.kind, c.empty_ideal.name, c.ties, c.ideal_from) == ("exponential", "exclude", "doc_id_desc", "judgments")
    assert c.fingerprint == Contract.from_dict({**TREC_EVAL_SPELLED_OUT, "gain": "exponential",
                                                "empty_ideal": "exclude"}).fingerprint


def test_preset_from_a_job_yaml(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("version: 1\ncontract: {preset: trec_eval, k: [10]}\ninputs:\n  candidates: {path: run.txt, format: trec_run}\n"
                    "  judgments: {path: qrels.txt, format: trec_qrels}\n")
    job = JobConfig.from_yaml(path)
    assert job.contract == Contract.from_dict({**TREC_EVAL_SPELLED_OUT, "k": [10]})
    assert (job.candidates.format, job.judgments.format) == ("trec_run", "trec_qrels")


@pytest.mark.parametrize("preset", ["ranx", "", None, ["trec_eval"]])
def test_unknown_preset_names_the_dotted_path(preset):
    with pytest.raises(ContractError, match=r"^contract\.preset: must be one of ranking_evaluator, trec_eval; got "):
        Contract.from_dict({"preset": preset})


def test_a_bad_field_beside_a_preset_still_names_its_path():
    with pytest.raises(ContractError, match=r"contract\.ties: must be one of"):
        Contract.from_dict({"preset": "trec_eval", "ties": "random"})


@pytest.mark.parametrize("source, message", [
    ({"path": "r", "format": "trec_qrels"}, r"inputs\.candidates\.format: must be one of parquet, csv, delta, iceberg, trec_run;"),
    ({"table": "db.run", "format": "trec_run"}, r"inputs\.candidates\.format: trec_run reads a file"),
])
def test_trec_formats_only_where_they_fit(source, message):
    with pytest.raises(ContractError, match=message):
        JobConfig.from_dict({"version": 1, "inputs": {"candidates": source}})
    with pytest.raises(ContractError, match=r"outputs\.per_request\.format"):
        JobConfig.from_dict({"version": 1, "inputs": {"candidates": "c"},
                             "outputs": {"per_request": {"path": "o", "format": "trec_run"}}})


# Computed by the code before doc_id_desc, binary gain and presets existed (commit 261fecf): new
# options enter the fingerprint only when used.
FINGERPRINTS_BEFORE_PRESETS = [
    ({}, "1b16a3c985c13aa7"),
    ({"k": [5, 10], "gain": "linear", "empty_ideal": "zero"}, "bc33512e7554a153"),
    ({"order": "score", "ties": "average"}, "ef0f1de844626b30"),
    ({"order": "score", "ideal_from": "judgments", "unjudged": "zero", "gain": {"table": {0: 0, 1: 1, 2: 3}}},
     "90ab2a67e0b01ec9"),
    ({"k": [10], "gain": "linear", "order": "score", "ideal_from": "judgments", "empty_ideal": "zero"},
     "937a1c3ae88f40eb"),
]


@pytest.mark.parametrize("data, fingerprint", FINGERPRINTS_BEFORE_PRESETS)
def test_existing_contracts_keep_their_fingerprints(data, fingerprint):
    assert Contract.from_dict(data).fingerprint == fingerprint


def test_new_options_change_the_fingerprint_only_when_used():
    base = {"k": [10], "order": "score", "ideal_from": "judgments", "empty_ideal": "zero"}
    prints = {Contract.from_dict({**base, **extra}).fingerprint
              for extra in ({}, {"ties": "doc_id_desc"}, {"gain": "binary"}, {"gain": "linear"})}
    assert len(prints) == 4


#: a typo in each section a command may not use, and the dotted key its error names
SECTION_TYPOS = [
    ({"compare": {"baseline": "a", "candidate": "b", "bootstrp": {}}}, "compare.bootstrp"),
    ({"report": {"chart_kk": 10}}, "report.chart_kk"),
    ({"trend": {"lastt": 3}}, "trend.lastt"),
    ({"judging": {"budgett": 5}}, "judging.budgett"),
    ({"publishing": {"stale_after_minute": 5}}, "publishing.stale_after_minute"),
    ({"aggregate": {"min_eligble": 5}}, "aggregate.min_eligble"),
    ({"validation": {"rules": {"grade_negativ": "error"}}}, "validation.rules.grade_negativ"),
    ({"outputs": {"per_request": {"path": "/w/p"}, "aggregate": {"path": "/w/a", "fromat": "delta"}}},
     "outputs.aggregate.fromat"),
    ({"outputs": {"per_request": {"path": "/w/p"}, "report_dir": 3}}, "outputs.report_dir"),
    ({"guardrails": {"offline": [{"nam": "x"}]}}, "guardrails"),
]


@pytest.mark.parametrize("section, key", SECTION_TYPOS, ids=[k for _, k in SECTION_TYPOS])
def test_a_typo_in_any_section_fails_when_the_yaml_is_loaded(tmp_path, section, key):
    """Every section is parsed when the YAML is loaded: a typo in one the command does not use
    (``compare:`` under ``score``) fails at once, naming the dotted key -- not later, nor never."""
    document = {"version": 2, "inputs": {"candidates": "c"}, **section}
    with pytest.raises(ContractError) as refused:
        JobConfig.from_dict(document)
    assert str(refused.value).startswith(key), str(refused.value)


def test_a_typo_in_an_unused_section_stops_score_before_spark_starts(tmp_path):
    """The console script's ``score`` with a typo in ``compare:``: exit status 2 and the dotted key,
    from the YAML alone (no Spark session: it answers in well under a JVM's start)."""
    config = tmp_path / "job.yaml"
    config.write_text(textwrap.dedent("""
        version: 2
        inputs: {candidates: missing}
        outputs: {per_request: {path: out}}
        compare: {baseline: a, candidate: b, tie_tolerence: 0.1}
        """), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "ndcg_spark.cli", "score", "--config", str(config), "--run-id", "r1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "compare.tie_tolerence: is not a known field" in done.stderr
