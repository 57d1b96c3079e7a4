"""Errors a user can act on.

Every error the library raises on purpose derives from :class:`NdcgError`; the CLI turns
them into one readable paragraph and a non-zero exit instead of a stack trace.
"""

from __future__ import annotations


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
