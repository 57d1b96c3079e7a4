"""What a night read, recorded -- and read again.

Stage 1 reads each input through :func:`read_input`, which says what it read (an
:class:`InputRead`, written into the run's metadata row, ``inputs``):

- a **Delta or Iceberg table** (declared ``format: delta|iceberg``, or a catalog table whose
  provider is one of them, as every Unity Catalog table is Delta): its current version -- Delta's
  table version, Iceberg's snapshot id -- is looked up first and the table read *at that version*
  (``… VERSION AS OF n``), so what is recorded is exactly what was scored, whatever commits land
  meanwhile;
- anything else (Parquet or CSV paths and catalog tables, TREC files): a **fingerprint of the
  listing** -- SHA-256 over every data file's path, size and modification time -- with the number
  of files and their bytes. Files keep no versions: the fingerprint says *whether* they changed.

Later, :func:`changes_since` says whether a night's inputs changed since it read them (``ndcg-spark
runs``), and :func:`read_recorded` reads an input exactly as a night read it, for a replay
(``ndcg-spark run --replay RUN_ID``): a versioned table at its recorded version, whose data files
must all still be there (Delta's ``VACUUM`` and Iceberg's ``expire_snapshots`` remove an old
version's), and files only while their fingerprint is unchanged; otherwise
:class:`~ndcg_spark.errors.ReplayRefused`, before anything is written.

The statements that take no parameter here (Delta's ``DESCRIBE HISTORY``, ``VERSION AS OF``) get
the table's name checked and quoted (:func:`~ndcg_spark.storage.tables.quoted_name`) and the version as
the integer it was recorded as.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.compat import parameterized_sql
from ndcg_spark.errors import ContractError, InputError, ReplayRefused, describe_spark_error
from ndcg_spark.config.job import JobConfig, Source
from ndcg_spark.storage.formats import format_named, versioned_names
from ndcg_spark.storage.io import read_source, read_written
from ndcg_spark.storage.tables import current_version, quoted_name

__all__ = ["InputRead", "Replay", "changes_since", "read_input", "read_recorded", "recorded_inputs", "replay_plan"]

#: how many hex digits of the listing's SHA-256 are kept
FINGERPRINT_DIGITS = 16


@dataclass(frozen=True)
class InputRead:
    """One input as a run read it: a row of the run-metadata table's ``inputs``
    (:data:`~ndcg_spark.aggregation.columns.INPUT_READ_SCHEMA`, in this field order)."""

    #: ``inputs.candidates``, ``inputs.judgments`` or ``attributes``
    role: str
    #: where from, readable (``table lake.ndcg.candidates``, ``parquet /data/judgments``)
    source: str
    table: str | None
    path: str | None
    #: ``delta`` or ``iceberg`` when versioned, else how the files were read (``parquet``, ``csv`` …)
    format: str
    #: the Delta table version or Iceberg snapshot id read (None: files, or a table with no commit yet)
    version: int | None = None
    #: files only: the listing's fingerprint, the number of data files and their bytes
    fingerprint: str | None = None
    files: int | None = None
    bytes: int | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> InputRead:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    def as_row(self) -> tuple:
        return astuple(self)

    @property
    def versioned(self) -> bool:
        return self.format in versioned_names()

    def origin(self) -> Source:
        """The input's :class:`~ndcg_spark.config.job.Source`, to read it again."""
        return Source(path=self.path, table=self.table, format=self.format if self.path or self.versioned else "parquet")

    def state(self) -> str:
        """What was read, in words: ``delta version 3``, ``iceberg snapshot 4410…``, ``12 files, 3,456 bytes, fingerprint …``."""
        if self.versioned:
            kind = format_named(self.format).version_word
            return f"{self.format} {kind} {self.version}" if self.version is not None else f"{self.format}, no commit yet"
        return f"{self.files} files, {self.bytes:,} bytes, fingerprint {self.fingerprint}"


def read_input(spark: SparkSession, source: Source, role: str, trailing_fields: str = "refuse"
               ) -> tuple[DataFrame, InputRead]:
    """Read an input for a run (as :func:`~ndcg_spark.storage.io.read_source`), pinned to what is
    recorded: a Delta or Iceberg table at its current version, else the files listed once."""
    df = read_source(spark, source, role, trailing_fields=trailing_fields)
    fmt = versioned_format(spark, source)
    if fmt is None:
        fingerprint, files, size = listing(spark, df)
        return df, InputRead(role, source.describe(), source.table, source.path, source.format, None, fingerprint,
                             files, size)
    version = current_version(spark, source, fmt)
    read = InputRead(role, source.describe(), source.table, source.path, fmt, version)
    return (df if version is None else _at_version(spark, read)), read


def read_recorded(spark: SparkSession, read: InputRead, run_id: str, trailing_fields: str = "refuse") -> DataFrame:
    """The input exactly as run ``run_id`` read it, or :class:`~ndcg_spark.errors.ReplayRefused`
    (module docstring) -- nothing else is read or written then."""
    where = f"{read.role}: {read.source} as run {run_id} read it ({read.state()})"
    if not read.versioned:
        df = read_source(spark, read.origin(), read.role, trailing_fields=trailing_fields)
        fingerprint, files, size = listing(spark, df)
        if fingerprint != read.fingerprint:
            raise ReplayRefused(
                f"replay: {where} changed since: it holds {files} files, {size:,} bytes, fingerprint {fingerprint} "
                "now. Plain files keep no versions, so that night cannot be replayed on its inputs (a Delta or "
                "Iceberg input can be)."
            )
        return df
    if read.version is None:
        raise ReplayRefused(f"replay: {where}: the table had no commit then, so there is no version to read")
    try:
        df = _at_version(spark, read)
        files = sorted(df.inputFiles())  # Delta lists the version's files; Iceberg checked the snapshot above
        if files:
            spark.read.format("binaryFile").load(files).select("path").limit(1).collect()
    except Exception as exc:  # noqa: BLE001 - Spark's word for it varies: an analysis error, Iceberg's own
        if describe_spark_error(exc) is None:
            raise
        raise ReplayRefused(
            f"replay: {where} can no longer be read: {_first_line(exc)}. Its files were removed since (Delta's "
            "VACUUM, Iceberg's expire_snapshots), so that night cannot be replayed on its inputs."
        ) from None
    return df


@dataclass(frozen=True)
class Replay:
    """A replay of run ``run_id`` on the inputs it recorded (``ndcg-spark run --replay RUN_ID``)."""

    run_id: str
    #: the recorded inputs by role, each checked to be readable as it was read
    inputs: Mapping[str, InputRead]
    #: the contract the run was scored under (the YAML's must resolve to it)
    contract_fingerprint: str


def replay_plan(spark: SparkSession, config: JobConfig, run_id: str) -> Replay:
    """What a replay of ``run_id`` reads: its recorded inputs (its run-metadata row), each checked
    now (:func:`read_recorded`: refused when a version is gone or files changed), and the YAML must
    read the same inputs. Nothing is written here."""
    metadata = config.output("run_metadata")
    if metadata is None:
        raise ContractError("outputs.run_metadata", "is required to replay a run: it holds what the run read")
    rows = read_written(spark, metadata, run_id, merge_schema=True)
    row = None if rows is None or "inputs" not in rows.columns else rows.select("contract_fingerprint", "inputs").first()
    if row is None or row.inputs is None:
        raise InputError(
            f"replay: run {run_id!r} recorded no inputs in the run-metadata table ({metadata.describe()}): a night "
            "records them when `run` writes its stage 1 and stage 2 (not `aggregate` alone, nor an ndcg-spark "
            "before lineage)"
        )
    reads = {r.role: r for r in (InputRead.from_row(i.asDict()) for i in row.inputs)}
    configured = {"inputs.candidates"} | ({"inputs.judgments"} if config.judgments else set()) | (
        {"attributes"} if config.attributes.source else set())
    if set(reads) != configured:
        raise InputError(
            f"replay: run {run_id!r} read {', '.join(sorted(reads))}; this YAML reads {', '.join(sorted(configured))}: "
            "replay it with the YAML it ran under"
        )
    for read in reads.values():
        read_recorded(spark, read, run_id)
    return Replay(run_id, reads, row.contract_fingerprint)


def recorded_inputs(spark: SparkSession, metadata: Source, run_ids: Iterable[str]) -> dict[str, tuple[InputRead, ...] | None]:
    """The inputs each run recorded in the run-metadata table ``metadata`` (None: the run has no
    row there, or recorded none -- stage 2 alone, or an older ndcg-spark)."""
    wanted = sorted(set(run_ids))
    found: dict[str, tuple[InputRead, ...] | None] = dict.fromkeys(wanted)
    table = read_written(spark, metadata, merge_schema=True)
    if table is None or "inputs" not in table.columns or not wanted:
        return found
    rows = table.filter(F.col("run_id").isin(wanted)).select("run_id", "inputs").collect()
    for row in rows:
        if row.inputs is not None:
            found[row.run_id] = tuple(InputRead.from_row(i.asDict()) for i in row.inputs)
    return found


def changes_since(spark: SparkSession, reads: Sequence[InputRead], now: dict[tuple, str] | None = None) -> list[str]:
    """The inputs of ``reads`` whose state differs now from what the run read, each in words
    (``inputs.candidates (table …): delta version 3 then, delta version 5 now``); [] when none did.
    ``now`` caches each source's present state across calls (``ndcg-spark runs``: many nights, a
    few inputs)."""
    now = {} if now is None else now
    changed = []
    for read in reads:
        key = (read.table, read.path, read.format)
        if key not in now:
            now[key] = _present_state(spark, read)
        if now[key] != read.state():
            changed.append(f"{read.role} ({read.source}): {read.state()} then, {now[key]} now")
    return changed


def _present_state(spark: SparkSession, read: InputRead) -> str:
    try:
        if read.versioned:
            version = current_version(spark, read.origin(), read.format)
            return InputRead(read.role, read.source, read.table, read.path, read.format, version).state()
        fingerprint, files, size = listing(spark, read_source(spark, read.origin(), read.role))
    except (InputError, AnalysisException) as exc:
        return f"unreadable ({_first_line(exc)})"
    return InputRead(read.role, read.source, read.table, read.path, read.format, None, fingerprint, files, size).state()


def versioned_format(spark: SparkSession, source: Source) -> str | None:
    """``delta`` or ``iceberg`` when ``source`` is such a table -- declared, or a catalog table whose
    provider is one -- else None."""
    if source.kind.versioned:
        return source.format
    if source.table is None:
        return None
    rows = parameterized_sql(spark, "DESCRIBE TABLE EXTENDED IDENTIFIER(:table)", {"table": source.table}).collect()
    provider = next((str(r[1]).strip().lower() for r in rows if str(r[0]).strip() == "Provider"), None)
    return provider if provider in versioned_names() else None


def listing(spark: SparkSession, df: DataFrame) -> tuple[str, int, int]:
    """The fingerprint of the files ``df`` reads (every data file's path, size and modification
    time, in path order), their number and their bytes."""
    files = sorted(set(df.inputFiles()))
    rows = []
    if files:
        listed = spark.read.format("binaryFile").load(files)
        rows = sorted(tuple(r) for r in listed.select("path", "length", F.unix_millis("modificationTime")).collect())
    text = "\n".join(f"{path}\t{size}\t{modified}" for path, size, modified in rows)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_DIGITS]
    return digest, len(rows), sum(r[1] for r in rows)


def _at_version(spark: SparkSession, read: InputRead) -> DataFrame:
    """The versioned table of ``read`` as of its version (both formats, Spark 3.5 and 4.x alike)."""
    return format_named(read.format).at_version(spark, quoted_name(read.origin()), read.version)


def _first_line(exc: BaseException) -> str:
    text = (describe_spark_error(exc) or str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__
