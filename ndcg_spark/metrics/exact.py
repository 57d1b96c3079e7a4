"""Exact, order-independent sums of doubles: 64-bit integer fixed point, signed terms allowed.

Spark adds the rows of a group in whatever order its partitions arrive, and a sum of doubles
depends on that order. A :class:`FixedPoint` sum does not: each term is rounded once, to a
fixed grid, and the grid points are added as integers -- exactly -- so the same terms give the
same bits under any partitioning. Aggregates and the paired comparison both sum this way.

Examples
--------
A signed sum equals Python's exact integer arithmetic on the same grid (terms truncated toward
zero, the integer total converted to a double once), lies within ``n`` steps of the grid of the
exact real sum (:func:`math.fsum`), and is the same bits whatever the partitioning:

>>> import math, random
>>> random.seed(3)
>>> terms = [random.uniform(-1.0, 1.0) * random.choice([1.0, 1e-9, 1e-17]) for _ in range(3000)]
>>> exact = FixedPoint.for_bound(1.0)
>>> df = spark.createDataFrame([(t,) for t in terms], "t double")
>>> def total(frame):
...     sums = frame.select(*exact.parts(F.col("t"), "t")).agg(*[F.sum(c).alias(c) for c in exact.names("t")])
...     return sums.select(exact.value("t")).first()[0]
>>> on_one, on_seven = total(df.repartition(1)), total(df.repartition(7))
>>> on_one == on_seven == exact.python_sum(terms)
True
>>> abs(on_one - math.fsum(terms)) <= len(terms) * exact.resolution
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

__all__ = ["FixedPoint"]

#: the largest possible term is scaled to just under 2^TERM_BITS
TERM_BITS = 56
#: a scaled term is split into ``T >> LOW_BITS`` and ``T & (2^LOW_BITS - 1)``
LOW_BITS = 28


@dataclass(frozen=True)
class FixedPoint:
    """Exact, order-independent sums of doubles as two 64-bit integer sums.

    A term ``t`` with ``|t| <= bound`` is scaled by ``2^exponent`` (a power of two, so exactly),
    so the largest possible term is just under 2^56, and cast to a long ``T`` (which truncates
    toward zero). ``T`` is split into ``high = T >> 28`` (an *arithmetic* shift: the floor of
    ``T / 2^28``, negative for a negative ``T``) and ``low = T & (2^28 - 1)`` (always in
    ``[0, 2^28)``), so ``high * 2^28 + low == T`` exactly, for negative terms as well. The halves
    (times a bootstrap count, or a sign) are summed as longs -- exact, so a sum does not depend
    on the order Spark adds rows in, hence on partitioning -- and recombined at the end.

    Resolution: one step of the grid, ``2^-exponent`` (at most 2^-55 of ``bound``; 2^-55, about
    2.8e-17, for an NDCG or an NDCG delta, ``bound = 1``) per term, truncated toward zero. The
    recombined double is the exact sum of the truncated terms, rounded once, while each half-sum
    stays below 2^53 (some 3 * 10^7 terms); beyond that it is rounded a little more, but still
    the same bits under any partitioning. Each half is below 2^28 per term, so the long sums hold
    about 10^9 terms per group even times a bootstrap count; past that the query fails (ANSI
    overflow), it never wraps around.

    Attributes
    ----------
    exponent : the scale, ``2^exponent`` per unit.
    """

    exponent: int

    @classmethod
    def for_bound(cls, bound: float) -> FixedPoint:
        """The scale for terms of absolute value at most ``bound`` (``bound >= 0``)."""
        _, e = math.frexp(max(float(bound), 2.0**-900))  # bound < 2^e
        return cls(exponent=max(-1000, min(1000, TERM_BITS - e)))

    @property
    def resolution(self) -> float:
        """One step of the grid: the most a term loses to truncation."""
        return 2.0**-self.exponent

    def parts(self, term: Column, name: str) -> list[Column]:
        """``term`` as two long columns ``{name}_h`` and ``{name}_l`` (null when ``term`` is null)."""
        # Python numbers as operands are Spark literals, as F.lit would make them (one JVM call fewer each)
        scaled = (term * 2.0**self.exponent).cast("long")
        return [
            F.shiftright(scaled, LOW_BITS).alias(f"{name}_h"),
            scaled.bitwiseAND((1 << LOW_BITS) - 1).alias(f"{name}_l"),
        ]

    @staticmethod
    def names(name: str) -> list[str]:
        """The two column names :meth:`parts` gives ``name``."""
        return [f"{name}_h", f"{name}_l"]

    def value(self, name: str) -> Column:
        """The recombined sum of columns ``{name}_h``/``{name}_l`` as a double (null if both are)."""
        # long x double: Spark casts the long to a double (no explicit cast: one JVM call fewer)
        return F.col(f"{name}_h") * 2.0 ** (LOW_BITS - self.exponent) + F.col(f"{name}_l") * 2.0**-self.exponent

    def python_sum(self, terms: Iterable[float]) -> float:
        """The same sum in plain Python (an oracle for tests): truncate each term to the grid,
        add as integers, convert once."""
        scale = 2.0**self.exponent
        total = sum(int(t * scale) for t in terms)  # int() truncates toward zero, like the cast
        return float(total) * 2.0**-self.exponent  # float(int) rounds to nearest, once
