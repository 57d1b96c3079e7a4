"""The cost of a judging plan (``judge_next``) beside the scoring it builds on, in one warm session.

Two data sets, each read from Parquet (nothing cached between the cases):

* ``sample``: the demo's night (``data/sample``, written by ``bash dev.sh demo``) under
  conf/local.yaml's contract, attributes and ``judging:`` section;
* ``rows``: ``benchmarks/datagen.py``'s data at ``--rows`` (one pre-joined candidates table with a
  ``grade`` column, one system, grades 0..3, 15 % unjudged), the contract's K and scale the same.

For each, three cases, ``--repeat`` times in turn (the first round pays for compiling the code):

* ``score``: ``score_requests`` written to Spark's ``noop`` sink (what a plan needs first);
* ``plan | scored``: ``judge_next`` given that per-request table (the job's per-request rows at
  hand): the plan's own cost;
* ``plan``: ``judge_next`` scoring the inputs itself, as ``ndcg-spark judge-next`` does.

Each case prints its wall seconds, its Spark jobs and the records its jobs read from the input
files, as passes over the inputs (records read / the inputs' rows; a cached table's batches add a
few records, so a pass reads as a little over 1.0)::

    .venv/bin/python benchmarks/judging.py --rows 4000000 --repeat 2
    .venv/bin/python benchmarks/judging.py --data rows --rows 1000000 --repeat 1 --cases score "plan | scored"

Figures of the last run: docs/benchmarks.md ("What to judge next").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import run  # noqa: E402  (benchmarks/run.py: the data's options and generation)


def stage_input(spark) -> tuple[int, int]:
    """The last stage id so far and the input records every stage read so far (the driver's status store)."""
    context = spark.sparkContext._jsc.sc()
    context.listenerBus().waitUntilEmpty()
    gateway = spark.sparkContext._gateway
    # stageList(statuses, details, withSummaries, unsortedQuantiles, taskStatus): every stage, no task details
    stages = context.statusStore().stageList(None, False, False, gateway.new_array(gateway.jvm.double, 0),
                                             gateway.jvm.java.util.ArrayList())
    last, records = -1, 0
    for i in range(stages.size()):
        stage = stages.apply(i)
        last = max(last, stage.stageId())
        records += stage.inputRecords()
    return last, records


def timed(spark, work) -> dict:
    """``work()`` timed: wall seconds, Spark jobs run, input records read."""
    tracker = spark.sparkContext.statusTracker()
    group = f"judging-bench-{time.time_ns()}"
    spark.sparkContext.setJobGroup(group, group)
    _, before = stage_input(spark)
    started = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - started
    _, after = stage_input(spark)
    return {"s": seconds, "jobs": len(tracker.getJobIdsForGroup(group)), "records": after - before, "result": result}


def night(spark, args) -> dict:
    """The data set's inputs (lazy reads of Parquet), their row count, the contract, the spec and the attributes."""
    from ndcg_spark import Attributes, Contract, JobConfig, JudgingSpec
    from ndcg_spark.storage.io import read_source

    if args.data == "sample":
        config = JobConfig.from_yaml(args.config)
        read = lambda source: read_source(spark, source, "input")  # noqa: E731
        candidates, judgments = (lambda: read(config.candidates)), (lambda: read(config.judgments))
        attrs = config.attributes
        attributes = lambda: attrs.of(read(attrs.source))  # noqa: E731
        contract, spec = config.contract, config.judging_spec()
        rows = candidates().count() + judgments().count()
        where = f"the sample ({args.config})"
    else:
        data = run.ensure_data(args, args.rows, 0)
        candidates, judgments = (lambda: spark.read.parquet(str(data / "candidates"))), (lambda: None)
        attributes = lambda: Attributes(table=spark.read.parquet(str(data / "attributes")), weight="weight",  # noqa: E731
                                        default_weight=1.0, slices=("equipment_rarity",))
        contract, spec = Contract(k=[1, 3, 5, 10], max_grade=3), JudgingSpec()
        rows = candidates().count()
        where = f"datagen {data.name}"
    spec = spec.narrowed(budget=args.budget) if args.budget else spec
    return {"candidates": candidates, "judgments": judgments, "attributes": attributes, "contract": contract,
            "spec": spec, "rows": rows, "where": where}


def cases(spark, n: dict) -> dict:
    """The three cases' work, each reading the inputs afresh."""
    from ndcg_spark import judge_next, score_requests

    def scored():
        return score_requests(n["candidates"](), n["judgments"](), n["contract"], attributes=n["attributes"](),
                              validate=False)

    def score():
        scored().write.format("noop").mode("overwrite").save()

    def plan_given():
        per_request = scored().persist()
        per_request.count()
        _, before = stage_input(spark)
        started = time.perf_counter()
        plan = judge_next(n["candidates"](), n["judgments"](), n["contract"], n["spec"], attributes=n["attributes"](),
                          validate=False, per_request=per_request).collect()
        seconds = time.perf_counter() - started
        _, after = stage_input(spark)
        per_request.unpersist()
        return {"plan_s": seconds, "plan_records": after - before, "plan": plan}

    def plan():
        return judge_next(n["candidates"](), n["judgments"](), n["contract"], n["spec"], attributes=n["attributes"](),
                          validate=False).collect()

    return {"score": score, "plan | scored": plan_given, "plan": plan}


def settled(plan) -> str:
    """What the plan's first 100 / 500 / 1,000 documents (and all of them) settle, whatever the grades."""
    from ndcg_spark.report.text_judging import judging_summary

    return judging_summary([r.asDict(recursive=True) for r in plan])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("sample", "rows"), nargs="+", default=["sample", "rows"])
    parser.add_argument("--config", default=str(ROOT / "conf" / "local.yaml"), help="the sample's job YAML")
    parser.add_argument("--rows", type=int, default=4_000_000, help="datagen's candidate rows")
    parser.add_argument("--budget", type=int, default=None, help="documents (default: the YAML's, else 1000)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cases", nargs="+", choices=("score", "plan | scored", "plan"),
                        default=["score", "plan | scored", "plan"], help="the cases to run (default: all three)")
    run.data_arguments(parser)
    args = parser.parse_args(argv)

    from ndcg_spark.job.session import build_session

    spark = build_session(master="local[2]", app_name="ndcg-spark-bench-judging",
                          shuffle_partitions=args.shuffle_partitions)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for data in args.data:
            args.data = data
            n = night(spark, args)
            print(f"{n['where']}: {n['rows']:,} input rows; budget {n['spec'].budget:,}; load "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
            last_plan = None
            for round_ in range(args.repeat):
                for name, work in cases(spark, n).items():
                    if name not in args.cases:
                        continue
                    spark.catalog.clearCache()
                    t = timed(spark, work)
                    line = (f"  round {round_ + 1}  {name:<14} {t['s']:7.1f} s  {t['jobs']:3} Spark jobs  "
                            f"input passes {t['records'] / n['rows']:5.2f}")
                    if name == "plan | scored":
                        given = t["result"]
                        line += (f"  (the plan alone: {given['plan_s']:.1f} s, input passes "
                                 f"{given['plan_records'] / n['rows']:.2f})")
                        last_plan = given["plan"]
                    print(line, flush=True)
            if last_plan is not None:
                print(f"  {settled(last_plan)}", flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
