"""The job configuration: a YAML file under ``conf/`` loaded into frozen, validated dataclasses.

The YAML carries a ``version``; every error names the dotted path of the bad field. Only
``yaml.safe_load`` is used. Table and column names are validated as identifiers; paths are
resolved relative to the YAML file's folder's parent when they are relative (so ``conf/local.yaml``
can say ``data/sample`` and mean ``<checkout>/data/sample``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ndcg_spark.config.contract import Contract, validate_identifier
from ndcg_spark.errors import ContractError

CONFIG_VERSION = 1
FORMATS = ("parquet", "csv")
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def validate_run_id(value: Any, path: str = "run_id") -> str:
    if not isinstance(value, str) or not _RUN_ID.match(value):
        raise ContractError(
            path, f"must be 1-128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit; got {value!r}"
        )
    return value


def default_run_id(today: dt.date | None = None) -> str:
    """The nightly default: the UTC date, so re-running the same night replaces that night."""
    return (today or dt.datetime.now(dt.timezone.utc).date()).isoformat()


def _mapping(value: Any, path: str, allowed: set[str]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ContractError(path, f"must be a mapping, got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise ContractError(f"{path}.{key}", f"is not a known field; known: {', '.join(sorted(allowed))}")
    return value


@dataclass(frozen=True)
class Source:
    """Where a table comes from: a ``path`` (Parquet or CSV) or a catalog ``table``."""

    path: str | None = None
    table: str | None = None
    format: str = "parquet"

    @classmethod
    def parse(cls, value: Any, path: str, base: Path | None) -> Source | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = {"path": value}
        data = _mapping(value, path, {"path", "table", "format"})
        src_path, table = data.get("path"), data.get("table")
        if (src_path is None) == (table is None):
            raise ContractError(path, "needs exactly one of path or table")
        if table is not None and (not isinstance(table, str) or not _TABLE_NAME.match(table)):
            raise ContractError(f"{path}.table", f"must be [catalog.][database.]table of identifiers, got {table!r}")
        fmt = data.get("format", "parquet")
        if fmt not in FORMATS:
            raise ContractError(f"{path}.format", f"must be one of {', '.join(FORMATS)}; got {fmt!r}")
        if src_path is not None:
            if not isinstance(src_path, str) or not src_path:
                raise ContractError(f"{path}.path", f"must be a non-empty string, got {src_path!r}")
            src_path = _resolve(src_path, base)
        return cls(path=src_path, table=table, format=fmt)

    def describe(self) -> str:
        return f"table {self.table}" if self.table else f"{self.format} {self.path}"


def _resolve(p: str, base: Path | None) -> str:
    if "://" in p or base is None or Path(p).is_absolute():
        return p
    return str((base / p).resolve())


@dataclass(frozen=True)
class AttributesConfig:
    source: Source | None = None
    weight: str | None = None
    default_weight: float | None = 1.0
    slices: tuple[str, ...] = ()


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    warehouse_dir: str | None = None
    shuffle_partitions: int | None = None
    conf: tuple[tuple[str, str], ...] = ()


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
    extra: tuple[tuple[str, Any], ...] = ()

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
        return cls.from_dict(data, base=path.resolve().parent.parent, source_file=str(path))

    @classmethod
    def from_dict(cls, data: Any, base: Path | None = None, source_file: str | None = None) -> JobConfig:
        top = _mapping(
            data,
            "config",
            {"version", "contract", "inputs", "attributes", "system", "pool_version", "outputs", "run_id", "spark",
             "aggregate", "compare", "validation", "report"},
        )
        version = top.get("version")
        if version != CONFIG_VERSION:
            raise ContractError("version", f"must be {CONFIG_VERSION} (the config file format), got {version!r}")
        contract = Contract.from_dict(top.get("contract"))
        inputs = _mapping(top.get("inputs"), "inputs", {"candidates", "judgments"})
        if "candidates" not in inputs:
            raise ContractError("inputs.candidates", "is required (a path or a table)")
        attrs = _mapping(top.get("attributes"), "attributes", {"path", "table", "format", "weight", "default_weight", "slices"})
        source = Source.parse({k: attrs[k] for k in ("path", "table", "format") if k in attrs} or None, "attributes", base)
        slices = attrs.get("slices", []) or []
        if not isinstance(slices, list):
            raise ContractError("attributes.slices", f"must be a list of column names, got {slices!r}")
        weight = attrs.get("weight")
        default_weight = attrs.get("default_weight", 1.0)
        if default_weight is not None and (
            isinstance(default_weight, bool) or not isinstance(default_weight, (int, float)) or default_weight < 0
        ):
            raise ContractError("attributes.default_weight", f"must be a non-negative number or null, got {default_weight!r}")
        attributes = AttributesConfig(
            source=source,
            weight=None if weight is None else validate_identifier(weight, "attributes.weight"),
            default_weight=None if default_weight is None else float(default_weight),
            slices=tuple(validate_identifier(s, f"attributes.slices[{i}]") for i, s in enumerate(slices)),
        )
        outputs = _mapping(top.get("outputs"), "outputs", {"per_request", "aggregate", "audit", "run_metadata", "run_status", "comparison", "quarantine", "report_dir"})
        spark = _mapping(top.get("spark"), "spark", {"master", "warehouse_dir", "shuffle_partitions", "conf"})
        conf = _mapping(spark.get("conf"), "spark.conf", set(spark.get("conf") or {}))
        shuffle = spark.get("shuffle_partitions")
        if shuffle is not None and (isinstance(shuffle, bool) or not isinstance(shuffle, int) or shuffle < 1):
            raise ContractError("spark.shuffle_partitions", f"must be an integer >= 1, got {shuffle!r}")
        run_id = top.get("run_id")
        for name in ("system", "pool_version"):
            value = top.get(name)
            if value is not None and not isinstance(value, str):
                raise ContractError(name, f"must be a string, got {value!r}")
        warehouse = spark.get("warehouse_dir")
        return cls(
            contract=contract,
            candidates=Source.parse(inputs["candidates"], "inputs.candidates", base),
            judgments=Source.parse(inputs.get("judgments"), "inputs.judgments", base),
            attributes=attributes,
            system=top.get("system"),
            pool_version=top.get("pool_version"),
            per_request=Source.parse(outputs.get("per_request"), "outputs.per_request", base),
            run_id=None if run_id is None else validate_run_id(str(run_id)),
            spark=SparkConfig(
                master=str(spark.get("master", "local[*]")),
                warehouse_dir=None if warehouse is None else _resolve(str(warehouse), base),
                shuffle_partitions=shuffle,
                conf=tuple(sorted((str(k), str(v)) for k, v in conf.items())),
            ),
            source_file=source_file,
            extra=tuple(
                (k, top[k]) for k in ("aggregate", "compare", "validation", "report") if k in top
            ) + (("outputs", dict(outputs)), ("base", str(base) if base else None)),
        )

    def section(self, name: str) -> Any:
        """A raw section that a later stage parses itself (``aggregate``, ``compare`` …)."""
        return dict(self.extra).get(name)
