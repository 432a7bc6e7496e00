"""The architecture rules that code review alone would not keep: no import cycles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_import_cycles_between_modules_and_packages():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_cycles.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
