"""What the README promises and no other test checked: each test names the README passage it holds
to, drives the job through the console script (``ndcg_spark.cli.main``) or the public functions
(``score_requests``, ``aggregate``, ``pool_summary``, ``compare``), and checks numbers against the
plain-Python oracle (``tests/oracle.py``).

Small hand-made data (tens of requests), one shared session, every table under ``tmp_path``.
"""

from __future__ import annotations

import datetime as dt
import html.parser
import itertools
import random
import re
import shutil
import statistics
from pathlib import Path

import pytest
import yaml
from pyspark.sql import functions as F

import ndcg_spark
from ndcg_spark import Contract
from ndcg_spark.cli import main

try:
    from tests.oracle import dcg_at_k, score_all
except ImportError:  # pragma: no cover - run from inside tests/
    from oracle import dcg_at_k, score_all  # type: ignore[no-redef]

EPS = 1e-12
CANDIDATES = "request_id string, doc_id string, system string, position int"
JUDGMENTS = "request_id string, doc_id string, grade double"


# ----------------------------------------------------------------------------------- data
def _requests(n_requests: int = 30, seed: int = 5) -> tuple[list[dict], list[dict]]:
    """Two systems (A, B) ranking the same 3-7 documents per request; about a fifth of the
    documents unjudged; every fifth request judged all 0 (an empty ideal)."""
    rng = random.Random(seed)
    cands, judgments = [], []
    for i in range(n_requests):
        rid = f"q{i:02d}"
        docs = [f"{rid}-d{j}" for j in range(rng.randint(3, 7))]
        for d in docs:
            if rng.random() < 0.8:
                grade = 0.0 if i % 5 == 0 else float(rng.choice([0, 0, 1, 2, 3]))
                judgments.append({"request_id": rid, "doc_id": d, "grade": grade})
        for system in ("A", "B"):
            for p, d in enumerate(rng.sample(docs, len(docs)), 1):
                cands.append({"request_id": rid, "doc_id": d, "system": system, "position": p})
    return cands, judgments


CANDS, JUDGS = _requests()
GRADES = {(j["request_id"], j["doc_id"]): j["grade"] for j in JUDGS}
REQUESTS = sorted({c["request_id"] for c in CANDS})


def _joined(cands: list[dict]) -> list[dict]:
    """The candidates with their grade (None: unjudged): one pre-joined table."""
    return [{**c, "grade": GRADES.get((c["request_id"], c["doc_id"]))} for c in cands]


def _frame(spark, rows: list[dict], schema: str):
    names = [part.split()[0] for part in schema.split(",")]
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], schema)


def _mean(values) -> float:
    return statistics.fmean(values)


def _oracle_rows(oracle: dict, system: str, k: int) -> dict[str, dict]:
    return {rid: v for (rid, s, kk), v in oracle.items() if s == system and kk == k}


# ----------------------------------------------------------------------------------- the CLI
def _job(root: Path, name: str, **sections) -> Path:
    """A job YAML under ``root/conf``; relative outputs resolve under ``root``."""
    path = root / "conf" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": 1, **sections, "spark": {"master": "local[2]", "shuffle_partitions": 2}}
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(args))
    shown = capsys.readouterr()
    return status, shown.out, shown.err


def _write(spark, rows: list[dict], schema: str, path: Path, fmt: str = "parquet") -> str:
    df = _frame(spark, rows, schema)
    if fmt == "csv":
        df.coalesce(1).write.option("header", True).csv(str(path))
    else:
        df.write.parquet(str(path))
    return str(path)


def _run_rows(spark, path: Path, run_id: str):
    df = spark.read.option("basePath", str(path)).parquet(str(path))
    return df.filter(F.col("run_id") == run_id)


def _status_rows(spark, path: Path) -> dict[str, str]:
    return {r.run_id: r.status for r in spark.read.parquet(str(path)).collect()}


# =================================================================== stage 2 and the contract
# README, "The run-metadata table": "Stage 2 resolves the YAML's contract to the fingerprint on the
# per-request rows; if neither resolution matches, the table was scored under another contract and
# the stage refuses rather than stamp a contract that did not produce the numbers."


@pytest.fixture(scope="module")
def scored(spark, tmp_path_factory):
    """Run ``r1`` scored by the console script under contract {k: [1, 3], order: position}."""
    root = tmp_path_factory.mktemp("stage2")
    inputs = {"candidates": {"path": _write(spark, CANDS, CANDIDATES, root / "candidates")},
              "judgments": {"path": _write(spark, JUDGS, JUDGMENTS, root / "judgments")}}
    outputs = {"per_request": {"path": "out/per_request"}, "aggregate": {"path": "out/aggregate"},
               "run_metadata": {"path": "out/run_metadata"}}

    def config(name: str, contract: dict) -> Path:
        return _job(root, name, contract=contract, inputs=inputs, outputs=outputs,
                    aggregate={"bootstrap": {"replicates": 0}})

    scored_under = {"k": [1, 3], "order": "position"}
    assert main(["score", "--config", str(config("scored", scored_under)), "--run-id", "r1"]) == 0
    return root, config, scored_under


def test_stage_2_refuses_a_yaml_whose_contract_did_not_score_the_run(spark, scored, capsys):
    root, config, scored_under = scored
    other = {**scored_under, "gain": "linear"}
    status, _, err = _cli(capsys, "aggregate", "--config", str(config("other", other)), "--run-id", "r1")
    stamped, yours = Contract(**scored_under).fingerprint, Contract(**other).fingerprint
    assert stamped != yours
    assert status == 2, err
    assert (f"contract: the per-request table was scored under contract {stamped}, but this YAML's contract "
            f"resolves to {yours}") in err
    assert "Traceback" not in err
    assert not (root / "out" / "aggregate").exists() and not (root / "out" / "run_metadata").exists()
    assert _status_rows(spark, root / "out" / "run_status") == {"r1": "complete"}  # refused before unpublishing

    # the YAML it was scored with aggregates it, and the means are the oracle's
    status, _, err = _cli(capsys, "aggregate", "--config", str(config("scored", scored_under)), "--run-id", "r1")
    assert status == 0, err
    oracle = score_all(CANDS, JUDGS, k=[1, 3])
    rows = _run_rows(spark, root / "out" / "aggregate", "r1").filter("slice_dimension = 'overall'").collect()
    assert len(rows) == 4
    for r in rows:
        values = _oracle_rows(oracle, r.system, r.k).values()
        eligible = [v["ndcg"] for v in values if v["ndcg"] is not None]
        assert (r.n_eligible, r.n_empty_ideal, r.n_requests) == (len(eligible), len(values) - len(eligible), 30)
        assert r.macro_ndcg == pytest.approx(_mean(eligible), abs=EPS)
        assert r.contract_fingerprint == stamped
    meta = _run_rows(spark, root / "out" / "run_metadata", "r1").first()
    assert meta.contract_fingerprint == stamped


def test_stage_2_refuses_a_run_that_mixes_contracts(spark, scored, capsys):
    root, config, scored_under = scored
    cdf, jdf = _frame(spark, CANDS, CANDIDATES), _frame(spark, JUDGS, JUDGMENTS)
    linear = {**scored_under, "gain": "linear"}
    score = ndcg_spark.score_requests
    mixed = score(cdf.filter("system = 'A'"), jdf, Contract(**scored_under), run_id="mixed").unionByName(
        score(cdf.filter("system = 'B'"), jdf, Contract(**linear), run_id="mixed")
    )
    mixed.write.mode("append").partitionBy("run_id").parquet(str(root / "out" / "per_request"))
    status, _, err = _cli(capsys, "aggregate", "--config", str(config("scored", scored_under)), "--run-id", "mixed")
    prints = ", ".join(sorted([Contract(**scored_under).fingerprint, Contract(**linear).fingerprint]))
    assert status == 2, err
    assert f"stage 2: run 'mixed' mixes contracts {prints} in the per-request table" in err
    aggregates = root / "out" / "aggregate"
    assert not aggregates.exists() or _run_rows(spark, aggregates, "mixed").count() == 0


# =================================================================== comparing two rankers
def _overall(out, k: int):
    rows = out.filter((F.col("slice_dimension") == "overall") & (F.col("k") == k)).collect()
    assert len(rows) == 1, rows
    return rows[0]


# README, "When two NDCG numbers are comparable": "A request neither can score (empty ideal) is
# n_neither; under empty_ideal: zero it is left out of the pairs too, since a 0 − 0 tie says nothing."
def test_compare_under_empty_ideal_zero_leaves_empty_requests_out_of_the_pairs(spark):
    cdf, jdf = _frame(spark, CANDS, CANDIDATES), _frame(spark, JUDGS, JUDGMENTS)
    contract = Contract(k=[3], empty_ideal="zero")
    per_request = ndcg_spark.score_requests(cdf, jdf, contract).cache()
    empty_rows = per_request.filter("empty_ideal").select("ndcg").distinct().collect()
    assert [r.ndcg for r in empty_rows] == [0.0]  # on the table as 0, not null
    pools = ndcg_spark.pool_summary(cdf, jdf, contract)
    zero = _overall(ndcg_spark.compare(per_request, pools, baseline="A", candidate="B",
                                       replicates=0, permutations=0, min_paired=0), 3)
    per_request.unpersist()
    oracle = score_all(CANDS, JUDGS, k=[3], empty_ideal="zero")
    a, b = _oracle_rows(oracle, "A", 3), _oracle_rows(oracle, "B", 3)
    empty = {rid for rid in REQUESTS if a[rid]["empty_ideal"]}
    assert empty == {rid for rid in REQUESTS if b[rid]["empty_ideal"]} and 0 < len(empty) < len(REQUESTS)
    deltas = [b[rid]["ndcg"] - a[rid]["ndcg"] for rid in REQUESTS if rid not in empty]
    assert (zero.n_requests, zero.n_paired, zero.n_neither) == (len(REQUESTS), len(deltas), len(empty))
    assert zero.ties == sum(abs(d) <= 1e-9 for d in deltas)  # no 0 - 0 tie of an empty request
    assert zero.wins + zero.ties + zero.losses == zero.n_paired
    assert zero.delta_macro == pytest.approx(_mean(deltas), abs=EPS)
    assert zero.baseline_ndcg_macro == pytest.approx(_mean(a[r]["ndcg"] for r in REQUESTS if r not in empty), abs=EPS)


# README: "Without a judgments table (one pre-joined input) the known judgments are the judged
# candidates of every system pooled together."
def test_compare_without_a_judgments_table_same_pool(spark):
    """One pre-joined table (the grade on the candidates): a reranker comparison, the oracle's numbers."""
    contract = Contract(k=[3, 5])
    rows = _joined(CANDS)
    joined = _frame(spark, rows, CANDIDATES + ", grade double")
    out = ndcg_spark.compare(ndcg_spark.score_requests(joined, contract=contract),
                             ndcg_spark.pool_summary(joined, None, contract),
                             baseline="A", candidate="B", replicates=0, permutations=0)
    oracle = score_all(rows, None, k=[3, 5])
    positives = {rid: sum(g > 0 for (r, _), g in GRADES.items() if r == rid) for rid in REQUESTS}
    for k in (3, 5):
        row = _overall(out, k)
        a, b = _oracle_rows(oracle, "A", k), _oracle_rows(oracle, "B", k)
        paired = [rid for rid in REQUESTS if a[rid]["ndcg"] is not None]
        with_positive = [rid for rid in REQUESTS if positives[rid] > 0]
        assert row.comparison_kind == "reranker" and not row.pools_differ
        assert (row.n_paired, row.n_neither, row.n_pool_recall_requests) == (
            len(paired), len(REQUESTS) - len(paired), len(with_positive))
        assert row.delta_macro == pytest.approx(_mean(b[r]["ndcg"] - a[r]["ndcg"] for r in paired), abs=EPS)
        # both show every judged document: the known positives are all in each pool
        assert (row.baseline_pool_recall_macro, row.candidate_pool_recall_macro) == (1.0, 1.0)


def test_compare_without_a_judgments_table_end_to_end_pools_the_judged_candidates(spark):
    """A ranks documents 0-5 of each request (pool p1), B documents 2-7 (pool p2): the shared
    ideal and the known positives are those of every judged candidate of either system."""
    rng = random.Random(17)
    rows = []
    for i in range(24):
        rid = f"e{i:02d}"
        grades = [None if rng.random() < 0.15 else float(rng.choice([0, 1, 2, 3])) for _ in range(8)]
        for system, pool, docs in (("A", "p1", range(0, 6)), ("B", "p2", range(2, 8))):
            for p, j in enumerate(rng.sample(list(docs), 6), 1):
                rows.append({"request_id": rid, "doc_id": f"d{j}", "system": system, "position": p,
                             "grade": grades[j], "pool_version": pool})
    joined = _frame(spark, rows, CANDIDATES + ", grade double, pool_version string")
    contract = Contract(k=[5])
    refused = pytest.raises(ndcg_spark.PoolMismatchError, match="their pool versions differ \\(p1 vs p2\\)")
    per_request = ndcg_spark.score_requests(joined, contract=contract)
    pools = ndcg_spark.pool_summary(joined, None, contract)
    with refused:
        ndcg_spark.compare(per_request, pools, baseline="A", candidate="B", replicates=0, permutations=0)
    row = _overall(ndcg_spark.compare(per_request, pools, baseline="A", candidate="B", kind="end_to_end",
                                      replicates=0, permutations=0), 5)

    oracle = score_all(rows, None, k=[5], ideal_from="judgments")  # known judgments: pooled over systems
    a, b = _oracle_rows(oracle, "A", 5), _oracle_rows(oracle, "B", 5)
    paired = [rid for rid in a if a[rid]["ndcg"] is not None]
    known = {}
    for r in rows:
        if r["grade"] is not None:
            known.setdefault(r["request_id"], {})[r["doc_id"]] = r["grade"]
    positives = {rid: sum(g > 0 for g in docs.values()) for rid, docs in known.items()}
    with_positive = [rid for rid in a if positives.get(rid, 0) > 0]
    assert row.comparison_kind == "end_to_end" and row.ndcg_ideal == "judgments" and row.pools_differ
    assert row.n_paired == len(paired) and row.n_pool_recall_requests == len(with_positive) > 0
    assert row.baseline_ndcg_macro == pytest.approx(_mean(a[r]["ndcg"] for r in paired), abs=EPS)
    assert row.candidate_ndcg_macro == pytest.approx(_mean(b[r]["ndcg"] for r in paired), abs=EPS)
    assert row.baseline_pool_recall_macro == pytest.approx(
        _mean(a[r]["n_positive"] / positives[r] for r in with_positive), abs=EPS)
    assert row.candidate_pool_recall_macro == pytest.approx(
        _mean(b[r]["n_positive"] / positives[r] for r in with_positive), abs=EPS)
    # the shared ideal is not A's own: stage 1 (ideal from A's pool) gives other numbers
    own = _oracle_rows(score_all(rows, None, k=[5]), "A", 5)
    assert any(own[r]["ndcg"] != pytest.approx(a[r]["ndcg"]) for r in paired if own[r]["ndcg"] is not None)


# README, the compare: section: "baseline, candidate — a system name, or {system: …, pool_version: …}
# when the run scored a system over several pools".
@pytest.mark.e2e
def test_compare_sides_given_as_system_and_pool_version(spark, tmp_path, capsys):
    rng = random.Random(23)
    rows, judgments = [], []
    for i in range(20):
        rid = f"s{i:02d}"
        for j in range(8):
            if rng.random() < 0.9:
                judgments.append({"request_id": rid, "doc_id": f"d{j}", "grade": float(rng.choice([0, 1, 2, 3]))})
        for system, pool, docs in (("bm25", "p1", range(0, 6)), ("bm25", "p2", range(2, 8)),
                                   ("hybrid", "p2", range(2, 8))):
            for p, j in enumerate(rng.sample(list(docs), 6), 1):
                rows.append({"request_id": rid, "doc_id": f"d{j}", "system": system, "position": p,
                             "pool_version": pool})
    inputs = {"candidates": {"path": _write(spark, rows, CANDIDATES + ", pool_version string", tmp_path / "c")},
              "judgments": {"path": _write(spark, judgments, JUDGMENTS, tmp_path / "j")}}
    outputs = {"per_request": {"path": "out/per_request"}, "comparison": {"path": "out/comparison"}}
    boot = {"bootstrap": {"replicates": 0}, "permutations": 0}  # point estimates are what is checked

    def config(name: str, section: dict) -> str:
        return str(_job(tmp_path, name, contract={"k": [3]}, inputs=inputs, outputs=outputs,
                        compare={**section, **boot}))

    assert _cli(capsys, "score", "--config", config("plain", {"baseline": "bm25", "candidate": "hybrid"}),
                "--run-id", "n1")[0] == 0
    status, _, err = _cli(capsys, "compare", "--config", config("plain", {"baseline": "bm25", "candidate": "hybrid"}),
                          "--run-id", "n1")
    assert status == 2
    assert ("compare.baseline: bm25 was scored over several pool versions (p1, p2); pick one with "
            "compare.baseline: {system: bm25, pool_version: …}") in err

    old_new = {"baseline": {"system": "bm25", "pool_version": "p1"},
               "candidate": {"system": "bm25", "pool_version": "p2"}, "kind": "end_to_end"}
    status, out, err = _cli(capsys, "compare", "--config", config("old_new", old_new), "--run-id", "n1")
    assert status == 0, err
    assert "END-TO-END" in out

    table = _run_rows(spark, tmp_path / "out" / "comparison", "n1").filter("slice_dimension = 'overall'")
    got = {(r.baseline, r.baseline_pool_version, r.candidate, r.candidate_pool_version): r for r in table.collect()}
    assert set(got) == {("bm25", "p1", "bm25", "p2")}
    # the oracle sees each (system, pool) as its own ranker
    labelled = [{**r, "system": f"{r['system']}@{r['pool_version']}"} for r in rows]
    shared_ideal = score_all(labelled, judgments, k=[3], ideal_from="judgments")
    b, c = _oracle_rows(shared_ideal, "bm25@p1", 3), _oracle_rows(shared_ideal, "bm25@p2", 3)
    paired = [rid for rid in b if b[rid]["ndcg"] is not None]
    e2e = got[("bm25", "p1", "bm25", "p2")]
    assert e2e.comparison_kind == "end_to_end" and e2e.n_paired == len(paired)
    assert e2e.delta_macro == pytest.approx(_mean(c[r]["ndcg"] - b[r]["ndcg"] for r in paired), abs=EPS)


# README, "Never half a run": readers filter on complete runs; compare "compares published runs only".
@pytest.mark.e2e
def test_compare_refuses_a_run_that_is_not_published(spark, tmp_path, capsys):
    inputs = {"candidates": {"path": _write(spark, CANDS, CANDIDATES, tmp_path / "c")},
              "judgments": {"path": _write(spark, JUDGS, JUDGMENTS, tmp_path / "j")}}
    config = str(_job(tmp_path, "job", contract={"k": [3]}, inputs=inputs,
                      outputs={"per_request": {"path": "out/per_request"}, "comparison": {"path": "out/comparison"}},
                      compare={"baseline": "A", "candidate": "B", "bootstrap": {"replicates": 0},
                               "permutations": 0}))
    assert _cli(capsys, "score", "--config", config, "--run-id", "n1")[0] == 0
    # n2's driver died before its status write: its rows are on disk, its status says 'running'
    shutil.copytree(tmp_path / "out" / "per_request" / "run_id=n1", tmp_path / "out" / "per_request" / "run_id=n2")
    status_path = tmp_path / "out" / "run_status"  # the default: beside the per-request table
    crashed = spark.createDataFrame([("n2", "running", dt.datetime(2026, 11, 29, 3, 0), ndcg_spark.__version__)],
                                    "run_id string, status string, updated_at timestamp, code_version string")
    crashed.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("run_id").parquet(
        str(status_path))
    assert _status_rows(spark, status_path) == {"n1": "complete", "n2": "running"}
    assert _run_rows(spark, tmp_path / "out" / "per_request", "n2").count() == 30 * 2

    for run_id in ("n2", "never-scored"):
        status, _, err = _cli(capsys, "compare", "--config", config, "--run-id", run_id)
        assert status == 2, err
        assert f"compare: run '{run_id}' has no published rows in the per-request table" in err
    assert not (tmp_path / "out" / "comparison").exists()
    status, _, err = _cli(capsys, "compare", "--config", config, "--run-id", "n1")
    assert status == 0, err
    compared = _run_rows(spark, tmp_path / "out" / "comparison", "n1").filter("slice_dimension = 'overall'").first()
    assert (compared.baseline, compared.candidate, compared.n_requests) == ("A", "B", 30)


# =================================================================== the report
class _Page(html.parser.HTMLParser):
    """Every tag's attributes and the CSP meta of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _svg_bars(page: str, title: str) -> list[tuple[str, int]]:
    """The bars (label, count) of the first SVG chart titled ``title``."""
    distributions = page[page.index("id='distributions'"):]
    for svg in re.findall(r"<svg\b.*?</svg>", distributions, flags=re.S):
        if re.search(rf">{re.escape(title)}</text>", svg):
            return [(label, int(n.replace(",", ""))) for label, n in
                    re.findall(r"<title>([^<]*): ([0-9,]+) requests</title>", svg)]
    raise AssertionError(f"no chart titled {title!r}")


# README, "The report": "one self-contained file — inline CSS and SVG, no script, no web font, no CDN,
# nothing fetched at view time (its Content-Security-Policy forbids it)"; "report: bins (NDCG
# histogram buckets, default 10), k (the cutoff the slice charts are drawn at, default the largest)".
@pytest.mark.e2e
def test_report_content_security_policy_and_its_bins_and_k_options(spark, sample_run, tmp_path, capsys):
    job = yaml.safe_load(sample_run.config.read_text(encoding="utf-8"))
    job["outputs"] = {name: ({"path": str(sample_run.outputs[name])} if name != "report_dir"
                             else str(tmp_path / "reports")) for name in job["outputs"]}
    config = tmp_path / "conf" / "report.yaml"
    config.parent.mkdir()
    pages = {}
    for name, options in (("default", None), ("options", {"bins": 4, "k": 3})):
        job["outputs"]["report_dir"] = str(tmp_path / name)
        config.write_text(yaml.safe_dump({**job, **({"report": options} if options else {})}), encoding="utf-8")
        status, _, err = _cli(capsys, "report", "--config", str(config), "--run-id", sample_run.run_id)
        assert status == 0, err
        pages[name] = (tmp_path / name / sample_run.run_id / "report.html").read_text(encoding="utf-8")
    page, default = pages["options"], pages["default"]

    parser = _Page()
    parser.feed(page)
    csp = [a.get("content") for tag, a in parser.tags
           if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy"]
    assert csp == ["default-src 'none'; style-src 'unsafe-inline'"]
    assert page.index("Content-Security-Policy") < page.index("<body")
    assert not [t for t, _ in parser.tags if t in ("script", "link", "iframe", "img", "object", "embed")]
    fetched = [(t, n, v) for t, a in parser.tags for n, v in a.items() if n in ("src", "srcset", "action", "data")]
    elsewhere = [v for _, a in parser.tags for n, v in a.items()
                 if n == "href" and re.match(r"^([a-z][a-z0-9+.-]*:|//)", v or "", flags=re.I)]
    assert fetched == [] and elsewhere == []
    assert "url(" not in page and "@import" not in page

    # bins: 4 buckets of the per-request NDCG, counted as the per-request table says
    per_request = sample_run.read(spark, "per_request").filter("system = 'bm25' AND k = 10").select("ndcg").collect()
    buckets = [0] * 4
    for r in per_request:
        if r.ndcg is not None:
            buckets[min(int(r.ndcg * 4), 3)] += 1
    n_none = sum(r.ndcg is None for r in per_request)
    bars = _svg_bars(page, "bm25 @10")
    assert [n for _, n in bars[:4]] == buckets and sum(buckets) > 0
    assert bars[4:] == ([("none", n_none)] if n_none else [])
    # k: the slice charts are drawn at K = 3; the default page draws them at the largest K (10)
    slices = page[page.index("id='slices'"):page.index("id='distributions'")]
    assert "macro NDCG@3" in slices and "macro NDCG@10" not in slices
    default_slices = default[default.index("id='slices'"):default.index("id='distributions'")]
    assert "macro NDCG@10" in default_slices and "macro NDCG@3" not in default_slices
    assert len(_svg_bars(default, "bm25 @10")) == 10 + bool(n_none)  # 10 buckets (+ the requests without NDCG)

    for section, message in (({"bins": 1}, "report.bins: must be an integer from 2 to 100, got 1"),
                             ({"k": 0}, "report.k: must be an integer >= 1")):
        config.write_text(yaml.safe_dump({**job, "report": section}), encoding="utf-8")
        status, _, err = _cli(capsys, "report", "--config", str(config), "--run-id", sample_run.run_id)
        assert status == 2 and message in err, err


# =================================================================== inputs and outputs
# README, the attributes key: "omit it [path/table] to take the columns from the candidates".
@pytest.mark.e2e
def test_attributes_taken_from_the_candidates(spark, tmp_path, capsys):
    rng = random.Random(29)
    weight = {rid: rng.choice([0.5, 1.0, 4.0]) for rid in REQUESTS}
    region = {rid: rng.choice(["north", "south"]) for rid in REQUESTS}
    rows = [{**c, "weight": weight[c["request_id"]], "region": region[c["request_id"]]} for c in CANDS]
    schema = CANDIDATES + ", weight double, region string"
    config = _job(tmp_path, "job", contract={"k": [3]},
                  inputs={"candidates": {"path": _write(spark, rows, schema, tmp_path / "c")},
                          "judgments": {"path": _write(spark, JUDGS, JUDGMENTS, tmp_path / "j")}},
                  attributes={"weight": "weight", "slices": ["region"]},
                  outputs={"per_request": {"path": "out/per_request"}, "aggregate": {"path": "out/aggregate"},
                           "run_metadata": {"path": "out/run_metadata"}},
                  aggregate={"min_eligible": 1, "bootstrap": {"replicates": 0}})
    status, _, err = _cli(capsys, "run", "--config", str(config), "--run-id", "n1")
    assert status == 0, err
    per_request = _run_rows(spark, tmp_path / "out" / "per_request", "n1")
    carried = {(r.request_id, r.weight, r.region) for r in per_request.collect()}
    assert carried == {(rid, weight[rid], region[rid]) for rid in REQUESTS}

    oracle = score_all(CANDS, JUDGS, k=[3])
    aggregates = _run_rows(spark, tmp_path / "out" / "aggregate", "n1").filter("system = 'B'").collect()
    by_slice = {(r.slice_dimension, r.slice_value): r for r in aggregates}
    assert set(by_slice) == {("overall", "all"), ("region", "north"), ("region", "south")}
    b = _oracle_rows(oracle, "B", 3)
    for (dim, value), r in by_slice.items():
        members = [rid for rid in REQUESTS if dim == "overall" or region[rid] == value]
        eligible = [rid for rid in members if b[rid]["ndcg"] is not None]
        assert r.n_requests == len(members) and r.weight_all == pytest.approx(sum(weight[x] for x in members))
        assert r.weighted_ndcg == pytest.approx(
            sum(weight[x] * b[x]["ndcg"] for x in eligible) / sum(weight[x] for x in eligible), abs=EPS)


# README, inputs.candidates: "{path: …, format: parquet|csv} or {table: db.name}".
@pytest.mark.e2e
def test_inputs_as_a_csv_folder_and_as_a_catalog_table(spark, tmp_path, capsys):
    database = "docs_inputs"
    assert not spark.catalog.databaseExists(database)
    spark.sql(f"CREATE DATABASE {database}")
    _frame(spark, JUDGS, JUDGMENTS).write.saveAsTable(f"{database}.judgments")
    config = _job(tmp_path, "job", contract={"k": [1, 3]},
                  inputs={"candidates": {"path": _write(spark, CANDS, CANDIDATES, tmp_path / "c_csv", "csv"),
                                         "format": "csv"},
                          "judgments": {"table": f"{database}.judgments"}},
                  outputs={"per_request": {"path": "out/per_request"}})
    assert list((tmp_path / "c_csv").glob("*.csv")), "the candidates are a CSV folder"
    status, out, err = _cli(capsys, "score", "--config", str(config), "--run-id", "n1")
    assert status == 0, err
    assert f"candidates {len(CANDS):,} = {len(CANDS):,} + 0; judgments {len(JUDGS):,} = {len(JUDGS):,} + 0" in out
    oracle = score_all(CANDS, JUDGS, k=[1, 3])
    got = {(r.request_id, r.system, r.k): r for r in _run_rows(spark, tmp_path / "out" / "per_request", "n1").collect()}
    assert set(got) == set(oracle)
    for key, want in oracle.items():
        assert got[key].empty_ideal == want["empty_ideal"], key
        assert got[key].ndcg == pytest.approx(want["ndcg"], abs=EPS), key
        assert got[key].n_judged == want["n_judged"], key


# README, "Bad input": "The quarantine table (outputs.quarantine, {path: …} or {table: …}) is
# partitioned by run_id; a run replaces its own partition, and a re-run with nothing to quarantine
# clears it." README, "Catalog tables": "give outputs as {table: db.name} (the database is created
# on first use)"; run_status "default: <database of per_request>.run_status".
@pytest.fixture
def catalog_job(spark, tmp_path):
    """``config(database, candidates, quarantine=False)``: a job writing ``{table: <database>.per_request}``
    (and, with ``quarantine``, ``doc_repeated`` rows to ``{table: <database>.quarantine}``)."""
    judgments = _write(spark, JUDGS, JUDGMENTS, tmp_path / "judgments")
    made = itertools.count()

    def config(database: str, candidates: list[dict], quarantine: bool = False) -> str:
        n = next(made)
        outputs = {"per_request": {"table": f"{database}.per_request"}}
        sections = {}
        if quarantine:
            outputs["quarantine"] = {"table": f"{database}.quarantine"}
            sections["validation"] = {"rules": {"doc_repeated": "quarantine"}, "max_quarantined_share": 0.5}
        return str(_job(tmp_path, f"job{n}", contract={"k": [3]},
                        inputs={"candidates": {"path": _write(spark, candidates, CANDIDATES, tmp_path / f"c{n}")},
                                "judgments": {"path": judgments}},
                        outputs=outputs, **sections))
    return config


@pytest.mark.e2e
def test_quarantine_as_a_catalog_table_replaced_per_run_and_cleared_by_a_clean_rerun(spark, catalog_job, capsys):
    database = "docs_quarantine"
    repeated = [{"request_id": "q01", "doc_id": "q01-d0", "system": "A", "position": 90 + i} for i in range(2)]
    dirty = catalog_job(database, CANDS + repeated, quarantine=True)
    status, out, err = _cli(capsys, "score", "--config", dirty, "--run-id", "n1")
    assert status == 0, err
    n_q01_a = sum(c["request_id"] == "q01" and c["system"] == "A" for c in CANDS) + 2
    assert f"quarantine: {n_q01_a} rows -> table {database}.quarantine" in out
    table = spark.read.table(f"{database}.quarantine").filter("run_id = 'n1'")
    rows = table.select("input", "rule", "row_rules", "system", "request_id", "doc_id").collect()
    assert len(rows) == n_q01_a
    assert {(r.input, r.rule, r.system, r.request_id) for r in rows} == {("candidates", "doc_repeated", "A", "q01")}
    assert sorted(r.doc_id for r in rows if r.row_rules) == ["q01-d0"] * 3  # the repeated rows themselves
    per_request = spark.read.table(f"{database}.per_request").filter("run_id = 'n1'")
    assert {r.system for r in per_request.filter("request_id = 'q01'").select("system").collect()} == {"B"}

    assert _cli(capsys, "score", "--config", dirty, "--run-id", "n2")[0] == 0
    clean = catalog_job(database, CANDS, quarantine=True)
    status, _, err = _cli(capsys, "score", "--config", clean, "--run-id", "n1")
    assert status == 0, err
    left = spark.read.table(f"{database}.quarantine").groupBy("run_id").count().collect()
    left = {r.run_id: r["count"] for r in left}
    assert left == {"n2": n_q01_a}  # n1 cleared, n2 untouched


@pytest.mark.e2e
def test_default_run_status_is_the_per_request_tables_database_run_status(spark, catalog_job, capsys):
    database = "docs_status"
    assert not spark.catalog.databaseExists(database)
    status, out, err = _cli(capsys, "score", "--config", catalog_job(database, CANDS), "--run-id", "n1")
    assert status == 0, err
    assert spark.catalog.databaseExists(database)  # created on first use
    assert re.search(rf"run n1: published by attempt [0-9a-f]{{12}} \(table {database}.run_status says complete\)", out)
    rows = spark.read.table(f"{database}.run_status").collect()
    assert [(r.run_id, r.status, r.code_version) for r in rows] == [("n1", "complete", ndcg_spark.__version__)]
    assert spark.read.table(f"{database}.per_request").count() == len(REQUESTS) * 2


# =================================================================== the sample command
# README: "ndcg-spark sample --out data/sample-pools --dense-pool adds a third ranker, dense, that
# retrieved its own candidates (pool pool-2026-11-28-dense)".
@pytest.mark.e2e
def test_sample_command_and_its_dense_pool(spark, tmp_path, capsys):
    status, out, err = _cli(capsys, "sample", "--out", str(tmp_path / "plain"), "--requests", "40", "--seed", "3")
    assert status == 0, err
    assert "sample data (40 requests, seed 3) written" in out
    status, out, err = _cli(capsys, "sample", "--out", str(tmp_path / "pools"), "--requests", "40", "--seed", "3",
                            "--dense-pool")
    assert status == 0, err
    for name in ("candidates", "judgments", "attributes"):
        assert str(tmp_path / "pools" / name) in out

    def read(folder: str, name: str):
        return spark.read.parquet(str(tmp_path / folder / name))

    plain, pools = read("plain", "candidates"), read("pools", "candidates")
    assert read("plain", "attributes").count() == 40
    pool_of = {(r.system, r.pool_version) for r in pools.select("system", "pool_version").distinct().collect()}
    assert pool_of == {("bm25", "pool-2026-11-28"), ("hybrid", "pool-2026-11-28"), ("dense", "pool-2026-11-28-dense")}
    assert {r.system for r in plain.select("system").distinct().collect()} == {"bm25", "hybrid"}
    shared = pools.filter("system != 'dense'")
    assert shared.exceptAll(plain).count() == 0 and plain.exceptAll(shared).count() == 0
    for name in ("judgments", "attributes"):
        assert read("pools", name).exceptAll(read("plain", name)).count() == 0
    dense = pools.filter("system = 'dense'").select("request_id", "doc_id")
    bm25 = plain.filter("system = 'bm25'").select("request_id", "doc_id")
    assert dense.select("request_id").distinct().count() == 40
    assert dense.exceptAll(bm25).count() > 0 and bm25.exceptAll(dense).count() > 0  # a pool of its own


# ----------------------------------------------------------- the job configuration's small promises


def test_the_default_run_id_is_todays_utc_date():
    """README: "`run_id` … else today's UTC date, so re-running a night replaces that night"."""
    from ndcg_spark.config.job import default_run_id

    assert default_run_id(dt.date(2026, 11, 29)) == "2026-11-29"
    before = dt.datetime.now(dt.timezone.utc).date().isoformat()
    assert default_run_id() in {before, dt.datetime.now(dt.timezone.utc).date().isoformat()}


def test_debug_shows_the_trace_instead_of_the_paragraph(tmp_path, capsys):
    """README/docs: every deliberate failure is one paragraph and exit 2; ``--debug`` shows the trace."""
    from ndcg_spark.errors import ContractError

    missing = str(tmp_path / "nope.yaml")
    assert main(["score", "--config", missing]) == 2
    assert capsys.readouterr().err.startswith("ndcg-spark score: failed.\n--config: no such file")
    with pytest.raises(ContractError, match="no such file"):
        main(["score", "--config", missing, "--debug"])


def test_a_missing_weight_is_an_error_when_default_weight_is_null(spark):
    """README: "`default_weight` (weight of a request with none, default 1.0; `null` makes that an error)"."""
    from ndcg_spark.errors import InputError
    from ndcg_spark.scoring.attributes import Attributes

    cands = spark.createDataFrame([("q1", "a", 1), ("q2", "b", 1)], "request_id string, doc_id string, position int")
    judged = spark.createDataFrame([("q1", "a", 1.0), ("q2", "b", 2.0)], "request_id string, doc_id string, grade double")
    attrs = spark.createDataFrame([("q1", 3.0), ("q2", None)], "request_id string, weight double")
    strict = Attributes(table=attrs, weight="weight", default_weight=None)
    with pytest.raises(InputError, match=r"request 'q2' has no weight .*rule: weight_missing"):
        ndcg_spark.score_requests(cands, judged, Contract(k=[1]), attributes=strict).collect()
    lenient = Attributes(table=attrs, weight="weight", default_weight=0.5)
    weights = {r.request_id: r.weight for r in ndcg_spark.score_requests(cands, judged, Contract(k=[1]),
                                                                        attributes=lenient).collect()}
    assert weights == {"q1": 3.0, "q2": 0.5}


def test_run_metadata_defaults_beside_the_aggregate_and_a_bad_spark_conf_names_its_field(tmp_path, capsys):
    """README: "`ndcg-spark run` does stage 2 when `outputs.aggregate` is set; `run_metadata` defaults
    to the table beside it", and every config error names the dotted path of the bad field."""
    from ndcg_spark.config.job import JobConfig

    job = {"version": 2, "inputs": {"candidates": {"path": "c"}},
           "outputs": {"per_request": {"path": "w/per_request"}, "aggregate": {"path": "w/aggregate"}}}
    config = tmp_path / "conf" / "job.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump(job), encoding="utf-8")
    assert JobConfig.from_yaml(config).output("run_metadata").path == str(tmp_path / "conf" / "w" / "run_metadata")
    without = {**job, "outputs": {"per_request": {"path": "w/per_request"}}}
    config.write_text(yaml.safe_dump(without), encoding="utf-8")
    assert main(["aggregate", "--config", str(config), "--run-id", "r1"]) == 2
    assert "outputs.aggregate: is required (a path or a table) to write stage 2" in capsys.readouterr().err
    config.write_text(yaml.safe_dump(job | {"spark": {"conf": 3}}), encoding="utf-8")
    assert main(["score", "--config", str(config)]) == 2
    assert "spark.conf: must be a mapping, got int" in capsys.readouterr().err
