"""What every trace source is: a query in, traces out, and one error for a source that fails."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from assay.errors import ConfigError, EvaluationError
from assay.traces.reader import TraceReading, read_trace
from assay.types.spans import Span


class SourceError(EvaluationError):
    """A trace source that cannot be read: unreachable, of a version assay cannot read, or
    not a trace export. The message names the source."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__("trace_source_error", f"{source}: {message}")


@dataclass(frozen=True)
class AttributeFilter:
    """``KEY=VALUE`` (or ``KEY!=VALUE``): ``name`` is the root span's name, ``status`` the
    trace's (``error`` when a span failed, else ``ok``), ``service`` the resource's
    service.name where the source keeps it; any other key is an attribute of the root span."""

    key: str
    value: str
    negated: bool = False

    def matches(self, reading: TraceReading, service: str | None = None) -> bool:
        found = self._found(reading, service)
        return (found == self.value) != self.negated

    def _found(self, reading: TraceReading, service: str | None) -> str | None:
        root = reading.root
        if self.key == "status":
            return "error" if reading.failed else "ok"
        if self.key == "service":
            return service
        if root is None:
            return None
        if self.key == "name":
            return root.name
        value = root.attributes.get(self.key)
        if value is None:
            return None
        return str(value).lower() if isinstance(value, bool) else str(value)


_FILTER = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(!=|=)\s*(.*?)\s*$")


def parse_filters(text: str | None, where: str = "--filter") -> list[AttributeFilter]:
    """``KEY=VALUE`` pairs separated by commas, all of which must hold."""
    if not text or not text.strip():
        return []
    found = []
    for part in text.split(","):
        match = _FILTER.match(part)
        if match is None:
            raise ConfigError(f"{where} {part.strip()[:80]!r}: expected KEY=VALUE or "
                              "KEY!=VALUE (KEY: name, status, service or a root span "
                              "attribute), pairs separated by commas", code="invalid_filter")
        key, op, value = match.groups()
        value = value.strip("'\"")
        if key == "status":
            value = _status(value, where)
        found.append(AttributeFilter(key, value, negated=op == "!="))
    return found


TRACE_STATUSES = ("ok", "error")
"""A trace's ``status`` as a filter reads it: ``error`` when a span failed, else ``ok``."""


def _status(value: str, where: str) -> str:
    """A status filter's value, in any case (``status=ERROR``, as OTLP spells its codes);
    any other value would match no trace, and the run would say only that none was found."""
    if value.lower() not in TRACE_STATUSES:
        raise ConfigError(f"{where} 'status={value[:80]}': a trace's status is "
                          f"{' or '.join(TRACE_STATUSES)} (error when a span failed), "
                          f"not {value[:80]!r}", code="invalid_filter")
    return value.lower()


@dataclass(frozen=True)
class TraceQuery:
    """Which traces: ``filter`` in the source's own language where it has one (MLflow's
    ``filter_string``), else :func:`parse_filters`'s; started at or after ``since`` and
    before ``until`` (seconds since the epoch); at most ``limit``."""

    filter: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int | None = None

    def started_in(self, start: float | None) -> bool:
        """Whether a trace that started at ``start`` is in the query's window (a trace
        without a start time is in only a window without bounds)."""
        if self.since is None and self.until is None:
            return True
        if start is None:
            return False
        return (self.since is None or start >= self.since) and \
            (self.until is None or start < self.until)


@dataclass
class SourcedTrace:
    """One trace from a source: its spans, and what the source could not give."""

    trace_id: str
    spans: list[Span]
    source: str
    notes: list[str] = field(default_factory=list)
    service: str | None = None
    span_count: int | None = None
    """How many spans the source holds for it, when more than ``spans`` were read."""

    def read(self) -> TraceReading:
        """The execution the trace describes (the one reader), with the source's notes
        first."""
        reading = read_trace(self.trace_id, self.spans)
        reading.notes[:0] = self.notes
        return reading


class TraceSource(Protocol):
    """A place traces are read from."""

    name: str
    """The source as given (``mlflow:sqlite:///m.db``), passwords hidden."""

    def traces(self, query: TraceQuery, **options: Any) -> Iterator[SourcedTrace]:
        """The traces ``query`` selects, oldest first where the source can say. Options a
        source does not know are ignored: ``settled_before`` (only traces complete by
        then) and ``skip`` (a function naming trace ids not to read)."""
        ...

    def filters_itself(self) -> bool:
        """Whether ``query.filter`` is the source's own language (else assay applies it)."""
        ...


def source_files(source: TraceSource) -> dict[Path, str]:
    """The files ``source`` reads, each with what it is (see
    :data:`assay.report.outputs.Inputs`): what no output of a run judging it may be. A source
    that reads no local file (a server, a tracking URI) need not say."""
    found = getattr(source, "input_files", None)
    return dict(found()) if callable(found) else {}


def open_source(spec: str, *, store: Any = None) -> TraceSource:
    """The source ``spec`` names (see :mod:`assay.run.sources`); ``store`` is the run store
    for ``store`` without a URL."""
    kind, _, rest = spec.partition(":")
    if spec == "store" or kind == "store":
        from assay.run.sources.received import StoreSource

        return StoreSource(rest, must_exist=True) if rest else StoreSource(store)
    if kind == "mlflow":
        from assay.run.sources.mlflow import MlflowSource

        return MlflowSource(*_with_fragment(rest, spec))
    if kind == "phoenix":
        from assay.run.sources.phoenix import PhoenixSource

        return PhoenixSource(*_with_fragment(rest, spec))
    if kind in ("langfuse", "otlp"):
        from assay.run.sources.files import FileSource

        return FileSource(Path(rest), kind)
    if spec.lower().endswith((".json", ".jsonl")):
        from assay.run.sources.files import FileSource

        return FileSource(Path(spec), "otlp")
    raise ConfigError(f"trace source {spec[:120]!r} is not one assay reads: give store, "
                      "store:URL, mlflow:TRACKING_URI[#EXPERIMENT], phoenix:URL[#PROJECT], "
                      "langfuse:FILE.json, otlp:FILE.json or a .json/.jsonl file",
                      code="invalid_trace_source")


def _with_fragment(rest: str, spec: str) -> tuple[str, str | None]:
    address, _, fragment = rest.partition("#")
    if not address:
        raise ConfigError(f"trace source {spec[:120]!r}: the address is missing",
                          code="invalid_trace_source")
    return address, fragment or None


def selected(traces: Sequence[SourcedTrace] | Iterator[SourcedTrace], query: TraceQuery,
             own_filter: bool) -> Iterator[tuple[SourcedTrace, TraceReading]]:
    """Each trace with its reading, where it passes ``query`` (the window, and the filter
    unless the source applied it itself), at most ``query.limit``."""
    filters = [] if own_filter else parse_filters(query.filter)
    count = 0
    for trace in traces:
        if query.limit is not None and count >= query.limit:
            return
        reading = trace.read()
        if not query.started_in(reading.start_time):
            continue
        if all(f.matches(reading, trace.service) for f in filters):
            count += 1
            yield trace, reading
