"""A large answer costs a few copies of itself, not dozens: the peak memory of a fresh process
that evaluates one 30 MB answer (a Python target, ``exact_match``, a SQLite store file) stays
within a bound over the same run with a one-character answer.

The answer is held by the agent and the execution, encoded once for the store, and copied by
SQLite while it binds and writes the row: some four times its size. Before, checking the text
for surrogates, lower-casing it for the comparison, keeping it again in the score's details,
a ``str`` subclass for its JSON and SQLite's ``json_each`` reading it once per column made it
some twenty-two (a 30 MB answer: 685 MB at peak). ``benchmarks/large_answer_memory.py`` shows
the figures.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location(
    "large_answer_memory", ROOT / "benchmarks" / "large_answer_memory.py")
assert _SPEC is not None and _SPEC.loader is not None
_BENCH = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_BENCH)
CHILD: str = _BENCH.CHILD
"""The benchmark's child: one case evaluated, its peak RSS printed."""
SIZE = 30_000_000
BOUND = 4.25
"""Bytes of peak RSS above the baseline run allowed per byte of answer (measured: 3.99-4.00)."""


def _peak_kb(size: int, tmp: Path) -> int:
    done = subprocess.run([sys.executable, "-c", CHILD, str(size), str(tmp / f"{size}.db")],
                          capture_output=True, text=True, cwd=tmp, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
                               "ASSAY_CACHE_DIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout.strip().splitlines()[-1])["peak_kb"])


def test_a_30_mb_answer_peaks_at_a_few_copies_of_itself(tmp_path):
    baseline = _peak_kb(1, tmp_path)
    peak = _peak_kb(SIZE, tmp_path)
    above = (peak - baseline) * 1024
    assert above <= BOUND * SIZE, (
        f"peak RSS {peak // 1024} MB, {above / 1e6:.0f} MB above the baseline run "
        f"({baseline // 1024} MB): {above / SIZE:.1f} times the answer")
