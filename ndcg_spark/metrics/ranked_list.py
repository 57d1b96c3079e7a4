"""One request's ranked list as a metric reads it, whichever plan built it (Spark columns).

Stage 1's plans hold a request's list in different shapes -- the collecting plan an array of
structs sorted in displayed order, the dense plan the gains decoded position by position, a request
a ranker returned nothing for no list at all -- and judge-next rescoring a list with one document
judged yet another. A :class:`RankedList` puts each behind the same few sums, so that a metric
(:mod:`ndcg_spark.measures`) is written once, against this class, and every plan scores it the same
way, to the same bits:

* :meth:`RankedList.discounted` -- a field summed over the top k with the log2 discount (DCG);
* :meth:`RankedList.counted` -- a boolean field counted over the top k (relevant documents);
* :meth:`RankedList.shown`, :meth:`RankedList.first`, :meth:`RankedList.precision_sum` -- the top
  k's length, the rank of its first relevant document, and average precision's numerator;
* :attr:`RankedList.ideal` -- the ideal's gains, largest first, and :attr:`RankedList.n_relevant`,
  the request's relevant documents, both from the contract's ideal source.

Under ``ties: average`` both sums are expected values over every order of each tie (McSherry &
Najork 2008): the items then carry ``tie_start`` and ``tie_size``.

>>> from pyspark.sql import functions as F
>>> lists = spark.createDataFrame([([(7.0, True), (0.0, False), (3.0, True)], [7.0, 3.0, 0.0], 2)],
...     "items array<struct<gain: double, relevant: boolean>>, ideal array<double>, r bigint")
>>> ranked = RankedList(F.col("items"), {"gain": lambda x: x["gain"], "relevant": lambda x: x["relevant"]},
...                     ideal=F.col("ideal"), n_relevant=F.col("r"))
>>> lists.select(F.round(ranked.discounted(3, "gain"), 4).alias("dcg"), ranked.counted(2, "relevant").alias("hits")).show()
+---+----+
|dcg|hits|
+---+----+
|8.5| 1.0|
+---+----+
<BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from pyspark.sql import Column
from pyspark.sql import functions as F

from ndcg_spark.metrics.dcg import count_top, dcg, expected_count, expected_dcg, precision_sum

__all__ = ["RankedList"]

Accessor = Callable[[Column], Column]


@dataclass(frozen=True)
class RankedList:
    """A request's ranked list: ``items`` in ranked order and, per field a metric reads (``gain``:
    null when unjudged; ``relevant``: a boolean), how to read it off an item -- or, where a plan
    holds a field in an array of its own (the dense plan), that array (``arrays``).

    Parameters
    ----------
    items : the ranked items (None: nothing was ranked, e.g. a ranker returned nothing).
    fields : field name -> accessor on an item.
    ideal : the ideal's gains, largest first (``array<double>``).
    n_relevant : the request's relevant documents under the ideal source (None: no metric reads it).
    tie_aware : the items carry ``tie_start`` / ``tie_size`` and the sums are expected values.
    arrays : field name -> an array of that field in ranked order, read instead of ``items``.
    length : how many items the list ranks, where ``items`` is padded (the dense plan's arrays hold
        every position up to max K); None: ``items``' size.
    """

    items: Column | None
    fields: Mapping[str, Accessor] = field(default_factory=dict)
    ideal: Column | None = None
    n_relevant: Column | None = None
    tie_aware: bool = False
    arrays: Mapping[str, Column] = field(default_factory=dict)
    length: Column | None = None

    @classmethod
    def nothing(cls, ideal: Column, n_relevant: Column | None = None) -> RankedList:
        """A list with no item (a request a ranker returned nothing for), over ``ideal``."""
        return cls(None, ideal=ideal, n_relevant=n_relevant)

    def with_ideal(self, ideal: Column, n_relevant: Column | None = None) -> RankedList:
        """The same items over another ideal (and relevant count, when given)."""
        return replace(self, ideal=ideal, n_relevant=self.n_relevant if n_relevant is None else n_relevant)

    def _source(self, name: str) -> tuple[Column, Accessor | None]:
        if name in self.arrays:
            return self.arrays[name], None
        if name not in self.fields:
            raise KeyError(f"this list has no field {name!r} (fields: {', '.join(sorted(self.fields))})")
        return self.items, self.fields[name]

    def discounted(self, k: int, name: str) -> Column:
        """``sum over p <= k of [name]_p / log2(p + 1)`` (a null counts 0): DCG@k of the gains."""
        if self.items is None and name not in self.arrays:
            return F.lit(0.0)
        values, accessor = self._source(name)
        if self.tie_aware:
            return expected_dcg(values, k, accessor)
        return dcg(values, k, accessor)

    def counted(self, k: int, name: str) -> Column:
        """How many of the top k have ``[name]`` true (a double; expected under ties)."""
        if self.items is None and name not in self.arrays:
            return F.lit(0.0)
        values, accessor = self._source(name)
        if self.tie_aware:
            return expected_count(values, k, accessor or (lambda x: x))
        return count_top(values, k, accessor)

    def shown(self, k: int) -> Column:
        """How many items the top k holds: ``min(k, the list's length)`` (an int)."""
        if self.items is None and self.length is None:
            return F.lit(0)
        length = self.length if self.length is not None else F.size(self.items)
        return F.least(length, F.lit(k)).cast("int")

    def first(self, k: int, name: str) -> Column:
        """The rank (1-based) of the first of the top k with ``[name]`` true; 0 when none is (an int)."""
        if self.items is None and name not in self.arrays:
            return F.lit(0)
        values, accessor = self._source(name)
        flags = F.slice(values if accessor is None else F.transform(values, accessor), 1, k)
        return F.array_position(flags, True).cast("int")  # a value, not a Column: pyspark 3.5 takes no Column here

    def precision_sum(self, k: int, name: str) -> Column:
        """``sum over p <= k with [name]_p true of (the true among the top p) / p``: average
        precision's numerator (a double)."""
        if self.items is None and name not in self.arrays:
            return F.lit(0.0)
        values, accessor = self._source(name)
        return precision_sum(values, k, accessor)

    def ideal_discounted(self, k: int) -> Column:
        """DCG@k of the ideal's gains."""
        return dcg(self.ideal, k)
