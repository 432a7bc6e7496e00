"""What an execution says: tool calls (one rule to match them), retrieved documents,
a summary for the viewer. Names are exported on first use."""

from __future__ import annotations

from assay._util.lazy_exports import lazy_exports

_EXPORTS = {
    "ToolCallRecord": "assay.traces.tools",
    "is_tool_span": "assay.traces.tools",
    "parse_args": "assay.traces.tools",
    "parse_output": "assay.traces.tools",
    "tool_calls_from_spans": "assay.traces.tools",
    "tool_calls_from_messages": "assay.traces.tools",
    "tool_calls": "assay.traces.tools",
    "sanitize_tool_name": "assay.traces.tools",
    "match_key": "assay.traces.tools",
    "matches_key": "assay.traces.tools",
    "matches_expected": "assay.traces.tools",
    "DOCUMENT_ATTRIBUTE": "assay.traces.retrieval",
    "TEXT_KEYS": "assay.traces.retrieval",
    "URI_KEYS": "assay.traces.retrieval",
    "Retrieval": "assay.traces.retrieval",
    "span_type": "assay.traces.retrieval",
    "is_retriever_span": "assay.traces.retrieval",
    "top_level_retrievers": "assay.traces.retrieval",
    "retrievals": "assay.traces.retrieval",
    "Chunk": "assay.traces.retrieval",
    "RetrievedContext": "assay.traces.retrieval",
    "UNPARSABLE": "assay.traces.retrieval",
    "retrieved_context": "assay.traces.retrieval",
    "trace_summary": "assay.traces.summary",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
