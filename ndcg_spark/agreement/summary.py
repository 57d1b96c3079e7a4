"""Does the offline metric predict the release? The summary of an experiment history, per contract ×
metric × K × outcome (SPEC §12): counts, sensitivity, directional agreement with its Wilson interval,
false wins, the rank correlation with its bootstrap interval, and the best-agreeing metric × K of
each outcome -- no statistic below ``min_experiments``.

The history is collected once and summarized in numpy on the driver
(:func:`~ndcg_spark.agreement.statistics.summarize`): it holds a row per experiment × metric × K ×
outcome, a few thousand rows for a few hundred experiments.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import DataFrame

from ndcg_spark.agreement.statistics import summarize
from ndcg_spark.config.agreement_spec import AgreementSpec
from ndcg_spark.config.schemas import AGREEMENT
from ndcg_spark.version import __version__

__all__ = ["SUMMARY_COLUMNS", "agreement_summary", "summary_rows"]

#: :func:`agreement_summary`'s columns: the agreement table's without its ``run_id``
SUMMARY_COLUMNS = AGREEMENT.names[1:]


def summary_rows(history_rows: list[dict[str, Any]], spec: AgreementSpec,
                 created_at: dt.datetime | None = None) -> list[dict[str, Any]]:
    """:func:`~ndcg_spark.agreement.statistics.summarize` with the declared choices stamped on each row."""
    created_at = created_at or dt.datetime.now(dt.timezone.utc)
    stamp = {"min_experiments": spec.min_experiments, "ci_level": spec.ci_level,
             "bootstrap_replicates": spec.replicates, "seed": spec.seed, "mean": spec.mean,
             "code_version": __version__, "created_at": created_at}
    return [{**row, **stamp} for row in summarize(history_rows, spec)]


def agreement_summary(history: DataFrame, spec: AgreementSpec | None = None, *,
              created_at: dt.datetime | None = None) -> DataFrame:
    """The agreement summary of an experiment history
    (:func:`~ndcg_spark.agreement.history.experiment_history`): one row per contract × metric × K ×
    outcome, :data:`SUMMARY_COLUMNS`.

    Examples
    --------
    >>> from ndcg_spark.agreement.history import HISTORY_COLUMNS
    >>> rows = [(f"n{i}", "a", "b", "reranker", "fp", "ndcg", 5, "macro", d, d - 0.01, d + 0.01, d - 0.01 > 0,
    ...          "task_completion", "rate", "higher", y, y - 0.01, y + 0.01, y, y - 0.01, y + 0.01, abs(y) > 0.01,
    ...          "pass", None, False)
    ...         for i, (d, y) in enumerate([(0.01, 0.0), (0.02, 0.03), (0.03, 0.02), (0.05, 0.06)])]
    >>> history = spark.createDataFrame(rows, ", ".join(f"{c} {t}" for c, t in zip(
    ...     HISTORY_COLUMNS, ["string"] * 6 + ["int", "string", "double", "double", "double", "boolean", "string",
    ...     "string", "string"] + ["double"] * 6 + ["boolean", "string", "boolean", "boolean"])))
    >>> agreement_summary(history).select("metric", "k", "outcome", "n_experiments", "spearman", "note").show(truncate=False)
    +------+---+---------------+-------------+--------+------------------------------------------------------+
    |metric|k  |outcome        |n_experiments|spearman|note                                                  |
    +------+---+---------------+-------------+--------+------------------------------------------------------+
    |ndcg  |5  |task_completion|4            |NULL    |too few experiments (4 < 8): counts only, no statistic|
    +------+---+---------------+-------------+--------+------------------------------------------------------+
    <BLANKLINE>
    """
    spec = spec or AgreementSpec()
    rows = summary_rows([r.asDict() for r in history.collect()], spec, created_at)
    return history.sparkSession.createDataFrame(
        [tuple(r[c] for c in SUMMARY_COLUMNS) for r in rows], _summary_schema())


def _summary_schema():
    from pyspark.sql import types as T

    struct = AGREEMENT.struct_type()
    return T.StructType([f for f in struct.fields if f.name != "run_id"])
