"""The job YAMLs ``ndcg-spark init`` writes: the checkout's ``conf/*.yaml``, carried in the wheel."""
