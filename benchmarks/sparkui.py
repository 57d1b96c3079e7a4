"""Where a contender's time went: its Spark jobs (the driver's status store) and the time each
operator took (Spark's UI, its REST API), read before the session stops, and the JVM's time
compiling code and collecting garbage. Used by ``benchmarks/contenders.py --profile FILE`` and
printed by ``benchmarks/breakdown.py``; ``benchmarks/warm.py`` splits its runs by the jobs' spans.

The operator times are Spark's SQL metrics: summed over the tasks (on 2 cores, about twice the wall
time they take), and a pipelined operator's time includes what it pulls from the operators before
it (a ``HashAggregate``'s "aggregation build" covers the expressions feeding it, a scan's decoding).
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

#: the SQL metrics shown per operator: its time metrics, and the rows it gave
_SHOWN = re.compile(r"time|duration|number of output rows")
_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def jvm_counters(spark) -> dict[str, float]:
    """The driver JVM's totals so far (in ``local`` mode the executor's too): seconds of JIT
    compilation and of garbage collection (``java.lang.management``), and whole-stage code classes
    compiled by Janino (Spark's ``CodegenMetrics``: a count, and their compile times' mean over its
    sample, so the seconds are approximate)."""
    jvm = spark.sparkContext._jvm
    management = jvm.java.lang.management.ManagementFactory
    gc_ms = sum(bean.getCollectionTime() for bean in management.getGarbageCollectorMXBeans())
    codegen = getattr(getattr(jvm.org.apache.spark.metrics.source, "CodegenMetrics$"), "MODULE$")
    compiles = codegen.METRIC_COMPILATION_TIME()
    return {
        "jit_s": management.getCompilationMXBean().getTotalCompilationTime() / 1000.0,
        "gc_s": gc_ms / 1000.0,
        "codegen_classes": float(compiles.getCount()),
        "codegen_s": compiles.getCount() * compiles.getSnapshot().getMean() / 1000.0,
    }


def jobs(spark) -> list[dict]:
    """Every finished job of ``spark``'s application: its id, name, tasks, and its submission and
    completion (epoch seconds), from the driver's status store (kept with the UI off too), once its
    listeners have caught up with the last job's end."""
    context = spark.sparkContext._jsc.sc()
    context.listenerBus().waitUntilEmpty()
    listed = context.statusStore().jobsList(None)
    out = []
    for i in range(listed.size()):
        job = listed.apply(i)
        if job.submissionTime().isEmpty() or job.completionTime().isEmpty():
            continue
        out.append({"id": job.jobId(), "name": job.name(), "tasks": job.numTasks(),
                    "submitted": job.submissionTime().get().getTime() / 1000.0,
                    "completed": job.completionTime().get().getTime() / 1000.0})
    return out


def job_spans(spark, started: float, ended: float) -> list[tuple[float, float]]:
    """The ``(submitted, completed)`` epoch seconds of the :func:`jobs` that ran between ``started``
    and ``ended`` (epoch seconds)."""
    return [(j["submitted"], j["completed"]) for j in jobs(spark)
            if j["completed"] >= started and j["submitted"] <= ended]


def busy_seconds(spans: list[tuple[float, float]], started: float, ended: float) -> float:
    """How long at least one of ``spans`` ran between ``started`` and ``ended``: their union, cut to
    that window. The rest of the window is the driver's alone (expressions built, plans analysed,
    optimised and planned, results read).

    >>> busy_seconds([(1.0, 3.0), (2.0, 4.0), (6.0, 7.0), (9.5, 12.0)], 0.0, 10.0)
    4.5
    >>> busy_seconds([], 0.0, 10.0)
    0.0
    """
    total, reached = 0.0, started
    for begin, end in sorted(spans):
        begin, end = max(begin, reached), min(end, ended)
        if end > begin:
            total += end - begin
            reached = end
    return total


def collect(spark, work_started: float, before: dict[str, float]) -> dict:
    """The profile of the work that started at ``work_started`` (epoch seconds) in ``spark``'s
    application, whose UI is on: jobs, SQL queries with their operators' metrics, and the JVM
    counters' growth since ``before`` (:func:`jvm_counters` at the work's start)."""
    base = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"
    after = jvm_counters(spark)
    run = [{**j, "submitted": j["submitted"] - work_started, "completed": j["completed"] - work_started}
           for j in jobs(spark)]
    queries = [
        {"id": q["id"], "description": q["description"], "duration_s": q["duration"] / 1000.0,
         "operators": [{"name": n["nodeName"], "metrics": {m["name"]: _total(m["value"]) for m in n.get("metrics", [])
                                                           if _SHOWN.search(m["name"])}}
                       for n in q["nodes"]]}
        for q in _get(f"{base}/sql?details=true&planDescription=false&offset=0&length=10000")
    ]
    return {"jvm": {key: after[key] - before[key] for key in after}, "jobs": sorted(run, key=lambda j: j["id"]),
            "queries": queries}


def report(profile: dict, min_seconds: float = 0.1) -> str:
    """The profile as text: the JVM counters, each job, and each query's operators with a time
    metric of at least ``min_seconds`` (their row counts beside)."""
    jvm = profile["jvm"]
    lines = [f"JVM during the work: JIT compilation {jvm['jit_s']:.1f} s, garbage collection {jvm['gc_s']:.1f} s, "
             f"{jvm['codegen_classes']:.0f} whole-stage code classes compiled (about {jvm['codegen_s']:.1f} s)",
             "jobs (seconds from the work's start):"]
    lines += [f"  job {j['id']:3d}  +{j['submitted']:6.2f} .. +{j['completed']:6.2f}"
              f"  {j['completed'] - j['submitted']:6.2f} s  {j['tasks']:4d} tasks  {j['name'][:70]}"
              for j in profile["jobs"]]
    lines.append(f"queries and their operators (task seconds, summed over tasks; shown from {min_seconds} s):")
    for q in profile["queries"]:
        shown = []
        for op in q["operators"]:
            times = {name: value for name, value in op["metrics"].items()
                     if "rows" not in name and seconds(value) >= min_seconds}
            if times:
                rows = op["metrics"].get("number of output rows")
                shown.append(f"    {op['name'][:34]:<34} " + "; ".join(f"{n} {v}" for n, v in times.items())
                             + (f"; {rows} rows out" if rows else ""))
        if shown or q["duration_s"] >= min_seconds:
            lines.append(f"  query {q['id']} ({q['duration_s']:.2f} s): {q['description'][:80]}")
            lines += shown
    return "\n".join(lines)


def seconds(value: str) -> float:
    """A metric's duration text (``"984 ms"``, ``"5.8 s"``, ``"1.2 m"``) in seconds; 0 for anything else.

    >>> seconds("984 ms"), seconds("5.8 s"), seconds("1.5 m"), seconds("1,000,000")
    (0.984, 5.8, 90.0, 0.0)
    """
    match = re.fullmatch(r"([0-9.,]+) (ms|s|m|h)", value.strip())
    return float(match.group(1).replace(",", "")) * _UNITS[match.group(2)] if match else 0.0


def _total(value: str) -> str:
    """A metric's total: the UI shows a summed metric as ``total (min, med, max ...)`` then the
    total and the spread on the next line; a single task's as the value alone."""
    lines = value.splitlines()
    text = lines[1] if len(lines) > 1 and lines[0].startswith("total") else lines[0] if lines else ""
    return text.split(" (")[0].strip()


def _get(url: str):
    # the UI's listeners catch up with the last events shortly after a job ends
    time.sleep(0.5)
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)
