"""Evaluators with no model: matching, JSON, tool calls, classification, metrics.

The package keeps the names of the module it was (``ExactMatch``, ``Contains``)."""

from __future__ import annotations

from assay._util.lazy_exports import lazy_exports

_EXPORTS = {"ExactMatch": "assay.judges.deterministic.match",
            "Contains": "assay.judges.deterministic.match",
            "as_str": "assay.judges.deterministic.match"}

__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
