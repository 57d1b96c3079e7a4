"""``ndcg-spark``: the command line (console script) and the spark-submit entry's engine.

Every deliberate failure (bad config, bad input, empty ideal under ``error``) ends in one
readable paragraph and exit status 2; ``--debug`` shows the trace instead.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ndcg-spark", description="NDCG@K per search request, declared and stamped.")
    parser.add_argument("--debug", action="store_true", help="show the full trace on failure")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_config(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--config", required=True, help="job YAML (see conf/)")
        p.add_argument("--run-id", help="run id (default: run_id in the YAML, else today's UTC date)")
        p.add_argument("--debug", action="store_true", help="show the full trace on failure")
        return p

    with_config("score", "stage 1: write the per-request table")
    with_config("run", "the nightly job: stage 1, then stage 2 when outputs.aggregate is set (and the report)")
    with_config("aggregate", "stage 2: aggregate a scored run (means, intervals, slices, audit, run metadata)")
    with_config("report", "write the run's static HTML report to outputs.report_dir")
    with_config("compare", "compare two rankers of a run: paired deltas, significance, candidate-pool guard (and the report)")
    sample = sub.add_parser("sample", help="write the embedded maintenance-search sample data")
    sample.add_argument("--out", default="data/sample", help="output folder (default data/sample)")
    sample.add_argument("--requests", type=int, default=20_000, help="number of requests (default 20000)")
    sample.add_argument("--seed", type=int, default=7)
    sample.add_argument(
        "--dense-pool", action="store_true", help="also a third ranker, dense, over its own candidate pool"
    )
    sample.add_argument("--debug", action="store_true", help="show the full trace on failure")
    return parser


def main(argv: Sequence[str] | None = None, *, spark_master_from_config: bool = True) -> int:
    """Run the CLI; returns the exit status.

    ``spark_master_from_config=False`` (the spark-submit entry) leaves the master to spark-submit.
    """
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args, spark_master_from_config)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one paragraph unless --debug
        if args.debug:
            raise
        print(f"ndcg-spark {args.command}: failed.\n{_explain(exc)}", file=sys.stderr)
        return 2


def _explain(exc: BaseException) -> str:
    from ndcg_spark.errors import NdcgError, describe_spark_error

    if isinstance(exc, NdcgError):
        return str(exc)
    spark_text = describe_spark_error(exc)
    if spark_text is not None:
        return f"Spark failed: {spark_text}\n(run again with --debug for the full trace)"
    text = str(exc).strip().splitlines()
    head = text[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {head}\n(run again with --debug for the full trace)"


def _dispatch(args: argparse.Namespace, master_from_config: bool) -> int:
    from ndcg_spark.job.session import build_session

    if args.command == "sample":
        from ndcg_spark.sample.generate import write_sample

        spark = build_session(master="local[*]" if master_from_config else None, app_name="ndcg-spark sample")
        started = time.perf_counter()
        paths = write_sample(spark, Path(args.out), n_requests=args.requests, seed=args.seed, dense_pool=args.dense_pool)
        print(f"sample data ({args.requests} requests, seed {args.seed}) written in {time.perf_counter() - started:.1f} s:")
        for name, path in paths.items():
            print(f"  {name:<11} {path}")
        return 0

    from ndcg_spark.job.config import JobConfig, default_run_id, validate_run_id

    config = JobConfig.from_yaml(args.config)
    run_id = validate_run_id(args.run_id, "--run-id") if args.run_id else (config.run_id or default_run_id())
    spark = build_session(
        master=config.spark.master if master_from_config else None,
        app_name=f"ndcg-spark {args.command} {run_id}",
        warehouse_dir=config.spark.warehouse_dir,
        shuffle_partitions=config.spark.shuffle_partitions,
        conf=dict(config.spark.conf),
    )
    if args.command in ("score", "run", "aggregate"):
        from ndcg_spark.job.io import read_run
        from ndcg_spark.job.stages import (
            aggregate_stage,
            score_stage,
            stage2_input,
            stage2_plan,
            stage2_summary,
            summarize_per_request,
        )
        from ndcg_spark.job.publish import publishing

        # stage 2 runs under `aggregate`, and under `run` when the job has an aggregate table
        stage2 = args.command == "aggregate" or (args.command == "run" and _stage2_configured(config))
        if stage2:  # refuse before anything is unpublished or scored: a bad YAML, an unscored run
            stage2_plan(config)
            if args.command == "aggregate":
                stage2_input(spark, config, run_id)
        result = aggregated = None
        with publishing(spark, config, run_id) as status:  # 'running' first, 'complete' written last
            if args.command != "aggregate":
                result = score_stage(spark, config, run_id)
            if stage2:
                aggregated = aggregate_stage(spark, config, run_id, row_counts=_stage1_counts(result))
        print(f"run {run_id}: published ({status.describe()} says complete)")
        if result is not None:
            print(
                f"run {run_id}: per-request table {result.rows_written} rows -> {result.target.describe()} "
                f"({result.seconds:.1f} s)"
            )
            if result.accounting is not None:
                print(result.accounting.summary())
                if result.accounting.rows_quarantined and result.quarantine is not None:
                    print(f"quarantine: {result.accounting.rows_quarantined:,} rows -> {result.quarantine.describe()}")
        if aggregated is None:
            _print_summary(summarize_per_request(read_run(spark, result.target, run_id)))
        else:
            _print_aggregate_summary(aggregated, *stage2_summary(spark, aggregated))
        if args.command == "run":
            _print_report(spark, config, run_id, required=False)
        return 0
    if args.command == "compare":
        from ndcg_spark.comparison.paired import format_comparison
        from ndcg_spark.job.stages import compare_stage
        from ndcg_spark.report.html import ReportSpec, report_configured, report_dir

        if report_configured(config):  # a bad report section fails before the comparison is written
            ReportSpec.from_dict(config.section("report"))
            report_dir(config)
        compared = compare_stage(spark, config, run_id)
        print(format_comparison(compared.rows))
        print(f"comparison table {len(compared.rows)} rows -> {compared.target.describe()} ({compared.seconds:.1f} s)")
        _print_report(spark, config, run_id, required=False, unaggregated_ok=True)
        return 0
    if args.command == "report":
        _print_report(spark, config, run_id, required=True)
        return 0
    raise AssertionError(f"unhandled command {args.command}")


def _print_report(spark, config, run_id: str, *, required: bool, unaggregated_ok: bool = False) -> None:
    """Write the run's HTML report. ``run`` and ``compare`` write it when the job has an aggregate
    table (``outputs.aggregate``, stage 2); ``report`` requires one. With ``unaggregated_ok``
    (``compare``: the comparison needs stage 1 only) a run without aggregate rows yet gets no
    report, and a line saying why, instead of a failure."""
    from ndcg_spark.errors import InputError
    from ndcg_spark.report.html import build_report, report_configured

    if not required and not report_configured(config):
        return
    started = time.perf_counter()
    try:
        path = build_report(spark, config, run_id)
    except InputError as exc:
        if not unaggregated_ok:
            raise
        print(f"report: not written ({exc}); `ndcg-spark aggregate` then `ndcg-spark report` for this run writes it")
        return
    print(f"report -> {path} ({time.perf_counter() - started:.1f} s); open {path.resolve().as_uri()} in a browser")


def _stage2_configured(config) -> bool:
    return bool((config.section("outputs") or {}).get("aggregate"))


def _stage1_counts(result) -> dict[str, int]:
    """Stage 1's row accounting as flat counters for run metadata (``candidates.rows_read`` …)."""
    accounting = getattr(result, "accounting", None)
    if accounting is None:
        return {}
    counts = {}
    for name, numbers in accounting.as_dict().items():
        for key, value in numbers.items():
            if isinstance(value, int) and not isinstance(value, bool):
                counts[f"{name}.{key}"] = value
    return counts


def _print_aggregate_summary(result, overall: list[dict], audit: list[dict]) -> None:
    """The closing lines of stage 2: overall means with intervals and denominators, worst slices."""
    def mean(value, low, high) -> str:
        if value is None:
            return "n/a"
        interval = "" if low is None or high is None else f" [{low:.4f}, {high:.4f}]"
        return f"{value:.4f}{interval}"

    counts = ", ".join(f"{k} {v:,}" for k, v in result.row_counts.items() if "." not in k)
    where = result.target.describe()
    print(f"run {result.run_id}: aggregate table -> {where} ({counts}; {result.seconds:.1f} s)")
    for fingerprint in sorted({r["contract_fingerprint"] for r in overall}):
        print(f"contract {fingerprint}")
    levels = {r["ci_level"] for r in overall if r.get("ci_level")}
    level = f"{100 * levels.pop():g}% interval" if len(levels) == 1 else "interval"
    print(f"{'system':<10} {'pool':<18} {'k':>3} {'macro NDCG [' + level + ']':>34} "
          f"{'weighted NDCG [' + level + ']':>37} {'eligible':>9} {'empty':>7} {'all':>8}")
    for r in overall:
        print(
            f"{r['system']:<10} {str(r['pool_version']):<18} {r['k']:>3} "
            f"{mean(r['macro_ndcg'], r['macro_ci_low'], r['macro_ci_high']):>34} "
            f"{mean(r['weighted_ndcg'], r['weighted_ci_low'], r['weighted_ci_high']):>37} "
            f"{r['n_eligible']:>9,} {r['n_empty_ideal']:>7,} {r['n_requests']:>8,}"
        )
    if not audit:
        return
    top_k = max(r["k"] for r in audit)
    minimum = next((r["min_eligible"] for r in audit if r.get("min_eligible") is not None), None)
    print(
        f"worst slice per dimension at k={top_k} (every K is in the audit table; ranked: slices with >= "
        f"{minimum} eligible requests; * its interval lies wholly below the overall mean)"
    )
    pools = len({r["pool_version"] for r in audit})
    for r in (r for r in audit if r["k"] == top_k):
        who = r["system"] if pools == 1 else f"{r['system']}@{r['pool_version']}"
        if r["worst_macro_ndcg"] is None:
            print(f"  {who:<10} {r['slice_dimension']:<20} no slice has enough eligible requests "
                  f"({r['n_slices_ranked']} of {r['n_slices']} ranked)")
            continue
        flag = "*" if r["ci_below_overall"] else " "
        print(
            f"  {who:<10} {r['slice_dimension']:<20} {str(r['worst_slice_value']):<16} "
            f"{mean(r['worst_macro_ndcg'], r['worst_ci_low'], r['worst_ci_high']):>34} "
            f"gap {r['gap_to_overall']:+.4f}{flag} ({r['worst_n_eligible']:,} eligible)"
        )


def _print_summary(rows: list[dict]) -> None:
    for fingerprint in sorted({r["contract_fingerprint"] for r in rows}):
        print(f"contract {fingerprint}")
    print(f"{'system':<10} {'pool':<18} {'k':>3} {'macro NDCG':>10} {'scored':>8} {'empty':>7} {'all':>8}")
    for r in rows:
        mean = "n/a" if r["macro_ndcg"] is None else f"{r['macro_ndcg']:.4f}"
        print(
            f"{r['system']:<10} {str(r['pool_version']):<18} {r['k']:>3} {mean:>10} "
            f"{r['scored']:>8} {r['empty_ideal']:>7} {r['requests']:>8}"
        )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
