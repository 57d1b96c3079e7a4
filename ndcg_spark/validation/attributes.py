"""Request attributes under validation: the slice columns present, the traffic weight a number.

The attribute columns are checked on the attributes table, or on the candidates when the
attributes come from there (no table of their own).

>>> from ndcg_spark import Attributes, Contract
>>> attrs = Attributes(table=spark.createDataFrame([("q1", 2.0), ("q2", -1.0), (" ", 1.0)],
...                                                "request_id string, weight double"), weight="weight")
>>> flagged = attribute_rows(InputTable(attrs.table, "attributes"), Contract(), attrs)
>>> flagged.select("request_id", "weight", "__v_rules").orderBy("weight").show()
+----------+------+--------------------+
|request_id|weight|           __v_rules|
+----------+------+--------------------+
|        q2|  -1.0|    [weight_invalid]|
|          |   1.0|[request_id_missing]|
|        q1|   2.0|                  []|
+----------+------+--------------------+
<BLANKLINE>
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ndcg_spark.config.contract import Contract
from ndcg_spark.config.attributes import Attributes
from ndcg_spark.validation.flags import Flag, flag_rows
from ndcg_spark.validation.input_table import InputTable, is_blank, not_finite


def attribute_flags(table: InputTable, attributes: Attributes) -> list[Flag]:
    """Check the slice columns are present; flag ``weight_invalid`` when a weight column is named."""
    hint = "set attributes.weight to the traffic-weight column"
    for s in attributes.slices:
        table.require(s, s, "listed in attributes.slices")
    if attributes.weight is None:
        return []
    weight, weight_bad = table.number(attributes.weight, "weight", hint)
    return [("weight_invalid", weight_bad | (weight < 0) | not_finite(weight))]


def attribute_rows(table: InputTable, contract: Contract, attributes: Attributes) -> DataFrame:
    """The attributes table with its normalized request id and the row rules each row breaks."""
    rid = table.identifier(contract.columns.request_id, "request_id")
    flags = [("request_id_missing", is_blank(rid)), *attribute_flags(table, attributes)]
    return flag_rows(table, {"__v_rid": F.when(~is_blank(rid), rid)}, flags)


__all__ = ["attribute_flags", "attribute_rows"]
