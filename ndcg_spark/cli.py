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
    with_config("run", "the nightly job: every stage (stage 1 for now)")
    with_config("report", "write the run's static HTML report to outputs.report_dir")
    sample = sub.add_parser("sample", help="write the embedded maintenance-search sample data")
    sample.add_argument("--out", default="data/sample", help="output folder (default data/sample)")
    sample.add_argument("--requests", type=int, default=20_000, help="number of requests (default 20000)")
    sample.add_argument("--seed", type=int, default=7)
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
    from ndcg_spark.session import build_session

    if args.command == "sample":
        from ndcg_spark.sample_data import write_sample

        spark = build_session(master="local[*]" if master_from_config else None, app_name="ndcg-spark sample")
        started = time.perf_counter()
        paths = write_sample(spark, Path(args.out), n_requests=args.requests, seed=args.seed)
        print(f"sample data ({args.requests} requests, seed {args.seed}) written in {time.perf_counter() - started:.1f} s:")
        for name, path in paths.items():
            print(f"  {name:<11} {path}")
        return 0

    from ndcg_spark.config import JobConfig, default_run_id, validate_run_id

    config = JobConfig.from_yaml(args.config)
    run_id = validate_run_id(args.run_id, "--run-id") if args.run_id else (config.run_id or default_run_id())
    spark = build_session(
        master=config.spark.master if master_from_config else None,
        app_name=f"ndcg-spark {args.command} {run_id}",
        warehouse_dir=config.spark.warehouse_dir,
        shuffle_partitions=config.spark.shuffle_partitions,
        conf=dict(config.spark.conf),
    )
    if args.command in ("score", "run"):
        from ndcg_spark.io import read_run
        from ndcg_spark.pipeline import score_stage, summarize_per_request
        from ndcg_spark.publish import publishing

        with publishing(spark, config, run_id) as status:  # 'running' first, 'complete' written last
            result = score_stage(spark, config, run_id)
        print(f"run {run_id}: published ({status.describe()} says complete)")
        print(f"run {run_id}: per-request table {result.rows_written} rows -> {result.target.describe()} ({result.seconds:.1f} s)")
        if result.accounting is not None:
            print(result.accounting.summary())
            if result.accounting.rows_quarantined and result.quarantine is not None:
                print(f"quarantine: {result.accounting.rows_quarantined:,} rows -> {result.quarantine.describe()}")
        _print_summary(summarize_per_request(read_run(spark, result.target, run_id)))
        if args.command == "run":
            _print_report(spark, config, run_id, required=False)
        return 0
    if args.command == "report":
        _print_report(spark, config, run_id, required=True)
        return 0
    raise AssertionError(f"unhandled command {args.command}")


def _print_report(spark, config, run_id: str, *, required: bool) -> None:
    """Write the run's HTML report. ``run`` writes it when the job has an aggregate table
    (``outputs.aggregate``, stage 2); ``report`` requires one."""
    from ndcg_spark.report import build_report, report_configured

    if not required and not report_configured(config):
        return
    started = time.perf_counter()
    path = build_report(spark, config, run_id)
    print(f"report -> {path} ({time.perf_counter() - started:.1f} s); open {path.resolve().as_uri()} in a browser")


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
