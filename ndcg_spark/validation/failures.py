"""The failures validation raises before anything is written, each naming its rule(s), the row
count(s) and an example row (:class:`~ndcg_spark.errors.ValidationError`).

>>> from ndcg_spark.config.validation_spec import ValidationSpec
>>> counts = {("candidates", "read", None): (9, None),
...           ("candidates", "rule", "doc_repeated"): (2, '{"request_id":"qx","doc_id":"a"}')}
>>> raise_on_broken_rules(counts, ValidationSpec())
Traceback (most recent call last):
...
ndcg_spark.errors.ValidationError: input rows break validation rules handled as 'error'; nothing was written:
- doc_repeated: 2 candidates rows (the same doc id twice in one request's candidates (per system and pool version)), \
e.g. {"request_id":"qx","doc_id":"a"}
Fix the input, or declare e.g. validation.rules.doc_repeated: quarantine to set such rows aside in outputs.quarantine \
and score the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

from ndcg_spark.config.validation_spec import INPUTS, RULE_INDEX, RULES_BY_NAME, ValidationSpec
from ndcg_spark.errors import ValidationError
from ndcg_spark.validation.accounting import InputAccounting, RowAccounting, RuleCounts, rows_read


def raise_on_empty(counts: RuleCounts, inputs: Iterable[str]) -> None:
    """Rule ``input_empty``: every given input has rows."""
    for name in inputs:
        if rows_read(counts, name) == 0:
            raise ValidationError(
                f"{name}: the input has no rows (rule input_empty); nothing was written. An empty {name} "
                "table usually means the upstream job that writes it failed.",
                "input_empty",
            )


def raise_on_broken_rules(counts: RuleCounts, spec: ValidationSpec) -> None:
    """Every rule handled as ``error`` that a row breaks, with its count and an example, in one error."""
    broken = sorted(
        ((rule, inp, n, example) for (inp, kind, rule), (n, example) in counts.items() if kind == "rule"),
        key=lambda item: (RULE_INDEX[item[0]], INPUTS.index(item[1])),
    )
    errors = [b for b in broken if spec.handling(b[0]) == "error"]
    if not errors:
        return
    lines = [
        f"- {rule}: {n:,} {inp} row{'s' if n != 1 else ''} ({RULES_BY_NAME[rule].description})"
        + (f", e.g. {example}" if example else "")
        for rule, inp, n, example in errors
    ]
    first = errors[0][0]
    totals: dict[str, int] = {}
    for rule, _, n, _ in errors:
        totals[rule] = totals.get(rule, 0) + n
    fixes = list(dict.fromkeys(RULES_BY_NAME[rule].fix for rule, *_ in errors if RULES_BY_NAME[rule].fix))
    plain = [rule for rule in dict.fromkeys(rule for rule, *_ in errors) if not RULES_BY_NAME[rule].fix]
    advice = [*fixes] + ([f"Fix the input, or declare e.g. validation.rules.{plain[0]}: quarantine to set such rows "
                          "aside in outputs.quarantine and score the rest."] if plain else [])
    raise ValidationError(
        "input rows break validation rules handled as 'error'; nothing was written:\n"
        + "\n".join(lines) + "\n" + "\n".join(advice),
        first,
        totals,
    )


def _share_error(item: InputAccounting, counts: RuleCounts, spec: ValidationSpec) -> ValidationError:
    rules = ", ".join(f"{rule} {n:,}" for rule, n in item.quarantined_by_rule)
    example = min(
        (ex for (inp, kind, _), (_, ex) in counts.items() if inp == item.input and kind == "rule" and ex),
        default=None,
    )
    fixes = [RULES_BY_NAME[rule].fix for rule, _ in item.quarantined_by_rule
             if rule in RULES_BY_NAME and RULES_BY_NAME[rule].fix]
    return ValidationError(
        f"{item.input}: {item.rows_quarantined:,} of {item.rows_read:,} rows "
        f"({item.rows_quarantined / item.rows_read:.1%}) would be quarantined, above "
        f"validation.max_quarantined_share = {spec.max_quarantined_share:.1%} (by rule: {rules}"
        + (f"; e.g. {example}" if example else "") + "); nothing was written. "
        + (" ".join(dict.fromkeys(fixes)) + " Otherwise fix" if fixes else "Fix")
        + " the input, or raise the maximum if this much bad input is expected.",
        item.quarantined_by_rule[0][0],
        dict(item.quarantined_by_rule),
    )


def raise_on_share(accounting: RowAccounting, counts: RuleCounts, spec: ValidationSpec) -> None:
    """No input has more than ``validation.max_quarantined_share`` of its rows quarantined."""
    for item in accounting.inputs:
        if item.rows_read and item.rows_quarantined / item.rows_read > spec.max_quarantined_share:
            raise _share_error(item, counts, spec)


__all__ = ["raise_on_broken_rules", "raise_on_empty", "raise_on_share"]
