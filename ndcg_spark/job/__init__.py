"""The nightly job: the night's order (:mod:`~ndcg_spark.job.run`), the stages' wiring, the session, init and the demo."""
