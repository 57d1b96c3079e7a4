"""Benchmark ndcg-spark against Spark's RankingEvaluator and a single-process numpy NDCG@10.

One command generates the data (Parquet, once; reused while its spec matches) and runs the three
contenders on it, each in a fresh process, then prints wall seconds (Spark start apart from the
work), rows per second, peak memory and the ratios of ndcg-spark's work time to the others'::

    .venv/bin/python benchmarks/run.py --rows 2000000
    .venv/bin/python benchmarks/run.py --sizes 2000000,10000000,20000000 --skew 1000000

``--skew N`` adds a case: the first size plus one request with N candidates. ``--check`` also
computes, outside the timed part, the binary-relevance NDCG@10 each contender gives (the
definition RankingEvaluator uses) and reports whether the contenders agree. ``--rounds N`` runs the
contenders N times in turn and reports each ratio's median over the rounds (each taken within one
round) with its lowest and highest. ``--json FILE`` keeps every figure. See docs/benchmarks.md for
what is measured and the figures of the last run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONTENDERS = ("ndcg_spark", "evaluator", "numpy")
#: run only when named in --contenders: (a) with the dense-position plan off; (e) RankingEvaluator's
#: own number (binary gain, K = 10, one mean) through score_requests; (f) the floor under (e): that
#: number from one read and one unchecked hash aggregate; (g) the floor under (a): its outputs from one
#: unchecked aggregate per stage (benchmarks/floor_job.py); (h) (e)'s table as one lazy plan, exact for
#: every request, without (e)'s job and cache (benchmarks/lazy_table.py)
OPTIONAL = ("ndcg_spark_collecting", "ndcg_spark_recall", "ndcg_spark_panel", "ndcg_spark_evaluator_number", "floor", "floor_job",
            "lazy_table")
LABELS = {"ndcg_spark": "(a) ndcg-spark stage 1+2", "ndcg_spark_collecting": "(a') (a), collecting plan",
          "ndcg_spark_recall": "(a'') (a) with recall@K",
          "ndcg_spark_panel": "(a''') (a) with all six metrics",
          "ndcg_spark_evaluator_number": "(e) score_requests, (b)'s number",
          "floor": "(f) floor: one hash aggregate",
          "floor_job": "(g) floor under (a)",
          "lazy_table": "(h) (e) as one lazy plan",
          "evaluator": "(b) RankingEvaluator", "numpy": "(c) numpy"}
AGREEMENT_TOL = 1e-9


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-8000:])
        raise SystemExit(f"benchmark: {what} failed (exit {proc.returncode})")


def ensure_data(args: argparse.Namespace, rows: int, skew: int) -> Path:
    cmd = [sys.executable, str(HERE / "datagen.py"), "--rows", str(rows), "--skew", str(skew),
           "--candidates-per-request", str(args.candidates_per_request), "--seed", str(args.seed),
           "--root", str(args.data_dir)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-8000:])
        raise SystemExit("benchmark: data generation failed")
    return Path(proc.stdout.strip().splitlines()[-1])


def contender_command(args: argparse.Namespace, name: str, data: Path, out: Path, result_file: Path) -> list[str]:
    """The command that runs contender ``name`` in a fresh process (``benchmarks/contenders.py``)."""
    cmd = [sys.executable, str(HERE / "contenders.py"), name, "--data", str(data), "--out", str(out),
           "--result", str(result_file), "--replicates", str(args.replicates)]
    if args.shuffle_partitions:
        cmd += ["--shuffle-partitions", str(args.shuffle_partitions)]
    return cmd


def data_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the data and the contenders' runs that :func:`ensure_data` and
    :func:`contender_command` read (``--rows`` and ``--skew`` are each script's own)."""
    parser.add_argument("--candidates-per-request", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--replicates", type=int, default=100, help="bootstrap replicates of stage 2")
    parser.add_argument("--shuffle-partitions", type=int, default=None)
    parser.add_argument("--data-dir", default=str(ROOT / "data" / "bench"))
    parser.add_argument("--out", default=str(ROOT / "data" / "bench-out"))


def run_case(args: argparse.Namespace, rows: int, skew: int) -> dict:
    """Generate (or reuse) the data of one case and run every contender on it, ``args.rounds``
    times in turn (a, b, ..., a, b, ...): ``rounds`` keeps each round's results, ``results`` the
    median round of each contender (by work seconds)."""
    data = ensure_data(args, rows, skew)
    spec = json.loads((data / "spec.json").read_text())
    total_rows = spec["requests"] * spec["candidates_per_request"] + spec["skew"]
    case = {"rows": total_rows, "requests": spec["requests"] + (1 if spec["skew"] else 0), "skew": spec["skew"],
            "data": str(data), "rounds": []}
    for round_ in range(args.rounds):
        results = {}
        for name in args.contenders:
            results[name] = _run_contender(args, name, data, total_rows)
            print(f"  {LABELS[name]:<26} {total_rows:>11,} rows  start {results[name]['start_s']:6.1f} s  work "
                  f"{results[name]['work_s']:7.1f} s  (load {results[name]['load_before']})"
                  + (f"  round {round_ + 1}" if args.rounds > 1 else ""), flush=True)
        case["rounds"].append(results)
    case["results"] = {name: _median_round([r[name] for r in case["rounds"]]) for name in args.contenders}
    return case


def _run_contender(args: argparse.Namespace, name: str, data: Path, total_rows: int) -> dict:
    """One run of contender ``name`` in a fresh process: its result, with the process's wall
    seconds and the load before and after."""
    out = Path(args.out) / data.name / name
    out.mkdir(parents=True, exist_ok=True)
    result_file = out / "result.json"
    result_file.unlink(missing_ok=True)
    cmd = contender_command(args, name, data, out, result_file)
    if args.check:
        cmd.append("--check")
    load_before = _load()
    started = time.perf_counter()
    _run(cmd, f"{name} at {total_rows} rows")
    result = json.loads(result_file.read_text())
    result["process_s"] = time.perf_counter() - started
    result["load_before"], result["load_after"] = load_before, _load()
    result["rows_per_s"] = total_rows / result["work_s"] if result["work_s"] else None
    return result


def _median_round(results: list[dict]) -> dict:
    """The result of the median work time (the lower of the two middle ones for an even count)."""
    return sorted(results, key=lambda r: r["work_s"])[(len(results) - 1) // 2]


def round_ratios(case: dict) -> dict:
    """Each ratio of :func:`ratios` in every round of ``case``: its median (the ratios of one
    round are of contenders run back to back) and its lowest and highest."""
    per_round = [ratios({"results": results}) for results in case["rounds"]]
    out = {}
    for key in per_round[0]:
        values = sorted(r[key] for r in per_round)
        out[key] = {"median": values[(len(values) - 1) // 2], "low": values[0], "high": values[-1]}
    return out


def ratios(case: dict) -> dict:
    r = case["results"]
    out = {}
    if "ndcg_spark_collecting" in r:
        collecting = r["ndcg_spark_collecting"]["work_s"]
        for other, key in (("ndcg_spark", "a'/a"), ("evaluator", "a'/b"), ("numpy", "a'/c")):
            if other in r:
                out[key] = collecting / r[other]["work_s"]
    if "ndcg_spark_recall" in r and "ndcg_spark" in r:
        out["a''/a"] = r["ndcg_spark_recall"]["work_s"] / r["ndcg_spark"]["work_s"]
    if "ndcg_spark_panel" in r and "ndcg_spark" in r:
        out["a'''/a"] = r["ndcg_spark_panel"]["work_s"] / r["ndcg_spark"]["work_s"]
    if "ndcg_spark_evaluator_number" in r and "evaluator" in r:
        out["e/b"] = r["ndcg_spark_evaluator_number"]["work_s"] / r["evaluator"]["work_s"]
        if r["ndcg_spark_evaluator_number"].get("work_cpu_s") and r["evaluator"].get("work_cpu_s"):
            out["e/b CPU"] = r["ndcg_spark_evaluator_number"]["work_cpu_s"] / r["evaluator"]["work_cpu_s"]
    for name, key in (("ndcg_spark_evaluator_number", "e/f"), ("evaluator", "b/f")):
        if name in r and "floor" in r:
            out[key] = r[name]["work_s"] / r["floor"]["work_s"]
    if "lazy_table" in r:
        h = r["lazy_table"]["work_s"]
        for other, key in (("evaluator", "h/b"), ("floor", "h/f")):
            if other in r:
                out[key] = h / r[other]["work_s"]
        if "ndcg_spark_evaluator_number" in r:
            out["e/h"] = r["ndcg_spark_evaluator_number"]["work_s"] / h
    if "floor_job" in r:
        g = r["floor_job"]["work_s"]
        if "evaluator" in r:
            out["g/b"] = g / r["evaluator"]["work_s"]
        if "ndcg_spark" in r:
            out["a/g"] = r["ndcg_spark"]["work_s"] / g
    if "ndcg_spark" in r:
        a = r["ndcg_spark"]
        for other, key in (("evaluator", "a/b"), ("numpy", "a/c")):
            if other in r:
                out[key] = a["work_s"] / r[other]["work_s"]
                out[key + " incl. start"] = (a["work_s"] + a["start_s"]) / (r[other]["work_s"] + r[other]["start_s"])
                if a.get("work_cpu_s") and r[other].get("work_cpu_s"):
                    out[key + " CPU"] = a["work_cpu_s"] / r[other]["work_cpu_s"]
    return out


def agreement(case: dict) -> dict:
    """Binary NDCG@10 of every contender that computed it, the largest difference, and the
    exponential NDCG@10 mean of ndcg-spark and numpy (both compute it)."""
    r = case["results"]
    binary = {n: r[n]["binary_ndcg10_mean"] for n in r if r[n].get("binary_ndcg10_mean") is not None}
    out = {"binary_ndcg10_mean": binary}
    if len(binary) > 1:
        out["binary_max_diff"] = max(binary.values()) - min(binary.values())
    if "ndcg_spark" in r and "numpy" in r:
        out["ndcg10_mean_diff"] = abs(r["ndcg_spark"]["ndcg10_mean"] - r["numpy"]["ndcg10_mean"])
    if "ndcg_spark" in r and "floor_job" in r:
        out["floor_job_ndcg10_mean_diff"] = abs(r["ndcg_spark"]["ndcg10_mean"] - r["floor_job"]["ndcg10_mean"])
    return out


def _mib(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


#: the report's ratio lines after its tables: what each compares, and its ratios
RATIO_LINES = (("collecting plan (a')", ("a'/a", "a'/b", "a'/c")),
               ("(b)'s number through score_requests (e)", ("e/b", "e/b CPU")),
               ("against the floor (f)", ("e/f", "b/f")),
               ("(e)'s table as one lazy plan (h)", ("h/b", "e/h", "h/f")))


def _case_label(case: dict) -> str:
    """A case's rows as the report names it: ``20,000,000`` or ``5,000,000 skew``."""
    return f"{case['rows']:,}{' skew' if case['skew'] else ''}"


def report(cases: list[dict]) -> str:
    lines = ["| rows | contender | Spark start s | work s | work CPU s | rows/s | peak JVM RSS MiB | "
             "peak Python RSS MiB | NDCG@10 | load (1/5/15 min) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for case in cases:
        label = f"{case['rows']:,}" + (f" (skew: one request of {case['skew']:,})" if case["skew"] else "")
        for name, res in case["results"].items():
            mean = res.get("ndcg10_mean", res.get("binary_ndcg10_mean"))
            lines.append(
                f"| {label} | {LABELS[name]} | {res['start_s']:.1f} | {res['work_s']:.1f} | "
                f"{res.get('work_cpu_s', float('nan')):.1f} | "
                f"{res['rows_per_s']:,.0f} | {_mib(res.get('peak_jvm_mib'))} | {_mib(res.get('peak_python_mib'))} | "
                f"{mean:.6f}{' (binary)' if name == 'evaluator' else ''} | {res['load_before']} |"
            )
    lines += ["", "| rows | a/b | a/c | a/b incl. start | a/c incl. start | a/b CPU | a/c CPU | stage 1 s | stage 2 s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        q = case["ratios"]
        a = case["results"].get("ndcg_spark", {})
        lines.append(
            f"| {_case_label(case)} | {q.get('a/b', float('nan')):.2f} | "
            f"{q.get('a/c', float('nan')):.2f} | {q.get('a/b incl. start', float('nan')):.2f} | "
            f"{q.get('a/c incl. start', float('nan')):.2f} | {q.get('a/b CPU', float('nan')):.2f} | "
            f"{q.get('a/c CPU', float('nan')):.2f} | {a.get('stage1_s', float('nan')):.1f} | "
            f"{a.get('stage2_s', float('nan')):.1f} |"
        )
    for case in cases:
        q, label = case["ratios"], _case_label(case)
        for title, keys in RATIO_LINES:
            if any(key in q for key in keys):
                lines.append(f"{label}: {title} " + ", ".join(f"{key} {q[key]:.2f}" for key in keys if key in q))
        if "g/b" in q or "a/g" in q:
            g = case["results"]["floor_job"]
            ratios_g = ", ".join(f"{key} {q[key]:.2f}" for key in ("g/b", "a/g") if key in q)
            lines.append(f"{label}: against the floor under (a) (g: stage 1 {g['stage1_s']:.1f} s, stage 2 "
                         f"{g['stage2_s']:.1f} s) {ratios_g}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="candidate rows (one size)")
    parser.add_argument("--sizes", default=None, help="comma-separated row counts, e.g. 2000000,10000000,20000000")
    parser.add_argument("--skew", type=int, default=0,
                        help="also run the first size plus one request with this many candidates")
    parser.add_argument("--skew-only", action="store_true", help="run only the skewed case")
    data_arguments(parser)
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--check", action="store_true", help="also compare binary NDCG@10 (untimed)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the contenders this many times in turn; report each one's median round and the "
                             "spread of each ratio over the rounds")
    parser.add_argument("--json", default=None, help="write every figure to this file")
    args = parser.parse_args(argv)
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    unknown = set(args.contenders) - set(CONTENDERS) - set(OPTIONAL)
    if unknown:
        parser.error(f"unknown contender(s): {', '.join(sorted(unknown))}")
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")] if args.sizes else [args.rows]

    machine = {"cores": os.cpu_count(), "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                                                             / 2**30, 1), "load_at_start": _load(),
               "python": sys.version.split()[0]}
    print(f"machine: {machine['cores']} cores, {machine['memory_gib']} GiB, load {machine['load_at_start']}",
          flush=True)
    cases = []
    plan = [] if args.skew_only else [(n, 0) for n in sizes]
    plan += [(sizes[0], args.skew)] if args.skew else []
    for rows, skew in plan:
        print(f"case: {rows:,} rows" + (f" + one request of {skew:,} candidates" if skew else ""), flush=True)
        case = run_case(args, rows, skew)
        # each ratio within a round, its median over the rounds (with one round: that round's)
        case["round_ratios"] = round_ratios(case)
        case["ratios"] = {key: v["median"] for key, v in case["round_ratios"].items()}
        # the worst disagreement of any round
        checks = [agreement({"results": results}) for results in case["rounds"]]
        case["agreement"] = max(checks, key=lambda a: max((v for k, v in a.items() if k.endswith("_diff")), default=0.0))
        cases.append(case)
        if args.check:
            print(f"  agreement: {case['agreement']}", flush=True)
        if args.json:  # after every case, so a long run interrupted keeps what it measured
            Path(args.json).write_text(json.dumps({"machine": machine, "cases": cases}, indent=2, sort_keys=True))
    print()
    print(report(cases))
    for case in cases:
        if len(case["rounds"]) > 1:
            spread = ", ".join(f"{key} {v['median']:.2f} ({v['low']:.2f}–{v['high']:.2f})"
                               for key, v in case["round_ratios"].items() if "incl. start" not in key)
            print(f"{_case_label(case)} over {len(case['rounds'])} rounds, median "
                  f"(lowest–highest): {spread}")
    if len(sizes) > 1 and "ndcg_spark" in args.contenders:
        by_rows = {c["rows"]: c["results"]["ndcg_spark"]["work_s"] for c in cases if not c["skew"]}
        steps = sorted(by_rows)
        for small, big in zip(steps, steps[1:]):
            print(f"ndcg-spark {small:,} -> {big:,} rows: x{by_rows[big] / by_rows[small]:.2f} work time")
    machine["load_at_end"] = _load()
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "cases": cases}, indent=2, sort_keys=True))
    if args.check:
        bad = [c for c in cases if c["agreement"].get("binary_max_diff", 0.0) > AGREEMENT_TOL
               or c["agreement"].get("ndcg10_mean_diff", 0.0) > AGREEMENT_TOL
               or c["agreement"].get("floor_job_ndcg10_mean_diff", 0.0) > AGREEMENT_TOL]
        if bad:
            print("benchmark: the contenders disagree on NDCG@10", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
