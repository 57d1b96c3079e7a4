"""The last section of the report: the contract, pool version, run and row accounting.

The declared choices come from the run-metadata row when there is one (what the run actually
used), else from the job configuration (and the page says so). Pure function of plain data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ndcg_spark.report.format import escape, fmt_count, plain, td

__all__ = ["section_contract"]


def section_contract(data: Mapping[str, Any]) -> list[str]:
    """The run's identity (ids, fingerprints, versions, times), its declared choices and its row accounting."""
    meta = data.get("metadata")
    aggs = data.get("aggregates") or []
    comparisons = data.get("comparisons") or []
    contract, agg_spec, source = _declared_choices(data)
    fingerprints = {str(r.get("contract_fingerprint")) for r in [*aggs, *comparisons] if r.get("contract_fingerprint")}
    if meta:
        fingerprints.add(str(meta.get("contract_fingerprint")))
    pools = sorted({r.get("pool_version") for r in aggs}
                   | {r.get(f"{s}_pool_version") for r in comparisons for s in ("baseline", "candidate")}, key=str)
    pools = [str(p) for p in pools if p is not None]
    identity = (
        ("run id", data.get("run_id")),
        ("contract fingerprint", ", ".join(sorted(fingerprints)) or "n/a"),
        ("pool version(s)", ", ".join(pools) or "n/a"),
        ("code version", (meta or {}).get("code_version") or next((r.get("code_version") for r in aggs), None)),
        ("run recorded at", (meta or {}).get("created_at")),
        ("config file", data.get("config_file")),
        ("page generated at", data.get("generated_at")),
    )
    out = ["<h2 id='contract'>The contract, pool version, run and row accounting</h2>",
           "<table>" + "".join(f"<tr><th class='l'>{escape(k)}</th><td class='l wrap'>{escape(v)}</td></tr>"
                               for k, v in identity) + "</table>",
           f"<h3>Declared choices</h3><p class='sub'>From {escape(source)}.</p><table>"
           "<tr><th class='l'>choice</th><th class='l'>value</th></tr>"]
    out += _choice_rows(contract or {})
    out.append("</table>")
    if agg_spec:
        out.append("<h3>Aggregation</h3><table><tr><th class='l'>choice</th><th class='l'>value</th></tr>")
        out += _choice_rows(agg_spec)
        out.append("</table>")
    out += _row_accounting((meta or {}).get("row_counts") or {})
    return out


def _declared_choices(data: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, Any, str]:
    """The contract and aggregation spec the run declared, and where they were read from."""
    meta = data.get("metadata")
    contract: Mapping[str, Any] | None = None
    agg_spec: Any = None
    if meta:
        try:
            contract = json.loads(meta.get("contract") or "null")
            agg_spec = json.loads(meta.get("aggregate_spec") or "null")
        except (TypeError, ValueError):
            contract = None
    if contract is None:
        return data.get("contract_from_config"), agg_spec, "the job configuration (no run-metadata row was found)"
    return contract, agg_spec, "the run-metadata table"


def _choice_rows(choices: Mapping[str, Any]) -> list[str]:
    return [f"<tr>{td(key, 'l')}{td(plain(value), 'l wrap')}</tr>" for key, value in choices.items()]


def _row_accounting(counts: Mapping[str, Any]) -> list[str]:
    """Per input, read = scored + quarantined (a red call-out when it does not balance), then every counter."""
    out = ["<h3>Row accounting</h3>"]
    if not counts:
        out.append("<p>No row counts recorded (no run-metadata row for this run).</p>")
        return out
    for name in sorted({key.rsplit(".", 1)[0] for key in counts if key.endswith(".rows_read")}):
        read, scored, quarantined = (counts.get(f"{name}.{column}")
                                     for column in ("rows_read", "rows_scored", "rows_quarantined"))
        if None in (read, scored, quarantined):
            continue
        balanced = int(read) == int(scored) + int(quarantined)
        out.append(f"<div class='{'ok' if balanced else 'callout'}'>{escape(name)}: {escape(fmt_count(read))} read = "
                   f"{escape(fmt_count(scored))} scored + {escape(fmt_count(quarantined))} quarantined"
                   + (" ✓" if balanced else " — <b>does not balance</b>") + "</div>")
    out.append("<table><tr><th class='l'>table / counter</th><th>rows</th></tr>")
    for key in sorted(counts):
        out.append(f"<tr>{td(key, 'l')}{td(fmt_count(counts[key]))}</tr>")
    out.append("</table>")
    return out
