"""The contract: every choice that moves an NDCG number, declared, validated and fingerprinted.

A :class:`Contract` is immutable. Build it from keywords, from a mapping (``Contract.from_dict``)
or from YAML (``Contract.from_yaml``). Every field has the default of SPEC §2. The contract's
:attr:`Contract.fingerprint` is a stable hash of the metric choices (same choices, same
fingerprint, whatever the key order in the YAML); :meth:`Contract.to_dict` is the readable copy
stamped into run metadata.

Examples
--------
>>> from ndcg_spark import Contract
>>> c = Contract(k=[10, 3], gain="linear")
>>> c.k
(3, 10)
>>> c.gain.kind
'linear'
>>> Contract(k=[0])
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: contract.k[0]: must be an integer >= 1, got 0
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from ndcg_spark.config.checks import require_choice, validate_identifier
from ndcg_spark.config.gain import GainMapping
from ndcg_spark.config.policies import EmptyIdeal, NoResults, Unjudged
from ndcg_spark.config.presets import resolve_preset
from ndcg_spark.errors import ContractError
from ndcg_spark.measures import LEGACY_METRIC, Metric, parse_metrics

CONTRACT_VERSION = 1

DISCOUNTS = ("log2",)
ORDERS = ("auto", "position", "score")
TIES = ("doc_id", "average", "doc_id_desc")
IDEAL_FROM = ("candidates", "judgments")
NEGATIVE_GRADES = ("error", "zero")
#: the metrics a contract scores when it declares none
DEFAULT_METRICS = (LEGACY_METRIC,)
#: the fields stamped (and fingerprinted) only when declared away from their default: a contract
#: that does not declare them keeps the fingerprint it had before they existed
DECLARED_ONLY = {"max_grade": None, "negative_grades": "error", "no_results": "exclude", "metrics": DEFAULT_METRICS,
                 "relevant_grade": 1.0}

@dataclass(frozen=True)
class ColumnMapping:
    """Names of the input columns, so ``qid``/``rel``/``rank`` tables work without renaming."""

    request_id: str = "request_id"
    doc_id: str = "doc_id"
    position: str = "position"
    score: str = "score"
    grade: str = "grade"
    system: str = "system"
    pool_version: str = "pool_version"

    def __post_init__(self) -> None:
        for f in fields(self):
            validate_identifier(getattr(self, f.name), f"contract.columns.{f.name}")

    @classmethod
    def parse(cls, value: Any, path: str = "contract.columns") -> ColumnMapping:
        if isinstance(value, ColumnMapping):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ContractError(path, f"must be a mapping of role -> column name, got {value!r}")
        known = {f.name for f in fields(cls)}
        for key in value:
            if key not in known:
                raise ContractError(f"{path}.{key}", f"is not a column role; roles are {', '.join(sorted(known))}")
        return cls(**{k: validate_identifier(v, f"{path}.{k}") for k, v in value.items()})


@dataclass(frozen=True)
class Contract:
    """Every declared choice of SPEC §2, with its default.

    Parameters
    ----------
    k : cutoffs >= 1, scored in one pass (stored sorted, deduplicated).
    gain : ``"exponential"`` (2^g - 1), ``"linear"`` (g), ``"binary"`` (1 if g > 0 else 0) or
        ``{"table": {grade: gain}}``.
    discount : ``"log2"`` (1 / log2(position + 1)).
    order : ``"position"`` (displayed position ascending), ``"score"`` (score descending) or
        ``"auto"`` (position if the candidates have that column, else score; resolved before
        scoring and stamped resolved).
    ties : under score order, ``"doc_id"`` (score desc, then doc id asc), ``"doc_id_desc"`` (score
        desc, then doc id desc: trec_eval's order) or ``"average"`` (tie-aware expected DCG,
        McSherry & Najork 2008).
    ideal_from : ``"candidates"`` (the request's judged candidates) or ``"judgments"`` (every judged
        document of the request, retrieved or not).
    unjudged : ``"zero"`` (gain 0, keep position), ``"exclude"`` (drop, later candidates move up) or
        ``"separate"`` (as zero, and count unjudged candidates in the top K).
    empty_ideal : ``"exclude"`` (NDCG null, flagged, counted), ``"zero"`` (NDCG 0, flagged, counted)
        or ``"error"`` (fail the run).
    columns : input column names (:class:`ColumnMapping`); not part of the fingerprint, since
        renaming a source column does not change what is measured.
    max_grade : the highest grade of the judging scale (lowest: 0), or None. Declares the
        scale the unjudged bounds (``ndcg_unjudged_low`` / ``_high``) judge every unjudged
        candidate at; a gain table declares its own scale (its lowest and highest grade), and
        ``max_grade`` must then be one of its grades. In the fingerprint only when set.
    negative_grades : ``"error"`` (a negative grade breaks the rule ``grade_negative``) or
        ``"zero"`` (judged, gain 0: trec_eval's reading of a negative relevance, e.g. the Web
        track's -2 "junk"; the ``trec_eval`` preset's; the rows are counted in the row accounting).
        In the fingerprint only when ``zero``.
    no_results : a request of the night's population a system returned no candidate for (a row
        flagged ``no_results``; :mod:`ndcg_spark.scoring.no_results`): ``"exclude"`` (NDCG null
        whatever its ideal, flagged and counted in ``n_no_results``: trec_eval without ``-c``) or
        ``"zero"`` (NDCG 0, or the empty-ideal policy's value when its ideal is empty too: trec_eval
        ``-c``, Spark's ``RankingEvaluator``). Default ``exclude``:
        the means of a night without such requests are what they were, and every contract keeps its
        fingerprint (``zero`` enters it). The ``ranking_evaluator`` preset sets ``zero``.
    metrics : the metrics scored at every K (:mod:`ndcg_spark.measures`): names, or
        ``{name: {parameter: value}}`` (``{"recall": {"denominator": "capped"}}``); default
        ``["ndcg"]``. Every metric of a night is averaged over the same requests: a request without
        an ideal for one of them (``empty_ideal``) is flagged for all, and under ``empty_ideal:
        exclude`` set aside from all (``zero`` scores each metric's own missing ideal 0). In the
        fingerprint only when not ``["ndcg"]``.
    relevant_grade : a binary metric's relevance (``recall``): a document judged at this grade or
        above is relevant (trec_eval's ``relevance_level``); default 1. In the fingerprint only
        when not 1.
    """

    k: tuple[int, ...] = (1, 3, 5, 10)
    gain: GainMapping = field(default_factory=GainMapping)
    discount: str = "log2"
    order: str = "auto"
    ties: str = "doc_id"
    ideal_from: str = "candidates"
    unjudged: Unjudged = Unjudged("separate")
    empty_ideal: EmptyIdeal = EmptyIdeal("exclude")
    columns: ColumnMapping = field(default_factory=ColumnMapping)
    max_grade: float | None = None
    negative_grades: str = "error"
    no_results: NoResults = NoResults("exclude")
    metrics: tuple[Metric, ...] = DEFAULT_METRICS
    relevant_grade: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", _parse_k(self.k))
        object.__setattr__(self, "gain", GainMapping.parse(self.gain))
        object.__setattr__(self, "columns", ColumnMapping.parse(self.columns))
        require_choice(self.discount, DISCOUNTS, "contract.discount")
        require_choice(self.order, ORDERS, "contract.order")
        require_choice(self.ties, TIES, "contract.ties")
        require_choice(self.ideal_from, IDEAL_FROM, "contract.ideal_from")
        object.__setattr__(self, "unjudged", Unjudged.parse(self.unjudged))
        object.__setattr__(self, "empty_ideal", EmptyIdeal.parse(self.empty_ideal))
        object.__setattr__(self, "no_results", NoResults.parse(self.no_results))
        require_choice(self.negative_grades, NEGATIVE_GRADES, "contract.negative_grades")
        object.__setattr__(self, "metrics", parse_metrics(self.metrics))
        if self.order == "score" and self.ties == "average":
            refused = [m.name for m in self.metrics if not m.tie_average]
            if refused:
                raise ContractError("contract.ties", f"average (the expected value over every order of a tie) is not "
                                    f"implemented for {', '.join(refused)}: declare ties: doc_id or doc_id_desc, or "
                                    "leave those metrics out")
        object.__setattr__(self, "relevant_grade", _parse_relevant_grade(self.relevant_grade))
        # the gain mapping reads a negative grade as the contract says (one mapping for every reader)
        object.__setattr__(self, "gain", replace(self.gain, negative_as_zero=self.negative_grades == "zero"))
        object.__setattr__(self, "max_grade", self.gain.check_max_grade(self.max_grade))

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, path: str = "contract") -> Contract:
        """Build from a plain mapping (e.g. the ``contract:`` section of a job YAML).

        ``preset`` (:data:`~ndcg_spark.config.presets.PRESETS`) stands for its fields; the fields
        given beside it override them. The result is the resolved contract (same fingerprint as
        the fields spelled out).

        >>> Contract.from_dict({"preset": "trec_eval", "k": [10]}) == Contract(
        ...     k=[10], gain="linear", order="score", ties="doc_id_desc", ideal_from="judgments", empty_ideal="zero",
        ...     negative_grades="zero", metrics=["ndcg", "recall", "precision", "average_precision", "hit_rate",
        ...                                      {"reciprocal_rank": {"cutoff": "deepest"}}])
        True
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ContractError(path, f"must be a mapping, got {type(data).__name__}")
        data = resolve_preset(data, path)
        known = {f.name for f in fields(cls)} | {"version"}
        for key in data:
            if key not in known:
                raise ContractError(
                    f"{path}.{key}", f"is not a contract field; fields are {', '.join(sorted(known | {'preset'}))}"
                )
        version = data.get("version", CONTRACT_VERSION)
        if version != CONTRACT_VERSION:
            raise ContractError(f"{path}.version", f"must be {CONTRACT_VERSION}, got {version!r}")
        return cls(**{k: v for k, v in data.items() if k != "version"})

    @classmethod
    def from_yaml(cls, path: str | Path) -> Contract:
        """Read a contract from YAML: a file with a top-level ``contract:`` section, or a bare contract."""
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        if isinstance(data, Mapping) and "contract" in data:
            data = data["contract"]
        return cls.from_dict(data)

    def resolve(self, available_columns: Iterable[str]) -> Contract:
        """Return the contract with ``order: auto`` turned into ``position`` or ``score``."""
        if self.order != "auto":
            return self
        return replace(self, order="position" if self.columns.position in set(available_columns) else "score")

    def resolutions(self) -> tuple[Contract, ...]:
        """The contracts this one can resolve to (``order: auto``: by position, by score), the
        fingerprint a scored table was stamped with being one of theirs.

        >>> [c.order for c in Contract().resolutions()], Contract(order="score").resolutions()[0].order
        (['position', 'score'], 'score')
        """
        if self.order != "auto":
            return (self,)
        return tuple(replace(self, order=o) for o in ("position", "score"))

    # ---------------------------------------------------------------- stamping
    def to_dict(self) -> dict[str, Any]:
        """The readable copy stamped into run metadata (plain types only)."""
        return {
            "version": CONTRACT_VERSION,
            "k": list(self.k),
            "gain": self.gain.to_plain(),
            "discount": self.discount,
            "order": self.order,
            "ties": self.ties,
            "ideal_from": self.ideal_from,
            "unjudged": self.unjudged.name,
            "empty_ideal": self.empty_ideal.name,
            "columns": {f.name: getattr(self.columns, f.name) for f in fields(self.columns)},
            # only when declared: every contract without them keeps its fingerprint
            **{name: value for name, value in self._declared().items() if value != DECLARED_ONLY[name]},
        }

    def _declared(self) -> dict[str, Any]:
        """The :data:`DECLARED_ONLY` fields, as they are stamped."""
        return {
            "max_grade": self.max_grade,
            "negative_grades": self.negative_grades,
            "no_results": self.no_results.name,
            "metrics": metrics if (metrics := [m.to_plain() for m in self.metrics]) != list(DEFAULT_METRICS)
            else DEFAULT_METRICS,
            "relevant_grade": self.relevant_grade,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def fingerprint(self) -> str:
        """16 hex digits of SHA-256 over the metric choices (columns excluded), key-order independent."""
        choices = self.to_dict()
        del choices["columns"]
        canonical = json.dumps(choices, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    @property
    def max_k(self) -> int:
        return self.k[-1]

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The declared metrics' names, in order (``("ndcg",)`` by default)."""
        return tuple(m.name for m in self.metrics)

    @property
    def reads_relevance(self) -> bool:
        """Whether a declared metric counts documents as relevant or not (``relevant_grade``)."""
        return any(m.binary for m in self.metrics)

    def metric(self, name: str) -> Metric:
        """The declared metric of that name; a :class:`~ndcg_spark.errors.ContractError` when none is."""
        for m in self.metrics:
            if m.name == name:
                return m
        raise ContractError("contract.metrics", f"does not declare {name!r} (declared: {', '.join(self.metric_names)})")

    def relevant(self, grade: Any) -> Any:
        """Whether a judged grade (a Spark Column) is relevant: at ``relevant_grade`` or above; an
        unjudged (null) grade is not."""
        from pyspark.sql import functions as F

        return F.coalesce(grade >= F.lit(self.relevant_grade), F.lit(False))

    @property
    def unjudged_grades(self) -> tuple[float, float] | None:
        """The lowest and the highest grade of the declared scale (the what-ifs judge every unjudged
        candidate at them), or None without a scale; their gains are :attr:`unjudged_gains`."""
        grades = self.gain.scale(self.max_grade)
        return None if grades is None else (grades[0], grades[-1])

    @property
    def unjudged_gains(self) -> tuple[float, float] | None:
        """The gains of the lowest and the highest grade of the declared scale -- what every
        unjudged candidate gets under the what-ifs ``ndcg_unjudged_low`` / ``_high`` -- or None
        when no scale is declared (no ``max_grade`` and no gain table):
        :meth:`GainMapping.ends <ndcg_spark.config.gain.GainMapping.ends>`.

        >>> Contract(max_grade=3).unjudged_gains
        (0.0, 7.0)
        >>> Contract(gain="binary", max_grade=3).unjudged_gains
        (0.0, 1.0)
        >>> Contract(gain={"table": {0: 0, 1: 1, 2: 3}}).unjudged_gains
        (0.0, 3.0)
        >>> Contract().unjudged_gains is None
        True
        """
        return self.gain.ends(self.max_grade)


def _parse_relevant_grade(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value == value or value in (
            float("inf"), float("-inf")):
        raise ContractError("contract.relevant_grade", f"must be a finite number, got {value!r}")
    if value <= 0:
        raise ContractError("contract.relevant_grade",
                            f"must be above 0 (a grade-0 document is not relevant), got {value!r}")
    return float(value)


def _parse_k(value: Any) -> tuple[int, ...]:
    items = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise ContractError("contract.k", f"must be a list of integers >= 1, got {value!r}")
    items = list(items)
    if not items:
        raise ContractError("contract.k", "must list at least one cutoff")
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise ContractError(f"contract.k[{i}]", f"must be an integer >= 1, got {item!r}")
    return tuple(sorted(set(items)))
