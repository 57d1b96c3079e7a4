"""Tables from before the ``metric`` column: the columns they had, written on, and read back.

Until metrics were declared (``contract.metrics``) the aggregate, audit, comparison and trend tables
held NDCG alone, in columns named after it (``macro_ndcg``, ``baseline_ndcg_macro`` ...). They now
hold a row per metric, with a ``metric`` column and neutral names (``macro``, ``baseline_macro``).
Two things keep the older readers and the older nights working:

* :func:`with_legacy_columns`: the rows of the metric those tables held keep its columns under
  their old names (null on every other metric's rows), so a dashboard's ``SELECT macro_ndcg`` reads
  on, and an existing table gains columns -- it loses none;
* :func:`as_current`: a table read back, older nights among its rows, with the current columns:
  a row without a ``metric`` is that metric's, and its current columns are its old ones.

Each table declares its legacy columns once, beside its columns: ``{old name: (the current column
it copies, the metric of the row it is read from)}`` (e.g.
:data:`~ndcg_spark.aggregation.columns.AGGREGATE_LEGACY`).

>>> from pyspark.sql import functions as F
>>> rows = spark.createDataFrame([("bm25", "ndcg", 0.6), ("bm25", "ndcg_unjudged_low", 0.5), ("bm25", "recall", 0.4)],
...                              "system string, metric string, macro double")
>>> legacy = {"macro_ndcg": ("macro", "ndcg"), "macro_ndcg_unjudged_low": ("macro", "ndcg_unjudged_low")}
>>> with_legacy_columns(rows, legacy, ["system"]).orderBy("metric").show()
+------+-----------------+-----+----------+-----------------------+
|system|           metric|macro|macro_ndcg|macro_ndcg_unjudged_low|
+------+-----------------+-----+----------+-----------------------+
|  bm25|             ndcg|  0.6|       0.6|                    0.5|
|  bm25|ndcg_unjudged_low|  0.5|      NULL|                   NULL|
|  bm25|           recall|  0.4|      NULL|                   NULL|
+------+-----------------+-----+----------+-----------------------+
<BLANKLINE>
>>> old = spark.createDataFrame([("bm25", 0.6)], "system string, macro_ndcg double")
>>> as_current(old, legacy).select("system", "metric", "macro").show()
+------+------+-----+
|system|metric|macro|
+------+------+-----+
|  bm25|  ndcg|  0.6|
+------+------+-----+
<BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ndcg_spark.measures import LEGACY_METRIC

__all__ = ["LEGACY_METRIC", "as_current", "with_legacy_columns"]

Legacy = Mapping[str, tuple[str, str]]


def with_legacy_columns(df: DataFrame, legacy: Legacy, partition: Sequence[str]) -> DataFrame:
    """``df`` with each legacy column: on a :data:`LEGACY_METRIC` row, the current column it copies
    from the row of its metric in the same ``partition`` (every key of a row but the metric: the
    same row when that metric is the row's own); null elsewhere."""
    own = F.col("metric") == F.lit(LEGACY_METRIC)
    columns = {}
    for name, (source, metric) in legacy.items():
        if metric == LEGACY_METRIC:
            value = F.col(source)
        else:  # another row of the same group and slice: a window over the (small) result
            value = F.max(F.when(F.col("metric") == F.lit(metric), F.col(source))).over(
                Window.partitionBy(*[F.col(c) for c in partition]))
        columns[name] = F.when(own, value)
    return df.withColumns(columns)


def as_current(df: DataFrame, legacy: Legacy, renamed: Mapping[str, str] | None = None) -> DataFrame:
    """``df`` read back, with the current columns on every row: where a row has no ``metric`` (a
    night from before the column) it is :data:`LEGACY_METRIC`'s, and each current column a legacy
    one copies is taken from it; ``renamed`` (current -> old name) fills a renamed column the same
    way. Legacy columns copied from another metric's row (a what-if's) are left as they are."""
    present = set(df.columns)
    if "metric" not in present:
        df = df.withColumn("metric", F.lit(LEGACY_METRIC))
        present.add("metric")
    columns = {}
    for name, (source, metric) in legacy.items():
        if metric != LEGACY_METRIC or name not in present:
            continue
        columns[source] = F.coalesce(F.col(source), F.col(name)) if source in present else F.col(name)
    for current, old in (renamed or {}).items():
        if old in present:
            columns[current] = F.coalesce(F.col(current), F.col(old)) if current in present else F.col(old)
    metric = F.coalesce(F.col("metric"), F.lit(LEGACY_METRIC))
    return df.withColumns({"metric": metric, **columns})
