"""A controlled release's outcomes, checked and shaped for the statistics core.

One row per request or session, with the arm (system) that served it, its randomization unit and
the outcome columns the guardrails declare. Bad rows follow named rules, like the inputs of
stage 1 (:data:`~ndcg_spark.config.guardrail_spec.OUTCOME_RULES`):

- ``outcome_arm_missing``: a compared system has no row -- always an error;
- ``outcome_unit_in_two_arms`` (``design: two_sample``): a unit was served by both arms;
- ``outcome_unit_unpaired`` (``design: paired``): a unit was served by one arm only;
- ``outcome_out_of_range``: a null arm or unit, a rate that is not 0/1 (or null), a value outside
  the guardrail's declared ``range``, or a value that is not finite.

Under ``on_bad_rows: error`` the first broken rule fails the comparison with its count and an
example row; under ``quarantine`` the rows are set aside (the unit rules: every row of the unit)
and counted in the guardrail table's ``rows_set_aside``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.guardrail_spec import Guardrail, GuardrailSpec, ReleaseSpec
from ndcg_spark.errors import InputError, ValidationError
from ndcg_spark.guardrails.statistics import ARM, UNIT, Measure

__all__ = ["ReleaseRows", "release_rows"]

_EXPLAINED = {
    "outcome_unit_in_two_arms": "a unit served by both arms in a two_sample design",
    "outcome_unit_unpaired": "a unit served by one arm only in a paired design",
    "outcome_out_of_range": "a null arm or unit, a rate other than 0/1, or a value outside the guardrail's range",
}


@dataclass(frozen=True)
class ReleaseRows:
    """The outcomes ready for :func:`~ndcg_spark.guardrails.statistics.arm_statistics`."""

    rows: DataFrame
    measures: tuple[Measure, ...]
    #: rows of the two compared arms (or of none) read, and how many were set aside (``quarantine``)
    rows_read: int
    rows_set_aside: int
    #: rows breaking each rule (a row can break two)
    broken: dict[str, int]


def release_rows(outcomes: DataFrame, spec: GuardrailSpec, arms: tuple[str, str]) -> ReleaseRows:
    """Check the outcomes of ``arms`` (baseline, candidate) against the rules and keep the good rows.

    Raises :class:`~ndcg_spark.errors.InputError` naming the missing column, or
    :class:`~ndcg_spark.errors.ValidationError` naming the rule, the count and an example row.
    """
    release, checks = spec.release, spec.release_checks
    _require_columns(outcomes, release, checks)
    mine = outcomes.filter(F.col(release.arm).isin(*arms) | F.col(release.arm).isNull())
    flagged = _flagged(mine, release, checks)
    counts = _rule_counts(flagged, release, arms)
    missing = [arm for arm in arms if not counts[f"arm:{arm}"]]
    if missing:
        raise ValidationError(
            f"guardrails.release: the outcomes have no row of arm {missing[0]!r} (rule outcome_arm_missing; "
            f"column {release.arm!r}); a compared system must have served part of the release", "outcome_arm_missing")
    broken = {rule: counts[rule] for rule in _rules(release) if counts[rule]}
    if broken and release.on_bad_rows == "error":
        rule = next(iter(broken))
        raise ValidationError(
            f"guardrails.release: {broken[rule]} outcome rows break rule {rule} ({_EXPLAINED[rule]}), e.g. "
            f"{counts[f'example:{rule}']}; fix the outcomes, or set guardrails.release.on_bad_rows: quarantine "
            "to set such rows aside (counted)", rule)
    good = flagged.filter(~F.col("_bad"))
    measures = tuple(Measure(f"g{i}", g.statistic) for i, g in enumerate(checks))
    rows = good.select(F.col(release.arm).alias(ARM), F.col(release.unit).cast("string").alias(UNIT),
                       *[F.col(s) for s in release.slices],
                       *[_value(g).alias(f"g{i}") for i, g in enumerate(checks)])
    return ReleaseRows(rows, measures, int(counts["read"]), int(counts["set_aside"]), broken)


def _rules(release: ReleaseSpec) -> tuple[str, str]:
    """The rules a design's rows can break: its unit rule, then the range rule."""
    unit = "outcome_unit_in_two_arms" if release.design == "two_sample" else "outcome_unit_unpaired"
    return unit, "outcome_out_of_range"


def _require_columns(outcomes: DataFrame, release: ReleaseSpec, checks: tuple[Guardrail, ...]) -> None:
    present = set(outcomes.columns)
    wanted = [("guardrails.release.arm", release.arm), ("guardrails.release.unit", release.unit)]
    wanted += [(f"guardrails.release.slices[{i}]", s) for i, s in enumerate(release.slices)]
    wanted += [(f"guardrails.checks ({g.name}).column", g.column) for g in checks]
    for where, name in wanted:
        if name not in present:
            raise InputError(f"guardrails.release: the outcomes have no column {name!r} ({where}); columns present: "
                             f"{', '.join(sorted(present)) or 'none'} (rule column_missing)")


def _value(g: Guardrail) -> Column:
    """The guardrail's column as a double (a boolean as 0/1)."""
    return F.col(g.column).cast("double")


def _out_of_range(g: Guardrail) -> Column:
    value = _value(g)
    if g.statistic.of_flags:
        return value.isNull() | ~value.isin(0.0, 1.0)
    bad = F.isnan(value) | (F.abs(value) == F.lit(float("inf")))
    low, high = g.value_range
    if low is not None:
        bad = bad | (value < F.lit(low))
    if high is not None:
        bad = bad | (value > F.lit(high))
    return value.isNotNull() & bad


def _flagged(outcomes: DataFrame, release: ReleaseSpec, checks: tuple[Guardrail, ...]) -> DataFrame:
    """Every row with its rule flags and ``_bad`` (any rule)."""
    arms_per_unit = outcomes.groupBy(release.unit).agg(F.countDistinct(release.arm).alias("_arms"))
    with_arms = outcomes.join(arms_per_unit, [release.unit], "left")
    range_bad = F.col(release.arm).isNull() | F.col(release.unit).isNull()
    for g in checks:
        range_bad = range_bad | _out_of_range(g)
    unit_rule = _rules(release)[0]
    unit_bad = (F.col("_arms") > 1) if release.design == "two_sample" else (F.col("_arms") < 2)
    unit_bad = F.col(release.unit).isNotNull() & F.coalesce(unit_bad, F.lit(False))
    flags = {unit_rule: unit_bad, "outcome_out_of_range": range_bad}
    return with_arms.select(*outcomes.columns, *[f.alias(n) for n, f in flags.items()],
                            (unit_bad | range_bad).alias("_bad"))


def _rule_counts(flagged: DataFrame, release: ReleaseSpec, arms: tuple[str, str]) -> dict[str, object]:
    """Rows read, rows per arm, and per rule its count and an example row (the smallest, as JSON)."""
    original = [c for c in flagged.columns if c not in (*_EXPLAINED, "_bad")]
    row_json = F.to_json(F.struct(*[F.col(c) for c in original]))
    aggs = [F.count(F.lit(1)).alias("read"), F.count(F.when(F.col("_bad"), True)).alias("set_aside")]
    aggs += [F.count(F.when(F.col(release.arm) == F.lit(a), True)).alias(f"arm:{a}") for a in arms]
    for rule in _rules(release):
        aggs += [F.count(F.when(F.col(rule), True)).alias(rule),
                 F.min(F.when(F.col(rule), row_json)).alias(f"example:{rule}")]
    return flagged.agg(*aggs).first().asDict()
