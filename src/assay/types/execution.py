"""What the agent did for one case: output, messages, trace, retrieved context, latency, tokens."""

from __future__ import annotations

from typing import Any

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from assay._util import jsondata
from assay._util.jsondata import NotJSONData, as_json_data
from assay.types.base import JSONValue, _Model
from assay.types.case import CaseInput
from assay.types.json import dump_json
from assay.types.messages import Message
from assay.types.spans import Span, normalize_trace, trace_duration_ms, trace_output
from assay.types.usage import Usage


class RetrievedDocument(_Model):
    """A piece of context an agent retrieved."""

    content: str = Field(default="", description="the text; empty when only the document's "
                         "address is known (enough for retrieval recall, never judged)")
    doc_uri: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class TokenUsage(_Model):
    """Tokens an agent (not a judge) spent producing an execution."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Execution(_Model):
    """What an agent did for one case: its output and everything that led to it."""

    input: CaseInput = ""
    output: JSONValue = None
    messages: list[Message] = Field(default_factory=list)
    trace: list[Span] = Field(default_factory=list)
    retrieved_context: list[RetrievedDocument] = Field(default_factory=list)
    latency_ms: float | None = Field(
        default=None, ge=0, allow_inf_nan=False,
        description="how long the agent took, in milliseconds: a finite number, never below 0 "
        "(a NaN or a negative figure from a data row would poison every latency statistic)")
    usage: TokenUsage | None = None
    error: str | None = None
    error_code: str | None = Field(
        default=None, description="why the execution failed: target_failed (the default when "
        "error is set) or invalid_output (the agent answered something that is not data)")
    conversation: ConversationInfo | None = Field(
        default=None, description="for a multi-turn case: why it stopped, its turns and the "
        "simulated user's usage; the transcript is in messages")
    custom_outputs: JSONValue = Field(
        default=None, description="extra outputs the agent reported (Databricks' custom_outputs)")
    trace_info: dict[str, Any] | None = Field(
        default=None, description="what the tracer recorded of the whole trace: the "
        "``info`` of an MLflow trace (its id, request time, execution_duration_ms, "
        "trace_metadata such as the session id, tags), kept as given")
    provider_request: dict[str, Any] | None = Field(
        default=None, description="what the agent's provider was sent (a chat model's "
        "messages, a command's argv), no secrets: AgentV's lm/agent_provider_request")

    @model_validator(mode="before")
    @classmethod
    def _mlflow_trace_info(cls, data: Any) -> Any:
        """An MLflow trace (``{"info": ..., "data": {"spans": [...]}}``, as a dict or its
        JSON text) keeps its ``info`` beside the spans: its duration and metadata are the
        tracer's own figures."""
        if not isinstance(data, dict) or data.get("trace_info") is not None:
            return data
        trace = data.get("trace")
        if isinstance(trace, str | bytes) and trace[:1] in ("{", b"{"):
            try:
                trace = jsondata.loads(trace)
            except ValueError:
                return data  # the trace validator says what is wrong with it
        if isinstance(trace, dict) and isinstance(trace.get("info"), dict) and \
                isinstance(trace.get("data"), dict):
            data = {**data, "trace": trace, "trace_info": trace["info"]}
        return data

    @field_validator("retrieved_context", mode="before")
    @classmethod
    def _documents(cls, value: Any) -> Any:
        if value is None:
            return []
        return [{"content": v} if isinstance(v, str) else v for v in value]

    @field_validator("trace", mode="before")
    @classmethod
    def _spans(cls, value: Any) -> Any:
        """Accept OpenTelemetry spans, OTLP JSON exports and span dicts (see assay.traces)."""
        return normalize_trace(value)

    @model_validator(mode="after")
    def _answered_by_trace(self) -> Execution:
        """An execution known by its trace alone (a row with a ``trace`` and no
        ``response``, an agent that reports only spans) has the trace's answer and duration:
        the root span's output, and the trace's duration (the tracer's figure, else the root
        span's). Filled here, once, so that every reader (the judges,
        the result columns in every naming, latency aggregates and comparisons, the viewer)
        sees the same answer and latency. A failed execution is left as it is."""
        if self.trace and self.error is None:
            if self.output is None:
                self.output = trace_output(self.trace)
            if self.latency_ms is None:
                self.latency_ms = self._traced_duration()
        return self

    def _traced_duration(self) -> float | None:
        """The trace's duration: the tracer's own figure (MLflow's ``execution_duration_ms``),
        else its root span's."""
        recorded = (self.trace_info or {}).get("execution_duration_ms")
        if isinstance(recorded, int | float) and not isinstance(recorded, bool) and \
                recorded >= 0:
            return float(recorded)
        return trace_duration_ms(self.trace)

    def as_data(self) -> Execution:
        """This execution with its output as plain JSON data: the one way an agent's output
        crosses into assay (:func:`assay._util.jsondata.as_json_data`), whether a target
        returned it or the data recorded it, so what is judged, stored and written is the
        same everywhere (a tuple is a list, a NumPy value its Python value). An output that
        is not data makes a failed execution (``invalid_output``) saying why and where. This
        object is never changed: a copy when the output changes, else itself."""
        if self.error is not None:
            return self
        try:
            output = as_json_data(self.output)
        except NotJSONData as exc:
            return Execution(input=self.input, latency_ms=self.latency_ms,
                             error=f"agent output is not JSON data: {exc}",
                             error_code="invalid_output")
        return self if output is self.output else self.model_copy(update={"output": output})

    def output_text(self) -> str:
        """The output as text: strings as they are, anything else as JSON."""
        if self.output is None:
            return ""
        if isinstance(self.output, str):
            return self.output
        return dump_json(self.output)


class ConversationInfo(_Model):
    """How a multi-turn case went. The transcript itself is ``Execution.messages``; what ended
    it is recorded here, never as a turn of the transcript (a judge reads only what was said).

    ``stop_reason``: ``max_turns``, ``script_exhausted``, ``user_ended`` (the simulated user
    said its goal was met), ``goal_achieved`` (a check after the agent's turn found the
    user's goal achieved), ``terminating_tool``, ``timeout``, ``agent_error`` or
    ``simulator_error``.
    """

    stop_reason: str
    agent_turns: int = 0
    user_turns: int = 0
    turn_latencies_ms: list[float] = Field(
        default_factory=list, description="each agent turn's latency, in order")
    simulator_usage: Usage = Field(default_factory=Usage)
    detail: str | None = Field(default=None, description="what went wrong, for error stops; "
                               "for a timeout that cut a turn, which one")
    cut_turn: int | None = Field(
        default=None, description="the agent round (from 1) that was still running when the "
        "conversation's time limit came, and was stopped: its answer is not in the transcript")
    goal_checks: list[str] = Field(
        default_factory=list, description="with stop_on_goal, each check's answer after "
        "each agent turn: yes, no, or the error that left the goal unchecked (the "
        "conversation then goes on)")
