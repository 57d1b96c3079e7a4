"""What a metric is: one definition every stage reads (pure Python; pyspark only when called).

A :class:`Metric` says what one request's number is: the per-request columns its value is
computed from (its :class:`Component`\\ s, written to the per-request table beside the value), its
value from them, what gives a request an ideal (its denominator: without one the request is set
aside, or scored under the contract's ``empty_ideal``), its parameters (where tools disagree: recall
over every relevant document or over ``min(K, R)``), and its words. Stage 1's plans (and judge-next)
build each request's list as a :class:`~ndcg_spark.metrics.ranked_list.RankedList`; everything else
-- the policies, the what-ifs, stage 2's means and intervals, the comparison, the trend, the report
-- loops over the contract's metrics and asks them.

A new metric is one module of this package defining a subclass (it registers itself by its
``name``), with its components among :data:`COMPONENTS` (or new ones here), its plain-Python oracle
function in ``tests/oracle.py`` and its docs.

>>> from ndcg_spark.measures import parse_metrics
>>> [m.name for m in parse_metrics(["ndcg", {"recall": {"denominator": "capped"}}])]
['ndcg', 'recall']
>>> parse_metrics(["ndcg", "ndcg"])
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: contract.metrics[1]: declares 'ndcg' twice
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from ndcg_spark.errors import ContractError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

    from ndcg_spark.metrics.ranked_list import RankedList

__all__ = ["COMPONENTS", "Component", "METRICS", "Metric", "measure_label", "parse_metrics", "split_measure",
           "what_if_names"]

#: A metric's reader of its components: a component's name -> its column (per request and K).
Components = Callable[[str], "Column"]

#: the two what-ifs of every metric (``<metric>_unjudged_low`` / ``_high``), in order
WHAT_IFS = ("unjudged_low", "unjudged_high")


def what_if_names(metric: str) -> tuple[str, str]:
    """The per-request columns (and the aggregate's ``metric`` values) of a metric's two what-ifs.

    >>> what_if_names("recall")
    ('recall_unjudged_low', 'recall_unjudged_high')
    """
    return f"{metric}_{WHAT_IFS[0]}", f"{metric}_{WHAT_IFS[1]}"


#: how a what-if reads beside its metric
_WHAT_IF_WORDS = {WHAT_IFS[0]: "the unjudged at the lowest grade", WHAT_IFS[1]: "the unjudged at the highest grade"}


def split_measure(measure: str) -> tuple[str, str | None]:
    """A ``metric`` column's value as (its metric, its what-if or None).

    >>> split_measure("ndcg"), split_measure("recall_unjudged_high")
    (('ndcg', None), ('recall', 'unjudged_high'))
    """
    for what_if in WHAT_IFS:
        if measure.endswith(f"_{what_if}"):
            return measure[: -len(what_if) - 1], what_if
    return measure, None


def measure_label(measure: str, k: Any = None) -> str:
    """How a ``metric`` column's value is written for people: ``NDCG@10``, ``recall@5``,
    ``NDCG@10 (the unjudged at the lowest grade)``; an unknown name as it is.

    >>> measure_label("ndcg", 10), measure_label("ndcg_unjudged_low", 3), measure_label("other")
    ('NDCG@10', 'NDCG@3 (the unjudged at the lowest grade)', 'other')
    """
    import ndcg_spark.measures  # noqa: F401 - registers every metric of the package

    name, what_if = split_measure(measure)
    if name not in METRICS:
        return measure
    label = METRICS[name].title if k is None else f"{METRICS[name].title}@{k}"
    return label if what_if is None else f"{label} ({_WHAT_IF_WORDS[what_if]})"


@dataclass(frozen=True)
class Component:
    """A per-request column a metric's value is computed from.

    ``compute(list, k)`` gives it from a request's :class:`~ndcg_spark.metrics.ranked_list.RankedList`
    at cutoff ``k``; ``ideal`` says it depends only on the ideal (the request's judged documents), so
    an end-to-end comparison recomputes it over every judged document of the request; ``reads`` is the
    list field it needs (``relevant``: the plans then carry each candidate's relevance).
    """

    name: str
    #: its Spark SQL type in the per-request table
    type: str
    meaning: str
    compute: Callable[[RankedList, int], Column]
    ideal: bool = False
    reads: str = "gain"
    #: computed at the contract's largest K on every K's row (a sum over the deepest list the plans hold)
    deepest: bool = False

    def at(self, ranked: RankedList, k: int, max_k: int) -> Column:
        """Its column on the row of cutoff ``k`` of a contract whose largest K is ``max_k``."""
        return self.compute(ranked, max_k if self.deepest else k)


def _dcg(ranked: RankedList, k: int) -> Column:
    return ranked.discounted(k, "gain")


def _idcg(ranked: RankedList, k: int) -> Column:
    return ranked.ideal_discounted(k)


def _hits(ranked: RankedList, k: int) -> Column:
    return ranked.counted(k, "relevant")


def _shown(ranked: RankedList, k: int) -> Column:
    return ranked.shown(k)


def _first_relevant(ranked: RankedList, k: int) -> Column:
    return ranked.first(k, "relevant")


def _precision_sum(ranked: RankedList, k: int) -> Column:
    return ranked.precision_sum(k, "relevant")


def _n_relevant(ranked: RankedList, k: int) -> Column:
    from pyspark.sql import functions as F

    return F.coalesce(ranked.n_relevant, F.lit(0)).cast("bigint")


#: every component, by name, in the per-request table's order
COMPONENTS: Mapping[str, Component] = MappingProxyType({c.name: c for c in (
    Component("dcg", "double", "DCG@K of the displayed order", _dcg),
    Component("idcg", "double", "DCG@K of the ideal order (see the contract's `ideal_from`)", _idcg, ideal=True),
    Component("relevant_in_top_k", "double",
              "relevant documents (grade >= `contract.relevant_grade`) among the displayed top K; under "
              "`ties: average` its expected value over the tied orders", _hits, reads="relevant"),
    Component("n_relevant", "bigint",
              "the request's relevant documents under the contract's `ideal_from` (its candidates, or every "
              "judged document of the request)", _n_relevant, ideal=True, reads="relevant"),
    Component("n_shown", "int", "documents ranked within the top K: `min(k, the list's length)`", _shown),
    Component("precision_sum", "double",
              "the sum, over the displayed ranks p <= K holding a relevant document, of the relevant share of the "
              "top p (average precision's numerator)", _precision_sum, reads="relevant"),
    Component("first_relevant_rank", "int",
              "the displayed rank of the first relevant document within the contract's largest K (0: none there); "
              "the same on every K's row", _first_relevant, reads="relevant", deepest=True),
)})


class Metric:
    """One metric as the contract declares it: a subclass per metric, an instance per declaration
    (its parameters resolved). Subclasses set the class attributes and :meth:`value` (and
    :meth:`has_ideal` unless a relevant document gives the ideal, as for every binary metric)."""

    #: the name the contract declares it with, its per-request column, the ``metric`` column's value
    name: ClassVar[str] = ""
    #: how people write it (``NDCG``, ``recall``): ``NDCG@10``
    title: ClassVar[str] = ""
    #: one line for the docs: what it measures, and over which denominator
    meaning: ClassVar[str] = ""
    #: the :data:`COMPONENTS` its value is computed from
    components: ClassVar[tuple[str, ...]] = ()
    #: parameter -> its values, the default first
    parameters: ClassVar[Mapping[str, tuple[str, ...]]] = MappingProxyType({})
    #: whether a document counts as relevant or not (``contract.relevant_grade``) rather than by its gain
    binary: ClassVar[bool] = False
    #: whether ``ties: average`` (the expected value over every order of each tie) is implemented for it
    tie_average: ClassVar[bool] = True
    #: the metric a contract scores when it declares none, and the one the tables held before they had
    #: a ``metric`` column (their columns named after it: :mod:`ndcg_spark.legacy`); one metric is
    legacy: ClassVar[bool] = False

    #: every metric class by name (a subclass with a name registers itself)
    registry: ClassVar[dict[str, type[Metric]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            Metric.registry[cls.name] = cls

    def __init__(self, path: str = "contract.metrics", **params: Any) -> None:
        for key in params:
            if key not in self.parameters:
                known = ", ".join(self.parameters) or "none"
                raise ContractError(f"{path}.{key}", f"is not a parameter of {self.name} (parameters: {known})")
        resolved = {}
        for key, options in self.parameters.items():
            value = params.get(key, options[0])
            if value not in options:
                raise ContractError(f"{path}.{key}", f"must be one of {', '.join(options)}; got {value!r}")
            resolved[key] = value
        self.params: Mapping[str, str] = MappingProxyType(resolved)

    # ------------------------------------------------------------------ what it is
    def value(self, c: Components, k: int) -> Column:
        """The request's value at cutoff ``k`` from its components (read only where it has an ideal)."""
        raise NotImplementedError

    def has_ideal(self, c: Components) -> Column:
        """Whether the request has an ideal for this metric (its denominator is not 0): for a binary
        metric (the default here, ``n_relevant`` among its components), a relevant document."""
        return c("n_relevant") > 0

    # ------------------------------------------------------------------ how it is named and stamped
    @property
    def what_ifs(self) -> tuple[str, str]:
        """Its what-ifs' names: :func:`what_if_names`."""
        return what_if_names(self.name)

    def label(self, k: Any = None) -> str:
        """``NDCG@10`` (``NDCG`` without a K)."""
        return self.title if k is None else f"{self.title}@{k}"

    def to_plain(self) -> str | dict[str, dict[str, str]]:
        """The readable copy stamped in the contract: the name, or ``{name: {parameter: value}}``."""
        return {self.name: dict(self.params)} if self.params else self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Metric) and (self.name, dict(self.params)) == (other.name, dict(other.params))

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items()))))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({params})"


#: every metric, by name (filled as the package imports its modules)
METRICS = Metric.registry


def parse_metrics(value: Any, path: str = "contract.metrics") -> tuple[Metric, ...]:
    """The contract's ``metrics``: a list of names, or of ``{name: {parameter: value}}``; each
    metric once. Already parsed metrics pass through."""
    import ndcg_spark.measures  # noqa: F401 - registers every metric of the package

    if isinstance(value, (str, Mapping)) or value is None:
        raise ContractError(path, f"must be a list of metrics ({', '.join(METRICS)}), got {value!r}")
    items = list(value)
    if not items:
        raise ContractError(path, "must declare at least one metric")
    out: list[Metric] = []
    for i, item in enumerate(items):
        here = f"{path}[{i}]"
        if isinstance(item, Metric):
            metric = item
        else:
            name, params = _name_and_params(item, here)
            if name not in METRICS:
                raise ContractError(here, f"must be one of {', '.join(METRICS)}; got {name!r}")
            metric = METRICS[name](path=here, **params)
        if any(m.name == metric.name for m in out):
            raise ContractError(here, f"declares {metric.name!r} twice")
        out.append(metric)
    return tuple(out)


def _name_and_params(item: Any, path: str) -> tuple[str, Mapping[str, Any]]:
    if isinstance(item, str):
        return item, {}
    if isinstance(item, Mapping) and len(item) == 1:
        ((name, params),) = item.items()
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ContractError(f"{path}.{name}", f"must be a mapping of parameters, got {params!r}")
        return str(name), params
    raise ContractError(path, f"must be a metric's name or {{name: {{parameter: value}}}}, got {item!r}")
