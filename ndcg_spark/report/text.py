"""The closing lines of the command line as text: rows in, a string out (pure Python, no Spark).

``ndcg-spark score`` ends with :func:`per_request_summary`, ``run`` and ``aggregate`` with
:func:`aggregate_written`, :func:`aggregate_summary` and :func:`night_over_night`, ``compare``
with :func:`format_comparison` and :func:`format_guardrails` (from
:mod:`ndcg_spark.report.text_guardrails`), ``trend`` with :func:`format_trend`, ``runs`` with
:func:`format_runs` and ``runs --attempts`` with :func:`format_attempts` (:mod:`ndcg_spark.report.text_runs`). The rows are plain mappings (``Row.asDict()``), so every summary can
be checked without a session.

Examples
--------
>>> print(per_request_summary([
...     {"contract_fingerprint": "d3409c6997964582", "system": "bm25", "pool_version": "p1", "k": 10,
...      "metric": "ndcg", "macro": 0.65351, "scored": 16, "empty_ideal": 3, "no_results": 1, "requests": 20},
...     {"contract_fingerprint": "d3409c6997964582", "system": "bm25", "pool_version": "p1", "k": 10,
...      "metric": "recall", "macro": 0.7012, "scored": 16, "empty_ideal": 3, "no_results": 1, "requests": 20},
...     {"contract_fingerprint": "d3409c6997964582", "system": "dense", "pool_version": None, "k": 10,
...      "metric": "ndcg", "macro": None, "scored": 0, "empty_ideal": 2, "no_results": 0, "requests": 2},
...     {"contract_fingerprint": "d3409c6997964582", "system": "dense", "pool_version": None, "k": 10,
...      "metric": "recall", "macro": None, "scored": 0, "empty_ideal": 2, "no_results": 0, "requests": 2},
... ]))
contract d3409c6997964582
system     pool                 k macro NDCG   scored   empty no results      all macro recall
bm25       p1                  10     0.6535       16       3          1       20       0.7012
dense      -                   10        n/a        0       2          0        2          n/a
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.config.trend_spec import flag_text, raised_flags
from ndcg_spark.measures import split_measure, what_if_names
from ndcg_spark.report.format import OVERALL, fmt_count, resampling_unit, shown, system_and_pool
from ndcg_spark.report.panel import declared, label, metric_of, of_metric
from ndcg_spark.report.text_guardrails import format_guardrails
from ndcg_spark.report.text_runs import format_attempts, format_runs

__all__ = ["aggregate_summary", "aggregate_written", "format_attempts", "format_comparison", "format_guardrails",
           "format_runs", "format_trend", "night_over_night", "per_request_summary"]

Rows = Sequence[Mapping[str, Any]]


def _number(x: Any, fmt: str = "{:.4f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _signed(x: Any) -> str:
    return _number(x, "{:+.4f}")


def _mean(value: Any, low: Any, high: Any) -> str:
    """``0.6535 [0.6501, 0.6570]``; the interval left out when a bound is missing."""
    if value is None:
        return "n/a"
    interval = "" if low is None or high is None else f" [{low:.4f}, {high:.4f}]"
    return f"{value:.4f}{interval}"


def _contracts(rows: Rows) -> list[str]:
    return [f"contract {fingerprint}" for fingerprint in sorted({r["contract_fingerprint"] for r in rows})]


# --- stage 1 -------------------------------------------------------------------------------


def per_request_summary(rows: Rows, metrics: list[str] | None = None) -> str:
    """Overall macro mean of every metric per system x K with its denominators (the rows of the
    per-request table summarized per metric: ``macro``, ``scored``, ``empty_ideal``, ``no_results``,
    ``requests``): the headline metric's as always, the others' means after them (each with its
    scored count where it differs from the headline's)."""
    headline, *panel = declared(rows, metrics)
    lines = _contracts(rows)
    lines.append(f"{'system':<10} {'pool':<18} {'k':>3} {'macro ' + label(headline):>10} {'scored':>8} {'empty':>7} "
                 f"{'no results':>10} {'all':>8}" + "".join(f" {'macro ' + label(m):>12}" for m in panel))
    others = {(r["system"], r["pool_version"], r["k"], metric_of(r)): r for r in rows}
    for r in of_metric(rows, headline):
        line = (f"{r['system']:<10} {shown(r['pool_version']):<18} {r['k']:>3} {_number(r['macro']):>10} "
                f"{r['scored']:>8} {r['empty_ideal']:>7} {fmt_count(r.get('no_results')):>10} {r['requests']:>8}")
        for m in panel:
            other = others.get((r["system"], r["pool_version"], r["k"], m), {})
            scored = "" if other.get("scored") == r["scored"] else f" ({fmt_count(other.get('scored'))})"
            line += f" {_number(other.get('macro')) + scored:>12}"
        lines.append(line)
    return "\n".join(lines)


# --- stage 2 -------------------------------------------------------------------------------


def aggregate_written(run_id: str, where: str, row_counts: Mapping[str, int], seconds: float) -> str:
    """The line saying where stage 2 wrote and how many rows per table (dotted counters, such as
    stage 1's ``candidates.rows_read``, are left to run metadata).

    >>> aggregate_written("n1", "parquet /w/aggregate", {"per_request": 8, "aggregate": 4, "candidates.rows_read": 9}, 1.25)
    'run n1: aggregate table -> parquet /w/aggregate (per_request 8, aggregate 4; 1.2 s)'
    """
    counts = ", ".join(f"{k} {v:,}" for k, v in row_counts.items() if "." not in k)
    return f"run {run_id}: aggregate table -> {where} ({counts}; {seconds:.1f} s)"


def aggregate_summary(overall: Rows, audit: Rows, metrics: list[str] | None = None) -> str:
    """The closing lines of stage 2: the headline metric's overall means with their intervals and
    denominators (the aggregate table's overall rows), the other declared metrics at the largest K
    (the panel), the headline's what-ifs, then the worst slice per dimension (audit rows).

    >>> overall = [{"contract_fingerprint": "d340", "system": "bm25", "pool_version": "p1", "k": 10, "metric": "ndcg",
    ...             "ci_level": 0.95, "macro": 0.6535, "macro_ci_low": 0.6501, "macro_ci_high": 0.657,
    ...             "weighted": 0.6754, "weighted_ci_low": None, "weighted_ci_high": None,
    ...             "n_eligible": 17032, "n_empty_ideal": 2668, "n_no_results": 300, "n_requests": 20000}]
    >>> audit = [{"system": "bm25", "pool_version": "p1", "k": 10, "metric": "ndcg", "min_eligible": 30,
    ...           "slice_dimension": "equipment_rarity", "worst_slice_value": "rare", "worst_macro": 0.5557,
    ...           "worst_ci_low": 0.5446, "worst_ci_high": 0.5661, "gap_to_overall": -0.0979,
    ...           "ci_below_overall": True, "worst_n_eligible": 1698},
    ...          {"system": "bm25", "pool_version": "p1", "k": 10, "metric": "ndcg", "min_eligible": 30,
    ...           "slice_dimension": "permission_group", "worst_macro": None, "n_slices_ranked": 0, "n_slices": 3}]
    >>> print(aggregate_summary(overall, audit))  # doctest: +NORMALIZE_WHITESPACE
    contract d340
    system     pool                 k          macro NDCG [95% interval]          weighted NDCG [95% interval]  eligible   empty no results      all
    bm25       p1                  10            0.6535 [0.6501, 0.6570]                                0.6754    17,032   2,668        300   20,000
    worst slice per dimension at k=10 (every K is in the audit table; ranked: slices with >= 30 eligible requests;
    * its interval lies wholly below the overall mean)
      bm25       equipment_rarity     rare                        0.5557 [0.5446, 0.5661] gap -0.0979* (1,698 eligible)
      bm25       permission_group     no slice has enough eligible requests (0 of 3 ranked)
    >>> recall = dict(overall[0], metric="recall", macro=0.7012, macro_ci_low=0.698, macro_ci_high=0.7043)
    >>> hybrid = [dict(r, system="hybrid", macro=r["macro"] + 0.05, n_eligible=17000) for r in overall + [recall]]
    >>> hit = [dict(r, metric="hit_rate", n_eligible=16990) for r in (recall, hybrid[1])]
    >>> print("\\n".join(_panel_lines(overall + [recall] + hybrid + hit, ["ndcg", "recall", "hit_rate"])))
    the other metrics at k=10 (macro [95% interval]; eligible requests where they differ from NDCG's):
                   bm25 (p1)                                  hybrid (p1)
      recall@10    0.7012 [0.6980, 0.7043]                    0.7512 [0.6980, 0.7043]
      hit rate@10  0.7012 [0.6980, 0.7043] (16,990 eligible)  0.7512 [0.6980, 0.7043] (16,990 eligible)
    """
    headline = declared(overall, metrics)[0]
    return "\n".join(_overall_lines(of_metric(overall, headline), headline) + _panel_lines(overall, metrics)
                      + _unjudged_lines(overall, headline) + _worst_slice_lines(of_metric(audit, headline)))


def _panel_lines(overall: Rows, metrics: list[str] | None) -> list[str]:
    """The declared metrics after the headline, at the largest K: a line per metric, a column per
    system x pool (macro mean and interval; the eligible count where it differs from the headline's)."""
    headline, *panel = declared(overall, metrics)
    rows = [r for r in overall if metric_of(r) in panel]
    if not rows:
        return []
    top_k = max(r["k"] for r in rows)
    levels = {r["ci_level"] for r in rows if r.get("ci_level")}
    level = f"{100 * levels.pop():g}% interval" if len(levels) == 1 else "interval"
    eligible = {(r["system"], r["pool_version"], r["k"]): r["n_eligible"] for r in of_metric(overall, headline)}
    columns = list(dict.fromkeys((r["system"], r["pool_version"]) for r in rows if r["k"] == top_k))
    cells = {}
    for r in (r for r in rows if r["k"] == top_k):
        own = "" if eligible.get((r["system"], r["pool_version"], r["k"])) == r["n_eligible"] \
            else f" ({r['n_eligible']:,} eligible)"
        cells[metric_of(r), r["system"], r["pool_version"]] = _mean(r["macro"], r["macro_ci_low"], r["macro_ci_high"]) + own
    names = [system_and_pool(system, pool) for system, pool in columns]
    widths = [max([len(name)] + [len(cells.get((m, *c), "n/a")) for m in panel]) for name, c in zip(names, columns)]
    first = max(len(label(m, top_k)) for m in panel)
    lines = [f"the other metrics at k={top_k} (macro [{level}]; eligible requests where they differ from "
             f"{label(headline)}'s):",
             f"  {'':<{first}}" + "".join(f"  {name:<{w}}" for name, w in zip(names, widths)).rstrip()]
    for m in panel:
        lines.append(f"  {label(m, top_k):<{first}}"
                     + "".join(f"  {cells.get((m, *c), 'n/a'):<{w}}" for c, w in zip(columns, widths)).rstrip())
    return lines


def _unjudged_lines(overall: Rows, headline: str) -> list[str]:
    """At the largest K, the headline metric's macro mean beside its two what-ifs (only when the
    contract declares a grade scale: ``max_grade`` or a gain table).

    >>> rows = [{"system": "bm25", "pool_version": "p1", "k": 10, "metric": "ndcg", "macro": 0.653},
    ...         {"system": "bm25", "pool_version": "p1", "k": 10, "metric": "ndcg_unjudged_low", "macro": 0.641},
    ...         {"system": "bm25", "pool_version": "p1", "k": 10, "metric": "ndcg_unjudged_high", "macro": 0.702},
    ...         {"system": "dense", "pool_version": None, "k": 10, "metric": "ndcg", "macro": 0.6535},
    ...         {"system": "dense", "pool_version": None, "k": 10, "metric": "ndcg_unjudged_low", "macro": 0.6535},
    ...         {"system": "dense", "pool_version": None, "k": 10, "metric": "ndcg_unjudged_high", "macro": 0.6025}]
    >>> for line in _unjudged_lines(rows, "ndcg"):
    ...     print(line)
    if every unjudged candidate were judged (ndcg_unjudged_low / _high: two what-ifs, not an interval):
      bm25       p1                 NDCG@10 0.6530 (0.6410 if the unjudged were judged at the lowest grade, 0.7020 at the highest)
      dense      -                  NDCG@10 0.6535 (0.6535 if the unjudged were judged at the lowest grade, 0.6025 at the highest; lower at the highest: judged high, they raise each request's ideal as well)
    """
    low_name, high_name = what_if_names(headline)
    ends = {(metric_of(r), r["system"], r["pool_version"], r["k"]): r.get("macro") for r in overall
            if metric_of(r) in (low_name, high_name)}
    bounded = [r for r in of_metric(overall, headline)
               if any(ends.get((w, r["system"], r["pool_version"], r["k"])) is not None for w in (low_name, high_name))]
    if not bounded:
        return []
    top_k = max(r["k"] for r in bounded)
    lines = [f"if every unjudged candidate were judged ({low_name} / _high: two what-ifs, not an interval):"]
    for r in (r for r in bounded if r["k"] == top_k):
        values = [ends.get((w, r["system"], r["pool_version"], top_k)) for w in (low_name, high_name)]
        low, high = map(_number, values)
        # judged high, the unjudged raise the request's ideal too: the mean can fall (a ratio's what-if)
        why = ("; lower at the highest: judged high, they raise each request's ideal as well"
               if values[1] is not None and r.get("macro") is not None and values[1] < r["macro"] else "")
        lines.append(f"  {r['system']:<10} {shown(r['pool_version']):<18} {label(headline, top_k)} {_number(r['macro'])} "
                     f"({low} if the unjudged were judged at the lowest grade, {high} at the highest{why})")
    return lines


def _overall_lines(overall: Rows, headline: str) -> list[str]:
    levels = {r["ci_level"] for r in overall if r.get("ci_level")}
    level = f"{100 * levels.pop():g}% interval" if len(levels) == 1 else "interval"
    title = label(headline)
    lines = _contracts(overall)
    lines.append(
        f"{'system':<10} {'pool':<18} {'k':>3} {'macro ' + title + ' [' + level + ']':>34} "
        f"{'weighted ' + title + ' [' + level + ']':>37} {'eligible':>9} {'empty':>7} {'no results':>10} {'all':>8}"
    )
    for r in overall:
        lines.append(
            f"{r['system']:<10} {shown(r['pool_version']):<18} {r['k']:>3} "
            f"{_mean(r['macro'], r['macro_ci_low'], r['macro_ci_high']):>34} "
            f"{_mean(r['weighted'], r['weighted_ci_low'], r['weighted_ci_high']):>37} "
            f"{r['n_eligible']:>9,} {r['n_empty_ideal']:>7,} {fmt_count(r.get('n_no_results')):>10} {r['n_requests']:>8,}"
        )
    return lines


def _worst_slice_lines(audit: Rows) -> list[str]:
    if not audit:
        return []
    top_k = max(r["k"] for r in audit)
    minimum = next((r["min_eligible"] for r in audit if r.get("min_eligible") is not None), None)
    lines = [
        f"worst slice per dimension at k={top_k} (every K is in the audit table; ranked: slices with >= "
        f"{minimum} eligible requests; * its interval lies wholly below the overall mean)"
    ]
    pools = len({r["pool_version"] for r in audit})
    for r in (r for r in audit if r["k"] == top_k):
        who = r["system"] if pools == 1 else f"{r['system']}@{r['pool_version']}"
        if r["worst_macro"] is None:
            lines.append(
                f"  {who:<10} {r['slice_dimension']:<20} no slice has enough eligible requests "
                f"({r['n_slices_ranked']} of {r['n_slices']} ranked)"
            )
            continue
        flag = "*" if r["ci_below_overall"] else " "
        lines.append(
            f"  {who:<10} {r['slice_dimension']:<20} {str(r['worst_slice_value']):<16} "
            f"{_mean(r['worst_macro'], r['worst_ci_low'], r['worst_ci_high']):>34} "
            f"gap {r['gap_to_overall']:+.4f}{flag} ({r['worst_n_eligible']:,} eligible)"
        )
    return lines


# --- compare -------------------------------------------------------------------------------


def format_comparison(rows: Rows, metrics: list[str] | None = None) -> str:
    """A readable summary of a comparison table (its rows as mappings): the CLI's closing lines.

    The headline metric's overall row of every K, the other declared metrics' at the largest K (and
    their what-ifs'), the end-to-end notice when the pools differ (with each side's pool recall), and
    per slice dimension the slice with the smallest macro delta at the largest K.
    """
    if not rows:
        return "comparison: no rows"
    headline = declared(rows, metrics)[0]
    every = rows
    rows = of_metric(rows, headline) or rows
    first = rows[0]
    overall = sorted((r for r in rows if r["slice_dimension"] == OVERALL), key=lambda r: r["k"])
    top = overall[-1] if overall else first
    lines = _comparison_header(first, top)
    if first["comparison_kind"] == "end_to_end":
        lines += _end_to_end_notice(first, top)
    panel = _comparison_panel(every, top["k"], headline)
    if panel:
        lines.append(f"  {label(headline)} at every K:")
    lines += _comparison_overall(first["baseline"], first["candidate"], overall)
    lines += panel
    lines.append(_comparison_requests(first["baseline"], first["candidate"], top))
    lines += _smallest_slice_deltas(rows, top["k"], first["min_paired"])
    return "\n".join(lines)


def _comparison_panel(rows: Rows, k: Any, headline: str) -> list[str]:
    """Every other metric of the comparison at ``k``, overall, then the headline's what-ifs: each
    one's delta, interval, p and win / tie / loss (the other metrics' what-ifs are in the table)."""
    overall = [r for r in rows if r["slice_dimension"] == OVERALL and r["k"] == k and metric_of(r) != headline]
    others = ([r for r in overall if split_measure(metric_of(r))[1] is None]
              + [r for r in overall if split_measure(metric_of(r))[0] == headline])
    if not others:
        return []
    width = max(len(label(metric_of(r), k)) for r in others)
    lines = [f"  the other metrics at k={k} (macro delta [interval], p, win/tie/loss over paired requests):"]
    for r in others:
        lines.append(
            f"    {label(metric_of(r), k):<{width}} {_delta(r['delta_macro'], r['delta_macro_ci_low'], r['delta_macro_ci_high']):<27} "
            f"p {_number(r['p_value_macro'], '{:.3f}')}  {r['wins']:,}/{r['ties']:,}/{r['losses']:,} "
            f"({r['n_paired']:,} paired)"
        )
    return lines


def _delta(value: Any, low: Any, high: Any) -> str:
    """``+0.0730 [+0.0703, +0.0755]``; no interval without a low bound."""
    return _signed(value) + ("" if low is None else f" [{_signed(low)}, {_signed(high)}]")


def _comparison_header(first: Mapping[str, Any], top: Mapping[str, Any]) -> list[str]:
    b, c = first["baseline"], first["candidate"]
    pools = (
        f"{top['n_pool_differs']:,} shared request(s) with different candidate sets"
        if first["pools_differ"]
        else "same candidates for every shared request"
    )
    level = f" ({first['ci_level']:.0%} intervals)" if first["ci_level"] is not None else ""
    return [
        f"comparison of run {first['run_id']}: {c} (candidate) vs {b} (baseline): {first['comparison_kind']} comparison",
        f"  pools: {b} {shown(first['baseline_pool_version'])}, {c} {shown(first['candidate_pool_version'])}; {pools}",
        f"  contract {first['contract_fingerprint']}; ideal: {first['ideal']}; "
        f"{first['bootstrap_replicates']} bootstrap replicates{level}, {first['permutations']} sign flips"
        f"{resampling_unit(first.get('bootstrap_buckets'))}, seed {first['seed']}, "
        f"tie if |delta| <= {first['tie_tolerance']:g}",
    ]


def _end_to_end_notice(first: Mapping[str, Any], top: Mapping[str, Any]) -> list[str]:
    b, c = first["baseline"], first["candidate"]
    why = (
        " The two sides ranked different candidate pools, so a difference below can come from what was"
        " retrieved as well as from how it was ranked."
        if first["pools_differ"]
        else " (Requested; the two sides ranked the same candidates.)"
    )
    return [
        "",
        "  NOTICE: END-TO-END comparison, not a reranker comparison." + why,
        "  Both sides' metrics use one shared ideal from the judgments. Pool recall (positives in the pool /"
        f" all known positives, {top['n_pool_recall_requests']:,} shared requests with a known positive):",
        f"    {b:<12} macro {_number(top['baseline_pool_recall_macro'])}  "
        f"weighted {_number(top['baseline_pool_recall_weighted'])}",
        f"    {c:<12} macro {_number(top['candidate_pool_recall_macro'])}  "
        f"weighted {_number(top['candidate_pool_recall_weighted'])}",
        "",
    ]


def _comparison_overall(b: str, c: str, overall: Rows) -> list[str]:
    lines = [
        f"  {'k':>3} {'paired':>8} {b[:8]:>8} {c[:8]:>8}  {'delta macro [interval]':<27} {'p':>6}  "
        f"{'delta weighted [interval]':<27} {'p':>6}  win/tie/loss"
    ]
    for r in overall:
        lines.append(
            f"  {r['k']:>3} {r['n_paired']:>8,} {_number(r['baseline_macro']):>8} "
            f"{_number(r['candidate_macro']):>8}  "
            f"{_delta(r['delta_macro'], r['delta_macro_ci_low'], r['delta_macro_ci_high']):<27} "
            f"{_number(r['p_value_macro'], '{:.3f}'):>6}  "
            f"{_delta(r['delta_weighted'], r['delta_weighted_ci_low'], r['delta_weighted_ci_high']):<27} "
            f"{_number(r['p_value_weighted'], '{:.3f}'):>6}  "
            f"{r['wins']:,}/{r['ties']:,}/{r['losses']:,}"
        )
    return lines


def _comparison_requests(b: str, c: str, top: Mapping[str, Any]) -> str:
    return (
        f"  requests: {top['n_requests']:,} in all; {top['n_paired']:,} paired; {b} only: "
        f"{top['n_only_baseline_missing']:,} ({c} returned nothing) + {top['n_only_baseline_empty']:,} "
        f"({c}'s ideal empty); {c} only: {top['n_only_candidate_missing']:,} + {top['n_only_candidate_empty']:,}; "
        f"neither: {top['n_neither']:,}; returned nothing: {b} {fmt_count(top.get('n_baseline_no_results'))}, "
        f"{c} {fmt_count(top.get('n_candidate_no_results'))}"
    )


def _smallest_slice_deltas(rows: Rows, k: int, min_paired: Any) -> list[str]:
    dims = sorted({r["slice_dimension"] for r in rows if r["slice_dimension"] != OVERALL})
    lines = [f"  smallest macro delta per slice dimension at k={k} (* fewer than {min_paired} paired):"] if dims else []
    for dim in dims:
        cells = [r for r in rows if r["slice_dimension"] == dim and r["k"] == k and r["delta_macro"] is not None]
        if not cells:
            continue
        worst = min(cells, key=lambda r: (r["below_min_paired"], r["delta_macro"]))
        lines.append(
            f"    {dim}={worst['slice_value']}{'*' if worst['below_min_paired'] else ''}: "
            f"{_delta(worst['delta_macro'], worst['delta_macro_ci_low'], worst['delta_macro_ci_high'])}, "
            f"p {_number(worst['p_value_macro'], '{:.3f}')}, {worst['n_paired']:,} paired"
        )
    return lines


# --- night over night ----------------------------------------------------------------------

def _change(r: Mapping[str, Any]) -> str:
    """The change from the previous comparable night, the break's reason, or ``first run``."""
    if r.get("previous_run_id") is None:
        return "first run"
    if not r.get("comparable"):
        return f"BREAK ({r.get('break_reason')})"
    share = r.get("empty_ideal_share_change")
    flags = flag_text(raised_flags(r))
    moved = f"; {flags}" if flags else ""
    return (f"{_signed(r.get('delta_macro'))} vs {r['previous_run_id']} (empty-ideal share "
            f"{_number(None if share is None else 100 * share, '{:+.1f}')} pts){moved}")


def _moves(r: Mapping[str, Any]) -> list:
    """The move flags a trend row raises (a shift in no-answer traffic is the night's, not a metric's)."""
    return [f for f in raised_flags(r) if f.kind == "move"]


def night_over_night(rows: Rows, metrics: list[str] | None = None) -> str:
    """One line per system x K of a run's overall trend rows for the headline metric: the change
    from the previous comparable night, or why there is none; then the other declared metrics at the
    largest K (and at any K where one was flagged), one line each.

    >>> row = {"system": "bm25", "pool_version": "p1", "k": 10, "metric": "ndcg", "macro": 0.52,
    ...        "previous_run_id": "2026-11-27", "comparable": True, "delta_macro": -0.08,
    ...        "empty_ideal_share_change": 0.081, "moved": True, "empty_ideal_shifted": True}
    >>> print(night_over_night([row, dict(row, metric="recall", macro=0.71, delta_macro=0.0004, moved=False)]))
    night over night (overall macro NDCG; comparable: same contract and pool version):
      bm25       p1                  10  0.5200  -0.0800 vs 2026-11-27 (empty-ideal share +8.1 pts); MOVED, but the empty-ideal share moved too: may be traffic, not ranking
    the other metrics, night over night (the same nights; at k=10, and where flagged):
      bm25       p1                 recall@10  0.7100  +0.0004
    """
    headline, *panel = declared(rows, metrics)
    lines = [f"night over night (overall macro {label(headline)}; comparable: same contract and pool version):"]
    for r in of_metric(rows, headline):
        lines.append(f"  {r['system']:<10} {shown(r['pool_version']):<18} {r['k']:>3}  "
                     f"{_number(r.get('macro'))}  {_change(r)}")
    others = [r for r in rows if metric_of(r) in panel]
    if not others:
        return "\n".join(lines)
    top_k = max(r["k"] for r in others)
    listed = [r for m in panel for r in of_metric(others, m) if r["k"] == top_k or _moves(r)]
    width = max(len(label(metric_of(r), r["k"])) for r in listed)
    lines.append(f"the other metrics, night over night (the same nights; at k={top_k}, and where flagged):")
    for r in listed:
        flags = flag_text(_moves(r)) if r.get("comparable") else ""  # the night's shifts: said above
        change = (_signed(r.get("delta_macro")) if r.get("comparable") and r.get("previous_run_id") is not None
                  else _change(r)) + (f"; {flags}" if flags else "")
        lines.append(f"  {r['system']:<10} {shown(r['pool_version']):<18} {label(metric_of(r), r['k']):<{width}}  "
                     f"{_number(r.get('macro'))}  {change}")
    return "\n".join(lines)


def format_trend(rows: Rows, metrics: list[str] | None = None) -> str:
    """``ndcg-spark trend``: per system x pool x K, one line per published run (overall slice):
    the macro mean with its interval and denominators, the empty-ideal share and the change; a block
    per declared metric, the headline first.

    >>> print(format_trend([{"run_id": "2026-11-28", "system": "bm25", "pool_version": "p1", "k": 10,
    ...     "macro": 0.52, "macro_ci_low": 0.5, "macro_ci_high": 0.54, "n_eligible": 82, "n_requests": 100,
    ...     "empty_ideal_share": 0.18, "previous_run_id": None}]))
    system     pool                 k run          macro NDCG [interval]     eligible/all empty-ideal  change
    bm25       p1                  10 2026-11-28   0.5200 [0.5000, 0.5400]         82/100       18.0%  first run
    """
    if not rows:
        return "no published run in the aggregate table yet"
    lines = []
    for metric in declared(rows, metrics):
        lines.append(f"{'system':<10} {'pool':<18} {'k':>3} {'run':<12} {'macro ' + label(metric) + ' [interval]':<25} "
                     f"{'eligible/all':>12} {'empty-ideal':>11}  change")
        for r in of_metric(rows, metric):
            share = r.get("empty_ideal_share")
            mean = _mean(r.get("macro"), r.get("macro_ci_low"), r.get("macro_ci_high"))
            lines.append(f"{r['system']:<10} {shown(r['pool_version']):<18} {r['k']:>3} {str(r['run_id']):<12} {mean:<25} "
                         f"{_number(r.get('n_eligible'), '{:,}') + '/' + _number(r.get('n_requests'), '{:,}'):>12} "
                         f"{_number(None if share is None else 100 * share, '{:.1f}%'):>11}  {_change(r)}")
    return "\n".join(lines)
