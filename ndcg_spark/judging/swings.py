"""The swing of an unjudged document: how far judging it alone moves its request's NDCG.

For each unjudged document of a request and each system whose NDCG its judgment can move, the
list is scored again at **every grade of the declared scale** (NDCG is not monotone in one grade:
the grade enters the ideal too), everything else as the contract treats it: the other unjudged
candidates stay unjudged (gain 0 in place, or dropped under ``unjudged: exclude``, where the
judged document now takes a place and moves the later ones down), the ideal is the list's
(``ideal_from: candidates``) or every judged document of the request with this one added
(``ideal_from: judgments``: the document enters the ideal of every system of the request, shown
or not), ties averaged under ``ties: average``. :func:`judging_swings` computes them on a numpy
worker over Arrow batches of the collected lists (:mod:`ndcg_spark.judging.batch`: prefix and
suffix sums over the list's places, O(M log M + U x S) per list of M candidates and U documents
for S distinct gains of the scale); :func:`graded_rows` gives the same rows from native Spark
expressions (interpreted higher-order array functions: O(U x S x M), O(U x M^2) more under
``unjudged: exclude`` with ``ties: average``, whose tie groups change).

``tests/test_judging.py`` checks every value against the plain-Python oracle scoring each grading.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.attributes import Attributes
from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import ContractError
from ndcg_spark.frames import shuffles_sized_to
from ndcg_spark.judging.lists import list_rows, request_lists
from ndcg_spark.measures.ndcg import NDCG
from ndcg_spark.metrics.ranked_list import RankedList
from ndcg_spark.scoring.columns import value_of
from ndcg_spark.scoring.score import scoring_rows
from ndcg_spark.validation.shell_check import shell_check

__all__ = ["SWING_COLUMNS", "graded_rows", "judging_swings", "scale_of", "tie_aware"]

#: the columns of :func:`judging_swings`
SWING_COLUMNS = ("system", "pool_version", "request_id", "doc_id", "k", "rank", "ndcg", "ndcg_min", "ndcg_max",
                 "swing")


def scale_of(contract: Contract) -> tuple[tuple[float, float], ...]:
    """Every ``(grade, gain)`` of the contract's declared scale, ascending by grade; a clear error
    naming ``contract.max_grade`` when it declares none (a swing is over the grades a judge can give)."""
    grades = contract.gain.scale(contract.max_grade)
    if grades is None:
        raise ContractError(
            "contract.max_grade",
            "a judging plan weighs every grade a judge can give, so it needs the judging scale: declare "
            "contract.max_grade (grades 0 .. max_grade) or a gain table",
        )
    return tuple((g, contract.gain.value(g)) for g in grades)


def tie_aware(contract: Contract) -> bool:
    return contract.order == "score" and contract.ties == "average"


def graded_rows(lists: DataFrame, contract: Contract,
                sides: tuple[tuple[str, str | None], ...] | None = None) -> DataFrame:
    """One row per request x system x document whose judgment can move that system's NDCG:
    ``system, pool_version, request_id, doc_id``, ``rank`` (1-based in this list; null when the
    system does not show it), ``now`` (the NDCG at every K of :attr:`Contract.k`, in order) and
    ``graded`` (the NDCG at every K with the document judged at each distinct gain of the scale,
    ascending). An NDCG is null when its ideal is empty, whatever ``empty_ideal`` says (the callers
    apply the policy).

    ``lists``: :func:`~ndcg_spark.judging.lists.request_lists`; ``sides``: only these systems' lists
    (each a system and pool version; None: every list). A plan grades only its target's lists, at its K.
    """
    gains = sorted({gain for _, gain in scale_of(contract)})
    rows = list_rows(lists, contract)
    if sides is not None:
        rows = rows.filter(reduce(lambda a, b: a | b, [(F.col("system") == system) & F.col("pool_version").eqNullSafe(
            F.lit(pool)) for system, pool in sides]))
    rows = rows.withColumn("now", _ndcg_at_every_k(contract, *_ranked(contract, F.col("items"), None,
                                                                       F.col("judged_ideal")), None))
    rows = rows.select("system", "pool_version", "request_id", "items", "judged_ideal", "now",
                       F.explode("unjudged").alias("doc_id"))
    doc = F.col("doc_id")
    ranked, base = _ranked(contract, F.col("items"), doc, F.col("judged_ideal"))
    rows = rows.withColumn("_ranked", ranked).withColumn("_base", base)
    graded = F.transform(F.array(*[F.lit(float(g)) for g in gains]),
                         lambda x: _ndcg_at_every_k(contract, F.col("_ranked"), F.col("_base"), (doc, x)))
    # array_position by name: pyspark 3.5's F.array_position takes only a literal value, not a column
    position = F.call_function("array_position", F.transform("items", lambda it: it["doc_id"]), doc)
    return rows.select("system", "pool_version", "request_id", "doc_id",
                       F.when(position > 0, position.cast("int")).alias("rank"), "now", graded.alias("graded"))


def _ranked(contract: Contract, items: Column, doc: Column | None, judged_ideal: Column) -> tuple[Column, Column]:
    """The ranked items once ``doc`` is judged (``doc`` None: as they are) -- under ``exclude`` the
    judged ones and ``doc``, with their tie groups under ``ties: average`` -- and the ideal's gains
    without ``doc``, largest first: the list's ranked gains (an unjudged one 0), or the request's
    judged gains."""
    ranked = items
    if contract.unjudged.condenses:
        ranked = F.filter(items, lambda it: it["judged"] if doc is None else it["judged"] | (it["doc_id"] == doc))
    if tie_aware(contract):
        ranked = F.transform(ranked, lambda it: F.struct(
            it["doc_id"].alias("doc_id"), it["gain"].alias("gain"),
            F.size(F.filter(ranked, lambda y: y["o1"] < it["o1"])).alias("tie_start"),
            F.size(F.filter(ranked, lambda y: y["o1"] == it["o1"])).alias("tie_size")))
    top = contract.max_k  # only the ideal's top K can count, with the document's gain put in its place
    if contract.ideal_from == "judgments":
        return ranked, F.slice(judged_ideal, 1, top)
    others = ranked if doc is None else F.filter(ranked, lambda it: it["doc_id"] != doc)
    return ranked, F.slice(F.sort_array(F.transform(others, lambda it: F.coalesce(it["gain"], F.lit(0.0))), asc=False),
                           1, top)


def _ndcg_at_every_k(contract: Contract, ranked: Column, base: Column, judged: tuple[Column, Column] | None) -> Column:
    """The NDCG at every K of ``ranked`` with ``judged = (doc, gain)`` given that gain (None: as it
    is), over the ideal ``base`` with the gain added in its place (null: an empty ideal): NDCG's own
    definition (:class:`~ndcg_spark.measures.ndcg.NDCG`) over the list as a
    :class:`~ndcg_spark.metrics.ranked_list.RankedList`, as stage 1 scores it."""
    if not tie_aware(contract):  # only the top K can count (a tie group below K can reach into it)
        ranked = F.slice(ranked, 1, contract.max_k)
    if judged is None:
        shown, ideal = ranked, base
    else:
        doc, x = judged
        shown = F.transform(ranked, lambda it: it.withField("gain", F.when(it["doc_id"] == doc, x).otherwise(it["gain"])))
        ideal = F.concat(F.filter(base, lambda v: v >= x), F.array(x), F.filter(base, lambda v: v < x))
    lst = RankedList(shown, {"gain": lambda it: it["gain"]}, ideal=ideal, tie_aware=tie_aware(contract))
    return F.array(*[value_of(NDCG(), lst, k, contract.max_k) for k in contract.k])


def judging_swings(
    candidates: DataFrame,
    judgments: DataFrame | None = None,
    contract: Contract | None = None,
    *,
    system: str | None = None,
    pool_version: str | None = None,
    attributes: Attributes | None = None,
    validate: bool = True,
) -> DataFrame:
    """The swing of every unjudged (request, document) on each system's NDCG at every K.

    Parameters
    ----------
    candidates, judgments, contract, system, pool_version, attributes, validate :
        as :func:`~ndcg_spark.scoring.score.score_requests` (the contract must declare its scale:
        ``max_grade`` or a gain table).

    Returns
    -------
    DataFrame with :data:`SWING_COLUMNS`: one row per system x request x unjudged document whose
    judgment can move that system's NDCG x K; ``rank`` in that system's list (null when it does not
    show it: under ``ideal_from: judgments`` it still enters the ideal), ``ndcg`` now, the lowest
    and highest NDCG over every grade of the scale the document alone can get, and ``swing`` =
    ``ndcg_max - ndcg_min``. There an empty ideal counts 0 (as ``empty_ideal: zero`` scores it): a
    document that alone can give its request an ideal swings it from 0; ``ndcg`` follows the contract.

    Examples
    --------
    ``a`` is judged 1 and shown first, ``b`` and ``c`` are unjudged; judged 3, ``c`` would go above
    ``a`` in the ideal and pull the NDCG down, judged 0 it leaves it at 1:

    >>> from ndcg_spark import Contract
    >>> cands = spark.createDataFrame([("q1", "a", 1), ("q1", "b", 2), ("q1", "c", 3)],
    ...                               "request_id string, doc_id string, position int")
    >>> judged = spark.createDataFrame([("q1", "a", 1.0)], "request_id string, doc_id string, grade double")
    >>> swings = judging_swings(cands, judged, Contract(k=[3], max_grade=3))
    >>> swings.select("doc_id", "rank", "ndcg", *[F.round(c, 4).alias(c) for c in ("ndcg_min", "ndcg_max", "swing")]
    ...               ).orderBy("doc_id").show()
    +------+----+----+--------+--------+------+
    |doc_id|rank|ndcg|ndcg_min|ndcg_max| swing|
    +------+----+----+--------+--------+------+
    |     b|   2| 1.0|  0.7098|     1.0|0.2902|
    |     c|   3| 1.0|  0.5897|     1.0|0.4103|
    +------+----+----+--------+--------+------+
    <BLANKLINE>
    """
    contract = (contract or Contract()).resolve(candidates.columns)
    scale_of(contract)
    attributes = attributes or Attributes()
    with shuffles_sized_to(candidates, judgments):
        if validate:
            checked = shell_check(candidates, judgments, contract, attributes=attributes, system=system,
                                  pool_version=pool_version)
            candidates, judgments = checked.candidates, checked.judgments
        rows = scoring_rows(candidates, judgments, contract, system, pool_version, integer_ids=False)
        from ndcg_spark.judging.batch import graded_lists  # numpy: imported when used

        graded = graded_lists(request_lists(rows, judgments, contract), contract)
    per_k = F.posexplode(F.array(*[F.lit(k) for k in contract.k])).alias("_slot", "k")
    exploded = graded.select("*", per_k)
    slot = F.col("_slot") + F.lit(1)
    now = F.element_at("now", slot)
    at_grades = F.transform("graded", lambda g: F.coalesce(F.element_at(g, slot), F.lit(0.0)))
    low, high = F.array_min(at_grades), F.array_max(at_grades)
    empty = contract.empty_ideal.column()
    return exploded.select("system", "pool_version", "request_id", "doc_id", "k", "rank",
                           F.coalesce(now, empty).alias("ndcg"), low.alias("ndcg_min"), high.alias("ndcg_max"),
                           (high - low).alias("swing"))
