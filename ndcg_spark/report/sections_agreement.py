"""The report's section "Does the offline metric predict the release?" (SPEC §12): per release outcome,
a scatter of the experiments (offline delta against the outcome's improvement, both intervals as
whiskers, false wins marked) for the metric × K that agrees best -- and for the headline metric, when
it is another -- then the summary table of every metric × K.

Pure functions of the agreement's summary rows and experiment rows (``data["agreement"]``,
``data["agreement_history"]``: the latest ``ndcg-spark agreement`` run); the words are
:mod:`ndcg_spark.report.text_agreement`'s, so the page says what the command says. Without summary
rows the section is empty.

>>> section_agreement({})
[]
>>> point = {"contract_fingerprint": "fp", "outcome": "task_completion", "metric": "ndcg", "k": 5,
...          "offline_delta": 0.02, "offline_ci_low": 0.01, "offline_ci_high": 0.03, "outcome_improvement": -0.01,
...          "outcome_improvement_ci_low": -0.02, "outcome_improvement_ci_high": -0.005, "false_win": True,
...          "agrees": False, "experiment_run": "n1", "baseline": "a", "candidate": "b"}
>>> svg = scatter([point], "ndcg@5", "task_completion")
>>> svg.startswith("<svg"), svg.count("<circle"), "false win" in svg  # the dot, and the ring of a false win
(True, 2, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.agreement.statistics import BEST, POOLED
from ndcg_spark.report.charts import BLUE, GREY, RED, domain, ticks
from ndcg_spark.report.format import escape, fmt_interval
from ndcg_spark.report.text_agreement import best_words, measure

__all__ = ["scatter", "section_agreement"]

Row = Mapping[str, Any]


def _num(x: Any, fmt: str = "{:+.3g}") -> str:
    return "–" if x is None else fmt.format(x)


def scatter(points: Sequence[Row], offline: str, outcome: str, *, width: int = 420, height: int = 300) -> str:
    """One experiment per point: x its offline delta, y its outcome's improvement (positive: better as
    the guardrail declares), whiskers both intervals; a false win in red with a ring, an experiment
    where both are significant and agree in blue, the rest grey."""
    left, right, top, bottom = 56, 14, 24, 40
    xs = [v for p in points for v in (p["offline_delta"], p["offline_ci_low"], p["offline_ci_high"])]
    ys = [v for p in points for v in (p["outcome_improvement"], p["outcome_improvement_ci_low"],
                                     p["outcome_improvement_ci_high"])]
    x_lo, x_hi = domain(xs, clamp=None, include=[0.0])
    y_lo, y_hi = domain(ys, clamp=None, include=[0.0])
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(v: float) -> float:
        return left + (float(v) - x_lo) / (x_hi - x_lo) * plot_w

    def y(v: float) -> float:
        return top + plot_h - (float(v) - y_lo) / (y_hi - y_lo) * plot_h

    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
             f'<title>{escape(outcome)} against {escape(offline)}: one point per experiment</title>',
             f'<text x="{left}" y="14" font-weight="bold">{escape(outcome)} vs {escape(offline)}</text>']
    for t in ticks(x_lo, x_hi, 4):
        parts.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{top + plot_h}" stroke="#edf0f5"/>'
                     f'<text class="muted" x="{x(t):.1f}" y="{top + plot_h + 14}" text-anchor="middle">'
                     f'{escape(_num(t))}</text>')
    for t in ticks(y_lo, y_hi, 4):
        parts.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + plot_w}" y2="{y(t):.1f}" stroke="#edf0f5"/>'
                     f'<text class="muted" x="{left - 4}" y="{y(t) + 4:.1f}" text-anchor="end">{escape(_num(t))}</text>')
    parts.append(f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{top + plot_h}" stroke="#333" '
                 'stroke-dasharray="4 3"/>'
                 f'<line x1="{left}" y1="{y(0):.1f}" x2="{left + plot_w}" y2="{y(0):.1f}" stroke="#333" '
                 'stroke-dasharray="4 3"/>'
                 f'<text x="{left + plot_w}" y="{height - 6}" text-anchor="end">offline delta ({escape(offline)}) →</text>'
                 f'<text x="12" y="{top + plot_h / 2:.1f}" transform="rotate(-90 12 {top + plot_h / 2:.1f})" '
                 f'text-anchor="middle">{escape(outcome)} improvement →</text>')
    for p in points:
        color = RED if p.get("false_win") else BLUE if p.get("agrees") else GREY
        cx, cy = x(p["offline_delta"]), y(p["outcome_improvement"])
        tip = (f"{p['experiment_run']} {p['candidate']} vs {p['baseline']}: {offline} "
               f"{_num(p['offline_delta'])} {fmt_interval(p['offline_ci_low'], p['offline_ci_high'], _num)}, "
               f"{outcome} {_num(p['outcome_improvement'])} "
               f"{fmt_interval(p['outcome_improvement_ci_low'], p['outcome_improvement_ci_high'], _num)}"
               + (" -- false win" if p.get("false_win") else ""))
        parts.append(f"<g><title>{escape(tip)}</title>")
        if p["offline_ci_low"] is not None and p["offline_ci_high"] is not None:
            parts.append(f'<line x1="{x(p["offline_ci_low"]):.1f}" y1="{cy:.1f}" x2="{x(p["offline_ci_high"]):.1f}" '
                         f'y2="{cy:.1f}" stroke="{color}" stroke-opacity="0.6"/>')
        if p["outcome_improvement_ci_low"] is not None and p["outcome_improvement_ci_high"] is not None:
            parts.append(f'<line x1="{cx:.1f}" y1="{y(p["outcome_improvement_ci_low"]):.1f}" x2="{cx:.1f}" '
                         f'y2="{y(p["outcome_improvement_ci_high"]):.1f}" stroke="{color}" stroke-opacity="0.6"/>')
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{color}"/>')
        if p.get("false_win"):
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="8" fill="none" stroke="{RED}" stroke-width="1.5"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _table(rows: Sequence[Row]) -> list[str]:
    out = ["<table><tr><th>metric@K</th><th>experiments</th><th>offline significant</th>"
           "<th>agreement (agree/both significant)</th><th>false wins</th><th>Spearman [interval]</th><th></th></tr>"]
    ranked = sorted(rows, key=lambda r: (r["spearman"] is None, -(r["spearman"] or 0.0), r["metric"], r["k"]))
    for r in ranked:
        sensitivity = "" if r["sensitivity"] is None else f" ({r['sensitivity']:.0%})"
        agreement = ("–" if r["agreement"] is None else
                     f"{r['agreement']:.2f} {fmt_interval(r['agreement_ci_low'], r['agreement_ci_high'], '{:.2f}'.format)}")
        rho = "–" if r["spearman"] is None else f"{_num(r['spearman'], '{:+.2f}')} " + fmt_interval(
            r["spearman_ci_low"], r["spearman_ci_high"], lambda v: _num(v, "{:+.2f}"))
        note = "best" if r.get("best") == BEST else (r.get("note") or "")
        wins = " class='worse'" if r["n_false_wins"] else ""
        out.append(f"<tr><td>{escape(measure(r))}</td><td>{r['n_experiments']}</td>"
                   f"<td>{r['n_offline_significant']}{escape(sensitivity)}</td>"
                   f"<td>{escape(agreement)} ({r['n_agree']}/{r['n_both_significant']})</td>"
                   f"<td{wins}>{r['n_false_wins']}</td>"
                   f"<td>{escape(rho)}</td><td>{escape(note)}</td></tr>")
    out.append("</table>")
    return out


def section_agreement(data: Mapping[str, Any]) -> list[str]:
    """The section for ``data["agreement"]`` (nothing when there is no summary row)."""
    summary = data.get("agreement") or []
    if not summary:
        return []
    history = data.get("agreement_history") or []
    headline = data.get("agreement_headline")
    n = len({(r["experiment_run"], r["baseline"], r["candidate"]) for r in history})
    out = ["<section class='agreement'>", "<h2 id='agreement'>Does the offline metric predict the release?</h2>",
           f"<p class='sub legend'>Over {n} past experiments (published comparisons with a controlled release; "
           "experiments of different contracts apart): for each release outcome, how often each offline metric × K "
           "pointed the way the outcome moved when both were significant, with a Wilson interval; its false wins "
           "(offline significantly better, outcome significantly worse: <b class='worse'>red</b>, ringed); the "
           "rank correlation over experiments with a bootstrap interval. Two whose intervals overlap are not "
           "ranked; below the declared minimum of experiments, counts only. A small history says little: a "
           "correlation over few experiments has a wide interval.</p>"]
    groups: dict[tuple, list[Row]] = {}
    for r in summary:
        groups.setdefault((r["contract_fingerprint"], r["outcome"]), []).append(r)
    for (contract, outcome), rows in groups.items():
        out.append(f"<h3>{escape(outcome)} <span class='muted'>(better: {escape(rows[0]['better'])}; contract "
                   f"{escape(contract)})</span></h3>")
        out.append(f"<p>{escape(best_words(rows))}</p>")
        with_rho = [r for r in rows if r["spearman"] is not None]
        shown = []
        if with_rho:
            shown.append(max(with_rho, key=lambda r: (r["spearman"], -r["k"])))
        if headline is not None:
            shown += [r for r in rows if (r["metric"], r["k"]) == tuple(headline) and r not in shown]
        charts = []
        for r in shown:
            points = [p for p in history if p["outcome"] == outcome and (p["metric"], p["k"]) == (r["metric"], r["k"])
                      and contract in (POOLED, p["contract_fingerprint"])]
            if points:
                charts.append(f"<div>{scatter(points, measure(r), str(outcome))}</div>")
        if charts:
            out.append("<div class='beside'>" + "".join(charts) + "</div>")
        out += _table(rows)
    out.append("</section>")
    return out
