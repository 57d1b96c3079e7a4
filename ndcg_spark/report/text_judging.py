"""A judging plan in words: how much of the unjudged spread its first documents settle (pure Python).

``ndcg-spark judge-next`` prints these lines and the report's "What to judge next" section
(:mod:`ndcg_spark.report.sections_judging`) shows the same numbers. A plan row's
``spread_remaining`` is the most of the target's spread any grading of the plan's documents so
far can leave, so ``spread_now - spread_remaining`` is what they settle *whatever the grades*.

>>> rows = [{"plan_rank": r, "target": "aggregate", "systems": ["hybrid"], "mean": "macro", "k": 10,
...          "request_id": f"q{r}", "doc_id": "d", "swing": 0.01 / r, "spread_now": 0.08,
...          "spread_remaining": 0.08 - 0.0001 * r, "remaining_exact": False,
...          "shown_by": [{"system": "hybrid", "pool_version": None, "rank": 2}]} for r in range(1, 151)]
>>> [(m["documents"], round(m["settled"], 4), round(m["share"], 4)) for m in milestones(rows)]
[(100, 0.01, 0.125), (150, 0.015, 0.1875)]
>>> print(judging_summary(rows))
unjudged spread of hybrid's macro NDCG@10: 0.0800; judging the first 100 documents leaves at most 0.0700 whatever the grades (settled: 12.5%), 150: 0.0650 (18.8%)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.config.judging_spec import MILESTONES, describe_target
from ndcg_spark.judging.files import shown_by_text

__all__ = ["describe_plan", "format_judging", "judging_summary", "milestones", "plan_head"]

Row = Mapping[str, Any]
#: rows of a plan's head shown by the CLI and the report
HEAD = 10


def describe_plan(row: Row) -> str:
    """What the plan of ``row`` settles: ``hybrid's macro NDCG@10``."""
    return describe_target(row["target"], row["systems"], row["mean"], row["k"])


def milestones(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """At each of :data:`MILESTONES` the plan reaches, and at its last row: ``documents``, the spread
    ``remaining`` (at most, whatever the grades), ``settled`` (at least) and its ``share`` of the
    spread now, and whether every grading leaves the same (``exact``)."""
    by_rank = {r["plan_rank"]: r for r in rows}
    if not by_rank:
        return []
    last = max(by_rank)
    ranks = [m for m in MILESTONES if m < last] + [last]
    out = []
    for rank in ranks:
        row = by_rank.get(rank)
        if row is None:
            continue
        now, remaining = row["spread_now"], row["spread_remaining"]
        out.append({"documents": rank, "remaining": remaining, "settled": now - remaining,
                    "share": (now - remaining) / now if now > 0 else None, "exact": row["remaining_exact"]})
    return out


def plan_head(rows: Sequence[Row], n: int = HEAD) -> list[Row]:
    """The plan's first ``n`` rows, in plan order."""
    return sorted((r for r in rows if r["plan_rank"] <= n), key=lambda r: r["plan_rank"])


def _share(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.1%}"


def judging_summary(rows: Sequence[Row]) -> str:
    """One line: the spread now and the most the plan's first 100 / 500 / 1,000 (and all its)
    documents can leave of it, with the share that settles whatever the grades (docs/judging.md)."""
    if not rows:
        return "judging plan: nothing unjudged reaches the target: no spread to settle"
    first = min(rows, key=lambda r: r["plan_rank"])
    steps = milestones(rows)
    said = ", ".join(f"{m['documents']:,}: {m['remaining']:.4f} ({_share(m['share'])})" for m in steps[1:])
    head = steps[0]
    return (f"unjudged spread of {describe_plan(first)}: {first['spread_now']:.4f}; judging the first "
            f"{head['documents']:,} document{'s' if head['documents'] != 1 else ''} leaves at most "
            f"{head['remaining']:.4f} whatever the grades (settled: {_share(head['share'])})" + (f", {said}" if said else ""))


def format_judging(rows: Sequence[Row], where: str, seconds: float, files: Sequence[str]) -> list[str]:
    """The CLI's lines: what was written, the summary, the head of the plan."""
    n = len(rows)
    lines = [f"judging plan {n:,} document{'s' if n != 1 else ''} -> {where} ({seconds:.1f} s); "
             f"for the judges: {', '.join(files)}", judging_summary(rows)]
    for r in plan_head(rows, 5):
        lines.append(f"  {r['plan_rank']:>3}. {r['request_id']} {r['doc_id']} ({shown_by_text(r['shown_by']) or 'not shown'})"
                     f" swing {r['swing']:.5f}")
    return lines
