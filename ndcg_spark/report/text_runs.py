"""``ndcg-spark runs``: the run-status rows of the last runs as text (pure Python, no Spark).

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

__all__ = ["format_runs"]


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
    lines = [f"{kind} in {where}, most recently written first:",
             f"{'run':<20} {'status':<9} {'attempt':<13} {'started (UTC)':<17} {'ended (UTC)':<17} {'host':<13} "
             "Spark application"]
    for r in rows:
        lines.append(f"{_cell(r.get('run_id')):<20} {_cell(r.get('status')):<9} {_cell(r.get('attempt_id')):<13} "
                     f"{_cell(r.get('started_at')):<17} {_cell(r.get('ended_at')):<17} {_cell(r.get('host')):<13} "
                     f"{_cell(r.get('app_id'))}")
        if r.get("reason"):
            lines.append(f"  reason: {' '.join(str(r['reason']).split())}")
        changed = r.get("inputs_changed")
        if changed is not None:
            lines.append(f"  inputs changed since it read them: {'; '.join(changed)}" if changed else
                         "  inputs: as it read them")
    return "\n".join(lines)
