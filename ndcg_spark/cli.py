"""``ndcg-spark``: the command line (console script) and the spark-submit entry's engine.

It parses the arguments, builds the session, calls :func:`ndcg_spark.job.run.run_job` (the
sequence of a run) and prints what the run did (:mod:`ndcg_spark.report.text`); ``sample``
writes the embedded sample data (:mod:`ndcg_spark.sample.generate`).

The library's log lines (logger ``ndcg_spark``), among them one per step of a run with its
elapsed time, go to stderr; the results to stdout. Every failure ends in one readable paragraph
(``--debug`` shows the trace instead) and an exit status a scheduler can act on
(:data:`EXIT_STATUSES`, docs/operations.md#exit-statuses). SIGTERM, SIGINT and SIGHUP end an
attempt cleanly (:mod:`ndcg_spark.publishing.signals`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ndcg_spark.job.run import ReportOutcome, RunOutcome
    from ndcg_spark.publishing.signals import Ending
    from ndcg_spark.job.stages import StageResult

EXIT_OK = 0
#: a failure that is not the input's nor the configuration's (Spark, the cluster, another process
#: writing the tables): a retry may succeed
EXIT_FAILED = 1
#: bad input or configuration (a named rule, a missing column, an empty ideal under ``error``):
#: fix it first, a retry fails the same way (argparse's usage errors exit with 2 too)
EXIT_BAD_INPUT = 2
#: another attempt took the run over and publishes it: do not retry this one
EXIT_LEASE_LOST = 3
#: a live attempt holds the run (sysexits' EX_TEMPFAIL): retry later, or start with ``--wait``
EXIT_RUN_IN_PROGRESS = 75
EXIT_STATUSES = {
    EXIT_OK: "success",
    EXIT_FAILED: "failed (Spark, the cluster, the tables changed under it): retry",
    EXIT_BAD_INPUT: "bad input or configuration: do not retry, fix it",
    EXIT_LEASE_LOST: "lease lost: another attempt took the run over and publishes it; do not retry",
    EXIT_RUN_IN_PROGRESS: "lease held by a live attempt: retry later (or --wait)",
    128 + 1: "interrupted by SIGHUP (recorded failed): retry",
    128 + 2: "interrupted by SIGINT (recorded failed): retry",
    128 + 15: "interrupted by SIGTERM (recorded failed): retry",
}
"""The console script's exit statuses and what a scheduler does with each (128 + N: ended by signal N)."""


def exit_status(exc: BaseException) -> int:
    """The exit status of a command that failed with ``exc`` (:data:`EXIT_STATUSES`)."""
    from ndcg_spark.errors import (
        FileVanished, Interrupted, LeaseLost, NdcgError, RunInProgress, SparkFailure,
    )

    if isinstance(exc, Interrupted):
        return exc.exit_code
    if isinstance(exc, RunInProgress):
        return EXIT_RUN_IN_PROGRESS
    if isinstance(exc, LeaseLost):
        return EXIT_LEASE_LOST
    if isinstance(exc, (FileVanished, SparkFailure)) or not isinstance(exc, NdcgError):
        return EXIT_FAILED
    return EXIT_BAD_INPUT


def _parser() -> argparse.ArgumentParser:
    from ndcg_spark.version import __version__

    parser = argparse.ArgumentParser(prog="ndcg-spark", description="NDCG@K per search request, declared and stamped.")
    parser.add_argument("--debug", action="store_true", help="show the full trace on failure")
    parser.add_argument("--version", action="version", version=f"ndcg-spark {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_config(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--config", required=True, help=CONFIG_HELP)
        p.add_argument("--run-id", help="run id (default: run_id in the YAML, else today's UTC date)")
        p.add_argument("--debug", action="store_true", help="show the full trace on failure")
        return p

    writers = [
        with_config("score", "stage 1: write the per-request table"),
        with_config("run", "the nightly job: stage 1, then stage 2 when outputs.aggregate is set (and the report)"),
        with_config("aggregate", "stage 2: aggregate a scored run (means, intervals, slices, audit, run metadata)"),
    ]
    for p in writers:
        p.add_argument("--take-over", action="store_true",
                       help="start although the run-status table says another attempt is running this run (it is dead)")
        p.add_argument("--wait", type=_minutes, default=None, metavar="MINUTES",
                       help="while a live attempt holds the run, wait up to MINUTES for it to end or go stale "
                            f"(then exit {EXIT_RUN_IN_PROGRESS})")
    for p in writers[:2]:
        p.add_argument("--replay", metavar="RUN_ID",
                       help="read the inputs exactly as run RUN_ID read them (its recorded Delta versions, Iceberg "
                            "snapshots, unchanged files), else refuse; --run-id defaults to RUN_ID")
    with_config("report", "write the run's static HTML report to outputs.report_dir")
    with_config("compare", "compare two rankers of a run: paired deltas, significance, candidate-pool guard (and the report)")
    with_config("agreement", "does the offline metric predict the release? agreement of each metric x K with each "
                             "release outcome over the published experiments (writes outputs.agreement)")
    judge = with_config("judge-next", "what to judge next: the documents that settle the most of the unjudged spread")
    judge.add_argument("--budget", type=int, help="documents to propose (default: the YAML's judging.budget, else 1000)")
    judge.add_argument("--target", choices=("aggregate", "compare"), help="one system's mean, or the compare: pair's delta")
    judge.add_argument("--k", type=int, help="the target's cutoff (default: judging.k, else the largest K)")
    show = with_config("show", "print a published night: --per-request lists each request's values as trec_eval -q does")
    show.add_argument("--per-request", action="store_true", required=True,
                      help="every request's value of every declared metric and K, then the means (trec_eval's -q layout)")
    show.add_argument("--system", help="one system (default: every system of the night, one listing each)")
    trend = sub.add_parser("trend", help="night over night: the published runs' overall NDCG, changes, flags and breaks")
    trend.add_argument("--config", required=True, help=CONFIG_HELP)
    window = trend.add_mutually_exclusive_group()
    window.add_argument("--last", type=int, help="the last N published runs (default: the YAML's trend.last, else all)")
    window.add_argument("--since", help="the runs whose run id is >= SINCE (e.g. 2026-11-01)")
    trend.add_argument("--debug", action="store_true", help="show the full trace on failure")
    runs = sub.add_parser("runs", help="the last runs' status rows: attempt, start, end, Spark application, failure reason")
    runs.add_argument("--config", required=True, help=CONFIG_HELP)
    runs.add_argument("--last", type=int, default=10, help="how many runs, most recently written first (default 10)")
    which = runs.add_mutually_exclusive_group()
    which.add_argument("--failed", action="store_true", help="only the runs whose last attempt failed")
    which.add_argument("--attempts", action="store_true",
                       help="every attempt of the last runs (the run-attempts table): outcome, last step, host, pid")
    runs.add_argument("--debug", action="store_true", help="show the full trace on failure")
    init = sub.add_parser("init", help="write a starter job YAML into DIR/conf/: the embedded default (the sample "
                                       "night), or with --trec one for your TREC qrels and run files")
    init.add_argument("dir", nargs="?", default=".", help="the folder (default: the current one)")
    init.add_argument("--trec", nargs=2, metavar=("QRELS", "RUN"), help="a TREC qrels file and run file: "
                      "DIR/conf/trec.yaml scores them as trec_eval does")
    init.add_argument("--force", action="store_true", help="write the YAML again over an existing one")
    init.add_argument("--debug", action="store_true", help="show the full trace on failure")
    demo = sub.add_parser("demo", help="the embedded default end to end: the sample data, two earlier nights, "
                                       "today's run and report, the comparison of hybrid against bm25")
    where = demo.add_mutually_exclusive_group()
    where.add_argument("--dir", help="the demo's folder, set up by init when new (default: ndcg-spark-demo, "
                                     "with --quick ndcg-spark-demo-quick)")
    where.add_argument("--config", help="run the demo on this job YAML instead (the checkout's conf/local.yaml)")
    demo.add_argument("--quick", action="store_true",
                      help="a quick look: a sample of 1,000 requests instead of 20,000 (when the folder has none yet), "
                           "200 bootstrap replicates and sign flips instead of the YAML's, and no earlier nights")
    demo.add_argument("--history", action="store_true",
                      help="also publish the sample's past experiments (24 rankers against bm25 on a small night "
                           "30 days back, each with its release: one comparison each, minutes) and run agreement")
    demo.add_argument("--run-id", help="today's run id (default: today's UTC date)")
    demo.add_argument("--debug", action="store_true", help="show the full trace on failure")
    sample = sub.add_parser("sample", help="write the embedded maintenance-search sample data (and, under history/, "
                                           "its past experiments: ndcg-spark agreement's)")
    sample.add_argument("--out", default="data/sample", help="output folder (default data/sample)")
    sample.add_argument("--requests", type=int, default=20_000, help="number of requests (default 20000)")
    sample.add_argument("--seed", type=int, default=7)
    sample.add_argument(
        "--dense-pool", action="store_true", help="also a third ranker, dense, over its own candidate pool"
    )
    sample.add_argument(
        "--no-positive-share", type=float, default=0.10,
        help="share of requests with no positive grade (no-answer traffic; default 0.10)",
    )
    sample.add_argument("--debug", action="store_true", help="show the full trace on failure")
    return parser


CONFIG_HELP = "job YAML (`ndcg-spark init` writes a starter; relative paths resolve against its folder)"


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of minutes >= 0, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None, *, spark_master_from_config: bool = True) -> int:
    """Run the CLI; returns the exit status (:data:`EXIT_STATUSES`).

    ``spark_master_from_config=False`` (the spark-submit entry) leaves the master to spark-submit.
    """
    from ndcg_spark.errors import Interrupted
    from ndcg_spark.publishing.signals import ending_on_signals

    args = _parser().parse_args(argv)
    with _progress_on_stderr(debug=args.debug), ending_on_signals() as ending:
        try:
            return _dispatch(args, spark_master_from_config, ending)
        except Interrupted as exc:
            print(f"ndcg-spark {args.command}: {exc}.", file=sys.stderr)
            return exc.exit_code
        except Exception as exc:  # noqa: BLE001 - every failure becomes one paragraph unless --debug
            if args.debug:
                raise
            print(f"ndcg-spark {args.command}: failed.\n{_explain(exc)}", file=sys.stderr)
            return exit_status(exc)


@contextlib.contextmanager
def _progress_on_stderr(*, debug: bool) -> Iterator[None]:
    """The library's log lines (logger ``ndcg_spark``: one per step of a run, with its time) on
    stderr while the command runs; DEBUG ones too under ``--debug``."""
    root = logging.getLogger("ndcg_spark")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = logging.DEBUG if debug else logging.INFO
    handler.setLevel(level)
    saved = root.level
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)


def _explain(exc: BaseException) -> str:
    from ndcg_spark.errors import one_paragraph

    return one_paragraph(exc)


def _dispatch(args: argparse.Namespace, master_from_config: bool, ending: Ending) -> int:
    if args.command == "sample":
        return _sample(args, master_from_config, ending)
    if args.command == "init":
        return _init(args)
    if args.command == "demo":
        return _demo(args, master_from_config, ending)
    from ndcg_spark.config.job import JobConfig, default_run_id, validate_run_id
    from ndcg_spark.job.run import run_job
    from ndcg_spark.publishing.tags import step_tags

    config = JobConfig.from_yaml(args.config)
    if args.command == "trend":
        return _trend(args, config, master_from_config, ending)
    if args.command == "runs":
        return _runs(args, config, master_from_config, ending)
    replay = getattr(args, "replay", None)
    if replay is not None:
        replay = validate_run_id(replay, "--replay")
    run_id = validate_run_id(args.run_id, "--run-id") if args.run_id else (replay or config.run_id or default_run_id())
    if args.command == "agreement":
        return _agreement(config, run_id, master_from_config, ending)
    if args.command == "judge-next":
        return _judge_next(args, config, run_id, master_from_config, ending)
    if args.command == "show":
        return _show(args, config, run_id, master_from_config, ending)
    if args.command in ("score", "run") and master_from_config and not os.environ.get("SPARK_REMOTE"):
        # before Spark starts: a mistyped path costs a second, not a JVM's start (a Spark Connect
        # session's paths are its server's: read there)
        config.check_local_inputs()
    spark = _session(config, f"ndcg-spark {args.command} {run_id}", master_from_config, ending)
    ending.attach(spark, step_tags(run_id, args.command)[0])  # a signal cancels the run's jobs
    wait = getattr(args, "wait", None)
    # the stages' lines are printed as soon as the stages are done, before the report is written
    outcome = run_job(spark, config, args.command, run_id, before_report=lambda done: _print(_stage_lines(done)),
                      take_over=getattr(args, "take_over", False),
                      wait=None if wait is None else dt.timedelta(minutes=wait), replay=replay)
    _print(_report_lines(outcome.report))
    return EXIT_OK


def _session(config, app_name: str, master_from_config: bool, ending: Ending):
    from ndcg_spark.job.session import build_session

    with ending.starting_session():  # the driver's JVM ignores the signals that end this process
        return build_session(
            master=config.spark.master if master_from_config else None,
            app_name=app_name,
            warehouse_dir=config.spark.warehouse_dir,
            shuffle_partitions=config.spark.shuffle_partitions,
            conf=dict(config.spark.conf),
        )


def _trend(args: argparse.Namespace, config, master_from_config: bool, ending: Ending) -> int:
    from ndcg_spark.job.trends import trend_rows
    from ndcg_spark.metrics.slices import overall_rows
    from ndcg_spark.report.text import format_trend

    spec = config.trend_spec().narrowed(last=args.last, since=args.since)
    spark = _session(config, "ndcg-spark trend", master_from_config, ending)
    rows = overall_rows(trend_rows(spark, config, spec)).collect()
    print(format_trend([r.asDict() for r in rows], list(config.contract.metric_names)))
    return EXIT_OK


def _agreement(config, run_id: str, master_from_config: bool, ending: Ending) -> int:
    from ndcg_spark.job.agreements import agreement_stage
    from ndcg_spark.report.text_agreement import format_agreement

    spark = _session(config, f"ndcg-spark agreement {run_id}", master_from_config, ending)
    result = agreement_stage(spark, config, run_id)
    print(format_agreement(result.summary, result.history))
    print(f"agreement {run_id}: {len(result.summary)} summary rows to {result.target.describe()}, "
          f"{len(result.history)} experiment rows to {result.history_target.describe()} ({result.seconds:.1f} s)")
    return EXIT_OK


def _show(args: argparse.Namespace, config, run_id: str, master_from_config: bool, ending: Ending) -> int:
    from pyspark.sql import functions as F

    from ndcg_spark.errors import InputError
    from ndcg_spark.publishing.status import read_published
    from ndcg_spark.report.per_query import per_query_listing

    spark = _session(config, f"ndcg-spark show {run_id}", master_from_config, ending)
    metrics = list(config.contract.metrics)
    night = read_published(spark, config.per_request, config.run_status(), run_id)
    if args.system is not None:
        night = night.filter(F.col("system") == args.system)
    rows = night.select("system", "request_id", "k", *[m.name for m in metrics]).collect()
    if not rows:
        which = f"system {args.system!r} in " if args.system is not None else ""
        raise InputError(f"show: no published rows of {which}run {run_id} in {config.per_request.describe()}; "
                         "`ndcg-spark runs --config …` lists the published runs")
    for system in sorted({r.system for r in rows}):
        _print(per_query_listing([r.asDict() for r in rows if r.system == system], metrics, system))
    return EXIT_OK


def _runs(args: argparse.Namespace, config, master_from_config: bool, ending: Ending) -> int:
    from ndcg_spark.publishing.attempts import recent_attempts
    from ndcg_spark.publishing.status import FAILED, recent_runs
    from ndcg_spark.report.text import format_attempts, format_runs

    spark = _session(config, "ndcg-spark runs", master_from_config, ending)
    if args.attempts:
        rows = recent_attempts(spark, config.run_attempts(), last=args.last)
        print(format_attempts(rows, config.run_attempts().describe()))
        return EXIT_OK
    only = FAILED if args.failed else None
    rows = recent_runs(spark, config.run_status(), last=args.last, only=only)
    print(format_runs(_with_input_changes(spark, config, rows), config.run_status().describe(), only))
    return EXIT_OK


def _with_input_changes(spark, config, rows: list[dict]) -> list[dict]:
    """Each published run's row with ``inputs_changed``: the inputs that changed since it read them
    ([]: none), when its run metadata recorded them."""
    from ndcg_spark.storage.lineage import changes_since, recorded_inputs
    from ndcg_spark.publishing.status import COMPLETE

    metadata = config.output("run_metadata")
    published = [r["run_id"] for r in rows if r["status"] == COMPLETE]
    if metadata is None or not published:
        return rows
    recorded, now = recorded_inputs(spark, metadata, published), {}
    return [{**r, "inputs_changed": changes_since(spark, recorded[r["run_id"]], now)}
            if recorded.get(r["run_id"]) is not None else r for r in rows]


def _judge_next(args: argparse.Namespace, config, run_id: str, master_from_config: bool, ending: Ending) -> int:
    from ndcg_spark.job.judging import judging_stage
    from ndcg_spark.publishing.tags import step_tags, tagged
    from ndcg_spark.report.text_judging import format_judging

    spec = config.judging_spec().narrowed(budget=args.budget, target=args.target, k=args.k)
    spark = _session(config, f"ndcg-spark judge-next {run_id}", master_from_config, ending)
    tags = step_tags(run_id, "judge-next")
    ending.attach(spark, tags[0])  # a signal cancels the plan's jobs
    with tagged(spark, *tags):
        done = judging_stage(spark, config, run_id, spec)
    _print(format_judging(done.rows, done.target.describe(), done.seconds, [str(f) for f in done.files]))
    if done.report is not None:
        _print([f"report -> {done.report}; open {done.report.resolve().as_uri()} in a browser"])
    elif done.report_note:
        _print([f"report: not written ({done.report_note})"])
    return EXIT_OK


def _init(args: argparse.Namespace) -> int:
    from ndcg_spark.job.demo import init

    written = init(args.dir, trec=tuple(args.trec) if args.trec else None, force=args.force)
    folder = written.parent.parent
    here = "" if folder == Path.cwd().resolve() else f"cd {folder} && "
    print(f"wrote {written}")
    if args.trec:
        print(f"next: {here}ndcg-spark run --config conf/{written.name}    "
              f"(then ndcg-spark show --config conf/{written.name} --per-request: trec_eval -q's listing)")
    else:
        print(f"next: {here}ndcg-spark demo --config conf/{written.name}    "
              "(the sample data, earlier nights, a run and a comparison; --quick for a smaller sample)")
    return EXIT_OK


def _demo(args: argparse.Namespace, master_from_config: bool, ending: Ending) -> int:
    """The embedded default end to end, in one Spark session (:mod:`ndcg_spark.job.demo`)."""
    import yaml

    from ndcg_spark.job import demo
    from ndcg_spark.config.job import JobConfig, default_run_id, validate_run_id
    from ndcg_spark.publishing.status import published_runs
    from ndcg_spark.job.run import run_job
    from ndcg_spark.publishing.tags import step_tags
    from ndcg_spark.sample.generate import write_sample

    if args.config:
        config_path = Path(args.config)
    else:
        folder = Path(args.dir or ("ndcg-spark-demo-quick" if args.quick else "ndcg-spark-demo"))
        config_path = folder.resolve() / "conf" / "local.yaml"
        if not config_path.exists():
            demo.init(folder)
    config = JobConfig.from_yaml(config_path)
    document = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    if args.quick:  # fewer replicates too: stage 2's cost is the bootstrap's, whatever the sample's size
        document = demo.quick(document)
        config = JobConfig.from_dict(document, base=config.base, source_file=f"{config_path} (quick)")
    run_id = validate_run_id(args.run_id, "--run-id") if args.run_id else default_run_id()
    sample = Path(config.candidates.path).parent
    size = demo.QUICK_REQUESTS if args.quick else demo.DEMO_REQUESTS
    log = logging.getLogger("ndcg_spark.demo")
    log.info("demo: %s (tables under %s, reports under %s)", config_path, Path(config.per_request.path).parent,
             config.output_folder("report_dir"))
    spark = _session(config, f"ndcg-spark demo {run_id}", master_from_config, ending)
    if not (sample / "release_outcomes").is_dir():  # (again when an older checkout wrote it without them)
        started = time.perf_counter()
        write_sample(spark, sample, n_requests=size)
        log.info("sample data (%d requests) written to %s in %.1f s", size, sample, time.perf_counter() - started)
    published = {r.run_id for r in published_runs(spark, config.run_status()).collect()}
    base = config.base
    today = dt.date.fromisoformat(run_id[:10]) if _is_date(run_id) else dt.datetime.now(dt.timezone.utc).date()
    nights = demo.earlier_nights(today, sample)
    for night, what, change in [] if args.quick else nights:  # --quick: today's night alone
        if night in published:
            print(f"demo night {night} ({what}): already published")
            continue
        if "inputs" in change:  # the no-answer night's own sample
            no_answer = Path(change["inputs"]["candidates"]["path"]).parent
            if not (no_answer / "candidates").is_dir():
                write_sample(spark, no_answer, n_requests=size, no_positive_share=demo.NO_ANSWER_SHARE)
        earlier = JobConfig.from_dict(demo.changed(document, change), base=base, source_file=f"{config_path} ({what})")
        outcome = run_job(spark, earlier, "run", night)
        print(f"demo night {night} ({what}): published; report {outcome.report.path if outcome.report else '-'}")
    if args.history:
        _demo_history(spark, config, document, sample, today, published, run_id)
    ending.attach(spark, step_tags(run_id, "run")[0])
    for command in ("run", "compare"):
        outcome = run_job(spark, config, command, run_id, before_report=lambda done: _print(_stage_lines(done)))
        _print(_report_lines(outcome.report))
    return EXIT_OK


def _demo_history(spark, config, document: dict, sample: Path, today: dt.date, published: set[str],
                  run_id: str) -> None:
    """The sample's past experiments (:mod:`ndcg_spark.sample.history`): its night scored, then each
    ranker compared with bm25 beside its release; a comparison already written is not run again. Then
    ``agreement`` over them (under ``run_id``, today's)."""
    from ndcg_spark.config.job import JobConfig
    from ndcg_spark.job import demo
    from ndcg_spark.job.run import run_job
    from ndcg_spark.sample.history import ranker_names, write_history

    folder = sample / demo.HISTORY_FOLDER
    if not (folder / "release_outcomes").is_dir():
        write_history(folder)
    night = demo.history_night(today)
    scoring, comparisons = demo.history_jobs(document, folder, ranker_names())
    started = time.perf_counter()
    if night not in published:
        run_job(spark, JobConfig.from_dict(scoring, base=config.base, source_file="demo history"), "score", night)
    written = config.output("comparison")
    for job in comparisons:
        ranker = job["compare"]["candidate"]
        if written.path and Path(written.path, f"run_id={night}", "baseline=bm25", f"candidate={ranker}").is_dir():
            continue
        run_job(spark, JobConfig.from_dict(job, base=config.base, source_file=f"demo history ({ranker})"), "compare",
                night)
    print(f"demo history {night}: {len(comparisons)} experiments published in {time.perf_counter() - started:.0f} s")
    # before today's night, so that today's report shows the section "Does the offline metric predict the release?"
    from ndcg_spark.job.agreements import agreement_stage
    from ndcg_spark.report.text_agreement import format_agreement

    result = agreement_stage(spark, config, run_id)
    print(format_agreement(result.summary, result.history))


def _is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text[:10])
    except ValueError:
        return False
    return True


def _sample(args: argparse.Namespace, master_from_config: bool, ending: Ending) -> int:
    from ndcg_spark.job.session import build_session
    from ndcg_spark.sample.generate import write_sample

    with ending.starting_session():
        spark = build_session(master="local[*]" if master_from_config else None, app_name="ndcg-spark sample")
    started = time.perf_counter()
    paths = write_sample(spark, Path(args.out), n_requests=args.requests, seed=args.seed, dense_pool=args.dense_pool,
                         no_positive_share=args.no_positive_share)
    from ndcg_spark.job.demo import HISTORY_FOLDER
    from ndcg_spark.sample.history import write_history

    paths["history"] = write_history(Path(args.out) / HISTORY_FOLDER)["release_outcomes"].rsplit("/", 1)[0]
    print(f"sample data ({args.requests} requests, seed {args.seed}) written in {time.perf_counter() - started:.1f} s:")
    width = max(map(len, paths))
    for name, path in paths.items():
        print(f"  {name:<{width}}  {path}")
    return EXIT_OK


def _print(lines: list[str]) -> None:
    for line in lines:
        print(line)


def _stage_lines(outcome: RunOutcome) -> list[str]:
    """What the stages wrote: publication, stage 1 and its row accounting, the closing summary."""
    from ndcg_spark.report.text import (
        aggregate_summary,
        aggregate_written,
        format_comparison,
        format_guardrails,
        night_over_night,
        per_request_summary,
    )

    scored, aggregated, compared = outcome.scored, outcome.aggregated, outcome.compared
    lines = []
    if outcome.published is not None:
        lines.append(f"run {outcome.run_id}: published by attempt {outcome.attempt_id} "
                     f"({outcome.published.describe()} says complete)")
    if scored is not None:
        lines += _scored_lines(scored)
    if aggregated is not None:
        where = aggregated.target.describe()
        lines.append(aggregate_written(aggregated.run_id, where, aggregated.row_counts, aggregated.seconds))
        lines.append(aggregate_summary(outcome.overall, outcome.worst_slices, list(outcome.metrics)))
        if outcome.trended is not None:
            trended = outcome.trended
            where = trended.target.describe()
            lines.append(f"trend table {trended.rows_written} rows -> {where} ({trended.seconds:.1f} s)")
            lines.append(night_over_night(outcome.trend_overall, list(outcome.metrics)))
    elif scored is not None:
        lines.append(per_request_summary(outcome.per_request_means, list(outcome.metrics)))
    if compared is not None:
        lines.append(format_comparison(compared.rows, list(outcome.metrics)))
        lines.append(f"comparison table {len(compared.rows)} rows -> {compared.target.describe()} ({compared.seconds:.1f} s)")
    guarded = outcome.guarded
    if guarded is not None:
        lines += format_guardrails(guarded.rows, compared.rows if compared is not None else [])
        lines.append(f"guardrail table {len(guarded.rows)} rows -> {guarded.target.describe()} ({guarded.seconds:.1f} s)")
    return lines


def _scored_lines(scored: StageResult) -> list[str]:
    """Stage 1: the per-request table written, rows read = scored + quarantined, where quarantine went."""
    lines = [
        f"run {scored.run_id}: per-request table {scored.rows_written} rows -> {scored.target.describe()} "
        f"({scored.seconds:.1f} s)"
    ]
    accounting = scored.accounting
    if accounting is not None:
        lines.append(accounting.summary())
        if accounting.rows_quarantined and scored.quarantine is not None:
            lines.append(f"quarantine: {accounting.rows_quarantined:,} rows -> {scored.quarantine.describe()}")
    return lines


def _report_lines(report: ReportOutcome | None) -> list[str]:
    if report is None:
        return []
    if report.path is None:
        return [
            f"report: not written ({report.not_written}); `ndcg-spark aggregate` then `ndcg-spark report` "
            "for this run writes it"
        ]
    return [f"report -> {report.path} ({report.seconds:.1f} s); open {report.path.resolve().as_uri()} in a browser"]


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
