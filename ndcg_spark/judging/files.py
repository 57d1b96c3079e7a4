"""The judges' files of a judging plan: a TREC qrels template and a CSV (pure Python, no Spark).

Both list the plan's documents in plan order. The qrels template has a line ``qid 0 docno ?``
per document, for the judges to replace ``?`` with a grade; read back unfilled, a line breaks the
rule ``trec_not_numeric`` (:mod:`ndcg_spark.formats.trec`) instead of counting as a grade. An id
holding whitespace cannot stand in a TREC line: such a document is only in the CSV (the template
says how many). The CSV has the plan's columns a judge needs, an empty ``grade`` column, and the
request's attribute columns.

>>> rows = [{"plan_rank": 1, "request_id": "q1", "doc_id": "d7", "swing": 0.0123,
...          "shown_by": [{"system": "hybrid", "pool_version": "p1", "rank": 3}]}]
>>> print(qrels_template(rows, "hybrid's macro NDCG@10, run 2026-11-29", (0.0, 1.0, 2.0, 3.0)), end="")
# What to judge next: hybrid's macro NDCG@10, run 2026-11-29 (1 document, most swing first).
# Replace each ? by the document's grade (0, 1, 2, 3); qid 0 docno grade, as trec_eval reads qrels.
q1 0 d7 ?
>>> print(judging_csv(rows, [{"request_id": "q1", "request_type": "gate valve"}]), end="")
plan_rank,request_id,doc_id,grade,shown_by,swing,request_type
1,q1,d7,,hybrid@3,0.0123,gate valve
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CSV_COLUMNS", "judging_csv", "qrels_template", "shown_by_text"]

#: the plan's columns the CSV starts with (``grade`` is the judges' to fill in)
CSV_COLUMNS = ("plan_rank", "request_id", "doc_id", "grade", "shown_by", "swing")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def shown_by_text(shown_by: Sequence[Mapping[str, Any]] | None) -> str:
    """``hybrid@3 bm25@7``: each system showing the document at its rank (``pool:`` shown when set
    and two entries of one system differ in it)."""
    entries = list(shown_by or [])
    systems = [e["system"] for e in entries]
    return " ".join(f"{e['system']}{'/' + str(e['pool_version']) if systems.count(e['system']) > 1 else ''}@{e['rank']}"
                    for e in entries)


def qrels_template(rows: Sequence[Mapping[str, Any]], what: str, grades: Sequence[float]) -> str:
    """The template: two comment lines (what the plan settles, the grades to use), then one line
    per document with a whitespace-free request and doc id."""
    fit = [r for r in rows if not any(ch.isspace() for ch in f"{r['request_id']}{r['doc_id']}")]
    n = len(rows)
    lines = [f"# What to judge next: {what} ({n} document{'s' if n != 1 else ''}, most swing first).",
             f"# Replace each ? by the document's grade ({', '.join(map(_number, grades))}); "
             "qid 0 docno grade, as trec_eval reads qrels."]
    if len(fit) < n:
        lines.append(f"# {n - len(fit)} document(s) whose request or doc id holds whitespace are only in the CSV.")
    lines += [f"{r['request_id']} 0 {r['doc_id']} ?" for r in fit]
    return "\n".join(lines) + "\n"


def judging_csv(rows: Sequence[Mapping[str, Any]], attributes: Sequence[Mapping[str, Any]]) -> str:
    """The CSV: :data:`CSV_COLUMNS`, then every attribute column of the request (``attributes``:
    one mapping per request, with ``request_id``; a request without one gets empty cells)."""
    by_request = {a["request_id"]: a for a in attributes}
    extra = list(dict.fromkeys(c for a in attributes for c in a if c != "request_id"))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*CSV_COLUMNS, *extra])
    for r in rows:
        attrs = by_request.get(r["request_id"], {})
        writer.writerow([r["plan_rank"], r["request_id"], r["doc_id"], "", shown_by_text(r.get("shown_by")),
                         r["swing"], *["" if attrs.get(c) is None else attrs.get(c) for c in extra]])
    return out.getvalue()
