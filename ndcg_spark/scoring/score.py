"""Stage 1: score every request's DCG, IDCG and NDCG at every K, under a declared contract.

:func:`score_requests` wires the plans together. Requests displayed in dense position order are
scored with hash aggregates (:mod:`ndcg_spark.scoring.dense`); the others are collected into one
sorted list per request (:mod:`ndcg_spark.scoring.collecting`), runaway requests cut first
(:mod:`ndcg_spark.scoring.large`). The attributes are joined once per request, then the rows
multiply by K and the contract's empty-ideal policy sets the NDCG. Everything is native Spark
expressions; candidates of different requests are never ranked together.
"""

from __future__ import annotations

import dataclasses
import functools
import operator

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import EmptyIdealError
from ndcg_spark.frames import persist_coalesced, shuffles_sized_to
from ndcg_spark.metrics.gain import gain
from ndcg_spark.scoring import dense
from ndcg_spark.config.attributes import Attributes
from ndcg_spark.scoring.attributes import attach_attributes
from ndcg_spark.scoring.collecting import score_by_collecting
from ndcg_spark.config.per_request import per_request_columns
from ndcg_spark.scoring.columns import INTEGRAL_TYPES, metric_column, per_k_fields
from ndcg_spark.scoring.inputs import literal_keys, prepare_candidates, request_keys
from ndcg_spark.scoring.large import LARGE_REQUEST, find_large_requests
from ndcg_spark.scoring.no_results import with_no_results
from ndcg_spark.validation.accounting import quarantined_lists
from ndcg_spark.validation.shell_check import shell_check


def score_requests(
    candidates: DataFrame,
    judgments: DataFrame | None = None,
    contract: Contract | None = None,
    *,
    run_id: str = "adhoc",
    system: str | None = None,
    pool_version: str | None = None,
    attributes: Attributes | None = None,
    large_request: int | None = LARGE_REQUEST,
    dense_plan: bool = True,
    validate: bool = True,
    grade_scale: int | None = None,
    cache_handles: list[DataFrame] | None = None,
    set_aside: DataFrame | None = None,
) -> DataFrame:
    """Score every request: one row per request x system x K.

    Parameters
    ----------
    candidates : one row per displayed candidate: request id, doc id, position and/or score,
        optionally system and pool version (else the literals ``system`` / ``pool_version``).
        With ``judgments=None`` it must carry a grade column (a pre-joined table).
    judgments : request id, doc id, grade; a candidate without a judgment is unjudged.
    contract : the declared choices (default :class:`Contract`).
    run_id : stamped on every row.
    attributes : weight and slice columns to carry (:class:`Attributes`).
    large_request : requests with more candidates are cut to the rows that can reach the top
        ``max(K)`` before their list is collected (same result, bounded memory). Finding them
        runs one small counting job when this function is called (only when some request is
        collected); ``None`` skips it (for inputs already known to hold no such request, e.g.
        after the job's skew guard).
    dense_plan : score the requests displayed in dense position order (1, 2, 3, ... or 0, 1, 2,
        ... each once) with hash aggregates instead of collecting and sorting their candidates
        (:mod:`ndcg_spark.scoring.dense`; same result, checked per request in the same
        aggregation, when the contract allows it). That aggregation (one row per request) runs
        when this function is called and is cached (memory and disk), so the result is read
        from it; the cache is this call's own: no later call is answered from it, so inputs
        read again after their files changed are scored as they now are. One more small job
        reads the distinct gains when the contract declares neither a gain table nor
        ``max_grade`` and the grades' scale is not known (``grade_scale``).
        ``False`` always collects (kept to compare the plans).
    validate : check the inputs first against the job's named rules under the job's default
        handling (:func:`~ndcg_spark.validation.validate.validate_inputs`, every rule ``error``, no skew guard):
        a grade outside the gain table, a repeated doc, a null id, a NaN score ... raise
        :class:`~ndcg_spark.errors.ValidationError` naming the rule, the count and an example
        row, instead of a silently wrong number. Costs the count-only detector's job when this
        function is called, once per cached input: inputs that are cached and passed the same
        check before are answered from memory (:mod:`ndcg_spark.validation.shell_check`).
        ``False`` for inputs already validated (the job does).
    grade_scale : the largest grade, when every grade is known to be a whole number from 0 to it
        (:attr:`~ndcg_spark.validation.accounting.ValidatedInputs.grade_scale`: the input check
        notes it, and passes it on itself with ``validate``); the dense plan then counts the
        ideal over the gains of ``1 .. grade_scale`` without reading them. Ignored when the
        contract declares its scale; the same result either way.
    cache_handles : given a list, the call's caches are appended to it -- the dense aggregation
        (see ``dense_plan``) and the judgments' and attributes table's columns it reads (cached so
        that each input file is read once) --, for the caller to ``unpersist()`` once the result is
        written (the job does); otherwise they stay cached for the session, a few per call
        (``spark.catalog.clearCache()`` releases them all; a result read after that is computed
        again from its inputs).
    set_aside : ``request_id``, ``system``, ``pool_version`` of lists the input check quarantined
        (``ValidatedInputs.set_aside``): not counted as returning nothing. When None and
        ``candidates`` is the frame :func:`~ndcg_spark.validation.validate.validate_inputs` returned,
        the lists it quarantined (:func:`~ndcg_spark.validation.accounting.quarantined_lists`).

    Returns
    -------
    DataFrame with :data:`PER_REQUEST_COLUMNS`, the slice columns, then ``contract_fingerprint``.
    ``ndcg`` is null for an empty ideal under ``empty_ideal: exclude``; ``empty_ideal`` flags it
    under every policy. A request of the night's population (the ``attributes`` table's requests,
    else every request of the judgments and the candidates) that a system returned nothing for has
    a row flagged ``no_results`` (:mod:`ndcg_spark.scoring.no_results`), scored under the
    contract's ``no_results``.

    Examples
    --------
    >>> cands = spark.createDataFrame(
    ...     [("q1", "a", 1, 1.0), ("q1", "b", 2, 3.0), ("q1", "c", 3, 0.0), ("q1", "d", 4, 2.0),
    ...      ("q2", "a", 1, 0.0), ("q2", "b", 2, 0.0)],
    ...     "request_id string, doc_id string, position int, grade double")
    >>> out = score_requests(cands, contract=Contract(k=[3]))
    >>> out.select("request_id", "k", F.round("ndcg", 4).alias("ndcg"), "empty_ideal").orderBy("request_id").show()
    +----------+---+------+-----------+
    |request_id|  k|  ndcg|empty_ideal|
    +----------+---+------+-----------+
    |        q1|  3|0.5767|      false|
    |        q2|  3|  NULL|       true|
    +----------+---+------+-----------+
    <BLANKLINE>
    """
    contract = (contract or Contract()).resolve(candidates.columns)
    attributes = attributes or Attributes()
    if set_aside is None:  # the validated frame of candidates knows the lists its check quarantined
        set_aside = quarantined_lists(candidates)
    # the calls' own jobs (the check, the dense aggregation) on few partitions when the input is small
    with shuffles_sized_to(candidates, judgments, attributes.table):
        if validate:
            checked = shell_check(candidates, judgments, contract, attributes=attributes, system=system,
                                  pool_version=pool_version)
            candidates, judgments, attributes = checked.candidates, checked.judgments, checked.attributes
            grade_scale = checked.grade_scale
        # each read by two of the plans' steps: cached, so that the input files are read once
        judgments, attributes = _read_once(judgments, attributes, contract, cache_handles)
        integer_ids = groups_on_integer_ids(candidates, judgments, contract)
        rows = scoring_rows(candidates, judgments, contract, system, pool_version, integer_ids)
        scored_dense, rest = (
            _score_dense(rows, candidates, judgments, contract, (system, pool_version), grade_scale, cache_handles)
            if dense_plan else (None, rows)
        )
        if rest is None:
            per_request = scored_dense
        else:
            # counted on the candidates alone, before any judgments join
            large = None if large_request is None else find_large_requests(
                candidates.select(*request_keys(candidates, contract, system, pool_version, not integer_ids)),
                large_request,
            )
            per_request = score_by_collecting(rest, judgments, contract, large)
            if scored_dense is not None:
                per_request = scored_dense.unionByName(per_request)
        # a row for every request of the night's population a system did not answer
        per_request = with_no_results(per_request, judgments, attributes, contract, (system, pool_version),
                                      set_aside)
        return per_request_table(per_request, candidates, attributes, contract, run_id)


def scoring_rows(
    candidates: DataFrame,
    judgments: DataFrame | None,
    contract: Contract,
    system: str | None,
    pool_version: str | None,
    integer_ids: bool,
) -> DataFrame:
    """The rows the plans score: one per candidate (:func:`prepare_candidates`, grouped on the
    request id's own integers when ``integer_ids``: :func:`groups_on_integer_ids`) with its
    ``gain`` under the contract, whether it is ``judged`` and, when a declared metric reads it,
    whether it is ``relevant`` (:meth:`Contract.relevant`)."""
    rows = prepare_candidates(
        candidates, judgments, contract, system=system, pool_version=pool_version,
        request_id_as_string=not integer_ids,
    )
    rows = rows.withColumn("gain", gain(F.col("grade"), contract.gain)).withColumn("judged", F.col("grade").isNotNull())
    return rows.withColumn("relevant", contract.relevant(F.col("grade"))) if contract.reads_relevance else rows


def per_request_table(
    per_request: DataFrame, candidates: DataFrame, attributes: Attributes, contract: Contract, run_id: str
) -> DataFrame:
    """The plans' rows (one per request, metrics per K) as :func:`score_requests` returns them: the
    attributes joined once per request, before the rows multiply by K (:func:`rows_per_k`), the
    empty-ideal policy applied (``error`` fails here), stamped with the run id and the contract."""
    per_request = rows_per_k(attach_attributes(per_request, candidates, attributes, contract), contract)
    if contract.empty_ideal.fails:
        _fail_on_empty_ideal(per_request)
    return per_request.select(
        F.lit(run_id).cast("string").alias("run_id"),
        *[c for c in per_request_columns(contract.metric_names) if c != "run_id"],
        *attributes.slices,
        F.lit(contract.fingerprint).alias("contract_fingerprint"),
    )


def _score_dense(
    rows: DataFrame,
    candidates: DataFrame,
    judgments: DataFrame | None,
    contract: Contract,
    literals: tuple[str | None, str | None],
    grade_scale: int | None,
    cache_handles: list[DataFrame] | None,
) -> tuple[DataFrame | None, DataFrame | None]:
    """The dense plan's share of ``rows``: ``(scored requests, rows left to collect)``, ``(None,
    rows)`` when the contract or its gains rule the plan out. The gains are counted over
    :func:`ndcg_spark.scoring.dense.gain_levels`: read from the grades when neither the contract
    declares them nor their scale is known. The cached aggregation goes to ``cache_handles``."""
    if not dense.applies(contract):
        return None, rows
    grade = contract.columns.grade
    grades = candidates if judgments is None else judgments
    levels = dense.gain_levels(contract, grades.select(grade) if grade in grades.columns else None, grade_scale)
    if levels is None:
        return None, rows
    literal = literal_keys(candidates, contract, *literals)
    scored, rest, cached = dense.score_dense_requests(rows, contract, literal, levels)
    if cached is not None and cache_handles is not None:
        cache_handles.append(cached)
    return scored, rest


def _read_once(
    judgments: DataFrame | None, attributes: Attributes, contract: Contract, cache_handles: list[DataFrame] | None
) -> tuple[DataFrame | None, Attributes]:
    """The judgments' and the attributes table's columns the plans read, each cached for this call
    (memory and disk; to ``cache_handles`` like the dense aggregation): the judgments are read by the
    scoring join and again for the ideal of a request nobody answered and for the population, the
    attributes for the population and for the columns they carry. So each input file is read once
    (``benchmarks/judging.py`` counts the passes: docs/benchmarks.md)."""
    def once(df: DataFrame, columns: tuple[str | None, ...]) -> DataFrame:
        present = [c for c in dict.fromkeys(columns) if c is not None and c in df.columns]  # a missing one: named later
        cached = persist_coalesced(df.select(*present))
        if cache_handles is not None:
            cache_handles.append(cached)
        return cached

    cols = contract.columns
    if judgments is not None:
        judgments = once(judgments, (cols.request_id, cols.doc_id, cols.grade))
    if attributes.table is not None:
        attributes = dataclasses.replace(
            attributes, table=once(attributes.table, (cols.request_id, attributes.weight, *attributes.slices)))
    return judgments, attributes


def groups_on_integer_ids(candidates: DataFrame, judgments: DataFrame | None, contract: Contract) -> bool:
    """Whether to group on the request id's own integers: one pre-joined table with an integer
    request id (hashing, shuffling and comparing it is far cheaper than its string, and the cast
    is one-to-one; the keys are cast to strings after grouping)."""
    request_id = contract.columns.request_id
    return (
        judgments is None
        and request_id in candidates.columns
        and isinstance(candidates.schema[request_id].dataType, INTEGRAL_TYPES)
    )


def rows_per_k(per_request: DataFrame, contract: Contract) -> DataFrame:
    """One row per request x K from the plans' fields (one column per K and field,
    :func:`~ndcg_spark.scoring.columns.metrics_columns`), with every metric's value under the
    contract's policies and the empty-ideal flag: a request is flagged ``empty_ideal`` when it has no
    ideal for some declared metric (:meth:`~ndcg_spark.measures.base.Metric.has_ideal`), and then set
    aside from every metric when the ``empty_ideal`` policy sets requests aside (``exclude``, and
    ``error``, which fails the run before anything is written) -- so every metric of a night is
    averaged over the same requests -- while ``zero`` scores 0 each metric whose own ideal is
    missing. A request returned nothing for (``no_results``) is set aside under ``no_results:
    exclude`` whatever its ideal (as trec_eval without -c leaves the query out), and under ``zero``
    scores 0 where its ideal is not empty. Each field is its K's column picked by the row's slot, so a
    field nobody reads is never computed."""
    names = contract.metric_names
    slots = range(len(contract.k))
    per_k = per_k_fields(names)
    flat = {metric_column(i, name) for i in slots for name in per_k}
    slot = F.col("_k_slot") + F.lit(1)
    fields = [F.element_at(F.array(*[F.col(metric_column(i, name)) for i in slots]), slot).alias(name)
              for name in per_k]
    # outer: ``k`` nullable, as the written table's column has always been
    exploded = F.posexplode_outer(F.array(*[F.lit(k) for k in contract.k])).alias("_k_slot", "k")
    scored = per_request.select("*", exploded)
    scored = scored.select(*[c for c in per_request.columns if c not in flat], "k", *fields)
    c, k, no_results = F.col, F.col("k"), F.col("no_results")
    own_empty = {m.name: ~m.has_ideal(c) for m in contract.metrics}
    empty = functools.reduce(operator.or_, own_empty.values())
    set_aside = no_results if contract.no_results.sets_aside else F.lit(False)
    values = {}
    for m in contract.metrics:
        value = F.when(set_aside, F.lit(None).cast("double"))
        if contract.empty_ideal.sets_aside:
            value = value.when(empty, F.lit(None).cast("double"))
        values[m.name] = (value.when(own_empty[m.name], contract.empty_ideal.column())
                          .when(no_results, F.lit(contract.no_results.value).cast("double"))
                          .otherwise(m.value(c, k)))
    scored = scored.withColumn("empty_ideal", empty).withColumns(values)
    if contract.unjudged_gains is None:  # no scale declared: no what-if
        return scored
    # a request without candidates has none to judge: each what-if is its metric's value
    return scored.withColumns({w: F.when(no_results, F.col(m.name)).otherwise(F.col(w))
                               for m in contract.metrics for w in m.what_ifs})


def _fail_on_empty_ideal(per_request: DataFrame) -> None:
    """Raise :class:`EmptyIdealError` (``empty_ideal: error``) naming how many requests have an
    empty ideal and one of them (among those a system returned candidates for: a request without
    any is counted as ``no_results``, under its own policy)."""
    empty = per_request.filter(F.col("empty_ideal") & ~F.col("no_results")).select("system", "request_id").distinct()
    example = empty.limit(1).collect()
    if example:
        n = empty.count()
        raise EmptyIdealError(
            f"contract.empty_ideal is 'error' and {n} request(s) have no positive grade (IDCG = 0), "
            f"e.g. request {example[0]['request_id']!r} of system {example[0]['system']!r}. "
            "Use empty_ideal: exclude (flag and count them apart) or zero (score 0, flagged) to run anyway."
        )
