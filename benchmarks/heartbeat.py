"""What the heartbeat costs a run: beats per minute and each beat's time (a read of the run-status
row and a one-row write), with the cores idle and with a stage keeping them busy.

    .venv/bin/python benchmarks/heartbeat.py --seconds 60 --heartbeat 5
    .venv/bin/python benchmarks/heartbeat.py --conf spark.scheduler.mode=FIFO   # Spark's default scheduling

In one ``local[2]`` session (Spark's defaults, 2 shuffle partitions), a run-status path table in a temporary
folder: the publishing bracket (:func:`ndcg_spark.publishing.lease.publishing`) around a block that
(``idle``) sleeps, then (``busy``) runs Spark jobs of many short tasks back to back for as long, as
a stage does. Each beat logs its time (the lease's debug line); the figures are their count per
minute and their mean and longest time. A beat's one-task jobs wait for a free core: in the fair
scheduler's pool of their own (the sessions ndcg-spark builds schedule FAIR) for one running task,
under FIFO (``--conf spark.scheduler.mode=FIFO``) behind every task the stage has not started --
the ``busy`` times show that wait. The default heartbeat is every 30 s: per minute, two beats.
"""

from __future__ import annotations

import argparse
import logging
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BEAT = re.compile(r"heartbeat of attempt \w+ \((\d+\.\d+) s\)")


class _Beats(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seconds: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = BEAT.search(record.getMessage())
        if found:
            self.seconds.append(float(found.group(1)))


def _measure(spark, status, spec, seconds: float, busy: bool) -> tuple[list[float], float]:
    from pyspark.sql import functions as F

    from ndcg_spark.publishing.lease import publishing
    from ndcg_spark.publishing.steps import step

    beats = _Beats()
    logger = logging.getLogger("ndcg_spark.publishing.lease")
    logger.addHandler(beats)
    logger.setLevel(logging.DEBUG)
    run_id = f"bench-{'busy' if busy else 'idle'}"
    nap = F.udf(lambda x: (time.sleep(0.05), x)[1], "long")
    started = time.monotonic()
    try:
        with publishing(spark, status, run_id, spec=spec):
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if busy:  # 400 tasks of 0.1 s on 2 cores: a stage with a backlog
                    with step(spark, run_id, "score"):
                        spark.range(0, 800, 1, 400).select(nap("id").alias("x")).agg(F.sum("x")).collect()
                else:
                    time.sleep(0.5)
    finally:
        logger.removeHandler(beats)
    return beats.seconds, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long each block runs (default 60)")
    parser.add_argument("--heartbeat", type=float, default=5, help="publishing.heartbeat_seconds (default 5)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    args = parser.parse_args()

    from ndcg_spark.config.publishing_spec import PublishingSpec
    from ndcg_spark.config.job import Source
    from ndcg_spark.job.session import build_session

    conf = dict(setting.split("=", 1) for setting in args.conf)
    spark = build_session(master="local[2]", app_name="heartbeat-bench", shuffle_partitions=2, conf=conf)
    spec = PublishingSpec(stale_after_minutes=max(10.0, args.heartbeat * 3 / 60), heartbeat_seconds=args.heartbeat)
    with tempfile.TemporaryDirectory() as folder:
        status = Source(path=str(Path(folder) / "run_status"))
        mode = spark.sparkContext.getConf().get("spark.scheduler.mode")
        print(f"pyspark {spark.version}, local[2], {mode} scheduling, a beat every {args.heartbeat:g} s, "
              f"{args.seconds:g} s per block")
        for busy in (False, True):
            times, elapsed = _measure(spark, status, spec, args.seconds, busy)
            if not times:
                print(f"{'busy' if busy else 'idle'}: no beat")
                continue
            print(f"{'busy' if busy else 'idle'}: {len(times) * 60 / elapsed:.1f} beats/min over {elapsed:.0f} s, each "
                  f"{statistics.mean(times):.2f} s mean, {max(times):.2f} s longest (a read and a one-row write); "
                  f"at the default 30 s: {2 * statistics.mean(times):.1f} s of beats per minute")
    spark.stop()


if __name__ == "__main__":
    main()
