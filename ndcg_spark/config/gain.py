"""How a grade becomes a gain: the gain mapping, and everything a gain kind means, in one place.

A :class:`GainMapping` is the contract's ``gain``. Each kind is one class below (:data:`KINDS`),
and it alone says what the kind means: the gain of a grade (:meth:`GainMapping.value`, and the same
as a Spark Column, :meth:`GainMapping.column`), the gains a declared scale of grades takes
(:meth:`GainMapping.scale_gains`, whose ends the unjudged what-ifs judge at), the distinct positive
gains the dense plan counts the ideal over (:meth:`GainMapping.levels`), whether it can give -0.0,
and the largest grade whose gain is finite. The contract, both stage-1 plans, validation and the
what-ifs ask the mapping; none of them names a kind. A new kind is a class here (with its name in
:data:`KINDS`), its docs and its tests.

This module imports no pyspark: :meth:`GainMapping.column` imports it when called.

>>> binary = GainMapping.parse("binary")
>>> binary.value(3.0), binary.scale_gains(3.0), binary.ends(3.0)
(1.0, (0.0, 1.0, 1.0, 1.0), (0.0, 1.0))
>>> GainMapping().scale_gains(3.0), GainMapping().levels(3.0)
((0.0, 1.0, 3.0, 7.0), (7.0, 3.0, 1.0))
>>> table = GainMapping.parse({"table": {0: 0, 1: 1, 2: 3}})
>>> table.value(2.0), table.value(5.0), table.ends(None), table.levels(None)
(3.0, None, (0.0, 3.0), (3.0, 1.0))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ndcg_spark.config.checks import require_choice
from ndcg_spark.errors import ContractError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

#: ``((grade, gain), ...)``, sorted by grade: a table gain's entries (empty for the other kinds)
Table = tuple[tuple[float, float], ...]
#: The largest gain scored: the DCG of millions of gains this large still fits a double (2^1023 ...),
#: so no sum overflows into an infinite or NaN NDCG. A larger gain breaks ``grade_not_finite``.
MAX_GAIN = 2.0**1000


class _Kind:
    """What one gain kind means; a subclass per kind overrides what differs from these defaults."""

    #: the kind's name in the contract
    name = ""
    #: the largest grade whose gain is at most MAX_GAIN, when there is one
    top_grade: float | None = None
    #: whether the kind is an explicit table of grades (``GainMapping.table``)
    tabulated = False

    def value(self, grade: float, table: Table) -> float | None:
        raise NotImplementedError

    def column(self, grade: Column, table: Table) -> Column:
        raise NotImplementedError

    def fixed_gains(self, table: Table) -> tuple[float, ...] | None:
        """Every gain the kind can give, whatever the grade; None when each grade has its own."""
        return None

    def negative_zero(self, table: Table) -> bool:
        """Whether a gain can be -0.0."""
        return False

    def scale(self, table: Table, max_grade: float | None) -> tuple[float, ...] | None:
        """The grades of the declared scale: the whole grades ``0 .. max_grade`` (and ``max_grade``
        itself when it is not whole), or None when no ``max_grade`` declares one."""
        if max_grade is None:
            return None
        whole = tuple(float(g) for g in range(int(math.floor(max_grade)) + 1))
        return whole if float(max_grade).is_integer() else (*whole, float(max_grade))


class _Exponential(_Kind):
    """``2^grade - 1`` (the default): each grade counts twice the one below, plus one."""

    name = "exponential"
    top_grade = 1000.0  # its gain is MAX_GAIN (plus one)

    def value(self, grade: float, table: Table) -> float:
        return 2.0**grade - 1.0

    def column(self, grade: Column, table: Table) -> Column:
        from pyspark.sql import functions as F

        return F.pow(F.lit(2.0), grade) - F.lit(1.0)  # 1.0 - 1.0 is +0.0: never -0.0


class _Linear(_Kind):
    """``grade``: the grade itself (trec_eval's ``ndcg_cut``)."""

    name = "linear"
    top_grade = MAX_GAIN

    def value(self, grade: float, table: Table) -> float:
        return float(grade)

    def column(self, grade: Column, table: Table) -> Column:
        return grade.cast("double")

    def negative_zero(self, table: Table) -> bool:
        return True  # a grade of -0.0 is its own gain


class _Binary(_Kind):
    """1 for a grade > 0, else 0: relevant or not (Spark's ``RankingEvaluator``)."""

    name = "binary"

    def value(self, grade: float, table: Table) -> float:
        return 1.0 if grade > 0 else 0.0

    def column(self, grade: Column, table: Table) -> Column:
        from pyspark.sql import functions as F

        return (grade > F.lit(0)).cast("double")  # null stays null

    def fixed_gains(self, table: Table) -> tuple[float, ...] | None:
        return (0.0, 1.0)


class _Table(_Kind):
    """An explicit grade -> gain table; a grade it does not list has no gain (an input error)."""

    name = "table"
    tabulated = True

    def value(self, grade: float, table: Table) -> float | None:
        return dict(table).get(float(grade))

    def column(self, grade: Column, table: Table) -> Column:
        from pyspark.sql import functions as F

        # one comparison per listed grade (compiled to primitive compares; a map literal's lookup
        # boxed every key it compared, per row); no branch matches a null or unlisted grade: null
        value, (first, *rest) = grade.cast("double"), table
        gains = F.when(value == F.lit(float(first[0])), F.lit(float(first[1])))
        for listed, gain_value in rest:
            gains = gains.when(value == F.lit(float(listed)), F.lit(float(gain_value)))
        return gains

    def fixed_gains(self, table: Table) -> tuple[float, ...] | None:
        return tuple(gain for _, gain in table)

    def negative_zero(self, table: Table) -> bool:
        return any(gain == 0 and math.copysign(1.0, gain) < 0 for _, gain in table)

    def scale(self, table: Table, max_grade: float | None) -> tuple[float, ...] | None:
        """The table's own grades (up to ``max_grade`` when given, one of them)."""
        return tuple(g for g, _ in table if max_grade is None or g <= max_grade)


#: every gain kind, by the name the contract declares it with
KINDS = {kind.name: kind() for kind in (_Exponential, _Linear, _Table, _Binary)}
GAIN_KINDS = tuple(KINDS)


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ContractError(path, f"must be a finite number, got {value!r}")
    if value < 0:
        raise ContractError(path, f"must be a non-negative number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class GainMapping:
    """How a grade becomes a gain (the contract's ``gain``).

    ``exponential``: 2^grade - 1; ``linear``: grade; ``binary``: 1 for a grade > 0, else 0
    (relevant or not, as Spark's ``RankingEvaluator``); ``table``: an explicit grade -> gain map
    (a grade missing from the table is an input error, never a silent 0).
    """

    kind: str = "exponential"
    table: Table = ()
    #: a negative grade is judged with gain 0 (``contract.negative_grades: zero``; set by the contract)
    negative_as_zero: bool = False

    def __post_init__(self) -> None:
        tabulated = KINDS[require_choice(self.kind, GAIN_KINDS, "contract.gain")].tabulated
        if tabulated and not self.table:
            raise ContractError("contract.gain.table", "must map at least one grade to a gain")
        if not tabulated and self.table:
            raise ContractError("contract.gain.table", f"is only allowed with a table gain, not {self.kind!r}")

    # ---------------------------------------------------------------- what a grade is worth
    def value(self, grade: float) -> float | None:
        """The gain of ``grade`` (None: a grade the table does not list)."""
        if self.negative_as_zero and grade < 0:
            return 0.0
        return KINDS[self.kind].value(grade, self.table)

    def column(self, grade: Column) -> Column:
        """:meth:`value` as a Spark Column; a null grade stays null (unjudged), and so does a grade
        the table does not list. :func:`ndcg_spark.metrics.gain.gain` is this, for a select."""
        gain = KINDS[self.kind].column(grade, self.table)
        if not self.negative_as_zero:
            return gain
        from pyspark.sql import functions as F

        return F.when(grade < F.lit(0), F.lit(0.0)).otherwise(gain)

    @property
    def lists_grades(self) -> bool:
        """Whether the mapping lists the grades it takes (a table): any other grade has no gain."""
        return KINDS[self.kind].tabulated

    @property
    def may_be_negative_zero(self) -> bool:
        """Whether a gain can be -0.0: a linear gain (of the grade -0.0) or a table listing -0.0;
        ``2^g - 1`` cannot (``1.0 - 1.0`` is +0.0), nor can ``binary``.

        >>> GainMapping("linear").may_be_negative_zero, GainMapping().may_be_negative_zero
        (True, False)
        """
        return KINDS[self.kind].negative_zero(self.table)

    # ---------------------------------------------------------------- the declared scale
    def scale(self, max_grade: float | None) -> tuple[float, ...] | None:
        """The grades of the declared scale, ascending, or None when none is declared: a table's
        grades (up to ``max_grade`` when given), else the whole grades ``0 .. max_grade`` (and
        ``max_grade`` itself when it is not whole)."""
        return KINDS[self.kind].scale(self.table, max_grade)

    def scale_gains(self, max_grade: float | None) -> tuple[float, ...] | None:
        """The gain of every grade of the declared :meth:`scale` (None: no scale)."""
        grades = self.scale(max_grade)
        return None if grades is None else tuple(self.value(g) for g in grades)

    def ends(self, max_grade: float | None) -> tuple[float, float] | None:
        """The gains of the lowest and the highest grade of the declared scale -- what every
        unjudged candidate gets under the what-ifs ``ndcg_unjudged_low`` / ``_high`` -- or None."""
        gains = self.scale_gains(max_grade)
        return None if gains is None else (gains[0], gains[-1])

    def levels(self, top: float | None) -> tuple[float, ...] | None:
        """The distinct positive gains a grade can take, largest first: the kind's fixed gains
        (binary's 1, a table's), else those of the whole grades ``1 .. top``; None when neither
        bounds them (the dense plan then reads them from the grades)."""
        fixed = KINDS[self.kind].fixed_gains(self.table)
        if fixed is None:
            if top is None:
                return None
            fixed = tuple(self.value(float(g)) for g in range(1, int(math.floor(top)) + 1))
        return tuple(sorted({g for g in fixed if g > 0}, reverse=True))

    def check_max_grade(self, value: Any, path: str = "contract.max_grade") -> float | None:
        """``contract.max_grade``: None, or a non-negative number that is a grade of the table (a
        table gain) and whose gain is at most :data:`MAX_GAIN` (a grade up to 1000 with exponential gain)."""
        if value is None:
            return None
        grade = _number(value, path)
        if KINDS[self.kind].tabulated and grade not in dict(self.table):
            listed = ", ".join(_fmt_number(g) for g, _ in self.table)
            raise ContractError(path, f"must be a grade of the gain table ({listed}), got {value!r}")
        top = KINDS[self.kind].top_grade
        if top is not None and grade > top:
            raise ContractError(path, f"must be at most {top:g} with {self.kind} gain, got {value!r}")
        return grade

    # ---------------------------------------------------------------- reading and stamping
    @classmethod
    def parse(cls, value: Any, path: str = "contract.gain") -> GainMapping:
        """Accept a kind's name (``"exponential"``, ``"linear"``, ``"binary"``), ``{"table": {grade: gain}}``
        or a bare mapping."""
        if isinstance(value, GainMapping):
            return value
        if isinstance(value, str):
            if value == "table":
                raise ContractError(path, "a table gain needs its entries: {table: {grade: gain, ...}}")
            return cls(kind=require_choice(value, GAIN_KINDS, path))
        if isinstance(value, Mapping):
            entries = value.get("table", value) if set(value) <= {"table", "kind"} else value
            if value.get("kind", "table") != "table":
                raise ContractError(f"{path}.kind", "must be 'table' when entries are given")
            if not isinstance(entries, Mapping) or not entries:
                raise ContractError(f"{path}.table", "must be a non-empty mapping grade -> gain")
            pairs = []
            for i, (grade, gain) in enumerate(entries.items()):
                g = _number(_coerce_key(grade), f"{path}.table[{i}]: grade")
                value_ = _number(gain, f"{path}.table[{grade}]")
                if value_ > MAX_GAIN:
                    raise ContractError(f"{path}.table[{grade}]", f"must be at most 2^1000 (the largest gain scored), got {gain!r}")
                pairs.append((g, value_))
            grades = [g for g, _ in pairs]
            if len(set(grades)) != len(grades):
                raise ContractError(f"{path}.table", "lists the same grade twice")
            return cls(kind="table", table=tuple(sorted(pairs)))
        names = ", ".join(k for k in GAIN_KINDS if k != "table")
        raise ContractError(path, f"must be {names} or {{table: {{grade: gain}}}}, got {value!r}")

    def to_plain(self) -> str | dict[str, dict[str, float]]:
        """The readable copy stamped in the contract: the kind's name, or ``{"table": {...}}``."""
        if not KINDS[self.kind].tabulated:
            return self.kind
        return {"table": {_fmt_number(g): v for g, v in self.table}}


def _coerce_key(key: Any) -> Any:
    """YAML keys may arrive as strings ("3"); accept them as numbers."""
    if isinstance(key, str):
        try:
            return float(key)
        except ValueError:
            return key
    return key


def _fmt_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


__all__ = ["GAIN_KINDS", "KINDS", "MAX_GAIN", "GainMapping"]
