"""The OTLP/HTTP trace receiver: ``POST /v1/traces``, as any OpenTelemetry exporter sends it.

A request body is an ``ExportTraceServiceRequest``, as protobuf (``application/x-protobuf``,
what the SDK's ``OTLPSpanExporter`` sends) or as JSON (``application/json``), gzip-compressed
or not. Its spans are normalised to :class:`~assay.types.spans.Span` and stored in the run
store, grouped by trace (:mod:`assay.store.traces`).

Bad input is answered, never raised: a body that is not a request of the type it says is 400
naming what is wrong; a body over the limit (compressed or once decompressed) is 413; a span
the store cannot take (no trace id, no span id, a time that is not a time) is rejected alone,
counted in the answer's ``partialSuccess`` with the first reasons, and the batch's other spans
are stored. An attribute value longer than :data:`MAX_ATTRIBUTE_CHARS` is cut to that length
and the span lists it under ``assay.cut_attributes``, so one huge prompt cannot fill the
store. Decoding and storing run on a worker thread: the server keeps answering other
exporters meanwhile.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from assay.store.traces import ReceivedSpan
from assay.traces.reader import CUT_ATTRIBUTE
from assay.types.spans import KINDS, STATUSES, Span, TraceFormatError, from_dict, otlp_id

MAX_ATTRIBUTE_CHARS = 1_000_000
"""The longest attribute value stored whole; a longer one is cut (and the cut is listed)."""
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_REASONS = 5


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
        self.rejected += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(reason)

    def message(self) -> str:
        more = self.rejected - len(self.reasons)
        return "; ".join(self.reasons) + (f" (and {more} more)" if more > 0 else "")


def media_type(content_type: str | None) -> str:
    """The request's media type, protobuf or JSON; 415 for anything else."""
    found = (content_type or PROTOBUF).split(";")[0].strip().lower()
    if found in (PROTOBUF, "application/protobuf"):
        return PROTOBUF
    if found == JSON:
        return JSON
    raise OtlpRefused(415, "unsupported_media_type",
                      f"Content-Type {found[:80]!r} is not an OTLP trace export: send "
                      f"{PROTOBUF} or {JSON}")


def decompressed(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body as sent before ``Content-Encoding`` (gzip, deflate or none), refused when it
    decompresses past ``limit`` bytes (a small body can inflate to gigabytes)."""
    name = (encoding or "identity").strip().lower()
    if name in ("", "identity"):
        return body
    if name not in ("gzip", "deflate"):
        raise OtlpRefused(415, "unsupported_encoding",
                          f"Content-Encoding {name[:40]!r} is not supported: send gzip, "
                          "deflate or none")
    inflater = zlib.decompressobj(wbits=47 if name == "gzip" else 15)  # 47: gzip or zlib
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise OtlpRefused(400, "invalid_otlp",
                          f"the body is not valid {name} data: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise OtlpRefused(413, "body_too_large",
                          f"the request body decompresses to more than the limit of {limit} "
                          "bytes (assay serve --max-trace-bytes)")
    if not inflater.eof:
        raise OtlpRefused(400, "invalid_otlp", f"the body's {name} data is cut short")
    return out


def decode(body: bytes, kind: str) -> Decoded:
    """The spans of an export request in ``kind`` (protobuf or JSON)."""
    return _decode_protobuf(body) if kind == PROTOBUF else _decode_json(body)


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
                          "this server cannot read protobuf exports: install assay[otlp] "
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
                _add(decoded, span.trace_id.hex(), span.span_id.hex(), service,
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
    return getattr(value, which)


# -- JSON ----------------------------------------------------------------------------------


def _decode_json(body: bytes) -> Decoded:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise OtlpRefused(400, "invalid_otlp", f"the body is not JSON: {exc}") from None
    if not isinstance(data, Mapping) or not isinstance(
            data.get("resourceSpans", data.get("resource_spans", [])), list):
        raise OtlpRefused(400, "invalid_otlp", "the body is not an OTLP trace export: "
                          "expected an object with a 'resourceSpans' list")
    decoded = Decoded()
    for r, resource in enumerate(data.get("resourceSpans") or data.get("resource_spans") or []):
        if not isinstance(resource, Mapping):
            raise OtlpRefused(400, "invalid_otlp", f"resourceSpans[{r}] is not an object")
        service = _json_service(resource)
        scopes = resource.get("scopeSpans") or resource.get("scope_spans") or []
        for s, scope in enumerate(scopes if isinstance(scopes, list) else []):
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
                     lambda raw=raw: from_dict(raw, f"span {raw.get('name', '?')!r}"))
    return decoded


def _json_service(resource: Mapping[str, Any]) -> str | None:
    attributes = (resource.get("resource") or {}).get("attributes") or []
    for pair in attributes if isinstance(attributes, list) else []:
        if isinstance(pair, Mapping) and pair.get("key") == "service.name":
            value = pair.get("value") or {}
            return str(value.get("stringValue")) if isinstance(value, Mapping) else None
    return None


# -- one rule for both ---------------------------------------------------------------------


def _add(decoded: Decoded, trace_id: str | None, span_id: str | None, service: Any,
         build: Any) -> None:
    """Add the span ``build`` makes, or reject it saying why."""
    if not trace_id or not trace_id.strip("0"):
        decoded.reject("a span has no trace id")
        return
    if not span_id or not span_id.strip("0"):
        decoded.reject(f"a span of trace {trace_id[:64]} has no span id")
        return
    if len(trace_id) > 64 or len(span_id) > 64:
        decoded.reject("a span's trace or span id is longer than 64 characters")
        return
    try:
        span = build()
    except TraceFormatError as exc:
        decoded.reject(exc.message)
        return
    decoded.spans.append(ReceivedSpan(trace_id, _bounded(span),
                                      str(service) if service is not None else None))


def _bounded(span: Span) -> Span:
    """The span with every attribute value longer than :data:`MAX_ATTRIBUTE_CHARS` cut to it,
    each cut listed under :data:`CUT_ATTRIBUTE`."""
    long = [k for k, v in span.attributes.items()
            if isinstance(v, str) and len(v) > MAX_ATTRIBUTE_CHARS]
    if not long:
        return span
    attributes = dict(span.attributes)
    for key in long:
        attributes[key] = attributes[key][:MAX_ATTRIBUTE_CHARS]
    attributes[CUT_ATTRIBUTE] = [f"{k} (cut from {len(span.attributes[k])} characters)"
                                 for k in long]
    return span.model_copy(update={"attributes": attributes})
