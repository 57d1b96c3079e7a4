"""The ``judging:`` section of a job: what ``ndcg-spark judge-next`` plans judgments for (pure Python).

A judging plan picks the unjudged documents whose judgment moves a **target** the most: one
system's mean NDCG at one K (``aggregate``) or the delta of the comparison's two rankers at one K
(``compare``, the systems of the ``compare:`` section). :mod:`ndcg_spark.judging` computes it.

>>> JudgingSpec.from_dict({"target": "compare", "budget": 200, "k": 10})
JudgingSpec(target='compare', budget=200, k=10, mean='macro', system=None, metric='ndcg')
>>> JudgingSpec.from_dict({"budget": 0})
Traceback (most recent call last):
...
ndcg_spark.errors.ContractError: judging.budget: must be an integer >= 1, got 0
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ndcg_spark.config.checks import require_choice, require_int, require_mapping, require_text
from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import ContractError
from ndcg_spark.measures import LEGACY_METRIC

__all__ = ["DEFAULT_BUDGET", "MEANS", "MILESTONES", "TARGETS", "JudgingSpec", "describe_target"]

#: what a plan settles: one system's mean NDCG, or the delta of two rankers
TARGETS = ("aggregate", "compare")
#: which mean of the target: each request once, or by its traffic weight
MEANS = ("macro", "weighted")
#: documents a plan proposes when neither the YAML nor ``--budget`` says
DEFAULT_BUDGET = 1000
#: the plan lengths the report and the CLI summary state the settled spread at
MILESTONES = (100, 500, 1000)


def describe_target(kind: str, systems: list[str] | tuple[str, ...], mean: str, k: int) -> str:
    """What a plan settles, in words.

    >>> describe_target("aggregate", ["hybrid"], "macro", 10), describe_target("compare", ["hybrid", "bm25"], "weighted", 5)
    ("hybrid's macro NDCG@10", 'the weighted delta hybrid - bm25 of NDCG@5')
    """
    if kind == "aggregate":
        return f"{systems[0]}'s {mean} NDCG@{k}"
    return f"the {mean} delta {systems[0]} - {systems[1]} of NDCG@{k}"


@dataclass(frozen=True)
class JudgingSpec:
    """The ``judging:`` section of the job YAML.

    Parameters
    ----------
    target : ``aggregate`` (one system's mean NDCG at ``k``) or ``compare`` (the mean per-request
        delta ``candidate - baseline`` of the ``compare:`` section's rankers at ``k``).
    budget : how many documents the plan proposes (one judgment each; a document every ranker
        shows is one judgment).
    k : the cutoff of the target; default the contract's largest.
    mean : ``macro`` (each request once) or ``weighted`` (by the request's traffic weight).
    system : the system of an ``aggregate`` target; default the ``compare:`` section's candidate,
        else the night's only system.
    metric : what the plan settles: ``ndcg``, the only metric planned (a plan ranks documents by
        how far their grade can move NDCG@K, docs/judging.md); another metric is refused by name.

    >>> JudgingSpec.from_dict({"metric": "precision"})
    Traceback (most recent call last):
    ...
    ndcg_spark.errors.ContractError: judging.metric: is 'precision': judge-next plans NDCG only (a plan ranks documents by how far their grade can move NDCG@K, docs/judging.md); leave judging.metric out or set it to ndcg
    """

    target: str = "aggregate"
    budget: int = DEFAULT_BUDGET
    k: int | None = None
    mean: str = "macro"
    system: str | None = None
    metric: str = LEGACY_METRIC

    def __post_init__(self) -> None:
        if self.metric != LEGACY_METRIC:
            raise ContractError("judging.metric", f"is {self.metric!r}: judge-next plans NDCG only (a plan ranks "
                                "documents by how far their grade can move NDCG@K, docs/judging.md); leave "
                                "judging.metric out or set it to ndcg")
        require_choice(self.target, TARGETS, "judging.target")
        require_int(self.budget, "judging.budget", minimum=1)
        if self.k is not None:
            require_int(self.k, "judging.k", minimum=1)
        require_choice(self.mean, MEANS, "judging.mean")
        if self.system is not None:
            require_text(self.system, "judging.system")

    @classmethod
    def from_dict(cls, data: Any) -> JudgingSpec:
        """The spec of a YAML ``judging:`` mapping; ``None`` (no section) gives the defaults."""
        return cls(**dict(require_mapping(data, "judging", {"target", "budget", "k", "mean", "system", "metric"})))

    def narrowed(self, *, budget: int | None = None, target: str | None = None, k: int | None = None) -> JudgingSpec:
        """The spec with the command line's ``--budget``, ``--target`` and ``--k`` (None: keep)."""
        given = {"budget": budget, "target": target, "k": k}
        return replace(self, **{name: value for name, value in given.items() if value is not None})

    def cutoff(self, contract: Contract) -> int:
        """The target's K: ``k`` when given (one of the contract's cutoffs), else the largest.

        >>> JudgingSpec(k=3).cutoff(Contract(k=[3, 10])), JudgingSpec().cutoff(Contract(k=[3, 10]))
        (3, 10)
        """
        if self.k is None:
            return contract.max_k
        if self.k not in contract.k:
            raise ContractError("judging.k", f"must be one of the contract's cutoffs {list(contract.k)}, got {self.k!r}")
        return self.k
