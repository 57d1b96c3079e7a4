"""(g) The floor under (a): the least Spark work for the whole job's outputs on the generated data.

(a) writes a per-request table (four K, the weight and three slices joined from the attributes
table) and then, read back from it, one aggregate row per K and slice with its counts, both means
and their bootstrap intervals over 1024 random groups of requests per slice cell. This does the
same with nothing that makes those numbers trustworthy on other data, so no plan producing them
can do less:

* stage 1: one read of the candidates and one hash aggregate per request (the DCG sums at each
  K assuming each request's positions are its ranks 1..M, the grade counts the ideal is looked up
  from assuming whole grades 0..3, the unjudged counts), the attributes joined as they are (one
  row per request assumed, not checked), four rows per request, the same columns written as
  Parquet;
* stage 2: one read of that table and one hash aggregate per K, slice cell and random group (the
  counts and plain double sums; no check, no exact sums, no row per request), collected; the
  Poisson replicates (numpy's generator), the slices and the percentiles in numpy on the driver;
  the rows written as Parquet.

Its NDCG@10 macro mean is (a)'s to rounding (tests/test_benchmarks_smoke.py); its intervals are
drawn differently, so they only match (a)'s in size.
"""

from __future__ import annotations

from pathlib import Path

from contenders import KS  # (a)'s K
from datagen import SLICES  # the generated attributes' slice columns

#: random groups per slice cell, as (a)'s AggregateSpec default
BUCKETS = 1024
#: the generated data's grades are whole numbers 0..3 (benchmarks/datagen.py)
TOP_GRADE = 3


def floor_per_request(candidates, attributes):
    """Stage 1's table from one hash aggregate per request, no check of anything (see the module)."""
    from pyspark.sql import functions as F

    from ndcg_spark.metrics.dcg import discount_prefix

    grade, pos = F.col("grade"), F.col("position")
    gain = F.pow(F.lit(2.0), grade) - F.lit(1.0)  # null when unjudged: not summed
    discount = F.lit(1.0) / F.log2(pos.cast("double") + F.lit(1.0))
    per_request = candidates.groupBy("request_id").agg(
        *[F.sum(F.when(pos <= k, gain * discount)).alias(f"dcg_{k}") for k in KS],
        *[F.count(F.when((pos <= k) & grade.isNull(), 1)).alias(f"u_{k}") for k in KS],
        *[F.count(F.when(grade == g, 1)).alias(f"c_{g}") for g in range(TOP_GRADE, 0, -1)],
        F.count(F.lit(1)).alias("n_candidates"),
        F.count(grade).alias("n_judged"),
        F.count(F.when(grade > 0, 1)).alias("n_positive"),
    )
    prefix = F.array(*[F.lit(d) for d in discount_prefix(max(KS))])  # D[n]: the first n discounts summed

    def discounts(n, k):
        return F.element_at(prefix, F.least(n, F.lit(k)).cast("int") + F.lit(1))

    def idcg(k):
        # the ideal: every grade-3 candidate first, then the 2s, then the 1s
        total, above, parts = F.lit(0), None, []
        for g in range(TOP_GRADE, 0, -1):
            total = total + F.col(f"c_{g}")
            lower = F.lit(0.0) if above is None else discounts(above, k)
            parts.append(F.lit(2.0**g - 1.0) * (discounts(total, k) - lower))
            above = total
        return sum(parts[1:], parts[0])

    per_k = F.explode(F.array(*[
        F.struct(F.lit(k).alias("k"), F.coalesce(F.col(f"dcg_{k}"), F.lit(0.0)).alias("dcg"), idcg(k).alias("idcg"),
                 F.col(f"u_{k}").cast("int").alias("n_unjudged_in_top_k"))
        for k in KS
    ])).alias("_k")
    joined = per_request.join(attributes.select("request_id", "weight", *SLICES), "request_id", "left")
    rows = joined.select("*", per_k)
    empty = F.col("_k.idcg") <= 0
    return rows.select(
        F.lit("bench").alias("run_id"), F.lit("bench").alias("system"), F.lit("bench").alias("pool_version"),
        F.col("request_id").cast("string").alias("request_id"), "_k.k", "_k.dcg", "_k.idcg",
        F.when(~empty, F.col("_k.dcg") / F.col("_k.idcg")).alias("ndcg"), empty.alias("empty_ideal"),
        F.lit(False).alias("no_results"),  # every request of the generated traffic has candidates
        "n_candidates", "n_judged", "n_positive", "_k.n_unjudged_in_top_k",
        F.lit(None).cast("double").alias("ndcg_unjudged_low"), F.lit(None).cast("double").alias("ndcg_unjudged_high"),
        F.coalesce(F.col("weight").cast("double"), F.lit(1.0)).alias("weight"), *SLICES,
        F.lit("floor").alias("contract_fingerprint"),
    )


#: per K, slice cell and random group, what stage 2's means and counts are summed from
_SUMS = ("n_requests", "n_eligible", "n_empty_ideal", "ndcg_sum", "weighted_ndcg_sum", "eligible_weight_sum",
         "unjudged_share_sum")


def floor_group_sums(per_request):
    """Stage 2's one pass: per K, slice cell and random group, the plain sums (see the module)."""
    from pyspark.sql import functions as F

    ndcg, weight = F.col("ndcg"), F.col("weight")
    group = F.pmod(F.xxhash64(F.col("request_id")), F.lit(BUCKETS)).alias("_group")
    share = F.col("n_unjudged_in_top_k") / F.least(F.col("k"), F.col("n_candidates"))
    return per_request.groupBy("k", *SLICES, group).agg(
        F.count(F.lit(1)).alias("n_requests"),
        F.count(ndcg).alias("n_eligible"),
        F.count(F.when(F.col("empty_ideal"), 1)).alias("n_empty_ideal"),
        F.sum(ndcg).alias("ndcg_sum"),
        F.sum(weight * ndcg).alias("weighted_ndcg_sum"),
        F.sum(F.when(ndcg.isNotNull(), weight)).alias("eligible_weight_sum"),
        F.sum(share).alias("unjudged_share_sum"),
    )


def floor_aggregates(sums, replicates: int, seed: int = 0, ci_level: float = 0.95) -> list[tuple]:
    """From the collected group sums (a pyarrow table): per K and slice -- the overall one and each
    value of each slice column -- the counts, both means and their percentile intervals over
    ``replicates`` Poisson(1) replicates of the (cell, group) units, as tuples."""
    import numpy as np

    columns = {name: sums.column(name).to_numpy(zero_copy_only=False) for name in sums.column_names}
    cells = np.stack([np.asarray(columns[c], dtype=object) for c in SLICES], axis=1)
    unit_keys = [tuple(row) + (g,) for row, g in zip(cells.tolist(), columns["_group"].tolist())]
    units = {key: i for i, key in enumerate(dict.fromkeys(unit_keys))}
    unit = np.fromiter((units[key] for key in unit_keys), dtype=np.int64, count=len(unit_keys))
    draws = np.random.default_rng(seed).poisson(1.0, size=(replicates, len(units))).astype(np.float64)
    values = np.stack([np.nan_to_num(np.asarray(columns[n], dtype=np.float64)) for n in _SUMS], axis=1)
    tail = (1.0 - ci_level) / 2.0
    unit_cells = np.array([key[:-1] for key in units], dtype=object)
    slices = [("overall", "all", np.ones(len(units), dtype=bool))]
    for d, name in enumerate(SLICES):
        for value in sorted({v for v in unit_cells[:, d] if v is not None}):
            slices.append((name, value, unit_cells[:, d] == value))
    out = []
    for k in KS:
        at_k = columns["k"] == k
        table = np.zeros((len(units), len(_SUMS)))
        np.add.at(table, unit[at_k], values[at_k])
        for dimension, value, mask in slices:
            point = table[mask].sum(axis=0)
            drawn = draws[:, mask] @ table[mask]
            n, x, wx, w = (drawn[:, _SUMS.index(c)] for c in ("n_eligible", "ndcg_sum", "weighted_ndcg_sum",
                                                                "eligible_weight_sum"))
            with np.errstate(invalid="ignore", divide="ignore"):
                macro, weighted = x / n, wx / w
            macro, weighted = macro[n > 0], weighted[w > 0]
            interval = [float(np.quantile(m, q)) for m in (macro, weighted) for q in (tail, 1.0 - tail)]
            n_requests, n_eligible, n_empty, x0, wx0, w0, share = point
            out.append((k, dimension, value, int(n_requests), int(n_eligible), int(n_empty),
                        *[float(v) for v in (x0 / n_eligible, wx0 / w0, share / n_requests)], *interval))
    return out


AGGREGATE_SCHEMA = ("k int, slice_dimension string, slice_value string, n_requests long, n_eligible long, "
                    "n_empty_ideal long, macro_ndcg double, weighted_ndcg double, unjudged_share double, "
                    "macro_ci_low double, macro_ci_high double, weighted_ci_low double, weighted_ci_high double")


def run(candidates, attributes, out: Path, replicates: int) -> float:
    """Both stages of the floor, written under ``out``; returns the end of stage 1 (perf_counter)."""
    import time

    spark = candidates.sparkSession
    floor_per_request(candidates, attributes).write.mode("overwrite").parquet(str(out / "floor_per_request"))
    stage1_end = time.perf_counter()
    sums = floor_group_sums(spark.read.parquet(str(out / "floor_per_request")))
    rows = floor_aggregates(arrow_of(sums), replicates)
    spark.createDataFrame(rows, AGGREGATE_SCHEMA).write.mode("overwrite").parquet(str(out / "floor_aggregates"))
    return stage1_end


def arrow_of(frame):
    """``frame`` collected as a pyarrow table (``toArrow`` from Spark 4.0, through pandas before)."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    import pyarrow as pa

    return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)
