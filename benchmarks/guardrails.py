"""The cost of the guardrail stage at the sample size, in a warm session (best of N per case).

Reads the sample (``data/sample``) and the published per-request table of ``conf/local.yaml``'s
last run (``bash dev.sh demo`` writes both), then times :func:`ndcg_spark.guardrail_table` with
the shipped guardrails: the release guardrails alone, the offline ones alone, and all of them,
and counts the Spark jobs each call runs::

    .venv/bin/python benchmarks/guardrails.py --run-id 2026-12-01 --repeat 2

Figures of the last run: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "conf" / "local.yaml"))
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--replicates", type=int, default=None, help="override guardrails.bootstrap.replicates")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from ndcg_spark import JobConfig, guardrail_table
    from ndcg_spark.storage.io import read_source

    config = JobConfig.from_yaml(args.config)
    spark = (SparkSession.builder.master(config.spark.master).appName("guardrails-bench")
             .config("spark.sql.shuffle.partitions", config.spark.shuffle_partitions).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spec = config.guardrail_spec()
    if args.replicates is not None:
        spec = dataclasses.replace(spec, replicates=args.replicates)
    outcomes_source, documents_source = config.guardrail_sources(spec)
    inputs = {
        "outcomes": read_source(spark, outcomes_source, "outcomes").cache(),
        "candidates": read_source(spark, config.candidates, "candidates").cache(),
        "judgments": read_source(spark, config.judgments, "judgments").cache(),
        "documents": read_source(spark, documents_source, "documents").cache(),
    }
    per_request = read_source(spark, config.per_request, "per_request").filter(F.col("run_id") == args.run_id).cache()
    rows = {name: df.count() for name, df in {**inputs, "per_request": per_request}.items()}
    print(f"inputs (cached): {', '.join(f'{k} {v:,}' for k, v in rows.items())}; load {os.getloadavg()[0]:.1f}")
    cases = {
        "release": dataclasses.replace(spec, checks=spec.release_checks),
        "offline": dataclasses.replace(spec, checks=spec.offline_checks, release=None),
        "all": spec,
    }
    tracker = spark.sparkContext.statusTracker()
    for name, case in cases.items():
        times, jobs = [], 0
        for _ in range(args.repeat):
            group = f"guardrails-{name}-{time.time()}"
            spark.sparkContext.setJobGroup(group, name)
            started = time.perf_counter()
            table = guardrail_table(per_request, case, config.compare_spec(), contract=config.contract, validate=False,
                                    **inputs)  # the inputs the demo's stage 1 validated
            times.append(time.perf_counter() - started)
            jobs = len(tracker.getJobIdsForGroup(group))
        print(f"{name:8} {len(case.checks)} guardrails, {table.count():3} rows, {case.replicates} replicates: "
              f"best {min(times):6.1f} s of {args.repeat} ({', '.join(f'{t:.1f}' for t in times)}), {jobs} Spark jobs")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
