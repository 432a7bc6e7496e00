"""Traces as a suite: each trace a case whose execution is what the trace says.

A run of this suite is a normal run (stored, gated, compared like any other); each case's id
is its trace's id and its metadata keeps ``trace`` (the id, the source, the number of spans
and the notes saying what the trace lacked), so a case leads back to the trace it judged and a
score can be written back to it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from assay.errors import ConfigError
from assay.run.sources.base import (
    SourcedTrace,
    TraceQuery,
    TraceSource,
    open_source,
    selected,
    source_files,
)
from assay.suites.model import Suite, SuiteCase
from assay.traces.reader import TraceReading
from assay.types.case import Case

TRACE_KEY = "trace"
"""The case metadata key that names a case's trace."""
_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_EPOCH = re.compile(r"^\s*[+-]?[0-9]+(?:\.[0-9]+)?\s*$")
"""Seconds since 1970 written out (``1790000000``, ``1790000000.5``)."""
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(value: Any, where: str = "--since", now: float | None = None) -> float | None:
    """Seconds since the epoch from seconds, a datetime, an ISO 8601 date or date-time (UTC
    unless it says), or a time ago (``30m``, ``24h``, ``7d``); a time a date can hold (year
    1 to 9999), since a trace source asks for its traces by date (Phoenix) or whole
    milliseconds (MLflow): ``99999w`` ago, ``.nan`` or ``.inf`` would fail there, after
    the source was opened, as a traceback."""
    if value is None or value == "":
        return None
    try:
        seconds = _seconds(value, where, now)
        datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, ValueError, OSError):  # 10**400 is not even a float
        raise ConfigError(f"{where} {str(value)[:60]!r}: not a time a date can hold (years 1 "
                          "to 9999)", code="invalid_time") from None
    return seconds


def _seconds(value: Any, where: str, now: float | None) -> float:
    """``value`` as seconds since the epoch, not yet known to be a date's."""
    if isinstance(value, bool):
        raise ConfigError(f"{where} {value!r}: expected a time", code="invalid_time")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    text = str(value)
    match = _RELATIVE.match(text)
    if match:
        return (time.time() if now is None else now) - float(match.group(1)) * \
            _UNITS[match.group(2)]
    try:
        written = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        if _EPOCH.match(text):  # as a command line gives seconds: text
            return float(text)
        raise ConfigError(f"{where} {text[:60]!r}: expected an ISO 8601 date or date-time "
                          "(2026-11-01, 2026-11-01T12:00:00Z), seconds since 1970, or a time "
                          "ago (30m, 24h, 7d)", code="invalid_time") from None
    return _seconds(written, where, now)


@dataclass
class TraceCase:
    """A trace read for a run: the suite case, and the reading it came from."""

    item: SuiteCase
    reading: TraceReading
    trace: SourcedTrace


def trace_case(trace: SourcedTrace, reading: TraceReading) -> SuiteCase:
    """The case a trace is judged as: its id is the trace's, its execution what it says."""
    execution = reading.execution
    meta = {"id": trace.trace_id, "source": trace.source,
            "spans": trace.span_count if trace.span_count is not None else len(trace.spans),
            "notes": list(reading.notes)}
    if reading.root is not None and reading.root.span_id:
        meta["root_span_id"] = reading.root.span_id
    if reading.start_time is not None:
        meta["start_time"] = reading.start_time
    return SuiteCase(case=Case(id=trace.trace_id, input=execution.input,
                               metadata={TRACE_KEY: meta}),
                     execution=execution)


def source_of(traces: TraceSource | str, store: Any = None) -> TraceSource:
    return open_source(traces, store=store) if isinstance(traces, str) else traces


def read_traces(source: TraceSource, query: TraceQuery, **options: Any) -> list[TraceCase]:
    """The traces ``query`` selects from ``source``, each read into its case."""
    return [TraceCase(trace_case(t, r), r, t) for t, r in selected(
        source.traces(query, **options), query, source.filters_itself())]


def traces_suite(cases: Iterable[SuiteCase], source: TraceSource, name: str | None = None,
                 like: Suite | None = None) -> Suite:
    """A suite of trace cases; judged by ``like``'s evaluators (and judge, scoring and agent)
    when a suite is given for them."""
    found = list(cases)
    if not found:
        raise ConfigError(f"no traces to judge in {source.name} (check the source, --filter "
                          "and --since)", code="no_traces")
    files = source_files(source)
    if like is None:
        return Suite(name=name or f"traces {source.name}", cases=found,
                     metadata={"traces": source.name}, files=files)
    return like.model_copy(update={
        "name": name or like.name, "cases": found, "case_source": None,
        "metadata": {**like.metadata, "traces": source.name},
        "files": {**like.files, **files}})


def suite_of_traces(traces: TraceSource | str, query: TraceQuery, *, store: Any = None,
                    name: str | None = None, like: Suite | None = None) -> Suite:
    """The suite ``evaluate(traces=...)`` judges."""
    source = source_of(traces, store)
    return traces_suite((c.item for c in read_traces(source, query)), source, name, like)
