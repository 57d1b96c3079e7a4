"""Every example of README.md and docs/*.md runs, and every documented table matches the code.

What each fenced block of a page is, and how it is checked:

``python``   doctests, one namespace per page (a page's examples build on each other), against the
             suite's ``spark`` fixture; ``...`` matches anything, whitespace is normalized. On a page
             with console examples they run after those, in the same checkout (its working folder).
``console``  ``$ ndcg-spark …`` and ``$ python -m …`` commands, run in-process, in order, in a
             temporary copy of the checkout (``conf/`` as shipped; relative paths on the command line
             point into the copy). The lines after a command are its expected output: ``…`` matches
             anything and the copy's path reads ``<checkout>``. Output with a line ``<prog>: failed.``
             (after the steps' progress lines, if any) must come with exit status 2, anything else with 0.
``sql``      run statement by statement after the console examples, against the tables they wrote
             (``'warehouse/…'`` paths point into the copy); a query must return rows.
``yaml``     loaded onto ``conf/local.yaml`` and parsed by the job config and the section's spec.
``sh``       ``bash dev.sh <command> …`` lines: the command exists in dev.sh, ``-m`` markers are
             registered, named test files exist (these are what CI and developers run, not run here).
``text``     not executed: transcripts recorded elsewhere and cluster command lines (the page says so).

Also: docs/tables.md's column tables are the ones generated from the tables' declarations
(``ndcg_spark.config.schemas``), the code's constant named above each lists the declared columns,
and a small run writes the declared types; docs/validation.md's rule table is the one generated
from the rule catalogue (``python tests/test_docs.py`` rewrites both).
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import re
import shlex
import shutil
import statistics
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

try:
    from tests.oracle import score_sample_folder
except ImportError:  # pragma: no cover - run from inside tests/
    from oracle import score_sample_folder  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: the console examples run in this order (operations.md writes the sample the others use)
RUN_ORDER = sorted(PAGES, key=lambda p: (p.name != "operations.md", str(p)))
LANGUAGES = {"python", "console", "sql", "yaml", "sh", "text"}
FENCE = re.compile(r"^```(\S*)\s*$")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: the spark.sql settings a command may set on the shared session (from a job YAML's spark: section)
SESSION_SETTINGS = ("spark.sql.shuffle.partitions",)


@dataclass
class Block:
    page: Path
    language: str
    line: int  # 1-based line of the first line inside the fence
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path, language: str | None = None) -> list[Block]:
    """The fenced blocks of ``page`` (optionally of one language), with their line numbers."""
    found: list[Block] = []
    current: Block | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        fence = FENCE.match(line)
        if current is None and fence:
            current = Block(page, fence.group(1), number + 1, [])
        elif current is not None and line.startswith("```"):
            found.append(current)
            current = None
        elif current is not None:
            current.lines.append(line)
    assert current is None, f"{page.name}: a code fence opened at line {current.line - 1} is never closed"
    return [b for b in found if language is None or b.language == language]


def _ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


# ----------------------------------------------------------------------------- every fence is known


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_code_block_says_how_it_is_checked(page):
    unknown = [f"{b.where()}: ```{b.language}" for b in blocks(page) if b.language not in LANGUAGES]
    assert not unknown, f"fence languages must be one of {sorted(LANGUAGES)}: {unknown}"


# ---------------------------------------------------------------------------------- python: doctests


def _page_doctest(page: Path, globs: dict) -> doctest.DocTest:
    """One doctest of every python block of ``page``; other lines blanked so line numbers stay true."""
    lines = page.read_text(encoding="utf-8").splitlines()
    keep = [""] * len(lines)
    for block in blocks(page, "python"):
        assert any(line.startswith(">>> ") for line in block.lines), f"{block.where()}: a python block with no >>> example"
        for offset, line in enumerate(block.lines):
            keep[block.line - 1 + offset] = line
    return doctest.DocTestParser().get_doctest("\n".join(keep) + "\n", globs, page.name, str(page), 0)


PYTHON_PAGES = [p for p in PAGES if blocks(p, "python")]


# a page with console examples runs its python examples after them, in the same checkout (e2e)
PYTHON_CASES = [pytest.param(p, marks=pytest.mark.e2e) if blocks(p, "console") else p for p in PYTHON_PAGES]


@pytest.mark.parametrize("page", PYTHON_CASES, ids=_ids(PYTHON_PAGES))
def test_python_examples_run(spark, page, request, monkeypatch):
    if blocks(page, "console"):  # a page's shell examples after its commands, in the same checkout
        root, _ = request.getfixturevalue("checkout")
        monkeypatch.chdir(root)
    test = _page_doctest(page, {"spark": spark})
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} example(s) of {page.name} failed:\n{report.getvalue()}"


# ------------------------------------------------------------------------------ console: the commands


@dataclass
class Command:
    block: Block
    line: int
    argv: list[str]
    expected: list[str] = field(default_factory=list)
    status: int | None = None
    output: str = ""

    @property
    def expected_status(self) -> int:
        # a failure may come after the progress lines of the steps it started
        return 2 if any(re.match(r"^\S+ \S+: failed\.$", line) for line in self.expected) else 0

    def where(self) -> str:
        return f"{self.block.page.relative_to(ROOT)}:{self.line}: $ {shlex.join(self.argv)}"


def commands(block: Block) -> list[Command]:
    parsed: list[Command] = []
    pending = ""
    for offset, line in enumerate(block.lines):
        if pending or line.startswith("$ "):
            text = pending + (line[2:] if not pending else line)
            if text.endswith("\\"):
                pending = text[:-1] + " "
                continue
            pending = ""
            parsed.append(Command(block, block.line + offset, shlex.split(text, comments=True)))
        else:
            assert parsed, f"{block.where()}: console output before any $ command"
            parsed[-1].expected.append(line)
    return parsed


def _in_checkout(argv: list[str], root: Path) -> list[str]:
    """Relative paths of the command line (``conf/local.yaml``, ``data/sample``) point into the copy."""
    return [str(root / a) if "/" in a and not a.startswith(("-", "/")) and "://" not in a else a for a in argv]


def _run(argv: list[str], root: Path, spark) -> tuple[int, str]:
    if argv[0] == "ndcg-spark":
        from ndcg_spark.cli import main

        entry, args = main, argv[1:]
    elif argv[:2] == ["python", "-m"]:
        entry, args = importlib.import_module(argv[2]).main, argv[3:]
    else:
        raise AssertionError(f"console examples run `ndcg-spark …` or `python -m …`, not {argv[0]!r}")
    saved = {key: spark.conf.get(key) for key in SESSION_SETTINGS}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = entry(_in_checkout(args, root))
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
    return status, out.getvalue().replace(str(root), "<checkout>")


@pytest.fixture(scope="module")
def checkout(spark, tmp_path_factory):
    """A temporary checkout (``conf/`` as shipped) in which every console example has run, in order."""
    root = tmp_path_factory.mktemp("checkout").resolve()
    shutil.copytree(ROOT / "conf", root / "conf")
    ran: list[Command] = []
    from ndcg_spark.publishing import steps

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setattr(steps, "PROGRESS_EVERY", 1e9)  # a "running for" line depends on the machine's speed
        for page in RUN_ORDER:
            for block in blocks(page, "console"):
                for command in commands(block):
                    command.status, command.output = _run(command.argv, root, spark)
                    ran.append(command)
    return root, ran


@pytest.mark.e2e
def test_console_examples_run_as_shown(checkout):
    _, ran = checkout
    assert ran, "the docs should carry console examples"
    checker = doctest.OutputChecker()
    problems = []
    for command in ran:
        expected = "\n".join(command.expected).replace("…", "...") + "\n"
        if command.status != command.expected_status:
            problems.append(f"{command.where()}\n  exit status {command.status}, expected {command.expected_status}")
        if not checker.check_output(expected, command.output, FLAGS):
            problems.append(f"{command.where()}\n--- expected\n{expected}--- got\n{command.output}")
    assert not problems, "\n\n".join(problems)


# The conf/local.yaml the checkout ships, as operations.md's commands ran it: every table of the night
# against the plain-Python oracle on the sample's rows (tests/test_conf_files.py has the other YAML)
SAMPLE_REQUESTS, NIGHT, EPS = 300, "2026-11-29", 1e-12


def _night(spark, warehouse: Path, name: str):
    from pyspark.sql import functions as F

    return spark.read.parquet(str(warehouse / name)).filter(F.col("run_id") == NIGHT)


def _printed(ran: list[Command], *argv: str) -> str:
    return next(c.output for c in ran if c.argv[: len(argv)] == list(argv))


@pytest.mark.e2e
def test_local_yaml_as_shipped_writes_what_the_oracle_computes(spark, checkout):
    from pyspark.sql import functions as F

    from ndcg_spark.config.job import JobConfig

    root, ran = checkout
    data, warehouse = root / "data" / "sample", root / "warehouse"
    shipped = JobConfig.from_yaml(root / "conf" / "local.yaml")
    assert (root / "conf" / "local.yaml").read_bytes() == LOCAL_YAML.read_bytes()
    fingerprint = shipped.contract.fingerprint
    run, compared = _printed(ran, "ndcg-spark", "run"), _printed(ran, "ndcg-spark", "compare", "--config", "conf/local.yaml")
    assert re.search(r"rows read = rows scored \+ rows quarantined: candidates ([0-9,]+) = \1 \+ 0", run), run
    assert f"contract {fingerprint}; ideal: contract; 1000 bootstrap replicates (95% intervals), " \
           "1000 sign flips over random groups (1024 per slice cell), seed 0" in compared
    report = root / "reports" / NIGHT / "report.html"
    assert "Comparison: hybrid (candidate) vs bm25 (baseline)" in report.read_text(encoding="utf-8")

    # the six metrics, each with its what-ifs
    panel = ("ndcg", "recall", "precision", "average_precision", "reciprocal_rank", "hit_rate")
    assert shipped.contract.metric_names == panel
    measures = (*panel, *(f"{m}_unjudged_{end}" for m in panel for end in ("low", "high")))
    oracle = score_sample_folder(spark, data, metrics=panel)
    per_request = _night(spark, warehouse, "per_request").collect()
    # hybrid times out on a few requests: no candidates, so no oracle row; a row here, flagged and set aside
    answered = [r for r in per_request if not r.no_results]
    timed_out = {(r.request_id, r.system, r.k) for r in per_request if r.no_results}
    assert len(per_request) == SAMPLE_REQUESTS * 2 * 4 and len(answered) == len(oracle) < len(per_request)
    assert {s for _, s, _ in timed_out} == {"hybrid"}
    assert all(r.ndcg is None and r.n_candidates == 0 for r in per_request if r.no_results)
    for r in answered:
        want = oracle[(r.request_id, f"{r.system}|{r.pool_version}", r.k)]
        assert r.ndcg == pytest.approx(want["ndcg"], abs=EPS) and r.empty_ideal == want["empty_ideal"]
        assert r.n_relevant == want["n_relevant"]
        for metric in panel[1:]:
            assert r[metric] == pytest.approx(want[metric], abs=EPS), (metric, r.request_id, r.system, r.k)
        assert r.n_unjudged_in_top_k == want["n_unjudged_in_top_k"] and r.contract_fingerprint == fingerprint

    dims = shipped.aggregate_spec().slices
    attributes = spark.read.parquet(str(data / "attributes"))
    cells = 1 + sum(attributes.select(d).distinct().count() for d in dims)
    aggregates = _night(spark, warehouse, "aggregate")
    assert aggregates.count() == 2 * 4 * cells * len(measures)
    assert {r.metric for r in aggregates.select("metric").distinct().collect()} == set(measures)
    for r in aggregates.filter(F.col("slice_dimension") == "overall").filter(F.col("metric").isin(*panel)).collect():
        values = [v[r.metric] for (_, s, k), v in oracle.items() if s == f"{r.system}|{r.pool_version}" and k == r.k]
        eligible = [v for v in values if v is not None]
        assert r.macro == pytest.approx(statistics.fmean(eligible), abs=EPS)
        assert (r.n_eligible, r.n_requests, r.min_eligible, r.ci_level) == (len(eligible), SAMPLE_REQUESTS, 30, 0.95)
        assert r.n_no_results == SAMPLE_REQUESTS - len(values)
    assert _night(spark, warehouse, "audit").count() == 2 * 4 * len(dims) * len(measures)
    assert _night(spark, warehouse, "run_metadata").first().contract_fingerprint == fingerprint
    comparison = _night(spark, warehouse, "comparison")
    assert comparison.count() == 4 * cells * len(measures)
    row = comparison.filter("slice_dimension = 'overall' AND k = 10 AND metric = 'ndcg'").first()
    b = {rid: v for (rid, s, k), v in oracle.items() if s.startswith("bm25|") and k == 10}
    h = {rid: v for (rid, s, k), v in oracle.items() if s.startswith("hybrid|") and k == 10}
    paired = [rid for rid in b if b[rid]["ndcg"] is not None and rid in h and h[rid]["ndcg"] is not None]
    assert row.n_candidate_no_results == len(b) - len(h) > 0
    assert (row.n_paired, row.bootstrap_replicates, row.permutations) == (len(paired), 1000, 1000)
    assert row.delta_macro == pytest.approx(statistics.fmean(h[r]["ndcg"] - b[r]["ndcg"] for r in paired), abs=EPS)


# ---------------------------------------------------------------------------------------------- sql


def _statements(block: Block, root: Path) -> list[str]:
    text = block.text.replace("'warehouse/", f"'{root}/warehouse/")
    return [s.strip() for s in text.split(";") if s.strip()]


@pytest.fixture(scope="module")
def sql_results(spark, checkout):
    root, _ = checkout
    results = []
    views = []
    for page in PAGES:
        for block in blocks(page, "sql"):
            for statement in _statements(block, root):
                view = re.match(r"CREATE (?:OR REPLACE )?TEMPORARY VIEW (\w+)", statement, re.I)
                if view:
                    views.append(view.group(1))
                results.append((block, statement, spark.sql(statement).collect()))
    yield results
    for name in views:
        spark.catalog.dropTempView(name)


@pytest.mark.e2e
def test_sql_examples_run_on_a_written_run(sql_results):
    assert sql_results, "the docs should carry SQL examples"
    empty = [f"{block.where()}: {statement[:60]}…" for block, statement, rows in sql_results
             if statement.upper().startswith("SELECT") and not rows]
    assert not empty, f"queries that return no rows on the example run: {empty}"


@pytest.mark.e2e
def test_dashboard_sql_gives_the_aggregate_tables_overall_means(sql_results):
    by_query = {statement: rows for _, statement, rows in sql_results}
    dashboard = next(rows for statement, rows in by_query.items() if "avg(p.ndcg)" in statement)
    overall = next(rows for statement, rows in by_query.items() if "FROM aggregate a" in statement)
    means = {(r["system"], r["k"]): r["macro"] for r in overall}
    assert len(dashboard) == len(means) > 0
    for row in dashboard:
        assert row["macro_ndcg"] == pytest.approx(means[(row["system"], row["k"])], abs=1e-12)
        assert row["requests"] == SAMPLE_REQUESTS


# --------------------------------------------------------------------------------------------- yaml

LOCAL_YAML = ROOT / "conf" / "local.yaml"


def _job_config(section: dict):
    from ndcg_spark.config.job import JobConfig

    data = yaml.safe_load(LOCAL_YAML.read_text(encoding="utf-8"))
    for key, value in section.items():
        if key == "outputs":
            data["outputs"] = {**data["outputs"], **value}
        else:
            data[key] = value
    return JobConfig.from_dict(data, base=LOCAL_YAML.parent)


def _check_sections(config, section: dict) -> None:
    """Each section through the spec the job builds from it (errors name the bad field)."""
    if "validation" in section:
        config.validation()
    if "compare" in section:
        config.compare_spec()
    if "report" in section:
        config.report_spec()
    if "aggregate" in section:
        config.aggregate_spec()
    if "trend" in section:
        config.trend_spec()
    if "publishing" in section:
        config.publishing()


YAML_BLOCKS = [b for p in PAGES for b in blocks(p, "yaml")]


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.where() for b in YAML_BLOCKS])
def test_yaml_examples_are_valid_job_sections(block):
    section = yaml.safe_load(block.text)
    assert isinstance(section, dict) and section, f"{block.where()}: a YAML example is a mapping of job sections"
    _check_sections(_job_config(section), section)


# ----------------------------------------------------------------------------------- sh: dev.sh lines


def _markers() -> set[str]:
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    return {m.split(":")[0].strip() for m in ini.get("markers", [])}


SH_BLOCKS = [b for p in PAGES for b in blocks(p, "sh")]


@pytest.mark.parametrize("block", SH_BLOCKS, ids=[b.where() for b in SH_BLOCKS])
def test_shell_lines_name_real_commands_markers_and_files(block):
    dev = (ROOT / "dev.sh").read_text(encoding="utf-8")
    for line in filter(str.strip, block.lines):
        argv = shlex.split(line, comments=True)
        assert argv[:2] == ["bash", "dev.sh"], f"{block.where()}: {line!r} is not a dev.sh command"
        assert re.search(rf"^\s*{re.escape(argv[2])}\)", dev, re.M), f"dev.sh has no {argv[2]!r} command"
        for flag, value in zip(argv, argv[1:]):
            if flag == "-m":
                names = set(re.findall(r"[A-Za-z_]\w*", value)) - {"and", "or", "not"}
                assert names <= _markers(), f"{line!r}: marker(s) {names - _markers()} not registered in pyproject.toml"
        for arg in argv[3:]:
            if arg.startswith("tests/"):
                assert (ROOT / arg.split("::")[0]).exists(), f"{line!r}: no such test file"


def test_readme_keeps_the_two_commands_and_its_size():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [shlex.split(line, comments=True) for b in blocks(ROOT / "README.md", "sh") for line in b.lines]
    assert ["bash", "dev.sh", "demo"] in lines and ["bash", "dev.sh", "test"] in lines  # CI runs the second verbatim
    assert len(text.splitlines()) <= 250


def test_deploy_lists_the_formats_the_lane_runs_on():
    """docs/deploy.md's table of Delta and Iceberg releases is tests/lakehouse.py's, row for row."""
    from tests.lakehouse import COMBINATIONS

    page = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = page.split("## Delta Lake and Iceberg", 1)[1]
    rows = re.findall(r"^\| ([0-9.]+) \| `([^`]+)` \| `([^`]+)` \| yes \|$", section, re.M)
    assert rows == [(c.pyspark, c.delta, c.iceberg) for c in COMBINATIONS]
    dev = (ROOT / "dev.sh").read_text(encoding="utf-8")
    assert "versions=$(.venv/bin/python tests/lakehouse.py)" in dev  # the lane loops over that same table


def test_readme_layout_names_what_is_in_the_tree():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = text.split("## Where things are", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    listed = [("ndcg_spark/" if line.startswith("  ") else "") + line.split()[0] for line in layout.splitlines()]
    assert "ndcg_spark/scoring/" in listed
    assert not [p for p in listed if not (ROOT / p).exists()], "README's layout lists what is not in the tree"
    packages = {p.name + "/" for p in (ROOT / "ndcg_spark").iterdir() if (p / "__init__.py").exists()}
    assert packages <= {p.removeprefix("ndcg_spark/") for p in listed}, "a subpackage is missing from README's layout"


# ------------------------------------------------------------------------- names and paths the pages cite

CODE_NAME = re.compile(r"`(ndcg_spark(?:\.\w+)+)")
FILE_PATH = re.compile(r"`((?:ndcg_spark|tests|conf|jobs|benchmarks)/[\w/.-]*\w)`")


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_module_name_and_path_a_page_cites_exists(page):
    text = page.read_text(encoding="utf-8")
    stale = [name for name in sorted(set(CODE_NAME.findall(text))) if not _resolves(name)]
    stale += [path for path in sorted(set(FILE_PATH.findall(text))) if not (ROOT / path).exists()]
    assert not stale, f"{page.name} cites names or files that do not exist (renamed?): {stale}"


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    headings = [line.lstrip("#").strip() for line in page.read_text(encoding="utf-8").splitlines()
                if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_link_between_pages_lands_on_a_file_and_heading(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (anchor and anchor not in _anchors(linked)):
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


# ------------------------------------------------------------------------------- docs/tables.md


TABLES = ROOT / "docs" / "tables.md"
#: a generated column table of docs/tables.md: its opening marker (with the table's name), the table, its end
COLUMNS_BLOCK = re.compile(r"(<!-- BEGIN COLUMNS: (\w+)[^\n]*-->\n)(.*?)(<!-- END COLUMNS -->)", re.S)
#: the paragraph above a column table naming the code's constants: "Columns, in order: `…`, … `…`."
CODE_LISTS = re.compile(r"^Columns, in order: (.*?)\.$", re.S | re.M)


@dataclass
class DocumentedTable:
    name: str  # as declared (ndcg_spark.config.schemas.TABLES) and in its marker
    text: str  # the generated block as the page has it
    constants: list[str]  # dotted names of the code's column lists, from the paragraph above it


def documented_tables() -> list[DocumentedTable]:
    """Each generated column table of docs/tables.md, with the constants named in the paragraph above it."""
    page = TABLES.read_text(encoding="utf-8")
    tables, previous_end = [], 0
    for match in COLUMNS_BLOCK.finditer(page):
        above = CODE_LISTS.findall(page[previous_end:match.start()])
        constants = re.findall(r"`(ndcg_spark\.[\w.]+)`", above[-1]) if above else []
        tables.append(DocumentedTable(match.group(2), match.group(3), constants))
        previous_end = match.end()
    return tables


def generated_tables_page(page: str) -> str:
    """docs/tables.md with every column table as the declarations give it."""
    from ndcg_spark.config.schemas import TABLES as DECLARED

    return COLUMNS_BLOCK.sub(lambda m: m.group(1) + DECLARED[m.group(2)].markdown() + m.group(4), page)


def _under_default_metrics(name: str):
    """The declared table as the code's constant lists it: the per-request table and the pool summary
    under the default metrics (``[ndcg]``), the others as declared."""
    from ndcg_spark.config import schemas
    from ndcg_spark.measures import LEGACY_METRIC

    by_metrics = {"per_request": schemas.per_request_schema, "pool_summary": schemas.pool_summary_schema}
    return by_metrics[name]((LEGACY_METRIC,)) if name in by_metrics else schemas.TABLES[name]


def test_tables_page_is_generated_from_the_declarations():
    from ndcg_spark.config.schemas import TABLES as DECLARED

    tables = documented_tables()
    assert [t.name for t in tables] == list(DECLARED), "docs/tables.md: a COLUMNS block per declared table, in order"
    behind = [t.name for t in tables if t.text != DECLARED[t.name].markdown()]
    assert not behind, f"docs/tables.md is behind the declarations of {behind}: run `python tests/test_docs.py`"


def _column_names(dotted: str) -> list[str]:
    module, _, name = dotted.rpartition(".")
    value = getattr(importlib.import_module(module), name)
    if isinstance(value, str):  # a DDL string: "run_id string, status string, …"
        return [part.split()[0] for part in value.split(",")]
    if hasattr(value, "fieldNames"):
        return list(value.fieldNames())
    return list(value)


def test_every_documented_table_lists_the_codes_columns_in_order():
    """The constants named above each table are the code's lists of the declared columns, in order."""
    tables = documented_tables()
    assert len(tables) == 14, [t.name for t in tables]
    for table in tables:
        assert table.constants, f"docs/tables.md, {table.name}: name the code's column list above the table"
        code = [c for dotted in table.constants for c in _column_names(dotted)]
        declared = list(_under_default_metrics(table.name).names)
        assert code == declared, f"docs/tables.md, {table.name}: {table.constants} list {code}, declared {declared}"


def test_declared_column_types_are_the_spark_types_they_name():
    """Each declared type is what Spark prints for the type it builds (no session needed)."""
    from ndcg_spark.config.schemas import TABLES as DECLARED

    for table in DECLARED.values():
        built = [f.dataType.simpleString() for f in table.struct_type().fields]
        assert built == [c.type for c in table.columns], table.name


def _written(spark, root: Path, name: str):
    """The table a small run wrote (the pool summary and the quarantine computed from the sample), and
    its declaration: the per-request table's under the metrics it holds, the pool summary's under its contract's."""
    import ndcg_spark
    from ndcg_spark.config import schemas
    from ndcg_spark.config.per_request import metrics_in

    if name == "pool_summary":
        sample, contract = root / "data" / "sample", ndcg_spark.Contract()
        df = ndcg_spark.pool_summary(spark.read.parquet(str(sample / "candidates")),
                                     spark.read.parquet(str(sample / "judgments")), contract)
        return df, schemas.pool_summary_schema(contract.metric_names)
    if name == "quarantine":
        dirty = spark.createDataFrame([(None, "a", 1, 1.0)], "request_id string, doc_id string, position int, grade double")
        spec = ndcg_spark.ValidationSpec(default="quarantine", max_quarantined_share=1.0)
        return ndcg_spark.validate_inputs(dirty, None, ndcg_spark.Contract(), spec).quarantine, schemas.QUARANTINE
    df = spark.read.parquet(str(root / "warehouse" / name))
    return df, schemas.per_request_schema(metrics_in(df.columns)) if name == "per_request" else schemas.TABLES[name]


@pytest.mark.e2e
def test_documented_column_types_are_the_written_tables(spark, checkout):
    """Every declared column is written with its declared type, and every written column is declared
    (but the per-request table's slice columns)."""
    from ndcg_spark.config.schemas import TABLES as DECLARED

    root, _ = checkout
    problems = []
    for name in DECLARED:
        df, declared = _written(spark, root, name)
        written = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        for column in declared.columns:
            if written.get(column.name) != column.type:
                problems.append(f"{name}: {column.name} declared {column.type}, written {written.get(column.name)}")
        if declared.slices_at is None:
            problems += [f"{name}: {c} written, not declared" for c in written if c not in declared.names]
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- docs/validation.md

VALIDATION = ROOT / "docs" / "validation.md"
RULES_BLOCK = re.compile(r"(<!-- BEGIN RULES:[^\n]*-->\n)(.*?)(<!-- END RULES -->)", re.S)


def rule_table() -> str:
    """The rule catalogue as the markdown table of docs/validation.md."""
    from ndcg_spark.config.validation_spec import RULES

    rows = ["| rule | checked on | inputs | a row breaks it when | handling |", "|---|---|---|---|---|"]
    for rule in RULES:
        handling = "`error` or `quarantine`" if rule.quarantinable else "always `error`"
        rows.append(f"| `{rule.name}` | {rule.scope} | {', '.join(rule.inputs) or '—'} | {rule.description} | {handling} |")
    return "\n".join(rows) + "\n"


def check_table() -> str:
    """The rules past input validation as the markdown table of docs/validation.md."""
    from ndcg_spark.config.validation_spec import CHECKS

    rows = ["| rule | checked in | broken when |", "|---|---|---|"]
    rows += [f"| `{c.name}` | {c.where} | {c.description} |" for c in CHECKS]
    return "\n".join(rows) + "\n"


CHECKS_BLOCK = re.compile(r"(<!-- BEGIN CHECKS:[^\n]*-->\n)(.*?)(<!-- END CHECKS -->)", re.S)


def test_rule_catalogue_is_generated_from_the_code():
    text = VALIDATION.read_text(encoding="utf-8")
    match = RULES_BLOCK.search(text)
    assert match, "docs/validation.md: the BEGIN RULES / END RULES markers are missing"
    assert match.group(2) == rule_table(), "docs/validation.md is behind the rules: run `.venv/bin/python tests/test_docs.py`"
    checks = CHECKS_BLOCK.search(text)
    assert checks, "docs/validation.md: the BEGIN CHECKS / END CHECKS markers are missing"
    assert checks.group(2) == check_table(), "docs/validation.md is behind the checks: run `.venv/bin/python tests/test_docs.py`"


#: a rule named in a message or docstring: ``(rule: name)``, ``rule ``name````, or a rule handed
#: to the helper that words stage 2's messages
NAMED_RULE = re.compile(r"(?<!\w)rule:? `{0,2}([a-z]+(?:_[a-z]+)+)|bad_\w+, \"([a-z]+(?:_[a-z]+)+)\"")


def test_every_rule_a_message_names_is_in_the_catalogue():
    """A rule name a user reads in a message is one docs/validation.md lists (the validation rules,
    the guardrails' outcome rules, or the checks past validation)."""
    from ndcg_spark.config.guardrail_spec import OUTCOME_RULES
    from ndcg_spark.config.validation_spec import CHECKS, RULE_NAMES

    known = {*RULE_NAMES, *OUTCOME_RULES, *(c.name for c in CHECKS)}
    named = {}
    for path in sorted((ROOT / "ndcg_spark").rglob("*.py")):
        for match in NAMED_RULE.finditer(path.read_text(encoding="utf-8")):
            named.setdefault(match.group(1) or match.group(2), path.relative_to(ROOT))
    assert {"weight_missing", "duplicate_request", "metric_out_of_range", "exact_sum_overflow"} <= set(named)
    unknown = {name: str(where) for name, where in named.items() if name not in known}
    assert not unknown, f"rules named in messages but not catalogued: {unknown}"


if __name__ == "__main__":  # rewrite the generated rule table of docs/validation.md and column tables of docs/tables.md
    text = VALIDATION.read_text(encoding="utf-8")
    text = RULES_BLOCK.sub(lambda m: m.group(1) + rule_table() + m.group(3), text)
    VALIDATION.write_text(CHECKS_BLOCK.sub(lambda m: m.group(1) + check_table() + m.group(3), text), encoding="utf-8")
    print(f"{VALIDATION.relative_to(ROOT)}: rule table rewritten", file=sys.stderr)
    TABLES.write_text(generated_tables_page(TABLES.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"{TABLES.relative_to(ROOT)}: column tables rewritten", file=sys.stderr)
