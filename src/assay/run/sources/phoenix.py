"""Traces from a running Phoenix server, through its own client (``arize-phoenix-client``).

Phoenix keeps spans with OpenInference attributes, per project; its client's
``spans.get_spans`` gives them a window of time at a time, and they are grouped into traces
here. A trace's id is the OpenTelemetry trace id, and its root span's id is where scores are
written back as span annotations (:mod:`assay.run.sources.writeback`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from assay._util.redact import redact_url
from assay.errors import ConfigError
from assay.run.sources.base import SourcedTrace, SourceError, TraceQuery
from assay.types.spans import Span, TraceFormatError, from_dict

DEFAULT_PROJECT = "default"
MAX_SPANS = 100_000
"""The most spans one read asks Phoenix for; more are said, not silently dropped."""
TIMEOUT_S = 30
T = TypeVar("T")


class PhoenixSource:
    """``phoenix:URL[#PROJECT]``: a Phoenix server's project (``default`` unless named)."""

    def __init__(self, base_url: str, project: str | None = None) -> None:
        self.base_url = base_url
        self.project = project or DEFAULT_PROJECT
        self.name = f"phoenix:{redact_url(base_url)}#{self.project}"

    def filters_itself(self) -> bool:
        return False

    def client(self) -> Any:
        try:
            from phoenix.client import Client
        except ImportError:
            raise ConfigError("reading Phoenix traces needs its client: pip install "
                              "'assay[phoenix]'", code="missing_dependency") from None
        return Client(base_url=self.base_url)

    def call(self, what: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A call of Phoenix's client; its failure a SourceError saying ``what`` failed."""
        try:
            return function(*args, **kwargs)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:500]
            raise SourceError(self.name, f"{what} failed: {first}") from None

    def traces(self, query: TraceQuery, **_: Any) -> Iterator[SourcedTrace]:
        client = self.client()
        spans = self.call("reading spans", client.spans.get_spans,
                          project_identifier=self.project,
                          start_time=_time(query.since), end_time=_time(query.until),
                          limit=MAX_SPANS, timeout=TIMEOUT_S)
        grouped: dict[str, list[Span]] = {}
        notes: dict[str, list[str]] = {}
        for raw in spans:
            trace_id = str((raw.get("context") or {}).get("trace_id") or "")
            if not trace_id:
                continue
            try:
                grouped.setdefault(trace_id, []).append(phoenix_span(raw))
            except TraceFormatError as exc:
                notes.setdefault(trace_id, []).append(f"a span cannot be read: {exc.message}")
        cut = len(spans) >= MAX_SPANS
        ordered = sorted(grouped.items(), key=lambda item: min(
            (s.start_time or 0.0 for s in item[1]), default=0.0))
        for trace_id, found in ordered:
            extra = notes.get(trace_id, [])
            if cut:
                extra.append(f"Phoenix gave {MAX_SPANS} spans, the most one read asks for: "
                             "this trace may lack some (narrow the window with --since)")
            yield SourcedTrace(trace_id, found, self.name, extra)


def phoenix_span(raw: Mapping[str, Any]) -> Span:
    """A span as Phoenix's client gives it (``context``, ``span_kind``, ``status_code``)."""
    context = raw.get("context") or {}
    attributes = dict(raw.get("attributes") or {})
    kind = raw.get("span_kind")
    if kind and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = kind
    return from_dict({
        "name": raw.get("name") or "", "span_id": context.get("span_id"),
        "parent_id": raw.get("parent_id"), "start_time": raw.get("start_time"),
        "end_time": raw.get("end_time"),
        "status": {"code": raw.get("status_code") or "UNSET",
                   "message": raw.get("status_message") or None},
        "attributes": attributes, "events": [_event(e) for e in raw.get("events") or []],
    }, f"Phoenix span {raw.get('name')!r}")


def _event(raw: Any) -> Any:
    if not isinstance(raw, Mapping):
        return raw
    return {"name": raw.get("name"), "timestamp": raw.get("timestamp"),
            "attributes": raw.get("attributes") or {}}


def _time(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)
