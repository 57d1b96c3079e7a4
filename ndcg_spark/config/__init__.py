"""The declared choices, as frozen, validated dataclasses: pure Python, no pyspark.

The contract (:mod:`ndcg_spark.config.contract`) is what moves the number and is fingerprinted;
the stage specs say how each stage reports it. Every error names the dotted path of the bad field.
"""
