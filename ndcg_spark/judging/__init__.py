"""What to judge next (SPEC §10): how far judging each unjudged document could move a request, a
mean or a comparison, and the documents that settle the most of the unjudged spread for a budget.

* :mod:`~ndcg_spark.judging.lists`: each request's lists, collected once (the one pass over the inputs);
* :mod:`~ndcg_spark.judging.swings`: a document's swing on its request's NDCG, over every grade of the
  scale (:func:`judging_swings`);
* :mod:`~ndcg_spark.judging.target`: a plan's target (one system's mean, or two rankers' delta), each
  document's swing on it and the target's unjudged spread;
* :mod:`~ndcg_spark.judging.spread`: a request's unjudged range (every grading of its unjudged
  documents) and the most a judging can leave of it (Python; one list's combinations in numpy);
* :mod:`~ndcg_spark.judging.batch`: each request's swings, range and bound in one numpy pass over
  each partition's lists on the executors (``mapInArrow``);
* :mod:`~ndcg_spark.judging.order`: the plan's order, the steps that settle the most per judgment (pure Python);
* :mod:`~ndcg_spark.judging.plan`: :func:`judge_next`, the plan.

docs/judging.md explains the swing, the spread, the plan's order and their limits.
"""
