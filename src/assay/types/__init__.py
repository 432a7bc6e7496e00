"""The nouns every stage shares: cases, executions, scores, records, configuration.

Each lives in a module of its own; the package exports the common ones on first use
(``from assay.types import Case, Execution, Score``)."""

from __future__ import annotations

from assay._util.lazy_exports import lazy_exports

_EXPORTS = {
    "JSONValue": "assay.types.base",
    "FunctionCall": "assay.types.messages",
    "ToolCall": "assay.types.messages",
    "Message": "assay.types.messages",
    "ToolExpectation": "assay.types.case",
    "ConversationSpec": "assay.types.case",
    "SimulatorSettings": "assay.types.case",
    "ConversationSettings": "assay.types.case",
    "AgentInfo": "assay.types.case",
    "ExpectedDocument": "assay.types.case",
    "CaseInput": "assay.types.case",
    "Case": "assay.types.case",
    "Usage": "assay.types.usage",
    "RetrievedDocument": "assay.types.execution",
    "TokenUsage": "assay.types.execution",
    "Execution": "assay.types.execution",
    "ConversationInfo": "assay.types.execution",
    "ScoreError": "assay.types.score",
    "ScoreState": "assay.types.score",
    "MEASUREMENT": "assay.types.score",
    "Score": "assay.types.score",
    "PASS_AT": "assay.types.verdict",
    "BORDERLINE_AT": "assay.types.verdict",
    "verdict_band": "assay.types.score",
    "Verdict": "assay.types.verdict",
    "band": "assay.types.verdict",
    "Aggregate": "assay.types.records",
    "aggregate": "assay.types.records",
    "dump_json": "assay.types.json",
    "Span": "assay.types.spans",
    "normalize_trace": "assay.types.spans",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
