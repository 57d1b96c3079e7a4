"""Row accounting: ``rows read = rows scored + rows quarantined`` per input, and what validation returns.

The counts behind it come from :mod:`ndcg_spark.validation.counts` as a :data:`RuleCounts`
mapping ``(input, kind, rule) -> (rows, example)``, kind ``read`` | ``rule`` | ``quarantined`` |
``merged`` (the detector also notes kind ``grades``: the grades' scale).

>>> counts = {("candidates", "read", None): (10, None), ("candidates", "quarantined", "doc_repeated"): (2, None)}
>>> print(RowAccounting.from_counts(counts, ["candidates"]).summary())
rows read = rows scored + rows quarantined: candidates 10 = 8 + 2 (doc_repeated 2)
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ndcg_spark.config.validation_spec import RULE_INDEX

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ndcg_spark.config.contract import Contract
    from ndcg_spark.config.attributes import Attributes

#: ``(input, kind, rule) -> (rows, example row as JSON or None)``; kind ``read`` | ``rule`` |
#: ``quarantined`` | ``merged`` (``rule`` is None for ``read`` and ``merged``).
RuleCounts = dict[tuple[str, str, Optional[str]], tuple[int, Optional[str]]]


def rows_read(counts: RuleCounts, name: str) -> int:
    """How many rows input ``name`` has."""
    return counts.get((name, "read", None), (0, None))[0]


@dataclass(frozen=True)
class InputAccounting:
    """Row accounting of one input: ``rows_read = rows_scored + rows_quarantined``.

    ``rows_scored`` are the rows that passed validation and were handed to scoring; identical
    duplicate judgments count there and are merged into one (``duplicates_merged`` of them went).
    ``quarantined_by_rule`` counts quarantined rows by the rule that sent them there.
    """

    input: str
    rows_read: int
    rows_scored: int
    rows_quarantined: int
    duplicates_merged: int = 0
    quarantined_by_rule: tuple[tuple[str, int], ...] = ()
    #: rows whose negative grade was read as judged, gain 0 (``contract.negative_grades: zero``)
    negative_grades_as_zero: int = 0
    #: TREC lines whose fields past the format's were ignored, as trec_eval ignores them
    trailing_fields_ignored: int = 0

    @classmethod
    def from_counts(cls, counts: RuleCounts, name: str) -> InputAccounting:
        """The accounting of input ``name`` (rules in catalogue order)."""
        read = rows_read(counts, name)
        by_rule = sorted(
            ((rule, n) for (inp, kind, rule), (n, _) in counts.items() if inp == name and kind == "quarantined"),
            key=lambda item: RULE_INDEX[item[0]],
        )
        quarantined = sum(n for _, n in by_rule)
        merged = counts.get((name, "merged", None), (0, None))[0]
        negative = counts.get((name, "grades", "negative"), (0, None))[0]
        trailing = counts.get((name, "notes", "trec_trailing"), (0, None))[0]
        return cls(name, read, read - quarantined, quarantined, merged, tuple(by_rule), negative, trailing)

    @property
    def balanced(self) -> bool:
        return self.rows_read == self.rows_scored + self.rows_quarantined

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows_read,
            "rows_scored": self.rows_scored,
            "rows_quarantined": self.rows_quarantined,
            "duplicates_merged": self.duplicates_merged,
            "quarantined_by_rule": dict(self.quarantined_by_rule),
            # only when the contract reads negative grades as gain 0 and some were
            **({"negative_grades_as_zero": self.negative_grades_as_zero} if self.negative_grades_as_zero else {}),
            **({"trailing_fields_ignored": self.trailing_fields_ignored} if self.trailing_fields_ignored else {}),
        }

    def summary(self) -> str:
        """``candidates 10 = 8 + 2 (doc_repeated 2)``."""
        text = f"{self.input} {self.rows_read:,} = {self.rows_scored:,} + {self.rows_quarantined:,}"
        notes = [f"{rule} {n:,}" for rule, n in self.quarantined_by_rule]
        if self.duplicates_merged:
            notes.append(f"{self.duplicates_merged:,} identical duplicate(s) merged")
        if self.negative_grades_as_zero:
            notes.append(f"{self.negative_grades_as_zero:,} negative grade(s) read as judged, gain 0")
        if self.trailing_fields_ignored:
            notes.append(f"{self.trailing_fields_ignored:,} TREC line(s) with trailing fields ignored, as trec_eval")
        return text + (f" ({', '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class RowAccounting:
    """Per-input :class:`InputAccounting` of one run (``candidates``, ``judgments``, ``attributes``)."""

    inputs: tuple[InputAccounting, ...]

    @classmethod
    def from_counts(cls, counts: RuleCounts, names: Iterable[str]) -> RowAccounting:
        """The accounting of the inputs ``names``, in that order."""
        return cls(tuple(InputAccounting.from_counts(counts, name) for name in names))

    def __getitem__(self, name: str) -> InputAccounting:
        for item in self.inputs:
            if item.input == name:
                return item
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(item.input == name for item in self.inputs)

    @property
    def rows_quarantined(self) -> int:
        return sum(item.rows_quarantined for item in self.inputs)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """``{input: {rows_read, rows_scored, rows_quarantined, duplicates_merged, quarantined_by_rule}}``."""
        return {item.input: item.as_dict() for item in self.inputs}

    def summary(self) -> str:
        """One line: ``rows read = rows scored + rows quarantined: candidates 10 = 8 + 2 (doc_repeated 2); …``."""
        return "rows read = rows scored + rows quarantined: " + "; ".join(item.summary() for item in self.inputs)


@dataclass
class ValidatedInputs:
    """What :func:`~ndcg_spark.validation.validate.validate_inputs` returns.

    ``candidates``, ``judgments`` and ``attributes.table`` hold the rows to score (original columns;
    a numeric column that arrived as strings is parsed to double). ``quarantine`` holds the
    quarantined rows in the :data:`~ndcg_spark.validation.quarantine.QUARANTINE_COLUMNS` shape
    (empty when nothing was set aside, ``None`` when no rule is handled by quarantine). ``contract``
    is resolved (``order`` is ``position`` or ``score``). ``grade_scale`` is the largest grade when
    every grade read is a whole number from 0 to 64, else None
    (:func:`~ndcg_spark.validation.counts.grade_scale`; ``score_requests`` takes it). Call
    :meth:`unpersist` once the outputs are written.
    """

    candidates: DataFrame
    judgments: DataFrame | None
    attributes: Attributes
    quarantine: DataFrame | None
    accounting: RowAccounting
    contract: Contract
    _cached: tuple[DataFrame, ...] = ()
    grade_scale: int | None = None

    @property
    def set_aside(self) -> DataFrame | None:
        """The request keys (``request_id``, ``system``, ``pool_version``) of candidate lists with a
        quarantined row: a system answered them, so they are not requests it returned nothing for."""
        if self.quarantine is None:
            return None
        rows = self.quarantine.where(self.quarantine["input"] == "candidates")
        return rows.select("request_id", "system", "pool_version").distinct()

    def unpersist(self) -> None:
        for df in self._cached:
            df.unpersist()
        self._cached = ()

    def remember(self) -> ValidatedInputs:
        """Note the candidate lists this check quarantined against the frame of candidates it returns
        (:func:`quarantined_lists`), so that ``score_requests(v.candidates, v.judgments, v.contract)``
        in the shell counts them in the quarantine, not as requests a ranker returned nothing for."""
        if self.quarantine is not None:
            try:
                _QUARANTINED[self.candidates] = self.set_aside
            except TypeError:  # a frame that takes no weak reference: pass set_aside= explicitly
                pass
        return self


#: frames of candidates :func:`~ndcg_spark.validation.validate.validate_inputs` returned -> the request
#: keys of the lists it quarantined; an entry goes with its frame
_QUARANTINED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def quarantined_lists(candidates: DataFrame) -> DataFrame | None:
    """The request keys (``request_id``, ``system``, ``pool_version``) of the candidate lists that
    :func:`~ndcg_spark.validation.validate.validate_inputs` quarantined when it returned ``candidates``
    (this very frame: one derived from it is another frame), or None. The quarantine is whole lists,
    so a list set aside there was answered -- its request is no request the ranker returned nothing for.

    >>> from ndcg_spark import ValidationSpec, validate_inputs
    >>> cands = spark.createDataFrame([("q1", "a", 1, 1.0), ("q1", "a", 2, 0.0), ("q2", "b", 1, 2.0)],
    ...                               "request_id string, doc_id string, position int, grade double")
    >>> v = validate_inputs(cands, spec=ValidationSpec.from_dict({"rules": {"doc_repeated": "quarantine"},
    ...                                                          "max_quarantined_share": 1.0}))
    >>> [r.request_id for r in quarantined_lists(v.candidates).collect()], quarantined_lists(cands)
    (['q1'], None)
    """
    try:
        return _QUARANTINED.get(candidates)
    except TypeError:
        return None


__all__ = ["InputAccounting", "RowAccounting", "RuleCounts", "ValidatedInputs", "quarantined_lists", "rows_read"]
