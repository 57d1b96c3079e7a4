"""How the report writes a number, a flag and a table cell (pure Python).

The report formats every number with the ``fmt_*`` functions, and the tests look for exactly
these strings. Every value that reaches the page goes through :func:`escape`.

>>> fmt_mean(0.61234), fmt_delta(-0.20234), fmt_count(31337), fmt_p(0.001), fmt_interval(0.6, 0.62)
('0.6123', '-0.2023', '31,337', '0.001', '[0.6000, 0.6200]')
>>> fmt_mean(float("nan")), fmt_interval(None, 0.5)
('n/a', '')
>>> fmt_share(0.0831), fmt_points(-0.031)
('8.3%', '-3.1 pts')
>>> td("<b>", "l")
'<td class="l">&lt;b&gt;</td>'
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ndcg_spark.config.aggregate_spec import OVERALL  # the overall rows' slice_dimension (pure Python)

__all__ = [
    "OVERALL",
    "delta_cell",
    "escape",
    "fmt_count",
    "fmt_delta",
    "fmt_interval",
    "fmt_mean",
    "fmt_p",
    "fmt_points",
    "fmt_share",
    "is_true",
    "mean_cell",
    "plain",
    "resampling_unit",
    "safe_name",
    "sort_key",
    "td",
]



def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_mean(x: Any) -> str:
    """An NDCG or a share: 4 decimals; ``n/a`` when there is none."""
    return "n/a" if _missing(x) else f"{float(x):.4f}"


def fmt_delta(x: Any) -> str:
    """A difference of means: 4 decimals with its sign; ``n/a`` when there is none."""
    return "n/a" if _missing(x) else f"{float(x):+.4f}"


def fmt_count(n: Any) -> str:
    """A count with thousands separators; ``n/a`` when there is none."""
    return "n/a" if n is None else f"{int(n):,}"


def fmt_p(x: Any) -> str:
    """A p-value: 3 decimals; ``n/a`` when there is none."""
    return "n/a" if x is None else f"{float(x):.3f}"


def fmt_share(x: Any) -> str:
    """A share (0.0831) as a percentage with one decimal (``8.3%``); ``n/a`` when there is none."""
    return "n/a" if _missing(x) else f"{float(x) * 100:.1f}%"


def fmt_points(x: Any) -> str:
    """A change of a share in percentage points with its sign (``+3.1 pts``); ``n/a`` when there is none."""
    return "n/a" if _missing(x) else f"{float(x) * 100:+.1f} pts"


def fmt_interval(lo: Any, hi: Any, fmt: Callable[[Any], str] = fmt_mean) -> str:
    """``[lo, hi]`` with ``fmt``; empty when either bound is missing."""
    return "" if lo is None or hi is None else f"[{fmt(lo)}, {fmt(hi)}]"


def resampling_unit(buckets: Any) -> str:
    """What a comparison resampled, as a clause (``bootstrap_buckets``; empty for a table written
    before it was stamped).

    >>> resampling_unit(1024), resampling_unit(0), resampling_unit(None)
    (' over random groups (1024 per slice cell)', ' over single requests', '')
    """
    if buckets is None:
        return ""
    return " over single requests" if int(buckets) == 0 else f" over random groups ({int(buckets)} per slice cell)"


#: how a person reads a value that is not there (a night without a pool version): absent, never ``None``
ABSENT = "-"


def shown(value: Any) -> str:
    """``value`` as a table cell for a person: :data:`ABSENT` for None.

    >>> shown(None), shown("pool-2026-11-28")
    ('-', 'pool-2026-11-28')
    """
    return ABSENT if value is None else str(value)


def system_and_pool(system: Any, pool: Any) -> str:
    """``bm25 (pool-1)``, or the system alone when it has no pool version."""
    return str(system) if pool is None else f"{system} ({pool})"


def is_true(value: Any) -> bool:
    """A boolean column value (a CSV table reads it back as the string ``"true"``)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def escape(value: Any) -> str:
    """``value`` as HTML text (``None`` as nothing); quotes escaped too, so it is safe in attributes."""
    return html.escape("" if value is None else str(value), quote=True)


def plain(value: Any) -> str:
    """A contract or spec value as one line: JSON for mappings and lists, ``null`` for None."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "null" if value is None else str(value)


def safe_name(text: str) -> str:
    """``text`` reduced to a file-name and anchor-safe string of at most 80 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80] or "_"


def sort_key(row: Mapping[str, Any], *names: str) -> tuple:
    """Order rows by ``names``: missing values last, numbers as numbers, anything else as text."""
    return tuple((row.get(n) is None, str(row.get(n)) if not isinstance(row.get(n), (int, float)) else row.get(n))
                 for n in names)


def td(text: Any, cls: str = "") -> str:
    """One escaped table cell, with a CSS class when given."""
    return f'<td class="{cls}">{escape(text)}</td>' if cls else f"<td>{escape(text)}</td>"


def mean_cell(mean: Any, lo: Any, hi: Any) -> str:
    """A mean in bold with its interval beside it."""
    ci = fmt_interval(lo, hi)
    return f'<td><span class="num">{escape(fmt_mean(mean))}</span> <span class="ci">{escape(ci)}</span></td>'


def delta_cell(row: Mapping[str, Any], which: str) -> str:
    """The ``delta_<which>`` of a comparison row in bold with its interval beside it."""
    ci = fmt_interval(row.get(f"delta_{which}_ci_low"), row.get(f"delta_{which}_ci_high"), fmt_delta)
    delta = fmt_delta(row.get(f"delta_{which}"))
    return f'<td><span class="num">{escape(delta)}</span> <span class="ci">{escape(ci)}</span></td>'
