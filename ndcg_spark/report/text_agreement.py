"""``ndcg-spark agreement``'s text: per contract and outcome, a line per offline metric × K with the
counts, sensitivity, directional agreement, false wins and rank correlation; the best-agreeing
metric × K (or why none is ranked); the false wins listed.

>>> row = {"contract_fingerprint": "fp1", "outcome": "task_completion", "better": "higher", "metric": "ndcg", "k": 5,
...        "n_experiments": 4, "n_offline_significant": 2, "n_outcome_significant": 1, "n_both_significant": 1,
...        "n_agree": 1, "n_false_wins": 0, "sensitivity": None, "agreement": None, "agreement_ci_low": None,
...        "agreement_ci_high": None, "spearman": None, "spearman_ci_low": None, "spearman_ci_high": None,
...        "best": None, "note": "too few experiments (4 < 8): counts only, no statistic", "enough": False}
>>> print(format_agreement([row], []))
4 experiments, 1 contract (summarized apart; agreement.pool_contracts: true pools them)
<BLANKLINE>
contract fp1 · task_completion (better: higher)
metric@K               n  offline sig.  agreement [interval]    (agree/both)  false wins  Spearman [interval]
ndcg@5                 4  2             -                       (1/1)         0           -   too few experiments (4 < 8): counts only, no statistic
best-agreeing: none (no metric × K has enough experiments)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.agreement.statistics import BEST, POOLED, TIED

__all__ = ["best_words", "format_agreement", "measure"]

Rows = Sequence[Mapping[str, Any]]


def measure(row: Mapping[str, Any]) -> str:
    """``metric@K`` of a row."""
    return f"{row['metric']}@{row['k']}"


def _interval(value: float | None, low: float | None, high: float | None, fmt: str = "{:+.2f}") -> str:
    if value is None:
        return "-"
    if low is None or high is None:
        return fmt.format(value)
    return f"{fmt.format(value)} [{fmt.format(low)}, {fmt.format(high)}]"


def best_words(rows: Rows) -> str:
    """Which metric × K of one contract × outcome agrees best, with its uncertainty: one ``best``,
    the ``tied`` ones (intervals overlapping: not ranked), or none."""
    best = [r for r in rows if r.get("best") == BEST]
    if best:
        r = best[0]
        return (f"best-agreeing: {measure(r)} (Spearman {_interval(r['spearman'], r['spearman_ci_low'], r['spearman_ci_high'])}"
                f"; its interval lies above every other's)")
    tied = [r for r in rows if r.get("best") == TIED]
    if tied:
        top = max(tied, key=lambda r: (r["spearman"], -r["k"]))
        others = [measure(r) for r in tied if r is not top]
        shown = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
        return (f"best-agreeing: not ranked -- the highest, {measure(top)} (Spearman "
                f"{_interval(top['spearman'], top['spearman_ci_low'], top['spearman_ci_high'])}), has an interval "
                f"overlapping {shown}'s")
    if not any(r.get("enough") for r in rows):
        return "best-agreeing: none (no metric × K has enough experiments)"
    return "best-agreeing: none (no rank correlation with an interval)"


def format_agreement(summary: Rows, history: Rows) -> str:
    """The command's text of the summary rows (and the history's false wins)."""
    if not summary:
        return ("no experiment: no published comparison has release guardrails yet (run `ndcg-spark compare` with "
                "`guardrails.release`)")
    experiments = {(r["experiment_run"], r["baseline"], r["candidate"]) for r in history}
    contracts = sorted({r["contract_fingerprint"] for r in summary})
    n = len(experiments) if history else max(r["n_experiments"] for r in summary)
    how = ("pooled: agreement.pool_contracts" if contracts == [POOLED]
           else "summarized apart; agreement.pool_contracts: true pools them")
    lines = [f"{n} experiment{'s' if n != 1 else ''}, {len(contracts)} contract{'s' if len(contracts) != 1 else ''} "
             f"({how})"]
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in summary:
        groups.setdefault((r["contract_fingerprint"], r["outcome"]), []).append(r)
    for (contract, outcome), rows in groups.items():
        lines += ["", f"contract {contract} · {outcome} (better: {rows[0]['better']})",
                  f"{'metric@K':<20} {'n':>3}  {'offline sig.':<13} {'agreement [interval]':<23} {'(agree/both)':<13} "
                  f"{'false wins':<11} Spearman [interval]"]
        for r in rows:
            sig = f"{r['n_offline_significant']}" + (f" ({r['sensitivity']:.0%})" if r["sensitivity"] is not None else "")
            agree = _interval(r["agreement"], r["agreement_ci_low"], r["agreement_ci_high"], "{:.2f}")
            rho = _interval(r["spearman"], r["spearman_ci_low"], r["spearman_ci_high"])
            mark = "  <- best" if r.get("best") == BEST else ""
            note = f"   {r['note']}" if r.get("note") else ""
            lines.append(f"{measure(r):<20} {r['n_experiments']:>3}  {sig:<13} {agree:<23} "
                         f"{'(' + str(r['n_agree']) + '/' + str(r['n_both_significant']) + ')':<13} "
                         f"{r['n_false_wins']:<11} {rho}{mark}{note}".rstrip())
        lines.append(best_words(rows))
    false_wins = [r for r in history if r.get("false_win")]
    if false_wins:
        lines += ["", f"false wins (offline significantly better, outcome significantly worse): {len(false_wins)}"]
        for r in false_wins:
            lines.append(f"  {r['experiment_run']} {r['candidate']} vs {r['baseline']}: {measure(r)} "
                         f"{_interval(r['offline_delta'], r['offline_ci_low'], r['offline_ci_high'], '{:+.4f}')}, "
                         f"{r['outcome']} {_interval(r['outcome_difference'], r['outcome_ci_low'], r['outcome_ci_high'], '{:+.4g}')}")
    return "\n".join(lines)
