"""Agent traces in, :class:`Span` out: one span shape whatever the tracing.

Agents are traced in different ways, and an evaluator should not care which. Three shapes are
read, all into the same :class:`Span` (times in seconds since the epoch, ids as lowercase hex):

- OpenTelemetry SDK ``ReadableSpan`` objects (what an in-memory exporter hands back), read by
  their attributes, so the SDK is not needed to import this module;
- OTLP JSON exports: ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`` with typed
  attribute values, hex or base64 ids and nanosecond times that may be strings;
- plain dicts, in :class:`Span`'s own field names, in OTLP's names, or as written by the SDK's
  ``span.to_json()`` (``context.span_id`` as ``0x...``, ISO times).

This module depends on nothing else in assay but its errors, so the model layer can parse
traces without importing what reads them (:mod:`assay.traces`).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay._util import jsondata
from assay._util.control_chars import quoted
from assay._util.jsonlines import json_lines
from assay._util.limits import MAX_DEPTH, depth_message
from assay.errors import EvaluationError


class Span(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    """One span of an agent's trace, normalised from OpenTelemetry, OTLP JSON or a dict."""

    name: str
    kind: str | None = None
    span_id: str | None = None
    parent_id: str | None = None
    start_time: float | None = None
    end_time: float | None = None
    status: Literal["unset", "ok", "error"] = "unset"
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)


KINDS = {0: None, 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
Status = Literal["unset", "ok", "error"]
STATUSES: dict[int, Status] = {0: "unset", 1: "ok", 2: "error"}
HEX = re.compile(r"[0-9a-fA-F]+")


class TraceFormatError(EvaluationError, ValueError):
    """A trace that is in none of the accepted shapes.

    It is also a ``ValueError`` so that pydantic reports it as a validation error of
    ``Execution.trace`` instead of letting it escape as something else.
    """

    def __init__(self, message: str) -> None:
        super().__init__("invalid_trace", message)


# -- normalising -------------------------------------------------------------------------


def normalize_trace(obj: Any) -> list[Span]:
    """Spans from any accepted trace shape; a JSON (or JSON Lines) string is parsed first."""
    if obj is None:
        return []
    if isinstance(obj, str | bytes):
        return normalize_trace(_parse_text(obj))
    if isinstance(obj, Span | Mapping) or _is_readable_span(obj):
        return _spans_of(obj, "trace")
    if isinstance(obj, Iterable):
        spans: list[Span] = []
        for index, item in enumerate(obj):
            spans.extend(_spans_of(item, f"trace[{index}]"))
        return spans
    raise TraceFormatError(f"trace: cannot read a {type(obj).__name__}; expected a list of "
                           "OpenTelemetry spans, an OTLP JSON export or span dicts")


def _parse_text(text: str | bytes) -> Any:
    try:
        return jsondata.loads(text)
    except ValueError:
        pass
    try:
        lines = json_lines(text) if isinstance(text, str) else enumerate(text.splitlines())
        return [jsondata.loads(line) for _, line in lines if line.strip()]
    except ValueError:
        raise TraceFormatError("trace: text that is neither JSON nor JSON Lines") from None


def _spans_of(item: Any, where: str) -> list[Span]:
    """The spans one item holds: an export holds many, a span is one."""
    if isinstance(item, Span):
        return [item]
    if _is_readable_span(item):
        return [from_readable_span(item)]
    if not isinstance(item, Mapping):
        raise TraceFormatError(f"{where}: cannot read a {type(item).__name__} as a span")
    if "resourceSpans" in item or "resource_spans" in item:
        return from_otlp(item)
    for container in ("scopeSpans", "instrumentationLibrarySpans"):
        if container in item:
            return [from_dict(s, where) for scope in item[container] for s in scope.get("spans", [])]
    if "spans" in item and "name" not in item:
        return normalize_trace(item["spans"])
    data = item.get("data")
    if "name" not in item and isinstance(data, Mapping) and "spans" in data:
        return normalize_trace(data["spans"])  # MLflow's trace JSON: {"info", "data"}
    return [from_dict(item, where)]


def _is_readable_span(obj: Any) -> bool:
    return (not isinstance(obj, Mapping) and hasattr(obj, "get_span_context")
            and hasattr(obj, "start_time") and hasattr(obj, "attributes"))


# -- OpenTelemetry SDK -------------------------------------------------------------------


def from_readable_span(span: Any) -> Span:
    """A ``ReadableSpan`` (OpenTelemetry SDK) as a Span."""
    context = span.get_span_context()
    parent = getattr(span, "parent", None)
    status = getattr(span, "status", None)
    code = getattr(getattr(status, "status_code", None), "name", "UNSET")
    attributes = _plain(dict(span.attributes or {}))
    description = getattr(status, "description", None)
    if description:
        attributes.setdefault("otel.status_description", description)
    kind = getattr(getattr(span, "kind", None), "name", None)
    return Span(
        name=span.name,
        kind=kind.lower() if kind else None,
        span_id=_hex_id(context.span_id) if context is not None else None,
        parent_id=_hex_id(parent.span_id) if parent is not None else None,
        start_time=_nanos(span.start_time),
        end_time=_nanos(span.end_time),
        status=_status(code),
        attributes=attributes,
        events=[{"name": e.name, "time": _nanos(e.timestamp),
                 "attributes": _plain(dict(e.attributes or {}))}
                for e in getattr(span, "events", ()) or ()],
    )


def _plain(value: Any) -> Any:
    """SDK attribute values hold tuples (and mappings); JSON-like data holds lists and dicts."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _hex_id(value: int) -> str:
    return format(value, "016x")


def _nanos(value: Any) -> float | None:
    return None if value is None else int(value) / 1_000_000_000


# -- OTLP JSON ---------------------------------------------------------------------------


def from_otlp(export: Mapping[str, Any]) -> list[Span]:
    """All spans of an OTLP JSON export (``resourceSpans`` -> ``scopeSpans`` -> ``spans``)."""
    spans: list[Span] = []
    for resource in export.get("resourceSpans") or export.get("resource_spans") or []:
        scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
        for scope in scopes:
            spans.extend(from_dict(s, "OTLP span") for s in scope.get("spans", []))
    return spans


def otlp_attributes(pairs: Any, where: str = "attributes", depth: int = 0) -> dict[str, Any]:
    """``[{"key": k, "value": {"stringValue": v}}, ...]`` -> ``{k: v}``.

    Every pair is checked: an exporter's attributes are input from outside, and a pair that
    is not ``{"key": text, "value": {...}}`` is a :class:`TraceFormatError` naming where it
    is and what was expected, never a ``TypeError`` from deep inside. A key given twice keeps
    its last value, as OpenTelemetry's SDK does."""
    if not isinstance(pairs, list | tuple):
        raise TraceFormatError(f"{where}: expected a list of {{\"key\", \"value\"}} objects, "
                               f"not {_kind_of(pairs)}")
    found: dict[str, Any] = {}
    for index, pair in enumerate(pairs):
        # dict before Mapping: parsed JSON is dicts, and an ABC's check is slow
        key = pair.get("key") if isinstance(pair, dict | Mapping) else None
        if not isinstance(key, str):
            raise TraceFormatError(f"{where}[{index}]: expected an object with a text \"key\" "
                                   f"and a typed \"value\", not {_kind_of(pair)}")
        value = pair.get("value")
        text = value.get("stringValue") if isinstance(value, dict) else None
        # most values are text: taken as they are, the place named only for one that is not
        found[key] = text if isinstance(text, str) else \
            otlp_value(value, f"{where}[{key[:80]!r}]", depth)
    return found


def otlp_value(value: Any, where: str = "value", depth: int = 0) -> Any:
    """One typed OTLP value (``AnyValue``) as a plain value; an empty one is None. A value
    that is not of the type it says is a :class:`TraceFormatError` naming ``where``; so is
    one nested more than :data:`~assay._util.limits.MAX_DEPTH` deep. A double that is not
    finite (``NaN``, ``Infinity``) is kept as that text, which JSON can hold."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TraceFormatError(f"{where}: expected a typed value such as "
                               f"{{\"stringValue\": ...}}, not {_kind_of(value)}")
    if depth > MAX_DEPTH:
        raise TraceFormatError(f"{where[:120]}...: {depth_message()}")
    for key, read in _TYPED:
        if key in value:
            return read(value[key], f"{where}.{key}", depth)
    return None


def _string(value: Any, where: str, depth: int) -> str:
    if not isinstance(value, str):
        raise TraceFormatError(f"{where}: expected text, not {_kind_of(value)}")
    return value


def _bool(value: Any, where: str, depth: int) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise TraceFormatError(f"{where}: expected true or false, not {_kind_of(value)}")


INT64 = range(-(2 ** 63), 2 ** 63)
_INTEGER = re.compile(r"[+-]?\d{1,20}")


def _int(value: Any, where: str, depth: int) -> int:
    """A 64-bit integer, as a number or as its decimal text (OTLP JSON writes int64 as text)."""
    text = isinstance(value, str) and _INTEGER.fullmatch(value.strip())
    if text or (isinstance(value, float) and value.is_integer()):  # a JSON writer's 5.0 too
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value in INT64:
        return value
    raise TraceFormatError(f"{where}: expected a 64-bit integer, not {_kind_of(value)}")


def _double(value: Any, where: str, depth: int) -> float | str:
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return finite_or_text(float(value))
    if isinstance(value, str):
        try:
            return finite_or_text(float(value))
        except ValueError:
            pass
    raise TraceFormatError(f"{where}: expected a number, not {_kind_of(value)}")


def finite_or_text(value: float) -> float | str:
    """A double as stored: a finite one as it is, ``NaN`` and the infinities as OTLP JSON
    writes them (JSON has no number for them, and a store would keep null instead)."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _array(value: Any, where: str, depth: int) -> list[Any]:
    values = _values(value, where)
    return [otlp_value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(values)]


def _kvlist(value: Any, where: str, depth: int) -> dict[str, Any]:
    return otlp_attributes(_values(value, where), where, depth + 1)


def _values(value: Any, where: str) -> list[Any]:
    """The ``values`` list of an ``arrayValue`` or ``kvlistValue`` (none: empty)."""
    if value is None:
        return []
    values = value.get("values", []) if isinstance(value, Mapping) else value
    if values is None:
        return []
    if not isinstance(values, list):
        raise TraceFormatError(f"{where}: expected {{\"values\": [...]}}, not "
                               f"{_kind_of(value)}")
    return values


_TYPED: tuple[tuple[str, Callable[[Any, str, int], Any]], ...] = (
    ("stringValue", _string), ("boolValue", _bool), ("intValue", _int),
    ("doubleValue", _double), ("arrayValue", _array), ("kvlistValue", _kvlist),
    ("bytesValue", _string))
"""Each field of an ``AnyValue`` and how its content is read, in the order looked for."""


def _kind_of(value: Any) -> str:
    """What a value is, for a message: its type, and the value itself when it is short (a
    megabyte sent is not echoed back, nor copied to be measured)."""
    if value is None:
        return "null"
    name = type(value).__name__
    if isinstance(value, str | bytes) and len(value) > 40:
        return f"{'text' if isinstance(value, str) else name} of {len(value)} characters"
    if isinstance(value, Mapping | list | tuple):
        return f"a {name} of {len(value)} item(s)"
    shown = repr(value)
    if len(shown) > 40:
        return f"a {name}"
    return shown if isinstance(value, str) else f"{name} {shown}"


def otlp_id(value: Any) -> str | None:
    """A span or trace id as lowercase hex, whether written in hex, ``0x`` hex or base64.

    Base64 is only assumed when it decodes to the 8 or 16 bytes of an OpenTelemetry id, so
    short ids of hand-written traces (``"1"``, ``"plan"``) are kept as they are.
    """
    if not value:
        return None
    if isinstance(value, int):
        return _hex_id(value)
    text = str(value)
    if text.startswith("0x"):
        return text[2:].lower()
    if len(text) in (16, 32) and HEX.fullmatch(text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return raw.hex() if len(raw) in (8, 16) else text


TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
"""OTLP's ids: a trace's is 16 bytes, a span's 8, written in hex; all zero is no id."""
_LOWER_HEX = re.compile("[0-9a-f]+")


def id_problem(name: str, value: str, size: int) -> str | None:
    """What is wrong with the id ``name`` (``traceId``) of ``size`` bytes, as :func:`otlp_id`
    read it (None: nothing). OTLP's ids are hex of a fixed length, so a stored trace id (a
    case id, once judged) is never a path, a control character or text for a terminal,
    whether it came to the receiver or in a file."""
    if len(value) == 2 * size and _LOWER_HEX.fullmatch(value) and value.strip("0"):
        return None
    return (f"{name} {quoted(value)} is not an id: expected {2 * size} hex digits "
            f"({size} bytes), not all zero")


def ids_problem(trace_id: str, span_id: str, parent_id: str | None) -> str | None:
    """What is wrong with an OTLP span's ids, as :func:`otlp_id` read them (None: nothing):
    the one rule of ``assay serve``'s receiver and of OTLP trace files."""
    return id_problem("traceId", trace_id, TRACE_ID_BYTES) or \
        id_problem("spanId", span_id, SPAN_ID_BYTES) or \
        (id_problem("parentSpanId", parent_id, SPAN_ID_BYTES) if parent_id else None)


def _kind(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, int):
        return KINDS.get(value)
    text = str(value).rsplit(".", 1)[-1].removeprefix("SPAN_KIND_").lower()
    return None if text in ("", "unspecified") else text


def _status(value: Any) -> Status:
    if isinstance(value, int):
        return STATUSES.get(value, "unset")
    text = str(value).rsplit(".", 1)[-1].removeprefix("STATUS_CODE_").lower()
    if text == "ok":
        return "ok"
    return "error" if text == "error" else "unset"


# -- plain dicts -------------------------------------------------------------------------

ALIASES = {
    "spanId": "span_id", "id": "span_id", "parentSpanId": "parent_id",
    "parent_span_id": "parent_id", "parentId": "parent_id",
    "startTimeUnixNano": "start_time", "start_time_unix_nano": "start_time",
    "endTimeUnixNano": "end_time", "end_time_unix_nano": "end_time",
    "startTime": "start_time", "endTime": "end_time",
}
DROPPED = {"traceId", "trace_id", "links", "resource", "droppedAttributesCount",
           "droppedEventsCount", "droppedLinksCount", "traceState", "trace_state", "flags",
           "request_id"}
MLFLOW_KEYS = {"span_type": "mlflow.spanType", "inputs": "mlflow.spanInputs",
               "outputs": "mlflow.spanOutputs"}
"""MLflow span fields kept as the attributes MLflow itself stores them in."""


def mlflow_value(value: Any) -> Any:
    """An MLflow span attribute as the data it holds: MLflow stores every attribute
    JSON-encoded (the type TOOL as ``"TOOL"`` with its quotes, a dict of inputs as its JSON);
    text that is not JSON is kept as it is."""
    if isinstance(value, str):
        try:
            return jsondata.loads(value)
        except ValueError:
            return value
    return value


def span_type(span: Span) -> str | None:
    """The span's type in upper case: OpenInference's ``openinference.span.kind`` or MLflow's
    ``mlflow.spanType`` (JSON-encoded, as MLflow stores it, or plain)."""
    for key in ("openinference.span.kind", "mlflow.spanType"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            if text.startswith('"'):
                decoded = mlflow_value(text)
                text = decoded if isinstance(decoded, str) else text
            return text.upper()
    return None


def from_dict(raw: Mapping[str, Any], where: str = "span") -> Span:
    """A span dict in Span's field names, OTLP JSON's, or ``ReadableSpan.to_json()``'s shape.

    Unknown keys are an error rather than silently dropped, so a misspelt field is noticed.
    """
    data: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, value in raw.items():
        if key in DROPPED:
            continue
        if key == "context" and isinstance(value, Mapping):
            data.setdefault("span_id", value.get("span_id"))
            continue
        if key in MLFLOW_KEYS:
            moved[MLFLOW_KEYS[key]] = value
            continue
        if key == "status_code":  # MLflow 2: status_code and status_message side by side
            data["status"] = value
            continue
        if key == "status_message":
            if value:
                moved["otel.status_description"] = value
            continue
        data[ALIASES.get(key, key)] = value
    for key in ("span_id", "parent_id"):
        data[key] = otlp_id(data.get(key))
    for key in ("start_time", "end_time"):
        data[key] = _time(data.get(key), f"{where} {key}")
    if "kind" in data:
        data["kind"] = _kind(data["kind"])
    for key in ("attributes", "events"):
        if key in data and data[key] is None:
            del data[key]
    if isinstance(data.get("attributes"), list):
        data["attributes"] = otlp_attributes(data["attributes"], f"{where} attributes")
    if moved:
        attributes = data.get("attributes")
        data["attributes"] = {**moved, **attributes} if isinstance(attributes, Mapping) \
            else moved if attributes is None else attributes
    if "status" in data:
        status = data["status"]
        if isinstance(status, Mapping):
            message = status.get("message") or status.get("description")
            attributes = data.setdefault("attributes", {})
            if message and isinstance(attributes, dict):
                attributes.setdefault("otel.status_description", message)
            status = status.get("status_code", status.get("code", "unset"))
        data["status"] = _status(status)
    if isinstance(data.get("events"), list):
        data["events"] = [_dict_event(e, f"{where} events[{i}]")
                          for i, e in enumerate(data["events"])]
    try:
        return Span.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise TraceFormatError(f"{where}: {problems}") from None


def _dict_event(event: Any, where: str = "event") -> Any:
    if not isinstance(event, Mapping):
        return event
    out = dict(event)
    for key in ("timestamp", "timeUnixNano", "time_unix_nano"):
        if key in out:
            out["time"] = _time(out.pop(key), f"{where} {key}")
    if isinstance(out.get("attributes"), list):
        out["attributes"] = otlp_attributes(out["attributes"], f"{where} attributes")
    return out


def _time(value: Any, where: str) -> float | None:
    """:func:`to_seconds`, its error saying which span and field the time is."""
    try:
        return to_seconds(value)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{where}: {exc.message}") from None


def to_seconds(value: Any) -> float | None:
    """Seconds from seconds, milli-, micro- or nanoseconds (told apart by size) or ISO text.

    Epoch times now are about 1.7e9 s, 1.7e12 ms, 1.7e15 us and 1.7e18 ns, so the unit is
    unambiguous; small numbers (relative times) are taken as seconds. A time that is not
    finite (``1e400`` is infinity) is a :class:`TraceFormatError`: no store can keep it.
    """
    try:
        seconds = _seconds(value)
    except OverflowError:  # an integer too large for any float
        seconds = math.inf
    if seconds is not None and not math.isfinite(seconds):
        raise TraceFormatError(f"span time {_kind_of(value)} is not a finite number")
    return seconds


def _seconds(value: Any) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        try:
            value = float(value) if "." in value else int(value)
        except ValueError:
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                raise TraceFormatError(f"span time {_kind_of(value)} is not a number or ISO "
                                       "time") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TraceFormatError(f"span time {_kind_of(value)} is not a number or ISO time")
    magnitude = abs(value)
    if magnitude >= 1e17:
        return int(value) / 1_000_000_000 if isinstance(value, int) else value / 1e9
    if magnitude >= 1e14:
        return value / 1e6
    if magnitude >= 1e11:
        return value / 1e3
    return float(value)


# -- what a whole trace says ---------------------------------------------------------------

OUTPUT_ATTRIBUTES = ("output.value", "mlflow.spanOutputs")
"""Where a span keeps its output: OpenInference's attribute, MLflow's."""
INPUT_ATTRIBUTES = ("input.value", "mlflow.spanInputs")
"""Where a span keeps its input."""


def root_span(spans: list[Span]) -> Span | None:
    """The trace's root: the first span with no parent, or a parent not in the trace."""
    ids = {s.span_id for s in spans if s.span_id}
    for span in spans:
        if not span.parent_id or span.parent_id not in ids:
            return span
    return None


def span_output(span: Span) -> Any:
    """A span's output as data: JSON text (MLflow stores every output JSON-encoded, so an
    output of None is the text ``null``) is decoded; plain text stays text. None when the
    span has no output, or its output is null."""
    return _span_value(span, OUTPUT_ATTRIBUTES)


def span_input(span: Span) -> Any:
    """A span's input as data, read as :func:`span_output` reads its output."""
    return _span_value(span, INPUT_ATTRIBUTES)


def _span_value(span: Span, keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = span.attributes.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            return _decoded(value)
        return value
    return None


def _decoded(text: str) -> Any:
    stripped = text.strip()
    if stripped == "null":
        return None
    if stripped[:1] in ('"', "{", "["):
        try:
            return jsondata.loads(stripped)
        except ValueError:
            return text
    return text


def trace_output(spans: list[Span]) -> Any:
    """What the trace says the agent answered: its root span's output (None for none)."""
    root = root_span(spans)
    return span_output(root) if root is not None else None


def trace_duration_ms(spans: list[Span]) -> float | None:
    """How long the traced agent took: its root span's duration in milliseconds (what
    Databricks reports as ``agent/latency_seconds`` and MLflow as ``execution_duration``);
    None when the root span has no times."""
    root = root_span(spans)
    if root is None or root.start_time is None or root.end_time is None:
        return None
    duration = (root.end_time - root.start_time) * 1000
    return duration if duration >= 0 else None
