"""Time of ``GET /runs/{id}/export`` (the whole run as CSV or JSON) over a large run.

Builds (or reuses, with ``--keep``) the store of ``server_latency.py``: one run of ``--cases``
cases, three evaluators each. Starts ``assay serve`` on it as a separate process and downloads
the export once per sort, printing the seconds each took, its size and the SHA-256 of its
bytes (the same digest before and after a change to how the export reads its pages says the
file is byte for byte the same).

    python benchmarks/export_pages.py --keep /tmp/big.db                 # 100,000 cases
    python benchmarks/export_pages.py --keep /tmp/big.db --sort problems --sort=-score
    python benchmarks/export_pages.py --store "$ASSAY_TEST_POSTGRES_URL"  # an empty database

A measurement, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from server_latency import build, served  # noqa: E402

SORTS = ("problems", "-score", "case", "-finished", "latency", "-latency")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--store", help="a store URL (default: a new SQLite file)")
    parser.add_argument("--keep", type=Path, help="the SQLite file to build or reuse")
    parser.add_argument("--sort", action="append", choices=SORTS,
                        help="the sorts to export in (repeatable; default: every one)")
    parser.add_argument("--format", default="csv", choices=("csv", "json"))
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    path = args.keep or Path(tmp.name) / "runs.db"
    url = args.store or f"sqlite:///{path}"
    run_id = build(url, args.cases)
    with served(url, timeout=3600) as client:
        print(f"| export ({args.cases:,} cases, {args.format}) | seconds | MB | sha256 |")
        print("|---|---:|---:|---|")
        for sort in args.sort or SORTS:
            digest = hashlib.sha256()
            size = 0
            started = time.perf_counter()
            with client.stream("GET", f"/runs/{run_id}/export",
                               params={"sort": sort, "format": args.format}) as answer:
                if answer.status_code != 200:
                    raise SystemExit(f"{sort}: {answer.status_code} {answer.read()[:300]!r}")
                for chunk in answer.iter_bytes():
                    digest.update(chunk)
                    size += len(chunk)
            took = time.perf_counter() - started
            print(f"| sort={sort} | {took:.1f} | {size / 1e6:.1f} | "
                  f"{digest.hexdigest()[:16]} |", flush=True)
    tmp.cleanup()


if __name__ == "__main__":
    main()
