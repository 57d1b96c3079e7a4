"""The job's stages as plain functions of a :class:`JobConfig`: read, call the library, write.

Nothing here computes a metric; it wires inputs and outputs around :mod:`ndcg_spark.scoring`
(and the later stages), so the CLI and the spark-submit entry share one path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.config import JobConfig, Source
from ndcg_spark.errors import ContractError
from ndcg_spark.io import read_run, read_source, write_run_partitioned
from ndcg_spark.scoring import Attributes, score_requests


@dataclass(frozen=True)
class StageResult:
    run_id: str
    target: Source
    rows_written: int
    seconds: float


def score_stage(spark: SparkSession, config: JobConfig, run_id: str) -> StageResult:
    """Stage 1: read the inputs, score every request, write the per-request table for ``run_id``."""
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required (a path or a table) to write stage 1")
    started = time.perf_counter()
    candidates = read_source(spark, config.candidates, "inputs.candidates")
    judgments = read_source(spark, config.judgments, "inputs.judgments") if config.judgments else None
    attrs = config.attributes
    attributes = Attributes(
        table=read_source(spark, attrs.source, "attributes") if attrs.source else None,
        weight=attrs.weight,
        default_weight=attrs.default_weight,
        slices=attrs.slices,
    )
    per_request = score_requests(
        candidates,
        judgments,
        config.contract,
        run_id=run_id,
        system=config.system,
        pool_version=config.pool_version,
        attributes=attributes,
    )
    write_run_partitioned(per_request, config.per_request)
    written = read_run(spark, config.per_request, run_id).count()
    return StageResult(run_id, config.per_request, written, time.perf_counter() - started)


def summarize_per_request(per_request: DataFrame) -> list[dict]:
    """Overall macro NDCG per system x K with its denominators, for the CLI's closing lines."""
    rows = (
        per_request.groupBy("contract_fingerprint", "system", "pool_version", "k")
        .agg(
            F.count(F.lit(1)).alias("requests"),
            F.count("ndcg").alias("scored"),
            F.sum(F.col("empty_ideal").cast("int")).alias("empty_ideal"),
            F.avg("ndcg").alias("macro_ndcg"),
        )
        .orderBy("contract_fingerprint", "system", "pool_version", "k")
        .collect()
    )
    return [r.asDict() for r in rows]
