"""Reports: terminal tables, result files (JSONL, JUnit, UiPath output), HTML and the
web UI's pages (``static/``, served by ``assay serve`` and inlined in the HTML report)."""

from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"
"""The web UI's files: ``index.html``, ``app.js``, ``app.css``."""
