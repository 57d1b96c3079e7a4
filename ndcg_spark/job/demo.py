"""The first night from the installed package: ``ndcg-spark init`` and ``ndcg-spark demo``.

``init [DIR]`` writes the embedded default, ``DIR/conf/local.yaml`` (the checkout's own file,
carried in the wheel as ``ndcg_spark/starter/``): a folder laid out like the checkout, where the
README's commands run as written. ``init --trec QRELS RUN`` writes ``DIR/conf/trec.yaml`` for a
TREC qrels and run file instead (the ``trec_eval`` preset, trec_eval's default cutoffs).

``demo`` runs the embedded default end to end in one Spark session: the sample data (written
when its folder has none), two earlier nights so that the trend has something to show, today's
run, and the comparison of hybrid against bm25:

- *today − 2*: scored under an older contract (``gain: linear``): the trend breaks at the next
  night and names the field that changed;
- *today − 1*: today's contract over a copy of the sample with more no-answer traffic (16 % of
  the requests have no positive grade instead of 10 %): today's night is flagged because the
  empty-ideal share moved, not because the ranking did.

Each earlier night's job is the YAML with that one change; each is skipped when it is already
published.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
from importlib import resources
from pathlib import Path
from typing import Any

from ndcg_spark.errors import ContractError

#: the earlier night's sample, beside the YAML's sample folder
NO_ANSWER_FOLDER = "sample-noanswer"
NO_ANSWER_SHARE = 0.16
#: the sample's size: the demo's, and ``--quick``'s (a look at every table and the report)
DEMO_REQUESTS, QUICK_REQUESTS = 20_000, 1_000
#: ``--quick``'s bootstrap replicates and sign flips (the YAML's: 1000): stage 2's cost barely
#: depends on the sample's size, and the intervals of 1,000 requests are wide anyway
QUICK_REPLICATES = 200
#: trec_eval's default cutoffs of ``ndcg_cut``, ``P`` and ``recall`` (its ``-m`` measures' defaults)
TREC_EVAL_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

TREC_TEMPLATE = """\
# A night over a TREC run and qrels file, scored as trec_eval scores them (the trec_eval preset:
# its gain, order, ties and denominators; docs/interop.md). Written by `ndcg-spark init --trec`.
# A relative path resolves against this file's folder.
version: 2

contract:
  preset: trec_eval
  k: [{ks}]   # trec_eval's default cutoffs
  # metrics: the preset's panel -- P_K, recall_K, map_cut_K, success_K, recip_rank, ndcg_cut_K
  # negative_grades: zero    # a qrels file with negative levels (trec_eval reads them as not relevant)

inputs:
  candidates: {{path: {run}, format: trec_run}}
  judgments: {{path: {qrels}, format: trec_qrels}}

outputs:
  per_request: {{path: ../warehouse/per_request}}
  aggregate: {{path: ../warehouse/aggregate}}       # stage 2 (means, intervals, audit) with every run
  audit: {{path: ../warehouse/audit}}
  run_metadata: {{path: ../warehouse/run_metadata}}
  report_dir: ../reports

spark:
  master: "local[*]"
  shuffle_partitions: 8
  warehouse_dir: ../warehouse
"""


def starter_text(name: str = "local.yaml") -> str:
    """The text of one of the shipped job YAMLs (``local.yaml``, ``compare_pools.yaml``)."""
    return resources.files("ndcg_spark").joinpath("starter", name).read_text(encoding="utf-8")


def init(folder: str | Path, *, trec: tuple[str, str] | None = None, force: bool = False) -> Path:
    """Write the starter YAML into ``folder/conf/`` and return its path: the embedded default
    (``local.yaml``), or with ``trec=(qrels, run)`` a TREC night (``trec.yaml``; files under
    ``folder`` named relative to the YAML, others by their absolute path). An existing file is kept
    unless ``force``."""
    conf = Path(folder).resolve() / "conf"
    if trec is None:
        target, text = conf / "local.yaml", starter_text("local.yaml")
    else:
        qrels, run = (Path(p).resolve() for p in trec)
        for flag, path in (("--trec QRELS", qrels), ("--trec … RUN", run)):
            if not path.is_file():
                raise ContractError(flag, f"no such file: {path}")
        target = conf / "trec.yaml"
        text = TREC_TEMPLATE.format(ks=", ".join(map(str, TREC_EVAL_CUTOFFS)),
                                    qrels=_as_written(qrels, conf), run=_as_written(run, conf))
    if target.exists() and not force:
        raise ContractError("init", f"{target} exists: keep it, or pass --force to write it again")
    conf.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def _as_written(path: Path, conf: Path) -> str:
    """A file under the folder ``init`` sets up, relative to the YAML's folder; any other, absolute."""
    return os.path.relpath(path, conf) if path.is_relative_to(conf.parent) else str(path)


def earlier_nights(today: dt.date, sample_folder: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """``(run id, what differs, the change to the YAML)`` of the two earlier nights; the no-answer
    night reads its own sample beside ``sample_folder`` (:data:`NO_ANSWER_FOLDER`)."""
    no_answer = sample_folder.parent / NO_ANSWER_FOLDER
    return [
        ((today - dt.timedelta(days=2)).isoformat(), "older contract: gain linear", {"contract": {"gain": "linear"}}),
        ((today - dt.timedelta(days=1)).isoformat(), f"{NO_ANSWER_SHARE:.0%} no-answer requests", {"inputs": {
            "candidates": {"path": str(no_answer / "candidates")},
            "judgments": {"path": str(no_answer / "judgments")}}}),
    ]


def quick(document: dict[str, Any]) -> dict[str, Any]:
    """The YAML document with :data:`QUICK_REPLICATES` bootstrap replicates and sign flips wherever
    it declares more (``aggregate``, ``compare``, ``guardrails``)."""
    out = copy.deepcopy(document)
    for section in ("aggregate", "compare", "guardrails"):
        body = out.get(section)
        if not isinstance(body, dict):
            continue
        bootstrap = body.get("bootstrap")
        if isinstance(bootstrap, dict) and bootstrap.get("replicates", QUICK_REPLICATES) > QUICK_REPLICATES:
            bootstrap["replicates"] = QUICK_REPLICATES
        if body.get("permutations", 0) > QUICK_REPLICATES:
            body["permutations"] = QUICK_REPLICATES
    return out


def changed(document: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """The YAML document with each section of ``change`` merged into its own."""
    out = copy.deepcopy(document)
    for section, values in change.items():
        out[section] = {**(out.get(section) or {}), **values}
    return out


#: the history's folder beside the YAML's sample folder (``ndcg-spark sample`` writes it there too)
HISTORY_FOLDER = "history"
#: the history's night: this many days before today (a small night of 25 rankers)
HISTORY_DAYS_BEFORE = 30
#: the history's comparisons and releases: fewer replicates and sign flips (each experiment's own
#: interval matters only as significant or not; 200 replicates settle that for a 300-request night)
HISTORY_REPLICATES = 200
#: the release outcomes each experiment is judged on (the sample's release guardrails)
_RELEASE_CHECKS = ("task_completion", "time_to_procedure", "latency_p95", "safety_incidents")


def history_night(today: dt.date) -> str:
    """The run id of the history's night."""
    return (today - dt.timedelta(days=HISTORY_DAYS_BEFORE)).isoformat()


def history_jobs(document: dict[str, Any], history_folder: Path,
                 rankers: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The YAML documents of the history: the night's scoring (the job's contract over the history's
    candidates and judgments, stage 1 only: no aggregate, no report), then one comparison per
    ranker against ``bm25`` with that ranker's release (release guardrails only, unsliced)."""
    from ndcg_spark.sample.history import BASELINE

    night = copy.deepcopy(document)
    night["inputs"] = {"candidates": {"path": str(history_folder / "candidates")},
                       "judgments": {"path": str(history_folder / "judgments")}}
    for section in ("attributes", "aggregate", "judging"):  # no attributes: nothing sliced, nothing aggregated
        night.pop(section, None)
    night["outputs"] = {k: v for k, v in (night.get("outputs") or {}).items()
                        if k in ("per_request", "run_status", "run_attempts", "comparison", "guardrails",
                                 "agreement", "agreement_history")}
    guardrails = copy.deepcopy(night.get("guardrails") or {})
    release = {**(guardrails.get("release") or {}), "slices": []}
    guardrails.pop("documents", None)
    guardrails["checks"] = [c for c in guardrails.get("checks") or [] if c.get("name") in _RELEASE_CHECKS]
    guardrails["bootstrap"] = {**(guardrails.get("bootstrap") or {}), "replicates": HISTORY_REPLICATES}
    compare = {**(night.get("compare") or {}), "baseline": BASELINE, "permutations": HISTORY_REPLICATES,
               "bootstrap": {**((night.get("compare") or {}).get("bootstrap") or {}),
                             "replicates": HISTORY_REPLICATES}}
    night.pop("compare", None)
    night.pop("guardrails", None)
    comparisons = []
    for ranker in rankers:
        job = copy.deepcopy(night)
        job["compare"] = {**compare, "candidate": ranker}
        job["guardrails"] = {**guardrails, "release": {
            **release, "outcomes": {"path": str(history_folder / "release_outcomes" / ranker)}}}
        comparisons.append(job)
    return night, comparisons
