"""The sample's controlled release of the two rankers (the guardrails' input) and its documents.

About 30% of the requests were searched during an A/B test: one *session* each, by a technician
who sees one ranker only (``bm25`` or ``hybrid``, half the technicians each). ``hybrid`` has the
better NDCG and gets technicians to the approved procedure about 10% faster overall, but it is
about 25% *slower* for rare equipment, whose documents are stale (:func:`documents`), and its
dense retrieval makes every search about 30% slower, so a p95-latency guardrail fails.

Technicians are hash buckets within blocks of consecutive requests (a shift's work), so a
technician, their arm and their sessions depend only on ``(seed, request number)``, never on
``n_requests``: request ``req-0000042`` has the same session whatever the sample's size.

Examples
--------
>>> from ndcg_spark.sample.generate import generate
>>> release = generate(spark, n_requests=2000, seed=7).release_outcomes
>>> release.groupBy("technician_id").agg(F.countDistinct("arm").alias("arms")).filter("arms > 1").count()
0
>>> 0.25 < release.count() / 2000 < 0.35
True
"""

from __future__ import annotations

import math
from typing import NamedTuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.sample.expressions import choice, double_literal, normal, sql_columns, string_literal, uniform

RELEASE_SHARE = 0.30
"""The share of requests searched during the controlled release (one session each)."""

_REQUESTS_PER_SHIFT, _TECHNICIANS_PER_SHIFT = 100, 10  # 30 sessions over 10 technicians: about 3 each
_NOT_REACHED_COMPLETION = 0.40  # tasks completed without ever opening the approved procedure
_SAFETY_INCIDENT_RATE = 0.004
_TIME_MEDIAN_S = {"common": 80.0, "uncommon": 95.0, "rare": 120.0}  # bm25; rare equipment takes longer
_TIME_SIGMA = 0.5  # log-normal spread of the time to the procedure
_LATENCY_MEDIAN_MS, _LATENCY_SIGMA = 120.0, 0.47  # bm25: p95 = 120 * exp(1.645 * 0.47) = 260 ms


class _Arm(NamedTuple):
    """What one ranker does to a session: rates, and factors on bm25's times and latency."""

    completed: float  # task completed
    reached: float  # approved procedure opened
    time_factor: float  # on the time to the procedure, off rare equipment
    rare_time_factor: float  # on rare equipment
    latency_factor: float

    @property
    def completed_if_reached(self) -> float:
        """The completion rate of the sessions that reached the procedure (0.40 of the others complete)."""
        return (self.completed - (1.0 - self.reached) * _NOT_REACHED_COMPLETION) / self.reached


# Rare equipment is 10% of the sessions but, slower to begin with, about 14% of bm25's total time
# to the procedure: 0.84 off it and 1.25 on it make hybrid about 10% faster overall.
_ARMS = {"bm25": _Arm(0.80, 0.85, 1.0, 1.0, 1.0), "hybrid": _Arm(0.82, 0.86, 0.84, 1.25, 1.30)}

_DOC_OLD_DAYS, _DOC_MAX_DAYS = 730, 3650
_DOC_OLD_SHARE = {"common": 0.15, "uncommon": 0.20, "rare": 0.40}  # older than two years
_DOC_PERMISSIONS = (("technician", 0.60), ("contractor", 0.25), ("engineer", 0.15))

RELEASE_COLUMNS = (
    "session_id", "request_id", "technician_id", "arm", "equipment_rarity",
    "task_completed", "time_to_procedure_s", "latency_ms", "safety_incident",
)  # fmt: skip
DOCUMENT_COLUMNS = ("doc_id", "doc_age_days", "permission_group")


def release_outcomes(requests: DataFrame, seed: int) -> DataFrame:
    """One row per session of the controlled release: its technician, arm and outcomes.

    Parameters
    ----------
    requests : the request table (:func:`~ndcg_spark.sample.requests.request_table`); only
        ``rid``, ``request_id`` and ``equipment_rarity`` are read.
    seed : every draw is a hash of ``(seed, draw name, request number)``, the arm a hash of
        ``(seed, technician number)``.

    Returns
    -------
    DataFrame
        :data:`RELEASE_COLUMNS`: ``session_id, request_id, technician_id, arm`` (``"bm25"`` or
        ``"hybrid"``), ``equipment_rarity``, ``task_completed`` (boolean), ``time_to_procedure_s``
        (seconds until the approved procedure was opened; null when it never was),
        ``latency_ms`` (search latency) and ``safety_incident`` (boolean).

    Notes
    -----
    Rates by arm (bm25 / hybrid): task completed 0.80 / 0.82 (0.40 of the sessions that never
    reach the procedure complete it), procedure reached 0.85 / 0.86, safety incident 0.004 in
    both. Time to the procedure is log-normal (medians 80, 95 and 120 s for common, uncommon and
    rare equipment under bm25); latency is log-normal with median 120 ms and p95 260 ms under
    bm25, times 1.3 under hybrid.
    """
    in_release = F.expr(f"{uniform(seed, 'release', 'rid')} < {double_literal(RELEASE_SHARE)}")
    sessions = requests.filter(in_release).select("rid", "request_id", "equipment_rarity")
    for level in (_technician(seed), _arm(seed), _outcomes(seed)):
        sessions = sessions.withColumns(sql_columns(level))
    return sessions.select(*RELEASE_COLUMNS)


def _technician(seed: int) -> dict[str, str]:
    """Level 1: the session id and the technician: a hash bucket within the request's shift."""
    bucket = f"CAST(floor({uniform(seed, 'technician', 'rid')} * {_TECHNICIANS_PER_SHIFT}) AS BIGINT)"
    return {
        "session_id": "format_string('ses-%07d', rid)",
        "technician": f"div(rid, {_REQUESTS_PER_SHIFT}) * {_TECHNICIANS_PER_SHIFT} + {bucket}",
    }


def _arm(seed: int) -> dict[str, str]:
    """Level 2: the technician's id and arm (half the technicians each)."""
    return {
        "technician_id": "format_string('tech-%06d', technician)",
        "arm": f"CASE WHEN {uniform(seed, 'arm', 'technician')} < 0.5D THEN 'hybrid' ELSE 'bm25' END",
    }


def _outcomes(seed: int) -> dict[str, str]:
    """Level 3: what the session achieved, how long it took and how fast the searches were."""

    def by_arm(field: str) -> str:
        hybrid, bm25 = (double_literal(getattr(_ARMS[arm], field)) for arm in ("hybrid", "bm25"))
        return f"CASE arm WHEN 'hybrid' THEN {hybrid} ELSE {bm25} END"

    reached = f"{uniform(seed, 'reached', 'rid')} < {by_arm('reached')}"
    median = " ".join(f"WHEN {string_literal(r)} THEN {double_literal(m)}" for r, m in _TIME_MEDIAN_S.items())
    factor = f"CASE WHEN equipment_rarity = 'rare' THEN {by_arm('rare_time_factor')} ELSE {by_arm('time_factor')} END"
    time_s = f"CASE equipment_rarity {median} END * {factor} * exp({_TIME_SIGMA}D * {normal(seed, 'time', 'rid')})"
    latency = (
        f"{double_literal(_LATENCY_MEDIAN_MS)} * {by_arm('latency_factor')}"
        f" * exp({_LATENCY_SIGMA}D * {normal(seed, 'latency', 'rid')})"
    )
    completion = (
        f"CASE WHEN {reached} THEN {by_arm('completed_if_reached')}"
        f" ELSE {double_literal(_NOT_REACHED_COMPLETION)} END"
    )
    return {
        "task_completed": f"{uniform(seed, 'completed', 'rid')} < {completion}",
        "time_to_procedure_s": f"CASE WHEN {reached} THEN round({time_s}, 1) END",
        "latency_ms": f"round({latency}, 1)",
        "safety_incident": f"{uniform(seed, 'safety', 'rid')} < {double_literal(_SAFETY_INCIDENT_RATE)}",
    }


def documents(pool: DataFrame, seed: int) -> DataFrame:
    """One row per document of the sample's pools: its age and the group allowed to read it.

    A document number belongs to one request type (:mod:`~ndcg_spark.sample.pools`), so each
    document has the equipment rarity of the requests it serves; rare equipment's documents are
    older (stale): 40% are older than two years, against 15% (common) and 20% (uncommon).

    Parameters
    ----------
    pool : the document pool (:func:`~ndcg_spark.sample.pools.document_pool`): every document
        retrieved or judged for a request; ``doc_num``, ``doc_id`` and ``equipment_rarity`` are read.
    seed : every draw is a hash of ``(seed, draw name, document number)``.

    Returns
    -------
    DataFrame
        :data:`DOCUMENT_COLUMNS`: ``doc_id``, ``doc_age_days`` (int, 0..3650; exponential, capped)
        and ``permission_group`` (``technician`` 60%, ``contractor`` 25%, ``engineer`` 15%).
    """
    scale = {r: _DOC_OLD_DAYS / math.log(1.0 / share) for r, share in _DOC_OLD_SHARE.items()}  # P(age > old) = share
    by_rarity = " ".join(f"WHEN {string_literal(r)} THEN {double_literal(s)}" for r, s in scale.items())
    age = f"-CASE equipment_rarity {by_rarity} END * ln(1.0D - {uniform(seed, 'doc.age', 'doc_num')})"
    return pool.select("doc_num", "doc_id", "equipment_rarity").distinct().select(
        "doc_id",
        F.expr(f"least({_DOC_MAX_DAYS}, CAST(floor({age}) AS INT))").alias("doc_age_days"),
        F.expr(choice(uniform(seed, "doc.permission", "doc_num"), _DOC_PERMISSIONS)).alias("permission_group"),
    )
