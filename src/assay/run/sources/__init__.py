"""Where traces come from: the run store's received spans, MLflow, Phoenix and files.

Each source lists the traces a :class:`TraceQuery` selects and hands each over as
:class:`SourcedTrace` (its id, its spans normalised to :class:`~assay.types.spans.Span`, and
what the source could not give); :mod:`assay.traces.reader` makes the execution. A source
that cannot be reached, or a store of a version it cannot read, is a :class:`SourceError`
naming the source, never a traceback.

``SOURCE`` strings (``assay run --traces SOURCE``, ``assay watch SOURCE``):

- ``store`` (the run store's received spans) or ``store:URL``;
- ``mlflow:TRACKING_URI`` or ``mlflow:TRACKING_URI#EXPERIMENT`` (a name or an id);
- ``phoenix:http://HOST:PORT`` or ``phoenix:http://HOST:PORT#PROJECT``;
- ``langfuse:FILE.json`` (an export of Langfuse observations), ``otlp:FILE.json`` (an OTLP
  JSON export, or JSON Lines of them), or a path ending in ``.json`` / ``.jsonl`` (read as
  OTLP, MLflow trace JSON or span dicts, by :func:`~assay.types.spans.normalize_trace`).
"""

from __future__ import annotations

from assay.run.sources.base import (
    SourcedTrace,
    SourceError,
    TraceQuery,
    TraceSource,
    open_source,
)

__all__ = ["SourceError", "SourcedTrace", "TraceQuery", "TraceSource", "open_source"]
