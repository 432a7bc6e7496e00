"""Traces from files: OTLP JSON exports (or MLflow trace JSON, or span dicts) and Langfuse's
exports of observations.

An OTLP export keeps each span's ``traceId``, so its spans are grouped by it; a file of spans
without trace ids (one trace per file, as ``Execution.trace`` takes them) is one trace named
by the file. A Langfuse export is a list of observations (``ObservationV2``, as the SDK's
models write them, or the API's ``{"data": [...]}``) or of traces with their
``observations``; each observation becomes a span with OpenInference's attributes, so the one
reader reads it like any other (a generation is an LLM span with its token counts, a tool a
tool span).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from assay._util import jsondata
from assay._util.control_chars import quoted
from assay.run.sources.base import SourcedTrace, SourceError, TraceQuery
from assay.suites.model import id_problem as case_id_problem
from assay.types.spans import (
    TRACE_ID_BYTES,
    Span,
    TraceFormatError,
    from_dict,
    id_problem,
    ids_problem,
    normalize_trace,
    otlp_id,
)

LANGFUSE_KINDS = {"GENERATION": "LLM", "TOOL": "TOOL", "RETRIEVER": "RETRIEVER",
                  "AGENT": "AGENT", "CHAIN": "CHAIN", "EMBEDDING": "EMBEDDING",
                  "SPAN": "CHAIN", "EVENT": "CHAIN", "EVALUATOR": "EVALUATOR",
                  "GUARDRAIL": "GUARDRAIL"}
"""Langfuse observation types as OpenInference span kinds."""

MAX_FILE_BYTES = 512 << 20
"""The largest trace file read (512 MiB): it is parsed whole, and its spans take several
times its size in memory. A larger export goes in parts, or to ``assay serve``'s OTLP
receiver, which takes spans a request at a time."""


class FileSource:
    """``otlp:FILE`` or ``langfuse:FILE``."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.name = f"{kind}:{path}"

    def filters_itself(self) -> bool:
        return False

    def input_files(self) -> dict[Path, str]:
        """The export file: a run's outputs may not be it (``--output`` over the traces
        being judged would destroy them)."""
        return {self.path: f"the trace file of {self.name}"}

    def traces(self, query: TraceQuery, **_: Any) -> Iterator[SourcedTrace]:
        data, lines = self._load()
        if self.kind == "langfuse":
            yield from self._langfuse(data)
        else:
            yield from self._otlp(data, lines)

    def _load(self) -> tuple[Any, list[int] | None]:
        """The file's JSON value, and for JSON Lines the line number of each of its values
        (None for a JSON file)."""
        try:
            with self.path.open("rb") as fh:
                # Not a regular file (a device, a pipe) may never end: never read one.
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise SourceError(self.name, "is not a regular file: give a trace "
                                      "export file")
                text = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise SourceError(self.name, f"cannot be read: {exc.strerror or exc}") from None
        if len(text) > MAX_FILE_BYTES:
            raise SourceError(self.name, f"is larger than the {MAX_FILE_BYTES >> 20} MiB a "
                              "trace file may be: split the export, or send its spans to "
                              "assay serve's OTLP receiver (POST /v1/traces)")
        try:
            found = orjson.loads(text)
        except orjson.JSONDecodeError:
            return self._lines(text)
        try:
            jsondata.refuse_repeated_keys(text)
        except jsondata.DuplicateKey as exc:
            raise self._repeated(exc, exc.lineno) from None
        return found, None

    def _lines(self, text: bytes) -> tuple[list[Any], list[int]]:
        """The values of a JSON Lines file and the number of each one's line; an error
        naming the line of one that names a key twice."""
        values, numbers = [], []
        try:
            for number, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        values.append(jsondata.loads_unique(line))
                    except jsondata.DuplicateKey as exc:
                        raise self._repeated(exc, number) from None
                    numbers.append(number)
        except ValueError as exc:
            raise SourceError(self.name, f"is neither JSON nor JSON Lines ({exc})") from None
        return values, numbers

    def _repeated(self, exc: jsondata.DuplicateKey, line: int) -> SourceError:
        """A file naming a key twice in one object says two things (which a reader keeps is
        its own choice): it is not read, and the error says where."""
        return SourceError(self.name, f"line {line} column {exc.colno}: {exc.what}: expected "
                           "each key once in an object")

    # -- OTLP ------------------------------------------------------------------------------

    def _otlp(self, data: Any, lines: list[int] | None) -> Iterator[SourcedTrace]:
        exports = data if isinstance(data, list) else [data]
        grouped: dict[str, list[Span]] = {}
        notes: dict[str, list[str]] = {}
        loose: list[Any] = []
        for index, export in enumerate(exports):
            if not (isinstance(export, Mapping) and "resourceSpans" in export):
                loose.append(export)
                continue
            record = f"line {lines[index]}: " if lines else \
                f"[{index}]." if isinstance(data, list) else ""
            for where, raw in self._spans_of(export):
                trace_id = otlp_id(raw.get("traceId")) if isinstance(raw, Mapping) else None
                key = trace_id or ""
                self._check(trace_id and id_problem("traceId", key, TRACE_ID_BYTES),
                            record + where)
                try:
                    span = from_dict(raw, f"{where.split('.')[0]} span "
                                          f"{raw.get('name', '?')!r}")
                except (TraceFormatError, AttributeError) as exc:
                    notes.setdefault(key, []).append(
                        f"a span cannot be read: {getattr(exc, 'message', exc)}")
                    continue
                self._check(trace_id and ids_problem(key, span.span_id or "", span.parent_id),
                            record + where)
                grouped.setdefault(key, []).append(span)
        if loose:
            try:
                grouped.setdefault("", []).extend(normalize_trace(loose))
            except TraceFormatError as exc:
                raise SourceError(self.name, exc.message) from None
        for trace_id, spans in grouped.items():
            found = notes.get(trace_id, [])
            if not trace_id:
                found.insert(0, "its spans have no trace id: the file is read as one trace")
            yield SourcedTrace(trace_id or self.path.stem, spans, self.name, found)
        for trace_id in notes.keys() - grouped.keys():
            yield SourcedTrace(trace_id or self.path.stem, [], self.name, notes[trace_id])

    def _check(self, problem: str | None, where: str) -> None:
        """An error naming the file, the record and the field when a span's ids break OTLP's
        rule (:func:`~assay.types.spans.ids_problem`, as the receiver applies it): a trace
        id becomes a case id once judged. A span without a trace id is none of its
        concern (the file is then read as one trace named by the file)."""
        if problem:
            raise SourceError(self.name, f"{where}: {problem}")

    def _spans_of(self, export: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        """(where, span) for each span of one OTLP export (``resourceSpans[0].scopeSpans[1]
        .spans[2]``); a part that is not the
        object or list OTLP says (``resourceSpans[0]`` a number, ``scopeSpans`` text) is
        an error naming it, as the receiver answers such a request (a missing or null
        part is none)."""
        for r, resource in enumerate(self._listed(export.get("resourceSpans"),
                                                  "resourceSpans")):
            where = f"resourceSpans[{r}]"
            for s, scope in enumerate(self._listed(self._part(resource, where).get(
                    "scopeSpans"), f"{where}.scopeSpans")):
                spans = self._part(scope, f"{where}.scopeSpans[{s}]").get("spans")
                for i, raw in enumerate(self._listed(spans, f"{where}.scopeSpans[{s}].spans")):
                    yield f"{where}.scopeSpans[{s}].spans[{i}]", raw

    def _listed(self, value: Any, where: str) -> list[Any]:
        """``value`` when it is a list, [] when it is missing; an error naming ``where``."""
        if value is None:
            return []
        if not isinstance(value, list):
            raise SourceError(self.name, f"{where} is not a list: expected an OTLP trace "
                              "export ({\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": "
                              "[...]}]}]})")
        return value

    def _part(self, value: Any, where: str) -> Mapping[str, Any]:
        """``value`` when it is an object, {} when it is missing; an error naming ``where``."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise SourceError(self.name, f"{where} is not an object: expected an OTLP "
                              "trace export")
        return value

    # -- Langfuse --------------------------------------------------------------------------

    def _langfuse(self, data: Any) -> Iterator[SourcedTrace]:
        items = data.get("data") if isinstance(data, Mapping) else data
        if not isinstance(items, list):
            raise SourceError(self.name, "is not a Langfuse export: expected a list of "
                              "observations or traces (or {\"data\": [...]})")
        grouped: dict[str, list[Span]] = {}
        notes: dict[str, list[str]] = {}
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise SourceError(self.name, f"item {index} is not an object")
            if isinstance(item.get("observations"), list):  # a trace with its observations
                given = self._langfuse_id(item.get("id"), f"item {index} id") or \
                    f"{self.path.stem}-{index}"
                observations = [{**o, "traceId": given} for o in item["observations"]
                                if isinstance(o, Mapping)]
            else:
                observations = [dict(item)]
            for observation in observations:
                trace_id = self._langfuse_id(
                    _first(observation, "traceId", "trace_id"), f"item {index} traceId")
                if not trace_id:
                    notes.setdefault("", []).append(
                        f"observation {observation.get('id', index)!r} has no traceId: "
                        "left out")
                    continue
                try:
                    grouped.setdefault(trace_id, []).append(langfuse_span(observation))
                except TraceFormatError as exc:
                    notes.setdefault(trace_id, []).append(
                        f"an observation cannot be read: {exc.message}")
        for trace_id, spans in grouped.items():
            yield SourcedTrace(trace_id, spans, self.name, notes.get(trace_id, []))
        if notes.get(""):
            raise SourceError(self.name, "; ".join(notes[""][:3]))

    def _langfuse_id(self, value: Any, where: str) -> str | None:
        """A Langfuse trace id as the case id it becomes; None for none. One that is not
        text, or that no case may have (a NUL, blank), is an error naming its place: an
        object read as its Python spelling, or an id PostgreSQL cannot store, would name a
        case nobody can find."""
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise SourceError(self.name, f"{where} is {quoted(json.dumps(value), 60)}: "
                              "expected the trace's id as text")
        problem = case_id_problem(str(value))
        if problem is not None:
            raise SourceError(self.name, f"{where} {quoted(str(value), 60)} {problem}: "
                              "expected an id a case can have")
        return str(value)


def _first(observation: Mapping[str, Any], *keys: str) -> Any:
    return next((observation[k] for k in keys if observation.get(k) is not None), None)


def langfuse_span(observation: Mapping[str, Any]) -> Span:
    """A Langfuse observation as a span with OpenInference's attributes."""
    kind = str(observation.get("type") or "SPAN").upper()
    attributes: dict[str, Any] = {"openinference.span.kind": LANGFUSE_KINDS.get(kind, "CHAIN"),
                                  "langfuse.observation.type": kind}
    for key, name in (("input", "input.value"), ("output", "output.value")):
        value = observation.get(key)
        if value is not None:
            attributes[name] = value if isinstance(value, str) else json.dumps(
                value, ensure_ascii=False)
    usage = _first(observation, "usageDetails", "usage_details", "usage") or {}
    if isinstance(usage, Mapping):
        prompt = _first(usage, "input", "promptTokens", "prompt_tokens", "input_tokens")
        completion = _first(usage, "output", "completionTokens", "completion_tokens",
                            "output_tokens")
        if prompt is not None:
            attributes["llm.token_count.prompt"] = prompt
        if completion is not None:
            attributes["llm.token_count.completion"] = completion
    model = observation.get("model")
    if model:
        attributes["llm.model_name"] = model
    if kind == "TOOL":
        attributes["tool.name"] = observation.get("name") or "tool"
    metadata = observation.get("metadata")
    if isinstance(metadata, Mapping):
        attributes.update({f"metadata.{k}": v for k, v in metadata.items()
                           if isinstance(v, str | int | float | bool)})
    level = str(observation.get("level") or "DEFAULT").upper()
    message = _first(observation, "statusMessage", "status_message")
    return from_dict({
        "name": observation.get("name") or kind.lower(),
        "span_id": str(observation.get("id") or ""),
        "parent_id": _first(observation, "parentObservationId", "parent_observation_id"),
        "start_time": _first(observation, "startTime", "start_time"),
        "end_time": _first(observation, "endTime", "end_time"),
        "status": {"code": "ERROR" if level == "ERROR" else "UNSET", "message": message},
        "attributes": attributes,
    }, f"Langfuse observation {observation.get('id', '?')!r}")
