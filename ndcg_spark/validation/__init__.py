"""Named input rules: detection, quarantine and row accounting.

The rules and their declared handling are pure configuration
(:mod:`ndcg_spark.config.validation_spec`); this package applies them to DataFrames:

- :mod:`~ndcg_spark.validation.validate`: :func:`validate_inputs`, the whole check of one run's inputs;
- :mod:`~ndcg_spark.validation.shell_check`: the shell's check, run once per cached input;
- :mod:`~ndcg_spark.validation.input_table`: one input table, its schema rules and parsed columns;
- :mod:`~ndcg_spark.validation.candidates`, :mod:`~ndcg_spark.validation.judgments`,
  :mod:`~ndcg_spark.validation.attributes`: the row and request rules of each input;
- :mod:`~ndcg_spark.validation.flags`: the rule flags every flagged row carries;
- :mod:`~ndcg_spark.validation.flagging`: the inputs flagged together, and each row's fate;
- :mod:`~ndcg_spark.validation.counts`: rows per rule, by the count-only detector or from the flags;
- :mod:`~ndcg_spark.validation.failures`: the errors that name rule, count and example;
- :mod:`~ndcg_spark.validation.quarantine`: the quarantine table;
- :mod:`~ndcg_spark.validation.accounting`: ``rows read = rows scored + rows quarantined``.
"""
