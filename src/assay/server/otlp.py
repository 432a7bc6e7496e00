"""The OTLP/HTTP trace receiver: ``POST /v1/traces``, as any OpenTelemetry exporter sends it.

A request body is an ``ExportTraceServiceRequest``, as protobuf (``application/x-protobuf``,
what the SDK's ``OTLPSpanExporter`` sends) or as JSON (``application/json``), gzip-compressed
or not. Its spans are normalised to :class:`~assay.types.spans.Span` and stored in the run
store, grouped by trace (:mod:`assay.store.traces`).

Bad input is answered, never raised: a body that is not a request of the type it says is 400
naming what is wrong; a body over the limit (compressed or once decompressed) is 413; a span
the store cannot take (no trace id, no span id, a time that is not a time, a kind that is
not one of OTLP's SpanKind) is rejected alone, counted in the answer's ``partialSuccess``
with the first reasons, and the batch's other spans are stored. A span sent again is taken
when it is the span stored under its ids (an exporter retrying) and rejected, naming both
ids, when it differs from it. A text longer than :data:`MAX_ATTRIBUTE_CHARS` (an attribute's
value, an item of an array or key-value list of one, an event's attribute, the span's name)
is cut to that length and the span lists it under ``assay.cut_attributes``, so one huge prompt
cannot fill the store. Decoding and storing run on a worker thread: the server keeps
answering other exporters meanwhile.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from assay._util import jsondata
from assay._util.control_chars import printable, quoted
from assay._util.limits import depth_message, too_deep
from assay.server.security import ASGIApp, Message, Receive, Scope, Send, rewriting_json
from assay.store.runs import RunStore
from assay.store.traces import ReceivedSpan, append_spans
from assay.traces.reader import CUT_ATTRIBUTE
from assay.types.spans import (
    KINDS,
    STATUSES,
    Span,
    TraceFormatError,
    finite_or_text,
    from_dict,
    ids_problem,
    otlp_id,
)

MAX_ATTRIBUTE_CHARS = 1_000_000
"""The longest attribute value stored whole; a longer one is cut (and the cut is listed)."""
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_REASONS = 5
MAX_REASON_CHARS = 300
LATEST_TIME = (2 ** 64 - 1) / 1e9
"""The latest time OTLP can say: its times are 64-bit nanoseconds since 1970 (to 2554)."""


class OtlpRefused(Exception):
    """A request the receiver refuses whole: the status, a stable code and what is wrong."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


@dataclass
class Decoded:
    """A request's spans that can be stored, and why the others cannot."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)

    def reject(self, reason: str) -> None:
        """Count a rejected span; keep the first reasons, each cut short with its control
        characters made visible: a reason may quote the request (a key megabytes long, an
        escape), and the answer goes back to an exporter that may log it."""
        self.rejected += 1
        if len(self.reasons) < MAX_REASONS:
            cut = reason if len(reason) <= MAX_REASON_CHARS else \
                reason[:MAX_REASON_CHARS] + "..."
            self.reasons.append(printable(cut))

    def message(self) -> str:
        more = self.rejected - len(self.reasons)
        return "; ".join(self.reasons) + (f" (and {more} more)" if more > 0 else "")


def media_type(content_type: str | None) -> str:
    """The request's media type, protobuf or JSON; 415 for anything else."""
    found = _media(content_type)
    if found not in (PROTOBUF, JSON):
        raise OtlpRefused(415, "unsupported_media_type",
                          f"Content-Type {quoted(found)} is not an OTLP trace export: send "
                          f"{PROTOBUF} or {JSON}")
    return found


def _media(content_type: str | None) -> str:
    """The media type a Content-Type names, protobuf's two names as one; none is protobuf
    (what an exporter that says nothing sends)."""
    found = (content_type or PROTOBUF).split(";")[0].strip().lower()
    return PROTOBUF if found == "application/protobuf" else found


GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 408: 4, 409: 10, 413: 8, 421: 7, 429: 8,
              500: 13, 501: 12, 503: 14, 504: 4}
"""The ``google.rpc.Code`` of an HTTP error status (the reverse of the mapping google.rpc's
codes document): INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND,
DEADLINE_EXCEEDED, ABORTED, RESOURCE_EXHAUSTED, INTERNAL, UNIMPLEMENTED, UNAVAILABLE; another
4xx is INVALID_ARGUMENT, another 5xx UNKNOWN."""


class ProtobufErrors:
    """Every error answer to a protobuf request at ``path`` as a protobuf ``google.rpc.Status``
    with ``Content-Type: application/x-protobuf``, as OTLP/HTTP says: the JSON error
    (``{"detail", "code"}``) is encoded again here, the one place every refusal passes
    (the token, host and size checks before routing, the receiver, the error handlers). A
    JSON request keeps its JSON errors; so does every request when google.rpc's classes
    (googleapis-common-protos) are not installed."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path or \
                _media(_header(scope, b"content-type")) != PROTOBUF:
            await self.app(scope, receive, send)
            return
        await rewriting_json(self.app, scope, receive, send, _as_status)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _as_status(start: Message, body: bytes) -> bytes:
    """An error's JSON body as a ``google.rpc.Status`` (its message the detail, the assay
    code in an ``ErrorInfo``), ``start`` saying protobuf; any other body as it is."""
    status = int(start["status"])
    if status < 400:
        return body
    try:
        from google.rpc.code_pb2 import INVALID_ARGUMENT, UNKNOWN
        from google.rpc.error_details_pb2 import ErrorInfo
        from google.rpc.status_pb2 import Status
    except ImportError:
        return body
    try:
        error = orjson.loads(body)
    except orjson.JSONDecodeError:
        error = None
    detail = error.get("detail") if isinstance(error, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    answer = Status(code=GRPC_CODES.get(status, INVALID_ARGUMENT if status < 500 else UNKNOWN),
                    message=detail if isinstance(detail, str) else
                    body.decode("utf-8", "replace"))
    if isinstance(code, str):
        answer.details.add().Pack(ErrorInfo(reason=code.upper(), domain="assay"))
    start["headers"] = [*(h for h in start.get("headers", [])
                          if h[0].lower() != b"content-type"),
                        (b"content-type", PROTOBUF.encode())]
    return answer.SerializeToString()


def decompressed(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body as sent before ``Content-Encoding`` (gzip, deflate or none), refused when it
    decompresses past ``limit`` bytes (a small body can inflate to gigabytes). Every member
    of a gzip body is read (members may be concatenated); anything after the data is
    refused, never dropped unsaid."""
    name = (encoding or "identity").strip().lower()
    if name in ("", "identity"):
        return body
    if name not in ("gzip", "deflate"):
        raise OtlpRefused(415, "unsupported_encoding",
                          f"Content-Encoding {quoted(name, 40)} is not supported: send gzip, "
                          "deflate or none")
    out = bytearray()
    rest = _inflate(body, name, limit, out)
    while rest:
        if name != "gzip":
            raise OtlpRefused(400, "invalid_otlp", f"the body has {len(rest)} bytes after "
                              f"the end of its {name} data")
        rest = _inflate(rest, name, limit, out)
    return bytes(out)


def _inflate(data: bytes, name: str, limit: int, out: bytearray) -> bytes:
    """One gzip member (or zlib stream) of ``data`` inflated onto ``out``; what follows it."""
    inflater = zlib.decompressobj(wbits=47 if name == "gzip" else 15)  # 47: gzip or zlib
    try:
        out += inflater.decompress(data, limit + 1 - len(out))
    except zlib.error as exc:
        raise OtlpRefused(400, "invalid_otlp",
                          f"the body is not valid {name} data: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise OtlpRefused(413, "body_too_large",
                          f"the request body decompresses to more than the limit of {limit} "
                          "bytes (assay serve --max-trace-bytes)")
    if not inflater.eof:
        raise OtlpRefused(400, "invalid_otlp", f"the body's {name} data is cut short")
    return inflater.unused_data


def decode(body: bytes, kind: str) -> Decoded:
    """The spans of an export request in ``kind`` (protobuf or JSON)."""
    return _decode_protobuf(body) if kind == PROTOBUF else _decode_json(body)


def store_spans(store: RunStore, decoded: Decoded) -> None:
    """Store the decoded spans; each that a different span stored under its ids holds back
    is rejected, naming the ids (a span is sent again only unchanged: which of the two is
    the trace's cannot be told). RecordRejected, nothing stored, as
    :func:`~assay.store.traces.append_spans` says."""
    for clash in append_spans(store, decoded.spans):
        decoded.reject(f"span {quoted(clash.span.name)} of trace {clash.trace_id} with span "
                       f"id {clash.span.span_id} conflicts with the stored span of those ids "
                       "(a span sent again must be unchanged); the stored span is kept")


def answer(decoded: Decoded, kind: str) -> tuple[bytes, str]:
    """The ``ExportTraceServiceResponse`` for ``decoded``, in the request's own encoding."""
    if kind == JSON:
        partial = {"rejectedSpans": str(decoded.rejected),
                   "errorMessage": decoded.message()} if decoded.rejected else None
        return orjson.dumps({"partialSuccess": partial} if partial else {}), JSON
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse()
    if decoded.rejected:
        response.partial_success.rejected_spans = decoded.rejected
        response.partial_success.error_message = decoded.message()
    return response.SerializeToString(), PROTOBUF


# -- protobuf ------------------------------------------------------------------------------


def _decode_protobuf(body: bytes) -> Decoded:
    try:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise OtlpRefused(415, "protobuf_unavailable",
                          "this server cannot read protobuf exports: install assay[server] "
                          f"(opentelemetry-proto), or send {JSON}") from None
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise OtlpRefused(400, "invalid_otlp", "the body is not an OTLP "
                          f"ExportTraceServiceRequest in protobuf: {exc}") from None
    decoded = Decoded()
    for resource in request.resource_spans:
        service = _proto_attributes(resource.resource.attributes).get("service.name")
        for scope in resource.scope_spans:
            for span in scope.spans:
                _add(decoded, span.trace_id.hex(), span.span_id.hex(), service, span.kind,
                     lambda s=span: _proto_span(s))
    return decoded


def _proto_span(span: Any) -> Span:
    attributes = _proto_attributes(span.attributes)
    if span.status.message:
        attributes.setdefault("otel.status_description", span.status.message)
    return Span.model_construct(
        name=span.name, kind=KINDS.get(span.kind), span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex() or None,
        start_time=span.start_time_unix_nano / 1e9 if span.start_time_unix_nano else None,
        end_time=span.end_time_unix_nano / 1e9 if span.end_time_unix_nano else None,
        status=STATUSES.get(span.status.code, "unset"), attributes=attributes,
        events=[{"name": e.name, "time": e.time_unix_nano / 1e9 if e.time_unix_nano else None,
                 "attributes": _proto_attributes(e.attributes)} for e in span.events])


def _proto_attributes(pairs: Iterable[Any]) -> dict[str, Any]:
    return {pair.key: _proto_value(pair.value) for pair in pairs}


def _proto_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_proto_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return _proto_attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return value.bytes_value.hex()
    if which == "double_value":
        return finite_or_text(value.double_value)
    return getattr(value, which)


# -- JSON ----------------------------------------------------------------------------------


def _decode_json(body: bytes) -> Decoded:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise OtlpRefused(400, "invalid_otlp", f"the body is not JSON: {exc}") from None
    try:  # a span that says two things (two traceIds) is stored as neither
        jsondata.refuse_repeated_keys(body)
    except jsondata.DuplicateKey as exc:
        raise OtlpRefused(400, "invalid_otlp", f"the body names a key twice: {exc}") from None
    if not isinstance(data, Mapping) or not isinstance(
            data.get("resourceSpans", data.get("resource_spans", [])), list):
        raise OtlpRefused(400, "invalid_otlp", "the body is not an OTLP trace export: "
                          "expected an object with a 'resourceSpans' list")
    decoded = Decoded()
    for r, resource in enumerate(data.get("resourceSpans") or data.get("resource_spans") or []):
        if not isinstance(resource, Mapping):
            raise OtlpRefused(400, "invalid_otlp", f"resourceSpans[{r}] is not an object")
        service = _json_service(resource, f"resourceSpans[{r}].resource")
        scopes = resource.get("scopeSpans") or resource.get("scope_spans") or []
        if not isinstance(scopes, list):
            raise OtlpRefused(400, "invalid_otlp", f"resourceSpans[{r}].scopeSpans is not a list")
        for s, scope in enumerate(scopes):
            spans = scope.get("spans") if isinstance(scope, Mapping) else None
            if not isinstance(spans, list):
                raise OtlpRefused(400, "invalid_otlp",
                                  f"resourceSpans[{r}].scopeSpans[{s}].spans is not a list")
            for raw in spans:
                if not isinstance(raw, Mapping):
                    decoded.reject("a span is not an object")
                    continue
                _add(decoded, otlp_id(raw.get("traceId", raw.get("trace_id"))),
                     otlp_id(raw.get("spanId", raw.get("span_id"))), service,
                     raw.get("kind"), lambda raw=raw: from_dict(raw, f"span {_name(raw)}"))
    return decoded


def _name(raw: Mapping[str, Any]) -> str:
    """A span's name for a message, cut short (a name can be megabytes long)."""
    return repr(str(raw.get("name", "?"))[:80])


def _json_service(resource: Mapping[str, Any], where: str) -> str | None:
    """The resource's ``service.name`` when it is text; a resource that is not an object is
    refused, naming it."""
    found = resource.get("resource") or {}
    attributes = found.get("attributes") or [] if isinstance(found, Mapping) else None
    if not isinstance(attributes, list):
        raise OtlpRefused(400, "invalid_otlp", f"{where} is not an object with an "
                          "'attributes' list")
    for pair in attributes:
        if isinstance(pair, Mapping) and pair.get("key") == "service.name":
            value = pair.get("value")
            text = value.get("stringValue") if isinstance(value, Mapping) else None
            return text if isinstance(text, str) else None
    return None


# -- one rule for both ---------------------------------------------------------------------


def _add(decoded: Decoded, trace_id: str | None, span_id: str | None, service: Any,
         kind: Any, build: Any) -> None:
    """Add the span ``build`` makes (``kind`` its kind as sent), or reject it saying why: the
    one rule both encodings' spans pass, so what is stored has OTLP's ids and values a store
    and a reader can take."""
    if not trace_id or not trace_id.strip("0"):
        decoded.reject("a span has no trace id")
        return
    if not span_id or not span_id.strip("0"):
        decoded.reject(f"a span of trace {quoted(trace_id)} has no span id")
        return
    try:
        span = build()
    except TraceFormatError as exc:
        decoded.reject(exc.message)
        return
    problem = ids_problem(trace_id, span_id, span.parent_id) or _kind_problem(kind, span) \
        or _time_problem(span)
    if problem is None and (too_deep(span.attributes) or too_deep(span.events)):
        problem = f"its attribute values: {depth_message()}"
    if problem is not None:
        decoded.reject(f"span {quoted(span.name)}: {problem}")
        return
    decoded.spans.append(ReceivedSpan(trace_id, _bounded(span),
                                      str(service) if service is not None else None))


def _kind_problem(sent: Any, span: Span) -> str | None:
    """What is wrong with the span's kind as ``sent`` (None: nothing): OTLP's SpanKind is 0 to
    5, or in JSON its name, so a number outside it is not turned into no kind and a name
    outside it is not stored as a kind no reader knows."""
    if sent is None or (isinstance(sent, int) and not isinstance(sent, bool) and sent in KINDS) \
            or (isinstance(sent, str) and span.kind in KINDS.values()):
        return None
    shown = repr(sent) if isinstance(sent, int | float) else quoted(sent)
    return (f"kind {shown} is not an OTLP SpanKind: expected 0 to 5 (SPAN_KIND_UNSPECIFIED, "
            "INTERNAL, SERVER, CLIENT, PRODUCER or CONSUMER)")


def _time_problem(span: Span) -> str | None:
    """What is wrong with the span's times (None: nothing): each is one OTLP can say, so a
    trace's start orders, windows and shows as a date."""
    times = [("startTimeUnixNano", span.start_time), ("endTimeUnixNano", span.end_time),
             *((f"events[{i}].timeUnixNano", event.get("time"))
               for i, event in enumerate(span.events))]
    for name, seconds in times:
        if isinstance(seconds, int | float) and not 0 <= seconds <= LATEST_TIME:
            return (f"{name} is {seconds:g} s since 1970: expected a time OTLP can say, "
                    "64-bit nanoseconds since 1970 (before the year 2554)")
    return None


def _bounded(span: Span) -> Span:
    """The span with every text longer than :data:`MAX_ATTRIBUTE_CHARS` cut to it, each cut
    listed under :data:`CUT_ATTRIBUTE`: an attribute's value, text within an array or a
    key-value list of one, an event's attribute and the span's name alike (one huge prompt
    sent as ``[prompt]`` or as an event filled the store as one sent as text did not)."""
    cuts: list[str] = []
    attributes = _cut(span.attributes, "", cuts)
    events = [{**event, "attributes": _cut(event["attributes"], f"events[{i}].", cuts)}
              if isinstance(event.get("attributes"), dict) else event
              for i, event in enumerate(span.events)]
    name = _cut(span.name, "the span's name", cuts)
    if not cuts:
        return span
    attributes[CUT_ATTRIBUTE] = cuts
    return span.model_copy(update={"attributes": attributes, "events": events, "name": name})


def _cut(value: Any, path: str, cuts: list[str]) -> Any:
    """``value`` with every text in it longer than :data:`MAX_ATTRIBUTE_CHARS` cut, each cut
    noted in ``cuts`` by where it is (``input.value``, ``tags[2]``, ``events[0].payload``)."""
    if isinstance(value, str):
        if len(value) <= MAX_ATTRIBUTE_CHARS:
            return value
        cuts.append(f"{path} (cut from {len(value)} characters)")
        return value[:MAX_ATTRIBUTE_CHARS]
    if isinstance(value, dict):
        return {key: _cut(item, f"{path}{key}" if not path or path.endswith(".")
                          else f"{path}.{key}", cuts) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut(item, f"{path}[{i}]", cuts) for i, item in enumerate(value)]
    return value
