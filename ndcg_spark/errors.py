"""Errors a user can act on.

Every error the library raises on purpose derives from :class:`NdcgError`; the CLI turns
them into one readable paragraph and a non-zero exit instead of a stack trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class NdcgError(Exception):
    """Base class of every deliberate ndcg-spark error."""


class ContractError(NdcgError, ValueError):
    """A declared choice or configuration value breaks a rule.

    The message starts with the dotted path of the bad field, e.g.
    ``contract.k[2]: must be an integer >= 1, got 0``.
    """

    def __init__(self, path: str, rule: str) -> None:
        self.path = path
        self.rule = rule
        super().__init__(f"{path}: {rule}")


class InputError(NdcgError, ValueError):
    """An input table cannot be scored as it is (missing column, wrong type, bad rows)."""


class EmptyIdealError(NdcgError):
    """Raised under ``empty_ideal: error`` when a request has no positive grade."""


class ValidationError(InputError):
    """Input rows break a validation rule (see :mod:`ndcg_spark.validation.validate`).

    Raised when a rule handled as ``error`` is broken, a schema rule is broken, or quarantine
    would exceed ``validation.max_quarantined_share``. ``rule`` names the first rule broken;
    ``counts`` maps each broken rule to its row count. The message names the rule(s), the
    count(s) and one example row each.
    """

    def __init__(self, message: str, rule: str, counts: dict[str, int] | None = None) -> None:
        self.rule = rule
        self.counts = dict(counts or {rule: 0})
        super().__init__(message)


def describe_spark_error(exc: BaseException) -> str | None:
    """One line for a Spark (JVM) or Py4J error, or ``None`` when ``exc`` is neither.

    A captured Spark error (``AnalysisException`` …) gives its first message line; a raw
    ``Py4JJavaError`` gives its deepest Java cause (``java.io.FileNotFoundException: …``).
    """
    try:
        from py4j.protocol import Py4JError, Py4JJavaError
        from pyspark.errors.exceptions.captured import CapturedException
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    if isinstance(exc, CapturedException):
        text = (exc.getMessage() if hasattr(exc, "getMessage") else str(exc)) or str(exc)
        lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
        return lines[0] if lines else type(exc).__name__
    if isinstance(exc, Py4JJavaError):
        try:
            cause = exc.java_exception
            while cause.getCause() is not None and cause.getCause() != cause:
                cause = cause.getCause()
            lines = str(cause.toString()).strip().splitlines()
            return lines[0] if lines else "a Java error"
        except Exception:  # noqa: BLE001 - the JVM may be gone; say what we can
            return "a Java error (the JVM did not describe it)"
    if isinstance(exc, Py4JError):
        return "the connection to the Spark JVM failed"
    return None


@contextmanager
def spark_errors_as_input_errors(what: str) -> Iterator[None]:
    """Turn Spark/Py4J errors raised inside the block into :class:`InputError` (one clear line).

    ``with spark_errors_as_input_errors("stage 1"): ...`` — deliberate :class:`NdcgError` s pass
    through unchanged; the original error stays chained, so ``--debug`` shows its trace.
    """
    try:
        yield
    except NdcgError:
        raise
    except Exception as exc:
        text = describe_spark_error(exc)
        if text is None:
            raise
        raise InputError(
            f"{what}: Spark could not process the input: {text}. Check the input tables and the columns "
            "named in the config (run again with --debug for the full trace)."
        ) from exc
