"""Embedded sample data: maintenance-search requests, two rankers, graded judgments.

Technicians search maintenance manuals, work orders, service bulletins and SOPs for a piece of
equipment (:mod:`~ndcg_spark.sample.request_types`). :func:`generate` returns three DataFrames
shaped like SPEC §3 and two for the release guardrails (issue 15):

``candidates``
    ``request_id, doc_id, system, position, score, pool_version`` -- two systems, ``bm25`` and
    ``hybrid``, rank the *same* candidate pool per request (5..30 candidates, about 2% of requests
    with a single one); ``hybrid`` orders it modestly better. ``position`` is 1..M per request and
    system; ``score`` is non-increasing with position and has some exact ties (broken by
    ``doc_id`` ascending, so position order and "score desc, doc_id asc" agree). ``hybrid``
    returned nothing for about 1.5% of requests (a timeout: no candidate row; ``no_results``).
``judgments``
    ``request_id, doc_id, grade`` with integer grades 0..3 as doubles. About 15% of candidates
    have no judgment row (unjudged); about 10% of requests have only zero grades (empty ideal
    whichever way it is computed); about a quarter of requests have 1..3 judged documents that
    were *not* retrieved, mostly positive, so the ideal from judgments differs from the ideal from
    candidates -- for about 3% of requests every positive is outside the pool (empty ideal from
    candidates only).
``attributes``
    ``request_id, request_type, weight, equipment_rarity, doc_age_bucket, permission_group``.
``release_outcomes``
    ``session_id, request_id, technician_id, arm, equipment_rarity, task_completed,
    time_to_procedure_s, latency_ms, safety_incident``: one session of a controlled release on
    about 30% of the requests, each technician in one arm (``bm25`` or ``hybrid``); hybrid is
    faster to the procedure overall but slower on rare equipment, and its latency is 30% higher.
``documents``
    ``doc_id, doc_age_days, permission_group``: every document of the pools once; rare
    equipment's documents are older.

The steps live in their own modules: the request table (:mod:`~ndcg_spark.sample.requests`),
the document pool of each request (:mod:`~ndcg_spark.sample.pools`), the rankings
(:mod:`~ndcg_spark.sample.rankings`) and the release with its documents
(:mod:`~ndcg_spark.sample.release`). Everything is a pure function of ``(seed, request number,
candidate or document number)`` through ``xxhash64`` computed by Spark expressions
(:mod:`~ndcg_spark.sample.expressions`): no ``rand()``, no Python loop over rows. The data is
therefore identical whatever the partitioning, request ``req-0000042`` is the same whatever
``n_requests`` is, and it scales to millions of rows for benchmarks.

Examples
--------
>>> from ndcg_spark.sample.generate import generate
>>> data = generate(spark, n_requests=200, seed=7)
>>> data.attributes.count()
200
>>> data.candidates.select("system").distinct().orderBy("system").show()
+------+
|system|
+------+
|  bm25|
|hybrid|
+------+
<BLANKLINE>
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.sample.pools import document_pool
from ndcg_spark.sample.rankings import (
    DENSE_POOL_VERSION,
    DENSE_SYSTEM,
    POOL_VERSION,
    dense_pool_candidates,
    shared_pool_candidates,
)
from ndcg_spark.sample.release import documents, release_outcomes
from ndcg_spark.sample.request_types import REQUEST_TYPES, RequestType
from ndcg_spark.sample.requests import NO_POSITIVE_SHARE, request_table

__all__ = [
    "DENSE_POOL_VERSION",
    "DENSE_SYSTEM",
    "POOL_VERSION",
    "REQUEST_TYPES",
    "RequestType",
    "SampleData",
    "generate",
    "write_sample",
]

_ATTRIBUTE_COLUMNS = ("request_id", "request_type", "weight", "equipment_rarity", "doc_age_bucket", "permission_group")


@dataclass(frozen=True)
class SampleData:
    """The generated inputs: the three of SPEC §3, then the release's outcomes and documents."""

    candidates: DataFrame
    judgments: DataFrame
    attributes: DataFrame
    release_outcomes: DataFrame
    documents: DataFrame


def generate(
    spark: SparkSession,
    n_requests: int = 20_000,
    seed: int = 7,
    *,
    num_partitions: int | None = None,
    dense_pool: bool = False,
    no_positive_share: float = NO_POSITIVE_SHARE,
) -> SampleData:
    """Generate maintenance-search sample data: candidates of two systems, judgments, attributes,
    the release's outcomes and the documents.

    Parameters
    ----------
    spark : the session to build the DataFrames in.
    n_requests : number of requests (``attributes`` has exactly this many rows).
    seed : the data is a pure function of ``(n_requests, seed)``.
    num_partitions : partitions of the underlying ``spark.range``: the layout, never the rows.
    dense_pool : also rank a third system, ``dense``, over its *own* candidate pool
        (:data:`DENSE_POOL_VERSION`; see :mod:`~ndcg_spark.sample.rankings`), to demonstrate the
        comparison's pool guard. ``False`` leaves the output exactly as without it.
    no_positive_share : the share of requests whose judged grades are all 0 (empty ideal: the
        no-answer traffic), default 0.10. Another value changes only which requests have no
        positive (the same draws decide it), e.g. a night with more no-answer traffic.

    Returns
    -------
    SampleData
        As in the module docstring. Lazy: nothing runs until an action.

    Examples
    --------
    >>> data = generate(spark, n_requests=3, seed=7)
    >>> data.attributes.orderBy("request_id").show()
    +-----------+----------------+-------+----------------+--------------+----------------+
    | request_id|    request_type| weight|equipment_rarity|doc_age_bucket|permission_group|
    +-----------+----------------+-------+----------------+--------------+----------------+
    |req-0000000|molten salt pump|   4.01|            rare|           <1y|      contractor|
    |req-0000001|      gate valve| 4966.0|          common|           <1y|      contractor|
    |req-0000002|centrifugal pump|3724.41|          common|          1-3y|      contractor|
    +-----------+----------------+-------+----------------+--------------+----------------+
    <BLANKLINE>

    The top of one ranking with its grades; a null grade is an unjudged candidate:

    >>> (data.candidates.filter("request_id = 'req-0000001' AND system = 'hybrid'")
    ...     .join(data.judgments, ["request_id", "doc_id"], "left")
    ...     .orderBy("position").select("position", "doc_id", "score", "grade").limit(4).show())
    +--------+-----------+------+-----+
    |position|     doc_id| score|grade|
    +--------+-----------+------+-----+
    |       1| WO-0164532|0.7188| NULL|
    |       2|MAN-0148694|0.6394|  0.0|
    |       3| SB-0104127|0.6225|  1.0|
    |       4|SOP-0180370|0.4547|  0.0|
    +--------+-----------+------+-----+
    <BLANKLINE>
    """
    _check_arguments(n_requests, seed, num_partitions)
    if isinstance(no_positive_share, bool) or not isinstance(no_positive_share, (int, float)) or not (
        0 <= no_positive_share < 1
    ):
        raise ValueError(f"no_positive_share: must be a number from 0 to below 1, got {no_positive_share!r}")
    requests = request_table(spark, n_requests, seed, num_partitions, no_positive_share)
    pool = document_pool(requests, seed)
    judgments = pool.filter(F.col("judged")).select("request_id", "doc_id", F.col("grade").cast("double"))
    candidates = shared_pool_candidates(pool, seed)
    if dense_pool:
        candidates = candidates.unionByName(dense_pool_candidates(pool, seed))
    return SampleData(
        candidates=candidates,
        judgments=judgments,
        attributes=requests.select(*_ATTRIBUTE_COLUMNS),
        release_outcomes=release_outcomes(requests, seed),
        documents=documents(pool, seed),
    )


def _check_arguments(n_requests: int, seed: int, num_partitions: int | None) -> None:
    """A :class:`ValueError` naming the argument when one is not a usable integer."""
    if isinstance(n_requests, bool) or not isinstance(n_requests, int) or n_requests < 1:
        raise ValueError(f"n_requests: must be an integer >= 1, got {n_requests!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        raise ValueError(f"seed: must be a 64-bit integer, got {seed!r}")
    if num_partitions is not None and (
        isinstance(num_partitions, bool) or not isinstance(num_partitions, int) or num_partitions < 1
    ):
        raise ValueError(f"num_partitions: must be an integer >= 1 or None, got {num_partitions!r}")


def write_sample(
    spark: SparkSession,
    out_dir: str | Path,
    n_requests: int = 20_000,
    seed: int = 7,
    *,
    dense_pool: bool = False,
    no_positive_share: float = NO_POSITIVE_SHARE,
) -> dict[str, str]:
    """Generate sample data and write it as Parquet folders, one per table: ``candidates/``,
    ``judgments/``, ``attributes/``, ``release_outcomes/``, ``documents/``.

    Existing folders of those names under ``out_dir`` are overwritten (this is sample data, not a
    nightly table).

    Parameters
    ----------
    spark : the session.
    out_dir : folder to write under (created if missing).
    n_requests, seed, dense_pool, no_positive_share : as for :func:`generate`.

    Returns
    -------
    dict[str, str]
        ``{table name: absolute path}`` for the five tables, in that order.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> paths = write_sample(spark, tmp.name, n_requests=50)
    >>> sorted(paths)
    ['attributes', 'candidates', 'documents', 'judgments', 'release_outcomes']
    >>> spark.read.parquet(paths["attributes"]).count()
    50
    >>> tmp.cleanup()
    """
    root = Path(out_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    data = generate(spark, n_requests=n_requests, seed=seed, dense_pool=dense_pool, no_positive_share=no_positive_share)
    paths: dict[str, str] = {}
    for table in fields(data):
        path = str(root / table.name)
        getattr(data, table.name).write.mode("overwrite").parquet(path)
        paths[table.name] = path
    return paths
