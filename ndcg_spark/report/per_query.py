"""A night's per-request values as trec_eval prints them with ``-q`` (pure Python).

``ndcg-spark show --per-request`` prints, per system, every request's value of every declared
metric at every K as ``measure<TAB>request<TAB>value`` lines (the measure's name padded to 22, the
value to 4 decimals), the requests in trec_eval's order (their ids as text), the measures in
trec_eval's (``recip_rank``, ``P``, ``recall``, ``ndcg_cut``, ``map_cut``, ``success``; then any
other), then trec_eval's ``all`` lines: ``runid`` (the system), ``num_q`` (the requests listed) and
each measure's mean over the requests that have its value — so a TREC user can ``diff`` it against
trec_eval's own output. A measure is named as trec_eval names it when the contract's parameters are
trec_eval's (:meth:`~ndcg_spark.measures.Metric.listing_name`); a request set aside (no ideal
under ``empty_ideal: exclude``, nothing returned under ``no_results: exclude``) has no line, as
trec_eval prints none for a query it did not score.

>>> from ndcg_spark.measures import METRICS
>>> rows = [{"request_id": "q2", "k": 5, "ndcg": 0.5, "reciprocal_rank": 1.0},
...         {"request_id": "q10", "k": 5, "ndcg": 0.25, "reciprocal_rank": 0.5},
...         {"request_id": "q3", "k": 5, "ndcg": None, "reciprocal_rank": None}]
>>> print("\\n".join(per_query_listing(rows, [METRICS["ndcg"](), METRICS["reciprocal_rank"](cutoff="deepest")],
...                                     "bm25")))  # doctest: +NORMALIZE_WHITESPACE
recip_rank            	q10	0.5000
ndcg_cut_5            	q10	0.2500
recip_rank            	q2	1.0000
ndcg_cut_5            	q2	0.5000
runid                 	all	bm25
num_q                 	all	2
recip_rank            	all	0.7500
ndcg_cut_5            	all	0.3750
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ndcg_spark.measures import Metric

__all__ = ["TREC_ORDER", "per_query_listing"]

#: the order trec_eval prints these measures in (``out.test.aq``)
TREC_ORDER = ("reciprocal_rank", "precision", "recall", "ndcg", "average_precision", "hit_rate")


def per_query_listing(rows: Iterable[Mapping[str, Any]], metrics: Sequence[Metric], system: Any) -> list[str]:
    """trec_eval's ``-q`` lines of one system's per-request rows (``request_id``, ``k`` and a
    column per metric), then its ``all`` lines."""
    ordered = sorted(metrics, key=lambda m: TREC_ORDER.index(m.name) if m.name in TREC_ORDER else len(TREC_ORDER))
    by_request: dict[str, dict[int, Mapping[str, Any]]] = {}
    for r in rows:
        by_request.setdefault(str(r["request_id"]), {})[int(r["k"])] = r
    lines, totals = [], {}
    for request in sorted(by_request):
        at = by_request[request]
        for name, value in _measures(at, ordered):
            if value is None:
                continue
            lines.append(_line(name, request, f"{value:.4f}"))
            totals.setdefault(name, []).append(value)
    listed = {request for request in by_request if any(v is not None for _, v in _measures(by_request[request], ordered))}
    lines += [_line("runid", "all", system), _line("num_q", "all", len(listed))]
    names = list(dict.fromkeys(name for at in by_request.values() for name, _ in _measures(at, ordered)))
    lines += [_line(name, "all", f"{sum(totals[name]) / len(totals[name]):.4f}") for name in names if name in totals]
    return lines


def _measures(at: Mapping[int, Mapping[str, Any]], metrics: Sequence[Metric]) -> list[tuple[str, Any]]:
    """A request's (measure name, value) pairs in listing order: each metric at each K; a measure
    without a K in its name (``recip_rank``) once, from the largest K's row."""
    out = []
    for metric in metrics:
        named = {}
        for k in sorted(at):
            named[metric.listing_name(k)] = at[k].get(metric.name)
        out += list(named.items())
    return out


def _line(name: str, request: Any, value: Any) -> str:
    return f"{name:<22}\t{request}\t{value}"
