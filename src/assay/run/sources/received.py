"""Traces the OTLP receiver of ``assay serve`` stored in a run store."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from assay.run.sources.base import SourcedTrace, TraceQuery
from assay.store.runs import RunStore, open_store
from assay.store.traces import MAX_TRACE_SPANS, list_traces, trace_spans

PAGE = 500


class StoreSource:
    """The traces received into a run store (``store`` or ``store:URL``)."""

    def __init__(self, store: RunStore | str | None = None, must_exist: bool = False) -> None:
        """``must_exist``: the store was named to be read (``store:URL``), so a SQLite file
        that is not there is an error, never a new empty store read as having no traces."""
        self.store = open_store(store or None, must_exist=must_exist)
        self.name = f"store:{self.store.display_url}"

    def filters_itself(self) -> bool:
        return False

    def input_files(self) -> dict[Path, str]:
        """The store the traces are read from (another than the run's own, with
        ``store:URL``): a run's outputs may not be its files."""
        return self.store.input_files()

    def traces(self, query: TraceQuery, settled_before: float | None = None,
               skip: Callable[[Sequence[str]], set[str]] | None = None,
               **_: Any) -> Iterator[SourcedTrace]:
        """The received traces in ``query``'s window, a page at a time; with
        ``settled_before``, only those whose last span arrived by then; ``skip`` says which
        of a page's trace ids not to read (an online evaluation's decided ones)."""
        after: str | None = None
        while True:
            rows = list_traces(self.store, since=query.since, until=query.until,
                               settled_before=settled_before, limit=PAGE, after=after)
            left = skip([r.trace_id for r in rows]) if skip and rows else set()
            for row in rows:
                if row.trace_id not in left:
                    yield self.trace(row.trace_id, row.service)
            if len(rows) < PAGE:
                return
            after = max(r.trace_id for r in rows)

    def trace(self, trace_id: str, service: str | None = None) -> SourcedTrace:
        spans, total, problems = trace_spans(self.store, trace_id)
        notes = list(problems)
        if total > len(spans) + len(problems):
            notes.append(f"the trace has {total} spans: the first {MAX_TRACE_SPANS} received "
                         "were read")
        return SourcedTrace(trace_id, spans, self.name, notes, service=service,
                            span_count=total)
