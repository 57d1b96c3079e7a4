"""A self-contained static HTML report per run (and per comparison): look before you read.

Two halves, so the page is testable without Spark:

- :func:`collect_report_data` (Spark) reads one run's small tables -- aggregate, audit, run
  metadata, comparison -- with ``.collect()`` (they are aggregates: systems x K x slices rows)
  and reduces the per-request table to *bucketed counts* with :func:`histograms` (never raw
  rows). The result is plain Python: dicts, lists, numbers, strings.
- :func:`render_html` is a pure function of that data: one HTML string with inline CSS and
  hand-built inline SVG. No script, no font, no image is fetched; every value goes through
  :func:`html.escape`, so a slice value like ``<script>`` is shown, never run.

:func:`build_report` wires the two and writes ``<outputs.report_dir>/<run_id>/report.html`` plus
one ``comparison-<baseline>-vs-<candidate>.html`` per comparison of the run.

Examples
--------
>>> page = render_html({"run_id": "2026-11-29", "aggregates": [], "audit": [], "histograms": [],
...                     "comparisons": [], "metadata": None})
>>> page.startswith("<!DOCTYPE html>") and "run 2026-11-29" in page
True
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.job.config import JobConfig, Source
from ndcg_spark.errors import ContractError, InputError

__all__ = [
    "DEFAULT_BINS",
    "ReportSpec",
    "build_report",
    "collect_report_data",
    "histograms",
    "render_html",
    "report_configured",
    "report_dir",
]

#: buckets of the per-request NDCG histogram: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0]
DEFAULT_BINS = 10
OVERALL = "overall"

# --------------------------------------------------------------------------------- formatting
# The report formats every number with these, and the tests look for exactly these strings.


def fmt_mean(x: Any) -> str:
    """An NDCG or a share: 4 decimals; ``n/a`` when there is none."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{float(x):.4f}"


def fmt_delta(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{float(x):+.4f}"


def fmt_count(n: Any) -> str:
    return "n/a" if n is None else f"{int(n):,}"


def fmt_p(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):.3f}"


def fmt_interval(lo: Any, hi: Any, fmt=fmt_mean) -> str:
    return "" if lo is None or hi is None else f"[{fmt(lo)}, {fmt(hi)}]"


def _flag(value: Any) -> bool:
    """A boolean column value (a CSV table reads it back as the string ``"true"``)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


# ------------------------------------------------------------------------------------- spec
class ReportSpec:
    """The ``report:`` section of the job YAML: ``{bins: 10, k: <a cutoff>}``.

    ``k`` is the cutoff the slice charts are drawn at (default: the largest); tables list every K.
    """

    def __init__(self, bins: int = DEFAULT_BINS, k: int | None = None) -> None:
        if isinstance(bins, bool) or not isinstance(bins, int) or not 2 <= bins <= 100:
            raise ContractError("report.bins", f"must be an integer from 2 to 100, got {bins!r}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ContractError("report.k", f"must be an integer >= 1 (one of contract.k), got {k!r}")
        self.bins, self.k = bins, k

    @classmethod
    def from_dict(cls, data: Any) -> ReportSpec:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ContractError("report", f"must be a mapping, got {type(data).__name__}")
        for key in data:
            if key not in ("bins", "k"):
                raise ContractError(f"report.{key}", "is not a known field; known: bins, k")
        return cls(**dict(data))


# ------------------------------------------------------------------------------------ Spark
def histograms(per_request: DataFrame, bins: int = DEFAULT_BINS) -> DataFrame:
    """Bucketed counts of per-request NDCG and of unjudged-in-top-K, per system x pool x K.

    Returns rows ``system, pool_version, k, metric, bucket, count``: ``metric = 'ndcg'`` with
    ``bucket`` ``i`` for NDCG in ``[i / bins, (i + 1) / bins)`` (1.0 in the last bucket) and a
    null bucket for requests without an NDCG (empty ideal under ``exclude``);
    ``metric = 'unjudged_in_top_k'`` with the count itself as the bucket (null under
    ``unjudged: zero``, which does not count them).

    Examples
    --------
    >>> pr = spark.createDataFrame([("s", "p", 3, 0.05, 0), ("s", "p", 3, 1.0, 2), ("s", "p", 3, None, 1)],
    ...     "system string, pool_version string, k int, ndcg double, n_unjudged_in_top_k int")
    >>> histograms(pr, bins=10).orderBy("metric", "bucket").select("metric", "bucket", "count").show()
    +-----------------+------+-----+
    |           metric|bucket|count|
    +-----------------+------+-----+
    |             ndcg|  NULL|    1|
    |             ndcg|     0|    1|
    |             ndcg|     9|    1|
    |unjudged_in_top_k|     0|    1|
    |unjudged_in_top_k|     1|    1|
    |unjudged_in_top_k|     2|    1|
    +-----------------+------+-----+
    <BLANKLINE>
    """
    keys = ["system", "pool_version", "k"]
    ndcg = F.col("ndcg").cast("double")
    bucket = F.when(ndcg.isNotNull(), F.least(F.floor(ndcg * bins).cast("int"), F.lit(bins - 1)))
    unjudged = F.col("n_unjudged_in_top_k").cast("int")
    both = per_request.select(
        *keys,
        F.explode(
            F.array(
                F.struct(F.lit("ndcg").alias("metric"), bucket.alias("bucket")),
                F.struct(F.lit("unjudged_in_top_k").alias("metric"), unjudged.alias("bucket")),
            )
        ).alias("_h"),
    )
    return (
        both.groupBy(*keys, F.col("_h.metric").alias("metric"), F.col("_h.bucket").alias("bucket"))
        .agg(F.count(F.lit(1)).alias("count"))
    )


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _output(config: JobConfig, name: str) -> Source | None:
    base = config.section("base")
    return Source.parse((config.section("outputs") or {}).get(name), f"outputs.{name}", Path(base) if base else None)


def _exists(spark: SparkSession, target: Source) -> bool:
    if target.table is not None:
        return spark.catalog.tableExists(target.table)
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(target.path)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path)


def collect_report_data(spark: SparkSession, config: JobConfig, run_id: str) -> dict[str, Any]:
    """Everything the page shows for ``run_id``, as plain Python (see :func:`render_html`).

    Reads ``outputs.per_request`` (histograms only), ``outputs.aggregate`` (required),
    ``outputs.run_metadata`` and ``outputs.comparison`` (optional: the page says when they are
    missing). The audit is read from ``outputs.audit`` if configured, else recomputed from the
    aggregate rows with :func:`ndcg_spark.aggregation.means.audit` (same definition, a few rows).
    """
    from ndcg_spark.job.io import read_run

    spec = ReportSpec.from_dict(config.section("report"))
    aggregate_target = _output(config, "aggregate")
    if aggregate_target is None:
        raise ContractError("outputs.aggregate", "is required for a report (the aggregate table of stage 2)")
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required for a report (its histograms)")
    if not _exists(spark, aggregate_target):
        raise InputError(f"report: no aggregate table at {aggregate_target.describe()}; run stage 2 first (ndcg-spark run)")
    aggregates_df = read_run(spark, aggregate_target, run_id)
    aggregates = _rows(aggregates_df)
    if not aggregates:
        raise InputError(
            f"report: run {run_id!r} has no rows in the aggregate table ({aggregate_target.describe()}); "
            "run it first (ndcg-spark run --run-id …)"
        )
    audit_target = (config.section("outputs") or {}).get("audit")
    if audit_target:
        audit_rows = _rows(read_run(spark, _output(config, "audit"), run_id))
    else:
        from ndcg_spark.aggregation.means import audit

        audit_rows = _rows(audit(aggregates_df))
    metadata = None
    meta_target = _output(config, "run_metadata")
    if meta_target is not None and _exists(spark, meta_target):
        meta = _rows(read_run(spark, meta_target, run_id))
        metadata = meta[0] if meta else None
    comparisons: list[dict[str, Any]] = []
    cmp_target = _output(config, "comparison")
    if cmp_target is not None and _exists(spark, cmp_target):
        comparisons = _rows(read_run(spark, cmp_target, run_id))
    hist = _rows(histograms(read_run(spark, config.per_request, run_id), spec.bins))
    return {
        "run_id": run_id,
        "run_status": _run_status(spark, config, run_id),
        "bins": spec.bins,
        "chart_k": spec.k,
        "aggregates": aggregates,
        "audit": audit_rows,
        "metadata": metadata,
        "contract_from_config": config.contract.to_dict(),
        "comparisons": comparisons,
        "histograms": hist,
        "config_file": config.source_file,
        "generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def _run_status(spark: SparkSession, config: JobConfig, run_id: str) -> str | None:
    """The run's publication status (:mod:`ndcg_spark.job.publish`): ``complete``, ``running`` or None."""
    from ndcg_spark.job.io import read_run
    from ndcg_spark.job.publish import run_status_target

    target = run_status_target(config)
    if not _exists(spark, target):
        return None
    rows = read_run(spark, target, run_id).select("status").collect()
    return rows[0]["status"] if rows else None


def report_dir(config: JobConfig) -> Path:
    """``outputs.report_dir`` (relative to the checkout like every path), default ``<checkout>/reports``."""
    base = config.section("base")
    value = (config.section("outputs") or {}).get("report_dir", "reports")
    if not isinstance(value, str) or not value or "://" in value:
        raise ContractError("outputs.report_dir", f"must be a local folder path, got {value!r}")
    path = Path(value)
    return path if path.is_absolute() or not base else Path(base) / path


def report_configured(config: JobConfig) -> bool:
    """Whether the job has the tables a report is built from (``outputs.aggregate``, stage 2)."""
    return bool((config.section("outputs") or {}).get("aggregate"))


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80] or "_"


def build_report(spark: SparkSession, config: JobConfig, run_id: str) -> Path:
    """Write the run's report (and one page per comparison); returns the run report's path.

    ``<report_dir>/<run_id>/report.html``; comparisons as
    ``<report_dir>/<run_id>/comparison-<baseline>-vs-<candidate>.html``. Each file is written to a
    temporary name and renamed, so a reader never sees half a page.
    """
    data = collect_report_data(spark, config, run_id)
    folder = report_dir(config) / _safe_name(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "report.html"
    _write_atomic(out, render_html(data))
    for (baseline, candidate), rows in _group_comparisons(data["comparisons"]).items():
        page = dict(data, aggregates=[], audit=[], histograms=[], comparisons=rows)
        name = f"comparison-{_safe_name(str(baseline))}-vs-{_safe_name(str(candidate))}.html"
        _write_atomic(folder / name, render_html(page))
    return out


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# ----------------------------------------------------------------------------------- render
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;
color:#1d2330;line-height:1.4;padding:0 16px}
h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:36px;border-bottom:2px solid #dde3ec;padding-bottom:4px}
h3{margin-bottom:6px}.sub{color:#5b6577}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.92em}
th,td{border:1px solid #d5dbe5;padding:4px 8px;text-align:right;vertical-align:top}td{white-space:nowrap}
td.wrap{white-space:normal;max-width:760px;overflow-wrap:anywhere}
th{background:#f1f4f9}td.l,th.l{text-align:left}
.num{font-variant-numeric:tabular-nums;font-weight:600}.ci{color:#5b6577;font-size:.9em}
.den{color:#39465c;font-size:.88em;white-space:nowrap}
.notice{border:3px solid #c0392b;background:#fdecea;padding:12px 16px;margin:16px 0;border-radius:6px}
.notice h3{margin-top:0;color:#a93226}.callout{border-left:5px solid #c0392b;background:#fbf3f2;padding:6px 12px;margin:6px 0}
.ok{border-left:5px solid #2e86c1;background:#eef6fb;padding:6px 12px;margin:6px 0}
.small{color:#8a6d00}.grid{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #e1e6ee;padding:6px;border-radius:4px}
svg text{font-family:inherit;font-size:11px;fill:#1d2330}svg .muted{fill:#6b7587}
code{background:#f1f4f9;padding:1px 4px;border-radius:3px}details{margin:8px 0}
"""

_BLUE, _RED, _GREY, _ORANGE = "#2e6bb8", "#c0392b", "#9aa3b2", "#d68910"


def _sort_key(row: Mapping[str, Any], *names: str) -> tuple:
    return tuple((row.get(n) is None, str(row.get(n)) if not isinstance(row.get(n), (int, float)) else row.get(n))
                 for n in names)


def _group_comparisons(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[Any, Any], list[Mapping[str, Any]]]:
    out: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault((r.get("baseline"), r.get("candidate")), []).append(r)
    return out


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, x = [], first
    while x <= hi + 1e-9:
        out.append(round(x, 10))
        x += step
    return out


def _domain(values: Iterable[Any], *, clamp: tuple[float, float] | None, include: Iterable[float] = ()) -> tuple[float, float]:
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    vals += list(include)
    if not vals:
        return (0.0, 1.0) if clamp else (-0.1, 0.1)
    lo, hi = min(vals), max(vals)
    pad = max((hi - lo) * 0.08, 0.01)
    lo, hi = lo - pad, hi + pad
    if clamp:
        lo, hi = max(lo, clamp[0]), min(hi, clamp[1])
    return lo, hi


def interval_chart(
    items: Sequence[Mapping[str, Any]],
    *,
    reference: float | None = None,
    reference_label: str = "overall",
    clamp: tuple[float, float] | None = (0.0, 1.0),
    fmt=fmt_mean,
    width: int = 620,
    label_width: int = 190,
) -> str:
    """A horizontal dot-and-whisker chart: one row per item ``{label, value, lo, hi, style, note}``.

    ``style`` is ``None``, ``"worst"`` (red) or ``"small"`` (hollow, amber, below the minimum);
    ``reference`` draws a dashed vertical line (the overall mean, or 0 for deltas).
    """
    row_h, top, bottom, right = 22, 22, 26, 70
    height = top + bottom + row_h * max(len(items), 1)
    include = [reference] if reference is not None else []
    lo, hi = _domain([v for it in items for v in (it.get("value"), it.get("lo"), it.get("hi"))], clamp=clamp,
                     include=include)
    plot_w = width - label_width - right

    def x(v: float) -> float:
        return label_width + (float(v) - lo) / (hi - lo) * plot_w if hi > lo else label_width + plot_w / 2

    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for t in _ticks(lo, hi):
        parts.append(f'<line x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{height - bottom}" stroke="#edf0f5"/>')
        parts.append(f'<text class="muted" x="{x(t):.1f}" y="{height - bottom + 14}" text-anchor="middle">{_e(fmt(t))}</text>')
    if reference is not None:
        rx = x(reference)
        parts.append(f'<line x1="{rx:.1f}" y1="{top - 8}" x2="{rx:.1f}" y2="{height - bottom}" stroke="#333" '
                     'stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{rx:.1f}" y="{top - 10}" text-anchor="middle">{_e(reference_label)} {_e(fmt(reference))}</text>')
    for i, it in enumerate(items):
        cy = top + row_h * i + row_h / 2
        style = it.get("style")
        color = _RED if style == "worst" else _ORANGE if style == "small" else _BLUE
        label = str(it.get("label"))
        label = label if len(label) <= 28 else label[:27] + "…"
        weight = ' font-weight="bold"' if style == "worst" else ""
        parts.append(f'<text x="{label_width - 8}" y="{cy + 4:.1f}" text-anchor="end"{weight}>{_e(label)}</text>')
        value, a, b = it.get("value"), it.get("lo"), it.get("hi")
        tip = f"{it.get('label')}: {fmt(value)} {fmt_interval(a, b, fmt)} {it.get('note') or ''}".strip()
        parts.append(f"<g><title>{_e(tip)}</title>")
        if a is not None and b is not None:
            parts.append(f'<line x1="{x(a):.1f}" y1="{cy:.1f}" x2="{x(b):.1f}" y2="{cy:.1f}" stroke="{color}" stroke-width="2"/>')
            for end in (a, b):
                parts.append(f'<line x1="{x(end):.1f}" y1="{cy - 5:.1f}" x2="{x(end):.1f}" y2="{cy + 5:.1f}" stroke="{color}"/>')
        if value is not None:
            fill = "#fff" if style == "small" else color
            parts.append(f'<circle cx="{x(value):.1f}" cy="{cy:.1f}" r="4.5" fill="{fill}" stroke="{color}" stroke-width="2"/>')
            parts.append(f'<text x="{width - right + 6}" y="{cy + 4:.1f}">{_e(fmt(value))}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(bars: Sequence[tuple[str, int]], *, title: str, width: int = 270, height: int = 150,
              extra: tuple[str, int] | None = None) -> str:
    """Vertical bars (label, count), with ``extra`` drawn apart in grey (e.g. requests without an NDCG)."""
    top, bottom, left = 22, 30, 8
    all_bars = list(bars) + ([extra] if extra else [])
    peak = max([c for _, c in all_bars] + [1])
    n = max(len(all_bars), 1) + (0.6 if extra else 0)
    slot = (width - left * 2) / n
    plot_h = height - top - bottom
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
             f'<text x="{left}" y="13" font-weight="bold">{_e(title)}</text>']
    for i, (label, count) in enumerate(all_bars):
        is_extra = extra is not None and i == len(all_bars) - 1
        x0 = left + slot * (i + (0.6 if is_extra else 0))
        h = plot_h * count / peak
        color = _GREY if is_extra else _BLUE
        parts.append(f"<g><title>{_e(label)}: {_e(fmt_count(count))} requests</title>"
                     f'<rect x="{x0 + 1:.1f}" y="{top + plot_h - h:.1f}" width="{max(slot - 2, 1):.1f}" '
                     f'height="{h:.1f}" fill="{color}"/></g>')
        if len(all_bars) <= 16 or i % 2 == 0 or is_extra:
            parts.append(f'<text class="muted" x="{x0 + slot / 2:.1f}" y="{height - bottom + 12}" '
                         f'text-anchor="middle" font-size="9">{_e(label)}</text>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - left}" y2="{top + plot_h}" stroke="#888"/>')
    parts.append(f'<text class="muted" x="{width - left}" y="13" text-anchor="end">max {_e(fmt_count(peak))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _td(text: Any, cls: str = "") -> str:
    return f'<td class="{cls}">{_e(text)}</td>' if cls else f"<td>{_e(text)}</td>"


def _mean_cell(mean: Any, lo: Any, hi: Any) -> str:
    ci = fmt_interval(lo, hi)
    return f'<td><span class="num">{_e(fmt_mean(mean))}</span> <span class="ci">{_e(ci)}</span></td>'


def _den(row: Mapping[str, Any]) -> str:
    return (f'<span class="den">{_e(fmt_count(row.get("n_eligible")))} eligible · '
            f'{_e(fmt_count(row.get("n_empty_ideal")))} empty-ideal · {_e(fmt_count(row.get("n_requests")))} all</span>')


def _section_overall(aggs: list[Mapping[str, Any]]) -> list[str]:
    overall = sorted((r for r in aggs if r.get("slice_dimension") == OVERALL),
                     key=lambda r: _sort_key(r, "system", "pool_version", "k"))
    level = next((r.get("ci_level") for r in overall if r.get("ci_level")), None)
    out = ["<h2 id='overall'>Overall NDCG@K per system</h2>",
           f"<p class='sub'>Macro mean: every eligible request counts once. Weighted: by traffic weight. "
           f"{_e(f'{level:.0%} bootstrap intervals over requests' if level else 'No intervals (replicates: 0)')}. "
           "Beside every mean, its denominator: eligible requests (with an NDCG), empty-ideal requests "
           "(IDCG = 0, set aside or scored 0 as the contract says) and all requests.</p>",
           "<table><tr><th class='l'>system</th><th class='l'>pool version</th><th>K</th><th>macro NDCG [interval]</th>"
           "<th>weighted NDCG [interval]</th><th>eligible</th><th>empty-ideal</th><th>all requests</th>"
           "<th>unjudged share of top K</th></tr>"]
    for r in overall:
        out.append(
            "<tr>" + _td(r.get("system"), "l") + _td(r.get("pool_version"), "l") + _td(r.get("k"))
            + _mean_cell(r.get("macro_ndcg"), r.get("macro_ci_low"), r.get("macro_ci_high"))
            + _mean_cell(r.get("weighted_ndcg"), r.get("weighted_ci_low"), r.get("weighted_ci_high"))
            + _td(fmt_count(r.get("n_eligible"))) + _td(fmt_count(r.get("n_empty_ideal")))
            + _td(fmt_count(r.get("n_requests"))) + _td(fmt_mean(r.get("unjudged_share"))) + "</tr>"
        )
    out.append("</table>")
    ks = sorted({r.get("k") for r in overall if r.get("k") is not None})
    out.append("<div class='grid'>")
    for k in ks:
        items = [{"label": f"{r.get('system')} ({r.get('pool_version')})", "value": r.get("macro_ndcg"),
                  "lo": r.get("macro_ci_low"), "hi": r.get("macro_ci_high"),
                  "note": f"{fmt_count(r.get('n_eligible'))} eligible / {fmt_count(r.get('n_requests'))} all"}
                 for r in overall if r.get("k") == k]
        out.append(f"<div class='card'><b>macro NDCG@{_e(k)}</b><br>"
                   + interval_chart(items, clamp=(0.0, 1.0), width=560, label_width=180) + "</div>")
    out.append("</div>")
    return out


def _chart_k(data: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> Any:
    ks = sorted({r.get("k") for r in rows if r.get("k") is not None})
    wanted = data.get("chart_k")
    return wanted if wanted in ks else (ks[-1] if ks else None)


def _section_slices(data: Mapping[str, Any]) -> list[str]:
    aggs, audit_rows = data.get("aggregates") or [], data.get("audit") or []
    dims = sorted({r.get("slice_dimension") for r in aggs if r.get("slice_dimension") != OVERALL}, key=str)
    if not dims:
        return ["<h2 id='slices'>Slices</h2><p>No slice dimensions were aggregated.</p>"]
    k = _chart_k(data, aggs)
    min_el = next((r.get("min_eligible") for r in aggs if r.get("min_eligible") is not None), None)
    out = ["<h2 id='slices'>Slices</h2>",
           f"<p class='sub'>Per slice dimension, macro NDCG@{_e(k)} of every slice with its interval against the "
           f"overall mean (dashed). <span class='small'>Hollow amber: a small slice</span> (fewer than "
           f"{_e(fmt_count(min_el))} eligible requests: reported, not ranked). <b style='color:{_RED}'>Red</b>: the "
           "worst ranked slice (the audit); its call-out is red when its whole interval lies below the overall "
           "mean (a screening flag: the worst of several is low partly by selection). Every K is in the tables.</p>"]
    systems = sorted({(r.get("system"), r.get("pool_version")) for r in aggs}, key=lambda s: tuple(map(str, s)))
    for dim in dims:
        out.append(f"<h3>{_e(dim)}</h3>")
        # call-outs: the audit rows at every K, charts at the chart K
        for a in sorted((a for a in audit_rows if a.get("slice_dimension") == dim),
                        key=lambda a: _sort_key(a, "system", "pool_version", "k")):
            if a.get("worst_slice_value") is None and a.get("worst_macro_ndcg") is None:
                out.append(f"<div class='ok'>{_e(a.get('system'))} @{_e(a.get('k'))}: no slice of {_e(dim)} has "
                           f"enough eligible requests to rank ({_e(a.get('n_slices_ranked'))} of "
                           f"{_e(a.get('n_slices'))}).</div>")
                continue
            below = _flag(a.get("ci_below_overall"))
            out.append(
                f"<div class='{'callout' if below else 'ok'}'>Worst slice of <b>{_e(dim)}</b> for <b>{_e(a.get('system'))}</b> "
                f"@{_e(a.get('k'))}: <b>{_e(a.get('worst_slice_value'))}</b> — "
                f"<span class='num'>{_e(fmt_mean(a.get('worst_macro_ndcg')))}</span> "
                f"<span class='ci'>{_e(fmt_interval(a.get('worst_ci_low'), a.get('worst_ci_high')))}</span>, "
                f"{_e(fmt_count(a.get('worst_n_eligible')))} eligible; gap {_e(fmt_delta(a.get('gap_to_overall')))} "
                f"to the overall {_e(fmt_mean(a.get('overall_macro_ndcg')))}"
                + ("; <b>its whole interval lies below the overall mean</b>." if below
                   else "; its interval reaches the overall mean (within the noise at this sample size).")
                + f" ({_e(a.get('n_slices_ranked'))} of {_e(a.get('n_slices'))} slices ranked.)</div>"
            )
        out.append("<div class='grid'>")
        for system, pool in systems:
            rows = [r for r in aggs if r.get("slice_dimension") == dim and r.get("system") == system
                    and r.get("pool_version") == pool and r.get("k") == k]
            if not rows:
                continue
            overall = next((r for r in aggs if r.get("slice_dimension") == OVERALL and r.get("system") == system
                            and r.get("pool_version") == pool and r.get("k") == k), {})
            worst = next((a.get("worst_slice_value") for a in audit_rows if a.get("slice_dimension") == dim
                          and a.get("system") == system and a.get("pool_version") == pool and a.get("k") == k), None)
            items = []
            for r in sorted(rows, key=lambda r: _sort_key(r, "slice_value")):
                small = _flag(r.get("below_min_eligible"))
                style = "worst" if (worst is not None and r.get("slice_value") == worst and not small) else (
                    "small" if small else None)
                items.append({"label": f"{r.get('slice_value')}" + (" (small)" if small else "")
                              + (" ◀ worst" if style == "worst" else ""),
                              "value": r.get("macro_ndcg"), "lo": r.get("macro_ci_low"), "hi": r.get("macro_ci_high"),
                              "style": style, "note": f"{fmt_count(r.get('n_eligible'))} eligible"})
            out.append(f"<div class='card'><b>{_e(system)}</b> <span class='sub'>({_e(pool)}) · macro NDCG@{_e(k)}"
                       "</span><br>" + interval_chart(items, reference=overall.get("macro_ndcg"), width=560) + "</div>")
        out.append("</div>")
        rows = sorted((r for r in aggs if r.get("slice_dimension") == dim),
                      key=lambda r: _sort_key(r, "system", "pool_version", "k", "slice_value"))
        out.append(f"<details><summary>{_e(dim)}: every slice at every K ({len(rows)} rows)</summary><table>"
                   "<tr><th class='l'>system</th><th>K</th><th class='l'>slice</th><th>macro NDCG [interval]</th>"
                   "<th>weighted NDCG [interval]</th><th>eligible</th><th>empty-ideal</th><th>all</th><th>small</th></tr>")
        for r in rows:
            out.append("<tr>" + _td(r.get("system"), "l") + _td(r.get("k")) + _td(r.get("slice_value"), "l")
                       + _mean_cell(r.get("macro_ndcg"), r.get("macro_ci_low"), r.get("macro_ci_high"))
                       + _mean_cell(r.get("weighted_ndcg"), r.get("weighted_ci_low"), r.get("weighted_ci_high"))
                       + _td(fmt_count(r.get("n_eligible"))) + _td(fmt_count(r.get("n_empty_ideal")))
                       + _td(fmt_count(r.get("n_requests"))) + _td("small" if _flag(r.get("below_min_eligible")) else "")
                       + "</tr>")
        out.append("</table></details>")
    return out


def _section_distributions(data: Mapping[str, Any]) -> list[str]:
    hist = data.get("histograms") or []
    if not hist:
        return []
    bins = int(data.get("bins") or DEFAULT_BINS)
    groups = sorted({(h.get("system"), h.get("pool_version"), h.get("k")) for h in hist},
                    key=lambda g: (str(g[0]), str(g[1]), g[2] if g[2] is not None else -1))
    out = ["<h2 id='distributions'>Distribution of per-request NDCG and of unjudged-in-top-K</h2>",
           "<p class='sub'>Counts of requests per bucket (bucketed in Spark; no per-request row leaves the cluster). "
           "NDCG buckets are <code>[i/%d, (i+1)/%d)</code>, 1.0 in the last; the grey bar counts requests "
           "without an NDCG (empty ideal under <code>exclude</code>).</p>" % (bins, bins)]
    for metric, heading in (("ndcg", "per-request NDCG@K"), ("unjudged_in_top_k", "unjudged candidates in the top K")):
        out.append(f"<h3>{_e(heading)}</h3><div class='grid'>")
        for system, pool, k in groups:
            rows = [h for h in hist if h.get("metric") == metric and (h.get("system"), h.get("pool_version"),
                                                                     h.get("k")) == (system, pool, k)]
            counts = {h.get("bucket"): int(h.get("count") or 0) for h in rows}
            title = f"{system} @{k}"
            if metric == "ndcg":
                bars = [(f"{i / bins:.1f}", counts.get(i, 0)) for i in range(bins)]
                extra = ("none", counts[None]) if counts.get(None) else None
                chart = bar_chart(bars, title=title, extra=extra)
            else:
                if not rows or set(counts) == {None}:
                    chart = bar_chart([], title=f"{title}: not counted (unjudged: zero)")
                else:
                    top = max([b for b in counts if b is not None] + [0])
                    chart = bar_chart([(str(i), counts.get(i, 0)) for i in range(top + 1)], title=title)
            out.append(f"<div class='card'>{chart}</div>")
        out.append("</div>")
    return out


def _section_comparisons(data: Mapping[str, Any]) -> list[str]:
    groups = _group_comparisons(data.get("comparisons") or [])
    out: list[str] = []
    for (baseline, candidate), rows in groups.items():
        first = rows[0]
        overall = sorted((r for r in rows if r.get("slice_dimension") == OVERALL), key=lambda r: _sort_key(r, "k"))
        top = overall[-1] if overall else first
        b, c = str(baseline), str(candidate)
        out.append(f"<h2 id='comparison-{_e(_safe_name(b))}-{_e(_safe_name(c))}'>Comparison: {_e(c)} (candidate) vs "
                   f"{_e(b)} (baseline)</h2>")
        kind = first.get("comparison_kind")
        out.append(f"<p>Kind: <b>{_e(kind)}</b>. Pools: {_e(b)} <code>{_e(first.get('baseline_pool_version'))}</code>, "
                   f"{_e(c)} <code>{_e(first.get('candidate_pool_version'))}</code>. NDCG ideal: "
                   f"<code>{_e(first.get('ndcg_ideal'))}</code>. Delta = candidate − baseline over paired requests "
                   f"(both sides have an NDCG); {_e(first.get('bootstrap_replicates'))} paired bootstrap replicates, "
                   f"{_e(first.get('permutations'))} sign flips, seed {_e(first.get('seed'))}, tie when |delta| ≤ "
                   f"{_e(first.get('tie_tolerance'))}.</p>")
        if _flag(first.get("pools_differ")) or kind == "end_to_end":
            why = ("The two sides ranked <b>different candidate pools</b> "
                   f"({_e(fmt_count(top.get('n_pool_differs')))} shared requests with different candidate sets), so a "
                   "difference can come from what was retrieved as well as from how it was ranked."
                   if _flag(first.get("pools_differ")) else "Requested as end-to-end; the two sides ranked the same candidates.")
            out.append(
                "<div class='notice' role='alert'><h3>⚠ End-to-end comparison — not a reranker comparison</h3>"
                f"<p>{why} Both sides' NDCG uses one shared ideal from the judgments.</p>"
                "<p>Candidate recall (positives in the pool ÷ all known positives, over "
                f"{_e(fmt_count(top.get('n_recall_requests')))} shared requests with a known positive):</p><table>"
                "<tr><th class='l'>side</th><th>recall (macro)</th><th>recall (weighted)</th></tr>"
                f"<tr>{_td(b + ' (baseline)', 'l')}{_td(fmt_mean(top.get('baseline_recall_macro')))}"
                f"{_td(fmt_mean(top.get('baseline_recall_weighted')))}</tr>"
                f"<tr>{_td(c + ' (candidate)', 'l')}{_td(fmt_mean(top.get('candidate_recall_macro')))}"
                f"{_td(fmt_mean(top.get('candidate_recall_weighted')))}</tr></table></div>"
            )
        out.append("<table><tr><th>K</th><th>paired</th><th>" + _e(b) + " macro</th><th>" + _e(c) + " macro</th>"
                   "<th>delta macro [interval]</th><th>p</th><th>delta weighted [interval]</th><th>p</th>"
                   "<th>win / tie / loss</th><th>all requests</th></tr>")
        for r in overall:
            out.append("<tr>" + _td(r.get("k")) + _td(fmt_count(r.get("n_paired")))
                       + _td(fmt_mean(r.get("baseline_ndcg_macro"))) + _td(fmt_mean(r.get("candidate_ndcg_macro")))
                       + _delta_cell(r, "macro") + _td(fmt_p(r.get("p_value_macro")))
                       + _delta_cell(r, "weighted") + _td(fmt_p(r.get("p_value_weighted")))
                       + _td(f"{fmt_count(r.get('wins'))} / {fmt_count(r.get('ties'))} / {fmt_count(r.get('losses'))}")
                       + _td(fmt_count(r.get("n_requests"))) + "</tr>")
        out.append("</table>")
        out.append(
            f"<p class='sub'>Requests at K={_e(top.get('k'))}: {_e(fmt_count(top.get('n_requests')))} in all; "
            f"{_e(fmt_count(top.get('n_paired')))} paired; {_e(b)} only: {_e(fmt_count(top.get('n_only_baseline_missing')))} "
            f"({_e(c)} has no row) + {_e(fmt_count(top.get('n_only_baseline_empty')))} ({_e(c)}'s ideal empty); {_e(c)} "
            f"only: {_e(fmt_count(top.get('n_only_candidate_missing')))} + {_e(fmt_count(top.get('n_only_candidate_empty')))}; "
            f"neither: {_e(fmt_count(top.get('n_neither')))}.</p>")
        items = [{"label": f"K = {r.get('k')}", "value": r.get("delta_macro"), "lo": r.get("delta_macro_ci_low"),
                  "hi": r.get("delta_macro_ci_high")} for r in overall]
        out.append("<div class='card'><b>delta macro NDCG per K</b><br>"
                   + interval_chart(items, reference=0.0, reference_label="no difference", clamp=None, fmt=fmt_delta)
                   + "</div>")
        k = _chart_k(data, rows)
        dims = sorted({r.get("slice_dimension") for r in rows if r.get("slice_dimension") != OVERALL}, key=str)
        if dims:
            out.append(f"<h3>Delta per slice (macro, K = {_e(k)})</h3><div class='grid'>")
            for dim in dims:
                srows = sorted((r for r in rows if r.get("slice_dimension") == dim and r.get("k") == k),
                               key=lambda r: _sort_key(r, "slice_value"))
                items = [{"label": f"{r.get('slice_value')}" + (" (small)" if _flag(r.get("below_min_paired")) else ""),
                          "value": r.get("delta_macro"), "lo": r.get("delta_macro_ci_low"),
                          "hi": r.get("delta_macro_ci_high"), "style": "small" if _flag(r.get("below_min_paired")) else None,
                          "note": f"{fmt_count(r.get('n_paired'))} paired"} for r in srows]
                out.append(f"<div class='card'><b>{_e(dim)}</b><br>" + interval_chart(
                    items, reference=0.0, reference_label="0", clamp=None, fmt=fmt_delta, width=560) + "</div>")
            out.append("</div>")
            srows = sorted((r for r in rows if r.get("slice_dimension") != OVERALL),
                           key=lambda r: _sort_key(r, "slice_dimension", "k", "slice_value"))
            out.append(f"<details><summary>every slice at every K ({len(srows)} rows)</summary><table>"
                       "<tr><th class='l'>dimension</th><th class='l'>slice</th><th>K</th><th>paired</th>"
                       "<th>delta macro [interval]</th><th>p</th><th>win / tie / loss</th><th>small</th></tr>")
            for r in srows:
                out.append("<tr>" + _td(r.get("slice_dimension"), "l") + _td(r.get("slice_value"), "l")
                           + _td(r.get("k")) + _td(fmt_count(r.get("n_paired"))) + _delta_cell(r, "macro")
                           + _td(fmt_p(r.get("p_value_macro")))
                           + _td(f"{fmt_count(r.get('wins'))} / {fmt_count(r.get('ties'))} / {fmt_count(r.get('losses'))}")
                           + _td("small" if _flag(r.get("below_min_paired")) else "") + "</tr>")
            out.append("</table></details>")
    return out


def _delta_cell(r: Mapping[str, Any], which: str) -> str:
    ci = fmt_interval(r.get(f"delta_{which}_ci_low"), r.get(f"delta_{which}_ci_high"), fmt_delta)
    return f'<td><span class="num">{_e(fmt_delta(r.get(f"delta_{which}")))}</span> <span class="ci">{_e(ci)}</span></td>'


def _plain(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "null" if value is None else str(value)


def _section_contract(data: Mapping[str, Any]) -> list[str]:
    meta = data.get("metadata")
    aggs = data.get("aggregates") or []
    comparisons = data.get("comparisons") or []
    source = "the run-metadata table"
    contract: Mapping[str, Any] | None = None
    agg_spec: Any = None
    if meta:
        try:
            contract = json.loads(meta.get("contract") or "null")
            agg_spec = json.loads(meta.get("aggregate_spec") or "null")
        except (TypeError, ValueError):
            contract = None
    if contract is None:
        contract, source = data.get("contract_from_config"), "the job configuration (no run-metadata row was found)"
    fingerprints = sorted({str(r.get("contract_fingerprint")) for r in [*aggs, *comparisons]
                           if r.get("contract_fingerprint")} | ({str(meta.get("contract_fingerprint"))} if meta else set()))
    pools = sorted({str(r.get("pool_version")) for r in aggs}
                   | {str(r.get(f"{s}_pool_version")) for r in comparisons for s in ("baseline", "candidate")})
    out = ["<h2 id='contract'>The contract, pool version, run and row accounting</h2>",
           "<table>" + "".join(f"<tr><th class='l'>{_e(k)}</th><td class='l wrap'>{_e(v)}</td></tr>" for k, v in (
               ("run id", data.get("run_id")),
               ("contract fingerprint", ", ".join(fingerprints) or "n/a"),
               ("pool version(s)", ", ".join(pools) or "n/a"),
               ("code version", (meta or {}).get("code_version") or next((r.get("code_version") for r in aggs), None)),
               ("run recorded at", (meta or {}).get("created_at")),
               ("config file", data.get("config_file")),
               ("page generated at", data.get("generated_at")),
           )) + "</table>",
           f"<h3>Declared choices</h3><p class='sub'>From {_e(source)}.</p><table>"
           "<tr><th class='l'>choice</th><th class='l'>value</th></tr>"]
    for key, value in (contract or {}).items():
        out.append(f"<tr>{_td(key, 'l')}{_td(_plain(value), 'l wrap')}</tr>")
    out.append("</table>")
    if agg_spec:
        out.append("<h3>Aggregation</h3><table><tr><th class='l'>choice</th><th class='l'>value</th></tr>")
        for key, value in agg_spec.items():
            out.append(f"<tr>{_td(key, 'l')}{_td(_plain(value), 'l wrap')}</tr>")
        out.append("</table>")
    counts = (meta or {}).get("row_counts") or {}
    out.append("<h3>Row accounting</h3>")
    if counts:
        for name in sorted({key.rsplit(".", 1)[0] for key in counts if key.endswith(".rows_read")}):
            read, scored, quarantined = (counts.get(f"{name}.{c}") for c in ("rows_read", "rows_scored", "rows_quarantined"))
            if None in (read, scored, quarantined):
                continue
            balanced = int(read) == int(scored) + int(quarantined)
            out.append(f"<div class='{'ok' if balanced else 'callout'}'>{_e(name)}: {_e(fmt_count(read))} read = "
                       f"{_e(fmt_count(scored))} scored + {_e(fmt_count(quarantined))} quarantined"
                       + (" ✓" if balanced else " — <b>does not balance</b>") + "</div>")
        out.append("<table><tr><th class='l'>table / counter</th><th>rows</th></tr>")
        for key in sorted(counts):
            out.append(f"<tr>{_td(key, 'l')}{_td(fmt_count(counts[key]))}</tr>")
        out.append("</table>")
    else:
        out.append("<p>No row counts recorded (no run-metadata row for this run).</p>")
    return out


def render_html(data: Mapping[str, Any]) -> str:
    """The report page for one run (or one comparison): a pure function of plain data.

    ``data`` (as :func:`collect_report_data` returns it): ``run_id``; ``aggregates``, ``audit``,
    ``comparisons`` (rows of those tables as dicts); ``histograms`` (rows of :func:`histograms`);
    ``metadata`` (the run-metadata row or None); optional ``run_status`` (a notice unless
    ``complete``; leave the key out when unknown), ``bins``, ``chart_k``,
    ``contract_from_config``, ``config_file``, ``generated_at``. Missing sections are left out.
    """
    run_id = data.get("run_id")
    aggs = data.get("aggregates") or []
    only_comparison = not aggs and bool(data.get("comparisons"))
    title = f"NDCG@K {'comparison' if only_comparison else 'report'} — run {run_id}"
    body: list[str] = [f"<h1>{_e(title)}</h1>"]
    pools = sorted({str(r.get("pool_version")) for r in aggs})
    body.append(f"<p class='sub'>run {_e(run_id)}" + (f" · pool version {_e(', '.join(pools))}" if pools else "")
                + " · static page: no scripts, nothing fetched.</p>")
    nav = [("overall", "Overall"), ("slices", "Slices"), ("distributions", "Distributions"),
           ("contract", "Contract & accounting")] if aggs else [("contract", "Contract & accounting")]
    body.append("<p>" + " · ".join(f"<a href='#{a}'>{_e(t)}</a>" for a, t in nav) + "</p>")
    if "run_status" in data and data.get("run_status") != "complete":
        status = data.get("run_status")
        body.append("<div class='notice' role='alert'><h3>⚠ This run is not published</h3><p>Its run-status row "
                    + (f"says <b>{_e(status)}</b>" if status else "is missing")
                    + ": the run was still being written, failed before it was published, or its stages were "
                    "run by hand. Its tables may be partial; nightly readers do not see it.</p></div>")
    if aggs:
        body += _section_overall(aggs)
    body += _section_comparisons(data)
    if aggs:
        body += _section_slices(data)
    body += _section_distributions(data)
    body += _section_contract(data)
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
