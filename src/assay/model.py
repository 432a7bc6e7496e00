"""The types every part of assay passes around: cases, executions, scores.

They are pydantic models so that files, the store and the API all validate the same way, and
so that a score written to disk reads back identical. One score scale lives inside assay:
floats in [0, 1]. A judge's native value (0-100, 0-5, yes/no) is kept in ``Score.raw`` with its
``scale``; a score that could not be computed carries an ``error`` and no value, never a 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from assay.spans import Span, normalize_trace

JSONValue = Any
"""Anything JSON can hold; kept loose because agents return arbitrary structures."""


class _Model(BaseModel):
    # Built on first use, not at import: a run uses a few of these (see judges.base).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class FunctionCall(_Model):
    """The ``function`` part of an OpenAI tool call; ``arguments`` is a JSON string."""

    name: str
    arguments: str = "{}"


class ToolCall(_Model):
    """A tool call in OpenAI chat format."""

    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    """One chat message in OpenAI format, tool calls included.

    Extra keys are allowed (providers add their own, such as ``refusal``) and kept.
    """

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        """The message's text, joining the text parts of multi-part content."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if isinstance(p, dict))


CaseInput = str | dict[str, Any] | list[Message]


class ToolExpectation(_Model):
    """A tool call a case expects the agent to make: the tool's name, the arguments that
    must be among its arguments, and (for agents whose tools are mocked) what it returns."""

    tool: str = Field(min_length=1)
    expected_params: dict[str, Any] | None = None
    mock_response: JSONValue = None


class ConversationSpec(_Model):
    """How the user side of a multi-turn case is played (a case with one of these is run as
    a conversation). Fields left unset take the suite's :class:`ConversationSettings`."""

    persona: str | None = Field(default=None, description="who the simulated user is")
    first_turn: Literal["user", "agent"] = "user"
    first_message: str | None = Field(
        default=None, description="the opening message (the user's, or with first_turn: "
        "agent the agent's greeting); None: the simulated user (or agent) opens")
    user_context: dict[str, Any] = Field(
        default_factory=dict, description="facts only the simulated user knows")
    scripted_messages: list[str] | None = Field(
        default=None, description="user messages replayed in order after the first one, "
        "instead of a simulated user")
    max_turns: int | None = Field(
        default=None, ge=1, description="agent rounds at most; None: the suite's")

    @field_validator("scripted_messages")
    @classmethod
    def _not_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("scripted_messages must not be empty (leave it out for a "
                             "simulated user)")
        return value


class SimulatorSettings(_Model):
    """The simulated user: a judge-engine model playing the case's persona."""

    model: str | None = Field(default=None, description="None: the run's judge model")
    temperature: float = Field(default=0.7, ge=0, le=2)
    seed: int | None = Field(default=0, description="sent with every request, so that with "
                             "the response cache a baseline and a candidate meet the same user")
    stop_signal: bool = Field(default=True, description="the user may end the conversation "
                              "when its goal is met")


class ConversationSettings(_Model):
    """A suite's defaults for its multi-turn cases."""

    max_turns: int | None = Field(default=10, ge=1, description="agent rounds at most; None: "
                                  "no cap (the timeout still bounds the case)")
    timeout_per_test_case_ms: float = Field(default=120_000, gt=0)
    terminating_tools: list[str] = Field(
        default_factory=list, description="tools that end the conversation when the agent "
        "calls them")
    scripted_messages: list[str] | None = None
    simulator: SimulatorSettings = Field(default_factory=SimulatorSettings)


class AgentInfo(_Model):
    """What is known of the agent under test: shown to judges, snapshotted into runs, and
    compared between runs (a changed prompt or tool set explains a changed result)."""

    name: str | None = None
    version: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    tools: list[dict[str, Any]] | None = None
class ExpectedDocument(_Model):
    """A document a retriever should have found (ground truth for retrieval recall)."""

    doc_uri: str
    content: str | None = None


class Case(_Model):
    """One thing to evaluate: what goes in, and what a good result looks like.

    ``guidelines`` are rules the answer must follow; ``named_guidelines`` are groups of them,
    each judged on its own (a ``guidelines`` dict of name -> rules is read into it). The
    RAG ground truth (``expected_facts``, ``expected_retrieved_context``) and the Databricks
    and MLflow extras (``guidelines_context``, ``custom_expected``, ``custom_inputs``, other
    ``expectations``) are typed fields, not metadata, so every judge reads them the same way.
    """

    id: str
    input: CaseInput = ""
    expected_output: JSONValue = None
    expected_outcomes: list[str] = Field(default_factory=list)
    guidelines: list[str] = Field(default_factory=list)
    reference_context: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    expected_tool_calls: list[ToolExpectation] = Field(default_factory=list)
    evaluation_criteria_override: str | None = Field(
        default=None, description="what a judge should weigh most for this case")
    conversation: ConversationSpec | None = Field(
        default=None, description="set for a multi-turn case: how its user is played")
    expected_facts: list[str] = Field(default_factory=list)
    expected_retrieved_context: list[ExpectedDocument] = Field(default_factory=list)
    named_guidelines: dict[str, list[str]] = Field(default_factory=dict)
    guidelines_context: dict[str, Any] = Field(default_factory=dict)
    expectations: dict[str, Any] = Field(
        default_factory=dict, description="other expectations by name (MLflow's expectations "
        "dict without its reserved keys), given whole to scorers")
    custom_expected: JSONValue = None
    custom_inputs: JSONValue = None
    expected_output_key: Literal["expected_output", "expected_response"] = Field(
        default="expected_output", description="the name the data gave the expected output: "
        "scorers and judge prompts see it under this key of ``expectations`` and no other "
        "(``expected_response`` for Databricks and MLflow rows)")

    @model_serializer(mode="wrap")
    def _without_default_key(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave ``expected_output_key`` out at its default, so a case of assay's own columns
        serialises (and fingerprints its suite) as it did before the field existed."""
        data = handler(self)
        if isinstance(data, dict) and data.get("expected_output_key") == "expected_output":
            del data["expected_output_key"]
        return data

    @model_validator(mode="before")
    @classmethod
    def _named_guideline_groups(cls, data: Any) -> Any:
        """``guidelines`` given as a dict of name -> rules is a set of named groups."""
        if isinstance(data, dict) and isinstance(data.get("guidelines"), dict):
            data = dict(data)
            groups = data.pop("guidelines")
            if data.get("named_guidelines"):
                raise ValueError("guidelines is a dict of named groups and named_guidelines "
                                 "is given too; give the groups once")
            data["named_guidelines"] = groups
        return data

    @field_validator("expected_outcomes", "guidelines", "reference_context", "expected_facts",
                     mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        return value

    @field_validator("named_guidelines", mode="before")
    @classmethod
    def _groups(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("expected_retrieved_context", mode="before")
    @classmethod
    def _expected_documents(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str | dict):
            value = [value]
        return [{"doc_uri": v} if isinstance(v, str) else v for v in value]

    @field_validator("guidelines_context", "expectations", mode="before")
    @classmethod
    def _no_dict(cls, value: Any) -> Any:
        return {} if value is None else value

    def question(self) -> str:
        """The user's question as text: the last user message, or the input itself."""
        if isinstance(self.input, str):
            return self.input
        if isinstance(self.input, list):
            users = [m for m in self.input if m.role == "user"]
            return users[-1].text() if users else ""
        for key in ("question", "query", "input", "prompt", "request"):
            if isinstance(self.input.get(key), str):
                return str(self.input[key])
        return dump_json(self.input)


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
    latency_ms: float | None = None
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
    provider_request: dict[str, Any] | None = Field(
        default=None, description="what the agent's provider was sent (a chat model's "
        "messages, a command's argv), no secrets: AgentV's lm/agent_provider_request")

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

    def output_text(self) -> str:
        """The output as text: strings as they are, anything else as JSON."""
        if self.output is None:
            return ""
        if isinstance(self.output, str):
            return self.output
        return dump_json(self.output)


class ScoreError(_Model):
    """Why a score has no value. ``code`` is stable and machine-readable."""

    code: str
    message: str


class Usage(_Model):
    """Judge calls, tokens and money spent on a score (or summed over a case or run).

    ``cost`` is None when any contributing call had no known price: an unknown cost is not
    a free one.
    """

    calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0

    def __add__(self, other: Usage) -> Usage:
        # Validated: pydantic's check of six numbers (4 us) is quicker than model_construct,
        # which builds a model field by field in Python (5 us), and sums run per call.
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Usage(
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            retries=self.retries + other.retries,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=cost,
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages``, built once: a sum by ``+`` builds a model per term, which
        showed in the per-case profile."""
        calls = cached_calls = retries = prompt_tokens = completion_tokens = 0
        cost: float | None = 0.0
        for u in usages:
            calls += u.calls
            cached_calls += u.cached_calls
            retries += u.retries
            prompt_tokens += u.prompt_tokens
            completion_tokens += u.completion_tokens
            cost = None if cost is None or u.cost is None else cost + u.cost
        return cls(calls=calls, cached_calls=cached_calls, retries=retries,
                   prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost=cost)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ConversationInfo(_Model):
    """How a multi-turn case went. The transcript itself is ``Execution.messages``; what ended
    it is recorded here, never as a turn of the transcript (a judge reads only what was said).

    ``stop_reason``: ``max_turns``, ``script_exhausted``, ``user_ended`` (the simulated user
    said its goal was met), ``terminating_tool``, ``timeout``, ``agent_error`` or
    ``simulator_error``.
    """

    stop_reason: str
    agent_turns: int = 0
    user_turns: int = 0
    turn_latencies_ms: list[float] = Field(
        default_factory=list, description="each agent turn's latency, in order")
    simulator_usage: Usage = Field(default_factory=Usage)
    detail: str | None = Field(default=None, description="what went wrong, for error stops")


class ScoreState(StrEnum):
    """What a score holds: a value, an error, or nothing because it did not apply."""

    VALUE = "value"
    ERROR = "error"
    SKIPPED = "skipped"


MEASUREMENT = "measurement"
"""The ``details`` key that marks a score as a measurement (see :attr:`Score.measurement`)."""


class Score(_Model):
    """One evaluator's judgement of one execution.

    Exactly one of ``value``, ``error`` and ``skipped`` is set. A skipped score is "not
    applicable" (a judge whose inputs the case does not have): neither a failure nor an error,
    and outside every mean and every error count. ``raw`` and ``scale`` keep what the judge
    natively said (``87`` on ``"0-100"``) beside the normalised value (``0.87``). ``parts``
    holds named sub-judgements that make this score up (composite members, named guideline
    groups, several feedbacks of one scorer), each a full score of its own. ``blocking`` is
    the one way any evaluator says "this case fails, whatever the others say"; composites pass
    it on from their members.
    """

    name: str
    value: float | None = None
    raw: JSONValue = None
    scale: str | None = None
    label: str | None = None
    passed: bool | None = None
    blocking: bool = Field(
        default=False, description="this score fails its case whatever the case's mean: a "
        "required check that did not pass (or could not run)")
    rationale: str | None = None
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    details: dict[str, Any] | None = None
    error: ScoreError | None = None
    skipped: str | None = Field(default=None, description="why the evaluator did not apply")
    parts: list[Score] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float | None = None
    judge_model: str | None = None

    @field_validator("value")
    @classmethod
    def _in_unit_range(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"score value must be within [0, 1], got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_state(self) -> Score:
        states = (self.value is not None) + (self.error is not None) + (self.skipped is not None)
        if states == 0:
            raise ValueError("a score needs a value, an error or a skip reason")
        if states > 1:
            raise ValueError("a score holds exactly one of a value, an error and a skip reason")
        if self.value is None:
            self.passed = None
        elif self.blocking:
            self.passed = False  # a score that fails its case does not pass itself
        return self

    @property
    def measurement(self) -> bool:
        """Whether this is a measurement: a value off the 0-1 scale (a length, a 1-5
        rating, a category) from a judge or scorer that declared it measures, kept as
        ``raw`` and aggregated as it is. It is not applicable as a score, so it counts in no
        verdict and no mean of scores, and is counted apart from skips."""
        return bool(self.details and self.details.get(MEASUREMENT))

    @property
    def state(self) -> ScoreState:
        if self.value is not None:
            return ScoreState.VALUE
        return ScoreState.ERROR if self.error is not None else ScoreState.SKIPPED

    @property
    def ok(self) -> bool:
        """True unless the score is an error (a value, failing or not, or a skip)."""
        return self.error is None

    @classmethod
    def failed(
        cls, name: str, code: str, message: str, **extra: Any
    ) -> Score:
        """A score that could not be computed; it never counts as 0."""
        return cls(name=name, error=ScoreError(code=code, message=message), **extra)

    @classmethod
    def not_applicable(cls, name: str, reason: str, **extra: Any) -> Score:
        """A score for an evaluator that did not apply (its inputs are missing): no call was
        made, and it is neither a failure nor an error."""
        return cls(name=name, skipped=reason, **extra)


PASS_AT = 0.8
BORDERLINE_AT = 0.6


def verdict_band(score: Score, borderline_at: float = BORDERLINE_AT) -> str:
    """One evaluator's verdict as AgentV reports it: ``pass``, ``borderline`` or ``fail``
    (``error`` and ``skipped`` for scores without a value).

    A score that passed its evaluator's threshold (0.8 unless set) is a pass; one that did
    not is borderline from ``borderline_at`` (0.6) up, unless it blocks its case (a required
    check), else a fail. A score with no pass/fail of its own is banded at 0.8 and 0.6.
    """
    if score.error is not None:
        return "error"
    if score.value is None:
        return "skipped"
    if score.passed is True or (score.passed is None and score.value >= PASS_AT):
        return "pass"
    if not score.blocking and score.value >= borderline_at:
        return "borderline"
    return "fail"


def dump_json(value: Any) -> str:
    """Serialise for prompts and files: JSON (never Python repr), UTF-8 kept readable."""
    import json

    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, ensure_ascii=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


class Aggregate(_Model):
    """A summary of many scores that keeps errors and skips apart from values."""

    count: int
    scored: int
    errors: int
    skipped: int = 0
    mean: float | None
    passed: int
    failed: int
    usage: Usage


def aggregate(scores: list[Score]) -> Aggregate:
    """Mean over scores that have a value; errors are counted, never averaged in as 0."""
    values = [s.value for s in scores if s.value is not None]
    usage = Usage.total(s.usage for s in scores)
    return Aggregate(
        count=len(scores),
        scored=len(values),
        errors=sum(1 for s in scores if s.error is not None),
        skipped=sum(1 for s in scores if s.skipped is not None),
        mean=(sum(values) / len(values)) if values else None,
        passed=sum(1 for s in scores if s.passed is True),
        failed=sum(1 for s in scores if s.passed is False),
        usage=usage,
    )
