"""The job configuration: a YAML file under ``conf/`` loaded into frozen, validated dataclasses.

The YAML carries a ``version``; every error names the dotted path of the bad field. Only
``yaml.safe_load`` is used. Table and column names are validated as identifiers. A relative path
resolves against the YAML file's own folder (``version: 2``, the convention of every tool that
reads a config file: ``eval.yaml`` beside ``results.test`` says ``path: results.test``); a
``version: 1`` file's resolve against its folder's parent, as before, with a warning that says how
to move to version 2 (:data:`PATH_RULES`).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from pathlib import Path
from typing import Any

import yaml

from ndcg_spark.config.aggregate_spec import AggregateSpec
from ndcg_spark.config.attributes import Attributes
from ndcg_spark.config.compare_spec import CompareSpec
from ndcg_spark.config.checks import require_choice, require_int, require_mapping, require_text, validate_identifier
from ndcg_spark.config.contract import Contract
from ndcg_spark.config.guardrail_spec import GuardrailSpec
from ndcg_spark.config.judging_spec import JudgingSpec
from ndcg_spark.config.publishing_spec import PublishingSpec
from ndcg_spark.config.report_spec import ReportSpec
from ndcg_spark.config.trend_spec import TrendSpec
from ndcg_spark.config.agreement_spec import AgreementSpec
from ndcg_spark.config.validation_spec import ValidationSpec
from ndcg_spark.errors import ContractError
from ndcg_spark.storage.formats import TableFormat, format_named, formats_for

#: the config file format written today; :data:`PATH_RULES` lists those still read
CONFIG_VERSION = 2
#: each readable version -> where its relative paths start (said in every path error)
PATH_RULES = {
    1: "version 1 resolves a relative path against the YAML's folder's parent",
    2: "a relative path resolves against the YAML's own folder",
}
_LOG = logging.getLogger(__name__)
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")
#: what a run id may hold: letters, digits and ``_.:-`` (so it can stand as a quoted SQL literal)
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def validate_run_id(value: Any, path: str = "run_id") -> str:
    if not isinstance(value, str) or not RUN_ID_PATTERN.match(value):
        raise ContractError(
            path, f"must be 1-128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit; got {value!r}"
        )
    return value


def default_run_id(today: dt.date | None = None) -> str:
    """The nightly default: the UTC date, so re-running the same night replaces that night."""
    return (today or dt.datetime.now(dt.timezone.utc).date()).isoformat()


_SECTIONS = ("aggregate", "compare", "validation", "report", "trend", "guardrails", "publishing", "judging",
             "agreement")
"""Sections parsed into their specs when the YAML is loaded (the typed fields of :class:`JobConfig`)."""
_OUTPUTS = {"per_request", "aggregate", "audit", "run_metadata", "run_status", "run_attempts", "comparison",
            "quarantine", "trend", "guardrails", "report_dir", "judging_plan", "judging_dir", "agreement",
            "agreement_history"}
#: the outputs that are local folders, with their defaults (beside the job's relative paths)
_FOLDERS = {"report_dir": "reports", "judging_dir": "judging"}


def _top_level(data: Any) -> Mapping[str, Any]:
    """The document as a mapping of known sections, of the supported ``version``."""
    known = {"version", "contract", "inputs", "attributes", "system", "pool_version", "outputs", "run_id", "spark"}
    top = require_mapping(data, "config", known | set(_SECTIONS))
    version = top.get("version")
    if isinstance(version, bool) or version not in PATH_RULES:
        raise ContractError("version", f"must be {CONFIG_VERSION} (the config file format; 1 is still read), "
                                       f"got {version!r}")
    return top


def _relative_paths(top: Mapping[str, Any]) -> list[str]:
    """The dotted keys of the document's relative local paths (those its version moves): a
    ``path``, a ``…_dir``, or an input or output given as a bare string.

    >>> _relative_paths({"inputs": {"candidates": "c", "judgments": {"path": "/abs"}},
    ...                  "outputs": {"report_dir": "r", "aggregate": {"table": "db.t"}}})
    ['inputs.candidates', 'outputs.report_dir']
    """
    found = []

    def visit(value: Any, key: str) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                visit(v, f"{key}.{k}" if key else str(k))
            return
        parts = key.split(".")
        is_path = parts[-1] == "path" or parts[-1].endswith("_dir") or (len(parts) == 2 and parts[0] in ("inputs", "outputs"))
        if is_path and isinstance(value, str) and "://" not in value and not Path(value).is_absolute():
            found.append(key)

    visit({k: v for k, v in top.items() if k != "contract"}, "")
    return found


def _optional_text(top: Mapping[str, Any], name: str) -> str | None:
    value = top.get(name)
    if value is not None and not isinstance(value, str):
        raise ContractError(name, f"must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class Source:
    """Where a table comes from: a ``path`` (Parquet, CSV or a Delta table; for ``inputs.candidates``
    also a TREC run, ``trec_run``, for ``inputs.judgments`` TREC qrels, ``trec_qrels``) or a catalog
    ``table`` (Parquet, CSV, or, as the warehouse keeps them, Delta or Iceberg: ``format`` is passed
    to the writer)."""

    path: str | None = None
    table: str | None = None
    format: str = "parquet"

    @classmethod
    def parse(cls, value: Any, path: str, base: Path | None) -> Source | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = {"path": value}
        data = require_mapping(value, path, {"path", "table", "format"})
        src_path, table = data.get("path"), data.get("table")
        if (src_path is None) == (table is None):
            raise ContractError(path, "needs exactly one of path or table")
        if table is not None and (not isinstance(table, str) or not _TABLE_NAME.match(table)):
            raise ContractError(f"{path}.table", f"must be [catalog.][database.]table of identifiers, got {table!r}")
        fmt = require_choice(data.get("format", "parquet"), formats_for(path), f"{path}.format")
        kind = format_named(fmt)
        if table is not None and not kind.at_table:
            raise ContractError(f"{path}.format", f"{fmt} reads a file: give a path, not a table")
        if table is None and not kind.at_path:
            raise ContractError(f"{path}.format", f"{fmt} tables live in a catalog: give a table, not a path")
        if src_path is not None:
            src_path = _resolve(require_text(src_path, f"{path}.path"), base)
        return cls(path=src_path, table=table, format=fmt)

    @property
    def kind(self) -> TableFormat:
        """The format object (:mod:`ndcg_spark.storage.formats`) that reads and writes it."""
        return format_named(self.format)

    @property
    def table_name(self) -> str | None:
        """The name Spark reads and writes the table by: the catalog ``table``, or a Delta ``path``
        as Delta's path identifier; None for a Parquet, CSV or TREC path.

        >>> Source(path="/w/per_request", format="delta").table_name
        'delta.`/w/per_request`'
        """
        return self.kind.table_name(self.table, self.path)

    def describe(self) -> str:
        return f"table {self.table}" if self.table else f"{self.format} {self.path}"

    def beside(self, name: str) -> Source:
        """The table ``name`` in this one's folder (a path) or database (a table), in this one's
        format when that is Delta or Iceberg, else Parquet.

        >>> Source(path="/w/per_request").beside("run_status"), Source(table="c.db.t", format="delta").beside("run_status")
        (Source(path='/w/run_status', table=None, format='parquet'), Source(path=None, table='c.db.run_status', format='delta'))
        """
        fmt = self.format if self.kind.versioned else "parquet"
        if self.table is not None:
            return Source(table=".".join([*self.table.split(".")[:-1], name]), format=fmt)
        return Source(path=f"{self.path.rstrip('/').rsplit('/', 1)[0]}/{name}", format=fmt)


def _resolve(p: str, base: Path | None) -> str:
    if "://" in p or base is None or Path(p).is_absolute():
        return p
    return str((base / p).resolve())


@dataclass(frozen=True)
class AttributesConfig:
    """The ``attributes:`` section: where request attributes come from (``source``; None: the
    candidates' own columns) and what they are (:class:`~ndcg_spark.config.attributes.Attributes`
    without its table: the weight, its default, the slices)."""

    source: Source | None = None
    spec: Attributes = field(default_factory=Attributes)

    @property
    def slices(self) -> tuple[str, ...]:
        return self.spec.slices

    def of(self, table: Any) -> Attributes:
        """The :class:`~ndcg_spark.config.attributes.Attributes` of this section over ``table`` (the
        attributes input as read, or None)."""
        return replace(self.spec, table=table)

    @classmethod
    def parse(cls, value: Any, base: Path | None) -> AttributesConfig:
        attrs = require_mapping(value, "attributes", {"path", "table", "format", "weight", "default_weight", "slices"})
        source = Source.parse({k: attrs[k] for k in ("path", "table", "format") if k in attrs} or None, "attributes", base)
        slices = attrs.get("slices", []) or []
        if not isinstance(slices, list):
            raise ContractError("attributes.slices", f"must be a list of column names, got {slices!r}")
        weight = attrs.get("weight")
        spec = Attributes()
        default_weight = attrs.get("default_weight", spec.default_weight)
        if default_weight is not None and (
            isinstance(default_weight, bool) or not isinstance(default_weight, (int, float)) or default_weight < 0
        ):
            raise ContractError("attributes.default_weight", f"must be a non-negative number or null, got {default_weight!r}")
        return cls(source=source, spec=Attributes(
            weight=None if weight is None else validate_identifier(weight, "attributes.weight"),
            default_weight=None if default_weight is None else float(default_weight),
            slices=tuple(validate_identifier(s, f"attributes.slices[{i}]") for i, s in enumerate(slices)),
        ))


@dataclass(frozen=True)
class SparkConfig:
    """The ``spark:`` section: the local master, warehouse folder and extra settings (console script)."""

    master: str = "local[*]"
    warehouse_dir: str | None = None
    shuffle_partitions: int | None = None
    conf: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, value: Any, base: Path | None) -> SparkConfig:
        spark = require_mapping(value, "spark", {"master", "warehouse_dir", "shuffle_partitions", "conf"})
        raw_conf = spark.get("conf")
        conf = require_mapping(raw_conf, "spark.conf", set(raw_conf) if isinstance(raw_conf, Mapping) else set())
        shuffle = spark.get("shuffle_partitions")
        if shuffle is not None:
            require_int(shuffle, "spark.shuffle_partitions", minimum=1)
        warehouse = spark.get("warehouse_dir")
        return cls(
            master=str(spark.get("master", "local[*]")),
            warehouse_dir=None if warehouse is None else _resolve(str(warehouse), base),
            shuffle_partitions=shuffle,
            conf=tuple(sorted((str(k), str(v)) for k, v in conf.items())),
        )


@dataclass(frozen=True)
class JobConfig:
    """A whole job: contract, inputs, outputs and the local Spark settings."""

    contract: Contract = field(default_factory=Contract)
    candidates: Source | None = None
    judgments: Source | None = None
    attributes: AttributesConfig = field(default_factory=AttributesConfig)
    system: str | None = None
    pool_version: str | None = None
    per_request: Source | None = None
    run_id: str | None = None
    spark: SparkConfig = field(default_factory=SparkConfig)
    source_file: str | None = None
    #: the folder relative paths start from (None: the working folder) and the file's ``version``
    base: Path | None = None
    version: int | None = None
    #: the contract's preset name: a TREC file is read as its tool reads it (trailing fields)
    preset: str | None = None
    #: ``outputs:`` as written (tables parsed by :meth:`output`, folders by :meth:`output_folder`)
    outputs: Mapping[str, Any] = field(default_factory=dict)
    #: every section, parsed when the YAML is loaded (a typo anywhere fails at once, whatever the command)
    validation_spec: ValidationSpec = field(default_factory=ValidationSpec)
    aggregate: AggregateSpec = field(default_factory=AggregateSpec)
    #: None: the job declares no ``compare:``
    compare: CompareSpec | None = None
    report: ReportSpec = field(default_factory=ReportSpec)
    trend: TrendSpec = field(default_factory=TrendSpec)
    judging: JudgingSpec = field(default_factory=JudgingSpec)
    #: None: the job declares no ``guardrails:``
    guardrails: GuardrailSpec | None = None
    publishing_spec: PublishingSpec = field(default_factory=PublishingSpec)
    agreement: AgreementSpec = field(default_factory=AgreementSpec)

    @classmethod
    def from_yaml(cls, path: str | Path) -> JobConfig:
        path = Path(path)
        try:
            with open(path, encoding="utf-8") as fh:
                data = yaml.safe_load(fh)
        except FileNotFoundError:
            raise ContractError("--config", f"no such file: {path}") from None
        except yaml.YAMLError as exc:
            raise ContractError(str(path), f"is not valid YAML: {exc}") from None
        version = data.get("version") if isinstance(data, Mapping) else None
        folder = path.resolve().parent
        if version == 1 and isinstance(data, Mapping):
            relative = _relative_paths(data)
            if relative:
                _LOG.warning(
                    "%s: %s (%s); version %d resolves them against the YAML's own folder. To move: set `version: "
                    "%d` and put `../` before each relative path (%s), and nothing moves.",
                    path, PATH_RULES[1], folder.parent, CONFIG_VERSION, CONFIG_VERSION, ", ".join(relative))
        base = folder.parent if version == 1 else folder
        return cls.from_dict(data, base=base, source_file=str(path))

    @classmethod
    def from_dict(cls, data: Any, base: Path | None = None, source_file: str | None = None) -> JobConfig:
        """The job of a parsed YAML document; ``base`` is the folder relative paths start from."""
        top = _top_level(data)
        contract = Contract.from_dict(top.get("contract"))
        inputs = require_mapping(top.get("inputs"), "inputs", {"candidates", "judgments"})
        if "candidates" not in inputs:
            raise ContractError("inputs.candidates", "is required (a path or a table)")
        attributes = AttributesConfig.parse(top.get("attributes"), base)
        outputs = require_mapping(top.get("outputs"), "outputs", _OUTPUTS)
        spark = SparkConfig.parse(top.get("spark"), base)
        system, pool_version = (_optional_text(top, name) for name in ("system", "pool_version"))
        raw_contract = top.get("contract")
        config = cls(
            contract=contract,
            candidates=Source.parse(inputs["candidates"], "inputs.candidates", base),
            judgments=Source.parse(inputs.get("judgments"), "inputs.judgments", base),
            attributes=attributes,
            system=system,
            pool_version=pool_version,
            per_request=Source.parse(outputs.get("per_request"), "outputs.per_request", base),
            run_id=None if top.get("run_id") is None else validate_run_id(str(top["run_id"])),
            spark=spark,
            source_file=source_file,
            base=base,
            version=top.get("version"),
            preset=raw_contract.get("preset") if isinstance(raw_contract, Mapping) else None,
            outputs=MappingProxyType(dict(outputs)),
            validation_spec=ValidationSpec.from_dict(top.get("validation")),
            aggregate=AggregateSpec.from_dict(top.get("aggregate"), carried_slices=attributes.slices),
            compare=None if top.get("compare") is None else CompareSpec.from_dict(top["compare"]),
            report=ReportSpec.from_dict(top.get("report")),
            trend=TrendSpec.from_dict(top.get("trend")),
            judging=JudgingSpec.from_dict(top.get("judging")),
            guardrails=None if top.get("guardrails") is None else GuardrailSpec.from_dict(top["guardrails"]),
            publishing_spec=PublishingSpec.from_dict(top.get("publishing")),
            agreement=AgreementSpec.from_dict(top.get("agreement")),
        )
        config._check_outputs()
        return config

    def _check_outputs(self) -> None:
        """Every output the YAML names, checked with the rest: its tables, its folders, the
        quarantine a rule needs, the guardrails' headline and their inputs."""
        for name in sorted(_OUTPUTS - set(_FOLDERS)):
            self.output(name)
        for name in _FOLDERS:
            self.output_folder(name)
        self.validation()
        if self.guardrails is not None:
            self.guardrail_spec()
            self.guardrail_sources(self.guardrails)

    def path_rule(self) -> str:
        """Where this job's relative paths start, as a path error says it."""
        base, version = self.base, self.version
        if base is None:
            return "a relative path resolves against the working folder (the job was not read from a YAML file)"
        return f"{PATH_RULES.get(version, PATH_RULES[CONFIG_VERSION])}, {base}"

    def check_local_inputs(self) -> None:
        """Refuse, before Spark starts, an input path on this machine's file system that does not
        exist (``spark.master`` ``local…``: elsewhere a path without a scheme may be the cluster's
        default file system), naming the path it resolved and the rule."""
        if not self.spark.master.startswith("local"):
            return
        inputs = (("inputs.candidates", self.candidates), ("inputs.judgments", self.judgments),
                  ("attributes", self.attributes.source))
        for key, source in inputs:
            if source is None or source.path is None or "://" in source.path:
                continue
            if not Path(source.path).exists():
                raise ContractError(f"{key}.path", f"no such file or folder: {source.path} ({self.path_rule()})")

    def trailing_fields(self) -> str:
        """How a TREC input's fields past its format read: ``ignore`` (as trec_eval does) under the
        ``trec_eval`` preset, else ``refuse`` (:func:`~ndcg_spark.storage.io.read_source`)."""
        return "ignore" if self.preset == "trec_eval" else "refuse"

    def output(self, name: str) -> Source | None:
        """The output table ``outputs.<name>`` (a path resolved like every path, or a table), or None.
        ``run_metadata`` defaults to the table beside ``outputs.aggregate`` (stage 2 writes both).

        >>> JobConfig.from_dict({"version": 2, "inputs": {"candidates": "c"},
        ...                      "outputs": {"aggregate": {"path": "/w/aggregate"}}}).output("run_metadata")
        Source(path='/w/run_metadata', table=None, format='parquet')
        """
        source = Source.parse(self.outputs.get(name), f"outputs.{name}", self.base)
        if source is None and name == "run_metadata" and self.output("aggregate") is not None:
            return self.output("aggregate").beside("run_metadata")
        if source is None and name == "agreement_history" and self.output("agreement") is not None:
            return self.output("agreement").beside("agreement_history")
        return source

    def output_folder(self, name: str) -> Path:
        """The local folder ``outputs.<name>`` (a relative one resolved like every path), by default
        its :data:`_FOLDERS` name resolved so: where the report's pages and the judges' files go.

        >>> JobConfig.from_dict({"version": 1, "inputs": {"candidates": "c"}, "outputs": {"report_dir": "r"}},
        ...                     base=Path("/job")).output_folder("report_dir")
        PosixPath('/job/r')
        """
        value = self.outputs.get(name, _FOLDERS[name])
        if not isinstance(value, str) or not value or "://" in value:
            raise ContractError(f"outputs.{name}", f"must be a local folder path, got {value!r}")
        path = Path(value)
        return path if path.is_absolute() or self.base is None else (self.base / path).resolve()

    def writes_stage2(self) -> bool:
        """Whether ``run`` runs stage 2 too: the job has an aggregate table (``outputs.aggregate``)."""
        return bool(self.outputs.get("aggregate"))

    def run_status(self) -> Source:
        """Where the run-status table lives (:mod:`ndcg_spark.publishing.status`): ``outputs.run_status``, else
        beside the per-request table (``<folder>/run_status`` for a path, ``<database>.run_status``
        for a table), in its format when that is Delta or Iceberg (so that the status row's commit
        is the format's too), else Parquet.

        >>> JobConfig.from_dict({"version": 1, "inputs": {"candidates": "c"},
        ...                      "outputs": {"per_request": {"table": "eval.per_request"}}}).run_status()
        Source(path=None, table='eval.run_status', format='parquet')
        >>> JobConfig.from_dict({"version": 1, "inputs": {"candidates": "c"},
        ...                      "outputs": {"per_request": {"path": "/w/per_request", "format": "delta"}}}).run_status()
        Source(path='/w/run_status', table=None, format='delta')
        """
        explicit = self.output("run_status")
        if explicit is not None:
            return explicit
        if self.per_request is None:
            raise ContractError("outputs.run_status", "cannot default without outputs.per_request; set it explicitly")
        return self.per_request.beside("run_status")

    def run_attempts(self) -> Source:
        """Where the run-attempts table lives (:mod:`ndcg_spark.publishing.attempts`): ``outputs.run_attempts``,
        else beside the run-status table (``<folder>/run_attempts`` for a path, ``<database>.run_attempts``
        for a table).

        >>> JobConfig.from_dict({"version": 1, "inputs": {"candidates": "c"},
        ...                      "outputs": {"run_status": {"table": "eval.status"}}}).run_attempts()
        Source(path=None, table='eval.run_attempts', format='parquet')
        """
        explicit = self.output("run_attempts")
        return explicit if explicit is not None else self.run_status().beside("run_attempts")

    def publishing(self) -> PublishingSpec:
        """The ``publishing:`` section as a :class:`~ndcg_spark.config.publishing_spec.PublishingSpec`:
        how long a ``running`` attempt holds its run without a heartbeat before another attempt may
        take it over, and how often it rewrites that heartbeat (:mod:`ndcg_spark.publishing.lease`).

        >>> JobConfig.from_dict({"version": 1, "inputs": {"candidates": "c"},
        ...                      "publishing": {"stale_after_minutes": 15}}).publishing().stale_after
        datetime.timedelta(seconds=900)
        """
        return self.publishing_spec

    def validation(self) -> tuple[ValidationSpec, Source | None]:
        """The ``validation:`` section as a :class:`~ndcg_spark.config.validation_spec.ValidationSpec`,
        and the quarantine target (``outputs.quarantine``), checked.

        A rule handled by quarantine needs ``outputs.quarantine``; this fails before any data is read.
        """
        spec, target = self.validation_spec, self.output("quarantine")
        if spec.quarantines and target is None:
            raise ContractError(
                "outputs.quarantine",
                "is required (a path or a table) when a validation rule is handled by quarantine "
                f"({', '.join(spec.quarantined_rules())})",
            )
        return spec, target

    def aggregate_spec(self) -> AggregateSpec:
        """The ``aggregate:`` section as an :class:`~ndcg_spark.config.aggregate_spec.AggregateSpec`
        (its default slices, and the slices it may name: ``attributes.slices``)."""
        return self.aggregate

    def compare_spec(self) -> CompareSpec:
        """The ``compare:`` section as a :class:`~ndcg_spark.config.compare_spec.CompareSpec` (an error
        naming it when the job declares none)."""
        return self.compare if self.compare is not None else CompareSpec.from_dict(None)

    def report_spec(self) -> ReportSpec:
        """The ``report:`` section as a :class:`~ndcg_spark.config.report_spec.ReportSpec`."""
        return self.report

    def trend_spec(self) -> TrendSpec:
        """The ``trend:`` section as a :class:`~ndcg_spark.config.trend_spec.TrendSpec`."""
        return self.trend

    def agreement_spec(self) -> AgreementSpec:
        """The ``agreement:`` section as an :class:`~ndcg_spark.config.agreement_spec.AgreementSpec`."""
        return self.agreement

    def judging_spec(self) -> JudgingSpec:
        """The ``judging:`` section as a :class:`~ndcg_spark.config.judging_spec.JudgingSpec`."""
        return self.judging

    def guardrail_spec(self) -> GuardrailSpec | None:
        """The ``guardrails:`` section as a :class:`~ndcg_spark.config.guardrail_spec.GuardrailSpec`, or
        None when the job declares no guardrails."""
        spec = self.guardrails
        if spec is None:
            return None
        spec.headline(self.contract)  # a headline the contract does not score: refused before any work
        return spec

    def guardrail_sources(self, spec: GuardrailSpec) -> tuple[Source | None, Source | None]:
        """Where the release's outcomes (``guardrails.release.outcomes``) and the documents table
        (``guardrails.documents``) are, resolved like every path."""
        return (Source.parse(spec.sources.get("outcomes"), "guardrails.release.outcomes", self.base),
                Source.parse(spec.sources.get("documents"), "guardrails.documents", self.base))
