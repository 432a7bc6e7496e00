"""``assay serve``: a REST API over the run store and the web UI, in one process.

The API (:mod:`assay.server.api`) reads the store a page at a time through
:mod:`assay.store.queries`; its models are the library's typed records. The UI is plain
JavaScript and CSS from ``static/`` that builds every element with ``textContent`` (data never
becomes markup) and draws its charts as SVG; the same files, inlined, make the static HTML
report (:mod:`assay.report.html`). Needs the ``server`` extra: ``pip install 'assay[server]'``.

Nothing here is imported by ``import assay``; this module imports nothing itself, so the
report can find the UI's files without FastAPI installed.
"""

from __future__ import annotations

from assay.report import STATIC_DIR

__all__ = ["STATIC_DIR"]
