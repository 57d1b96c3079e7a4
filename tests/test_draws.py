"""The resampling draws in numpy against Spark's own functions, and the replicate sums against an
expansion in Spark SQL (one row per unit x replicate, the draws from the column functions).

The oracle for the hash is Spark's ``xxhash64``; for the draws, :func:`poisson_weight` and
:func:`sign_flip` (Spark expressions); for the sums, Spark's ``sum`` over the expanded rows --
none of them numpy, so the arrays are checked against an implementation they do not share.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from ndcg_spark.metrics.draws import Draws, _cell_index, _Terms
from ndcg_spark.metrics.resampling import poisson_weight, replicate_sums, sign_flip
from ndcg_spark.metrics.xxhash import SPARK_SEED, Strings, hash_int, hash_long

_ALPHABET = "abc:-0123456789éß€😀"


def _strings(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 90))) for _ in range(n)]


def test_hash_is_sparks_xxhash64(spark):
    values = _strings(400, 1) + ["", "a", "sign_flip", "x" * 32, "y" * 64, "z" * 95]
    frame = spark.createDataFrame(list(enumerate(values)), "i int, v string")
    seed, replicates = -12345678901, [1, 2, 1000, -7, 2**31 - 1]
    rows = frame.select("i", *[
        F.xxhash64(F.lit(seed).cast("long"), F.lit(r).cast("int"), F.col("v")).alias(f"h{j}")
        for j, r in enumerate(replicates)
    ]).collect()
    hashed = Strings(values).hash(hash_int(np.array(replicates), hash_long(seed, SPARK_SEED))).view(np.int64)
    mismatched = [(r.i, j) for r in rows for j in range(len(replicates)) if hashed[j, r.i] != r[f"h{j}"]]
    assert not mismatched, mismatched[:5]


def test_draws_are_the_column_functions(spark):
    units = _strings(300, 2) + [f"{g}:{-4567891234567890123 + g}" for g in range(300)]
    replicates = np.arange(1, 41)
    frame = spark.createDataFrame([(u,) for u in units], "u string").select(
        "u", F.explode(F.sequence(F.lit(1), F.lit(40))).alias("r"))
    for seed in (7, -3, 2**40 + 1):
        draws = Draws(seed, units)
        counts, signs = draws.counts(replicates), draws.signs(replicates)
        index = {u: i for i, u in enumerate(units)}
        rows = frame.select("u", "r", poisson_weight(seed, F.col("r"), F.col("u")).alias("c"),
                            sign_flip(seed, F.col("r"), F.col("u")).alias("s")).collect()
        assert len(rows) == len(units) * 40
        assert all(counts[r.r - 1, index[r.u]] == r.c and signs[r.r - 1, index[r.u]] == r.s for r in rows)
        assert counts.max() >= 4 and set(np.unique(signs)) == {-1.0, 1.0}


def _oracle(units, seed, cells, drawn, flipped, bootstrap, sign_flips):
    """The sums from one row per unit x replicate x slice it belongs to, drawn by the column
    functions, summed by Spark."""
    n = max(bootstrap, sign_flips)
    r = F.col("_replicate")
    memberships = F.array(F.struct(F.lit("overall").alias("d"), F.lit("all").alias("v")),
                          *[F.struct(F.lit(c).alias("d"), F.col(c).cast("string").alias("v")) for c in cells])
    rows = units.select("*", F.explode(F.sequence(F.lit(1), F.lit(n))).alias("_replicate"),
                        F.explode(memberships).alias("_slice"))
    count = F.when(r <= bootstrap, poisson_weight(seed, r, F.col("u"))) if bootstrap else F.lit(None)
    sign = F.when(r <= sign_flips, sign_flip(seed, r, F.col("u"))) if sign_flips else F.lit(None)
    rows = rows.select("*", count.alias("_count"), sign.alias("_sign"))
    if not sign_flips:
        rows = rows.filter(F.col("_count") > 0)
    return rows.groupBy("_replicate", F.col("_slice.d").alias("slice_dimension"),
                        F.col("_slice.v").alias("slice_value")).agg(
        *[F.sum(F.col("_count") * F.col(t)).alias(f"drawn_{t}") for t in drawn],
        *[F.sum(F.col("_sign") * F.col(t)).alias(f"flipped_{t}") for t in flipped])


def _sorted_rows(frame):
    return sorted((tuple(row) for row in frame.collect()), key=repr)


@pytest.mark.parametrize("bootstrap, sign_flips", [(30, 0), (0, 25), (30, 30), (12, 30), (30, 9)])
def test_replicate_sums_are_an_expansions_sums(spark, bootstrap, sign_flips):
    rng = random.Random(bootstrap * 100 + sign_flips)
    data = []
    for i in range(500):
        a = rng.choice(["x", "y", None, "zé"])
        b = rng.choice([1, 2, None])
        big = rng.choice([None, rng.randint(-(2**40), 2**40)])
        data.append((f"q{i}" + "-" * rng.randint(0, 40), a, b, rng.randint(0, 2**28 - 1), big, rng.choice([1, None])))
    units = spark.createDataFrame(data, "u string, a string, b int, small long, big long, one int")
    cells, drawn, flipped = ["a", "b"], (["small", "big", "one"] if bootstrap else []), (["small", "big"] if sign_flips else [])
    expected = _sorted_rows(_oracle(units, 11, cells, drawn, flipped, bootstrap, sign_flips))
    assert len(expected) >= max(bootstrap, sign_flips) * 6  # the overall slice, 3 + 2 values (and null ones)
    for partitions in (1, 5):
        sums = replicate_sums(units.repartition(partitions), "u", 11, cells, cells, drawn=drawn, flipped=flipped,
                              bootstrap=bootstrap, sign_flips=sign_flips)
        assert _sorted_rows(sums) == expected


def test_exact_products_past_doubles_and_the_overflow_rule():
    rng = np.random.default_rng(5)
    weights = rng.integers(0, 6, size=(7, 300)).astype(np.float64)
    terms = rng.integers(-(2**50), 2**50, size=(300, 3), dtype=np.int64)  # sums pass 2^53: taken in longs
    exact = [[sum(int(w) * int(t) for w, t in zip(weights[r], terms[:, j])) for j in range(3)] for r in range(7)]
    assert _Terms(terms, 5.0).weighed(weights).tolist() == exact
    with pytest.raises(ArithmeticError, match="exact_sum_overflow"):
        _Terms(np.full((300, 1), 2**61, dtype=np.int64), 5.0).weighed(weights)


def test_cells_of_a_batch_are_its_distinct_value_combinations_however_many_columns():
    rng = random.Random(9)
    rows = [tuple(rng.choice([None, *range(5000)]) for _ in range(6)) for _ in range(20000)]
    batch = pa.RecordBatch.from_pydict({f"c{i}": [row[i] for row in rows] for i in range(6)})
    cell_of, first = _cell_index(batch, [f"c{i}" for i in range(6)])
    assert len(first) == len(set(rows))  # 5001^6 combinations: more than a 64-bit mixed-radix key holds
    assert all(rows[first[cell_of[i]]] == rows[i] for i in range(len(rows)))
