#!/usr/bin/env bash
# The README's two commands, each doing all its own set-up on a fresh machine:
#   bash dev.sh demo    set up, write the sample data, publish two earlier demo nights (jobs/demo_nights.py),
#                       run the nightly job on local Spark, then compare hybrid with bm25
#   bash dev.sh test    set up, run the whole test suite (what CI runs)
#   bash dev.sh test-fast   the library's tests: without those marked slow (cluster, extra JVMs, browser,
#                           benchmark, simulations, fuzzing) or e2e (whole jobs through the console script)
#   bash dev.sh test-on VERSION   the correctness core on another pyspark (CI: the oldest 3.5.x and a 4.0.x), in
#                           its own virtualenv .venv-pyspark-VERSION: that pyspark installed first, then this
#                           package, which must keep it (a range, not a pin); per-request rows compared with .venv's
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
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test,bench]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi

cmd=${1:-}
shift || true
case "$cmd" in
  demo)
    # (again when an older checkout wrote it without the release outcomes)
    [ -d data/sample/release_outcomes ] || .venv/bin/ndcg-spark sample --out data/sample
    # two earlier nights (an older contract, more no-answer traffic) so the trend shows something
    .venv/bin/python jobs/demo_nights.py --config conf/local.yaml
    .venv/bin/ndcg-spark run --config conf/local.yaml "$@"
    # hybrid against bm25 on the same night: the report's first screen gets the verdict
    .venv/bin/ndcg-spark compare --config conf/local.yaml "$@"
    ;;
  test)
    .venv/bin/python -m pytest "$@"
    ;;
  test-fast)
    .venv/bin/python -m pytest -m "not slow and not e2e" "$@"
    ;;
  test-on)
    version=${1:?usage: bash dev.sh test-on PYSPARK_VERSION (e.g. 3.5.0)}
    shift
    venv=".venv-pyspark-$version"
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    if [ ! -f "$venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)" ]; then
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyspark==$version"
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test]'
      rm -f "$venv"/.installed-*
      touch "$venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
    fi
    have=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
    if [ "$have" != "$version" ]; then
      echo "dev.sh: installing ndcg-spark replaced pyspark $version with $have" >&2
      exit 1
    fi
    NDCG_REFERENCE_PYTHON="$PWD/.venv/bin/python" "$venv/bin/python" -m pytest -m "not slow and not e2e" \
      tests/test_versions.py tests/test_oracle_agreement.py tests/test_dense_plan.py tests/test_aggregate.py \
      tests/test_compare.py tests/test_validation.py "tests/test_docs.py::test_python_examples_run[README.md]" \
      ndcg_spark "$@"
    ;;
  package)
    .venv/bin/python -m ndcg_spark.job.packaging "$@"
    ;;
  *)
    echo "usage: bash dev.sh demo|test|test-fast|test-on VERSION|package [args]" >&2
    exit 2
    ;;
esac
