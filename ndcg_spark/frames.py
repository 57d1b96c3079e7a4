"""Small DataFrame helpers shared by the stages."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame


def join_null_safe(left: DataFrame, right: DataFrame, keys: Sequence[str], how: str = "inner") -> DataFrame:
    """Join on ``keys`` treating null = null as a match (a null pool version or slice value is a
    value like any other), keeping the left side's key columns. Works for semi and anti joins too."""
    renamed = right.select(*[right[c].alias(f"_r_{c}") if c in keys else right[c] for c in right.columns])
    condition = None
    for key in keys:
        clause = left[key].eqNullSafe(renamed[f"_r_{key}"])
        condition = clause if condition is None else condition & clause
    return left.join(renamed, condition, how).drop(*[f"_r_{c}" for c in keys])
