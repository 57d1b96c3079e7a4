"""The job's stages as plain functions of a :class:`JobConfig`: read, call the library, write.

Nothing here computes a metric; it wires inputs and outputs around :mod:`ndcg_spark.scoring.score`
(and the later stages). Their order in a run -- pre-checks, the publishing bracket, the report --
is :func:`ndcg_spark.job.run.run_job`, which the CLI and the spark-submit entry share.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.config.aggregate_spec import AggregateSpec
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.config.contract import Contract
from ndcg_spark.config.per_request import metrics_in
from ndcg_spark.errors import ContractError, spark_errors_as_input_errors
from ndcg_spark.frames import collect_sorted, persist_coalesced
from ndcg_spark.storage.io import clear_run, read_run, read_source, read_written, write_run_partitioned
from ndcg_spark.storage.lineage import InputRead, Replay, read_input, read_recorded
from ndcg_spark.scoring.large import LARGE_REQUEST
from ndcg_spark.scoring.score import score_requests
from ndcg_spark.config.validation_spec import ValidationSpec
from ndcg_spark.validation.accounting import RowAccounting
from ndcg_spark.validation.validate import validate_inputs


@dataclass(frozen=True)
class StageResult:
    run_id: str
    target: Source
    rows_written: int
    seconds: float
    #: rows read = rows scored + rows quarantined, per input (stage 1; see ndcg_spark.validation.accounting)
    accounting: RowAccounting | None = None
    #: where quarantined rows went (``outputs.quarantine``), if configured
    quarantine: Source | None = None
    #: the resolved validation handling, for run metadata
    validation: ValidationSpec | None = None
    #: what was read, input by input (run metadata's ``inputs``: ndcg_spark.storage.lineage)
    inputs: tuple[InputRead, ...] = ()

    def metadata_counts(self) -> dict[str, int]:
        """The row accounting as flat counters for run metadata (``candidates.rows_read`` …)."""
        if self.accounting is None:
            return {}
        counts = {}
        for name, numbers in self.accounting.as_dict().items():
            for key, value in numbers.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    counts[f"{name}.{key}"] = value
        return counts


def score_stage(spark: SparkSession, config: JobConfig, run_id: str, *, replay: Replay | None = None) -> StageResult:
    """Stage 1: read the inputs, validate them, score every request, write the per-request table.

    Each input is read as :func:`~ndcg_spark.storage.lineage.read_input` pins it (a Delta or Iceberg
    table at its current version), and what was read is returned (``inputs``); a ``replay`` reads
    the inputs another run recorded instead, exactly as that run read them.

    Validation (:func:`~ndcg_spark.validation.validate.validate_inputs`) runs before scoring: a rule handled
    as ``error`` fails the run before anything is written; quarantined rows go to
    ``outputs.quarantine`` (this run's partition is replaced, or cleared when none were set aside).
    Spark/Py4J errors from bad input surface as :class:`~ndcg_spark.errors.InputError`.
    """
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required (a path or a table) to write stage 1")
    spec, quarantine_target = config.validation()
    with spark_errors_as_input_errors("stage 1"):
        return _score_stage(spark, config, run_id, spec, quarantine_target, replay)


def _guarded(spec: ValidationSpec) -> bool:
    """Whether validation lets no request with more than LARGE_REQUEST candidates through."""
    cap = spec.max_candidates_per_request
    return cap is not None and cap <= LARGE_REQUEST


def _score_stage(
    spark: SparkSession, config: JobConfig, run_id: str, spec: ValidationSpec, quarantine_target: Source | None,
    replay: Replay | None,
) -> StageResult:
    started = time.perf_counter()
    # under the trec_eval preset a TREC file reads as trec_eval reads it: fields past the format's ignored
    trailing = config.trailing_fields()
    inputs, reads = _read_inputs(spark, config, replay, trailing)
    # each input's files read once: the input check's first job fills these caches, its other jobs and
    # scoring read them (docs/benchmarks.md: the job's stage 1 read its inputs 4.6 times before)
    inputs = {role: persist_coalesced(df) for role, df in inputs.items()}
    try:
        return _validated_and_scored(spark, config, run_id, spec, quarantine_target, inputs, reads, started)
    finally:
        for df in inputs.values():
            df.unpersist()


def _validated_and_scored(
    spark: SparkSession, config: JobConfig, run_id: str, spec: ValidationSpec, quarantine_target: Source | None,
    inputs: dict[str, DataFrame], reads: tuple[InputRead, ...], started: float,
) -> StageResult:
    attributes = config.attributes.of(inputs.get("attributes"))
    validated = validate_inputs(inputs["inputs.candidates"], inputs.get("inputs.judgments"), config.contract, spec,
                                attributes=attributes, system=config.system, pool_version=config.pool_version,
                                run_id=run_id)
    cached: list[DataFrame] = []
    try:
        per_request = score_requests(
            validated.candidates,
            validated.judgments,
            validated.contract,
            run_id=run_id,
            system=config.system,
            pool_version=config.pool_version,
            attributes=validated.attributes,
            # the skew guard already kept every larger request out: no need to look for them
            large_request=None if _guarded(spec) else LARGE_REQUEST,
            validate=False,  # validate_inputs just checked them, under the declared handling
            grade_scale=validated.grade_scale,  # noted by that check: no job to read the gains again
            cache_handles=cached,  # released below, once the table is written
            set_aside=validated.set_aside,  # a quarantined list is counted there, not as no results
        )
        if quarantine_target is not None:
            if validated.quarantine is not None and validated.accounting.rows_quarantined:
                write_run_partitioned(validated.quarantine, quarantine_target)
            else:  # a zero-row overwrite replaces nothing: clear what an earlier attempt left
                clear_run(spark, quarantine_target, run_id)
        write_run_partitioned(per_request, config.per_request)
    finally:
        validated.unpersist()
        for df in cached:
            df.unpersist()
    written = read_run(spark, config.per_request, run_id).count()
    return StageResult(
        run_id,
        config.per_request,
        written,
        time.perf_counter() - started,
        accounting=validated.accounting,
        quarantine=quarantine_target,
        validation=spec,
        inputs=reads,
    )


def _read_inputs(
    spark: SparkSession, config: JobConfig, replay: Replay | None, trailing_fields: str = "refuse"
) -> tuple[dict[str, DataFrame], tuple[InputRead, ...]]:
    """Stage 1's inputs by role (``inputs.candidates``, and ``inputs.judgments``, ``attributes`` when
    configured), each pinned to what is recorded, or as ``replay``'s run read them; and what was read.
    ``trailing_fields``: how a TREC file's lines with fields past the format's read (``read_source``)."""
    sources = {"inputs.candidates": config.candidates, "inputs.judgments": config.judgments,
               "attributes": config.attributes.source}
    frames, reads = {}, []
    for role, source in sources.items():
        if source is None:
            continue
        if replay is not None:
            recorded = replay.inputs[role]
            frames[role], what = read_recorded(spark, recorded, replay.run_id, trailing_fields), recorded
        else:
            frames[role], what = read_input(spark, source, role, trailing_fields)
        reads.append(what)
    return frames, tuple(reads)


def summarize_per_request(per_request: DataFrame) -> list[dict]:
    """Overall macro mean of every metric per system x K with its denominators, for the CLI's
    closing lines: a row per metric (``metric``, ``macro``, ``scored``, ...)."""
    metrics = metrics_in(per_request.columns)
    means = per_request.groupBy("contract_fingerprint", "system", "pool_version", "k").agg(
        F.count(F.lit(1)).alias("requests"),
        F.sum(F.col("empty_ideal").cast("int")).alias("empty_ideal"),
        F.sum(F.col("no_results").cast("int")).alias("no_results"),
        *[F.count(m).alias(f"scored_{m}") for m in metrics],
        *[F.avg(m).alias(f"macro_{m}") for m in metrics],
    )
    rows = collect_sorted(means, "contract_fingerprint", "system", "pool_version", "k")
    keys = ("contract_fingerprint", "system", "pool_version", "k", "requests", "empty_ideal", "no_results")
    return [{**{c: r[c] for c in keys}, "metric": m, "scored": r[f"scored_{m}"], "macro": r[f"macro_{m}"]}
            for r in rows for m in metrics]


@dataclass(frozen=True)
class AggregateResult:
    run_id: str
    #: the aggregate table (``outputs.aggregate``)
    target: Source
    #: the audit table (``outputs.audit``), or None when the job does not write one
    audit: Source | None
    #: the run-metadata table (``outputs.run_metadata``)
    run_metadata: Source
    #: rows per table of this run (and any counters the caller passed on), as in run metadata
    row_counts: dict[str, int]
    seconds: float


def stage2_plan(config: JobConfig) -> tuple[AggregateSpec, dict[str, Source | None]]:
    """Validate what stage 2 needs from the YAML -- the ``aggregate:`` section and the outputs --
    without touching Spark, so a typo fails before a night is scored. Returns the spec and the
    targets ``aggregate``, ``audit`` (None when not set) and ``run_metadata``."""
    spec = config.aggregate_spec()
    targets = {name: config.output(name) for name in ("aggregate", "audit", "run_metadata")}
    for name in ("aggregate", "run_metadata"):
        if targets[name] is None:
            raise ContractError(f"outputs.{name}", "is required (a path or a table) to write stage 2")
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required: stage 2 reads the run's per-request table")
    return spec, targets


def stage2_input(spark: SparkSession, config: JobConfig, run_id: str) -> tuple[DataFrame, Contract, int, int]:
    """The per-request rows of ``run_id``, the resolved contract they were scored under, their
    count and their requests' (the night's population: every system has a row per request of it,
    ``no_results`` when it returned nothing), from one job; an :class:`~ndcg_spark.errors.InputError` when the run has no rows or mixes contracts,
    a :class:`~ndcg_spark.errors.ContractError` when the YAML's contract did not produce them."""
    from ndcg_spark.errors import InputError

    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required: stage 2 reads the run's per-request table")
    with spark_errors_as_input_errors("stage 2"):
        per_request = read_run(spark, config.per_request, run_id)
        counted = per_request.groupBy("contract_fingerprint").agg(
            F.count(F.lit(1)).alias("count"), F.countDistinct("request_id").alias("requests"))
        stamped = collect_sorted(counted, "contract_fingerprint")
    if not stamped:
        raise InputError(
            f"stage 2: run {run_id!r} has no rows in the per-request table ({config.per_request.describe()}); "
            "score it first (ndcg-spark score|run --run-id …)"
        )
    if len(stamped) > 1:
        raise InputError(
            f"stage 2: run {run_id!r} mixes contracts {', '.join(str(r[0]) for r in stamped)} in the per-request "
            "table; re-score the run so that one contract produced it"
        )
    return per_request, resolved_contract(config.contract, stamped[0][0]), int(stamped[0][1]), int(stamped[0][2])


def aggregate_stage(
    spark: SparkSession, config: JobConfig, run_id: str, *, row_counts: dict[str, int] | None = None,
    inputs: tuple[InputRead, ...] | None = None,
) -> AggregateResult:
    """Stage 2: read the per-request table of ``run_id`` -- nothing else -- and write the aggregate
    table, the audit table (if ``outputs.audit`` is set) and the run's run-metadata row.

    The ``aggregate:`` section and the outputs are validated before Spark is touched
    (:func:`stage2_plan`). The readable contract in run metadata is the YAML's contract resolved
    to the fingerprint stamped on the per-request rows (:func:`stage2_input`); if no resolution
    matches, the table was scored under another contract and the stage refuses (re-score the run,
    or aggregate with the YAML it was scored with). ``row_counts`` (e.g. stage 1's
    ``candidates.rows_read``) and ``inputs`` (what stage 1 read; None: not recorded) are added to
    the metadata.
    """
    import datetime as dt

    from ndcg_spark.aggregation.means import aggregate
    from ndcg_spark.aggregation.metadata import run_metadata
    from ndcg_spark.aggregation.worst_slice import audit

    spec, targets = stage2_plan(config)
    started = time.perf_counter()
    created_at = dt.datetime.now(dt.timezone.utc)
    per_request, contract, n_per_request, n_population = stage2_input(spark, config, run_id)
    with spark_errors_as_input_errors("stage 2"):
        write_run_partitioned(aggregate(per_request, spec, created_at=created_at), targets["aggregate"])
        written = read_run(spark, targets["aggregate"], run_id)
        counts = {"per_request": n_per_request, "aggregate": written.count(), "population": n_population}
        if targets["audit"] is not None:
            write_run_partitioned(audit(written), targets["audit"])
            # no slice declared: no audit row, and a path table's first night then has no file at all
            audited = read_written(spark, targets["audit"], run_id)
            counts["audit"] = 0 if audited is None else audited.count()
        counts.update(row_counts or {})
        meta = run_metadata(spark, run_id, contract=contract, spec=spec, row_counts=counts, created_at=created_at,
                            inputs=None if inputs is None else [i.as_row() for i in inputs])
        write_run_partitioned(meta.coalesce(1), targets["run_metadata"])
    return AggregateResult(
        run_id,
        targets["aggregate"],
        targets["audit"],
        targets["run_metadata"],
        counts,
        time.perf_counter() - started,
    )


def resolved_contract(contract: Contract, fingerprint: str) -> Contract:
    """The resolution of ``contract`` (``order: auto`` -> position or score) whose fingerprint is
    ``fingerprint``; a :class:`~ndcg_spark.errors.ContractError` when none is."""
    options = contract.resolutions()
    for option in options:
        if option.fingerprint == fingerprint:
            return option
    raise ContractError(
        "contract",
        f"the per-request table was scored under contract {fingerprint}, but this YAML's contract resolves to "
        f"{' or '.join(o.fingerprint for o in options)}; re-score the run, or aggregate it with the YAML it was "
        "scored with",
    )


def stage2_summary(spark: SparkSession, result: AggregateResult) -> tuple[list[dict], list[dict]]:
    """The overall rows of the written aggregate table and the audit rows (recomputed from the
    aggregate table when no audit table is written), for the CLI's closing lines."""
    from ndcg_spark.aggregation.worst_slice import audit
    from ndcg_spark.metrics.slices import overall_rows

    aggregates = read_run(spark, result.target, result.run_id)
    overall = collect_sorted(overall_rows(aggregates), "system", "pool_version", "k", "metric")
    audited = read_written(spark, result.audit, result.run_id) if result.audit is not None else audit(aggregates)
    if audited is None:  # no slice declared: no audit row was ever written
        return [r.asDict() for r in overall], []
    worst = collect_sorted(audited, "system", "pool_version", "k", "metric", "slice_dimension")
    return [r.asDict() for r in overall], [r.asDict() for r in worst]


@dataclass(frozen=True)
class CompareResult:
    run_id: str
    target: Source
    #: the comparison table of this run (one row per slice x K: small)
    rows: list[dict]
    seconds: float


def compare_stage(spark: SparkSession, config: JobConfig, run_id: str) -> CompareResult:
    """Compare two rankers of run ``run_id``: read its per-request table (published runs only) and,
    for the pool guard, the run's candidates and judgments; write the comparison table
    (``outputs.comparison``).

    The ``compare:`` section is validated before Spark is touched. The candidates and judgments
    are re-read from ``inputs``; rows of requests that stage 1 set aside never meet the
    per-request table, and :func:`~ndcg_spark.comparison.paired.compare` fails if the pool summary does not
    match it (e.g. the inputs changed since the run).
    """
    from ndcg_spark.comparison.paired import compare
    from ndcg_spark.comparison.pools import pool_summary
    from ndcg_spark.errors import InputError
    from ndcg_spark.publishing.status import read_published

    spec = config.compare_spec()
    target = config.output("comparison")
    if target is None:
        raise ContractError("outputs.comparison", "is required (a path or a table) to write the comparison")
    if config.per_request is None:
        raise ContractError("outputs.per_request", "is required: the comparison reads the run's per-request table")
    started = time.perf_counter()
    with spark_errors_as_input_errors("compare"):
        per_request = read_published(spark, config.per_request, config.run_status(), run_id)
        first = per_request.select("contract_fingerprint").limit(1).collect()
        if not first:
            raise InputError(
                f"compare: run {run_id!r} has no published rows in the per-request table "
                f"({config.per_request.describe()}); score it first (ndcg-spark score|run --run-id …)"
            )
        candidates = read_source(spark, config.candidates, "inputs.candidates")
        judgments = read_source(spark, config.judgments, "inputs.judgments") if config.judgments else None
        pools = pool_summary(
            candidates, judgments, config.contract, system=config.system, pool_version=config.pool_version,
            validate=False,  # stage 1 validated these inputs under the declared handling
        )
        result = compare(per_request, pools, spec, contract=resolved_contract(config.contract, first[0][0]))
        write_run_partitioned(result, target, partition_by=("run_id", "baseline", "candidate"))
    rows = [r.asDict() for r in result.collect()]
    return CompareResult(run_id, target, rows, time.perf_counter() - started)
