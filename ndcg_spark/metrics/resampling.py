"""Resampling draws as pure functions of ``(seed, replicate, unit)``: Poisson counts and sign flips.

Every draw is an ``xxhash64`` of the seed, the replicate number and the resampling unit (a
request id, or a random group of requests), never ``rand()``: the same seed and data give the
same draws whatever the partitioning or the order rows arrive in, and two stages that draw for
the same unit (the aggregates and the paired comparison) draw the same counts.

:func:`replicate_sums` gives, per slice and replicate, the sums of every unit's terms times
its Poisson count (bootstrap) and times its sign (sign-flip test); both stages resample this way.
The draws are taken for a whole batch of units at once in numpy (:mod:`ndcg_spark.metrics.draws`,
the same bits as the columns :func:`poisson_weight` and :func:`sign_flip`), so no row per unit x
replicate is built: a unit costs its batch a column of a matrix product, not a thousand rows.
"""

from __future__ import annotations

import re

from collections.abc import Sequence
from functools import partial

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ndcg_spark.frames import spread_over_cores
from ndcg_spark.metrics.draws import POISSON_CDF, sums_of_batches

__all__ = [
    "cell_hash",
    "group_unit",
    "poisson_weight",
    "random_group",
    "random_group_units",
    "replicate_sums",
    "sign_flip",
]


def poisson_weight(seed: int, replicate: Column, unit: Column) -> Column:
    """How many times ``unit`` is drawn in bootstrap replicate ``replicate``: a Poisson(1) count.

    A pure function of ``(seed, replicate, unit)``: ``xxhash64(seed as bigint, replicate as int,
    unit as string)``, its top 53 bits as a uniform ``u`` in [0, 1), and the Poisson(1) inverse
    CDF of ``u`` as a ``CASE`` over the cumulative probabilities. Native Spark, no ``rand()``, so
    the draws do not depend on partitioning or on the order rows arrive in.

    Examples
    --------
    >>> draws = spark.range(20000).select(poisson_weight(7, F.lit(1), F.col("id")).alias("c"))
    >>> draws.select(F.round(F.avg("c"), 1).alias("mean"), F.round(F.variance("c"), 1).alias("var")).show()
    +----+---+
    |mean|var|
    +----+---+
    | 1.0|1.0|
    +----+---+
    <BLANKLINE>
    """
    h = F.xxhash64(F.lit(int(seed)).cast("long"), replicate.cast("int"), unit.cast("string"))
    u = F.shiftrightunsigned(h, 11).cast("double") * F.lit(2.0**-53)
    draw = F.when(u < F.lit(POISSON_CDF[0]), F.lit(0))
    for j, threshold in enumerate(POISSON_CDF[1:], start=1):
        draw = draw.when(u < F.lit(threshold), F.lit(j))
    return draw.otherwise(F.lit(len(POISSON_CDF)))


def sign_flip(seed: int, replicate: Column, unit: Column) -> Column:
    """The ±1 sign of one unit in one sign-flip replicate: a pure function of the three keys.

    The top bit of ``xxhash64(seed as bigint, "sign_flip", replicate as int, unit as string)``.
    Keyed by the request only (not the system), so both sides of a pair flip together.

    Examples
    --------
    >>> flips = spark.range(20000).select(sign_flip(7, F.lit(1), F.col("id").cast("string")).alias("s"))
    >>> flips.select(F.array_sort(F.collect_set("s")).alias("signs"), F.round(F.avg("s"), 1).alias("mean"),
    ...              F.round(F.variance("s"), 1).alias("var")).show()
    +-------+----+---+
    |  signs|mean|var|
    +-------+----+---+
    |[-1, 1]| 0.0|1.0|
    +-------+----+---+
    <BLANKLINE>
    """
    h = F.xxhash64(F.lit(int(seed)).cast("long"), F.lit("sign_flip"), replicate.cast("int"), unit.cast("string"))
    return F.lit(1) - F.lit(2) * F.shiftrightunsigned(h, 63).cast("int")


def random_group(seed: int, unit: Column, buckets: int) -> Column:
    """Which of ``buckets`` random groups ``unit`` falls in: ``pmod(xxhash64(seed, "group", unit), buckets)``.

    Drawing a group ``c`` times adds ``c`` times each member's terms, so with exact sums the
    random-group bootstrap resamples ``buckets`` units per slice cell whatever its size.

    Examples
    --------
    >>> groups = spark.range(16000).select(random_group(7, F.col("id").cast("string"), 16).alias("g"))
    >>> groups.groupBy("g").count().select(F.count("g").alias("groups"), (F.min("count") > 900).alias("even")).show()
    +------+----+
    |groups|even|
    +------+----+
    |    16|true|
    +------+----+
    <BLANKLINE>
    """
    return F.pmod(F.xxhash64(F.lit(int(seed)).cast("long"), F.lit("group"), unit), F.lit(buckets))


def cell_hash(columns: Sequence[str]) -> Column:
    """A hash of a row's slice cell (its values of ``columns``, null told apart from every value)."""
    return F.xxhash64(F.lit(0), *[F.coalesce(F.col(c), F.lit("\u0000")) for c in columns])


def group_unit(group: Column, cell_columns: Sequence[str]) -> Column:
    """The resampling unit of a random group: ``"<group>:<cell hash>"``, so the groups of different
    slice cells are drawn independently."""
    return F.concat_ws(":", group.cast("string"), cell_hash(cell_columns).cast("string"))


def random_group_units(
    units: DataFrame, unit: str, seed: int, buckets: int, cells: Sequence[str], terms: Sequence[str]
) -> DataFrame:
    """The random-group bootstrap's units: within each slice cell (the values of ``cells``), the
    rows of ``units`` hashed by their column ``unit`` into ``buckets`` groups (:func:`random_group`)
    and their ``terms`` summed, exactly (drawing a group ``c`` times adds ``c`` times each member's
    terms; flipping its sign flips all of them). The group is the new ``unit`` (:func:`group_unit`).

    Examples
    --------
    >>> rows = spark.createDataFrame([(f"q{i}", "rare" if i % 3 else "common", 1) for i in range(60)],
    ...                              "request_id string, rarity string, n long")
    >>> units = random_group_units(rows, "request_id", 7, 16, ["rarity"], ["n"])
    >>> units.groupBy("rarity").agg(F.sum("n").alias("requests"), (F.count("*") <= 16).alias("grouped")).orderBy(
    ...     "rarity").show()
    +------+--------+-------+
    |rarity|requests|grouped|
    +------+--------+-------+
    |common|      20|   true|
    |  rare|      40|   true|
    +------+--------+-------+
    <BLANKLINE>
    """
    group = random_group(seed, F.col(unit), buckets)
    return (
        units.groupBy(*cells, group.alias("_random_group"))
        .agg(*[F.sum(name).alias(name) for name in terms])
        .select(*cells, *terms, group_unit(F.col("_random_group"), cells).alias(unit))
    )


def replicate_sums(
    units: DataFrame,
    unit: str,
    seed: int,
    dimensions: Sequence[str],
    columns: Sequence[str],
    *,
    drawn: Sequence[str] = (),
    flipped: Sequence[str] = (),
    bootstrap: int = 0,
    sign_flips: int = 0,
    replicate: str = "_replicate",
) -> DataFrame:
    """Per replicate ``1 .. max(bootstrap, sign_flips)`` and slice -- the overall one and each
    value of each of ``dimensions`` (whose values ``columns`` hold), as
    :func:`~ndcg_spark.metrics.slices.roll_up` gives them: ``drawn_<t>``, the sum over the slice's
    units of their Poisson count x their term ``t`` (each of ``drawn``; null past ``bootstrap``),
    and ``flipped_<t>``, of their sign x ``t`` (each of ``flipped``; null past ``sign_flips``). A
    sum of no known term is null, as Spark's ``sum``.

    The terms are integers (fixed-point parts, counts): the sums are exact. A unit takes part in
    every replicate when there are sign flips, else only in those that draw it, so a pure bootstrap
    has no row for a slice and replicate that drew none of its units.

    Examples
    --------
    >>> units = spark.createDataFrame([("a", "x", 1), ("b", "x", 2), ("c", "y", 4)], "id string, cell string, n long")
    >>> sums = replicate_sums(units, "id", 7, ["cell"], ["cell"], drawn=["n"], flipped=["n"], bootstrap=2, sign_flips=3)
    >>> sums.orderBy("slice_dimension", "slice_value", "_replicate").show()
    +----------+---------------+-----------+-------+---------+
    |_replicate|slice_dimension|slice_value|drawn_n|flipped_n|
    +----------+---------------+-----------+-------+---------+
    |         1|           cell|          x|      1|       -1|
    |         2|           cell|          x|      1|       -3|
    |         3|           cell|          x|   NULL|        1|
    |         1|           cell|          y|      0|        4|
    |         2|           cell|          y|      4|        4|
    |         3|           cell|          y|   NULL|       -4|
    |         1|        overall|        all|      1|        3|
    |         2|        overall|        all|      5|        1|
    |         3|        overall|        all|   NULL|       -3|
    +----------+---------------+-----------+-------+---------+
    <BLANKLINE>
    """
    if max(bootstrap, sign_flips) < 1:
        raise ValueError("replicate_sums: give bootstrap or sign_flips a positive number of replicates")
    check_python_workers(units.sparkSession)
    terms = list(dict.fromkeys([*drawn, *flipped]))
    names = [*[f"drawn_{t}" for t in drawn], *[f"flipped_{t}" for t in flipped]]
    schema = T.StructType([
        T.StructField("slice_dimension", T.StringType(), False),
        T.StructField("slice_value", T.StringType(), True),
        T.StructField(replicate, T.IntegerType(), False),
        *[T.StructField(name, T.LongType(), True) for name in names],
    ])
    longs = {f.name for f in units.schema.fields if isinstance(f.dataType, T.LongType)}
    values = [f"_slice_{i}" for i in range(len(columns))]
    prepared = units.select(F.col(unit).cast("string").alias("_unit"),
                            *[F.col(c).cast("string").alias(v) for c, v in zip(columns, values)],
                            *[t if t in longs else F.col(t).cast("long").alias(t) for t in terms])
    from pyspark.sql.pandas.types import to_arrow_schema

    sums = partial(sums_of_batches, dimensions=tuple(dimensions), columns=tuple(values), drawn=tuple(drawn),
                   flipped=tuple(flipped), seed=int(seed), bootstrap=int(bootstrap), sign_flips=int(sign_flips),
                   schema=to_arrow_schema(schema))
    batches = spread_over_cores(prepared, F.col("_unit")).mapInArrow(sums, schema)
    # a slice and replicate comes in a row per batch of units: add them up
    return batches.groupBy(replicate, "slice_dimension", "slice_value").agg(*[F.sum(n).alias(n) for n in names])


#: the Spark applications whose Python workers have imported what the replicates need
_WORKERS_CHECKED: set[str] = set()


def _import_on_worker(batches):
    """Run on a Python worker: import what :func:`replicate_sums`' batches need there."""
    import numpy  # noqa: F401
    import pyarrow  # noqa: F401

    import ndcg_spark.metrics.draws  # noqa: F401

    yield from batches


def check_python_workers(spark) -> None:
    """Once per Spark application, a one-row job on a Python worker that imports what the
    replicates need there, so that a module the executors' Python lacks is one paragraph at the
    call that builds the replicates (:class:`~ndcg_spark.errors.ExecutorEnvironmentError`), not a
    long Java and Python trace at the first action."""
    from ndcg_spark.compat import application_id
    from ndcg_spark.errors import ExecutorEnvironmentError, WORKERS_NEED, describe_spark_error

    key = application_id(spark) or "unknown"
    if key in _WORKERS_CHECKED:
        return
    try:
        spark.range(1).mapInArrow(_import_on_worker, "id long").collect()
    except Exception as exc:  # noqa: BLE001 - only a missing module becomes the paragraph
        said = describe_spark_error(exc) or ""
        missing = re.search(r"ModuleNotFoundError: No module named '([^']+)'", said)
        if missing is None:
            raise
        raise ExecutorEnvironmentError(
            f"the Python workers of this Spark application cannot import {missing.group(1)!r}: {WORKERS_NEED}"
        ) from None
    _WORKERS_CHECKED.add(key)
