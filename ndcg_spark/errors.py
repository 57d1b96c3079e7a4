"""Errors a user can act on.

Every error the library raises on purpose derives from :class:`NdcgError`; the CLI turns
them into one readable paragraph and a non-zero exit instead of a stack trace.
"""

from __future__ import annotations

import re
import signal
import sys
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


class SparkFailure(InputError):
    """Spark failed while running a stage's jobs (not while analysing its plan, which names a
    missing column or a wrong type): the data may be at fault, or the cluster (a lost executor,
    memory, a cancelled job), so a retry may succeed. The message is Spark's first line."""
class ReplayRefused(InputError):
    """A night cannot be replayed on the inputs it read: a recorded version is gone (vacuumed,
    expired) or plain files changed since (:mod:`ndcg_spark.storage.lineage`). Nothing was written."""


class ExecutorEnvironmentError(NdcgError):
    """The executors' Python lacks a module the resampling workers import (ndcg_spark itself, or
    numpy / pyarrow / pandas): said once, at the call that needs them, with what to install."""


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


class RunInProgress(NdcgError):
    """Another attempt of the run holds it: its run-status row says ``running`` and is not stale
    (:mod:`ndcg_spark.publishing.lease`). Nothing was written; the message names that attempt."""


class LeaseLost(NdcgError):
    """This attempt no longer holds its run: another attempt's id is on the run-status row. The
    attempt stops without publishing and without recording a failure (the row is the other's)."""


class Interrupted(BaseException):
    """The attempt was ended by a signal (SIGTERM, SIGINT, SIGHUP: a scheduler's timeout or
    preemption, Ctrl-C, a closed terminal). Like ``KeyboardInterrupt`` it is no ``Exception``, so
    no ``except Exception`` swallows it. ``str()`` is the reason recorded: ``terminated by SIGTERM``.

    >>> error = Interrupted(signal.SIGTERM)
    >>> str(error), error.exit_code
    ('terminated by SIGTERM', 143)
    """

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by a signal: 128 + its number."""
        return 128 + self.signum


class CommitConflict(NdcgError):
    """A Delta or Iceberg commit of this run lost to another writer's commit of the same table (its
    optimistic concurrency check failed): nothing of this write is in the table. ``table`` names it."""

    def __init__(self, message: str, table: str) -> None:
        self.table = table
        super().__init__(message)


class FileVanished(NdcgError):
    """A file Spark had listed was gone when a task read it: the table it belongs to was replaced
    or deleted while the run read it. ``path`` is the file."""

    def __init__(self, message: str, path: str) -> None:
        self.path = path
        super().__init__(message)


class OutputChanged(FileVanished):
    """A file of one of the run's own output partitions vanished while this attempt read it."""


#: how Spark and Hadoop name a file that was listed and then not found
_MISSING_FILE = (
    re.compile(r"FileNotFoundException: (?:File )?(\S+?)(?: does not exist|\s|$)"),
    re.compile(r"FILE_NOT_EXIST\]\s*Error while reading file (\S+?)\.?(?:\s|$)"),
    # Hadoop's vectored reads (parquet's, through java.nio) of a file or its checksum
    re.compile(r"NoSuchFileException: (\S+)"),
)


def missing_file(exc: BaseException) -> str | None:
    """The path of the file whose absence caused ``exc`` (a Spark, Py4J or Java error, or one of
    their causes), or None when ``exc`` is about something else.

    >>> missing_file(RuntimeError("java.io.FileNotFoundException: File file:/w/per_request/run_id=a/p.parquet does not exist"))
    'file:/w/per_request/run_id=a/p.parquet'
    >>> missing_file(RuntimeError("[FAILED_READ_FILE.FILE_NOT_EXIST] Error while reading file file:/w/p.parquet. File does not exist."))
    'file:/w/p.parquet'
    >>> missing_file(RuntimeError("[FAILED_READ_FILE.NO_HINT] ... java.nio.file.NoSuchFileException: /w/.p.crc"))
    '/w/.p.crc'
    >>> missing_file(ValueError("bad grade")) is None
    True
    """
    for cause in causes(exc):
        if isinstance(cause, FileVanished):
            return cause.path
        found = _found(cause, _MISSING_FILE)
        if found:
            return found
    return None


def causes(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc`` and its causes (``__cause__``, else ``__context__``), each once."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _found(exc: BaseException, patterns) -> str | None:
    """The first group of the first of ``patterns`` found in what ``exc`` says: its text, then
    Spark's first line for it."""
    for text in (str(exc), describe_spark_error(exc) or ""):
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return found.group(1)
    return None


def one_paragraph(exc: BaseException) -> str:
    """What the console script prints for ``exc`` (and what a failed run-status row records): a
    deliberate error's message, else Spark's first line or the exception's, with the hint to run
    again with ``--debug``."""
    if isinstance(exc, (NdcgError, Interrupted)):
        return str(exc)
    spark_text = describe_spark_error(exc)
    if spark_text is not None:
        return f"Spark failed: {spark_text}\n(run again with --debug for the full trace)"
    text = str(exc).strip().splitlines()
    head = text[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {head}\n(run again with --debug for the full trace)"


def describe_spark_error(exc: BaseException) -> str | None:
    """One line for a Spark error (classic or Spark Connect) or a Py4J error; ``None`` for others.

    A Spark error (``AnalysisException`` …, raised by a classic session through Py4J or by a
    Spark Connect session over gRPC: the classes of :mod:`pyspark.errors` both derive from) gives
    its first message line; a raw ``Py4JJavaError`` gives its deepest Java cause
    (``java.io.FileNotFoundException: …``).
    """
    if _is_spark_error(exc):
        text = (exc.getMessage() if hasattr(exc, "getMessage") else str(exc)) or str(exc)
        lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
        worker = _python_worker_error(lines)
        if worker is not None:
            return worker
        return lines[0] if lines else type(exc).__name__
    try:
        from py4j.protocol import Py4JError, Py4JJavaError
    except ImportError:  # pragma: no cover - a Connect-only client may have no py4j
        return None
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


#: how a Python worker's missing module begins (:func:`_python_worker_error`)
NODE_MODULE_MISSING = "a Python worker failed: ModuleNotFoundError"
#: the last line of a Python traceback: ``ModuleNotFoundError: No module named 'numpy'``
_PYTHON_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b:?")


def _python_worker_error(lines: list[str]) -> str | None:
    """For an error a Python worker raised (its traceback in the message, whose first line only
    says that a worker failed): the Python error itself -- and, for a module the executors' Python
    lacks, what it needs (docs/deploy.md). None for any other error."""
    if not any("Traceback (most recent call last)" in line for line in lines):
        return None
    error = next((line for line in reversed(lines) if _PYTHON_ERROR_LINE.match(line)), None)
    if error is None:
        return None
    text = f"a Python worker failed: {error}"
    if text.startswith(NODE_MODULE_MISSING):
        text += " -- " + WORKERS_NEED
    return text


#: what the executors' Python needs, as every message about a missing module there says it
WORKERS_NEED = (
    "the executors' Python needs ndcg_spark itself and numpy, pyarrow and pandas (pyspark's sql extra) for the "
    "bootstrap and sign-flip replicates: install the package on every node (or ship it: --py-files "
    "dist/ndcg_spark.zip, bash dev.sh package), or point PYSPARK_PYTHON at a Python that has it (docs/deploy.md)")


def _is_spark_error(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by Spark itself: a classic session's captured JVM error, one of
    the error classes classic and Connect share, or any error of a Spark Connect session."""
    from pyspark.errors.exceptions import base

    shared = tuple(getattr(base, name) for name in _SHARED_ERRORS if hasattr(base, name))
    if isinstance(exc, shared):
        return True
    captured = sys.modules.get("pyspark.errors.exceptions.captured")  # a classic session's (py4j)
    if captured is not None and isinstance(exc, captured.CapturedException):
        return True
    # loaded only once a Connect session exists (it needs grpc, which a classic install may lack)
    connect = sys.modules.get("pyspark.errors.exceptions.connect")
    return connect is not None and isinstance(exc, connect.SparkConnectException)


#: the error classes of ``pyspark.errors`` that a classic and a Connect session both raise
_SHARED_ERRORS = (
    "AnalysisException",
    "IllegalArgumentException",
    "ArithmeticException",
    "UnsupportedOperationException",
    "ArrayIndexOutOfBoundsException",
    "DateTimeException",
    "NumberFormatException",
    "QueryExecutionException",
    "PythonException",
    "SparkRuntimeException",
    "SparkUpgradeException",
    "SparkNoSuchElementException",
    "UnknownException",
)


@contextmanager
def spark_errors_as_input_errors(what: str) -> Iterator[None]:
    """Turn Spark/Py4J errors raised inside the block into :class:`InputError` (one clear line):
    an error of the plan's analysis (a missing column, a wrong type) as it is, any other Spark
    failure as :class:`SparkFailure` (a retry may succeed).

    ``with spark_errors_as_input_errors("stage 1"): ...`` — deliberate :class:`NdcgError` s pass
    through unchanged; the original error stays chained, so ``--debug`` shows its trace. A file
    that vanished while Spark read it is no fault of the input's columns: it becomes
    :class:`FileVanished`, which says so (the publishing bracket tells a run's own outputs apart).
    """
    try:
        yield
    except NdcgError:
        raise
    except Exception as exc:
        text = describe_spark_error(exc)
        if text is None:
            raise
        path = missing_file(exc)
        if path is not None:
            raise FileVanished(
                f"{what}: the file {path} was listed by Spark and gone when a task read it: the table it "
                "belongs to was replaced or deleted while this run read it (by another run or process "
                "writing there). Re-run when nothing else writes it (run again with --debug for the full trace).",
                path,
            ) from exc
        if text.startswith(NODE_MODULE_MISSING):  # the nodes' Python, not the input
            raise InputError(f"{what}: {text} (run again with --debug for the full trace).") from exc
        from pyspark.errors import AnalysisException

        # a plan Spark could not analyse, or a file of the input it could not read (a corrupt footer):
        # the input, which a retry does not mend; else Spark failed running it, and a retry may succeed
        unreadable = "FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER" in text or "is not a Parquet file" in text
        kind = InputError if isinstance(exc, AnalysisException) or unreadable else SparkFailure
        raise kind(
            f"{what}: Spark could not process the input: {text}. Check the input tables and the columns "
            "named in the config (run again with --debug for the full trace)."
        ) from exc
