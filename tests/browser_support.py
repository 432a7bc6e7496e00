"""Debian's Chromium driven by Playwright for the browser tests.

Playwright's own browser download is never used: ``scripts/browser.sh`` installs Chromium from
Debian packages and the tests launch ``/usr/bin/chromium`` through ``executable_path``. Without
it the tests are skipped on a developer's machine and fail under CI (``$CI`` set), so a CI job
that lost its browser cannot pass by skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.ci_support import missing

CHROMIUM = Path(os.environ.get("ASSAY_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Without the background-networking flags Chromium keeps trying to reach its own services."""

SCREENSHOTS_VARIABLE = "ASSAY_SCREENSHOTS_DIR"


def launch(playwright: Any) -> Any:
    """Chromium, or a skip (a failure under CI) naming what is missing."""
    if not CHROMIUM.exists():
        missing("browser", f"{CHROMIUM} is missing: install it with `bash scripts/browser.sh`")
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)


def playwright_or_skip() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("browser", "the playwright package is missing: pip install -e . --group dev")
    return sync_playwright


def screenshot_dir(tmp_path: Path) -> Path:
    """Where screenshots go: ``$ASSAY_SCREENSHOTS_DIR`` (the docs' folder, when making them
    for the docs), else the test's own directory."""
    given = os.environ.get(SCREENSHOTS_VARIABLE)
    path = Path(given) if given else tmp_path / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path
