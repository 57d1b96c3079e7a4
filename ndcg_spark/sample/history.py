"""The sample's past experiments: 24 rankers each compared with ``bm25`` on one small earlier night,
each with its own controlled release -- the history ``ndcg-spark agreement`` reads (SPEC §12).

A planted relation, so that the agreement has something to find:

- each ranker has two knobs, drawn per ranker: ``depth`` (how clearly it sees relevance over the
  whole pool: moves every rank, so NDCG at every K) and ``top`` (a push of each request's best
  document up or down the ranking: moves mainly *where the first relevant document is*, so
  reciprocal rank and NDCG at small K, much less NDCG@10);
- in its release, a session's task is completed with probability ``0.45 + 0.4 × RR`` of the arm's
  ranking of the session's request (the reciprocal rank of its first relevant document, grade ≥ 1):
  **task completion follows reciprocal rank**; the time to the procedure shrinks a little with it;
- each ranker's search latency is a factor of its own, drawn independently of both knobs:
  **latency follows no offline metric**; safety incidents are rare and equal in both arms.

The night is small (:data:`HISTORY_REQUESTS` requests, 8..16 fully judged candidates each) and its
rows are drawn in numpy on the driver from ``seed`` (no loop over rows) and written with pyarrow:
the history costs the demo its scoring and comparisons, not its generation.

>>> h = history(n_requests=40, n_rankers=3, sessions=200, seed=1)
>>> sorted(h.candidates["system"].unique()), len(h.releases), sorted(h.releases["ranker-02"]["arm"].unique())
(['bm25', 'ranker-01', 'ranker-02', 'ranker-03'], 3, ['bm25', 'ranker-02'])
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["BASELINE", "HISTORY_RANKERS", "HISTORY_REQUESTS", "HISTORY_SESSIONS", "History", "history",
           "ranker_names", "write_history"]

BASELINE = "bm25"
#: the history's size: rankers (experiments), requests of its night, sessions of each release
HISTORY_RANKERS, HISTORY_REQUESTS, HISTORY_SESSIONS = 24, 300, 3000
POOL_VERSION = "pool-history"
_GRADES, _GRADE_P = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.6, 0.22, 0.12, 0.06])
_TECHNICIANS = 120  # per release: half in each arm, the randomized unit
_COMPLETION_BASE, _COMPLETION_PER_RR = 0.45, 0.40
_REACHED, _TIME_MEDIAN_S, _LATENCY_MEDIAN_MS = 0.85, 90.0, 120.0
_SAFETY_RATE = 0.004


@dataclass(frozen=True)
class History:
    """The history's night (``candidates``, ``judgments`` as the sample's) and each ranker's release
    (``releases``: ranker -> sessions, the sample's release columns)."""

    candidates: pd.DataFrame
    judgments: pd.DataFrame
    releases: dict[str, pd.DataFrame]


def ranker_names(n: int = HISTORY_RANKERS) -> list[str]:
    """``ranker-01`` … the history's candidates (each compared with :data:`BASELINE`)."""
    return [f"ranker-{i + 1:02d}" for i in range(n)]


def history(n_requests: int = HISTORY_REQUESTS, n_rankers: int = HISTORY_RANKERS,
            sessions: int = HISTORY_SESSIONS, seed: int = 61) -> History:
    """The history's data, a pure function of its arguments (module docstring)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(12, 25, n_requests)
    request = np.repeat(np.arange(n_requests), sizes)
    slot = np.concatenate([np.arange(s) for s in sizes])
    grade = rng.choice(_GRADES, size=request.size, p=_GRADE_P)
    best = _first_of_request(request, -grade, slot) & (grade > 0)  # each request's best document
    doc_id = np.char.add("HIS-", np.char.zfill((request * 100 + slot).astype(str), 6))
    request_id = np.char.add("hreq-", np.char.zfill(request.astype(str), 5))
    systems = [BASELINE, *ranker_names(n_rankers)]
    depth = np.r_[0.0, rng.uniform(-0.35, 0.6, n_rankers)]
    top = np.r_[0.5, rng.uniform(0.1, 0.9, n_rankers)]
    latency = np.r_[1.0, np.exp(rng.normal(0.0, 0.12, n_rankers))]
    candidates, rr = [], {}
    for j, system in enumerate(systems):  # a loop over 25 rankers, vectorized over their rows
        score = (0.7 + depth[j]) * grade + rng.normal(0.0, 1.0, request.size)
        # the first place: the request's best document (probability ``top``), else its best-scored grade-0 one
        best_first = (rng.random(n_requests) < top[j])[request]
        decoy = _first_of_request(request, np.where(grade == 0, -score, np.inf), slot) & (grade == 0)
        score = score + 100.0 * np.where(best_first, best, decoy)
        position = _positions(request, score)
        candidates.append(pd.DataFrame({"request_id": request_id, "doc_id": doc_id, "system": system,
                                        "position": position.astype("int32"), "score": np.round(score, 4),
                                        "pool_version": POOL_VERSION}))
        first = np.full(n_requests, np.inf)
        np.minimum.at(first, request[grade >= 1], position[grade >= 1])
        rr[system] = np.where(np.isfinite(first), 1.0 / first, 0.0)
    judgments = pd.DataFrame({"request_id": request_id, "doc_id": doc_id, "grade": grade})
    releases = {system: _release(rng, systems[0], system, rr, latency[[0, j + 1]], n_requests, sessions, j + 1)
                for j, system in enumerate(systems[1:])}
    return History(pd.concat(candidates, ignore_index=True), judgments, releases)


def _first_of_request(request: np.ndarray, key: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """The row of each request with the smallest ``key`` (ties: the first slot)."""
    order = np.lexsort((slot, key, request))
    first = np.zeros(request.size, dtype=bool)
    first[order[np.r_[True, request[order][1:] != request[order][:-1]]]] = True
    return first


def _positions(request: np.ndarray, score: np.ndarray) -> np.ndarray:
    """1-based positions within each request, score descending (rows of a request are contiguous)."""
    order = np.lexsort((-score, request))
    starts = np.r_[0, np.flatnonzero(np.diff(request[order])) + 1]
    rank = np.arange(request.size) - np.repeat(starts, np.diff(np.r_[starts, request.size]))
    position = np.empty(request.size, dtype=np.int64)
    position[order] = rank + 1
    return position


def _release(rng: np.random.Generator, baseline: str, candidate: str, rr: dict[str, np.ndarray],
             latency: np.ndarray, n_requests: int, sessions: int, number: int) -> pd.DataFrame:
    """One controlled release of ``candidate`` against ``baseline``: technicians split in half."""
    technician = rng.integers(0, _TECHNICIANS, sessions)
    in_candidate = (np.arange(_TECHNICIANS) % 2 == 1)[technician]
    request = rng.integers(0, n_requests, sessions)
    session_rr = np.where(in_candidate, rr[candidate][request], rr[baseline][request])
    reached = rng.random(sessions) < _REACHED
    time_s = _TIME_MEDIAN_S * (1.2 - 0.4 * session_rr) * np.exp(0.5 * rng.normal(size=sessions))
    return pd.DataFrame({
        "session_id": [f"hses-{number:02d}-{i:05d}" for i in range(sessions)],
        "request_id": np.char.add("hreq-", np.char.zfill(request.astype(str), 5)),
        "technician_id": np.char.add(f"htech-{number:02d}-", np.char.zfill(technician.astype(str), 3)),
        "arm": np.where(in_candidate, candidate, baseline),
        "task_completed": rng.random(sessions) < _COMPLETION_BASE + _COMPLETION_PER_RR * session_rr,
        "time_to_procedure_s": np.where(reached, np.round(time_s, 1), np.nan),
        "latency_ms": np.round(_LATENCY_MEDIAN_MS * np.where(in_candidate, latency[1], latency[0])
                               * np.exp(0.47 * rng.normal(size=sessions)), 1),
        "safety_incident": rng.random(sessions) < _SAFETY_RATE,
    })


def write_history(out_dir: str | Path, **kwargs) -> dict[str, str]:
    """Write :func:`history` under ``out_dir`` as Parquet: ``candidates/``, ``judgments/`` and
    ``release_outcomes/<ranker>/`` (one folder per release); returns ``{name: absolute path}``
    (``release_outcomes`` the folder of the releases)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(out_dir).resolve()
    data = history(**kwargs)
    tables = {"candidates": data.candidates, "judgments": data.judgments,
              **{f"release_outcomes/{name}": frame for name, frame in data.releases.items()}}
    for name, frame in tables.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.parquet"):
            old.unlink()
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), folder / "part-00000.parquet")
    return {"candidates": str(root / "candidates"), "judgments": str(root / "judgments"),
            "release_outcomes": str(root / "release_outcomes")}
