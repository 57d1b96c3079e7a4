"""The three contenders, each run as ``python benchmarks/contenders.py NAME --data DIR --result FILE``.

Each runs in a fresh process (the runner starts one per contender) so a Spark session, the JIT
and the OS page cache warmed by one contender's own work do not flatter the next one's. A result
is a JSON object: wall seconds of Spark start and of the work, peak memory, and the NDCG numbers
used to check that the contenders computed the same thing.

``ndcg_spark``  the library end to end: stage 1 (:func:`ndcg_spark.score_requests`, four K,
                weight and three slices from an attributes table) written as Parquet, then
                stage 2 (:func:`ndcg_spark.aggregation.means.aggregate`: every slice, bootstrap
                intervals) read from it and written.
``ndcg_spark_collecting``  the same with ``dense_plan=False`` (not run by default): every
                request's candidates collected into an array and sorted.
``ndcg_spark_recall``  (not run by default) ``ndcg_spark`` with ``contract.metrics: [ndcg, recall]``:
                recall@K's sums beside DCG's in the same pass, and its rows in stage 2.
``ndcg_spark_panel``  (not run by default) ``ndcg_spark`` with all six metrics declared
                (``ndcg, recall, precision, average_precision, reciprocal_rank, hit_rate``).
``floor``       (not run by default) the least Spark work for ``evaluator``'s number on this
                data: one read, one hash aggregate per request, no checks (:func:`floor_ndcg10_mean`).
``floor_job``   (not run by default) the least Spark work for ``ndcg_spark``'s outputs on this
                data: both stages with one unchecked aggregate each (``benchmarks/floor_job.py``).
``lazy_table``  (not run by default) ``ndcg_spark_evaluator_number``'s table as one lazy plan,
                exact for every request, without its job and cache (``benchmarks/lazy_table.py``).
``evaluator``   Spark's own ``pyspark.ml.evaluation.RankingEvaluator(metricName="ndcgAtK", k=10)``
                with the grouping it needs: per request, the doc ids in displayed order and the
                relevant doc ids, both as ``array<double>``.
``numpy``       one Python process, no Spark: the Parquet read with pyarrow, NDCG@10 with
                vectorised numpy (one stable argsort per ordering, segment sums with bincount).

``--check`` adds, outside the timed part, the binary-relevance NDCG@10 mean over all requests
(RankingEvaluator's definition: relevant = grade > 0, gain 1; ideal = the relevant documents;
a request with none scores 0 and still counts) so the three can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import sparkui  # benchmarks/ is not a package: these are run from there
from datagen import SLICES

K = 10
KS = (1, 3, 5, 10)
#: RankingEvaluator's relevance: any positive grade is relevant (the data's grades are 0..3).
BINARY_GAIN = {0: 0.0, 1: 1.0, 2: 1.0, 3: 1.0}


def _rss_mib() -> float:
    """Peak resident set of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process and its threads so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class JvmPeak:
    """The driver JVM's CPU seconds so far and its peak resident set (the kernel's high-water mark,
    VmHWM, read at the end); in ``local`` mode the driver JVM is also the executor."""

    def __init__(self, spark) -> None:
        self.pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the JVM has used so far: on a shared machine, a figure the
        other processes' load disturbs far less than wall time."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def mib(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
        except OSError:
            return None
        return None


def session(shuffle_partitions: int | None, conf: dict[str, str]):
    """A contender's session: this checkout's ``build_session`` on ``local[2]``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from ndcg_spark.job.session import build_session

    return build_session(master="local[2]", app_name="ndcg-spark-bench", shuffle_partitions=shuffle_partitions,
                         conf=conf)


# ----------------------------------------------------------------------------------- ndcg-spark
def run_ndcg_spark_collecting(args: argparse.Namespace) -> dict:
    """(a) with the dense-position plan switched off: every request's candidates collected and
    sorted (the plan the job uses for lists that are not in dense position order)."""
    return run_ndcg_spark(args, dense_plan=False)


def run_ndcg_spark_recall(args: argparse.Namespace) -> dict:
    """(a) with recall@K declared beside NDCG (``metrics: [ndcg, recall]``)."""
    return run_ndcg_spark(args, metrics=("ndcg", "recall"))


def run_ndcg_spark_panel(args: argparse.Namespace) -> dict:
    """(a) with the whole panel declared: NDCG, recall, precision, AP, RR and hit rate."""
    return run_ndcg_spark(args, metrics=("ndcg", "recall", "precision", "average_precision", "reciprocal_rank",
                                         "hit_rate"))


def _timed(args: argparse.Namespace, work, ready=None, after=None) -> dict:
    """Time ``work(spark, prepared)`` in a fresh session (``prepared``: what ``ready(spark)`` gave,
    untimed): Spark start apart from the work, the JVM's CPU seconds and peak memory. ``work``
    returns the result's fields, with ``stage1_end`` (a ``perf_counter`` reading) when it has two
    stages; ``after(spark)`` adds fields, untimed."""
    started = time.perf_counter()
    spark = session(args.shuffle_partitions, dict(args.conf))
    jvm = JvmPeak(spark)
    start_s = time.perf_counter() - started
    prepared = ready(spark) if ready else None
    # with --profile, where the work's time went: the JVM's counters at its start, Spark's UI after it
    before, work_started = sparkui.jvm_counters(spark) if args.profile else None, time.time()
    t0, cpu0 = time.perf_counter(), jvm.cpu_s()
    fields = work(spark, prepared)
    t1, cpu1 = time.perf_counter(), jvm.cpu_s()
    result = {"start_s": start_s, "work_s": t1 - t0, "work_cpu_s": cpu1 - cpu0}
    stage1_end = fields.pop("stage1_end", None)
    if stage1_end is not None:
        result.update(stage1_s=stage1_end - t0, stage2_s=t1 - stage1_end)
    result.update(fields)
    if after:
        result.update(after(spark))
    result["peak_jvm_mib"] = jvm.mib()
    result["peak_python_mib"] = _rss_mib()
    if args.profile:
        Path(args.profile).write_text(json.dumps(sparkui.collect(spark, work_started, before)))
    spark.stop()
    return result


def _overall(spark, aggregates: Path, replicates: int) -> dict:
    """The written aggregates' overall NDCG@10 row: its macro mean and counts, and how many rows."""
    from pyspark.sql import functions as F

    written = spark.read.parquet(str(aggregates))
    at = (F.col("slice_dimension") == "overall") & (F.col("k") == K)
    if "metric" in written.columns:  # the library's aggregate: a row per metric (the floor's holds NDCG alone)
        at &= F.col("metric") == "ndcg"
    overall = written.filter(at).first()
    return {"ndcg10_mean": overall["macro" if "macro" in written.columns else "macro_ndcg"],
            "n_requests": overall["n_requests"],
            "n_empty_ideal": overall["n_empty_ideal"], "aggregate_rows": written.count(), "replicates": replicates}


def run_ndcg_spark(args: argparse.Namespace, dense_plan: bool = True, metrics: tuple[str, ...] = ("ndcg",)) -> dict:
    data, out = Path(args.data), Path(args.out)

    def ready(spark):
        from ndcg_spark import Attributes

        return Attributes(table=spark.read.parquet(str(data / "attributes")), weight="weight", slices=SLICES)

    def work(spark, attributes) -> dict:
        from ndcg_spark import AggregateSpec, Contract, aggregate, score_requests

        candidates = spark.read.parquet(str(data / "candidates"))
        per_request = score_requests(candidates, contract=Contract(k=list(KS), metrics=metrics), run_id="bench", system="bench",
                                     pool_version="bench", attributes=attributes, dense_plan=dense_plan,
                                     validate=False)  # the metric alone, as the other contenders (no input checks)
        per_request.write.mode("overwrite").parquet(str(out / "per_request"))
        stage1_end = time.perf_counter()
        spec = AggregateSpec(slices=SLICES, replicates=args.replicates, min_eligible=30)
        aggregates = aggregate(spark.read.parquet(str(out / "per_request")), spec)
        aggregates.write.mode("overwrite").parquet(str(out / "aggregates"))
        return {"stage1_end": stage1_end}

    def after(spark) -> dict:
        fields = _overall(spark, out / "aggregates", args.replicates)
        fields["per_request_mib"] = sum(f.stat().st_size for f in (out / "per_request").rglob("*.parquet")) / 2**20
        if args.check:
            from pyspark.sql import functions as F

            from ndcg_spark import score_requests

            scored = score_requests(spark.read.parquet(str(data / "candidates")), contract=binary_contract())
            fields["binary_ndcg10_mean"] = scored.agg(F.avg("ndcg")).first()[0]
        return fields

    return _timed(args, work, ready, after)


def _one_mean(args: argparse.Namespace, mean_of) -> dict:
    """Time ``mean_of(spark, candidates)`` (one binary NDCG@10 mean) in a fresh session."""
    return _timed(args, lambda spark, _: {
        "binary_ndcg10_mean": mean_of(spark, spark.read.parquet(str(Path(args.data) / "candidates")))})


def binary_contract():
    """RankingEvaluator's NDCG as a contract: binary gain table, K = 10, unjudged 0, empty ideal 0."""
    from ndcg_spark import Contract

    return Contract(k=[K], gain={"table": BINARY_GAIN}, unjudged="zero", empty_ideal="zero")


def mean_evaluator_number(spark, candidates) -> float:
    """(e) RankingEvaluator's own number through ``score_requests`` (:func:`binary_contract`), the
    mean over every request -- like for like with (b)."""
    from pyspark.sql import functions as F

    from ndcg_spark import score_requests

    return score_requests(candidates, contract=binary_contract(), validate=False).agg(F.avg("ndcg")).first()[0]


def mean_lazy_table(spark, candidates) -> float:
    """(h) (e)'s table as one lazy plan: ``benchmarks/lazy_table.py``'s rows averaged."""
    from pyspark.sql import functions as F

    from lazy_table import lazy_table

    return lazy_table(candidates, binary_contract()).agg(F.avg("ndcg")).first()[0]


def run_ndcg_spark_evaluator_number(args: argparse.Namespace) -> dict:
    """(e) :func:`mean_evaluator_number`, timed in a fresh session."""
    return _one_mean(args, mean_evaluator_number)


def run_lazy_table(args: argparse.Namespace) -> dict:
    """(h) :func:`mean_lazy_table`, timed like (e)."""
    return _one_mean(args, mean_lazy_table)


def floor_ndcg10_mean(candidates) -> float:
    """(b)'s number (binary NDCG@10, a request with no relevant candidate scores 0 and counts) from
    one hash aggregate per request and no check of anything: the least Spark work for it. Valid
    only where each request's positions are its ranks 1..M, as in the generated data (the dense
    plan checks that per request before relying on it): the DCG is the sum of 1/log2(position + 1)
    over the relevant candidates at positions <= 10, the ideal a lookup by how many are relevant."""
    from pyspark.sql import functions as F

    from ndcg_spark.metrics.dcg import discount_prefix

    relevant = F.col("grade") > 0
    discount = F.lit(1.0) / F.log2(F.col("position").cast("double") + F.lit(1.0))
    ideal = F.array(*[F.lit(d) for d in discount_prefix(K)])  # the IDCG of n relevant: D[n]
    per_request = candidates.groupBy("request_id").agg(
        F.sum(F.when(relevant & (F.col("position") <= K), discount).otherwise(0.0)).alias("dcg"),
        F.least(F.count(F.when(relevant, 1)), F.lit(K)).alias("n_relevant"),
    )
    ndcg = F.when(F.col("n_relevant") > 0, F.col("dcg") / F.element_at(ideal, F.col("n_relevant").cast("int") + 1))
    return per_request.agg(F.avg(F.coalesce(ndcg, F.lit(0.0)))).first()[0]


def run_floor_job(args: argparse.Namespace) -> dict:
    """(g) The floor under (a): ``benchmarks/floor_job.py``'s two stages, timed like (a)."""
    import floor_job

    data, out = Path(args.data), Path(args.out)

    def ready(spark):
        return spark.read.parquet(str(data / "attributes"))

    def work(spark, attributes) -> dict:
        return {"stage1_end": floor_job.run(spark.read.parquet(str(data / "candidates")), attributes, out,
                                            args.replicates)}

    return _timed(args, work, ready, lambda spark: _overall(spark, out / "floor_aggregates", args.replicates))


def mean_floor(spark, candidates) -> float:
    """(f) The floor under (e): :func:`floor_ndcg10_mean`."""
    return floor_ndcg10_mean(candidates)


def run_floor(args: argparse.Namespace) -> dict:
    """(f) :func:`mean_floor`, timed like (b)."""
    return _one_mean(args, mean_floor)


# ------------------------------------------------------------------------- RankingEvaluator
def mean_evaluator(spark, candidates) -> float:
    """(b) Spark's own ``RankingEvaluator`` with the grouping it needs (the module's docstring)."""
    from pyspark.ml.evaluation import RankingEvaluator
    from pyspark.sql import functions as F

    doc = F.col("doc_id").cast("double")
    grouped = candidates.groupBy("request_id").agg(
        # the doc ids in displayed order (position, then doc id) ...
        F.transform(F.sort_array(F.collect_list(F.struct(F.col("position"), doc.alias("doc")))),
                    lambda x: x["doc"]).alias("prediction"),
        # ... and the relevant ones (collect_list skips the nulls of the others)
        F.collect_list(F.when(F.col("grade") > 0, doc)).alias("label"),
    )
    evaluator = RankingEvaluator(metricName="ndcgAtK", k=K, predictionCol="prediction", labelCol="label")
    return evaluator.evaluate(grouped)


def run_evaluator(args: argparse.Namespace) -> dict:
    """(b) :func:`mean_evaluator`, timed in a fresh session."""
    return _one_mean(args, mean_evaluator)


#: The contenders that compute one number, RankingEvaluator's, each as ``mean_of(spark, candidates)``
#: (``benchmarks/warm.py`` runs them in one session).
ONE_MEAN = {"floor": mean_floor, "ndcg_spark_evaluator_number": mean_evaluator_number,
            "lazy_table": mean_lazy_table, "evaluator": mean_evaluator}


# ------------------------------------------------------------------------------------ numpy
def _segments(sorted_request_ids):
    """Segment number of every row and each row's 0-based rank within its segment."""
    import numpy as np

    n = sorted_request_ids.shape[0]
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(sorted_request_ids[1:], sorted_request_ids[:-1], out=new[1:])
    segment = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    rank = np.arange(n) - starts[segment]
    return segment, rank, starts.shape[0]


def _dcg_at_k(segment, rank, gains, n_segments: int, k: int):
    import numpy as np

    top = rank < k
    weights = gains[top] / np.log2(rank[top] + 2.0)
    return np.bincount(segment[top], weights=weights, minlength=n_segments)


def numpy_ndcg(request_id, doc_id, position, gains, k: int):
    """Per-request (DCG@k, IDCG@k) of one flat table; requests in ascending id order.

    Displayed order: position, then doc id; ideal: the request's gains descending. One stable
    argsort per ordering on a composite 63-bit integer key (request id, position) -- the doc id
    is needed only where a request repeats a position, and then ``lexsort`` takes all three.
    """
    import numpy as np

    rid = request_id.astype(np.int64, copy=False)
    pos = position.astype(np.int64, copy=False)
    bits_pos = max(1, int(pos.max()).bit_length())
    bits_rid = max(1, int(rid.max()).bit_length())
    shown = None
    if rid.min() >= 0 and pos.min() >= 0 and bits_rid + bits_pos < 63:
        key = (rid << bits_pos) | pos
        shown = np.argsort(key, kind="stable")
        sorted_key = key[shown]
        if np.any(sorted_key[1:] == sorted_key[:-1]):
            shown = None
        del key, sorted_key
    if shown is None:
        shown = np.lexsort((doc_id, pos, rid))
    segment, rank, n_segments = _segments(rid[shown])
    dcg = _dcg_at_k(segment, rank, gains[shown], n_segments, k)
    del shown
    levels, code = np.unique(gains, return_inverse=True)
    if len(levels) < 256 and bits_rid < 55:
        ideal = np.argsort((rid << 8) | (len(levels) - 1 - code), kind="stable")
    else:
        ideal = np.lexsort((-gains, rid))
    idcg = _dcg_at_k(segment, rank, gains[ideal], n_segments, k)
    return dcg, idcg


def run_numpy(args: argparse.Namespace) -> dict:
    import numpy as np
    import pyarrow.parquet as pq

    t0, cpu0 = time.perf_counter(), _cpu_s()
    table = pq.read_table(str(Path(args.data) / "candidates"), columns=["request_id", "doc_id", "position", "grade"])
    request_id = table.column("request_id").to_numpy()
    doc_id = table.column("doc_id").to_numpy()
    position = table.column("position").to_numpy()
    grade = table.column("grade").to_numpy(zero_copy_only=False)  # null -> NaN: unjudged
    del table
    judged = ~np.isnan(grade)
    gains = np.where(judged, np.exp2(np.where(judged, grade, 0.0)) - 1.0, 0.0)
    dcg, idcg = numpy_ndcg(request_id, doc_id, position, gains, K)
    eligible = idcg > 0
    mean = float(np.mean(dcg[eligible] / idcg[eligible]))
    t1, cpu1 = time.perf_counter(), _cpu_s()
    result = {
        "start_s": 0.0,
        "work_s": t1 - t0,
        "work_cpu_s": cpu1 - cpu0,
        "ndcg10_mean": mean,
        "n_requests": int(idcg.shape[0]),
        "n_empty_ideal": int((~eligible).sum()),
    }
    if args.check:
        binary = np.where(judged & (np.nan_to_num(grade) > 0), 1.0, 0.0)
        bdcg, bidcg = numpy_ndcg(request_id, doc_id, position, binary, K)
        per_request = np.divide(bdcg, bidcg, out=np.zeros_like(bdcg), where=bidcg > 0)
        result["binary_ndcg10_mean"] = float(per_request.mean())
    result["peak_python_mib"] = _rss_mib()
    result["peak_jvm_mib"] = None
    return result


CONTENDERS = {"ndcg_spark": run_ndcg_spark, "ndcg_spark_collecting": run_ndcg_spark_collecting,
              "ndcg_spark_recall": run_ndcg_spark_recall,
              "ndcg_spark_panel": run_ndcg_spark_panel,
              "ndcg_spark_evaluator_number": run_ndcg_spark_evaluator_number,
              "floor": run_floor, "floor_job": run_floor_job, "lazy_table": run_lazy_table,
              "evaluator": run_evaluator, "numpy": run_numpy}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("contender", choices=sorted(CONTENDERS))
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--result", required=True)
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--shuffle-partitions", type=int, default=None)
    parser.add_argument("--conf", action="append", type=lambda s: tuple(s.split("=", 1)), default=[])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--profile", default=None, metavar="FILE",
                        help="with Spark's UI on, write where the work's time went to FILE (benchmarks/breakdown.py)")
    args = parser.parse_args(argv)
    if args.profile:
        if args.contender == "numpy":
            parser.error("--profile: numpy runs no Spark")
        args.conf.append(("spark.ui.enabled", "true"))
    result = CONTENDERS[args.contender](args)
    result["contender"] = args.contender
    Path(args.result).write_text(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
