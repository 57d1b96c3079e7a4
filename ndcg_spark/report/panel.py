"""Which metric a row of the aggregate, comparison or trend table is, and the order metrics are shown in
(pure Python): the CLI's summaries and the report show the headline metric as they always showed NDCG,
and the rest of the contract's metrics (the panel) beside it.

>>> rows = [{"metric": "recall", "k": 10}, {"k": 10}, {"metric": "ndcg_unjudged_low", "k": 10}]
>>> declared(rows), [metric_of(r) for r in rows]
(('ndcg', 'recall'), ['recall', 'ndcg', 'ndcg_unjudged_low'])
>>> declared(rows, ["recall", "ndcg"]), len(of_metric(rows, "ndcg"))
(('recall', 'ndcg'), 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ndcg_spark.measures import LEGACY_METRIC, measure_label, split_measure

__all__ = ["declared", "headline", "label", "metric_of", "of_metric"]

Row = Mapping[str, Any]


def metric_of(row: Row) -> str:
    """The row's ``metric`` (a row from before the column is the legacy metric's: NDCG)."""
    return row.get("metric") or LEGACY_METRIC


def declared(rows: Iterable[Row], metrics: Sequence[str] | None = None) -> tuple[str, ...]:
    """The metrics to show, the headline first: ``metrics`` (the contract's, in its order) when
    given, else those of the rows (what-ifs aside), the legacy metric first."""
    if metrics:
        return tuple(metrics)
    seen = dict.fromkeys(m for m in map(metric_of, rows) if split_measure(m)[1] is None)
    return tuple(sorted(seen, key=lambda m: m != LEGACY_METRIC))


def of_metric(rows: Iterable[Row], metric: str) -> list[Row]:
    """The rows of one metric (or what-if)."""
    return [r for r in rows if metric_of(r) == metric]


def label(metric: str, k: Any = None) -> str:
    """``NDCG@10`` (:func:`~ndcg_spark.measures.measure_label`)."""
    return measure_label(metric, k)


def headline(data: Mapping[str, Any]) -> str:
    """The report data's headline metric: the first of the run's metrics (NDCG by default)."""
    return (data.get("metrics") or [LEGACY_METRIC])[0]
