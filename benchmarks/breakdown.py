"""Where one contender's time goes: its Spark jobs, each operator's time and the JVM's compiling.

Runs one contender of ``benchmarks/run.py`` (``benchmarks/contenders.py``) once, in a fresh
process, on the same generated data, with Spark's UI on, and prints what Spark recorded of the
work (``benchmarks/sparkui.py``)::

    .venv/bin/python benchmarks/breakdown.py ndcg_spark_evaluator_number --rows 20000000
    .venv/bin/python benchmarks/breakdown.py ndcg_spark --rows 20000000 --min-seconds 0.5

The work's wall seconds are the contender's own figure (as ``run.py`` reports it); jobs that start
after it ended are the contender reading its result back. Figures of a profiled run are not the
benchmark's: the UI's bookkeeping costs a little.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sparkui  # noqa: E402  (benchmarks/ is not a package)
import run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("contender", choices=[c for c in (*run.CONTENDERS, *run.OPTIONAL) if c != "numpy"])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--skew", type=int, default=0, help="candidates of one extra, huge request")
    run.data_arguments(parser)
    parser.add_argument("--min-seconds", type=float, default=0.1, help="show operator times from this many seconds")
    args = parser.parse_args(argv)

    data = run.ensure_data(args, args.rows, args.skew)
    with tempfile.TemporaryDirectory() as tmp:
        result_file, profile_file = Path(tmp) / "result.json", Path(tmp) / "profile.json"
        cmd = run.contender_command(args, args.contender, data, Path(args.out), result_file)
        run._run([*cmd, "--profile", str(profile_file)], f"contender {args.contender}")
        result, profile = json.loads(result_file.read_text()), json.loads(profile_file.read_text())
    print(f"{run.LABELS[args.contender]}, {args.rows + args.skew:,} rows: work {result['work_s']:.2f} s "
          f"(JVM CPU {result['work_cpu_s']:.1f} s), Spark start {result['start_s']:.1f} s apart")
    print(sparkui.report(profile, args.min_seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
