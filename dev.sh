#!/usr/bin/env bash
# The README's two commands, each doing all its own set-up on a fresh machine:
#   bash dev.sh demo    set up, write the sample data, publish two earlier demo nights (ndcg-spark demo),
#                       run the nightly job on local Spark, then compare hybrid with bm25
#   bash dev.sh test    set up, run the whole test suite (what CI runs); set-up includes the suite's JVM class
#                       archive, built once per virtualenv (tests/class_archive.py)
#   bash dev.sh test-fast   the library's tests: without those marked slow (cluster, extra JVMs, browser,
#                           benchmark, simulations, fuzzing, the oracle grids past their core) or e2e (whole
#                           jobs through the console script)
#   bash dev.sh test-on VERSION   the correctness core (the oracle grids' cores: every value of every choice
#                           once; the grids whole run on the newest) on another pyspark (CI: the oldest 3.5.x), in
#                           its own virtualenv .venv-pyspark-VERSION: that pyspark installed first, then this
#                           package, which must keep it (a range, not a pin); per-request rows compared with .venv's
#   bash dev.sh test-connect  the Spark Connect lane (tests/test_connect.py, marker connect): its own
#                             virtualenv .venv-connect (the connect extra: grpc, pandas, pyarrow) and its
#                             own pytest process, with SPARK_REMOTE=local[2] (a local Connect server)
#   bash dev.sh test-formats [VERSION]  the format lane: the tests marked formats (Delta Lake and Iceberg tables
#                           written and read for real) on each pyspark of tests/lakehouse.py (or VERSION alone),
#                           each in its own virtualenv .venv-formats-VERSION (as test-on), with the formats'
#                           jars from Maven Central (spark.jars.packages) in the Ivy cache ~/.cache/ndcg-spark/ivy;
#                           the whole nights (tests/test_format_runs.py) on the newest (or VERSION) only
#   bash dev.sh setup-lanes [VERSION...]  the lanes' virtualenvs set up ahead, each as its own command
#                           sets it up (test-on's for each VERSION, test-connect's, test-formats' with
#                           their jars): CI does it in the background while the suite runs
#   bash dev.sh package build dist/ndcg_spark.zip for spark-submit --py-files
# Set-up: a virtualenv in .venv with this package (editable) and its test extras, installed
# again only when pyproject.toml changes. Needs python3 (3.11+) and a JDK 17 on the PATH.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "dev.sh: no Java found. ndcg-spark runs on Spark, which needs a JDK 17 (java on the PATH or JAVA_HOME)." >&2
  exit 2
fi

python=${PYTHON:-python3}
# setup VENV EXTRAS [PYSPARK_VERSION]: the virtualenv VENV with this package (editable) and its
# EXTRAS, installed again only when pyproject.toml changes; with a version, that pyspark goes in
# first (as a cluster's would be) and the package must keep it
setup() {
  if [ ! -x "$1/bin/python" ]; then
    "$python" -m venv "$1"
  fi
  local stamp="$1/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    if [ -n "${3:-}" ]; then
      "$1/bin/python" -m pip install --quiet --disable-pip-version-check "pyspark==$3"
    fi
    "$1/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[$2]"
    # pyspark 3.5.2 to 3.5.x keep numpy below 2, with which pyarrow 26 and later do not import (their
    # metadata does not say so, so pip installs them): then the newest pyarrow that does
    if [ "$("$1/bin/python" -c 'import numpy; print(numpy.__version__.split(".")[0])')" = 1 ]; then
      "$1/bin/python" -m pip install --quiet --disable-pip-version-check "pyarrow<26"
    fi
    rm -f "$1"/.installed-*
    touch "$stamp"
  fi
}

# pinned VENV VERSION: the virtualenv VENV with that pyspark (setup), which installing this package
# must have kept
pinned() {
  setup "$1" test "$2"
  local have
  have=$("$1/bin/python" -c 'import pyspark; print(pyspark.__version__)')
  if [ "$have" != "$2" ]; then
    echo "dev.sh: installing ndcg-spark replaced pyspark $2 with $have" >&2
    exit 1
  fi
}

# the suite's JVMs start from a class archive of what a run loads, built once per virtualenv, JDK
# and pyspark (tests/class_archive.py; without one they load their classes as usual)
class_archive() { NDCG_TEST_CLASS_ARCHIVE=$(.venv/bin/python tests/class_archive.py || true); export NDCG_TEST_CLASS_ARCHIVE; }

cmd=${1:-}
shift || true
# the suite on NDCG_TEST_WORKERS pytest-xdist workers, each module's tests on one worker, the longest
# modules first (conftest.py); -n 0 after the command runs it in one process. Default 3 for the whole
# suite (much of it waits on child JVMs: a third worker fills the waits), 2 for the fast lane (all
# Spark in the workers' own JVMs: one per core). Measured: docs/benchmarks.md "The test suite and CI".
parallel() { echo "-n ${NDCG_TEST_WORKERS:-$1} --dist loadfile --no-loadscope-reorder"; }
if [ "$cmd" != test-connect ]; then
  setup .venv test
fi
case "$cmd" in
  demo)
    # the sample data (when data/sample has none), two earlier nights, today's run and the comparison
    # of hybrid against bm25, in one Spark session (ndcg_spark/job/demo.py); --quick: a smaller sample
    .venv/bin/ndcg-spark demo --config conf/local.yaml "$@"
    ;;
  test)
    class_archive
    .venv/bin/python -m pytest $(parallel 3) "$@"
    ;;
  test-fast)
    class_archive
    .venv/bin/python -m pytest $(parallel 2) -m "not slow and not e2e" "$@"
    ;;
  test-on)
    version=${1:?usage: bash dev.sh test-on PYSPARK_VERSION (e.g. 3.5.0)}
    shift
    pinned ".venv-pyspark-$version" "$version"
    NDCG_REFERENCE_PYTHON="$PWD/.venv/bin/python" ".venv-pyspark-$version/bin/python" -m pytest $(parallel 2) \
      -m "not slow and not e2e" tests/test_versions.py tests/test_oracle_agreement.py tests/test_dense_plan.py \
      tests/test_aggregate.py tests/test_compare.py tests/test_validation.py tests/test_api_validation.py \
      tests/test_operability.py tests/test_trec_inputs.py tests/test_unjudged_bounds.py tests/test_shell_check.py \
      "tests/test_guardrails.py::test_release_statistics_intervals_and_verdicts_match_a_plain_python_oracle" \
      "tests/test_guardrails.py::test_offline_flags_per_system_k_and_slice_match_an_oracle" \
      "tests/test_docs.py::test_python_examples_run[README.md]" ndcg_spark "$@"
    ;;
  test-formats)
    versions=$(.venv/bin/python tests/lakehouse.py)
    if [ -n "${1:-}" ] && [[ " $versions " == *" $1 "* ]]; then
      versions=$1
      shift
    fi
    failed=""
    newest=${versions%% *}
    for version in $versions; do
      pinned ".venv-formats-$version" "$version"
      # the jars into the Ivy cache once, before two workers would resolve them into it together
      ".venv-formats-$version/bin/python" tests/lakehouse.py --resolve || { failed="$failed $version"; continue; }
      # test by test to whichever worker is free (two files, one far longer than the other); every
      # version runs, and the lane fails after them if one did
      # the formats' own operations (tests/test_formats.py) on every Spark line; the whole nights on top
      # of them (tests/test_format_runs.py: reruns, two attempts, a killed driver -- this package's
      # publishing, the same code on every line) on the newest only, unless NDCG_FORMATS_WHOLE=1
      files="tests/test_formats.py"
      if [ "$version" = "$newest" ] || [ -n "${NDCG_FORMATS_WHOLE:-}" ]; then files="$files tests/test_format_runs.py"; fi
      NDCG_TEST_FORMATS=1 ".venv-formats-$version/bin/python" -m pytest -n "${NDCG_TEST_WORKERS:-2}" --dist worksteal \
        -m formats $files "$@" || failed="$failed $version"
    done
    if [ -n "$failed" ]; then
      echo "dev.sh: the format lane failed on pyspark$failed" >&2
      exit 1
    fi
    ;;
  test-connect)
    setup .venv-connect test,connect
    SPARK_REMOTE='local[2]' .venv-connect/bin/python -m pytest -m connect tests/test_connect.py "$@"
    ;;
  setup-lanes)
    for version in "$@"; do
      pinned ".venv-pyspark-$version" "$version"
    done
    setup .venv-connect test,connect
    for version in $(.venv/bin/python tests/lakehouse.py); do
      pinned ".venv-formats-$version" "$version"
      # a failed resolution is the format lane's to report (test-formats resolves again)
      ".venv-formats-$version/bin/python" tests/lakehouse.py --resolve || true
    done
    ;;
  package)
    .venv/bin/python -m ndcg_spark.job.packaging "$@"
    ;;
  *)
    echo "usage: bash dev.sh demo|test|test-fast|test-on VERSION|test-formats [VERSION]|test-connect|setup-lanes [VERSION...]|package [args]" >&2
    exit 2
    ;;
esac
