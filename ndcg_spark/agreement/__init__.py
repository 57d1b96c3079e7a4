"""Does the offline metric predict the release? (SPEC §12): the experiment history of past published
comparisons with a controlled release (:mod:`~ndcg_spark.agreement.history`), and its summary per
metric × K × outcome (:mod:`~ndcg_spark.agreement.summary`, the statistics in
:mod:`~ndcg_spark.agreement.statistics`)."""
