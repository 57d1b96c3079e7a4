"""DCG@k of a ranked array, and the other sums over a list's top k, as Column functions: the one DCG
(and the one count of relevant documents) every stage uses.

A position ``p = 1, 2, ...`` is discounted by ``1 / log2(p + 1)``. Up to k = :data:`UNROLL_MAX_K`
the sum is written out one term per position (plain expressions that whole-stage codegen
compiles, each discount a literal); above it, higher-order functions loop over the array
(evaluated interpreted, element by element). The two forms differ in the last bit for some
positions (Spark's ``log2`` and Python's round differently), so DCG@k, IDCG@k and the
comparison's ideal all call :func:`dcg` with the same k and get the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

#: Up to this k, the sums are written out one term per position.
UNROLL_MAX_K = 32


def dcg(values: Column, k: int, field: Callable[[Column], Column] | None = None) -> Column:
    """DCG@k of an array already in ranked order; a null gain, or a position past the end, counts 0.

    Parameters
    ----------
    values : an array column, in ranked order (the ideal: gains sorted descending).
    k : the cutoff (>= 1).
    field : picks the gain out of an element (e.g. ``lambda x: x["gain"]`` for an array of
        structs); ``None`` when the elements are the gains.

    Returns
    -------
    Column of doubles.

    Examples
    --------
    The SPEC's worked example (exponential gains of grades ``[1, 3, 0, 2]`` and their ideal), an
    empty list, and an unjudged (null) gain:

    >>> lists = spark.createDataFrame(
    ...     [("shown", [1.0, 7.0, 0.0, 3.0]), ("ideal", [7.0, 3.0, 1.0, 0.0]), ("empty", []),
    ...      ("unjudged", [None, 7.0])], "list string, gains array<double>")
    >>> lists.select("list", F.round(dcg(F.col("gains"), 3), 6).alias("dcg_3"),
    ...              F.round(dcg(F.col("gains"), 40), 6).alias("dcg_40")).show()
    +--------+--------+--------+
    |    list|   dcg_3|  dcg_40|
    +--------+--------+--------+
    |   shown|5.416508|6.708538|
    |   ideal|9.392789|9.392789|
    |   empty|     0.0|     0.0|
    |unjudged|4.416508|4.416508|
    +--------+--------+--------+
    <BLANKLINE>
    """
    if k > UNROLL_MAX_K:
        gains = values if field is None else F.transform(values, field)
        return F.aggregate(
            F.transform(F.slice(gains, 1, k), lambda g, i: F.coalesce(g, F.lit(0.0)) / F.log2(i + F.lit(2.0))),
            F.lit(0.0),
            lambda acc, x: acc + x,
        )
    total = None
    for p in range(k):
        element = F.get(values, p)
        value = field(element) if field is not None else element
        term = F.coalesce(value, F.lit(0.0)) / F.lit(math.log2(p + 2.0))
        total = term if total is None else total + term
    return total


def unjudged_bound_ideal(ideal: Column, n_unjudged: Column, gain: float, max_k: int) -> Column:
    """The ideal (gains sorted descending) if every unjudged candidate were judged at ``gain``:
    the positive gains of ``ideal`` (a list's ideal with the unjudged left out or at 0) and
    ``n_unjudged`` copies of ``gain`` (at most ``max_k``: no more can reach the top), largest
    first. Zeros are left out: they add nothing to a DCG, and both plans then build the same array.

    >>> lists = spark.createDataFrame([([7.0, 1.0, 0.0], 2), ([0.0], 0)], "ideal array<double>, n int")
    >>> lists.select(unjudged_bound_ideal(F.col("ideal"), F.col("n"), 3.0, 10).alias("high")).show()
    +--------------------+
    |                high|
    +--------------------+
    |[7.0, 3.0, 3.0, 1.0]|
    |                  []|
    +--------------------+
    <BLANKLINE>
    """
    positive = F.filter(ideal, lambda x: x > 0)
    if gain <= 0:
        return positive
    extra = F.array_repeat(F.lit(float(gain)), F.least(n_unjudged, F.lit(max_k)).cast("int"))
    return F.sort_array(F.concat(positive, extra), asc=False)


def discount_prefix(max_k: int) -> list[float]:
    """``D[j] = sum_{p=1..j} 1/log2(p+1)`` for j = 0..max_k (the cumulative log2 discount).

    >>> [round(d, 4) for d in discount_prefix(3)]
    [0.0, 1.0, 1.6309, 2.1309]
    """
    out = [0.0]
    for p in range(1, max_k + 1):
        out.append(out[-1] + 1.0 / math.log2(p + 1))
    return out


def expected_dcg(items: Column, k: int, field: Callable[[Column], Column] | None = None) -> Column:
    """Tie-aware DCG@k (McSherry & Najork 2008): the expected DCG over every order of each tie.

    ``items`` is an array of structs with ``gain`` (null counts 0), ``tie_start`` (how many items
    rank above the item's tie group) and ``tie_size`` (the group's size). An item of a group
    starting after ``s`` with ``n`` members adds ``gain / n * (D[min(s+n, k)] - D[s])``, with
    ``D`` the :func:`discount_prefix`. ``field`` picks the gain out of an item (default ``gain``).

    Examples
    --------
    Gains 7 and 1 tied at the top, then 3 (a tie's average, not its doc id order, counts):

    >>> items = spark.createDataFrame(
    ...     [([(7.0, 0, 2), (1.0, 0, 2), (3.0, 2, 1)],), ([(None, 0, 1)],)],
    ...     "items array<struct<gain: double, tie_start: int, tie_size: int>>")
    >>> items.select(F.round(expected_dcg(F.col("items"), 1), 6).alias("dcg_1"),
    ...              F.round(expected_dcg(F.col("items"), 3), 6).alias("dcg_3")).show()
    +-----+--------+
    |dcg_1|   dcg_3|
    +-----+--------+
    |  4.0|8.023719|
    |  0.0|     0.0|
    +-----+--------+
    <BLANKLINE>
    """
    d = F.array(*[F.lit(x) for x in discount_prefix(k)])

    def contribution(x: Column) -> Column:
        end = F.least(x["tie_start"] + x["tie_size"], F.lit(k)).cast("int")
        span = F.element_at(d, end + 1) - F.element_at(d, (x["tie_start"] + 1).cast("int"))
        return F.coalesce(x["gain"] if field is None else field(x), F.lit(0.0)) / x["tie_size"] * span

    return F.aggregate(
        F.filter(items, lambda x: x["tie_start"] < k),
        F.lit(0.0),
        lambda acc, x: acc + contribution(x),
    )


def count_top(values: Column, k: int, field: Callable[[Column], Column] | None = None) -> Column:
    """How many of the first k entries are true (``field`` picks a boolean out of an element; None:
    the elements are booleans); a null or a position past the end counts 0. A double, as DCG is
    (a count of relevant documents in the top k, summed the way :func:`dcg` sums gains).

    >>> flags = spark.createDataFrame([([True, False, True, None],), ([],)], "hits array<boolean>")
    >>> flags.select(count_top(F.col("hits"), 2).alias("top_2"), count_top(F.col("hits"), 40).alias("top_40")).show()
    +-----+------+
    |top_2|top_40|
    +-----+------+
    |  1.0|   2.0|
    |  0.0|   0.0|
    +-----+------+
    <BLANKLINE>
    """
    def one(x: Column) -> Column:
        value = field(x) if field is not None else x
        return F.when(value, F.lit(1.0)).otherwise(F.lit(0.0))

    if k > UNROLL_MAX_K:
        return F.aggregate(F.transform(F.slice(values, 1, k), one), F.lit(0.0), lambda acc, x: acc + x)
    total = None
    for p in range(k):
        term = one(F.get(values, p))
        total = term if total is None else total + term
    return total


def precision_sum(values: Column, k: int, field: Callable[[Column], Column] | None = None) -> Column:
    """``sum over p <= k with flag_p true of (the true flags among the first p) / p``: average
    precision's numerator (``field`` picks the boolean out of an element; None: the elements are
    booleans; a null or a position past the end is false). One pass over the first k.

    >>> flags = spark.createDataFrame([([True, False, True, None],), ([],)], "hits array<boolean>")
    >>> flags.select(F.round(precision_sum(F.col("hits"), 3), 6).alias("top_3")).show()
    +--------+
    |   top_3|
    +--------+
    |1.666667|
    |     0.0|
    +--------+
    <BLANKLINE>
    """
    flags = F.slice(values if field is None else F.transform(values, field), 1, k)
    start = F.struct(F.lit(0).alias("p"), F.lit(0).alias("hits"), F.lit(0.0).alias("total"))

    def step(acc: Column, flag: Column) -> Column:
        p, hits = acc["p"] + 1, acc["hits"] + F.when(flag, 1).otherwise(0)
        return F.struct(p.alias("p"), hits.alias("hits"),
                        (acc["total"] + F.when(flag, hits / p).otherwise(F.lit(0.0))).alias("total"))

    return F.aggregate(flags, start, step, lambda acc: acc["total"])


def expected_count(items: Column, k: int, field: Callable[[Column], Column]) -> Column:
    """Tie-aware count of the true ``field`` among the first k items (McSherry & Najork 2008): its
    expected value over every order of each tie. ``items`` as :func:`expected_dcg`'s; an item of a
    group starting after ``s`` with ``n`` members adds ``[field] / n * (min(s + n, k) - s)``.

    >>> items = spark.createDataFrame([([(True, 0, 2), (False, 0, 2), (True, 2, 1)],)],
    ...     "items array<struct<hit: boolean, tie_start: int, tie_size: int>>")
    >>> items.select(expected_count(F.col("items"), 1, lambda x: x["hit"]).alias("top_1"),
    ...              expected_count(F.col("items"), 3, lambda x: x["hit"]).alias("top_3")).show()
    +-----+-----+
    |top_1|top_3|
    +-----+-----+
    |  0.5|  2.0|
    +-----+-----+
    <BLANKLINE>
    """
    def contribution(x: Column) -> Column:
        span = F.least(x["tie_start"] + x["tie_size"], F.lit(k)) - x["tie_start"]
        return F.when(field(x), F.lit(1.0)).otherwise(F.lit(0.0)) / x["tie_size"] * span

    return F.aggregate(F.filter(items, lambda x: x["tie_start"] < k), F.lit(0.0), lambda acc, x: acc + contribution(x))


def count_unjudged(items: Column, k: int) -> Column:
    """How many of the first k items are unjudged (``judged`` false); an int column.

    ``items`` is an array of structs with a boolean ``judged`` field, in ranked order. Up to
    k = :data:`UNROLL_MAX_K` one term per position, above a higher-order function.

    >>> items = spark.createDataFrame([([(True,), (False,), (False,)],), ([],)], "items array<struct<judged: boolean>>")
    >>> items.select(count_unjudged(F.col("items"), 2).alias("top_2"),
    ...              count_unjudged(F.col("items"), 50).alias("top_50")).show()
    +-----+------+
    |top_2|top_50|
    +-----+------+
    |    1|     2|
    |    0|     0|
    +-----+------+
    <BLANKLINE>
    """
    if k > UNROLL_MAX_K:
        return F.size(F.filter(F.slice(items, 1, k), lambda x: ~x["judged"]))
    total = None
    for p in range(k):
        term = F.when(~F.get(items, p)["judged"], F.lit(1)).otherwise(F.lit(0))
        total = term if total is None else total + term
    return total.cast("int")
