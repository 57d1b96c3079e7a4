"""Stage 1 without collecting lists: requests displayed in dense position order.

Logged search results usually carry the displayed rank as their position: 1, 2, 3, ... (or
0, 1, 2, ...), each once. Then a candidate's rank *is* its position, and nothing needs sorting:

* DCG@k: the gain at each position ``p <= max(K)`` is picked out of one bitwise OR per 12
  positions, each position's gain a 5-bit code (:func:`_shown_codes`; decoded to the same doubles);
* the ideal: the gains sorted descending are, when the request's gains take few distinct values,
  ``v1`` repeated ``count(gain == v1)`` times, then ``v2`` ..., so counting per value is enough;
* the unjudged in the top k and the candidate counts are counts.

All of these are plain hash aggregates, which Spark sums partially where the rows lie before the
shuffle -- no per-request array of candidates is built, sorted or held in memory (measured on 20M
candidate rows: see docs/benchmarks.md). The DCG and IDCG are then summed with the same
:func:`ndcg_spark.metrics.dcg.dcg` as for a collected list, over the same values in the same order,
so both plans give the same bits.

Whether a request is dense is checked exactly, per request, in the aggregation: with
``m = min(n_candidates, max K)``, its positions ``0..m-1`` (or ``1..m``) must each occur exactly
once and no other candidate may sit at or above the m-th (a bit mask of the positions seen, and a
count), and every gain must be one of the values counted (:func:`gain_levels`: declared by
the contract, or read from the grades). Requests that fail -- gaps, repeated or fractional
positions, a missing position, a gain off the declared scale -- are scored by the collecting
plan, which orders by (position, doc id). The check and the sums are one aggregation, cached:
the job that lists the requests it does not serve also computes it. The plan applies when the
order is ``position``, unjudged candidates keep their place (``zero`` or ``separate``), the ideal
comes from the candidates, max K is at most 32, and the gains take at most
:data:`MAX_GAIN_LEVELS` distinct values, none negative.
"""

from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.frames import join_null_safe, persist_coalesced, whole_number_in
from ndcg_spark.metrics.dcg import unjudged_bound_ideal
from ndcg_spark.metrics.gain import gain
from ndcg_spark.metrics.ranked_list import RankedList
from ndcg_spark.scoring.columns import REQUEST_KEYS, keys_as_strings, keys_frame, metrics_columns

#: Most distinct gain values the ideal is counted over (one count column per value).
MAX_GAIN_LEVELS = 16
#: Largest max(K) the plan serves: one bit per position in a 64-bit mask, positions 0..max K.
MAX_K = 32
#: Past this many requests the plan does not serve, the collecting plan scores every request.
MAX_LISTED_NOT_SERVED = 100_000
#: Bits of a shown gain's code (:func:`_gain_code`): 0 unjudged or no candidate, 1 and 2 the
#: gains +0.0 and -0.0, then one per gain level (at most MAX_GAIN_LEVELS, so at most 18 codes).
CODE_BITS = 5
#: Positions whose codes one 64-bit word holds.
CODES_PER_WORD = 64 // CODE_BITS


def applies(contract: Contract) -> bool:
    """Whether the contract's choices allow the dense plan (the data decides the rest)."""
    return (
        contract.order == "position"
        and not contract.unjudged.condenses
        and contract.ideal_from == "candidates"
        and contract.max_k <= MAX_K
    )


def _whole(contract: Contract) -> Column:
    """The row's position is a whole number from 0 to max K (one the plan can hold a bit for)."""
    return whole_number_in(F.col("position"), 0, contract.max_k)


def _slot(contract: Contract) -> Column:
    """The row's position as an int when :func:`_whole` (else null: no position is ever cast that
    an int cannot hold, whatever order Spark evaluates the expressions in)."""
    return F.when(_whole(contract), F.col("position")).cast("int")


def _shifted_left(value: Column, bits: Column) -> Column:
    """``value << bits`` with a column shift (pyspark's ``shiftleft`` takes a literal one)."""
    return F.call_function("shiftleft", value.cast("long"), bits.cast("int"))


def _density(contract: Contract) -> list[Column]:
    """The aggregates the density check needs (see the module docstring)."""
    m, pos = contract.max_k, F.col("position")
    return [
        F.count(F.lit(1)).alias("n_candidates"),
        F.count("position").alias("_n_placed"),
        F.count(F.when(pos <= m - 1, 1)).alias("_n_top0"),
        F.count(F.when(pos <= m, 1)).alias("_n_top1"),
        F.bit_or(_shifted_left(F.lit(1), _slot(contract))).alias("_seen"),
    ]


def _gain_code(gain_: Column, levels: list[float], negative_zero: bool) -> Column:
    """A shown gain as a code of :data:`CODE_BITS` bits: 0 unjudged (null), 1 the gain +0.0, 2 the
    gain -0.0 (told apart: ``pow(-0.0, -1)`` is -inf; asked only when ``negative_zero``, the gain
    mapping can give it: :attr:`~ndcg_spark.config.gain.GainMapping.may_be_negative_zero`), 3 + i the level
    ``levels[i]``; a gain off the levels codes 0 (its request is not served)."""
    zero = F.when(F.pow(gain_, F.lit(-1.0)) < 0, F.lit(2)).otherwise(F.lit(1)) if negative_zero else F.lit(1)
    code = F.when(gain_ == F.lit(0.0), zero)
    for i, value in enumerate(levels):
        code = code.when(gain_ == F.lit(value), F.lit(3 + i))
    return code.otherwise(F.lit(0))


def _shown_codes(contract: Contract, levels: list[float]) -> list[Column]:
    """The codes of the gains shown at positions 0 .. max K, :data:`CODES_PER_WORD` positions per
    long: word ``w`` ORs each row's code shifted to its position's bits. A position held by one
    candidate gives its code back exactly (a request with a position held twice is not dense,
    hence not served); a position nobody holds reads 0, like an unjudged one."""
    slot, words = _slot(contract), contract.max_k // CODES_PER_WORD + 1
    code = _gain_code(F.col("gain"), levels, contract.gain.may_be_negative_zero)
    return [
        F.bit_or(F.when((slot >= w * CODES_PER_WORD) & (slot < (w + 1) * CODES_PER_WORD),
                        _shifted_left(code, (slot - w * CODES_PER_WORD) * CODE_BITS))).alias(f"_shown{w}")
        for w in range(words)
    ]


def _shown_gains(contract: Contract, levels: list[float]) -> list[Column]:
    """The gains shown at positions 0 .. max K from the words of :func:`_shown_codes` (null:
    unjudged or no candidate), the same doubles that were coded: each code looked up in one
    literal array (a code past the levels: a request not served)."""
    by_code = F.array(F.lit(None).cast("double"), F.lit(0.0), F.lit(-0.0), *[F.lit(float(v)) for v in levels])
    mask = F.lit((1 << CODE_BITS) - 1)
    gains = []
    for p in range(contract.max_k + 1):
        word = F.col(f"_shown{p // CODES_PER_WORD}")
        code = F.shiftright(word, CODE_BITS * (p % CODES_PER_WORD)).bitwiseAND(mask)
        gains.append(F.try_element_at(by_code, (code + 1).cast("int")))
    return gains


def _is_dense(contract: Contract, base: int) -> Column:
    """Positions ``base .. base+m-1`` each seen once, and no other candidate placed at or above
    position ``base+m-1`` (so the rank of every candidate in the top max K is its position)."""
    m = F.least(F.col("n_candidates"), F.lit(contract.max_k))
    full = _shifted_left(F.lit(1), m) - F.lit(1)
    seen = F.shiftright(F.coalesce(F.col("_seen"), F.lit(0).cast("long")), base).bitwiseAND(full)
    return (F.col("_n_placed") == F.col("n_candidates")) & (F.col(f"_n_top{base}") == m) & (seen == full)


def gain_levels(contract: Contract, grades: DataFrame | None, grade_scale: int | None = None) -> list[float] | None:
    """The positive gains the ideal is counted over, largest first, or None when the plan cannot
    serve them (more than :data:`MAX_GAIN_LEVELS`, or one negative or not finite).

    Declared by the contract when it can be: a gain table's positive gains, ``binary``'s 1, and
    with ``max_grade`` the gains of the whole grades ``1 .. max_grade``; a request with any other
    gain is then not served by the plan (:func:`aggregate_dense`'s evidence) and is collected.
    The same from ``grade_scale`` (up to :data:`MAX_GAIN_LEVELS`): every grade is known to be a
    whole number from 0 to it (the input check read them), so no gain falls outside.
    Otherwise read from ``grades`` (one column of grades: the judgments', or a pre-joined table's):
    one small job, the distinct gains (summed partially where the rows lie, so a few values cross
    the shuffle); a superset of the candidates' gains, which only adds count columns.
    """
    mapping = contract.gain
    # the whole grades 1 .. top: declared by the contract, else known from a check (when few enough)
    top = contract.max_grade
    if top is None and grade_scale is not None and grade_scale <= MAX_GAIN_LEVELS:
        top = grade_scale
    values = mapping.levels(top)
    if values is None:
        if grades is None:
            return None
        found = (
            grades.select(gain(F.col(grades.columns[0]).cast("double"), mapping).alias("_gain"))
            .where(F.col("_gain").isNotNull())
            .distinct()
            .limit(MAX_GAIN_LEVELS + 1)
            .collect()
        )
        values = [r["_gain"] for r in found]
    distinct = set(values)
    if len(distinct) > MAX_GAIN_LEVELS or not all(math.isfinite(v) and v >= 0 for v in distinct):
        return None
    return sorted((v for v in distinct if v > 0), reverse=True)


def aggregate_dense(rows: DataFrame, contract: Contract, keys: tuple[str, ...], levels: list[float]) -> DataFrame:
    """One row per request of ``rows``: ``keys``, ``_served`` (the evidence that the plan applies:
    its positions are dense and every gain is one of ``levels`` or 0), the counts, ``shown`` (the
    gains of the top max K in displayed order, null where unjudged), ``ideal`` (the top max K
    gains of the ideal, largest first) and ``unjudged_{k}`` (unjudged candidates in the top k) for
    every K -- what :func:`score_dense_requests` turns into the metrics with the same expressions
    as for a collected list. ``keys``: the request key columns that vary (see there)."""
    return from_dense_sums(rows.groupBy(*keys).agg(*dense_sums(contract, levels)), contract, keys, levels)


def dense_sums(contract: Contract, levels: list[float]) -> list[Column]:
    """The per-request aggregates of :func:`aggregate_dense` (over rows with ``position``,
    ``grade``, ``gain``, ``judged`` and, when a declared metric reads it, ``relevant``), each named,
    for :func:`from_dense_sums`."""
    pos, gain_ = F.col("position"), F.col("gain")
    unjudged = ~F.col("judged")
    off_level = gain_.isNotNull() & (gain_ != F.lit(0.0)) & ~gain_.isin(*[F.lit(v) for v in levels])
    relevance = [
        # which of positions 0 .. max K hold a relevant candidate (one bit each), and how many are relevant
        F.bit_or(F.when(F.col("relevant"), _shifted_left(F.lit(1), _slot(contract)))).alias("_relevant"),
        F.count(F.when(F.col("relevant"), 1)).alias("n_relevant"),
    ] if contract.reads_relevance else []
    return [
        *relevance,
        *_density(contract),
        F.count(F.when(off_level, 1)).alias("_n_off_level"),
        F.count("grade").alias("n_judged"),
        F.count(F.when(F.col("grade") > 0, True)).alias("n_positive"),
        # the gains shown at positions 0..max K, coded (null: unjudged, or no candidate there)
        *_shown_codes(contract, levels),
        *[F.count(F.when((pos <= k - 1 + base) & unjudged, 1)).alias(f"_u{k}_{base}")
          for k in contract.k for base in (0, 1)],
        *[F.count(F.when(gain_ == F.lit(v), 1)).alias(f"_c{i}") for i, v in enumerate(levels)],
    ]


def from_dense_sums(grouped: DataFrame, contract: Contract, keys: tuple[str, ...], levels: list[float]) -> DataFrame:
    """:func:`aggregate_dense`'s columns from ``keys`` and the columns of :func:`dense_sums`."""
    m = contract.max_k
    dense0, dense1 = _is_dense(contract, 0), _is_dense(contract, 1)
    gains = _shown_gains(contract, levels)
    shown = F.when(dense0, F.array(*gains[:m])).otherwise(F.array(*gains[1:]))
    # the ideal's first max K gains: each positive value as often as it occurs, largest first
    runs = [F.array_repeat(F.lit(v), F.least(F.col(f"_c{i}"), F.lit(m)).cast("int")) for i, v in enumerate(levels)]
    ideal = F.slice(F.concat(*runs), 1, m) if runs else F.array().cast("array<double>")
    served = (dense0 | dense1) & (F.col("_n_off_level") == 0)
    relevance = []
    if contract.reads_relevance:
        mask = F.coalesce(F.col("_relevant"), F.lit(0).cast("long"))
        bits = [F.shiftright(mask, p).bitwiseAND(F.lit(1)) == F.lit(1) for p in range(m + 1)]
        relevance = [F.when(dense0, F.array(*bits[:m])).otherwise(F.array(*bits[1:])).alias("shown_relevant"),
                     "n_relevant"]
    return grouped.select(
        *keys, served.alias("_served"), "n_candidates", "n_judged", "n_positive", shown.alias("shown"),
        ideal.alias("ideal"), *relevance,
        *[F.when(dense0, F.col(f"_u{k}_0")).otherwise(F.col(f"_u{k}_1")).alias(f"unjudged_{k}") for k in contract.k],
    )


def score_dense_requests(
    rows: DataFrame, contract: Contract, literal: dict[str, Column], levels: list[float]
) -> tuple[DataFrame | None, DataFrame | None, DataFrame | None]:
    """The requests the dense plan serves, scored (in the shape of
    :func:`ndcg_spark.scoring.collecting.score_collected_lists`), the rows of the others, left to
    collect, and the cached aggregation both come from (to release once the result is written).

    One aggregation of ``rows`` (:func:`aggregate_dense`) is cached and one job computes it,
    counting the requests it does not serve (its evidence, ``_served``; a second small job lists
    them when there are any); the scored requests are then read from the cache. The cache is this
    call's own: Spark answers any equal plan from a cache, and a later call over the same source
    (a path read again after its files were rewritten) must read the source, not this call's rows.
    ``(None, rows, None)`` when more than :data:`MAX_LISTED_NOT_SERVED` are not served; the rest
    is None when every request is. The key columns in ``literal``
    (:func:`ndcg_spark.scoring.inputs.literal_keys`) are the same on every row: they are not
    grouped on, and put back after."""
    varying = tuple(k for k in REQUEST_KEYS if k not in literal)
    summed = persist_coalesced(aggregate_dense(rows, contract, varying, levels))  # this call's own cache
    # one job computes the cached aggregation and counts what it does not serve (a count, not a
    # limited collect: a limit would scan the cached partitions in growing rounds, a job each)
    unserved = summed.filter(~F.col("_served")).select(*varying)
    n_not_served = unserved.count()
    if n_not_served > MAX_LISTED_NOT_SERVED:
        summed.unpersist()
        return None, rows, None
    not_served = [tuple(r) for r in unserved.collect()] if n_not_served else []
    rest = join_null_safe(rows, keys_frame(rows, not_served, varying), varying, "left_semi") if not_served else None
    return score_served(summed, contract, literal), rest, summed


def score_served(summed: DataFrame, contract: Contract, literal: dict[str, Column]) -> DataFrame:
    """The requests of ``summed`` (:func:`aggregate_dense`) that the plan serves, scored in the shape
    of :func:`ndcg_spark.scoring.collecting.score_collected_lists`; ``literal``: the key columns
    put back (see :func:`score_dense_requests`)."""
    served = summed.filter(F.col("_served")).select("*", *_bound_lists(contract))
    scored = served.select(
        *[literal[c].alias(c) if c in literal else F.col(c) for c in REQUEST_KEYS],
        "n_candidates",
        "n_judged",
        "n_positive",
        *metrics_columns(contract, _ranked(contract, ""), lambda k: F.col(f"unjudged_{k}"), _what_ifs(contract)),
    )
    return keys_as_strings(scored)


def _ranked(contract: Contract, side: str) -> RankedList:
    """A request's list as the plan holds it: the gains shown position by position (``shown``, or a
    what-if's ``_shown_<side>``), their relevance and the ideal (:class:`RankedList`)."""
    arrays = {"gain": F.col(f"_shown_{side}" if side else "shown")}
    relevant = None
    if contract.reads_relevance:
        arrays["relevant"] = F.col(f"_relevant_{side}" if side else "shown_relevant")
        relevant = F.col(f"_n_relevant_{side}" if side else "n_relevant")
    return RankedList(arrays["gain"], ideal=F.col(f"_ideal_{side}" if side else "ideal"), n_relevant=relevant,
                      arrays=arrays, length=F.col("n_candidates"))


def _what_ifs(contract: Contract) -> tuple[RankedList, RankedList] | None:
    """The lists of the two what-ifs (:func:`_bound_lists`), or None without a declared scale."""
    if contract.unjudged_gains is None:
        return None
    return _ranked(contract, "low"), _ranked(contract, "high")


def _bound_lists(contract: Contract) -> list[Column]:
    """The lists the unjudged bounds sum over, each a column of its own (computed once for every
    K), as the collecting plan builds them (:func:`ndcg_spark.scoring.collecting._bound_lists`):
    the shown gains with every unjudged candidate's set to the scale's lowest / highest gain (a
    position past the list stays empty), and :func:`~ndcg_spark.metrics.dcg.unjudged_bound_ideal`."""
    if contract.unjudged_gains is None:
        return []
    shown, ideal, n = F.col("shown"), F.col("ideal"), F.col("n_candidates")
    n_unjudged = n - F.col("n_judged")
    lists = []
    for side, value, grade in zip(("low", "high"), contract.unjudged_gains, contract.unjudged_grades):
        judged = F.transform(shown, lambda x, i: F.when(i < n, F.coalesce(x, F.lit(float(value)))))
        lists += [judged.alias(f"_shown_{side}"),
                  unjudged_bound_ideal(ideal, n_unjudged, value, contract.max_k).alias(f"_ideal_{side}")]
        if contract.reads_relevance:
            relevant = grade >= contract.relevant_grade  # what every unjudged candidate is judged at
            lists += [
                F.transform(F.col("shown_relevant"), lambda r, i: F.when(
                    (i < n) & F.get(shown, i).isNull(), F.lit(relevant)).otherwise(r)).alias(f"_relevant_{side}"),
                (F.col("n_relevant") + (n_unjudged if relevant else F.lit(0))).alias(f"_n_relevant_{side}"),
            ]
    return lists
