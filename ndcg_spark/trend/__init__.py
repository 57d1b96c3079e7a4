"""Night over night: each published run beside the previous comparable one (:func:`~ndcg_spark.trend.series.trend`)."""
