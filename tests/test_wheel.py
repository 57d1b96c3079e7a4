"""The installed package alone starts a night (issue 58): the wheel built from this checkout,
installed into a fresh virtualenv, run from an empty folder outside the checkout.

The virtualenv gets the wheel and nothing of the checkout; its dependencies (pyspark, numpy,
pyarrow, pandas, pyyaml) are the suite's own, reached through a ``.pth`` file, so that the test
does not download 400 MB (the editable install's finder is not among them: a ``.pth`` file in a
folder a ``.pth`` file adds is not read). ``ndcg-spark init --trec`` on trec_eval's own test files,
then ``run`` and ``show --per-request``: every line trec_eval's ``out.test.aq`` prints for a measure
the listing has is the listing's line (skipped without trec_eval's ``test/`` folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.peers import TREC_EVAL_SUITE as SUITE, needs_trec_eval_suite

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def _env() -> dict[str, str]:
    """This environment without what points into the checkout's or the suite's Python: the suite's
    session set PYSPARK_PYTHON to its interpreter, and a PYTHONPATH would show pip the checkout's
    package as installed."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    return {k: v for k, v in os.environ.items() if k not in drop}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin folder of a fresh virtualenv with the checkout's wheel installed."""
    work = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(work / "dist")], capture_output=True, text=True, timeout=600, env=_env())
    if built.returncode != 0 and "bdist_wheel" in built.stderr:  # no `wheel` package: build it isolated
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                                "-w", str(work / "dist")], capture_output=True, text=True, timeout=600, env=_env())
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "dist").glob("ndcg_spark-*.whl")
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True)
    site = Path(subprocess.check_output([str(env_dir / "bin" / "python"), "-c",
                                         "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True,
                                        env=_env()).strip())
    (site / "suite_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    done = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=600, env=_env())
    assert done.returncode == 0, done.stderr
    return env_dir / "bin"


def _run(bin_dir: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = _env()
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(bin_dir / "ndcg-spark"), *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def test_the_wheels_package_is_its_own_not_the_checkouts(installed, tmp_path):
    where = subprocess.check_output([str(installed / "python"), "-c", "import ndcg_spark; print(ndcg_spark.__file__)"],
                                    cwd=tmp_path, text=True, env=_env()).strip()
    assert Path(where).is_relative_to(installed.parent) and not Path(where).is_relative_to(ROOT)
    version = _run(installed, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.startswith("ndcg-spark 0.")


def test_init_writes_the_embedded_default_as_the_checkout_ships_it(installed, tmp_path):
    done = _run(installed, tmp_path, "init", "night")
    assert done.returncode == 0, done.stderr
    written = tmp_path / "night" / "conf" / "local.yaml"
    assert written.read_bytes() == (ROOT / "conf" / "local.yaml").read_bytes()
    assert f"wrote {written}" in done.stdout and "ndcg-spark demo --config conf/local.yaml" in done.stdout
    again = _run(installed, tmp_path, "init", "night")
    assert again.returncode == 2 and "exists: keep it, or pass --force" in again.stderr


@needs_trec_eval_suite
def test_a_trec_night_from_the_wheel_alone_lists_what_trec_eval_prints(installed, tmp_path):
    night = tmp_path / "night"
    files = night / "files"
    files.mkdir(parents=True)
    for name in ("qrels.test", "results.test"):
        (files / name).write_bytes((SUITE / name).read_bytes())
    done = _run(installed, tmp_path, "init", "night", "--trec", "night/files/qrels.test", "night/files/results.test")
    assert done.returncode == 0, done.stderr
    text = (night / "conf" / "trec.yaml").read_text(encoding="utf-8")
    assert "{path: ../files/results.test, format: trec_run}" in text  # relative to the YAML's own folder
    ran = _run(installed, night, "run", "--config", "conf/trec.yaml", "--run-id", "trec")
    assert ran.returncode == 0, ran.stderr
    assert (night / "reports" / "trec" / "report.html").is_file()
    shown = _run(installed, night, "show", "--config", "conf/trec.yaml", "--run-id", "trec", "--per-request")
    assert shown.returncode == 0, shown.stderr
    ours = shown.stdout.splitlines()
    names = {line.split("\t")[0].strip() for line in ours}
    theirs = [line for line in (SUITE / "out.test.aq").read_text(encoding="utf-8").splitlines()
              if line.split("\t")[0].strip() in names]
    assert {"ndcg_cut_10", "P_5", "map_cut_100", "recip_rank", "success_10"} <= {t.split("\t")[0].strip() for t in theirs}
    shared = {t.split("\t")[0].strip() for t in theirs}
    assert [line for line in ours if line.split("\t")[0].strip() in shared] == theirs
