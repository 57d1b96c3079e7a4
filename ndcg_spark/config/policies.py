"""The contract's policies as objects: what a request without an ideal, a request a ranker returned
nothing for and an unjudged candidate each do to a metric (pure Python).

Each policy is one small value object that knows its value and whether it sets a request aside --
the stages ask it (as they ask the gain mapping) instead of comparing its name. A policy reads
from and stamps as its name (``Contract.to_dict``), so the fingerprint is that of the name.

>>> EmptyIdeal.parse("zero").value, EmptyIdeal.parse("exclude").sets_aside, EmptyIdeal.parse("error").fails
(0.0, True, True)
>>> NoResults.parse("exclude").sets_aside, NoResults.parse("zero").value
(True, 0.0)
>>> Unjudged.parse("exclude").condenses, Unjudged.parse("zero").counts, Unjudged.parse("separate").counts
(True, False, True)
>>> EmptyIdeal.parse("skip")
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: contract.empty_ideal: must be one of exclude, zero, error; got 'skip'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ndcg_spark.config.checks import require_choice

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

__all__ = ["EmptyIdeal", "NoResults", "Unjudged"]


@dataclass(frozen=True)
class _Policy:
    """A policy by the name the contract declares it with."""

    name: str

    #: the names the contract accepts, in the order messages list them
    NAMES: ClassVar[tuple[str, ...]] = ()
    #: the contract field it is (for messages)
    FIELD: ClassVar[str] = ""

    def __post_init__(self) -> None:
        require_choice(self.name, self.NAMES, f"contract.{self.FIELD}")

    @classmethod
    def parse(cls, value: Any, path: str | None = None):
        """The policy of ``value``: one already made, or its name."""
        if isinstance(value, cls):
            return value
        if path is not None and value not in cls.NAMES:
            require_choice(value, cls.NAMES, path)
        return cls(value)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class EmptyIdeal(_Policy):
    """``contract.empty_ideal``: a request with no ideal for a metric (NDCG's IDCG = 0, no relevant
    document for a binary metric). ``exclude``: set aside (the metric null), flagged and counted;
    ``zero``: scored 0, flagged and counted; ``error``: the run fails, naming how many and one."""

    NAMES: ClassVar[tuple[str, ...]] = ("exclude", "zero", "error")
    FIELD: ClassVar[str] = "empty_ideal"

    @property
    def sets_aside(self) -> bool:
        """Whether such a request has no value (null): ``exclude``, and ``error`` (which fails first)."""
        return self.name != "zero"

    @property
    def fails(self) -> bool:
        return self.name == "error"

    @property
    def value(self) -> float | None:
        """What such a request scores: 0.0 under ``zero``, else None (set aside)."""
        return 0.0 if self.name == "zero" else None

    def column(self) -> Column:
        """:attr:`value` as a double literal (null when set aside)."""
        from pyspark.sql import functions as F

        return F.lit(self.value).cast("double")


@dataclass(frozen=True)
class NoResults(_Policy):
    """``contract.no_results``: a request of the night's population a system returned nothing for.
    ``exclude``: set aside whatever its ideal (null, flagged, counted: trec_eval without ``-c``);
    ``zero``: scored 0 (or the empty-ideal policy's value when its ideal is empty too: trec_eval
    ``-c``, Spark's ``RankingEvaluator``)."""

    NAMES: ClassVar[tuple[str, ...]] = ("exclude", "zero")
    FIELD: ClassVar[str] = "no_results"

    @property
    def sets_aside(self) -> bool:
        return self.name == "exclude"

    @property
    def value(self) -> float | None:
        return 0.0 if self.name == "zero" else None


@dataclass(frozen=True)
class Unjudged(_Policy):
    """``contract.unjudged``: a candidate without a judgment. ``zero``: not relevant, gain 0, keeps
    its place; ``exclude``: dropped before ranking (later candidates move up: the condensed list);
    ``separate``: as ``zero``, and counted in the top K (``n_unjudged_in_top_k``, also under
    ``exclude``, before condensing)."""

    NAMES: ClassVar[tuple[str, ...]] = ("zero", "exclude", "separate")
    FIELD: ClassVar[str] = "unjudged"

    @property
    def condenses(self) -> bool:
        """Whether unjudged candidates are dropped before ranking (``exclude``)."""
        return self.name == "exclude"

    @property
    def counts(self) -> bool:
        """Whether the unjudged in the top K are counted (``separate``, ``exclude``; not ``zero``)."""
        return self.name != "zero"
