"""The ``trend:`` section of a job: which published runs a trend shows, and when a night is flagged.

What flags a night is declared once, here (:data:`TREND_FLAGS`): each flag is a boolean column of
the trend row, named and worded once; the trend computes the columns, the CLI, the report and its
chart read them through :func:`raised_flags`, :func:`flag_text` and :func:`flag_mark`, and the combined
label of the ``flag`` column is derived from them (:func:`flag_label`).

>>> TrendSpec.from_dict({"last": 14})
TrendSpec(last=14, since=None, max_empty_ideal_shift=0.02, max_no_results_shift=0.02)
>>> TrendSpec.from_dict({"max_empty_ideal_shift": 2})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: trend.max_empty_ideal_shift: must be a number from 0 to 1 (a share), got 2
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ndcg_spark.config.checks import require_int, require_mapping, require_number, require_text
from ndcg_spark.errors import ContractError

__all__ = ["SHIFTS", "TREND_FLAGS", "TrendFlag", "TrendSpec", "flag_label", "flag_mark", "flag_text", "raised_flags"]


@dataclass(frozen=True)
class TrendFlag:
    """One reason a comparable night is flagged: a boolean column of its trend row, and its words.

    ``kind`` is ``move`` (the night's NDCG moved beyond the intervals) or ``shift`` (its traffic
    moved: a move on such a night may be traffic, not ranking). A shift's ``share`` is its
    aggregate count (``count``) over all requests, compared with the previous night's
    (``<share>_change``) against the spec's field ``threshold``, stamped on the row as a column of
    that name.
    """

    name: str
    column: str
    kind: str
    #: the chart's word beside a flagged night
    mark: str
    #: a move's headline (``MOVED``); a shift's noun (``empty-ideal share``)
    words: str
    #: what it means when no other kind of flag is raised with it
    advice: str
    share: str | None = None
    count: str | None = None
    threshold: str | None = None

    @property
    def change(self) -> str | None:
        """A shift's column of the change of its share from the previous night."""
        return None if self.share is None else f"{self.share}_change"


#: every flag of a trend row, moves first; a new flag is one entry here (and, for a shift, its
#: threshold field below and its share in the aggregate)
TREND_FLAGS = (
    TrendFlag("moved", "moved", "move", "moved", "MOVED", "its interval does not overlap the previous night's"),
    TrendFlag("empty_ideal_shift", "empty_ideal_shifted", "shift", "shift", "empty-ideal share",
              "check the no-answer traffic", share="empty_ideal_share", count="n_empty_ideal",
              threshold="max_empty_ideal_shift"),
    TrendFlag("no_results_shift", "no_results_shifted", "shift", "no results", "no-result share",
              "check the requests the ranker returned nothing for", share="no_results_share", count="n_no_results",
              threshold="max_no_results_shift"),
)
#: the shifts of :data:`TREND_FLAGS`
SHIFTS = tuple(f for f in TREND_FLAGS if f.kind == "shift")
#: how the ``flag`` label joins a move to the shifts, and two shifts
LABEL_WITH, LABEL_AND = "_with_", "_and_"


def flag_label(names: list[str]) -> str | None:
    """The combined ``flag`` label of the raised flags' names (catalogue order): ``moved``,
    ``moved_with_<shift>[_and_<shift>]``, ``<shift>[_and_<shift>]``, or None.

    >>> flag_label(["moved", "empty_ideal_shift"]), flag_label(["empty_ideal_shift"]), flag_label([])
    ('moved_with_empty_ideal_shift', 'empty_ideal_shift', None)
    >>> flag_label(["moved", "empty_ideal_shift", "no_results_shift"])
    'moved_with_empty_ideal_shift_and_no_results_shift'
    """
    moves = [f.name for f in TREND_FLAGS if f.kind == "move" and f.name in names]
    shifts = LABEL_AND.join(f.name for f in TREND_FLAGS if f.kind == "shift" and f.name in names)
    if moves and shifts:
        return f"{LABEL_AND.join(moves)}{LABEL_WITH}{shifts}"
    return LABEL_AND.join(moves) or shifts or None


def raised_flags(row: Any) -> list[TrendFlag]:
    """The flags a trend row raises (a mapping: a collected row), from their boolean columns; a
    row written before a flag had its column is read from its ``flag`` label."""
    row = row or {}
    label = str(row.get("flag") or "")
    named = set(label.replace(LABEL_WITH, LABEL_AND).split(LABEL_AND)) if label else set()
    return [f for f in TREND_FLAGS if row.get(f.column) is True or (row.get(f.column) is None and f.name in named)]


def flag_text(flags: list[TrendFlag]) -> str:
    """The raised flags in one line of words (the CLI's), empty when none.

    >>> moved, empty, no_results = TREND_FLAGS
    >>> flag_text([moved, empty])
    'MOVED, but the empty-ideal share moved too: may be traffic, not ranking'
    >>> flag_text([empty, no_results])
    'the empty-ideal share and the no-result share moved: check the no-answer traffic; check the requests the ranker returned nothing for'
    """
    moves = [f for f in flags if f.kind == "move"]
    shifts = [f for f in flags if f.kind == "shift"]
    nouns = " and ".join(f"the {f.words}" for f in shifts)
    if moves and shifts:
        return f"{moves[0].words}, but {nouns} moved too: may be traffic, not ranking"
    if moves:
        return f"{moves[0].words}: {moves[0].advice}"
    if shifts:
        return f"{nouns} moved: " + "; ".join(f.advice for f in shifts)
    return ""


def flag_mark(flags: list[TrendFlag]) -> tuple[str, str] | None:
    """The chart's word for a flagged night and its kind (``move`` when anything moved, else
    ``shift``), or None.

    >>> moved, empty, no_results = TREND_FLAGS
    >>> flag_mark([moved, empty]), flag_mark([no_results]), flag_mark([])
    (('moved + shift', 'move'), ('no results', 'shift'), None)
    """
    if not flags:
        return None
    kind = "move" if any(f.kind == "move" for f in flags) else "shift"
    return " + ".join(dict.fromkeys(f.mark for f in flags)), kind


@dataclass(frozen=True)
class TrendSpec:
    """The ``trend:`` section of the job YAML: ``{last: 14, since: "2026-11-01", max_empty_ideal_shift: 0.02}``.

    Parameters
    ----------
    last : int, optional
        Show the last ``last`` published runs (by run id; the default run id is the UTC date, so
        run-id order is night order). None: every run.
    since : str, optional
        Show the runs whose run id is ``>= since`` (e.g. a date ``2026-11-01``).
    max_empty_ideal_shift : float
        A night whose share of empty-ideal requests (no positive grade: no-answer traffic) moved by
        more than this (absolute, e.g. 0.02 = 2 points) from the previous comparable night is
        flagged, so a change in traffic is not read as a ranking change. Default 0.02.
    max_no_results_shift : float
        Likewise for the share of requests the system returned nothing for (``n_no_results /
        n_requests``): a ranker that stops answering some requests moves its mean without ranking
        any better or worse. Default 0.02.
    """

    last: int | None = None
    since: str | None = None
    max_empty_ideal_shift: float = 0.02
    max_no_results_shift: float = 0.02

    def __post_init__(self) -> None:
        if self.last is not None:
            require_int(self.last, "trend.last", minimum=1)
        if self.since is not None:
            require_text(self.since, "trend.since")
        for f in SHIFTS:  # every shift's threshold: a share
            value = getattr(self, f.threshold)
            if not 0 <= require_number(value, f"trend.{f.threshold}") <= 1:
                raise ContractError(f"trend.{f.threshold}", f"must be a number from 0 to 1 (a share), got {value!r}")

    @classmethod
    def from_dict(cls, data: Any) -> TrendSpec:
        """The spec of a YAML ``trend:`` mapping; ``None`` (no section) gives the defaults."""
        section = dict(require_mapping(data, "trend", {"last", "since", *(f.threshold for f in SHIFTS)}))
        if section.get("since") is not None:
            section["since"] = str(section["since"])  # YAML reads 2026-11-01 as a date
        return cls(**section)

    def narrowed(self, last: int | None = None, since: str | None = None) -> TrendSpec:
        """This spec with the command line's ``--last`` / ``--since`` in place of the YAML's."""
        return replace(self, last=self.last if last is None else last, since=self.since if since is None else since)
