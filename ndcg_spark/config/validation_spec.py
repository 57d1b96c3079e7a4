"""The named validation rules and their declared handling (the ``validation:`` section): pure Python.

:data:`RULES` is the rule catalogue, in the order used to pick a row's primary rule (the first
one it breaks); :class:`ValidationSpec` says, per rule, whether a broken rule fails the run
(``error``) or sets the rows aside (``quarantine``). Detection lives in :mod:`ndcg_spark.validation`.

>>> print(describe_rules().splitlines()[6])
request_id_missing       row       request id null, empty or blank
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ndcg_spark.config.checks import is_int, require_choice, require_mapping
from ndcg_spark.errors import ContractError

HANDLINGS = ("error", "quarantine")
INPUTS = ("candidates", "judgments", "attributes")


@dataclass(frozen=True)
class Rule:
    """A named validation rule.

    ``scope`` is ``schema`` (checked on the table's shape; always ``error``), ``contract`` (rejected
    when the contract is built), ``row`` (a row breaks it by itself) or ``request`` (a row breaks
    it together with other rows of its request).
    """

    name: str
    scope: str
    inputs: tuple[str, ...]
    description: str
    #: the fix that works when the input is right as it is, said after the rule's count (None: the
    #: input needs fixing, or the rows quarantining: ``validation.rules.<name>: quarantine``)
    fix: str | None = None

    @property
    def quarantinable(self) -> bool:
        return self.scope in ("row", "request")


#: Every rule, in the order used to pick a row's primary rule (the first one it breaks).
RULES: tuple[Rule, ...] = (
    Rule(
        "k_invalid", "contract", (), "a cutoff K < 1 (rejected by the contract at contract.k before any data is read)"
    ),
    Rule("column_missing", "schema", INPUTS, "a column the contract or the job needs is absent"),
    Rule(
        "column_type",
        "schema",
        INPUTS,
        "a column's type cannot be read in its role (ids: string, integer or decimal; position, score, grade, "
        "weight: a number, or a string holding one)",
    ),
    Rule("input_empty", "schema", INPUTS, "an input table has no rows"),
    Rule(
        "trec_field_count",
        "row",
        ("candidates", "judgments"),
        "a line of a TREC run without exactly 6 whitespace-separated fields (qid Q0 docno rank score tag), "
        "or of a TREC qrels file without exactly 4 (qid iter docno rel)",
    ),
    Rule(
        "trec_not_numeric",
        "row",
        ("candidates", "judgments"),
        "a TREC run line whose rank is not an integer or whose score is not a number, or a qrels line whose rel "
        "is not a number",
    ),
    Rule("request_id_missing", "row", INPUTS, "request id null, empty or blank"),
    Rule("doc_id_missing", "row", ("candidates", "judgments"), "doc id null, empty or blank"),
    Rule("grade_not_numeric", "row", ("candidates", "judgments"), "a grade string that is not a number"),
    Rule("grade_negative", "row", ("candidates", "judgments"), "grade < 0",
         fix="A TREC qrels file's negative levels are judged not relevant by trec_eval: declare "
             "contract.negative_grades: zero (as the trec_eval preset does) to read them so -- judged, gain 0, "
             "counted."),
    Rule(
        "grade_not_finite",
        "row",
        ("candidates", "judgments"),
        "grade NaN or infinite, or its gain above 2^1000, too large to sum (exponential gain of a grade above 1000)",
    ),
    Rule(
        "grade_not_in_gain_table", "row", ("candidates", "judgments"), "a grade the explicit gain table does not list"
    ),
    Rule(
        "grade_above_max_grade",
        "row",
        ("candidates", "judgments"),
        "a finite grade above contract.max_grade, the top of the declared judging scale (the unjudged what-ifs "
        "judge at the scale's ends)",
    ),
    Rule(
        "position_invalid",
        "row",
        ("candidates",),
        "position order: position null, not a number, NaN, infinite or < 1",
    ),
    Rule("score_invalid", "row", ("candidates",), "score order: score null, NaN or not a number"),
    Rule(
        "weight_invalid",
        "row",
        ("candidates", "attributes"),
        "traffic weight negative, NaN, infinite or not a number (a null weight is attributes.default_weight's)",
    ),
    Rule(
        "doc_repeated",
        "request",
        ("candidates",),
        "the same doc id twice in one request's candidates (per system and pool version)",
    ),
    Rule(
        "position_repeated",
        "request",
        ("candidates",),
        "position order: two candidates of one request share a position (per system and pool version)",
    ),
    Rule(
        "too_many_candidates",
        "request",
        ("candidates",),
        "a request has more candidates than validation.max_candidates_per_request (the skew guard)",
    ),
    Rule(
        "judgment_conflict",
        "request",
        ("judgments",),
        "two judgment rows for one (request, doc) with different grades (identical duplicates are merged)",
    ),
)

@dataclass(frozen=True)
class Check:
    """A named rule past input validation: a check of the per-request table stage 2 reads, or of
    the arithmetic, always an error (nothing to quarantine: the table is the job's own, or a
    library caller's). Its name is in the message, as a validation rule's is."""

    name: str
    #: where it is checked
    where: str
    description: str


#: The rules a message names besides :data:`RULES` (docs/validation.md lists both).
CHECKS: tuple[Check, ...] = (
    Check("weight_missing", "stage 1 (attributes.weight)",
          "a request has no traffic weight and attributes.default_weight is not set"),
    Check("weight_invalid", "stage 2 (the per-request table)",
          "a per-request weight negative, NaN or infinite (aggregate.default_weight gives a missing one a value)"),
    Check("metric_out_of_range", "stage 2 (the per-request table)",
          "a metric value outside [0, 1]: not a per-request table stage 1 wrote"),
    Check("duplicate_request", "stage 2 (the per-request table)",
          "a request has more than one row for one run, contract, pool version, system and K"),
    Check("exact_sum_overflow", "the resampling workers",
          "a replicate's exact sum of count x term could pass 2^62 (a weight or a count far beyond any traffic)"),
)

RULE_NAMES = tuple(r.name for r in RULES)
#: rule name -> :class:`Rule`
RULES_BY_NAME = MappingProxyType({r.name: r for r in RULES})
#: rule name -> its place in :data:`RULES` (a lower index is a row's primary rule)
RULE_INDEX = MappingProxyType({name: i for i, name in enumerate(RULE_NAMES)})

_SPEC_FIELDS = frozenset({"default", "rules", "max_quarantined_share", "max_candidates_per_request"})


def describe_rules() -> str:
    """The rule catalog as text (name, scope, inputs, meaning), e.g. for ``--help`` or a notebook."""
    width = max(len(r.name) for r in RULES)
    return "\n".join(f"{r.name:<{width}}  {r.scope:<8}  {r.description}" for r in RULES)


@dataclass(frozen=True)
class ValidationSpec:
    """The declared handling of every rule (the ``validation:`` section of the job YAML).

    Parameters
    ----------
    default : handling of every data rule not listed in ``rules``: ``error`` or ``quarantine``.
    rules : rule name -> ``error`` | ``quarantine``. Schema rules (``column_missing``, ``column_type``,
        ``input_empty``, ``k_invalid``) are always ``error``: there are no rows to set aside.
    max_quarantined_share : the run fails anyway when more than this share of any input's rows
        is quarantined (0 .. 1).
    max_candidates_per_request : the skew guard (rule ``too_many_candidates``); ``None`` turns it off.

    Examples
    --------
    >>> ValidationSpec.from_dict({"rules": {"doc_repeated": "quarantine"}}).handling("doc_repeated")
    'quarantine'
    >>> ValidationSpec.from_dict({"rules": {"doc_repeated": "drop"}})
    Traceback (most recent call last):
    ...
    ndcg_spark.errors.ContractError: validation.rules.doc_repeated: must be one of error, quarantine; got 'drop'
    """

    default: str = "error"
    rules: Mapping[str, str] = field(default_factory=dict)
    max_quarantined_share: float = 0.05
    max_candidates_per_request: int | None = 10_000

    def __post_init__(self) -> None:
        require_choice(self.default, HANDLINGS, "validation.default")
        object.__setattr__(self, "rules", MappingProxyType(_checked_rules(self.rules)))
        share = self.max_quarantined_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ContractError("validation.max_quarantined_share", f"must be a number from 0 to 1, got {share!r}")
        object.__setattr__(self, "max_quarantined_share", float(share))
        cap = self.max_candidates_per_request
        if cap is not None and (not is_int(cap) or cap < 1):
            path = "validation.max_candidates_per_request"
            raise ContractError(path, f"must be an integer >= 1 or null, got {cap!r}")

    @classmethod
    def from_dict(cls, data: Any, path: str = "validation") -> ValidationSpec:
        """Build from the raw ``validation:`` section (``None`` gives the defaults)."""
        if data is None:
            return cls()
        if isinstance(data, ValidationSpec):
            return data
        data = require_mapping(data, path, _SPEC_FIELDS)
        rules = data.get("rules") or {}
        if not isinstance(rules, Mapping):
            raise ContractError(f"{path}.rules", f"must be a mapping rule -> handling, got {rules!r}")
        kwargs = {k: data[k] for k in _SPEC_FIELDS - {"rules"} if k in data}
        return cls(rules=dict(rules), **kwargs)

    def handling(self, rule: str) -> str:
        """``error`` or ``quarantine`` for ``rule``."""
        if not RULES_BY_NAME[rule].quarantinable:
            return "error"
        return self.rules.get(rule, self.default)

    @property
    def quarantines(self) -> bool:
        """Whether any rule is handled by quarantine (then ``outputs.quarantine`` is needed)."""
        return any(self.handling(r.name) == "quarantine" for r in RULES)

    def quarantined_rules(self) -> list[str]:
        """The names of the rules handled by quarantine, in catalogue order."""
        return [r.name for r in RULES if self.handling(r.name) == "quarantine"]

    def to_dict(self) -> dict[str, Any]:
        """Plain, complete copy (every rule's resolved handling) for run metadata."""
        return {
            "rules": {r.name: self.handling(r.name) for r in RULES},
            "max_quarantined_share": self.max_quarantined_share,
            "max_candidates_per_request": self.max_candidates_per_request,
        }


def _checked_rules(rules: Any) -> dict[str, str]:
    """``rules`` (rule name -> handling) checked: known rules, known handlings, schema rules ``error``."""
    if not isinstance(rules, Mapping):
        raise ContractError("validation.rules", f"must be a mapping rule -> handling, got {rules!r}")
    for name, handling in rules.items():
        path = f"validation.rules.{name}"
        if name not in RULES_BY_NAME:
            raise ContractError(path, f"is not a rule; rules are {', '.join(RULE_NAMES)}")
        require_choice(handling, HANDLINGS, path)
        if handling != "error" and not RULES_BY_NAME[name].quarantinable:
            raise ContractError(path, "can only be 'error' (a schema or contract rule has no rows to set aside)")
    return dict(rules)


__all__ = [
    "HANDLINGS",
    "INPUTS",
    "CHECKS",
    "Check",
    "RULES",
    "RULE_INDEX",
    "RULE_NAMES",
    "RULES_BY_NAME",
    "Rule",
    "ValidationSpec",
    "describe_rules",
]
