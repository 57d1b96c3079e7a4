"""CI: the README's first command (`bash dev.sh demo`) printed its headline lines, and they add up.

Reads the demo's output (a file, or standard input) and checks, without importing the package:
the night was published; rows read = rows scored + rows quarantined for every input; the overall
table has one row per system and K, each mean within [0, 1] and its denominators adding up to all
requests, and hybrid's requests returned nothing for counted; the five other metrics at K=10 beside NDCG (the
run's summary, night over night, the comparison, the report's first screen); the night-over-night lines; the comparison per K; the guardrails' verdict line naming
each failed guardrail; both HTML reports written. Exits 1 naming the first line that is missing or
wrong, so a change that breaks the demo's first screen fails CI.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SYSTEMS, KS = ("bm25", "hybrid"), (1, 3, 5, 10)
#: the metrics conf/local.yaml declares after NDCG, at its largest K, as the summaries label them
PANEL = ("recall@10", "precision@10", "AP@10", "RR@10", "hit rate@10")


def fail(why: str) -> None:
    print(f"demo headlines: {why}", file=sys.stderr)
    sys.exit(1)


def number(text: str) -> int:
    if not text.replace(",", "").isdigit():
        fail(f"a count that is not a number: {text!r}")
    return int(text.replace(",", ""))


def main() -> None:
    text = Path(sys.argv[1]).read_text(encoding="utf-8") if len(sys.argv) > 1 else sys.stdin.read()
    lines = text.splitlines()
    if not any(re.match(r"run \S+: published by attempt \w+ \(.*says complete\)", line) for line in lines):
        fail("no 'run …: published by attempt …' line")
    accounting = next((line for line in lines if line.startswith("rows read = rows scored + rows quarantined:")), None)
    if accounting is None:
        fail("no row accounting line")
    for name, read, scored, quarantined in re.findall(r"(\w+) ([\d,]+) = ([\d,]+) \+ ([\d,]+)", accounting):
        if number(read) != number(scored) + number(quarantined) or number(read) == 0:
            fail(f"the accounting of {name} does not add up: {accounting}")
    header = next((i for i, line in enumerate(lines) if line.startswith("system") and "macro NDCG" in line), None)
    if header is None:
        fail("no overall table (system, pool, k, macro NDCG …)")
    columns = lines[header].split()
    rows = []
    for line in lines[header + 1:]:
        cells = line.split()
        if not cells or cells[0] not in SYSTEMS:
            break
        rows.append(cells)
    if sorted((r[0], int(r[2])) for r in rows) != sorted((s, k) for s in SYSTEMS for k in KS):
        fail(f"the overall table does not hold one row per system and K: {[r[:3] for r in rows]}")
    for r in rows:
        if not all(0.0 <= float(v) <= 1.0 for v in (r[3], r[6])):
            fail(f"a mean outside [0, 1]: {' '.join(r)}")
        # the denominators after the two means: eligible, empty-ideal, (no results,) all
        counts = [number(v) for v in r[9:]]
        if len(counts) < 3 or sum(counts[:-1]) < counts[-1] or counts[0] + counts[1] > counts[-1]:
            fail(f"denominators that do not add up ({' '.join(columns[-len(counts):])}): {' '.join(r)}")
    # the sample's hybrid times out on some requests: counted, never silently out of the denominator
    if "no results" not in lines[header] or not any(number(r[-2]) > 0 for r in rows if r[0] == "hybrid"):
        fail(f"no count of the requests hybrid returned nothing for: {lines[header]}")
    if "night over night" not in text or sum(bool(re.match(r"  (bm25|hybrid) .* vs \S+ ", line)) for line in lines) < 8:
        fail("no night-over-night line per system and K")
    deltas = [line for line in lines if re.match(r"\s+(1|3|5|10)\s+[\d,]+\s+0\.\d{4}\s+0\.\d{4}\s+[+-]0\.\d{4} \[", line)]
    if len(deltas) != len(KS):
        fail(f"the comparison has {len(deltas)} lines per K, not {len(KS)}")
    # the panel beside NDCG@K (conf/local.yaml declares all six metrics): the run's summary (a line per
    # metric, a mean per system), night over night, the comparison's deltas
    for metric in PANEL:
        m = re.escape(metric)
        if not any(re.match(rf"  {m}\s+0\.\d{{4}} \[0\.\d{{4}}, 0\.\d{{4}}\]\s+0\.\d{{4}} \[", line) for line in lines):
            fail(f"no {metric} line with a mean per system in the run's summary (the other metrics)")
        moves = [line for line in lines if re.match(rf"  (bm25|hybrid)\s+\S+\s+{m}\s+0\.\d{{4}}  ([+-]0\.\d{{4}}|first run|BREAK)", line)]
        if len(moves) != len(SYSTEMS):
            fail(f"no night-over-night line of {metric} per system: {moves}")
        if not any(re.match(rf"\s+{m}\s+[+-]0\.\d{{4}} \[[+-]0\.\d{{4}}, [+-]0\.\d{{4}}\]\s+p ", line) for line in lines):
            fail(f"no {metric} delta in the comparison")
    verdict = next((line for line in lines if line.startswith("guardrails hybrid vs bm25:")), None)
    if verdict is None or not re.search(r": (PASS|FAIL|INCONCLUSIVE) — NDCG@10 [+-]0\.\d{4} \[", verdict):
        fail(f"no guardrail verdict line with the NDCG delta: {verdict}")
    failed = re.findall(r"^  (\w+)\s+\S+\s+.*\s(fail)\b", text, flags=re.M)
    if verdict.split(": ")[1].startswith("FAIL") and not failed:
        fail("the verdict is FAIL but no guardrail line says fail")
    reports = re.findall(r"^report -> (\S+report\.html)", text, flags=re.M)
    if len(reports) < 2 or not all(Path(p).is_file() for p in reports):
        fail(f"the run's and the comparison's report: {reports}")
    page = Path(reports[-1]).read_text(encoding="utf-8")
    if "returned nothing" not in page:
        fail(f"the report's first screen does not say how many requests a ranker returned nothing for: {reports[-1]}")
    first = page[page.index("id='first-screen'"):page.index("</section>")] if "id='first-screen'" in page else ""
    for metric in PANEL:
        if f"macro {metric} [interval]" not in first or f"{metric} <span class='num'>" not in first:
            fail(f"the report's first screen does not show {metric} beside NDCG (and its delta): {reports[-1]}")
    print(f"demo headlines: {len(rows)} overall rows, {len(deltas)} comparison lines, verdict "
          f"{verdict.split(': ')[1].split(' ')[0]} ({', '.join(name for name, _ in failed) or 'no guardrail failed'}), "
          f"{len(reports)} reports: ok")


if __name__ == "__main__":
    main()
