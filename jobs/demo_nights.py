"""``bash dev.sh demo``'s two earlier nights, so that the trend has something to show.

Before the demo runs the main job (``conf/local.yaml``) for today's UTC date, this publishes two
earlier nights of the same sample into the same warehouse (each skipped when it is already
published):

- *today − 2*: scored under an older contract (``gain: linear``): the trend breaks at the next
  night and names the field that changed;
- *today − 1*: today's contract over a copy of the sample with more no-answer traffic (16 % of
  the requests have no positive grade instead of 10 %, ``ndcg-spark sample --no-positive-share``):
  today's night is flagged because the empty-ideal share moved, not because the ranking did.

Each night's job is ``conf/local.yaml`` with that one change (wiring only: the run is
:func:`ndcg_spark.job.run.run_job`, as for every command).

    python jobs/demo_nights.py [--config conf/local.yaml]
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
from pathlib import Path

import yaml

from ndcg_spark.job.config import JobConfig
from ndcg_spark.job.publish import published_runs
from ndcg_spark.job.run import run_job
from ndcg_spark.job.session import build_session
from ndcg_spark.sample.generate import write_sample

NO_ANSWER_SAMPLE = "data/sample-noanswer"
NO_ANSWER_SHARE = 0.16


def nights(today: dt.date) -> list[tuple[str, str, dict]]:
    """``(run id, what differs, the change to the YAML)`` of the two earlier nights."""
    return [
        ((today - dt.timedelta(days=2)).isoformat(), "older contract: gain linear", {"contract": {"gain": "linear"}}),
        ((today - dt.timedelta(days=1)).isoformat(), f"{NO_ANSWER_SHARE:.0%} no-answer requests", {"inputs": {
            "candidates": {"path": f"{NO_ANSWER_SAMPLE}/candidates"},
            "judgments": {"path": f"{NO_ANSWER_SAMPLE}/judgments"}}}),
    ]


def _changed(document: dict, change: dict) -> dict:
    out = copy.deepcopy(document)
    for section, values in change.items():
        out[section] = {**(out.get(section) or {}), **values}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/local.yaml")
    config_file = Path(parser.parse_args().config)
    document = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    base = config_file.resolve().parent.parent
    main_job = JobConfig.from_dict(document, base=base, source_file=str(config_file))
    spark = build_session(master=main_job.spark.master, app_name="ndcg-spark demo nights",
                          warehouse_dir=main_job.spark.warehouse_dir,
                          shuffle_partitions=main_job.spark.shuffle_partitions, conf=dict(main_job.spark.conf))
    published = {r.run_id for r in published_runs(spark, main_job.run_status()).collect()}
    for run_id, what, change in nights(dt.datetime.now(dt.timezone.utc).date()):
        if run_id in published:
            print(f"demo night {run_id} ({what}): already published")
            continue
        if "inputs" in change and not (base / NO_ANSWER_SAMPLE / "candidates").is_dir():
            write_sample(spark, base / NO_ANSWER_SAMPLE, no_positive_share=NO_ANSWER_SHARE)
        config = JobConfig.from_dict(_changed(document, change), base=base, source_file=f"{config_file} ({what})")
        outcome = run_job(spark, config, "run", run_id)
        print(f"demo night {run_id} ({what}): published; report {outcome.report.path if outcome.report else '-'}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
