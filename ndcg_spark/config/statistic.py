"""A guardrail's statistic, declared once: what it takes of a column, and how it is read (pure Python).

``rate`` is the share of rows whose value is 1 (a 0/1 or boolean column); ``mean`` and the
percentiles ``pNN`` (``p95``: the 95th) are taken of the non-null values only -- the rows that
reached the event -- so they are *conditional* and always shown with the share that reached it. The
guardrail spec, the release's range rule, the statistics core and the renderers all ask a
:class:`Statistic`; none of them spells a statistic's name. A new statistic is a name here (and
its docs and tests).

>>> Statistic.parse("p95").percentile, Statistic.parse("p95").conditional, RATE.conditional
(0.95, True, False)
>>> Statistic.parse("median")
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: statistic: must be rate, mean or a percentile p1 .. p99.9 (e.g. p95); got 'median'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ndcg_spark.errors import ContractError

__all__ = ["MEAN", "RATE", "Statistic"]

_PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d+)?)$")
#: the statistics named as such (the percentiles are ``p`` and a number)
_NAMED = ("rate", "mean")


@dataclass(frozen=True)
class Statistic:
    """One guardrail statistic, by the name the YAML declares it with (``rate``, ``mean``, ``p95``)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in _NAMED and _percent(self.name) is None:
            raise ContractError("statistic", f"must be rate, mean or a percentile p1 .. p99.9 (e.g. p95); got {self.name!r}")

    @classmethod
    def parse(cls, value: Any, path: str = "statistic") -> Statistic:
        """A statistic's name as declared; any other value is a :class:`ContractError` at ``path``."""
        if isinstance(value, Statistic):
            return value
        try:
            return cls(value)
        except ContractError as exc:
            raise ContractError(path, exc.rule) from None

    @property
    def percentile(self) -> float | None:
        """A percentile's fraction (``p95`` -> 0.95), else None."""
        percent = _percent(self.name)
        return None if percent is None else percent / 100.0

    @property
    def of_flags(self) -> bool:
        """Whether it counts rows whose value is 1 (a rate: every value must be 0 or 1, none null)."""
        return self.name == "rate"

    @property
    def conditional(self) -> bool:
        """Whether it is taken of the rows that reached the event only (the non-null values)."""
        return not self.of_flags

    @property
    def additive(self) -> bool:
        """Whether it is a ratio of sums (a rate, a mean: resampled exactly), not a percentile."""
        return self.percentile is None

    def __str__(self) -> str:
        return self.name


def _percent(name: Any) -> float | None:
    """``NN`` of a percentile's name ``pNN`` (1 to 99.9), else None."""
    found = _PERCENTILE.match(name) if isinstance(name, str) else None
    if found is None or not 1.0 <= float(found.group(1)) <= 99.9:
        return None
    return float(found.group(1))


#: the statistics every guardrail can name
RATE, MEAN = Statistic("rate"), Statistic("mean")
