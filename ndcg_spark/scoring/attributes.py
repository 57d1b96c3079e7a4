"""Attaching the request attributes (:class:`~ndcg_spark.config.attributes.Attributes`: traffic weight,
slice columns) to the scored requests."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.attributes import Attributes
from ndcg_spark.config.contract import Contract
from ndcg_spark.errors import InputError
from ndcg_spark.scoring.columns import require_column


def attach_attributes(
    per_request: DataFrame, candidates: DataFrame, attributes: Attributes, contract: Contract
) -> DataFrame:
    """``per_request`` (keyed by ``request_id``) with the attribute columns joined on and a
    ``weight`` column; a request without a weight is an error when no default weight is set."""
    wanted = [c for c in (attributes.weight, *attributes.slices) if c is not None]
    if wanted:
        values = _attribute_values(candidates, attributes, contract, wanted)
        per_request = per_request.join(values, "request_id", "left")
    per_request = per_request.withColumn("weight", _weight(attributes))
    if attributes.weight is not None and attributes.default_weight is None:
        missing = per_request.filter(F.col("weight").isNull()).select("request_id").limit(1).collect()
        if missing:
            raise InputError(
                f"attributes.weight: request {missing[0]['request_id']!r} has no weight and "
                "attributes.default_weight is not set (rule: weight_missing)"
            )
    return per_request


def _attribute_values(
    candidates: DataFrame, attributes: Attributes, contract: Contract, wanted: list[str]
) -> DataFrame:
    """One row per request id (as a string) with the ``wanted`` columns, from the attributes
    table or else the candidates; min() per request keeps the choice deterministic should a
    column vary within a request."""
    if attributes.table is not None:
        source, source_name = attributes.table, "attributes"
    else:
        source, source_name = candidates, "candidates"
    source_id = contract.columns.request_id
    require_column(source, source_id, "request_id", source_name)
    for c in wanted:
        require_column(source, c, c, source_name, numeric=(c == attributes.weight))
    return source.groupBy(F.col(source_id).cast("string").alias("request_id")).agg(*[F.min(c).alias(c) for c in wanted])


def _weight(attributes: Attributes) -> Column:
    """The request's weight: 1.0 without a weight column, else its value or the default weight."""
    if attributes.weight is None:
        return F.lit(1.0)
    if attributes.default_weight is None:
        return F.col(attributes.weight).cast("double")
    return F.coalesce(F.col(attributes.weight).cast("double"), F.lit(float(attributes.default_weight)))
