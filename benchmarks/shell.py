"""The questions an analyst asks in a warm pyspark shell, timed: best of N, with Spark jobs per call.

On the sample (``data/sample``, 20,000 requests; written here first if missing), in one
``local[2]`` session with a pyspark shell's settings (Spark's defaults: 200 shuffle partitions,
adaptive execution on), the inputs read and cached before anything is timed::

    .venv/bin/python benchmarks/shell.py --repeat 3
    .venv/bin/python benchmarks/shell.py --conf spark.python.sql.dataFrameDebugging.enabled=false
    .venv/bin/python benchmarks/shell.py --warm-up   # every case called once before any is timed

Each case is one call as a user types it, ending in an action (a mean, a collect, a count), timed
from the call to the result; the figure is the best of ``--repeat`` runs, and ``jobs`` is the
number of Spark jobs that call ran (its job group's, from the status tracker); ``JVM CPU`` the
CPU seconds the driver JVM (in ``local`` mode the executor too) spent on the best run, a figure
the machine's other load disturbs far less than wall time. The per-request
table the stage-2 cases read is stage 1's (four K, attributes), written to Parquet
(``data/shell-bench``) and read back cached, as a shell user reads it from the warehouse; the
pool summary likewise. Figures of the last run: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the sample's slice columns (conf/local.yaml's attributes.slices)
SLICES = ("equipment_rarity", "doc_age_bucket", "permission_group")


def _cases(data: dict, attributes) -> dict[str, Callable[[], object]]:
    from pyspark.sql import functions as F

    import ndcg_spark
    from ndcg_spark import AggregateSpec, Contract

    c, j, per_request = data["candidates"], data["judgments"], data["per_request"]
    k10 = Contract(k=[10])
    pools = data["pools"]
    return {
        "score_requests -> mean (K=10, checked)":
            lambda: ndcg_spark.score_requests(c, j, k10).agg(F.avg("ndcg")).first(),
        # new DataFrames over the cached rows each call: the input check runs every time
        "score_requests -> mean (K=10, checked, inputs not seen before)":
            lambda: ndcg_spark.score_requests(c.select("*"), j.select("*"), k10).agg(F.avg("ndcg")).first(),
        "score_requests -> mean (K=10, validate=False)":
            lambda: ndcg_spark.score_requests(c, j, k10, validate=False).agg(F.avg("ndcg")).first(),
        "score_requests, 4 K + attributes, collected":
            lambda: ndcg_spark.score_requests(c, j, Contract(), attributes=attributes).collect(),
        "aggregate, no interval":
            lambda: ndcg_spark.aggregate(per_request, AggregateSpec(replicates=0)).collect(),
        "aggregate, 1000 replicates":
            lambda: ndcg_spark.aggregate(per_request, AggregateSpec(replicates=1000)).collect(),
        "compare bm25 vs hybrid, 1000 replicates + 1000 sign flips":
            lambda: ndcg_spark.compare(per_request, pools, baseline="bm25", candidate="hybrid",
                                       replicates=1000, permutations=1000).collect(),
    }


def _load_inputs(spark, sample: Path) -> dict:
    from ndcg_spark import Attributes, Contract, pool_summary, score_requests

    data = {name: spark.read.parquet(str(sample / name)).cache() for name in ("candidates", "judgments", "attributes")}
    attributes = Attributes(table=data["attributes"], weight="weight", slices=SLICES)
    written = {
        "per_request": score_requests(data["candidates"], data["judgments"], Contract(), attributes=attributes),
        "pools": pool_summary(data["candidates"], data["judgments"], Contract()),
    }
    for name, df in written.items():
        path = str(sample.parent / "shell-bench" / name)
        df.write.mode("overwrite").parquet(path)
        data[name] = spark.read.parquet(path).cache()  # filled by main's row counts
    return data, attributes


def _jvm_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the JVM ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", default=str(ROOT / "data" / "sample"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="run the cases whose name contains this text")
    parser.add_argument("--warm-up", action="store_true",
                        help="call every case once before timing any (a session that has answered them before: "
                             "the JVM has compiled their code), instead of timing each case from its first call")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the session, as pyspark --conf takes it (repeatable)")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    # a pyspark shell started from the virtualenv runs its Python workers on the virtualenv's python
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[2]").appName("shell-bench")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for setting in args.conf:
        key, equals, value = setting.partition("=")
        if not key or not equals:
            parser.error(f"--conf takes KEY=VALUE, not {setting!r}")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    sample = Path(args.sample)
    if not (sample / "candidates").exists():
        from ndcg_spark.sample.generate import write_sample

        write_sample(spark, sample)
    data, attributes = _load_inputs(spark, sample)
    rows = {name: df.count() for name, df in data.items()}
    print(f"inputs (cached): {', '.join(f'{k} {v:,}' for k, v in rows.items())}; load {os.getloadavg()[0]:.1f}",
          flush=True)
    tracker = spark.sparkContext.statusTracker()
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    cases = {name: call for name, call in _cases(data, attributes).items() if not args.only or args.only in name}
    if args.warm_up:
        for call in cases.values():
            call()
        print(f"every case called once before timing (--warm-up); load {os.getloadavg()[0]:.1f}", flush=True)
    for name, call in cases.items():
        times, cpu, jobs = [], [], []
        for attempt in range(args.repeat):
            group = f"shell-{attempt}-{time.time()}"
            spark.sparkContext.setJobGroup(group, name)
            started, cpu_before = time.perf_counter(), _jvm_cpu_seconds(jvm)
            call()
            times.append(time.perf_counter() - started)
            cpu.append(_jvm_cpu_seconds(jvm) - cpu_before)
            jobs.append(len(tracker.getJobIdsForGroup(group)))
        best = times.index(min(times))
        print(f"{name:<58} best {times[best]:6.2f} s of {args.repeat} ({', '.join(f'{t:.2f}' for t in times)}); "
              f"JVM CPU {cpu[best]:.1f} s; {jobs[-1]} Spark jobs; load {os.getloadavg()[0]:.1f}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
