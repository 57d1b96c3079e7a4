"""spark-submit entry point of the nightly evaluation.

    spark-submit --py-files dist/ndcg_spark.zip jobs/nightly_eval.py run --config conf/nightly.yaml

Wiring only: it hands its arguments to the library's CLI, which calls the run's one sequence
(:func:`ndcg_spark.job.run.run_job`) exactly as the console script does, and leaves the Spark
master to spark-submit (the YAML's ``spark.master`` applies to the console script only).
"""

from __future__ import annotations

import sys

from ndcg_spark.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], spark_master_from_config=False))
