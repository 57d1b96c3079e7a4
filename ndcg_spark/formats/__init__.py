"""Input file formats beyond Parquet and CSV: TREC run and qrels files (:mod:`ndcg_spark.formats.trec`)."""
