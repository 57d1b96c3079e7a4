"""trec_eval itself, the program, as a reference: its 9.0.4 build from Maven Central.

``uk.ac.gla.dcs.terrierteam:jtreceval`` (the Terrier team's Java wrapper) carries trec_eval's own
binaries; the Linux x86-64 one is taken out of the jar (checked against the SHA-1 Maven Central
publishes and a SHA-256 of the binary) into a cache folder kept between runs. Beside pytrec_eval
(trec_eval's C code as a Python extension, which scores only the queries of the run) it gives what
only the program does: ``-c`` (average over every qrels query, an unanswered one scoring 0).

Where Maven Central cannot be reached, or the machine is not Linux x86-64, :func:`trec_eval_binary`
returns None and the tests that need it are skipped, saying why.
"""

from __future__ import annotations

import hashlib
import os
import platform
import stat
import subprocess
import urllib.request
import zipfile
from pathlib import Path

VERSION = "0.0.5"
JAR_URL = ("https://repo1.maven.org/maven2/uk/ac/gla/dcs/terrierteam/jtreceval/"
           f"{VERSION}/jtreceval-{VERSION}.jar")
JAR_SHA1 = "cefa82da633b561733386c0325e2c6ce0993847f"
BINARY = "trec_eval-linux-amd64"
BINARY_SHA256 = "a282ee9c22966f306c4bcbbfda9142ff22f371012a2994782194e6afdadbe6e4"
CACHE = Path(os.environ.get("NDCG_TEST_CACHE", Path.home() / ".cache" / "ndcg-spark")) / f"jtreceval-{VERSION}"


def trec_eval_binary() -> tuple[Path | None, str]:
    """``(path of the trec_eval program, "")``, or ``(None, why not)``."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None, f"trec_eval's jtreceval build has no binary for {platform.system()} {platform.machine()}"
    binary = CACHE / BINARY
    if not (binary.is_file() and _sha256(binary) == BINARY_SHA256):
        try:
            CACHE.mkdir(parents=True, exist_ok=True)
            jar = CACHE / f"jtreceval-{VERSION}.jar"
            if not (jar.is_file() and _sha1(jar) == JAR_SHA1):
                with urllib.request.urlopen(JAR_URL, timeout=60) as response:  # noqa: S310 - a fixed https URL
                    jar.write_bytes(response.read())
            if _sha1(jar) != JAR_SHA1:
                return None, f"{JAR_URL}: SHA-1 {_sha1(jar)}, not Maven Central's {JAR_SHA1}"
            with zipfile.ZipFile(jar) as archive:
                binary.write_bytes(archive.read(BINARY))
        except OSError as exc:
            return None, f"trec_eval's binary could not be fetched from Maven Central ({JAR_URL}): {exc}"
        if _sha256(binary) != BINARY_SHA256:
            return None, f"{binary}: not the trec_eval 9.0.4 binary this suite was checked with"
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return binary, ""


def run_trec_eval(binary: Path, qrels: Path, run: Path, *options: str) -> dict[tuple[str, str], float]:
    """``trec_eval -q <options> qrels run`` as ``{(measure, query): value}`` (query ``all``: the mean)."""
    done = subprocess.run([str(binary), "-q", *options, str(qrels), str(run)], capture_output=True, text=True,
                          check=True, timeout=120)
    out = {}
    for line in done.stdout.splitlines():
        measure, query, value = line.split()
        if measure.startswith("ndcg_cut"):
            out[(measure, query)] = float(value)
    return out


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()  # noqa: S324 - Maven Central's checksum


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
