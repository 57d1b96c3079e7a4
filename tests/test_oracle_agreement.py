"""The Spark scorer agrees with the plain-Python oracle (``tests/oracle.py``) on random data.

The data set (seeded ``random.Random``) holds >= 2,000 requests and deliberately includes: ties in
score (a few requests with all scores equal), unjudged candidates (some requests fully unjudged),
requests with no positive grade at all, requests whose only positives were never retrieved,
single-candidate requests, lists shorter *and* longer than the largest K (k = 1, 3, 5, 10, 50),
non-integer grades, judged documents that no system retrieved, and requests scored by two systems.

Order/ties x ideal_from x unjudged run in full (the scorer branches on how they combine); gain,
empty_ideal and the declared metrics (NDCG alone; NDCG and recall; recall over min(K, R) at
relevant grade 2 first, then NDCG) are spread over those 18 contracts so that every value of every
choice meets every value of every other (pairwise, checked by a test). Score order with
ties by doc id descending (trec_eval's) takes the doc-id branch with the opposite sort, so it runs
in three more contracts that meet every value of every other choice, not every combination. Each is compared
column by column to 1e-9. The exponential (default) gain runs on the full data set; linear and
table gains run on its first 400 requests. Each contract is a small, latency-bound Spark job, so
the module-scoped fixtures run them four at a time (:func:`collect_concurrently`) and each
combination's test then reports its own mismatches.

The fast lane (``bash dev.sh test-fast``) runs a core of each grid: contracts in which every value
of every choice occurs (:data:`CORE_COMBOS`), and the large-request cut in both of its modes
(:data:`CORE_CUT_RUNS`); the rest of each grid is marked ``slow`` and ``grid``, so the whole suite
(CI, on the newest pyspark) runs every contract and the older-pyspark lane the core. A grid's core and its rest are each computed on
the first test that asks for one of their runs (:class:`GridParts`), so a lane computes only what it
checks.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

try:  # tests/ may or may not be a package
    from tests import oracle
except ImportError:  # pragma: no cover - depends on how pytest sets sys.path
    import oracle  # type: ignore[no-redef]

SEED = 20240611
N_REQUESTS = 2_200  # full data set (exponential gain)
N_REQUESTS_SUBSET = 400  # linear and table gains
KS = [1, 3, 5, 10, 50]
TOL = 1e-9

GRADES = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
GRADE_WEIGHTS = [30, 4, 25, 5, 18, 3, 10]
# every generated grade is in the table; deliberately not a closed form of the grade
GAIN_TABLE = {0: 0.0, 0.5: 0.25, 1: 1.0, 1.5: 2.0, 2: 3.0, 2.5: 4.5, 3: 7.5}

GAINS = {"exponential": "exponential", "linear": "linear", "table": {"table": GAIN_TABLE}}
ORDER_TIES = {
    "position": ("position", "doc_id"),
    "score-doc_id": ("score", "doc_id"),
    "score-average": ("score", "average"),
    "score-doc_id_desc": ("score", "doc_id_desc"),
}
#: The order/ties that the scorer branches on (run with every ideal_from x unjudged); the others
#: are a different sort key in one of these branches and run pairwise only.
BRANCHING_ORDER_TIES = ["position", "score-doc_id", "score-average"]
IDEAL_FROM = ["candidates", "judgments"]
UNJUDGED = ["zero", "exclude", "separate"]
EMPTY_IDEAL = ["exclude", "zero"]
#: the metrics a contract declares, with recall's choices (the oracle's keywords)
METRIC_SETS = {
    "ndcg": dict(metrics=("ndcg",)),
    "ndcg+recall": dict(metrics=("ndcg", "recall")),
    "recall_capped_at_2+ndcg": dict(metrics=("recall", "ndcg"), recall="capped", relevant_grade=2.0),
}

COMPARED = ["request_id", "system", "k", "dcg", "idcg", "ndcg", "empty_ideal", "no_results",
            "n_candidates", "n_judged", "n_positive", "n_unjudged_in_top_k", "ndcg_unjudged_low", "ndcg_unjudged_high"]
#: compared too when recall is declared
RECALL_COMPARED = ["relevant_in_top_k", "n_relevant", "recall", "recall_unjudged_low", "recall_unjudged_high"]
#: the generated grades run from 0 to 3: every contract of the grids declares that scale, so the
#: unjudged bounds are compared with the oracle under every combination (a gain table declares it too)
MAX_GRADE = 3.0


# =========================================================================== data generation
def _doc_id(rng: random.Random, n: int) -> str:
    # "d10" < "d9" in string order, and "D.." < "d..": doc_id tie-breaking must be by string
    return ("D" if rng.random() < 0.1 else "d") + str(n)


def generate(seed: int = SEED, n_requests: int = N_REQUESTS) -> tuple[list[dict], list[dict]]:
    """Return (candidate rows, judgment rows) as plain dicts."""
    rng = random.Random(seed)
    candidates: list[dict] = []
    judgments: list[dict] = []
    for r in range(n_requests):
        rid = f"q{r:05d}"
        # ---- how many candidates each system shows
        shape = rng.random()
        if shape < 0.10:
            m = 1
        elif shape < 0.50:
            m = rng.randint(2, 6)
        elif shape < 0.90:
            m = rng.randint(7, 20)
        else:
            m = rng.randint(21, 60)  # some longer than the largest K (50)
        systems = ["A"] if rng.random() < 0.7 else ["A", "B"]
        extra = rng.choice([0, 0, 1, 3, 8])  # judged/unjudged pool docs no system necessarily shows
        pool_size = m + extra + (rng.randint(0, 3) if len(systems) > 1 else 0)
        pool = [_doc_id(rng, n) for n in rng.sample(range(400), pool_size)]  # distinct n: distinct ids

        # ---- grades of the pool (None = no judgment row)
        p_unjudged = rng.choice([0.0, 0.0, 0.15, 0.4, 1.0])
        kind = rng.random()
        grades: dict[str, float | None] = {}
        for d in pool:
            if rng.random() < p_unjudged:
                grades[d] = None
            elif kind < 0.12:  # no positive grade anywhere
                grades[d] = 0.0
            else:
                grades[d] = rng.choices(GRADES, GRADE_WEIGHTS)[0]

        # ---- each system's list
        score_mode = rng.random()
        for system in systems:
            shown = rng.sample(pool, m)
            positions = list(range(1, m + 1))
            rng.shuffle(positions)
            for doc, pos in zip(shown, positions):
                if score_mode < 0.05:
                    score = 1.0  # every candidate tied
                elif score_mode < 0.55:
                    score = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, -0.5])  # many ties
                else:
                    score = round(rng.uniform(-10, 10), 6)  # (almost) no ties
                candidates.append(
                    {"request_id": rid, "system": system, "doc_id": doc, "position": pos, "score": score}
                )
        # ---- judgments: every judged pool doc (some never shown), sometimes an unretrieved positive
        for d, g in grades.items():
            if g is not None:
                judgments.append({"request_id": rid, "doc_id": d, "grade": g})
        if rng.random() < 0.08:
            judgments.append({"request_id": rid, "doc_id": f"unretrieved{r}", "grade": rng.choice([1.0, 2.0, 2.5])})
    return candidates, judgments


def subset(rows: list[dict], n: int) -> list[dict]:
    keep = {f"q{r:05d}" for r in range(n)}
    return [row for row in rows if row["request_id"] in keep]


# =========================================================================== oracle self-tests
def test_oracle_reproduces_spec_worked_example():
    a = oracle.ndcg_of_grades([1, 3, 0, 2], k=3)
    b = oracle.ndcg_of_grades([2, 0, 1], k=3)
    assert a == pytest.approx(0.5766666455, abs=1e-10)
    assert str(a).startswith("0.5766666455")
    assert str(b).startswith("0.9639404333")
    assert str((a + b) / 2).startswith("0.7703035394")
    assert oracle.ndcg_of_grades([0, 0], k=3) is None
    assert oracle.ndcg_of_grades([3, 2, 1], k=3) == 1.0


def test_oracle_spec_example_by_hand():
    # [1, 3, 0, 2] @3: DCG = 1/1 + 7/log2(3) + 0; IDCG = 7 + 3/log2(3) + 1/2
    dcg = 1.0 + 7.0 / math.log2(3)
    idcg = 7.0 + 3.0 / math.log2(3) + 1.0 / 2.0
    assert oracle.ndcg_of_grades([1, 3, 0, 2], k=3) == pytest.approx(dcg / idcg, rel=1e-15)


def test_oracle_gains():
    assert oracle.make_gain("exponential")(1.5) == pytest.approx(2**1.5 - 1)
    assert oracle.make_gain("linear")(1.5) == 1.5
    assert oracle.make_gain({"table": {0: 0.0, 1: 5.0}})(1) == 5.0
    with pytest.raises(KeyError):
        oracle.make_gain({"table": {0: 0.0, 1: 5.0}})(2)


def test_oracle_k_larger_than_list_and_empty_policies():
    cands = [oracle.Candidate("a", 1, grade=0.0), oracle.Candidate("b", 2, grade=None)]
    res = oracle.score_request(cands, k=[1, 50], empty_ideal="zero")
    assert res[50]["ndcg"] == 0.0 and res[50]["empty_ideal"] is True
    assert res[50]["n_unjudged_in_top_k"] == 1 and res[1]["n_unjudged_in_top_k"] == 0
    assert oracle.score_request(cands, k=[1])[1]["ndcg"] is None
    with pytest.raises(oracle.OracleEmptyIdealError):
        oracle.score_request(cands, k=[3], empty_ideal="error")
    single = [oracle.Candidate("a", 1, grade=2.0)]
    assert oracle.score_request(single, k=[1, 50])[50]["ndcg"] == 1.0


def test_oracle_unjudged_policies():
    # displayed: a(2) ? b(0) ? c(3); "?" unjudged
    cands = [
        oracle.Candidate("a", 1, grade=2.0),
        oracle.Candidate("u1", 2, grade=None),
        oracle.Candidate("b", 3, grade=0.0),
        oracle.Candidate("u2", 4, grade=None),
        oracle.Candidate("c", 5, grade=3.0),
    ]
    zero = oracle.score_request(cands, k=[3, 5], unjudged="zero")
    sep = oracle.score_request(cands, k=[3, 5], unjudged="separate")
    exc = oracle.score_request(cands, k=[3, 5], unjudged="exclude")
    assert zero[5]["dcg"] == pytest.approx(3.0 + 7.0 / math.log2(6))
    assert zero[5]["n_unjudged_in_top_k"] is None
    assert sep[5]["dcg"] == zero[5]["dcg"] and sep[3]["n_unjudged_in_top_k"] == 1
    assert sep[5]["n_unjudged_in_top_k"] == 2
    # condensed list a, b, c
    assert exc[3]["dcg"] == pytest.approx(3.0 + 7.0 / math.log2(4))
    assert exc[3]["n_unjudged_in_top_k"] == 1  # counted on the full displayed list
    assert exc[3]["idcg"] == pytest.approx(7.0 + 3.0 / math.log2(3))
    for res in (zero, sep, exc):
        assert (res[5]["n_candidates"], res[5]["n_judged"], res[5]["n_positive"]) == (5, 3, 2)


def test_oracle_ideal_from_judgments():
    cands = [oracle.Candidate("a", 1, grade=1.0), oracle.Candidate("b", 2, grade=0.0)]
    res = oracle.score_request(cands, k=[2], ideal_from="judgments", judged_grades=[1.0, 0.0, 3.0])
    assert res[2]["idcg"] == pytest.approx(7.0 + 1.0 / math.log2(3))
    assert res[2]["dcg"] == pytest.approx(1.0)
    only_unretrieved = [oracle.Candidate("a", 1, grade=0.0)]
    res = oracle.score_request(only_unretrieved, k=[1], ideal_from="judgments", judged_grades=[0.0, 2.0])
    assert res[1]["ndcg"] == 0.0 and res[1]["empty_ideal"] is False


def test_oracle_score_order_doc_id_ties_are_string_order():
    cands = [oracle.Candidate("d9", score=1.0, grade=3.0), oracle.Candidate("d10", score=1.0, grade=0.0)]
    res = oracle.score_request(cands, k=[1], order="score", ties="doc_id")
    assert res[1]["dcg"] == 0.0  # "d10" < "d9"


def test_oracle_score_order_doc_id_desc_ties_are_reverse_string_order():
    cands = [oracle.Candidate("d10", score=1.0, grade=3.0), oracle.Candidate("d9", score=1.0, grade=0.0),
             oracle.Candidate("a", score=2.0, grade=0.0)]
    res = oracle.score_request(cands, k=[2], order="score", ties="doc_id_desc", gain="linear")
    assert res[2]["dcg"] == 0.0  # "a" (higher score), then "d9" > "d10"; d10's 3 is third
    assert [c.doc_id for c in oracle.display_order(cands, "score", "doc_id_desc")] == ["a", "d9", "d10"]


def test_oracle_binary_gain():
    gain = oracle.make_gain("binary")
    assert [gain(g) for g in (0.0, 0.5, 1.0, 3.0)] == [0.0, 1.0, 1.0, 1.0]


def test_oracle_tie_average_by_hand():
    # scores 2, 1, 1, 1, 0 with gains 1, 7, 0, 3, 1; K=3 cuts the tie group {7, 0, 3} at position 3
    pairs = [(2.0, 1.0), (1.0, 7.0), (1.0, 0.0), (1.0, 3.0), (0.0, 1.0)]
    expected = 1.0 + (10.0 / 3) * (1 / math.log2(3) + 1 / math.log2(4))
    assert oracle.tie_average_dcg_at_k(pairs, 3) == pytest.approx(expected, rel=1e-15)


def test_oracle_tie_average_is_expected_dcg_over_tie_breaks():
    """McSherry & Najork's closed form equals the mean DCG over every tie-breaking permutation."""
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 6)
        pairs = [(float(rng.choice([0, 1, 2])), float(rng.choice([0, 1, 3, 7]))) for _ in range(n)]
        k = rng.randint(1, 7)
        by_score = defaultdict(list)
        for s, g in pairs:
            by_score[s].append(g)
        scores = sorted(by_score, reverse=True)
        total, count = 0.0, 0
        for combo in itertools.product(*(itertools.permutations(by_score[s]) for s in scores)):
            total += oracle.dcg_at_k([g for block in combo for g in block], k)
            count += 1
        assert oracle.tie_average_dcg_at_k(pairs, k) == pytest.approx(total / count, rel=1e-12, abs=1e-12)


def test_generated_data_covers_the_edge_cases():
    cands, judgments = generate()
    judged = {(j["request_id"], j["doc_id"]): j["grade"] for j in judgments}
    groups = defaultdict(list)
    for c in cands:
        groups[(c["request_id"], c["system"])].append(c)
    requests = {c["request_id"] for c in cands}
    assert len(requests) >= 2_000
    sizes = Counter(len(v) for v in groups.values())
    assert sizes[1] >= 50 and sum(n for m, n in sizes.items() if m > 50) >= 20
    assert sum(1 for v in groups.values() if len({c["score"] for c in v}) < len(v)) >= 300  # score ties
    assert sum(1 for v in groups.values() if len(v) > 1 and len({c["score"] for c in v}) == 1) >= 20
    unj = [sum((c["request_id"], c["doc_id"]) not in judged for c in v) for v in groups.values()]
    assert sum(1 for u in unj if u) >= 300 and sum(1 for u, v in zip(unj, groups.values()) if u == len(v)) >= 50
    no_pos = [v for v in groups.values() if not any(judged.get((c["request_id"], c["doc_id"]), 0) > 0 for c in v)]
    assert len(no_pos) >= 100
    positives_by_req = Counter(j["request_id"] for j in judgments if j["grade"] > 0)
    assert sum(1 for v in no_pos if positives_by_req[v[0]["request_id"]]) >= 30  # positives only unretrieved
    assert {j["grade"] for j in judgments} == set(GRADES)
    shown = {(c["request_id"], c["doc_id"]) for c in cands}
    assert sum(1 for key in judged if key not in shown) >= 500
    assert sum(1 for (_, s) in groups if s == "B") >= 300
    for v in groups.values():  # positions are a permutation of 1..M, doc ids unique
        assert sorted(c["position"] for c in v) == list(range(1, len(v) + 1))
        assert len({c["doc_id"] for c in v}) == len(v)


# =========================================================================== Spark agreement
CAND_COLUMNS = ["request_id", "system", "doc_id", "position", "score"]
JUDG_COLUMNS = ["request_id", "doc_id", "grade"]
CAND_SCHEMA = "request_id string, system string, doc_id string, position int, score double"
JUDG_SCHEMA = "request_id string, doc_id string, grade double"


def _grid() -> list[tuple[str, str, str, str, str, str]]:
    """Order/ties x ideal_from x unjudged in full: the collecting plan branches on how these
    three combine (ties formed among the ranked candidates, the condensed list, the ideal from
    the ranked candidates or the judgments). Gain, empty_ideal and the metrics are applied on their
    own (one gain column; a metric's value and the empty ideal, last), so they are assigned to cover
    every pair of values of any two choices: with ``s`` the sum of the three indices, gain ``s % 3``
    and empty_ideal ``s % 2`` meet each other value and each other (``s`` runs over 0..5), and the
    metrics ``(d + u) % 3`` meet every value of every other choice. Each other order/ties runs once
    per unjudged policy ``u``, with ideal ``u % 2``, gain ``(u + 1) % 3``, empty_ideal ``(u + 1) %
    2`` and metrics ``(u + 2) % 3``: every value of every other choice, in three contracts."""
    grid = []
    lists = (BRANCHING_ORDER_TIES, IDEAL_FROM, UNJUDGED)
    metric_sets = list(METRIC_SETS)
    for (o, ot), (d, i), (u, un) in itertools.product(*(enumerate(c) for c in lists)):
        s = o + d + u
        grid.append((list(GAINS)[s % len(GAINS)], ot, i, un, EMPTY_IDEAL[s % len(EMPTY_IDEAL)],
                     metric_sets[(d + u) % len(metric_sets)]))
    for ot in (ot for ot in ORDER_TIES if ot not in BRANCHING_ORDER_TIES):
        for u, un in enumerate(UNJUDGED):
            grid.append((list(GAINS)[(u + 1) % len(GAINS)], ot, IDEAL_FROM[u % 2], un, EMPTY_IDEAL[(u + 1) % 2],
                         metric_sets[(u + 2) % len(metric_sets)]))
    return grid


COMBOS = _grid()


def each_value_once(combos: list[tuple], options: list[list]) -> list[tuple]:
    """Few contracts of ``combos`` that together hold every value of every choice (``options[i]``:
    the values of choice ``i``), greedily: the one holding the most values not yet held first, ties
    in grid order. A grid's core, for the fast lane."""
    missing = {(i, value) for i, values in enumerate(options) for value in values}
    core = []
    while missing:
        best = max(combos, key=lambda c: len(set(enumerate(c)) & missing))
        if not set(enumerate(best)) & missing:
            raise ValueError(f"no contract of the grid holds {sorted(missing)}")
        core.append(best)
        missing -= set(enumerate(best))
    return core


#: the marks of a grid's contracts past its core: ``slow`` (the whole suite runs them, the fast lane
#: not) and ``grid`` (selected by name to add them to the older-pyspark lane, ``bash dev.sh test-on``)
GRID_REST = (pytest.mark.slow, pytest.mark.grid)


def grid_params(runs: list, core: list, name) -> list:
    """``runs`` as test parameters named by ``name(run)``; those past ``core`` marked :data:`GRID_REST`."""
    return [pytest.param(run, id=name(run), marks=() if run in core else GRID_REST) for run in runs]


class GridParts:
    """A grid's results, computed a part at a time: ``compute(runs)`` maps each run of ``runs`` to
    its result; the core's runs are computed together on the first test that reads one of them, the
    rest's likewise, each once. A lane that runs only the core never computes the rest."""

    def __init__(self, compute, core: list, every: list) -> None:
        self._compute = compute
        self._parts = {True: list(core), False: [run for run in every if run not in core]}
        self._results: dict[bool, dict] = {}

    def __getitem__(self, run):
        part = run in self._parts[True]
        if part not in self._results:
            self._results[part] = self._compute(self._parts[part])
        return self._results[part][run]


#: the choices of the grid and their values
OPTIONS = [list(GAINS), list(ORDER_TIES), IDEAL_FROM, UNJUDGED, EMPTY_IDEAL, list(METRIC_SETS)]
#: the grid's core: every value of every choice (the fast lane); the others run in the whole suite
CORE_COMBOS = each_value_once(COMBOS, OPTIONS)


def _combo_id(combo) -> str:
    g, ot, i, u, e, m = combo
    return f"{g}-{ot}-ideal_{i}-unjudged_{u}-empty_{e}-{m}"


def _choices(combo) -> dict:
    """The oracle's keywords of a contract of the grid (:func:`contract_of` makes it the library's)."""
    g, ot, i, u, e, m = combo
    order, ties = ORDER_TIES[ot]
    return dict(gain=GAINS[g], order=order, ties=ties, ideal_from=i, unjudged=u, empty_ideal=e, max_grade=MAX_GRADE,
                **METRIC_SETS[m])


#: the oracle's keyword of each metric's choice -> the metric's parameter of the library
PARAMETER_OF = {"recall": "denominator", "precision": "denominator", "average_precision": "denominator",
                "reciprocal_rank": "cutoff"}
#: the oracle's per-request components beside NDCG's, compared where the contract's metrics write them
OTHER_COMPONENTS = ["relevant_in_top_k", "n_relevant", "n_shown", "precision_sum", "first_relevant_rank"]


def contract_of(k, choices: dict):
    """The library's contract of the oracle's keywords (a metric's choice, e.g. recall's denominator,
    a metric parameter)."""
    from ndcg_spark import Contract

    choices = dict(choices)
    params = {m: choices.pop(m) for m in PARAMETER_OF if m in choices}
    metrics = [{m: {PARAMETER_OF[m]: params[m]}} if m in params else m for m in choices.pop("metrics", ("ndcg",))]
    return Contract(k=k, metrics=metrics, **choices)


def compared(choices: dict) -> list[str]:
    """The per-request columns compared with the oracle under these choices: NDCG's, and each other
    declared metric's value, what-ifs and the components the oracle gives (those the table writes)."""
    from ndcg_spark.config.schemas import component_names

    declared = choices.get("metrics", ("ndcg",))
    metrics = [m for m in declared if m != "ndcg"]
    if metrics == ["recall"]:
        return COMPARED + RECALL_COMPARED
    written = set(component_names(declared)) if metrics else set()
    ndcg = {"dcg", "idcg", "ndcg", "ndcg_unjudged_low", "ndcg_unjudged_high"}
    return ([c for c in COMPARED if "ndcg" in declared or c not in ndcg]
            + [c for c in OTHER_COMPONENTS if c in written]
            + [c for m in metrics for c in (m, f"{m}_unjudged_low", f"{m}_unjudged_high")])


def expected_rows(prepared, k, choices: dict) -> dict:
    """The oracle's rows under these choices, restricted to the columns :func:`compared` selects
    (the oracle gives every component whichever metric reads it)."""
    columns = set(compared(choices))
    scored = oracle.score_prepared(prepared, k=k, **choices)
    return {key: {c: v for c, v in values.items() if c in columns} for key, values in scored.items()}


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return math.isclose(float(a), float(b), rel_tol=TOL, abs_tol=TOL)


def mismatches(got_rows, expected: dict) -> list[str]:
    """Every difference between Spark output rows and the oracle, as readable lines. A row flagged
    ``no_results`` (a request of the night that system showed nothing for: the oracle scores only
    shown lists) must be one the oracle has none for, with no candidates and DCG 0
    (tests/test_no_results.py checks those rows against the rule)."""
    got, dup, problems = {}, [], []
    for row in got_rows:
        key = (row["request_id"], row["system"], int(row["k"]))
        fields = row.asDict() if hasattr(row, "asDict") else row
        if fields.get("no_results"):
            if key in expected or row["n_candidates"] != 0 or fields.get("dcg", 0.0) != 0.0:
                problems.append(f"a no_results row the oracle scores, or with candidates: {key}")
            continue
        if key in got:
            dup.append(key)
        got[key] = row
    problems += [f"duplicate output row {key}" for key in dup[:5]]
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    problems += [f"missing output row {key}" for key in missing[:5]]
    problems += [f"unexpected output row {key}" for key in extra[:5]]
    if missing or extra or dup:
        problems.append(f"({len(dup)} duplicate, {len(missing)} missing, {len(extra)} unexpected rows)")
    for key, exp in expected.items():
        row = got.get(key)
        if row is None:
            continue
        for col, want in exp.items():
            have = row[col]
            if col.startswith("n_") and have is not None and not isinstance(have, bool):
                have = int(have)
            if not _close(have, want):
                problems.append(f"{key} {col}: expected {want!r}, got {have!r}")
    return problems


def collect_concurrently(names, build) -> dict:
    """``build(name).collect()`` for every name, four at a time: each is a small, latency-bound
    Spark job. (Measured: one union of them all, collected in one job, cost more JVM CPU than
    these jobs, its one large plan being slower to optimize and compile.) Maps name -> the rows,
    or the exception that building or collecting them raised."""

    def attempt(name):
        try:
            return name, build(name).collect()
        except Exception as exc:  # reported by the combination's own test
            return name, exc

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(attempt, names))


@pytest.fixture(scope="module")
def data(production_spark):
    """The generated tables, as plain rows (oracle input) and cached DataFrames (library input);
    the module runs Spark with a nightly run's settings (``production_spark``)."""
    spark = production_spark
    cands, judgments = generate()

    def build(cs, js):
        cdf = spark.createDataFrame([tuple(r[c] for c in CAND_COLUMNS) for r in cs], CAND_SCHEMA, verifySchema=False)
        jdf = spark.createDataFrame([tuple(r[c] for c in JUDG_COLUMNS) for r in js], JUDG_SCHEMA, verifySchema=False)
        cdf, jdf = cdf.cache(), jdf.cache()
        cdf.count(), jdf.count()
        return {"rows": (cs, js), "prepared": oracle.prepare(cs, js), "frames": (cdf, jdf)}

    built = {
        "full": build(cands, judgments),
        "small": build(subset(cands, N_REQUESTS_SUBSET), subset(judgments, N_REQUESTS_SUBSET)),
    }
    yield built
    for b in built.values():
        for df in b["frames"]:
            df.unpersist()


def _data_set(gain: str) -> str:
    return "full" if gain == "exponential" else "small"


def _diff(results: dict, expected) -> dict:
    """name -> mismatches with the oracle (``expected(name)``), or the exception."""
    return {n: r if isinstance(r, BaseException) else mismatches(r, expected(n)) for n, r in results.items()}


def _report(result, what: str) -> None:
    if isinstance(result, BaseException):
        raise result
    assert not result, f"{what}: {len(result)} mismatches with the oracle, e.g.\n  " + "\n  ".join(result[:15])


def _agreement(data, combos: list[tuple]) -> dict:
    """Each combination of ``combos`` through the library, diffed against the oracle. Maps
    combo -> list of mismatches or an exception."""
    from ndcg_spark import Contract, score_requests

    def build(combo):
        cdf, jdf = data[_data_set(combo[0])]["frames"]
        # no request is large here: skip the count (the cut and its count are tested below)
        contract = contract_of(KS, _choices(combo))
        return score_requests(cdf, jdf, contract, run_id="oracle-agreement", large_request=None,
                              validate=False).select(*compared(_choices(combo)))

    def expected(combo):
        return expected_rows(data[_data_set(combo[0])]["prepared"], KS, _choices(combo))

    return _diff(collect_concurrently(combos, build), expected)


@pytest.fixture(scope="module")
def agreement(data) -> GridParts:
    """Every combination of the grid through the library, diffed against the oracle, a part at a time."""
    return GridParts(lambda combos: _agreement(data, combos), CORE_COMBOS, COMBOS)


def test_the_grid_runs_spark_as_a_nightly_run_does(data, production_spark):
    """Generated code and adaptive execution (Spark's defaults), not the suite's small-data settings."""
    conf = production_spark.conf
    assert (conf.get("spark.sql.codegen.wholeStage"), conf.get("spark.sql.adaptive.enabled")) == ("true", "true")
    assert conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"


def test_the_grid_covers_every_pair_of_choices():
    for a, b in itertools.combinations(range(len(OPTIONS)), 2):
        pairs = {(c[a], c[b]) for c in COMBOS}
        assert pairs == set(itertools.product(OPTIONS[a], OPTIONS[b])), (a, b)
    branching = {c[1:4] for c in COMBOS if c[1] in BRANCHING_ORDER_TIES}
    assert branching == set(itertools.product(BRANCHING_ORDER_TIES, *OPTIONS[2:4]))
    assert len(COMBOS) == len(branching) + len(UNJUDGED) * (len(ORDER_TIES) - len(BRANCHING_ORDER_TIES))


def test_the_core_holds_every_value_of_every_choice():
    for i, values in enumerate(OPTIONS):
        assert {c[i] for c in CORE_COMBOS} == set(values), i
    assert set(CORE_COMBOS) < set(COMBOS)


@pytest.mark.parametrize("combo", grid_params(COMBOS, CORE_COMBOS, _combo_id))
def test_spark_agrees_with_oracle(agreement, combo):
    _report(agreement[combo], _combo_id(combo))


# ------------------------------------------------------------------ the panel of metrics
#: every metric, with each choice of its denominator or cutoff (the oracle's keywords)
PANEL_SETS = {
    "panel": dict(metrics=("ndcg", "precision", "recall", "average_precision", "reciprocal_rank", "hit_rate")),
    "panel_other_choices_at_2": dict(metrics=("average_precision", "precision", "reciprocal_rank", "hit_rate"),
                                     precision="shown", average_precision="capped", reciprocal_rank="deepest",
                                     relevant_grade=2.0),
}
#: the panel under every order and ties it takes (hit rate, RR and AP refuse averaged ties), ideal source
#: and unjudged policy, the gain and empty-ideal policy alternating; precision alone under averaged ties
PANEL_COMBOS = [
    (list(GAINS)[(o + u) % len(GAINS)], ot, i, un, EMPTY_IDEAL[(d + u) % 2], list(PANEL_SETS)[(o + d + u) % 2])
    for o, ot in enumerate(["position", "score-doc_id", "score-doc_id_desc"])
    for d, i in enumerate(IDEAL_FROM)
    for u, un in enumerate(UNJUDGED)
]
PRECISION_TIES = {"precision_shown": dict(metrics=("ndcg", "precision"), precision="shown"),
                  "precision_k": dict(metrics=("precision",))}
PANEL_TIE_COMBOS = [("linear", "score-average", i, un, "zero", m)
                    for i, un, m in [("candidates", "exclude", "precision_shown"), ("judgments", "separate", "precision_k"),
                                     ("candidates", "zero", "precision_k")]]


def _panel_choices(combo) -> dict:
    g, ot, i, u, e, m = combo
    order, ties = ORDER_TIES[ot]
    return dict(gain=GAINS[g], order=order, ties=ties, ideal_from=i, unjudged=u, empty_ideal=e, max_grade=MAX_GRADE,
                **{**PANEL_SETS, **PRECISION_TIES}[m])


@pytest.fixture(scope="module")
def panel_agreement(data) -> dict:
    from ndcg_spark import score_requests

    combos = PANEL_COMBOS + PANEL_TIE_COMBOS

    def build(combo):
        cdf, jdf = data["small"]["frames"]
        choices = _panel_choices(combo)
        return score_requests(cdf, jdf, contract_of(KS, choices), run_id="panel", large_request=None,
                              validate=False).select(*compared(choices))

    def expected(combo):
        return expected_rows(data["small"]["prepared"], KS, _panel_choices(combo))

    return _diff(collect_concurrently(combos, build), expected)


@pytest.mark.parametrize("combo", PANEL_COMBOS + PANEL_TIE_COMBOS, ids=_combo_id)
def test_every_metric_of_the_panel_agrees_with_the_oracle(panel_agreement, combo):
    _report(panel_agreement[combo], _combo_id(combo))


# ------------------------------------------------------------------ large requests, cut first
#: K small enough that most lists (up to 60 candidates) are cut to their top 5 before collecting
KS_CUT = [1, 3, 5]
#: The cut branches on the order and its ties, the ideal (from candidates: by gain too) and
#: whether unjudged candidates are ranked (``exclude``; ``zero`` and ``separate`` both rank them):
#: each of these runs with every request cut (the listing limit passed, so even short lists).
CUT_COMBOS = [
    ("table", ot, i, u, "exclude", "ndcg+recall")
    for ot in ORDER_TIES
    for n, i in enumerate(IDEAL_FROM)
    for u in ("exclude", ("zero", "separate")[n])
]
#: with the large requests listed (the others scored uncut, the two unioned): one per order,
#: both ideals, both kinds of unjudged -- the split does not depend on the contract
LISTED_CUT_COMBOS = CUT_COMBOS[::5]


def _cut_agreement(data, runs: list[tuple]) -> dict:
    """The same comparison with the large-request path forced (``large_request=5``) for each
    ``(mode, combo)`` of ``runs``: in mode ``all`` the listing limit is patched to 10, so every
    request is cut; in mode ``listed`` (unpatched), the requests of more than 5 candidates are
    listed and cut, the others go through the plain path, and the two are unioned."""
    from ndcg_spark import Contract, score_requests
    from ndcg_spark.scoring import large

    d = data["small"]
    cdf, jdf = d["frames"]
    listed_limit = large.MAX_LISTED_LARGE

    def build(run):
        combo = run[1]
        # the dense plan would score the position-order lists without collecting (nothing to cut)
        return score_requests(cdf, jdf, contract_of(KS_CUT, _choices(combo)), run_id="cut", large_request=5,
                              dense_plan=False, validate=False).select(*compared(_choices(combo)))

    results = collect_concurrently([run for run in runs if run[0] == "listed"], build)
    large.MAX_LISTED_LARGE = 10
    try:
        results.update(collect_concurrently([run for run in runs if run[0] == "all"], build))
    finally:
        large.MAX_LISTED_LARGE = listed_limit

    def expected(run):
        return expected_rows(d["prepared"], KS_CUT, _choices(run[1]))

    return _diff(results, expected)


#: the cut grid's core (the fast lane): both modes, every order (mode ``listed``) and one contract
#: cutting every request; the others run in the whole suite
CORE_CUT_RUNS = [("listed", c) for c in LISTED_CUT_COMBOS] + [("all", CUT_COMBOS[0])]
CUT_RUNS = [("all", c) for c in CUT_COMBOS] + [("listed", c) for c in LISTED_CUT_COMBOS]


@pytest.fixture(scope="module")
def cut_agreement(data) -> GridParts:
    return GridParts(lambda runs: _cut_agreement(data, runs), CORE_CUT_RUNS, CUT_RUNS)


def test_the_cut_grid_covers_its_branches():
    kinds = {(ot, i, u == "exclude") for _, ot, i, u, _, _ in CUT_COMBOS}
    assert kinds == set(itertools.product(ORDER_TIES, IDEAL_FROM, (True, False))) and len(kinds) == len(CUT_COMBOS)
    assert {c[1] for c in LISTED_CUT_COMBOS} == set(ORDER_TIES)
    assert {c[2] for c in LISTED_CUT_COMBOS} == set(IDEAL_FROM)
    assert {c[3] == "exclude" for c in LISTED_CUT_COMBOS} == {True, False}


@pytest.mark.parametrize("run", grid_params(CUT_RUNS, CORE_CUT_RUNS, lambda run: f"{run[0]}-{_combo_id(run[1])}"))
def test_large_requests_cut_to_the_top_k_still_agree_with_oracle(cut_agreement, run):
    mode, combo = run
    _report(cut_agreement[run], f"{mode} {_combo_id(combo)}")


def test_empty_ideal_error_raises_when_an_empty_request_exists(data):
    from ndcg_spark import Contract, score_requests
    from ndcg_spark.errors import EmptyIdealError

    cands, judgments = data["small"]["rows"]
    cdf, jdf = data["small"]["frames"]
    with pytest.raises(oracle.OracleEmptyIdealError):
        oracle.score_all(cands, judgments, k=KS, empty_ideal="error")
    contract = Contract(k=KS, order="position", empty_ideal="error")
    with pytest.raises(Exception) as caught:
        score_requests(cdf, jdf, contract, run_id="oracle-agreement").select(*COMPARED).collect()
    assert type(caught.value).__name__ == "EmptyIdealError", repr(caught.value)
    assert isinstance(caught.value, EmptyIdealError)


def test_empty_ideal_error_passes_when_no_request_is_empty(data):
    from pyspark.sql import functions as F

    from ndcg_spark import Contract, score_requests

    cands, judgments = data["small"]["rows"]
    cdf, jdf = data["small"]["frames"]
    choices = dict(order="score", ties="doc_id", ideal_from="judgments", unjudged="exclude")
    everything = oracle.score_all(cands, judgments, k=KS, empty_ideal="exclude", **choices)
    empty = sorted({rid for (rid, _, _), v in everything.items() if v["empty_ideal"]})
    assert empty, "the data set should contain empty-ideal requests"
    keep_c = [c for c in cands if c["request_id"] not in set(empty)]
    keep_j = [j for j in judgments if j["request_id"] not in set(empty)]
    expected = oracle.score_all(keep_c, keep_j, k=KS, empty_ideal="error", **choices)
    c2 = cdf.where(~F.col("request_id").isin(empty))
    j2 = jdf.where(~F.col("request_id").isin(empty))
    out = score_requests(c2, j2, Contract(k=KS, empty_ideal="error", **choices), run_id="oracle-agreement")
    problems = mismatches(out.select(*COMPARED).collect(), expected)
    assert not problems, "\n  ".join(problems[:15])
