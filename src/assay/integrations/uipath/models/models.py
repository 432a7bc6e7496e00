"""UiPath's evaluation data models, by their UiPath names: executions, results, errors.

``WorkloadExecution`` takes the current field names (``workload_output``, ``workload_trace``)
and the names of UiPath's earlier ``AgentExecution`` (``agent_output``, ``agent_trace``), so the
documentation's examples run as written; ``AgentExecution`` is the same class. Traces are
OpenTelemetry ``ReadableSpan`` objects, OTLP JSON or span dicts (whatever assay reads).

Results are UiPath's three kinds (boolean, numeric, error) with ``score``, ``details`` and
``evaluation_time``. A failure is a :class:`UiPathEvaluationError` carrying a
:class:`UiPathEvaluationErrorContract` (``code`` prefixed ``Python.``, ``title``, ``detail``,
``category``); its text is ``"title: detail"`` so it reads well when printed.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_serializer
from pydantic.alias_generators import to_camel


class WorkloadExecution(BaseModel):
    """What an agent (a workload) did: its input, its output and its trace."""

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True,
                              extra="forbid")

    agent_input: dict[str, Any] | None = None
    workload_output: Any = Field(
        default=None, validation_alias=AliasChoices("workload_output", "agent_output"))
    workload_trace: list[Any] = Field(
        default_factory=list, validation_alias=AliasChoices("workload_trace", "agent_trace"))
    expected_agent_behavior: str | None = None
    simulation_instructions: str = ""

    @property
    def agent_output(self) -> Any:
        """The output, by the name UiPath used before version 2.12."""
        return self.workload_output

    @property
    def agent_trace(self) -> list[Any]:
        """The trace, by the name UiPath used before version 2.12."""
        return self.workload_trace


AgentExecution = WorkloadExecution
"""UiPath's earlier name for :class:`WorkloadExecution` (UiPath's documentation's examples
use it)."""


class LLMResponse(BaseModel):
    """A judge's answer: a 0-100 score and its justification."""

    score: float
    justification: str


class ScoreType(IntEnum):
    BOOLEAN = 0
    NUMERICAL = 1
    ERROR = 2


class BaseEvaluationResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    details: Any = None
    evaluation_time: float | None = None


class BooleanEvaluationResult(BaseEvaluationResult):
    score: bool
    score_type: Literal[ScoreType.BOOLEAN] = ScoreType.BOOLEAN


class NumericEvaluationResult(BaseEvaluationResult):
    score: float
    score_type: Literal[ScoreType.NUMERICAL] = ScoreType.NUMERICAL


class ErrorEvaluationResult(BaseEvaluationResult):
    score: float = 0.0
    score_type: Literal[ScoreType.ERROR] = ScoreType.ERROR


EvaluationResult = Annotated[
    BooleanEvaluationResult | NumericEvaluationResult | ErrorEvaluationResult,
    Field(discriminator="score_type"),
]


class EvaluationResultDto(BaseModel):
    """A result as UiPath serialises it: booleans as 100 or 0, errors as 0."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    score: float
    details: str | dict[str, Any] | None = None
    evaluation_time: float | None = None

    @model_serializer(mode="wrap")
    def _without_empty_details(self, handler: Any) -> Any:
        data = handler(self)
        if self.details is None and isinstance(data, dict):
            data.pop("details", None)
        return data

    @classmethod
    def from_evaluation_result(cls, result: BaseEvaluationResult) -> EvaluationResultDto:
        kind = getattr(result, "score_type", ScoreType.NUMERICAL)
        raw = getattr(result, "score", 0.0)
        score = (100.0 if raw else 0.0) if kind == ScoreType.BOOLEAN else (
            0.0 if kind == ScoreType.ERROR else float(raw))
        details = result.details
        if isinstance(details, BaseModel):
            details = details.model_dump()
        return cls(score=score, details=details, evaluation_time=result.evaluation_time)


class ToolCall(BaseModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ToolOutput(BaseModel):
    name: str
    output: str
    id: str | None = None


class EvalItemResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    evaluator_id: str
    result: Any


class EvaluatorType(StrEnum):
    """UiPath's ``evaluatorTypeId`` values."""

    CONTAINS = "uipath-contains"
    EXACT_MATCH = "uipath-exact-match"
    JSON_SIMILARITY = "uipath-json-similarity"
    LLM_JUDGE_OUTPUT_SEMANTIC_SIMILARITY = "uipath-llm-judge-output-semantic-similarity"
    LLM_JUDGE_OUTPUT_STRICT_JSON_SIMILARITY = "uipath-llm-judge-output-strict-json-similarity"
    LLM_JUDGE_TRAJECTORY_SIMILARITY = "uipath-llm-judge-trajectory-similarity"
    LLM_JUDGE_TRAJECTORY_SIMULATION = "uipath-llm-judge-trajectory-simulation"
    LLM_JUDGE_TRAJECTORY = "uipath-llm-judge-trajectory"
    LLM_JUDGE_OUTPUT = "uipath-llm-judge-output"
    TOOL_CALL_ARGS = "uipath-tool-call-args"
    TOOL_CALL_COUNT = "uipath-tool-call-count"
    TOOL_CALL_ORDER = "uipath-tool-call-order"
    TOOL_CALL_OUTPUT = "uipath-tool-call-output"
    BINARY_CLASSIFICATION = "uipath-binary-classification"
    MULTICLASS_CLASSIFICATION = "uipath-multiclass-classification"


class LegacyEvaluatorCategory(IntEnum):
    Deterministic = 0
    LlmAsAJudge = 1
    AgentScorer = 2
    Trajectory = 3


class LegacyEvaluatorType(IntEnum):
    Unknown = 0
    Equals = 1
    Contains = 2
    Regex = 3
    Factuality = 4
    Custom = 5
    JsonSimilarity = 6
    Trajectory = 7
    ContextPrecision = 8
    Faithfulness = 9
    CSVColumnExactMatch = 10


class UiPathEvaluationErrorCategory(StrEnum):
    SYSTEM = "System"
    USER = "User"
    UNKNOWN = "Unknown"


class UiPathEvaluationErrorContract(BaseModel):
    code: str
    title: str
    detail: str
    category: UiPathEvaluationErrorCategory = UiPathEvaluationErrorCategory.UNKNOWN


class UiPathEvaluationError(Exception):
    """An evaluation that could not be done: the error type UiPath documents.

    ``code`` is prefixed (``Python.FAILED_TO_GET_LLM_RESPONSE``); ``category`` says whose
    problem it is: the user's (a bad prompt, a missing key) or the system's (the LLM service).
    """

    def __init__(self, code: str, title: str, detail: str,
                 category: UiPathEvaluationErrorCategory = UiPathEvaluationErrorCategory.UNKNOWN,
                 prefix: str = "Python") -> None:
        self.error_info = UiPathEvaluationErrorContract(
            code=f"{prefix}.{code}", title=title, detail=detail, category=category)
        super().__init__(f"{title}: {detail}")

    @property
    def code(self) -> str:
        return self.error_info.code

    @property
    def as_dict(self) -> dict[str, Any]:
        return self.error_info.model_dump()


__all__ = [
    "AgentExecution", "BaseEvaluationResult", "BooleanEvaluationResult", "ErrorEvaluationResult",
    "EvalItemResult", "EvaluationResult", "EvaluationResultDto", "EvaluatorType",
    "LLMResponse", "LegacyEvaluatorCategory", "LegacyEvaluatorType", "NumericEvaluationResult",
    "ScoreType", "ToolCall", "ToolOutput", "UiPathEvaluationError",
    "UiPathEvaluationErrorCategory", "UiPathEvaluationErrorContract", "WorkloadExecution",
]
