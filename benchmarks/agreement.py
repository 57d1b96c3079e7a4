"""The cost of ``ndcg-spark agreement`` on a history the size of the demo's, in one warm session.

The history: ``--experiments`` comparisons (default 24, the sample's) of 6 metrics × 4 K, each with
4 release outcomes and 2 offline guardrails, written as Parquet comparison and guardrail tables
partitioned like the job's (run × baseline × candidate), every run published. Cases, ``--repeat``
times in turn (the first round pays for compiling the code):

* ``history``: :func:`~ndcg_spark.agreement.history.experiment_history` collected (its check query
  and the join);
* ``summary``: :func:`~ndcg_spark.agreement.statistics.summarize` of the collected rows (numpy on
  the driver, ``--replicates`` bootstrap resamples per metric × K × outcome);
* ``stage``: :func:`~ndcg_spark.job.agreements.agreement_stage`, what the command does: read the
  published rows, the history, the summary, both tables written.

Each prints its wall seconds::

    .venv/bin/python benchmarks/agreement.py --experiments 24 --repeat 2

Figures of the last run: docs/agreement.md ("Cost").
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METRICS, KS = ("ndcg", "recall", "precision", "average_precision", "reciprocal_rank", "hit_rate"), (1, 3, 5, 10)
OUTCOMES = (("task_completion", "rate", "higher"), ("time_to_procedure", "mean", "lower"),
            ("latency_p95", "p95", "lower"), ("safety_incidents", "rate", "lower"))


def write_history(spark, root: Path, experiments: int) -> None:
    import numpy as np

    from ndcg_spark.config.job import Source
    from ndcg_spark.publishing.status import COMPLETE, mark_run
    from ndcg_spark.storage.io import write_run_partitioned

    rng = np.random.default_rng(0)
    comparison, guardrails = [], []
    for i in range(experiments):
        run, candidate = f"2026-10-{i % 28 + 1:02d}", f"ranker-{i:02d}"
        for metric in METRICS:
            for k in KS:
                d = float(rng.normal(0, 0.02))
                comparison.append((run, "bm25", candidate, "reranker", metric, "overall", "all", k, d, d - 0.01,
                                   d + 0.01, d, d - 0.01, d + 0.01, "fp"))
        for name, statistic, better in OUTCOMES:
            y = float(rng.normal(0, 0.02))
            guardrails.append((run, "bm25", candidate, name, "release", statistic, better, "overall", "all", y,
                               y - 0.01, y + 0.01, "pass", "fp"))
        for name in ("stale_first_result", "unjudged_first_result"):
            guardrails.append((run, "bm25", candidate, name, "offline", "rate", "lower", "overall", "all", 0.0,
                               -0.01, 0.01, "pass", "fp"))
    cdl = ("run_id string, baseline string, candidate string, comparison_kind string, metric string, "
           "slice_dimension string, slice_value string, k int, delta_macro double, delta_macro_ci_low double, "
           "delta_macro_ci_high double, delta_weighted double, delta_weighted_ci_low double, "
           "delta_weighted_ci_high double, contract_fingerprint string")
    gdl = ("run_id string, baseline string, candidate string, guardrail string, source string, statistic string, "
           "better string, slice_dimension string, slice_value string, difference double, difference_ci_low double, "
           "difference_ci_high double, verdict string, contract_fingerprint string")
    keys = ("run_id", "baseline", "candidate")
    write_run_partitioned(spark.createDataFrame(comparison, cdl), Source(path=str(root / "comparison")), keys)
    write_run_partitioned(spark.createDataFrame(guardrails, gdl), Source(path=str(root / "guardrails")), keys)
    for run in sorted({r[0] for r in comparison}):
        mark_run(spark, Source(path=str(root / "run_status")), run, COMPLETE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=24)
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from ndcg_spark.agreement.statistics import summarize
    from ndcg_spark.config.agreement_spec import AgreementSpec
    from ndcg_spark.config.job import JobConfig
    from ndcg_spark.job.agreements import agreement_stage, read_history
    from ndcg_spark.job.session import build_session

    spark = build_session(master="local[2]", app_name="benchmark agreement", shuffle_partitions=4)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_history(spark, root, args.experiments)
        config = JobConfig.from_dict({
            "version": 2, "inputs": {"candidates": "nowhere"},
            "outputs": {"per_request": {"path": str(root / "per_request")},
                        "comparison": {"path": str(root / "comparison")},
                        "guardrails": {"path": str(root / "guardrails")},
                        "agreement": {"path": str(root / "agreement")}},
            "agreement": {"bootstrap": {"replicates": args.replicates}}})
        spec = AgreementSpec(replicates=args.replicates)
        for round_ in range(1, args.repeat + 1):
            started = time.perf_counter()
            rows = [r.asDict() for r in read_history(spark, config).collect()]
            history_s = time.perf_counter() - started
            started = time.perf_counter()
            summary = summarize(rows, spec)
            summary_s = time.perf_counter() - started
            started = time.perf_counter()
            agreement_stage(spark, config, f"bench-{round_}")
            stage_s = time.perf_counter() - started
            print(f"round {round_}: {args.experiments} experiments, {len(rows)} history rows, {len(summary)} summary "
                  f"rows: history {history_s:.1f} s, summary {summary_s:.1f} s, stage {stage_s:.1f} s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
