"""The throughput benchmark still runs end to end and measures every implementation.

It asserts that the script works and that each implementation made calls, never how fast:
speed on a shared machine is a measurement for benchmarks/README.md, not a pass/fail check.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "judge_throughput.py"
EXPECTED = ["assay-api", "assay-engine", "raw-aiohttp"]
if importlib.util.find_spec("openai") is not None:
    EXPECTED.append("openai-sdk")


@pytest.mark.slow
def test_quick_throughput_run_prints_a_table_with_every_implementation() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                          text=True, timeout=120, cwd=SCRIPT.parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if re.match(r"\| [a-z]", line)]
    seen: dict[str, list[float]] = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if cells[0] == "implementation":
            continue
        seen.setdefault(cells[0], []).append(float(cells[4]))  # the calls/s column
    assert sorted(seen) == sorted(EXPECTED), done.stdout
    for name, rates in seen.items():
        assert rates and all(rate > 0 for rate in rates), (name, rates)
