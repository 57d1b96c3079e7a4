"""The metrics a contract declares (``contract.metrics``): one module each, every one a
:class:`~ndcg_spark.measures.base.Metric` that registers itself by its name when its module is
imported -- which this package does for every module in it. Pure Python at import.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module

from ndcg_spark.measures.base import (
    COMPONENTS,
    METRICS,
    Component,
    Metric,
    measure_label,
    parse_metrics,
    split_measure,
    what_if_names,
)

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        import_module(f"{__name__}.{_module.name}")

#: the metric a contract scores when it declares none, and the tables' only one before their ``metric`` column
LEGACY_METRIC: str = next(name for name, metric in METRICS.items() if metric.legacy)

__all__ = ["COMPONENTS", "LEGACY_METRIC", "METRICS", "Component", "Metric", "measure_label", "parse_metrics", "split_measure",
           "what_if_names"]
