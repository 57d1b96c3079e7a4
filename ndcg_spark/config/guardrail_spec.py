"""The experiment contract's guardrails: the ``guardrails:`` section of the job YAML (pure Python).

A higher NDCG is a reason to run a controlled release, not a verdict. The guardrails declare,
next to the NDCG contract, what must not get worse -- each with its source, statistic, the
direction that is better and a non-inferiority margin -- and they are fingerprinted and stamped
like the contract (:attr:`GuardrailSpec.fingerprint`, :meth:`Guardrail.to_dict`).

>>> spec = GuardrailSpec.from_dict({
...     "release": {"outcomes": {"path": "outcomes"}, "arm": "arm", "unit": "technician_id"},
...     "checks": [{"name": "latency_p95", "column": "latency_ms", "statistic": "p95", "better": "lower",
...                 "margin": {"relative": 0.1}}]})
>>> spec.checks[0].percentile, spec.checks[0].margin_kind, spec.checks[0].margin
(0.95, 'relative', 0.1)
>>> GuardrailSpec.from_dict({"checks": [{"name": "x", "column": "x", "statistic": "median", "better": "lower",
...                                      "margin": {"absolute": 1}}]})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: guardrails.checks[0].statistic: must be rate, mean or a percentile p1 .. p99.9 (e.g. p95); got 'median'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ndcg_spark.config.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MAX_REPLICATES,
    MIN_REPLICATES,
    bootstrap_fields,
    require_level,
    require_replicates,
    require_seed,
)
from ndcg_spark.config.checks import (
    require_choice,
    require_int,
    require_mapping,
    require_number,
    validate_identifier,
)
from ndcg_spark.config.statistic import RATE, Statistic
from ndcg_spark.errors import ContractError
from ndcg_spark.measures import LEGACY_METRIC, METRICS

__all__ = [
    "DESIGNS",
    "OFFLINE_FLAGS",
    "OUTCOME_RULES",
    "Guardrail",
    "GuardrailSpec",
    "ReleaseSpec",
]

#: ``source: offline`` flags: what makes a request count against the guardrail
OFFLINE_FLAGS = ("first_result_older_than", "first_result_unjudged", "top_k_lacks")
#: ``release.design``: how the arms' units relate (and so how the difference is resampled)
DESIGNS = ("two_sample", "paired")
#: the named rules of a release's outcomes table (``release.on_bad_rows`` handles the last three)
OUTCOME_RULES = ("outcome_arm_missing", "outcome_unit_in_two_arms", "outcome_unit_unpaired", "outcome_out_of_range")
_CHECK_FIELDS = frozenset({"name", "source", "column", "statistic", "better", "margin", "range", "flag", "threshold",
                           "value"})
_RELEASE_FIELDS = frozenset({"outcomes", "arm", "unit", "design", "slices", "on_bad_rows"})
_FIELDS = frozenset({"release", "documents", "checks", "bootstrap", "min_observed", "headline"})
_HEADLINE_FIELDS = frozenset({"metric", "k"})
#: the offline headline shown beside the verdict when ``guardrails.headline`` is not declared
DEFAULT_HEADLINE_METRIC = LEGACY_METRIC


@dataclass(frozen=True)
class Guardrail:
    """One guardrail: what is measured, which direction is better, and how much worse is allowed.

    Parameters
    ----------
    name : an identifier, unique in the section.
    source : ``release`` (a column of the release's outcomes table, one row per request or
        session) or ``offline`` (a flag per request computed from the candidates).
    column : the outcomes column (release); the document column an offline flag reads
        (``first_result_older_than``, ``top_k_lacks``).
    statistic : ``rate`` (share of rows where a boolean / 0-1 value is true), ``mean``, or a
        percentile ``pNN`` (e.g. ``p95``). A ``mean`` or percentile ignores null values -- the event
        was not reached -- and is always reported with the share of rows that reached it. Offline
        guardrails are rates (share of requests flagged).
    better : ``higher`` or ``lower``.
    margin_kind, margin : the non-inferiority margin: how much worse the candidate may be,
        ``absolute`` (in the statistic's units; 0.02 of a rate is 2 points) or ``relative`` (a
        share of the baseline's value). YAML ``margin: {absolute: 0.02}`` or ``{relative: 0.05}``.
    value_range : ``(low, high)`` the values must lie in (either end None); a rate's values must
        be 0 or 1. Rows outside are rule ``outcome_out_of_range``.
    flag, threshold, value : an offline guardrail's flag (:data:`OFFLINE_FLAGS`), the age above
        which a first result is stale (``first_result_older_than``), the value the top K must
        hold a document of (``top_k_lacks``).
    """

    name: str
    better: str
    margin_kind: str
    margin: float
    source: str = "release"
    column: str | None = None
    statistic: Statistic = RATE
    value_range: tuple[float | None, float | None] = (None, None)
    flag: str | None = None
    threshold: float | None = None
    value: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "statistic", Statistic.parse(self.statistic))

    @property
    def percentile(self) -> float | None:
        """The percentile of a ``pNN`` statistic as a fraction (``p95`` -> 0.95), else None."""
        return self.statistic.percentile

    @property
    def conditional(self) -> bool:
        """Whether the statistic is over the rows that reached the event only (non-null values)."""
        return self.statistic.conditional

    def to_dict(self) -> dict[str, Any]:
        """The resolved declaration, in the YAML's shape (what is stamped on the guardrail table)."""
        out: dict[str, Any] = {"name": self.name, "source": self.source, "statistic": self.statistic.name,
                               "better": self.better, "margin": {self.margin_kind: self.margin}}
        if self.source == "release":
            out.update(column=self.column, range=list(self.value_range))
        else:
            out.update(flag=self.flag, column=self.column, threshold=self.threshold, value=self.value)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def parse(cls, data: Any, path: str) -> Guardrail:
        """One item of ``guardrails.checks``; every error names its dotted path."""
        data = require_mapping(data, path, _CHECK_FIELDS)
        for key in ("name", "better", "margin"):
            if key not in data:
                raise ContractError(f"{path}.{key}", "is required")
        source = require_choice(data.get("source", "release"), ("release", "offline"), f"{path}.source")
        kind, margin = _margin(data["margin"], f"{path}.margin")
        common = dict(name=validate_identifier(data["name"], f"{path}.name"),
                      better=require_choice(data["better"], ("higher", "lower"), f"{path}.better"),
                      margin_kind=kind, margin=margin, source=source)
        if source == "offline":
            return cls(**common, **_offline_fields(data, path))
        for key in ("flag", "threshold", "value"):
            if key in data:
                raise ContractError(f"{path}.{key}", "is an offline guardrail's field (source: offline)")
        if "column" not in data:
            raise ContractError(f"{path}.column", "is required: the outcomes column the guardrail reads")
        statistic = Statistic.parse(data.get("statistic", RATE), f"{path}.statistic")
        return cls(**common, column=validate_identifier(data["column"], f"{path}.column"), statistic=statistic,
                   value_range=_range(data.get("range"), f"{path}.range", statistic))


def _margin(value: Any, path: str) -> tuple[str, float]:
    """``{absolute: x}`` or ``{relative: x}``, x >= 0."""
    if not isinstance(value, Mapping) or len(value) != 1 or next(iter(value)) not in ("absolute", "relative"):
        raise ContractError(path, f"must be {{absolute: x}} or {{relative: x}} (how much worse is allowed), got {value!r}")
    kind, amount = next(iter(value.items()))
    return kind, require_number(amount, f"{path}.{kind}", minimum=0.0)


def _range(value: Any, path: str, statistic: Statistic) -> tuple[float | None, float | None]:
    if value is None:
        return (0.0, 1.0) if statistic.of_flags else (None, None)
    if statistic.of_flags:
        if list(value) != [0, 1]:
            raise ContractError(path, f"is fixed for a rate: [0, 1] (values 0 or 1, or booleans), got {value!r}")
        return 0.0, 1.0
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise ContractError(path, f"must be [low, high] (either may be null), got {value!r}")
    low, high = (None if v is None else require_number(v, f"{path}[{i}]") for i, v in enumerate(value))
    if low is not None and high is not None and low > high:
        raise ContractError(path, f"low must not exceed high, got {value!r}")
    return low, high


def _offline_fields(data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The fields of a ``source: offline`` guardrail: its flag and what the flag reads."""
    if "flag" not in data:
        raise ContractError(f"{path}.flag", f"is required for source: offline ({', '.join(OFFLINE_FLAGS)})")
    flag = require_choice(data["flag"], OFFLINE_FLAGS, f"{path}.flag")
    if Statistic.parse(data.get("statistic", RATE), f"{path}.statistic") != RATE:
        raise ContractError(f"{path}.statistic", "must be rate for an offline guardrail (the share of requests flagged)")
    if "range" in data:
        raise ContractError(f"{path}.range", "is a release guardrail's field")
    fields: dict[str, Any] = {"flag": flag}
    needs = {"first_result_older_than": ("column", "threshold"), "top_k_lacks": ("column", "value"),
             "first_result_unjudged": ()}[flag]
    for key in ("column", "threshold", "value"):
        if key in data and key not in needs:
            raise ContractError(f"{path}.{key}", f"is not a field of flag {flag}")
        if key in needs and key not in data:
            raise ContractError(f"{path}.{key}", f"is required for flag {flag}")
    if "column" in needs:
        fields["column"] = validate_identifier(data["column"], f"{path}.column")
    if "threshold" in needs:
        fields["threshold"] = require_number(data["threshold"], f"{path}.threshold")
    if "value" in needs:
        if isinstance(data["value"], (Mapping, list)) or data["value"] is None:
            raise ContractError(f"{path}.value", f"must be a single value, got {data['value']!r}")
        fields["value"] = str(data["value"])
    return fields


@dataclass(frozen=True)
class ReleaseSpec:
    """Where a controlled release's outcomes are and how to read them (``guardrails.release``).

    Parameters
    ----------
    arm : the column naming the system that served the row (the compare sides' system names).
    unit : the randomization unit (a session, a technician …): resampled as a whole, so rows of
        one unit move together in the bootstrap.
    design : ``two_sample`` (default: each unit saw one arm; a unit in two arms is rule
        ``outcome_unit_in_two_arms``) or ``paired`` (each unit saw both arms; a unit seen by one
        arm only is rule ``outcome_unit_unpaired``). The bootstrap draws a unit's count from the
        unit alone, so a paired unit moves in both arms at once.
    slices : columns of the outcomes table to break the guardrails down by.
    on_bad_rows : ``error`` (default: the run fails naming the rule, the count and an example)
        or ``quarantine`` (the rows are set aside -- for the unit rules every row of the unit -- and
        counted in the guardrail table's ``rows_set_aside``).
    """

    arm: str = "arm"
    unit: str = "unit_id"
    design: str = "two_sample"
    slices: tuple[str, ...] = ()
    on_bad_rows: str = "error"

    def to_dict(self) -> dict[str, Any]:
        return {"arm": self.arm, "unit": self.unit, "design": self.design, "slices": list(self.slices),
                "on_bad_rows": self.on_bad_rows}

    @classmethod
    def parse(cls, data: Any, path: str) -> ReleaseSpec:
        data = require_mapping(data, path, _RELEASE_FIELDS)
        slices = data.get("slices") or []
        if not isinstance(slices, list):
            raise ContractError(f"{path}.slices", f"must be a list of column names, got {slices!r}")
        return cls(
            arm=validate_identifier(data.get("arm", "arm"), f"{path}.arm"),
            unit=validate_identifier(data.get("unit", "unit_id"), f"{path}.unit"),
            design=require_choice(data.get("design", "two_sample"), DESIGNS, f"{path}.design"),
            slices=tuple(validate_identifier(s, f"{path}.slices[{i}]") for i, s in enumerate(slices)),
            on_bad_rows=require_choice(data.get("on_bad_rows", "error"), ("error", "quarantine"), f"{path}.on_bad_rows"),
        )


@dataclass(frozen=True)
class GuardrailSpec:
    """The ``guardrails:`` section: the checks, how a release is read, and the bootstrap.

    Parameters
    ----------
    checks : the guardrails (:class:`Guardrail`), in declaration order.
    release : how to read the release outcomes (needed by ``source: release`` checks).
    ci_level, replicates, seed : the bootstrap (YAML ``bootstrap: {level, replicates, seed}``,
        defaults 0.95, 1000, 0): Poisson counts per unit, pure functions of the seed, the
        replicate and the unit, like the aggregates' and the comparison's.
    min_observed : a row (guardrail x K x slice) where an arm has fewer observed rows is flagged
        ``below_min_observed`` and its verdict is ``inconclusive`` (default 30, like
        ``compare.min_paired``): a bootstrap of a handful of rows is no evidence.
    headline_metric, headline_k : the one offline metric shown beside the verdict (YAML
        ``headline: {metric, k}``, or ``headline: <metric>``): a metric of ``contract.metrics`` at a K
        of ``contract.k``; default NDCG at the contract's largest K (``headline_k`` None). Stamped on
        every row (``headline_metric``, ``headline_k``); in the fingerprint only when declared.
    """

    checks: tuple[Guardrail, ...]
    release: ReleaseSpec | None = None
    ci_level: float = DEFAULT_LEVEL
    replicates: int = DEFAULT_REPLICATES
    seed: int = DEFAULT_SEED
    min_observed: int = 30
    headline_metric: str = DEFAULT_HEADLINE_METRIC
    headline_k: int | None = None
    sources: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        names = [g.name for g in self.checks]
        if not names:
            raise ContractError("guardrails.checks", "must declare at least one guardrail")
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ContractError(f"guardrails.checks[{i}].name", f"repeats the name {name!r}")
        if self.release is None and any(g.source == "release" for g in self.checks):
            first = next(i for i, g in enumerate(self.checks) if g.source == "release")
            raise ContractError(f"guardrails.checks[{first}]",
                                "is a release guardrail, but guardrails.release (the outcomes table) is not set")
        level = require_number(self.ci_level, "guardrails.bootstrap.level")
        object.__setattr__(self, "ci_level", require_level(level, "guardrails.bootstrap.level"))
        require_replicates(self.replicates, "guardrails.bootstrap.replicates", minimum=MIN_REPLICATES,
                           maximum=MAX_REPLICATES, zero_means="no intervals: every verdict inconclusive")
        require_seed(self.seed, "guardrails.bootstrap.seed")
        require_int(self.min_observed, "guardrails.min_observed", minimum=0)
        require_choice(self.headline_metric, tuple(METRICS), "guardrails.headline.metric")
        if self.headline_k is not None:
            require_int(self.headline_k, "guardrails.headline.k", minimum=1)

    def headline(self, contract: Any) -> tuple[str, int]:
        """The offline headline (metric, K) under ``contract``; refuses, by name, a metric the
        contract does not declare or a K it does not score."""
        declared = [m.name for m in contract.metrics]
        if self.headline_metric not in declared:
            raise ContractError("guardrails.headline.metric",
                                f"is {self.headline_metric!r}, which contract.metrics does not declare "
                                f"({', '.join(declared)}); declare it there or name one of those")
        if self.headline_k is not None and self.headline_k not in contract.k:
            raise ContractError("guardrails.headline.k",
                                f"is {self.headline_k}, which contract.k does not score ({list(contract.k)}); "
                                "name one of those, or leave it out for the largest")
        return self.headline_metric, self.headline_k if self.headline_k is not None else max(contract.k)

    @property
    def release_checks(self) -> tuple[Guardrail, ...]:
        return tuple(g for g in self.checks if g.source == "release")

    @property
    def offline_checks(self) -> tuple[Guardrail, ...]:
        return tuple(g for g in self.checks if g.source == "offline")

    def to_dict(self) -> dict[str, Any]:
        """The resolved section (what the fingerprint is taken over)."""
        return {
            "checks": [g.to_dict() for g in self.checks],
            "release": None if self.release is None else self.release.to_dict(),
            "bootstrap": {"level": self.ci_level, "replicates": self.replicates, "seed": self.seed},
            "min_observed": self.min_observed,
            # declared only: every guardrails section from before the headline keeps its fingerprint
            **({"headline": {"metric": self.headline_metric, "k": self.headline_k}}
               if (self.headline_metric, self.headline_k) != (DEFAULT_HEADLINE_METRIC, None) else {}),
        }

    @property
    def fingerprint(self) -> str:
        """16 hex digits of SHA-256 over the resolved declarations, key-order independent."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    @classmethod
    def from_dict(cls, data: Any, path: str = "guardrails") -> GuardrailSpec:
        """Build from the ``guardrails:`` section; every error names its dotted path.

        ``release.outcomes`` and ``documents`` (tables) are kept, unparsed, in :attr:`sources`
        for the job to resolve.
        """
        data = require_mapping(data, path, _FIELDS)
        checks = data.get("checks")
        if not isinstance(checks, list):
            raise ContractError(f"{path}.checks", f"must be a list of guardrails, got {checks!r}")
        release = ReleaseSpec.parse(data["release"], f"{path}.release") if data.get("release") is not None else None
        if release is not None and "outcomes" not in data["release"]:
            raise ContractError(f"{path}.release.outcomes", "is required: the release's outcomes table")
        resampling = bootstrap_fields(data.get("bootstrap"), f"{path}.bootstrap", ("level", "replicates", "seed"))
        sources = {"outcomes": (data.get("release") or {}).get("outcomes"), "documents": data.get("documents")}
        parsed = tuple(Guardrail.parse(item, f"{path}.checks[{i}]") for i, item in enumerate(checks))
        extra = {"min_observed": data["min_observed"]} if "min_observed" in data else {}
        headline = data.get("headline")
        if isinstance(headline, str):
            headline = {"metric": headline}
        if headline is not None:
            headline = require_mapping(headline, f"{path}.headline", _HEADLINE_FIELDS)
            extra["headline_metric"] = headline.get("metric", DEFAULT_HEADLINE_METRIC)
            extra["headline_k"] = headline.get("k")
        return cls(checks=parsed, release=release, sources=sources, **resampling, **extra)
