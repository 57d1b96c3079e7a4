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
from ndcg_spark.errors import ContractError, spark_errors_as_input_errors
from ndcg_spark.io import clear_run, read_run, read_source, write_run_partitioned
from ndcg_spark.scoring import Attributes, score_requests
from ndcg_spark.validation import RowAccounting, ValidationSpec, job_validation, validate_inputs


@dataclass(frozen=True)
class StageResult:
    run_id: str
    target: Source
    rows_written: int
    seconds: float
    #: rows read = rows scored + rows quarantined, per input (stage 1; see ndcg_spark.validation)
    accounting: RowAccounting | None = None
    #: where quarantined rows went (``outputs.quarantine``), if configured
    quarantine: Source | None = None
    #: the resolved validation handling, for run metadata
    validation: ValidationSpec | None = None


def score_stage(spark: SparkSession, config: JobConfig, run_id: str) -> StageResult:
    """Stage 1: read the inputs, validate them, score every request, write the per-request table.

    Validation (:func:`~ndcg_spark.validation.validate_inputs`) runs before scoring: a rule handled
    as ``error`` fails the run before anything is written; quarantined rows go to
    ``outputs.quarantine`` (this run's partition is replaced, or cleared when none were set aside).
    Spark/Py4J errors from bad input surface as :class:`~ndcg_spark.errors.InputError`.
    """
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required (a path or a table) to write stage 1")
    spec, quarantine_target = job_validation(config)
    with spark_errors_as_input_errors("stage 1"):
        return _score_stage(spark, config, run_id, spec, quarantine_target)


def _score_stage(
    spark: SparkSession, config: JobConfig, run_id: str, spec: ValidationSpec, quarantine_target: Source | None
) -> StageResult:
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
    validated = validate_inputs(
        candidates,
        judgments,
        config.contract,
        spec,
        attributes=attributes,
        system=config.system,
        pool_version=config.pool_version,
        run_id=run_id,
    )
    try:
        per_request = score_requests(
            validated.candidates,
            validated.judgments,
            validated.contract,
            run_id=run_id,
            system=config.system,
            pool_version=config.pool_version,
            attributes=validated.attributes,
        )
        if quarantine_target is not None:
            if validated.quarantine is not None and validated.accounting.rows_quarantined:
                write_run_partitioned(validated.quarantine, quarantine_target)
            else:  # a zero-row overwrite replaces nothing: clear what an earlier attempt left
                clear_run(spark, quarantine_target, run_id)
        write_run_partitioned(per_request, config.per_request)
    finally:
        validated.unpersist()
    written = read_run(spark, config.per_request, run_id).count()
    return StageResult(
        run_id,
        config.per_request,
        written,
        time.perf_counter() - started,
        accounting=validated.accounting,
        quarantine=quarantine_target,
        validation=spec,
    )


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
