"""Resampling draws as pure functions of ``(seed, replicate, unit)``: Poisson counts and sign flips.

Every draw is an ``xxhash64`` of the seed, the replicate number and the resampling unit (a
request id, or a random group of requests), never ``rand()``: the same seed and data give the
same draws whatever the partitioning or the order rows arrive in, and two stages that draw for
the same unit (the aggregates and the paired comparison) draw the same counts.

:func:`expand_replicates` turns one row per unit into one row per unit x replicate carrying
its Poisson count (bootstrap) and its sign (sign-flip test); both stages expand this way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.frames import spread_over_cores

__all__ = [
    "cell_hash",
    "expand_replicates",
    "group_unit",
    "poisson_weight",
    "random_group",
    "random_group_units",
    "sign_flip",
]


def _poisson_cdf() -> tuple[float, ...]:
    """P(X <= j) for X ~ Poisson(1), j = 0, 1, ..., up to where a 53-bit uniform can still fall."""
    terms, out = [], []
    term = math.exp(-1.0)
    for j in range(40):
        if j:
            term /= j
        terms.append(term)
        cdf = math.fsum(terms)
        if cdf >= 1.0 - 2.0**-53:
            break
        out.append(cdf)
    return tuple(out)


_POISSON_CDF = _poisson_cdf()


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
    draw = F.when(u < F.lit(_POISSON_CDF[0]), F.lit(0))
    for j, threshold in enumerate(_POISSON_CDF[1:], start=1):
        draw = draw.when(u < F.lit(threshold), F.lit(j))
    return draw.otherwise(F.lit(len(_POISSON_CDF)))


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


def expand_replicates(
    units: DataFrame,
    unit: Column,
    seed: int,
    *,
    bootstrap: int = 0,
    sign_flips: int = 0,
    replicate: str = "_replicate",
    count: str = "_count",
    sign: str = "_sign",
) -> DataFrame:
    """Each row of ``units`` once per replicate ``1 .. max(bootstrap, sign_flips)``.

    Adds the replicate number (column ``replicate``), the unit's Poisson count (column ``count``,
    :func:`poisson_weight`; null past ``bootstrap``) when ``bootstrap`` and its sign (column
    ``sign``, :func:`sign_flip`; null past ``sign_flips``) when ``sign_flips``. A pure bootstrap
    (no sign flips) keeps only the rows drawn at least once: a unit drawn 0 times adds nothing.

    Examples
    --------
    >>> units = spark.createDataFrame([("a",), ("b",)], "id string")
    >>> out = expand_replicates(units, F.col("id"), 7, bootstrap=2, sign_flips=3)
    >>> out.groupBy("id").agg(F.count("_count").alias("draws"), F.count("_sign").alias("signs")).orderBy("id").show()
    +---+-----+-----+
    | id|draws|signs|
    +---+-----+-----+
    |  a|    2|    3|
    |  b|    2|    3|
    +---+-----+-----+
    <BLANKLINE>
    """
    n = max(bootstrap, sign_flips)
    if n < 1:
        raise ValueError("expand_replicates: give bootstrap or sign_flips a positive number of replicates")
    r = F.col(replicate)
    expanded = spread_over_cores(units, unit).select("*", F.explode(F.sequence(F.lit(1), F.lit(n))).alias(replicate))
    if bootstrap:
        draws = poisson_weight(seed, r, unit)
        expanded = expanded.withColumn(count, draws if bootstrap == n else F.when(r <= bootstrap, draws))
    if sign_flips:
        flips = sign_flip(seed, r, unit)
        expanded = expanded.withColumn(sign, flips if sign_flips == n else F.when(r <= sign_flips, flips))
    if not sign_flips:
        expanded = expanded.filter(F.col(count) > 0)
    return expanded
