"""Where the peers' published test data lies, and what a test that reads it does without it.

trec_eval's ``test/`` folder (its inputs and the outputs its Makefile's ``quicktest`` publishes) is
not ours to commit: it is read from ``TREC_EVAL_TEST_DIR`` when set, else from
``../shared/peers/trec_eval_test`` beside the checkout. A checkout without it skips the tests that
read it -- except where ``NDCG_REQUIRE_PEERS=1`` (``.ci/run`` sets it): there the same tests run and
fail on the missing files, so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _suite_dir() -> Path:
    """``TREC_EVAL_TEST_DIR`` when set, else ``../shared/peers/trec_eval_test`` beside the checkout."""
    named = os.environ.get("TREC_EVAL_TEST_DIR")
    return Path(named) if named else Path(__file__).resolve().parents[2] / "shared" / "peers" / "trec_eval_test"


#: trec_eval's test/ folder
TREC_EVAL_SUITE = _suite_dir()

#: peers' files required: a missing one fails the tests that read it instead of skipping them
REQUIRED = os.environ.get("NDCG_REQUIRE_PEERS") == "1"

#: the mark of a test that reads trec_eval's test/ files
needs_trec_eval_suite = pytest.mark.skipif(
    not (TREC_EVAL_SUITE / "out.test.aq").is_file() and not REQUIRED,
    reason=f"trec_eval's test/ folder is not at {TREC_EVAL_SUITE} (its files are not committed here): set "
           "TREC_EVAL_TEST_DIR to a checkout's test/ folder",
)
