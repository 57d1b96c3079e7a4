"""(h) (e)'s table as one lazy plan: every request exact, no job before the reader's, no cache.

(e) asks ``score_requests`` for RankingEvaluator's number: a per-request table that is then
averaged. ``score_requests`` computes the dense plan's aggregation in a job of its own, caches it,
lists the requests it does not serve and reads the table from the cache. The floor (f) computes
the mean alone, trusting every request to be in dense position order. Between the two, this
builds the same table as ``score_requests`` with the least work we found without a cache, as one
lazy plan that the reader's query runs:

* one hash aggregate per request with the dense plan's sums and evidence
  (:func:`ndcg_spark.scoring.dense.dense_sums`), kept as one struct so that the two readers below
  need all of it and Spark computes its read and its shuffle once (the same exchange, reused);
* the requests the evidence serves, scored from it (:func:`ndcg_spark.scoring.dense.score_served`);
* the others' keys broadcast, their candidates collected and sorted
  (:func:`ndcg_spark.scoring.collecting.score_collected_lists`); with no such request, adaptive
  execution drops that branch once the broadcast is known to be empty, so the candidates are
  read once.

Its rows are ``score_requests``' for the same contract, bit for bit, requests out of dense order
included (tests/test_benchmarks_smoke.py). Measured against (e), it is no cheaper
(docs/benchmarks.md): the cache is not what (e) pays for. What it leaves out, and
``score_requests`` cannot: a bound on the broadcast (a night whose positions have gaps would
broadcast every request's key; ``score_requests`` lists at most ``MAX_LISTED_NOT_SERVED`` and
otherwise collects every request), the large requests' cut, and the check of the inputs.
"""

from __future__ import annotations


def lazy_table(candidates, contract):
    """One row per request and K of ``contract`` from pre-joined ``candidates`` (a grade column,
    positions as the order, a gain the contract declares): ``score_requests``' rows, as one plan."""
    from pyspark.sql import functions as F

    from ndcg_spark.frames import join_null_safe
    from ndcg_spark.scoring import dense
    from ndcg_spark.config.attributes import Attributes
    from ndcg_spark.scoring.collecting import score_collected_lists
    from ndcg_spark.scoring.columns import REQUEST_KEYS
    from ndcg_spark.scoring.inputs import literal_keys
    from ndcg_spark.scoring.no_results import with_no_results
    from ndcg_spark.scoring.score import groups_on_integer_ids, per_request_table, scoring_rows

    contract = contract.resolve(candidates.columns)
    levels = dense.gain_levels(contract, None)
    if not dense.applies(contract) or levels is None:
        raise ValueError("the lazy table needs the dense plan: position order and a declared gain scale")
    rows = scoring_rows(candidates, None, contract, None, None, groups_on_integer_ids(candidates, None, contract))
    literal = literal_keys(candidates, contract, None, None)
    keys = tuple(k for k in REQUEST_KEYS if k not in literal)
    packed = rows.groupBy(*keys).agg(F.struct(*dense.dense_sums(contract, levels)).alias("_sums"))
    summed = dense.from_dense_sums(packed.select(*keys, "_sums.*"), contract, keys, levels)
    unserved = summed.filter(~F.col("_served")).select(*keys)
    collected = score_collected_lists(join_null_safe(rows, F.broadcast(unserved), keys, "left_semi"), None, contract)
    per_request = dense.score_served(summed, contract, literal).unionByName(collected)
    per_request = with_no_results(per_request, None, Attributes(), contract, (None, None))
    return per_request_table(per_request, candidates, Attributes(), contract, "adhoc")
