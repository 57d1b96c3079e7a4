"""The ``agreement:`` section of a job: how past experiments are read to say whether an offline
metric predicted the release (``ndcg-spark agreement``, :mod:`ndcg_spark.agreement`).

>>> AgreementSpec.from_dict(None)
AgreementSpec(min_experiments=8, ci_level=0.95, replicates=2000, seed=0, mean='macro', pool_contracts=False, metrics=None, outcomes=None)
>>> AgreementSpec.from_dict({"min_experiments": 2})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: agreement.min_experiments: must be an integer >= 3, got 2
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ndcg_spark.config.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_SEED,
    MAX_REPLICATES,
    MIN_REPLICATES,
    bootstrap_fields,
    require_level,
    require_replicates,
    require_seed,
)
from ndcg_spark.config.checks import is_int, require_choice, require_mapping, require_text
from ndcg_spark.errors import ContractError

__all__ = ["AgreementSpec", "DEFAULT_MIN_EXPERIMENTS", "MEANS"]

#: below this many experiments a metric × K × outcome gets its counts and no statistic
DEFAULT_MIN_EXPERIMENTS = 8
#: the comparison's deltas an experiment's offline side is read from
MEANS = ("macro", "weighted")
#: the bootstrap of the rank correlation resamples experiments (cheap: numpy on the driver)
DEFAULT_AGREEMENT_REPLICATES = 2000
_KEYS = {"min_experiments", "bootstrap", "mean", "pool_contracts", "metrics", "outcomes"}


@dataclass(frozen=True)
class AgreementSpec:
    """What :func:`~ndcg_spark.agreement.summary.agreement_summary` computes over an experiment history.

    Parameters
    ----------
    min_experiments : below this many experiments (of a metric × K × outcome) the summary gives the
        counts and says there are too few: no statistic (default 8, at least 3).
    ci_level : the level of the Wilson interval of the directional agreement and of the bootstrap
        interval of the rank correlation (YAML ``bootstrap.level``).
    replicates, seed : the bootstrap over experiments of the rank correlation (YAML
        ``bootstrap.replicates`` / ``bootstrap.seed``; 0 replicates: no interval).
    mean : the comparison's ``macro`` (default) or traffic-``weighted`` delta.
    pool_contracts : False (default): experiments of different contract fingerprints are summarized
        apart, one group per fingerprint; True pools them into one group (``contract_fingerprint``
        ``*``).
    metrics : the offline metrics read (default: every declared metric the comparison table holds,
        not the unjudged what-ifs).
    outcomes : the release guardrails read (default: every release guardrail of the table).
    """

    min_experiments: int = DEFAULT_MIN_EXPERIMENTS
    ci_level: float = DEFAULT_LEVEL
    replicates: int = DEFAULT_AGREEMENT_REPLICATES
    seed: int = DEFAULT_SEED
    mean: str = "macro"
    pool_contracts: bool = False
    metrics: tuple[str, ...] | None = None
    outcomes: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not is_int(self.min_experiments) or self.min_experiments < 3:
            raise ContractError("agreement.min_experiments", f"must be an integer >= 3, got {self.min_experiments!r}")
        require_level(self.ci_level, "agreement.bootstrap.level")
        require_replicates(self.replicates, "agreement.bootstrap.replicates", minimum=MIN_REPLICATES,
                           maximum=MAX_REPLICATES, zero_means="no interval of the rank correlation")
        require_seed(self.seed, "agreement.bootstrap.seed")
        require_choice(self.mean, MEANS, "agreement.mean")
        if not isinstance(self.pool_contracts, bool):
            raise ContractError("agreement.pool_contracts", f"must be true or false, got {self.pool_contracts!r}")

    @classmethod
    def from_dict(cls, data: Any) -> AgreementSpec:
        """The spec of a YAML ``agreement:`` mapping; ``None`` (no section) gives the defaults."""
        section = dict(require_mapping(data, "agreement", _KEYS))
        fields: dict[str, Any] = bootstrap_fields(section.pop("bootstrap", None), "agreement.bootstrap",
                                                  ("level", "replicates", "seed"))
        for key in ("metrics", "outcomes"):
            if section.get(key) is not None:
                section[key] = _names(section[key], f"agreement.{key}")
        return cls(**section, **fields)

    @property
    def mean_column(self) -> str:
        """The comparison table's delta column read: ``delta_macro`` or ``delta_weighted``."""
        return f"delta_{self.mean}"


def _names(value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise ContractError(path, f"must be a non-empty list of names, got {value!r}")
    return tuple(require_text(v, f"{path}[{i}]") for i, v in enumerate(value))
