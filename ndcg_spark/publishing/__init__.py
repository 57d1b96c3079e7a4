"""Publishing: a run written whole by the one attempt that holds it -- the run-status table
(:mod:`~ndcg_spark.publishing.status`), the lease and its heartbeat, the attempts table, signals, and
each step's job tags and progress lines (:mod:`~ndcg_spark.publishing.steps`)."""
