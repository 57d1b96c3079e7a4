"""The experiment history: every comparison with a controlled release, one row per experiment ×
metric × K × outcome, read from the comparison and guardrail tables (SPEC §12).

An *experiment* is one comparison (run × baseline × candidate) whose guardrail rows include release
outcomes. Its offline side is the comparison's overall delta of each declared metric at each K (with
its interval); its online side is each release guardrail's overall difference (with its interval and
verdict), oriented as the guardrail declares better. A comparison without any guardrail row is not an
experiment (no release was run) and is left out.

Bad input is named, not traced (:class:`HistoryError`): an experiment whose guardrail rows hold no
release outcome, a release outcome missing on one arm (no difference), an experiment in the
guardrail table without a comparison, an experiment whose comparison and guardrails were computed
under different contracts.
"""

from __future__ import annotations


from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.agreement_spec import AgreementSpec
from ndcg_spark.config.aggregate_spec import OVERALL
from ndcg_spark.config.schemas import AGREEMENT_HISTORY
from ndcg_spark.errors import InputError

__all__ = ["EXPERIMENT", "HISTORY_COLUMNS", "HistoryError", "experiment_history", "significant"]

#: an experiment's key on both tables
EXPERIMENT = ("run_id", "baseline", "candidate")
#: :func:`experiment_history`'s columns: the agreement history table's without its ``run_id``
HISTORY_COLUMNS = AGREEMENT_HISTORY.names[1:]


class HistoryError(InputError):
    """The comparison and guardrail tables do not make an experiment history: ``rule`` names what is
    wrong (``experiment_without_release``, ``outcome_missing_on_one_arm``,
    ``experiment_without_comparison``, ``experiment_mixes_contracts``), ``count`` how many."""

    def __init__(self, rule: str, count: int, what: str, example: str, fix: str) -> None:
        self.rule = rule
        self.count = count
        super().__init__(f"agreement history: {rule}: {count} {what}, e.g. {example}. {fix}")


def significant(low: Column, high: Column) -> Column:
    """An interval excludes 0 (null when it is missing)."""
    return (low > 0) | (high < 0)


def experiment_history(comparison: DataFrame, guardrails: DataFrame, spec: AgreementSpec | None = None) -> DataFrame:
    """Every experiment of the two tables, one row per experiment × metric × K × outcome.

    Parameters
    ----------
    comparison : the comparison table (``outputs.comparison``; published runs only, e.g. through
        :func:`~ndcg_spark.publishing.status.read_published`).
    guardrails : the guardrail table (``outputs.guardrails``) of the same runs.
    spec : which metrics, outcomes and mean (:class:`~ndcg_spark.config.agreement_spec.AgreementSpec`;
        default: every declared metric, every release guardrail, the macro delta).

    Returns
    -------
    DataFrame
        :data:`HISTORY_COLUMNS`: the experiment (``experiment_run``, ``baseline``, ``candidate``), its
        contract, the offline delta with its interval and significance, the outcome's difference with
        its interval, its improvement (as the guardrail declares better), significance and verdict,
        whether both agree and whether it is a false win.

    Raises
    ------
    HistoryError
        Checked with one small query over the two tables (a row per experiment) before the rows are
        joined.

    Examples
    --------
    >>> comparison = spark.createDataFrame(
    ...     [("n1", "a", "b", "reranker", "ndcg", "overall", "all", 10, 0.02, 0.01, 0.03, 0.02, 0.0, 0.04, "fp")],
    ...     "run_id string, baseline string, candidate string, comparison_kind string, metric string, "
    ...     "slice_dimension string, slice_value string, k int, delta_macro double, delta_macro_ci_low double, "
    ...     "delta_macro_ci_high double, delta_weighted double, delta_weighted_ci_low double, "
    ...     "delta_weighted_ci_high double, contract_fingerprint string")
    >>> guardrails = spark.createDataFrame(
    ...     [("n1", "a", "b", "latency_p95", "release", "p95", "lower", "overall", "all", 12.0, 5.0, 19.0, "fail", "fp")],
    ...     "run_id string, baseline string, candidate string, guardrail string, source string, statistic string, "
    ...     "better string, slice_dimension string, slice_value string, difference double, difference_ci_low double, "
    ...     "difference_ci_high double, verdict string, contract_fingerprint string")
    >>> experiment_history(comparison, guardrails).select(
    ...     "metric", "k", "offline_significant", "outcome", "outcome_improvement", "agrees", "false_win").show()
    +------+---+-------------------+-----------+-------------------+------+---------+
    |metric|  k|offline_significant|    outcome|outcome_improvement|agrees|false_win|
    +------+---+-------------------+-----------+-------------------+------+---------+
    |  ndcg| 10|               true|latency_p95|              -12.0| false|     true|
    +------+---+-------------------+-----------+-------------------+------+---------+
    <BLANKLINE>
    """
    from ndcg_spark.measures import METRICS

    spec = spec or AgreementSpec()
    metrics = list(spec.metrics) if spec.metrics is not None else list(METRICS)
    offline = comparison.filter((F.col("slice_dimension") == OVERALL) & F.col("metric").isin(metrics))
    overall_guardrails = guardrails.filter(F.col("slice_dimension") == OVERALL)
    release = overall_guardrails.filter(F.col("source") == "release")
    if spec.outcomes is not None:
        release = release.filter(F.col("guardrail").isin(list(spec.outcomes)))
    _check(offline, overall_guardrails)

    delta = spec.mean_column
    sign = F.when(F.col("better") == "lower", F.lit(-1.0)).otherwise(F.lit(1.0))
    offline_rows = offline.select(
        *EXPERIMENT, "comparison_kind", "contract_fingerprint", "metric", "k", F.lit(spec.mean).alias("mean"),
        F.col(delta).alias("offline_delta"), F.col(f"{delta}_ci_low").alias("offline_ci_low"),
        F.col(f"{delta}_ci_high").alias("offline_ci_high"),
    )
    outcome_rows = release.select(
        *EXPERIMENT, F.col("guardrail").alias("outcome"), "statistic", "better",
        F.col("difference").alias("outcome_difference"), F.col("difference_ci_low").alias("outcome_ci_low"),
        F.col("difference_ci_high").alias("outcome_ci_high"),
        (sign * F.col("difference")).alias("outcome_improvement"),
        F.least(sign * F.col("difference_ci_low"), sign * F.col("difference_ci_high")).alias("outcome_improvement_ci_low"),
        F.greatest(sign * F.col("difference_ci_low"), sign * F.col("difference_ci_high"))
        .alias("outcome_improvement_ci_high"),
        "verdict",
    )
    joined = offline_rows.join(outcome_rows, list(EXPERIMENT), "inner")
    offline_significant = F.coalesce(significant(F.col("offline_ci_low"), F.col("offline_ci_high")), F.lit(False))
    outcome_significant = F.coalesce(significant(F.col("outcome_ci_low"), F.col("outcome_ci_high")), F.lit(False))
    both = offline_significant & outcome_significant
    return (
        joined
        .withColumn("offline_significant", offline_significant)
        .withColumn("outcome_significant", outcome_significant)
        .withColumn("agrees", F.when(both, F.signum("offline_delta") == F.signum("outcome_improvement")))
        .withColumn("false_win", both & (F.col("offline_delta") > 0) & (F.col("outcome_improvement") < 0))
        .withColumnRenamed("run_id", "experiment_run")
        .select(*HISTORY_COLUMNS)
    )


def _check(offline: DataFrame, guardrails: DataFrame) -> None:
    """One query, a row per experiment of either table: raise :class:`HistoryError` on the first
    broken rule."""
    is_release = F.col("source") == "release"
    missing = is_release & (F.col("difference").isNull() | F.col("difference_ci_low").isNull()
                            | F.col("difference_ci_high").isNull())
    sides = offline.groupBy(*EXPERIMENT).agg(F.collect_set("contract_fingerprint").alias("comparison_contracts"))
    outcomes = guardrails.groupBy(*EXPERIMENT).agg(
        F.count(F.when(is_release, 1)).alias("n_release"),
        F.collect_set(F.when(missing, F.col("guardrail"))).alias("missing_on_one_arm"),
        F.collect_set("contract_fingerprint").alias("guardrail_contracts"),
    )
    rows = [r.asDict() for r in sides.join(outcomes, list(EXPERIMENT), "full").collect()]

    def name(r: dict) -> str:
        return f"run {r['run_id']} ({r['candidate']} vs {r['baseline']})"

    no_comparison = sorted((r for r in rows if r["comparison_contracts"] is None), key=name)
    if no_comparison:
        raise HistoryError("experiment_without_comparison", len(no_comparison),
                           "experiment(s) have guardrail rows but no comparison row (of the metrics read)",
                           name(no_comparison[0]),
                           "Read both tables of the same published runs, or re-run `ndcg-spark compare` for it.")
    experiments = [r for r in rows if r["n_release"] is not None]
    no_release = sorted((r for r in experiments if r["n_release"] == 0), key=name)
    if no_release:
        raise HistoryError("experiment_without_release", len(no_release),
                           "experiment(s) have guardrail rows but none from a release (`source: release`)",
                           name(no_release[0]),
                           "Declare `guardrails.release` for it and re-run `ndcg-spark compare`, or leave the run "
                           "out of the tables read.")
    one_arm = sorted((r for r in experiments if r["missing_on_one_arm"]), key=name)
    if one_arm:
        first = one_arm[0]
        raise HistoryError("outcome_missing_on_one_arm", len(one_arm),
                           "experiment(s) have a release outcome without a difference and interval (an arm has no "
                           "observed value)", f"{name(first)}: {', '.join(sorted(first['missing_on_one_arm']))}",
                           "Check the release's outcomes for that arm, or leave the outcome out (`agreement.outcomes`).")
    mixed = sorted((r for r in experiments
                    if len(set(r["comparison_contracts"] or []) | set(r["guardrail_contracts"] or [])) > 1), key=name)
    if mixed:
        first = mixed[0]
        contracts = sorted(set(first["comparison_contracts"]) | set(first["guardrail_contracts"]))
        raise HistoryError("experiment_mixes_contracts", len(mixed),
                           "experiment(s) whose comparison and guardrail rows were computed under different contracts",
                           f"{name(first)}: {', '.join(contracts)}",
                           "Re-run `ndcg-spark compare` for it, so that both tables hold the same night's rows.")

