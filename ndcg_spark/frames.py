"""Small DataFrame helpers shared by the stages."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from ndcg_spark.compat import (
    coalesces_cached_plans_safely,
    default_parallelism,
    estimated_bytes,
    is_connect,
    size_in_bytes,
)

# Spark's flag letting adaptive execution coalesce the shuffle partitions of a plan being cached;
# off by default on Spark 4, so a cached aggregate keeps spark.sql.shuffle.partitions (200)
# partitions and every later job over it runs 200 tasks of a few rows each.
CACHED_PLAN_PARTITIONING = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
#: adaptive execution's target size of a shuffle partition (Spark's default 64 MiB)
ADVISORY_PARTITION_SIZE = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
#: adaptive execution (on by default), which small inputs' own jobs are planned without
ADAPTIVE_EXECUTION = "spark.sql.adaptive.enabled"


def join_null_safe(left: DataFrame, right: DataFrame, keys: Sequence[str], how: str = "inner") -> DataFrame:
    """Join on ``keys`` treating null = null as a match (a null pool version or slice value is a
    value like any other), keeping the left side's key columns. Works for semi and anti joins too."""
    renamed = right.select(*[right[c].alias(f"_r_{c}") if c in keys else right[c] for c in right.columns])
    condition = None
    for key in keys:
        clause = left[key].eqNullSafe(renamed[f"_r_{key}"])
        condition = clause if condition is None else condition & clause
    return left.join(renamed, condition, how).drop(*[f"_r_{c}" for c in keys])


def whole_number_in(value: Column, low: float, high: float) -> Column:
    """Whether ``value`` is a whole number from ``low`` to ``high``: false for a number outside the
    range, NaN or infinite, null for null. ``floor`` is taken only of a value in range, so no value
    makes it fail (under ANSI mode ``floor`` of a double beyond a long's range is an overflow error,
    and Spark may evaluate a shared ``floor`` before the range check that guards it).

    >>> values = spark.createDataFrame([(2.0,), (2.5,), (1e300,), (float("inf"),), (float("nan"),), (None,)], "v double")
    >>> [r[0] for r in values.select(whole_number_in(F.col("v"), 0, 64)).collect()]
    [True, False, False, False, False, None]
    """
    in_range = (value >= F.lit(low)) & (value <= F.lit(high))  # NaN is above every number in Spark
    return in_range & (value == F.floor(F.when(in_range, value)))


def persist_coalesced(df: DataFrame) -> DataFrame:
    """``df.persist(MEMORY_AND_DISK)`` with adaptive execution free to coalesce the cached plan's
    shuffle partitions (:data:`CACHED_PLAN_PARTITIONING` set only while the plan is cached: Spark
    fixes it then; the session's own setting is restored after). Every job that reads the cache
    then runs a few tasks instead of ``spark.sql.shuffle.partitions`` nearly empty ones: on the
    sample, a groupBy over the cached per-request rows 6.4 s -> 0.3 s (docs/benchmarks-history.md).
    On Spark 3.5 the session's setting stays as it is
    (:func:`~ndcg_spark.compat.coalesces_cached_plans_safely`).

    The cached plan is this call's own: Spark answers any equal plan from a cache and knows nothing
    of the files under it, so a later call over a path read again after its files were rewritten
    would be answered with this call's rows. A filter that is always true and names a token of the
    call's own makes the plan unlike any other (the optimizer folds it away: it costs no row)."""
    token = F.lit(uuid.uuid4().hex)
    own = df.where(token == token)
    if not coalesces_cached_plans_safely(df.sparkSession):
        return own.persist(StorageLevel.MEMORY_AND_DISK)
    with session_setting(df.sparkSession, CACHED_PLAN_PARTITIONING, "true"):
        return own.persist(StorageLevel.MEMORY_AND_DISK)


@contextlib.contextmanager
def session_setting(spark, key: str, value: str) -> Iterator[None]:
    """``key`` set to ``value`` in ``spark``'s session inside the block; after it (also on an
    error) the session's own value back, or the key unset again if it was not set."""
    conf = spark.conf
    before = conf.get(key, None)
    conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            conf.unset(key)
        else:
            conf.set(key, before)


@contextlib.contextmanager
def shuffles_sized_to(*inputs: DataFrame | None) -> Iterator[None]:
    """Inside the block, the session's shuffles have one partition per core, planned without
    adaptive execution, when ``inputs`` fit in one advisory partition per core (Spark's size
    estimate of their plans, against ``spark.sql.adaptive.advisoryPartitionSizeInBytes``), instead
    of ``spark.sql.shuffle.partitions`` partitions planned adaptively. The session's settings are
    restored after, and left alone when the inputs are larger, their size unknown, the session a
    Spark Connect one or its partitions already that few.

    For the jobs a call runs itself (the input check, the dense plan's cached aggregation, a whole
    comparison): every map task of a shuffle writes one file per partition, so on the sample's
    20,000 requests Spark's default 200 partitions cost more than the rows; and adaptive execution
    runs each shuffle's map side as a job of its own and plans again after it, which on partitions
    already sized buys nothing (docs/benchmarks-history.md, rounds of 2026-12-03 evening and night). A
    cluster with more cores than that setting keeps both. The results do not depend on them: a
    request is scored on its own rows and every sum is exact. Like any session setting, they are
    seen by queries other threads plan meanwhile.

    >>> before = spark.conf.get("spark.sql.shuffle.partitions")
    >>> spark.conf.set("spark.sql.shuffle.partitions", "50")
    >>> with shuffles_sized_to(spark.range(1000)):
    ...     spark.conf.get("spark.sql.shuffle.partitions") == str(spark.sparkContext.defaultParallelism)
    ...     spark.conf.get("spark.sql.adaptive.enabled")
    True
    'false'
    >>> spark.conf.get("spark.sql.shuffle.partitions")
    '50'
    >>> spark.conf.set("spark.sql.shuffle.partitions", before)
    """
    frames = [df for df in inputs if df is not None]
    wanted = _partitions_for_small(frames) if frames else None
    if wanted is None:
        yield
        return
    spark = frames[0].sparkSession
    with (
        session_setting(spark, SHUFFLE_PARTITIONS, str(wanted)),
        session_setting(spark, ADAPTIVE_EXECUTION, "false"),
    ):
        yield


@contextlib.contextmanager
def shuffles_for_rows(spark, rows: int, per_partition: int = 10_000) -> Iterator[None]:
    """Inside the block, at least one shuffle partition per ``per_partition`` rows of the result to
    come (``rows``, known beforehand): for a shuffle whose result is as large as its input -- each
    request's whole lists, grouped -- where :func:`shuffles_sized_to`'s one partition per core would
    make a cached partition too large for an executor's heap (a 1 GiB driver at 4M candidate rows).
    A session with that many already keeps its setting.

    >>> before = spark.conf.get("spark.sql.shuffle.partitions")
    >>> spark.conf.set("spark.sql.shuffle.partitions", "2")
    >>> with shuffles_for_rows(spark, 200_000):
    ...     spark.conf.get("spark.sql.shuffle.partitions")
    '20'
    >>> with shuffles_for_rows(spark, 15_000):
    ...     spark.conf.get("spark.sql.shuffle.partitions")
    '2'
    >>> spark.conf.set("spark.sql.shuffle.partitions", before)
    """
    wanted = -(-rows // per_partition)
    if is_connect(spark) or wanted <= int(spark.conf.get(SHUFFLE_PARTITIONS)):
        yield
        return
    with session_setting(spark, SHUFFLE_PARTITIONS, str(wanted)):
        yield


def _partitions_for_small(frames: list[DataFrame]) -> int | None:
    """The session's cores when ``frames`` fit in one advisory partition per core and that is
    fewer than ``spark.sql.shuffle.partitions``; else None."""
    spark = frames[0].sparkSession
    if is_connect(spark):
        return None
    cores = default_parallelism(spark)
    if cores is None or cores >= int(spark.conf.get(SHUFFLE_PARTITIONS)):
        return None
    # the session's value, or Spark's default ("64MB")
    advisory = size_in_bytes(spark, spark.conf.get(ADVISORY_PARTITION_SIZE))
    return cores if sum(estimated_bytes(df) for df in frames) <= cores * advisory else None


def spread_over_cores(df: DataFrame, key: Column) -> DataFrame:
    """``df`` hash-partitioned by ``key`` over the session's default parallelism (its cores), for a
    step whose work per row is far more than its bytes (a row's replicates): adaptive execution
    sizes partitions by the bytes and puts a few thousand requests in one task, so a comparison's
    1000 replicates of them ran on one core while the other waited (the sample's: 20 s in one task).
    A Spark Connect client that is not told the server's parallelism leaves ``df`` as it is."""
    cores = default_parallelism(df.sparkSession)
    return df if cores is None else df.repartition(cores, key)


def collect_sorted(df: DataFrame, *keys: str) -> list[Row]:
    """``df.orderBy(*keys).collect()`` for a result of a few rows, sorted in Python instead: a
    global sort in Spark first samples its input to split it into ranges, a Spark job more (three
    more under adaptive execution) for rows that fit on a screen. Same order as Spark's ascending
    sort: nulls first, strings by code point (the order of their UTF-8 bytes).

    >>> rows = collect_sorted(spark.createDataFrame([("b", 2), (None, 3), ("a", 1)], "s string, n int"), "s")
    >>> [r.s for r in rows]
    [None, 'a', 'b']
    """
    return sorted(df.collect(), key=lambda row: nulls_first(*(row[key] for key in keys)))


def nulls_first(*values: object) -> tuple:
    """A Python sort key ordering ``values`` as Spark's ascending sort does: a null before any value."""
    return tuple((value is not None, value) for value in values)
