"""The quarantine table (``outputs.quarantine``): the rows set aside, each with the rule that sent
it there, every rule the row broke itself, its keys and the original row as JSON.

>>> empty_quarantine(spark).columns == list(QUARANTINE_COLUMNS)
True
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.schemas import QUARANTINE
from ndcg_spark.validation.flags import rule_name
from ndcg_spark.validation.flagging import FlaggedInputs

#: Columns of the quarantine table (``outputs.quarantine``), partitioned by ``run_id`` (declared in
#: :data:`ndcg_spark.config.schemas.QUARANTINE`).
QUARANTINE_COLUMNS = QUARANTINE.names

_SCHEMA = QUARANTINE.ddl


def empty_quarantine(spark: SparkSession) -> DataFrame:
    """A quarantine table with no rows."""
    return spark.createDataFrame([], _SCHEMA)


def quarantine_rows(flagged: FlaggedInputs, run_id: str, contract: Contract) -> DataFrame:
    """The quarantined rows (``__v_q``) of every flagged input, in the :data:`QUARANTINE_COLUMNS` shape."""
    parts = []
    for name, (table, df) in flagged.items():
        is_candidates = name == "candidates"
        none = F.lit(None).cast("string")
        parts.append(
            df.filter(F.col("__v_q")).select(
                F.lit(run_id).cast("string").alias("run_id"),
                F.lit(name).alias("input"),
                rule_name(F.col("__v_reason")).alias("rule"),
                F.array_join(F.col("__v_rules"), ",").alias("row_rules"),
                (F.col("__v_sys") if is_candidates else none).alias("system"),
                (F.col("__v_pool") if is_candidates else none).alias("pool_version"),
                F.col("__v_rid").alias("request_id"),
                (F.col("__v_did") if "__v_did" in df.columns else none).alias("doc_id"),
                table.json_row().alias("row"),
                F.lit(contract.fingerprint).alias("contract_fingerprint"),
            )
        )
    return reduce(DataFrame.unionByName, parts)


__all__ = ["QUARANTINE_COLUMNS", "empty_quarantine", "quarantine_rows"]
