"""Field checks shared by every spec: each returns the value it accepts or raises a
:class:`~ndcg_spark.errors.ContractError` naming the dotted path of the bad field.

>>> require_int(3, "aggregate.min_eligible", minimum=1)
3
>>> require_int(True, "aggregate.min_eligible", minimum=1)
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: aggregate.min_eligible: must be an integer >= 1, got True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ndcg_spark.errors import ContractError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_int(value: Any) -> bool:
    """An ``int`` that is not a ``bool`` (YAML's ``true`` is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def require_int(value: Any, path: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer within ``[minimum, maximum]`` (either bound optional)."""
    if not is_int(value) or (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        bounds = [f"{op} {b}" for op, b in ((">=", minimum), ("<=", maximum)) if b is not None]
        raise ContractError(path, " ".join(["must be an integer", " and ".join(bounds)]).rstrip() + f", got {value!r}")
    return value


def require_number(value: Any, path: str, *, minimum: float | None = None) -> float:
    """A finite number (not a bool), at least ``minimum`` when given, as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ContractError(path, f"must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ContractError(path, f"must be a number >= {minimum:g}, got {value!r}")
    return float(value)


def require_text(value: Any, path: str) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise ContractError(path, f"must be a non-empty string, got {value!r}")
    return value


def require_choice(value: Any, options: tuple[str, ...], path: str) -> str:
    """One of ``options``."""
    if value not in options:
        raise ContractError(path, f"must be one of {', '.join(options)}; got {value!r}")
    return value


def require_mapping(value: Any, path: str, allowed: set[str] | frozenset[str]) -> Mapping[str, Any]:
    """A mapping whose keys are all in ``allowed`` (``None`` reads as empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ContractError(path, f"must be a mapping, got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise ContractError(f"{path}.{key}", f"is not a known field; known: {', '.join(sorted(allowed))}")
    return value


def validate_identifier(value: Any, path: str) -> str:
    """Return ``value`` if it is a plain column/table identifier, else raise :class:`ContractError`."""
    if not isinstance(value, str) or not _IDENTIFIER.match(value):
        raise ContractError(
            path, f"must be an identifier (letters, digits, underscore; not starting with a digit), got {value!r}"
        )
    return value
