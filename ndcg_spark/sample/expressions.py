"""Spark SQL text for the sample generator's draws: literals, hash uniforms, normals, choices.

The generator is a handful of projections whose expressions are written as Spark SQL text: one
JVM call per column instead of thousands of py4j round trips for nested Column objects, which
keeps building the plan well under a second. Literals are typed explicitly (``D`` for doubles),
so no decimal arithmetic sneaks in. Every draw is ``xxhash64`` of the seed, a salt and row keys:
no ``rand()``, so the rows never depend on the partitioning.

Examples
--------
>>> double_literal(0.5)
'0.5D'
>>> choice("u", [("a", 1.0), ("b", 3.0)])
"CASE WHEN u < 0.25D THEN 'a' ELSE 'b' END"
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

_U53 = float(1 << 53)


def double_literal(x: float) -> str:
    """A double literal."""
    return f"{float(x)!r}D"


def string_literal(x: str) -> str:
    """A string literal."""
    return "'" + x.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal(x: object) -> str:
    """A string, double or integer literal."""
    if isinstance(x, str):
        return string_literal(x)
    if isinstance(x, float):
        return double_literal(x)
    return str(x)


def array_literal(values: Sequence[object]) -> str:
    """An ``array(...)`` of literals."""
    return "array(" + ", ".join(literal(v) for v in values) + ")"


def uniform(seed: int, salt: str, *cols: str) -> str:
    """Uniform in [0, 1) from the low 53 bits of ``xxhash64(seed, salt, cols...)``."""
    keys = ", ".join((str(seed), string_literal(salt), *cols))
    return f"(CAST(xxhash64({keys}) & {(1 << 53) - 1} AS DOUBLE) / {double_literal(_U53)})"


def normal(seed: int, salt: str, *cols: str) -> str:
    """Standard normal (Box-Muller) from two hash uniforms."""
    u1 = f"(1.0D - {uniform(seed, salt + '.1', *cols)})"  # (0, 1], so log() is finite
    u2 = uniform(seed, salt + ".2", *cols)
    return f"(sqrt(-2.0D * ln({u1})) * cos({double_literal(2 * math.pi)} * {u2}))"


def choice(u: str, options: Sequence[tuple[object, float]]) -> str:
    """The value of ``options`` (``(value, share)`` pairs, shares as weights) drawn by ``u`` in [0, 1)."""
    total = sum(share for _, share in options)
    branches, cumulative = [], 0.0
    for value, share in options[:-1]:
        cumulative += share / total
        branches.append(f"WHEN {u} < {double_literal(cumulative)} THEN {literal(value)}")
    return f"CASE {' '.join(branches)} ELSE {literal(options[-1][0])} END"


def sql_columns(columns: dict[str, str]) -> dict[str, Column]:
    """``{name: SQL text}`` as ``{name: Column}``, for one ``withColumns`` projection."""
    return {name: F.expr(sql) for name, sql in columns.items()}
