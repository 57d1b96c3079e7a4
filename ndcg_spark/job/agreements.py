"""``ndcg-spark agreement``: does the offline metric predict the release? (SPEC §12)

:func:`agreement_stage` reads the comparison and guardrail tables of the *published* runs only
(:func:`~ndcg_spark.publishing.status.read_published`), builds the experiment history
(:func:`~ndcg_spark.agreement.history.experiment_history`), collects it once, summarizes it on the
driver and writes both: the summary to ``outputs.agreement`` and the experiment rows to
``outputs.agreement_history`` (default: beside it), each replacing only this run's partition.
It reads nothing else.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ndcg_spark.agreement.history import HISTORY_COLUMNS
from ndcg_spark.agreement.summary import SUMMARY_COLUMNS
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.errors import ContractError, InputError, spark_errors_as_input_errors

__all__ = ["AGREEMENT_COLUMNS", "AGREEMENT_HISTORY_COLUMNS", "AgreementResult", "agreement_stage", "read_history"]

#: the two tables' columns as written: the agreement run's ``run_id`` (partition column), then the rows'
AGREEMENT_COLUMNS = ("run_id", *SUMMARY_COLUMNS)
AGREEMENT_HISTORY_COLUMNS = ("run_id", *HISTORY_COLUMNS)


@dataclass(frozen=True)
class AgreementResult:
    run_id: str
    #: ``outputs.agreement`` and ``outputs.agreement_history``
    target: Source
    history_target: Source
    #: the experiment rows and the summary rows, as written (without ``run_id``)
    history: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    seconds: float


def _required(config: JobConfig, name: str, why: str) -> Source:
    source = config.output(name)
    if source is None:
        raise ContractError(f"outputs.{name}", f"is required (a path or a table): {why}")
    return source


def read_history(spark: SparkSession, config: JobConfig) -> DataFrame:
    """The experiment history of the job's published comparisons and guardrails."""
    from ndcg_spark.agreement.history import experiment_history
    from ndcg_spark.publishing.status import published_runs
    from ndcg_spark.storage.io import read_written

    tables = {}
    for name in ("comparison", "guardrails"):
        source = _required(config, name, "the agreement reads the experiments of past comparisons from it")
        table = read_written(spark, source, merge_schema=True)
        if table is None:
            raise InputError(f"agreement: the {name} table ({source.describe()}) has not been written yet: run "
                             "`ndcg-spark compare` with guardrails (a release's outcomes) first")
        tables[name] = table.join(published_runs(spark, config.run_status()), "run_id", "left_semi")
    return experiment_history(tables["comparison"], tables["guardrails"], config.agreement_spec())


def agreement_stage(spark: SparkSession, config: JobConfig, run_id: str) -> AgreementResult:
    """Summarize the history of published experiments and write the agreement tables under ``run_id``."""
    from ndcg_spark.agreement.summary import summary_rows
    from ndcg_spark.config.schemas import AGREEMENT, AGREEMENT_HISTORY
    from ndcg_spark.storage.io import write_run_partitioned

    target = _required(config, "agreement", "where the agreement summary is written")
    history_target = config.output("agreement_history")
    spec = config.agreement_spec()
    started = time.perf_counter()
    with spark_errors_as_input_errors("agreement"):
        history = [r.asDict() for r in read_history(spark, config).collect()]  # collected once: small
        history.sort(key=lambda r: (r["contract_fingerprint"], r["outcome"], r["metric"], r["k"],
                                    r["experiment_run"], r["baseline"], r["candidate"]))
        summary = summary_rows(history, spec, dt.datetime.now(dt.timezone.utc))
        for rows, columns, schema, where in ((summary, AGREEMENT_COLUMNS, AGREEMENT, target),
                                             (history, AGREEMENT_HISTORY_COLUMNS, AGREEMENT_HISTORY, history_target)):
            frame = spark.createDataFrame([(run_id, *(r[c] for c in columns[1:])) for r in rows], schema.struct_type())
            write_run_partitioned(frame.coalesce(1), where)
    return AgreementResult(run_id, target, history_target, history, summary, time.perf_counter() - started)
