"""Build what spark-submit needs: one zip for ``--py-files`` with ``ndcg_spark`` and PyYAML.

    python -m ndcg_spark.job.packaging            # -> dist/ndcg_spark.zip   (bash dev.sh package)

The zip holds the ``ndcg_spark`` package and the pure-Python part of ``yaml`` (the driver reads
the job YAML; PyYAML falls back to pure Python without its C extension), so a cluster needs only
a Python with pyspark's own requirements. The zip is byte-for-byte reproducible: entries are
sorted and stamped with a fixed time, so the same code gives the same file (and checksum).
"""

from __future__ import annotations

import argparse
import zipfile
from collections.abc import Sequence
from pathlib import Path

_FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def _package_files(package_dir: Path) -> list[Path]:
    return sorted(
        p for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts
    )


def build_pyfiles_zip(out: str | Path) -> Path:
    """Write the ``--py-files`` zip to ``out`` and return its path."""
    import yaml

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    packages = [Path(__file__).resolve().parents[1], Path(yaml.__file__).parent]  # ndcg_spark/, yaml/
    tmp = out.with_suffix(out.suffix + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for package_dir in packages:
            for path in _package_files(package_dir):
                info = zipfile.ZipInfo(str(path.relative_to(package_dir.parent)), date_time=_FIXED_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, path.read_bytes())
    tmp.replace(out)  # never a half-written zip at the published name
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ndcg_spark.job.packaging", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="dist/ndcg_spark.zip", help="zip to write (default dist/ndcg_spark.zip)")
    args = parser.parse_args(argv)
    path = build_pyfiles_zip(args.out)
    print(f"{path} ({path.stat().st_size:,} bytes): spark-submit --py-files {path} jobs/nightly_eval.py run --config …")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
