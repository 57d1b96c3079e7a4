"""The report's guardrail section: per comparison, the NDCG delta beside every guardrail's verdict.

For each baseline x candidate of the guardrail rows: one line that reads at a glance ("NDCG@5
+0.0912, time_to_procedure +12.0% (fail)"), a table of the overall guardrails (both arms' values
with their intervals and denominators, the difference with its interval, the margin, the verdict
in colour; a conditional statistic with the rates of reaching the event beside it), the slices
whose verdict differs from their overall one, and the fingerprint and declarations under a
``<details>``. :func:`guardrail_verdict_html` is the first screen's part. Pure functions of the
guardrail rows (dicts); the numbers and words are :mod:`ndcg_spark.report.text_guardrails`'s, so
the page says what the CLI says. Without guardrail rows the section is empty.

>>> rows = [{"baseline": "bm25", "candidate": "hybrid", "guardrail": "latency_p95", "statistic": "p95",
...          "slice_dimension": "overall", "slice_value": "all", "verdict": "fail", "overall_verdict": "fail"}]
>>> guardrail_verdict_html(rows, "bm25", "hybrid")
"<span class='guardrail-verdict'> · <a href='#guardrails'>guardrails</a> <b class='worse'>fail</b>: latency_p95</span>"
>>> guardrail_verdict_html(rows, "bm25", "dense"), section_guardrails({"guardrails": []})
('', [])
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ndcg_spark.report.format import (
    OVERALL,
    escape,
    fmt_count,
    fmt_delta,
    fmt_interval,
    fmt_points,
    fmt_share,
    plain,
    safe_name,
    td,
)
from ndcg_spark.report.panel import label, metric_of
from ndcg_spark.report.sections_comparison import comparison_pairs
from ndcg_spark.report.text_guardrails import (
    VERDICT_WORDS,
    disagreeing_slices,
    fmt_arm_interval,
    fmt_difference,
    fmt_margin,
    fmt_value,
    guardrail_label,
    headline_label,
    is_conditional,
    offline_headline,
    overall_rows,
    overall_verdict,
    release_counts,
    verdict_words,
)

__all__ = ["guardrail_verdict_html", "section_guardrails"]

Row = Mapping[str, Any]


def section_guardrails(data: Mapping[str, Any]) -> list[str]:
    """The section for ``data["guardrails"]`` (nothing when there is no row)."""
    rows = data.get("guardrails") or []
    if not rows:
        return []
    legend = "; ".join(f"<b class='{w.css}'>{escape(w.word)}</b>: {escape(w.meaning)}" for w in VERDICT_WORDS.values())
    out = ["<section class='guardrails'>", "<h2 id='guardrails'>Guardrails</h2>",
           "<p class='sub legend'>What must not get worse, declared beside the NDCG contract: per guardrail, "
           "candidate − baseline with its interval against the non-inferiority margin (how much worse the "
           f"candidate may be; its sign is the worse direction). {legend}. A mean or percentile is over the "
           "rows that reached the event, so it is shown with the rate of reaching it.</p>"]
    for (baseline, candidate), pair in comparison_pairs(rows).items():
        out += _comparison(str(baseline), str(candidate), pair, data.get("comparisons") or [])
    out += _declarations(rows)
    out.append("</section>")
    return out


def guardrail_verdict_html(rows: Sequence[Row], baseline: Any, candidate: Any) -> str:
    """The first screen's ``· guardrails fail: latency_p95`` for one comparison (naming the guardrails whose verdict
    is the overall one); empty without its rows."""
    pair = [r for r in rows if (r.get("baseline"), r.get("candidate")) == (baseline, candidate)]
    if not pair:
        return ""
    verdict = overall_verdict(pair)
    words = verdict_words(verdict)
    named = [guardrail_label(r) for r in overall_rows(pair) if verdict != "pass" and r.get("verdict") == verdict]
    return (f"<span class='guardrail-verdict'> · <a href='#guardrails'>guardrails</a> <b class='{words.css}'>"
            f"{escape(words.word)}</b>" + (f": {escape(', '.join(named))}" if named else "") + "</span>")


def _verdict_html(verdict: Any) -> str:
    words = verdict_words(verdict)
    return f"<b class='{words.css}'>{escape(words.word)}</b>"


def _comparison(b: str, c: str, pair: Sequence[Row], comparisons: Sequence[Row]) -> list[str]:
    """The glance line, the overall table and the disagreeing slices of one baseline x candidate."""
    overall = overall_rows(pair)
    out = [f"<h3 id='guardrails-{escape(safe_name(b))}-{escape(safe_name(c))}'>{escape(c)} (candidate) vs "
           f"{escape(b)} (baseline): guardrails {_verdict_html(overall_verdict(pair))}</h3>",
           _glance(overall, offline_headline(comparisons, pair[0].get("baseline"), pair[0].get("candidate"), pair[0]),
                   headline_label(pair[0])),
           "<table><tr><th class='l'>guardrail</th><th class='l'>statistic</th>"
           f"<th>{escape(b)} (baseline)</th><th>{escape(c)} (candidate)</th><th>difference [interval]</th>"
           "<th>margin</th><th class='l'>verdict</th></tr>"]
    for r in overall:
        better = f"{r.get('statistic')}, {r.get('better')} is better"
        out.append(f"<tr><td class='l'>{escape(guardrail_label(r))}<br><span class='den'>{escape(r.get('source'))}"
                   f"</span></td>{td(better, 'l')}"
                   f"{_arm_cell(r, 'baseline')}{_arm_cell(r, 'candidate')}{_difference_cell(r)}"
                   f"{td(fmt_margin(r))}<td class='l'>{_verdict_html(r.get('verdict'))}</td></tr>")
    out.append("</table>")
    return out + _slices(pair)


def _glance(overall: Sequence[Row], offline: Row | None, headline: str) -> str:
    """``NDCG@5 +0.0912 [...] · latency_p95 +29.8% (fail) · …``: every overall guardrail beside the
    headline metric's delta."""
    if offline is None:
        parts = [f"<span class='sub'>{escape(headline)}: no comparison row</span>"]
    else:
        interval = fmt_interval(offline.get("delta_macro_ci_low"), offline.get("delta_macro_ci_high"), fmt_delta)
        parts = [f"{escape(label(metric_of(offline), offline.get('k')))} <span class='num'>"
                 f"{escape(fmt_delta(offline.get('delta_macro')))}</span> <span class='ci'>{escape(interval)}</span>"]
    parts += [f"{escape(guardrail_label(r))} <span class='num'>{escape(fmt_difference(r)[0])}</span> "
              f"({_verdict_html(r.get('verdict'))})" for r in overall]
    return "<p class='big' data-guardrails='glance'>" + " · ".join(parts) + "</p>"


def _arm_cell(r: Row, side: str) -> str:
    """One arm's statistic with its interval; under it the denominator, and the reach rate of a conditional one."""
    n, observed = r.get(f"{side}_n"), r.get(f"{side}_n_observed")
    if is_conditional(r):
        den = (f"reached {fmt_share(r.get(f'{side}_observed_share'))} "
               f"({fmt_count(observed)} of {fmt_count(n)})")
    else:
        den = f"n = {fmt_count(n)}"
    return (f"<td><span class='num'>{escape(fmt_value(r, side))}</span> <span class='ci'>"
            f"{escape(fmt_arm_interval(r, side))}</span><br><span class='den'>{escape(den)}</span></td>")


def _difference_cell(r: Row) -> str:
    """The difference in the margin's terms with its interval; the change in reach rate under a conditional one."""
    value, interval = fmt_difference(r)
    reach = (f"<br><span class='den'>reach rate {escape(fmt_points(r.get('observed_share_difference')))}</span>"
             if is_conditional(r) else "")
    return f"<td><span class='num'>{escape(value)}</span> <span class='ci'>{escape(interval)}</span>{reach}</td>"


def _slices(pair: Sequence[Row]) -> list[str]:
    """The slice rows whose verdict differs from their overall row's (or a line saying every slice agrees)."""
    n_slices = sum(1 for r in pair if r.get("slice_dimension") != OVERALL)
    if not n_slices:
        return []
    disagree = disagreeing_slices(pair)
    if not disagree:
        return [f"<p class='sub'>Every slice agrees with its overall verdict ({fmt_count(n_slices)} slice rows).</p>"]
    out = [f"<p><b>Slices whose verdict differs from the overall one</b> <span class='sub'>({len(disagree)} of "
           f"{fmt_count(n_slices)} slice rows)</span></p>"
           "<table><tr><th class='l'>guardrail</th><th class='l'>slice</th>"
           "<th>baseline</th><th>candidate</th><th>difference [interval]</th><th class='l'>verdict</th>"
           "<th class='l'>overall</th></tr>"]
    for r, o in disagree:
        where = f"{r.get('slice_dimension')} = {r.get('slice_value')}"
        out.append(f"<tr>{td(guardrail_label(r), 'l')}{td(where, 'l')}{_arm_cell(r, 'baseline')}"
                   f"{_arm_cell(r, 'candidate')}{_difference_cell(r)}<td class='l'>{_verdict_html(r.get('verdict'))}"
                   f"</td><td class='l'>{_verdict_html(o.get('verdict'))}</td></tr>")
    out.append("</table>")
    return out


def _declarations(rows: Sequence[Row]) -> list[str]:
    """The fingerprint, the interval settings and every guardrail's resolved declaration, collapsed."""
    first = rows[0]
    declared = {str(r.get("guardrail")): r.get("declaration") for r in rows}
    settings = (("guardrail fingerprint", ", ".join(sorted({str(r.get("guardrail_fingerprint")) for r in rows}))),
                ("contract fingerprint", first.get("contract_fingerprint")),
                ("interval level", first.get("ci_level")), ("bootstrap replicates", first.get("bootstrap_replicates")),
                ("seed", first.get("seed")),
                ("release rows read / set aside", " / ".join(release_counts(rows) or ["n/a"])),
                ("code version", first.get("code_version")), ("written at", first.get("created_at")))
    out = [f"<details><summary>guardrail fingerprint {escape(settings[0][1])} · {len(declared)} declarations"
           "</summary><table>"]
    out += [f"<tr><th class='l'>{escape(k)}</th>{td(v, 'l wrap')}</tr>" for k, v in settings]
    out.append("</table><table><tr><th class='l'>guardrail</th><th class='l'>declaration</th></tr>")
    out += [f"<tr>{td(name, 'l')}{td(_declaration(text), 'l wrap')}</tr>" for name, text in sorted(declared.items())]
    out.append("</table></details>")
    return out


def _declaration(text: Any) -> str:
    """A stamped declaration (JSON) on one line with sorted keys; as given when it is not JSON."""
    try:
        return plain(json.loads(text)) if isinstance(text, str) else plain(text)
    except ValueError:
        return str(text)
