"""A case: the input, what is expected, and how a conversation runs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from assay._util.limits import OptionalTurns, TimeoutMs
from assay.types.base import JSONValue, _Model
from assay.types.json import dump_json
from assay.types.messages import Message

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
    max_turns: OptionalTurns = Field(
        default=None, description="agent rounds at most (1 to 1000); None: the suite's")
    simulation_guidelines: list[str] = Field(
        default_factory=list, description="how the simulated user must behave (MLflow's "
        "simulation_guidelines): requirements on what it says and when")

    @field_validator("simulation_guidelines", mode="before")
    @classmethod
    def _guidelines(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, str) else value

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
    stop_on_goal: bool = Field(
        default=False, description="after each agent turn, ask the simulator's model whether "
        "the user's goal (the case's expected outcomes) is fully achieved; yes ends the "
        "conversation (stop reason goal_achieved), as MLflow's ConversationSimulator does")


class ConversationSettings(_Model):
    """A suite's defaults for its multi-turn cases."""

    max_turns: OptionalTurns = Field(
        default=10, description="agent rounds at most (1 to 1000); None: no cap of the "
        "suite's own, so the timeout and the hard cap of 1000 rounds bound a conversation")
    timeout_per_test_case_ms: TimeoutMs = Field(
        default=120_000, description="the whole conversation's time, at most a day")
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
