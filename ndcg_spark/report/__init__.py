"""The run's report: data collected from the tables (Spark), HTML and SVG rendering (pure), text summaries.

``data`` (Spark -> plain rows, and the :class:`~ndcg_spark.report.data.ReportSources` it reads),
``format`` (numbers and cells), ``charts`` (SVG), ``sections_run`` / ``sections_comparison`` /
``sections_contract`` (the page's sections), ``html`` (the page). Writing the files of a job's
report is the job's side: :mod:`ndcg_spark.job.report_files`.
"""
