"""``ndcg-spark runs``: the run-status rows of the last runs (and ``--attempts``: every attempt
of them) as text (pure Python, no Spark).

>>> import datetime as dt
>>> t = dt.datetime(2026, 12, 1, 2, 13, tzinfo=dt.timezone.utc)
>>> print(format_runs([
...     {"run_id": "2026-12-01", "status": "failed", "attempt_id": "9f8e7d6c5b4a", "started_at": t,
...      "ended_at": t + dt.timedelta(minutes=4), "app_id": "app-20261201021300-0007", "host": "edge-1",
...      "reason": "stage 1: Spark could not read the input\\n(run again with --debug for the full trace)"},
...     {"run_id": "2026-11-30", "status": "complete", "attempt_id": None, "started_at": None,
...      "ended_at": None, "app_id": None, "host": None, "reason": None,
...      "inputs_changed": ["inputs.candidates (table lake.c): delta version 3 then, delta version 5 now"]},
...     {"run_id": "2026-11-29", "status": "complete", "attempt_id": None, "started_at": None,
...      "ended_at": None, "app_id": None, "host": None, "reason": None, "inputs_changed": []},
... ], "parquet /w/run_status"))
runs in parquet /w/run_status, most recently written first:
run                  status    attempt       started (UTC)     ended (UTC)       host          Spark application
2026-12-01           failed    9f8e7d6c5b4a  2026-12-01 02:13  2026-12-01 02:17  edge-1        app-20261201021300-0007
  reason: stage 1: Spark could not read the input (run again with --debug for the full trace)
2026-11-30           complete  -             -                 -                 -             -
  inputs changed since it read them: inputs.candidates (table lake.c): delta version 3 then, delta version 5 now
2026-11-29           complete  -             -                 -                 -             -
  inputs: as it read them
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["attempts_summary", "format_attempts", "format_runs"]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def format_runs(rows: Sequence[Mapping[str, Any]], where: str, only: str | None = None) -> str:
    """One line per run (its latest attempt), the reason under a failed one, and under a published
    one whose inputs were recorded whether they changed since (a row's ``inputs_changed``: the
    changed inputs, in words); ``only``: the status the rows were chosen by (``failed``), for the
    heading."""
    kind = f"{only} runs" if only else "runs"
    if not rows:
        return f"no {kind[:-1]} in {where}"
    columns = (("run", "run_id", 20), ("status", "status", 9), ("attempt", "attempt_id", 13),
               ("started (UTC)", "started_at", 17), ("ended (UTC)", "ended_at", 17), ("host", "host", 13),
               ("Spark application", "app_id", 0))
    return "\n".join([f"{kind} in {where}, most recently written first:", *_table(rows, columns)])


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, int]]) -> list[str]:
    """A header and a line per row (``columns``: title, key, width; the last one unpadded), with the
    row's reason, when it has one, on the line under it."""
    def line(cells: Sequence[str]) -> str:
        return " ".join(f"{c:<{w}}" if w else c for c, (_, _, w) in zip(cells, columns))

    lines = [line([title for title, _, _ in columns])]
    for r in rows:
        lines.append(line([_cell(r.get(key)) for _, key, _ in columns]))
        if r.get("reason"):
            lines.append(f"  reason: {' '.join(str(r['reason']).split())}")
        changed = r.get("inputs_changed")
        if changed is not None:
            lines.append(f"  inputs changed since it read them: {'; '.join(changed)}" if changed else
                         "  inputs: as it read them")
    return lines


def format_attempts(rows: Sequence[Mapping[str, Any]], where: str) -> str:
    """One line per attempt (the rows of :func:`ndcg_spark.publishing.attempts.recent_attempts`: the newest
    run first, its attempts in the order they started), and the reason under one that did not complete.

    >>> import datetime as dt
    >>> t = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.timezone.utc)
    >>> print(format_attempts([
    ...     {"run_id": "2026-12-01", "attempt_id": "0a1b2c3d4e5f", "outcome": "interrupted", "started_at": t,
    ...      "ended_at": t + dt.timedelta(minutes=9), "last_step": "score", "host": "edge-1", "pid": 4242,
    ...      "app_id": "local-1", "reason": "terminated by SIGTERM"},
    ...     {"run_id": "2026-12-01", "attempt_id": "9f8e7d6c5b4a", "outcome": "complete",
    ...      "started_at": t + dt.timedelta(minutes=10), "ended_at": t + dt.timedelta(minutes=31),
    ...      "last_step": "publish", "host": "edge-2", "pid": 77, "app_id": "local-2", "reason": None},
    ... ], "parquet /w/run_attempts"))
    attempts in parquet /w/run_attempts, the most recent run first:
    run                  attempt       outcome      started (UTC)     ended (UTC)       last step   host          pid      Spark application
    2026-12-01           0a1b2c3d4e5f  interrupted  2026-12-01 02:00  2026-12-01 02:09  score       edge-1        4242     local-1
      reason: terminated by SIGTERM
    2026-12-01           9f8e7d6c5b4a  complete     2026-12-01 02:10  2026-12-01 02:31  publish     edge-2        77       local-2
    """
    if not rows:
        return f"no attempt in {where}"
    columns = (("run", "run_id", 20), ("attempt", "attempt_id", 13), ("outcome", "outcome", 12),
               ("started (UTC)", "started_at", 17), ("ended (UTC)", "ended_at", 17), ("last step", "last_step", 11),
               ("host", "host", 13), ("pid", "pid", 8), ("Spark application", "app_id", 0))
    return "\n".join([f"attempts in {where}, the most recent run first:", *_table(rows, columns)])


def attempts_summary(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """How many attempts a run took, and how each ended (None: no attempt on record).

    >>> attempts_summary([{"outcome": "interrupted"}, {"outcome": "abandoned"}, {"outcome": "complete"}])
    '3 attempts: 1 interrupted, 1 abandoned, 1 complete'
    >>> attempts_summary([{"outcome": "complete"}])
    '1 attempt: complete'
    """
    if not rows:
        return None
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r.get("outcome"))] = counts.get(str(r.get("outcome")), 0) + 1
    if len(rows) == 1:
        return f"1 attempt: {rows[0].get('outcome')}"
    return f"{len(rows)} attempts: " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
