"""RankingEvaluator's number in one Spark session: what each contender costs once the JVM has
compiled its code, and what a fresh process adds to that.

    .venv/bin/python benchmarks/warm.py --rows 20000000 --repeat 4

``benchmarks/run.py`` times every contender in a fresh process, as issue 18 asks. Here the
contenders that compute one number, RankingEvaluator's binary NDCG@10 mean, run in turn in one
process, ``--repeat`` times: (f), (e), (h), (b) by default (``contenders.ONE_MEAN``).

A contender's first run pays for compiling its own code: Spark's generated classes, and the JVM's
JIT of them and of the planner paths that only its plans take. The first contender's first run
also pays for what they all share (the session's first read, aggregation and shuffle); the floor
(f) goes first so that this falls on the least work. The later runs are warm, and the best of them
is the contender's warm cost. For each contender the script prints its first run, its best warm
run and the difference between the two (the contender's own start), with the JVM's JIT seconds and
CPU seconds. Each of the three is also split into *planning* (the time no Spark job of the run was
running: the driver building, analysing and planning the queries and reading their results) +
*jobs* (the time one was, from the driver's status store). It then prints the warm ratios and
checks that the contenders' numbers agree.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import contenders
import run
import sparkui

WARM_RATIOS = (("e/b", "ndcg_spark_evaluator_number", "evaluator"), ("h/b", "lazy_table", "evaluator"),
               ("f/b", "floor", "evaluator"), ("e/f", "ndcg_spark_evaluator_number", "floor"))


def measure(spark, data: Path, names: list[str], repeat: int) -> dict:
    """Every contender of ``names`` ``repeat`` times in turn in ``spark``: per run its wall
    seconds, split into the time its Spark jobs ran and the rest (planning: the driver building,
    analysing and planning its queries), its JVM CPU seconds, the JIT's seconds and its number."""
    jvm = contenders.JvmPeak(spark)
    runs = {name: [] for name in names}
    for round_ in range(repeat):
        for name in names:
            spark.catalog.clearCache()  # no contender reads another's cache
            before, cpu0 = sparkui.jvm_counters(spark), jvm.cpu_s()
            t0, epoch0 = time.perf_counter(), time.time()
            mean = contenders.ONE_MEAN[name](spark, spark.read.parquet(str(data / "candidates")))
            wall, epoch1, cpu = time.perf_counter() - t0, time.time(), jvm.cpu_s() - cpu0
            jit = sparkui.jvm_counters(spark)["jit_s"] - before["jit_s"]
            jobs = sparkui.busy_seconds(sparkui.job_spans(spark, epoch0, epoch1), epoch0, epoch1)
            planning = max(wall - jobs, 0.0)
            runs[name].append({"work_s": wall, "jobs_s": jobs, "planning_s": planning, "cpu_s": cpu, "jit_s": jit,
                               "mean": mean})
            print(f"  {run.LABELS[name]:<34} round {round_ + 1}  {wall:6.2f} s  (planning {planning:5.2f} s, "
                  f"jobs {jobs:5.2f} s; JVM CPU {cpu:5.1f} s, JIT {jit:5.1f} s)", flush=True)
    return runs


def summary(runs: dict) -> dict:
    """Per contender its first run, best warm run and own start (first - best), each also split
    into planning and jobs; the warm ratios; the largest difference between the contenders' numbers."""
    out = {"contenders": {}, "ratios": {}}
    for name, rs in runs.items():
        first, best = rs[0], min(rs[1:], key=lambda r: r["work_s"])
        out["contenders"][name] = {
            "first_s": first["work_s"], "best_warm_s": best["work_s"], "own_start_s": first["work_s"] - best["work_s"],
            **{f"{when}_{part}_s": r[f"{part}_s"] for when, r in (("first", first), ("warm", best))
               for part in ("planning", "jobs")},
            **{f"own_start_{part}_s": first[f"{part}_s"] - best[f"{part}_s"] for part in ("planning", "jobs")},
            "first_jit_s": first["jit_s"], "first_cpu_s": first["cpu_s"],
        }
    best = {name: c["best_warm_s"] for name, c in out["contenders"].items()}
    for key, num, den in WARM_RATIOS:
        if num in best and den in best:
            out["ratios"][key] = best[num] / best[den]
    means = [r["mean"] for rs in runs.values() for r in rs]
    out["max_diff"] = max(means) - min(means)
    return out


def report(figures: dict, rows: int) -> str:
    lines = [f"{rows:,} rows, one session: first run (in the order run), best warm run, and their difference;",
             "each in seconds and as planning + jobs (the time outside every Spark job + the time one ran)",
             f"  {'contender':<34} {'first':>20} {'warm':>20} {'own start':>20} {'JIT (first)':>12}"]
    for name, c in figures["contenders"].items():
        cells = [f"{c[total]:5.2f} = {c[f'{when}_planning_s']:4.2f} + {c[f'{when}_jobs_s']:5.2f}"
                 for total, when in (("first_s", "first"), ("best_warm_s", "warm"), ("own_start_s", "own_start"))]
        lines.append(f"  {run.LABELS[name]:<34} {' '.join(f'{cell:>20}' for cell in cells)} {c['first_jit_s']:11.1f}s")
    lines.append("warm ratios: " + ", ".join(f"{k} {v:.2f}" for k, v in figures["ratios"].items()))
    lines.append(f"the contenders' numbers agree to {figures['max_diff']:.1e}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=4, help="runs of each contender (the first is its cold one)")
    parser.add_argument("--contenders", default=",".join(contenders.ONE_MEAN),
                        help="comma-separated, run in this order (the first pays the session's shared start)")
    parser.add_argument("--json", default=None, metavar="FILE", help="keep every run's figures")
    run.data_arguments(parser)
    args = parser.parse_args(argv)
    names = [n for n in args.contenders.split(",") if n]
    unknown = sorted(set(names) - set(contenders.ONE_MEAN))
    if unknown:
        parser.error(f"--contenders: {', '.join(unknown)} not one of {', '.join(contenders.ONE_MEAN)}")
    if args.repeat < 2:
        parser.error("--repeat: at least 2 (the first run of each is its cold one)")
    data = run.ensure_data(args, args.rows, 0)
    spark = contenders.session(args.shuffle_partitions, {})
    try:
        runs = measure(spark, data, names, args.repeat)
    finally:
        spark.stop()
    figures = summary(runs)
    print(report(figures, args.rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": args.rows, "order": names, "runs": runs, **figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
