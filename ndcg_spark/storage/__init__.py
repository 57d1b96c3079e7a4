"""Storage: reading inputs and writing run-partitioned tables (:mod:`~ndcg_spark.storage.io`), each
table format one object (:mod:`~ndcg_spark.storage.formats`), catalog and versioned tables
(:mod:`~ndcg_spark.storage.tables`), and what a night read (:mod:`~ndcg_spark.storage.lineage`)."""
