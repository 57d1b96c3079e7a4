"""The run-metadata row: what a run was computed under, readable, beside its row counts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession

from ndcg_spark.aggregation.columns import RUN_METADATA_SCHEMA
from ndcg_spark.config.aggregate_spec import AggregateSpec
from ndcg_spark.config.contract import Contract
from ndcg_spark.version import __version__

__all__ = ["run_metadata"]


def run_metadata(
    spark: SparkSession,
    run_id: str,
    *,
    contract: Contract,
    spec: AggregateSpec,
    row_counts: Mapping[str, int],
    created_at: dt.datetime | None = None,
    inputs: Sequence[tuple] | None = None,
) -> DataFrame:
    """The run-metadata row of ``run_id``: the readable contract, the aggregate spec, row counts
    and what the run read.

    ``contract`` must be the *resolved* contract the per-request table was scored under (its
    fingerprint is the one stamped on every row of the run); ``row_counts`` maps a table (or an
    input's counter, e.g. ``candidates.rows_read``) to its row count; ``inputs`` are stage 1's
    inputs as it read them, each a row of
    :data:`~ndcg_spark.aggregation.columns.INPUT_READ_SCHEMA` (None: not recorded, the column null).

    Returns
    -------
    DataFrame of one row with :data:`~ndcg_spark.aggregation.columns.RUN_METADATA_SCHEMA`.

    Examples
    --------
    >>> meta = run_metadata(spark, "2026-11-29", contract=Contract(k=[3], order="position"),
    ...                     spec=AggregateSpec(), row_counts={"per_request": 6, "aggregate": 2})
    >>> meta.select("run_id", "contract_fingerprint", F.col("row_counts")["per_request"].alias("rows")).show()
    +----------+--------------------+----+
    |    run_id|contract_fingerprint|rows|
    +----------+--------------------+----+
    |2026-11-29|    f8a3a72347d4e364|   6|
    +----------+--------------------+----+
    <BLANKLINE>
    """

    stamp = created_at or dt.datetime.now(dt.timezone.utc)
    counts = {str(k): int(v) for k, v in sorted(row_counts.items())}
    return spark.createDataFrame(
        [(run_id, contract.fingerprint, contract.to_json(), spec.to_json(), counts, __version__, stamp,
          None if inputs is None else [tuple(i) for i in inputs])],
        RUN_METADATA_SCHEMA,
    )
