"""Stage 1 without collecting lists: requests displayed in dense position order.

Logged search results usually carry the displayed rank as their position: 1, 2, 3, ... (or
0, 1, 2, ...), each once. Then a candidate's rank *is* its position, and nothing needs sorting:

* DCG@k: the gain at each position ``p <= max(K)`` is picked out by ``max(gain if position == p)``;
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
count). Requests that fail -- gaps, repeated or fractional positions, a missing position -- are
scored by the collecting plan, which orders by (position, doc id). The plan applies when the
order is ``position``, unjudged candidates keep their place (``zero`` or ``separate``), the ideal
comes from the candidates, max K is at most 32, and the gains take at most
:data:`MAX_GAIN_LEVELS` distinct values, none negative.
"""

from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.frames import join_null_safe
from ndcg_spark.metrics.dcg import dcg, unjudged_bound_ideal
from ndcg_spark.scoring.columns import REQUEST_KEYS, keys_as_strings, keys_frame, metrics_column

#: Most distinct gain values the ideal is counted over (one count column per value).
MAX_GAIN_LEVELS = 16
#: Largest max(K) the plan serves: one bit per position in a 64-bit mask, positions 0..max K.
MAX_K = 32
#: Past this many requests that are not dense, the collecting plan scores every request.
MAX_LISTED_NOT_DENSE = 100_000


def applies(contract: Contract) -> bool:
    """Whether the contract's choices allow the dense plan (the data decides the rest)."""
    return (
        contract.order == "position"
        and contract.unjudged in ("zero", "separate")
        and contract.ideal_from == "candidates"
        and contract.max_k <= MAX_K
    )


def _density(contract: Contract) -> list[Column]:
    """The aggregates the density check needs (see the module docstring)."""
    m, pos = contract.max_k, F.col("position")
    whole = (pos >= 0) & (pos <= m) & (pos == F.floor(pos))
    return [
        F.count(F.lit(1)).alias("n_candidates"),
        F.count("position").alias("_n_placed"),
        F.count(F.when(pos <= m - 1, 1)).alias("_n_top0"),
        F.count(F.when(pos <= m, 1)).alias("_n_top1"),
        # 2^pos is exact in a double for pos <= 32 (shiftleft takes no column shift)
        F.bit_or(F.when(whole, F.pow(F.lit(2.0), pos).cast("long"))).alias("_seen"),
    ]


def _is_dense(contract: Contract, base: int) -> Column:
    """Positions ``base .. base+m-1`` each seen once, and no other candidate placed at or above
    position ``base+m-1`` (so the rank of every candidate in the top max K is its position)."""
    m = F.least(F.col("n_candidates"), F.lit(contract.max_k))
    full = F.pow(F.lit(2.0), m).cast("long") - F.lit(1)
    seen = F.shiftright(F.coalesce(F.col("_seen"), F.lit(0).cast("long")), base).bitwiseAND(full)
    return (F.col("_n_placed") == F.col("n_candidates")) & (F.col(f"_n_top{base}") == m) & (seen == full)


def survey(rows: DataFrame, contract: Contract, keys: tuple[str, ...]) -> tuple[list[float] | None, list | str]:
    """One job over the candidates: the distinct positive gains, largest first (None when there
    are more than :data:`MAX_GAIN_LEVELS` distinct gains or one is negative or not finite), and
    the ``keys`` of the requests that are not dense (``"all"`` past :data:`MAX_LISTED_NOT_DENSE`).

    ``keys``: the request key columns that vary; leave out one that is the same on every row (a
    ``system`` given as a literal): hashing a constant on every row is measurable at 20M rows."""
    key_type = rows.select(F.struct(*keys).alias("_key")).schema["_key"].dataType
    failing = (
        rows.groupBy(*keys)
        .agg(*_density(contract))
        .filter(~(_is_dense(contract, 0) | _is_dense(contract, 1)))
        .select(F.struct(*keys).alias("_key"), F.lit(None).cast("double").alias("_gain"))
        .limit(MAX_LISTED_NOT_DENSE + 1)
    )
    gains = (
        rows.where(F.col("gain").isNotNull())
        .select(F.lit(None).cast(key_type).alias("_key"), F.col("gain").alias("_gain"))
        .distinct()
        .limit(MAX_GAIN_LEVELS + 1)
    )
    found = failing.unionByName(gains).collect()
    values = [r["_gain"] for r in found if r["_key"] is None]
    not_dense = [tuple(r["_key"]) for r in found if r["_key"] is not None]
    levels = None
    if len(values) <= MAX_GAIN_LEVELS and all(math.isfinite(v) and v >= 0 for v in values):
        levels = sorted((v for v in values if v > 0), reverse=True)
    return levels, ("all" if len(not_dense) > MAX_LISTED_NOT_DENSE else not_dense)


def aggregate_dense(rows: DataFrame, contract: Contract, keys: tuple[str, ...], levels: list[float]) -> DataFrame:
    """The dense requests of ``rows`` (the others are left out), one row each: ``keys``, the
    counts, ``shown`` (the gains of the top max K in displayed order, null where unjudged),
    ``ideal`` (the top max K gains of the ideal, largest first) and ``unjudged_{k}`` (unjudged
    candidates in the top k) for every K -- what :func:`score_dense_requests` turns into the
    metrics with the same expressions as for a collected list. ``keys``: as in :func:`survey`."""
    m, pos = contract.max_k, F.col("position")
    unjudged = ~F.col("judged")
    grouped = rows.groupBy(*keys).agg(
        *_density(contract),
        F.count("grade").alias("n_judged"),
        F.count(F.when(F.col("grade") > 0, True)).alias("n_positive"),
        # the gain shown at each position 0..max K (null: unjudged, or no candidate there)
        *[F.max(F.when(pos == p, F.col("gain"))).alias(f"_g{p}") for p in range(m + 1)],
        *[F.count(F.when((pos <= k - 1 + base) & unjudged, 1)).alias(f"_u{k}_{base}")
          for k in contract.k for base in (0, 1)],
        *[F.count(F.when(F.col("gain") == F.lit(v), 1)).alias(f"_c{i}") for i, v in enumerate(levels)],
    )
    dense0, dense1 = _is_dense(contract, 0), _is_dense(contract, 1)
    shown = F.when(dense0, F.array(*[F.col(f"_g{p}") for p in range(m)])).otherwise(
        F.array(*[F.col(f"_g{p}") for p in range(1, m + 1)])
    )
    # the ideal's first max K gains: each positive value as often as it occurs, largest first
    runs = [F.array_repeat(F.lit(v), F.least(F.col(f"_c{i}"), F.lit(m)).cast("int")) for i, v in enumerate(levels)]
    ideal = F.slice(F.concat(*runs), 1, m) if runs else F.array().cast("array<double>")
    return grouped.filter(dense0 | dense1).select(
        *keys, "n_candidates", "n_judged", "n_positive", shown.alias("shown"), ideal.alias("ideal"),
        *[F.when(dense0, F.col(f"_u{k}_0")).otherwise(F.col(f"_u{k}_1")).alias(f"unjudged_{k}") for k in contract.k],
    )


def score_dense_requests(
    rows: DataFrame, contract: Contract, literal: dict[str, Column]
) -> tuple[DataFrame | None, DataFrame | None]:
    """The requests the dense plan scores (in the shape of
    :func:`ndcg_spark.scoring.collecting.score_collected_lists`) and the rows of the others, left
    to collect; ``(None, rows)`` when the gains or too many requests rule the plan out,
    ``(scored, None)`` when every request is dense. The key columns in ``literal``
    (:func:`ndcg_spark.scoring.inputs.literal_keys`) are the same on every row: they are not
    grouped on, and put back after."""
    varying = tuple(k for k in REQUEST_KEYS if k not in literal)
    levels, not_dense = survey(rows, contract, varying)
    if levels is None or not_dense == "all":
        return None, rows
    summed = aggregate_dense(rows, contract, varying, levels)
    shown, ideal = F.col("shown"), F.col("ideal")
    per_k = [(k, dcg(shown, k), dcg(ideal, k), F.col(f"unjudged_{k}")) for k in contract.k]
    summed = summed.select("*", *_bound_lists(contract))
    scored = summed.select(
        *[literal[c].alias(c) if c in literal else F.col(c) for c in REQUEST_KEYS],
        "n_candidates",
        "n_judged",
        "n_positive",
        metrics_column(contract, per_k, _bounds(contract)),
    )
    rest = join_null_safe(rows, keys_frame(rows, not_dense, varying), varying, "left_semi") if not_dense else None
    return keys_as_strings(scored), rest


def _bound_lists(contract: Contract) -> list[Column]:
    """The lists the unjudged bounds sum over, each a column of its own (computed once for every
    K), as the collecting plan builds them (:func:`ndcg_spark.scoring.collecting._bound_lists`):
    the shown gains with every unjudged candidate's set to the scale's lowest / highest gain (a
    position past the list stays empty), and :func:`~ndcg_spark.metrics.dcg.unjudged_bound_ideal`."""
    if contract.unjudged_gains is None:
        return []
    shown, ideal, n = F.col("shown"), F.col("ideal"), F.col("n_candidates")
    lists = []
    for side, value in zip(("low", "high"), contract.unjudged_gains):
        judged = F.transform(shown, lambda x, i: F.when(i < n, F.coalesce(x, F.lit(float(value)))))
        lists += [judged.alias(f"_shown_{side}"),
                  unjudged_bound_ideal(ideal, n - F.col("n_judged"), value, contract.max_k).alias(f"_ideal_{side}")]
    return lists


def _bounds(contract: Contract) -> list[tuple[Column, Column, Column, Column]] | None:
    """Per K the ``(dcg, idcg)`` of the low and of the high bound over :func:`_bound_lists`."""
    if contract.unjudged_gains is None:
        return None
    return [tuple(dcg(F.col(f"_{what}_{side}"), k) for side in ("low", "high") for what in ("shown", "ideal"))
            for k in contract.k]
