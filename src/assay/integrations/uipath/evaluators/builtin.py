"""UiPath's built-in evaluators by their UiPath names, each scored by the assay evaluator of
the same kind.

::

    evaluator = LLMJudgeOutputEvaluator(
        id="llm-judge-1",
        config={"name": "LLMJudgeOutputEvaluator", "model": "gpt-4o-2024-11-20",
                "temperature": 0.0, "target_output_key": "answer"})
    result = await evaluator.validate_and_evaluate_criteria(
        agent_execution=AgentExecution(agent_input={...}, agent_output={...}, agent_trace=[]),
        evaluation_criteria={"expected_output": {"answer": "..."}})
    result.score, result.details

Config and criteria keys are UiPath's (camelCase or snake_case) and are checked when the
evaluator is built: an unknown key is an error naming it, never silently ignored. An LLM judge's
prompt that lacks one of its placeholders (``{{ActualOutput}}`` and ``{{ExpectedOutput}}``; for
the trajectory judges ``{{AgentRunHistory}}`` and ``{{ExpectedAgentBehavior}}``) gets it
appended in its own tagged section, as UiPath 2.14's evaluators do and as a project's evaluator
files get it (:func:`assay.judges.llm.semantic_similarity.with_placeholders`); a placeholder
that nothing fills is an error.

The judge. ``llm_service=`` (an async callable taking UiPath's request dict) answers, with the
request's ``model`` set to the config's ``model`` as written, in the documented request shape
(``llm_service_mode``: ``"json_schema"``, the default, or ``"tools"``); without one the judge
is the run's (``ASSAY_JUDGE_MODEL``), and a ``model`` without a provider prefix
(``gpt-4o-2024-11-20``) is asked of that judge's service by that name, as in a project's
evaluator files (:func:`assay.suites.uipath.uipath_model`). Scores are rounded to two places
as UiPath's are; an LLM judge's ``details`` is its justification.

Failures are :class:`UiPathEvaluationError` raised from ``evaluate`` and
``validate_and_evaluate_criteria``, as the documentation describes (the LLM service is
unavailable: ``FAILED_TO_GET_LLM_RESPONSE``; its answer cannot be used:
``INVALID_LLM_RESPONSE``; the prompt lacks a placeholder: ``INVALID_PROMPT_PLACEHOLDERS``).
UiPath's own runtime turns an exception inside ``evaluate`` into an error result with score 0;
here nothing is a silent 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.alias_generators import to_camel

from assay.errors import EvaluationError
from assay.integrations.uipath.evaluators.base_evaluator import (
    SYSTEM,
    USER,
    BaseEvaluator,
    BaseEvaluatorConfig,
    BaseEvaluatorJustification,
)
from assay.integrations.uipath.models.models import (
    BaseEvaluationResult,
    EvaluatorType,
    NumericEvaluationResult,
    UiPathEvaluationError,
    UiPathEvaluationErrorCategory,
    WorkloadExecution,
)
from assay.integrations.uipath.service import uipath_tools_request
from assay.judges.base import Evaluator
from assay.judges.llm.templates import variables
from assay.judges.registry import EVALUATORS, build
from assay.llm import JudgeEngine, register_service
from assay.llm.build import engine_config
from assay.run.score import score_async
from assay.suites.uipath import SAME_AS_AGENT, to_fields, uipath_model
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score


class OpenConfig(BaseEvaluatorConfig[Any]):
    """A built-in evaluator's config: UiPath's keys, checked against the assay evaluator."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True,
                              extra="allow")


# assay error code -> (UiPath code, title, category)
_ERRORS: Mapping[str, tuple[str, str, UiPathEvaluationErrorCategory]] = {
    "judge_output_invalid": ("INVALID_LLM_RESPONSE", "The LLM response could not be parsed",
                             SYSTEM),
    "target_output_key_not_found": ("TARGET_OUTPUT_KEY_NOT_FOUND", "Target output key not "
                                    "found", USER),
    "invalid_actual_output": ("INVALID_ACTUAL_OUTPUT", "Invalid actual output", USER),
    "invalid_expected_output": ("INVALID_EXPECTED_OUTPUT", "Invalid expected output", USER),
    "missing_expected_output": ("MISSING_EVALUATION_CRITERIA", "No expected output", USER),
    "missing_expected_behavior": ("MISSING_EVALUATION_CRITERIA", "No expected agent "
                                  "behavior", USER),
    "unknown_model": ("FAILED_TO_GET_LLM_SERVICE", "The LLM service cannot be used", USER),
    "unknown_provider": ("FAILED_TO_GET_LLM_SERVICE", "The LLM service cannot be used", USER),
    "missing_api_key": ("FAILED_TO_GET_LLM_SERVICE", "The LLM service cannot be used", USER),
}
_SERVICE_DOWN = ("FAILED_TO_GET_LLM_RESPONSE", "The LLM service is unavailable", SYSTEM)
_PROVIDER_CODES = frozenset({
    "provider_error", "connection_error", "server_error", "timeout", "rate_limited",
    "retries_exhausted", "bad_response", "request_rejected", "response_too_large",
    "unreachable_base_url", "invalid_base_url"})


def uipath_error(code: str, message: str, evaluator_id: str) -> UiPathEvaluationError:
    """UiPath's error for assay's error ``code`` (a score's, or one raised before judging)."""
    uipath = _ERRORS.get(code) or (_SERVICE_DOWN if code in _PROVIDER_CODES else (
        code.upper(), "The evaluation failed", UiPathEvaluationErrorCategory.UNKNOWN))
    return UiPathEvaluationError(uipath[0], uipath[1], f"evaluator {evaluator_id!r}: {message}",
                                 uipath[2])


def raise_for(score: Score, evaluator_id: str) -> None:
    """Raise the UiPath error for a score that has no value."""
    if score.error is not None:
        raise uipath_error(score.error.code, score.error.message, evaluator_id)
    if score.skipped is not None:
        raise UiPathEvaluationError("EVALUATOR_NOT_APPLICABLE", "The evaluator does not apply",
                                    f"evaluator {evaluator_id!r}: {score.skipped}", USER)


class AssayBackedEvaluator(BaseEvaluator[Any, OpenConfig, Any]):
    """A UiPath built-in evaluator scored by the assay evaluator ``assay_type``."""

    assay_type: ClassVar[str] = ""
    type_id: ClassVar[str] = ""
    placeholders: ClassVar[tuple[str, ...]] = ()
    """The prompt placeholders an LLM judge's prompt must hold."""

    llm_service_mode: Literal["json_schema", "tools"] = Field(default="json_schema",
                                                             exclude=True)
    """How ``llm_service`` is asked for structured output. By default as UiPath's
    documentation describes the contract of a custom LLM service (seed: "LLM Service
    Integration"): ``response_format`` with a JSON schema named ``evaluation_response``,
    ``max_tokens`` always present (None allowed) and ``temperature``; a service written to that
    page works with only its import changed. ``"tools"`` sends the request UiPath 2.14's code
    sends instead (the function ``submit_evaluation`` with ``tool_choice: {"type":
    "required"}``, ``max_tokens`` only when set; see :mod:`assay.integrations.uipath.service`),
    for a service written against that code, such as one that forwards to UiPath's gateway."""

    _fields: dict[str, Any] = PrivateAttr(default_factory=dict)
    _engine: JudgeEngine | None = PrivateAttr(default=None)

    @classmethod
    def get_evaluator_id(cls) -> str:
        return cls.type_id

    def model_post_init(self, context: Any) -> None:
        config = self.evaluator_config
        raw = config.model_dump(by_alias=False, exclude_unset=True) \
            if isinstance(config, BaseModel) else dict(config)
        for key in ("name", "description", "default_evaluation_criteria"):
            raw.pop(key, None)
        self._check_prompt(raw.get("prompt"))
        self._fields = self._mapped(raw, "config", "FAILED_TO_VALIDATE_EVALUATOR_CONFIG",
                                    SYSTEM)
        self._check_buildable()

    def _check_prompt(self, prompt: Any) -> None:
        """A prompt that is text and uses no placeholder nothing fills; a missing one is
        added when the judge is built, as everywhere (the evaluator's own validation)."""
        if prompt is None or not self.placeholders:
            return
        if not isinstance(prompt, str):
            raise UiPathEvaluationError(
                "INVALID_PROMPT_PLACEHOLDERS", "Invalid prompt",
                f"evaluator {self.id!r}: the prompt is a {type(prompt).__name__}, not text",
                USER)
        unknown = sorted(set(variables(prompt)) - set(self._accepted_placeholders()))
        if unknown:
            accepted = ", ".join("{{" + p + "}}" for p in self._accepted_placeholders())
            raise UiPathEvaluationError(
                "INVALID_PROMPT_PLACEHOLDERS", "Prompt with unknown placeholders",
                f"evaluator {self.id!r}: it uses unknown placeholder(s) " + ", ".join(
                    "{{" + p + "}}" for p in unknown) + f" (accepted: {accepted})", USER)

    def _accepted_placeholders(self) -> tuple[str, ...]:
        return self.placeholders

    def _mapped(self, values: Mapping[str, Any], what: str, code: str,
                category: UiPathEvaluationErrorCategory) -> dict[str, Any]:
        warnings: list[str] = []
        fields = to_fields(EVALUATORS[self.assay_type], values, f"evaluator {self.id!r} {what}",
                           warnings, f"{what} key")
        if warnings:
            raise UiPathEvaluationError(code, f"Invalid evaluator {what}",
                                        "; ".join(w.replace("; ignored", "") for w in warnings),
                                        category)
        return fields

    def _check_buildable(self) -> None:
        """Build once without criteria, so a bad setting fails here, not per evaluation."""
        cls = EVALUATORS[self.assay_type]
        try:
            cls.model_validate({**self._fields, "name": self.id, "model": None}
                               if "model" in cls.model_fields else
                               {**self._fields, "name": self.id})
        except EvaluationError as exc:
            raise UiPathEvaluationError("FAILED_TO_VALIDATE_EVALUATOR_CONFIG",
                                        "Invalid evaluator config", exc.message, SYSTEM) \
                from None
        except ValueError as exc:
            errors = getattr(exc, "errors", None)
            problems = [e for e in errors() if e["type"] != "missing"] if callable(errors) \
                else [{"loc": (), "msg": str(exc)}]
            if problems:
                text = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'config'}: "
                                 f"{e['msg']}" for e in problems)
                raise UiPathEvaluationError("FAILED_TO_VALIDATE_EVALUATOR_CONFIG",
                                            "Invalid evaluator config",
                                            f"evaluator {self.id!r}: {text}", SYSTEM) from None

    def use_engine(self, engine: JudgeEngine) -> None:
        """Judge with ``engine`` (its cache, limits and default model); without one, each
        evaluation builds its own, as :func:`assay.score` does."""
        self._engine = engine

    def default_model(self) -> str:
        """The judge model of an evaluation that names none: the engine's."""
        config = self._engine.config if self._engine is not None else engine_config()
        return config.default_model

    def judge_model(self) -> str | None:
        """The model string the judge calls (None: the engine's default), by the one rule of
        every UiPath entry point (:func:`assay.suites.uipath.uipath_model`); with an
        ``llm_service``, that service asked for the config's model by name."""
        if self.llm_service is not None:
            model = self._fields.get("model")
            model = model.strip() if isinstance(model, str) else ""
            if model == SAME_AS_AGENT:
                model = ""
            fn = self.llm_service
            name = (f"uipath.{getattr(fn, '__module__', '')}."
                    f"{getattr(fn, '__qualname__', type(fn).__name__)}.{id(fn):x}")
            service = register_service(
                name, fn, structured_mode=self.llm_service_mode,
                request_shape=uipath_tools_request if self.llm_service_mode == "tools"
                else None)
            return f"{service}#{model}" if model else service
        return uipath_model(self._fields.get("model"))

    def assay_evaluator(self, criteria: Any) -> Evaluator:
        """The assay evaluator for one evaluation: the config plus these criteria."""
        if isinstance(criteria, BaseModel):
            criteria = criteria.model_dump(by_alias=False, exclude_none=True)
        if not isinstance(criteria, Mapping):
            raise UiPathEvaluationError(
                "CANNOT_VALIDATE_EVALUATION_CRITERIA", "Invalid evaluation criteria",
                f"evaluator {self.id!r}: criteria must be a mapping, not "
                f"{type(criteria).__name__}", USER)
        fields = {**self._fields,
                  **self._mapped(criteria, "criteria", "CANNOT_VALIDATE_EVALUATION_CRITERIA",
                                 USER)}
        if "model" in EVALUATORS[self.assay_type].model_fields:
            fields["model"] = self.judge_model()
        try:
            built: Evaluator = build({"type": self.assay_type, **fields, "name": self.id},
                                     f"evaluator {self.id!r}")
        except EvaluationError as exc:
            raise UiPathEvaluationError("CANNOT_VALIDATE_EVALUATION_CRITERIA",
                                        "Invalid evaluation criteria", exc.message, USER) \
                from None
        return built

    def case_and_execution(self, execution: WorkloadExecution) -> tuple[Case, Execution]:
        metadata: dict[str, Any] = {}
        if execution.simulation_instructions:
            metadata["simulation_instructions"] = execution.simulation_instructions
        if execution.expected_agent_behavior:
            metadata["expected_agent_behavior"] = execution.expected_agent_behavior
        try:
            case = Case(id=self.id, input=execution.agent_input or {}, metadata=metadata)
            run = Execution(input=case.input, output=execution.workload_output,
                            trace=execution.workload_trace)
        except (ValueError, EvaluationError) as exc:
            raise UiPathEvaluationError("INVALID_ACTUAL_OUTPUT", "Invalid execution",
                                        f"evaluator {self.id!r}: {exc}", USER) from None
        return case, run

    async def evaluate(self, workload_execution: WorkloadExecution | None = None,
                       evaluation_criteria: Any = None, *,
                       agent_execution: WorkloadExecution | None = None
                       ) -> BaseEvaluationResult:
        """Score one execution against ``evaluation_criteria`` (no defaults applied)."""
        from assay.integrations.uipath.evaluators.base_evaluator import execution_of

        execution = execution_of(agent_execution, workload_execution)
        evaluator = self.assay_evaluator(evaluation_criteria or {})
        case, run = self.case_and_execution(execution)
        try:  # one case judged as a run judges it (see assay.score)
            score = await score_async(evaluator, case, run, engine=self._engine)
        except EvaluationError as exc:  # the judge could not start: UiPath's error for it
            raise uipath_error(exc.code, exc.message, self.id) from None
        raise_for(score, self.id)
        assert score.value is not None
        return NumericEvaluationResult(score=score.value, details=self.details(score),
                                       evaluation_time=(score.latency_ms or 0.0) / 1000)

    def details(self, score: Score) -> Any:
        """UiPath's justification: the two compared values for deterministic evaluators."""
        details = score.details or {}
        if "expected" in details and "actual" in details:
            return BaseEvaluatorJustification(expected=str(details["expected"]),
                                              actual=str(details["actual"]))
        return details or score.rationale


class _LLMJudge(AssayBackedEvaluator):
    """An LLM judge: ``details`` is the judge's justification, as UiPath's docs show."""

    def details(self, score: Score) -> Any:
        return score.rationale or ""


class LLMJudgeOutputEvaluator(_LLMJudge):
    """``uipath-llm-judge-output-semantic-similarity``: 0-100 semantic similarity, as 0-1."""

    assay_type = "semantic_similarity"
    type_id = EvaluatorType.LLM_JUDGE_OUTPUT_SEMANTIC_SIMILARITY.value
    default_config_name = "LLMJudgeOutputEvaluator"
    placeholders = ("ActualOutput", "ExpectedOutput")


class LLMJudgeStrictJSONSimilarityOutputEvaluator(_LLMJudge):
    """``uipath-llm-judge-output-strict-json-similarity``: per-key penalties, as 0-1."""

    assay_type = "strict_json_similarity"
    type_id = EvaluatorType.LLM_JUDGE_OUTPUT_STRICT_JSON_SIMILARITY.value
    default_config_name = "LLMJudgeStrictJSONSimilarityOutputEvaluator"
    placeholders = ("ActualOutput", "ExpectedOutput")


class LLMJudgeTrajectoryEvaluator(_LLMJudge):
    """``uipath-llm-judge-trajectory-similarity``: the run against the expected behaviour."""

    assay_type = "llm_judge_trajectory"
    type_id = EvaluatorType.LLM_JUDGE_TRAJECTORY_SIMILARITY.value
    default_config_name = "LLMJudgeTrajectoryEvaluator"
    placeholders = ("AgentRunHistory", "ExpectedAgentBehavior")

    def _accepted_placeholders(self) -> tuple[str, ...]:
        return ("UserOrSyntheticInput", "ExpectedAgentBehavior", "AgentRunHistory",
                "SimulationInstructions")


class LLMJudgeTrajectorySimulationEvaluator(LLMJudgeTrajectoryEvaluator):
    """``uipath-llm-judge-trajectory-simulation``: the same, for a run with mocked tools."""

    assay_type = "llm_judge_trajectory_simulation"
    type_id = EvaluatorType.LLM_JUDGE_TRAJECTORY_SIMULATION.value
    default_config_name = "LLMJudgeTrajectorySimulationEvaluator"


class ExactMatchEvaluator(AssayBackedEvaluator):
    assay_type = "exact_match"
    type_id = EvaluatorType.EXACT_MATCH.value
    default_config_name = "ExactMatchEvaluator"


class ContainsEvaluator(AssayBackedEvaluator):
    assay_type = "contains"
    type_id = EvaluatorType.CONTAINS.value
    default_config_name = "ContainsEvaluator"


class JsonSimilarityEvaluator(AssayBackedEvaluator):
    assay_type = "json_similarity"
    type_id = EvaluatorType.JSON_SIMILARITY.value
    default_config_name = "JsonSimilarityEvaluator"


class ToolCallOrderEvaluator(AssayBackedEvaluator):
    assay_type = "tool_call_order"
    type_id = EvaluatorType.TOOL_CALL_ORDER.value
    default_config_name = "ToolCallOrderEvaluator"


class ToolCallCountEvaluator(AssayBackedEvaluator):
    assay_type = "tool_call_count"
    type_id = EvaluatorType.TOOL_CALL_COUNT.value
    default_config_name = "ToolCallCountEvaluator"


class ToolCallArgsEvaluator(AssayBackedEvaluator):
    assay_type = "tool_call_args"
    type_id = EvaluatorType.TOOL_CALL_ARGS.value
    default_config_name = "ToolCallArgsEvaluator"


class ToolCallOutputEvaluator(AssayBackedEvaluator):
    assay_type = "tool_call_output"
    type_id = EvaluatorType.TOOL_CALL_OUTPUT.value
    default_config_name = "ToolCallOutputEvaluator"


class BinaryClassificationEvaluator(AssayBackedEvaluator):
    assay_type = "binary_classification"
    type_id = EvaluatorType.BINARY_CLASSIFICATION.value
    default_config_name = "BinaryClassificationEvaluator"


class MulticlassClassificationEvaluator(AssayBackedEvaluator):
    assay_type = "multiclass_classification"
    type_id = EvaluatorType.MULTICLASS_CLASSIFICATION.value
    default_config_name = "MulticlassClassificationEvaluator"


EVALUATORS_BY_TYPE_ID: dict[str, type[AssayBackedEvaluator]] = {
    cls.type_id: cls for cls in (
        ExactMatchEvaluator, ContainsEvaluator, JsonSimilarityEvaluator, LLMJudgeOutputEvaluator,
        LLMJudgeStrictJSONSimilarityOutputEvaluator, LLMJudgeTrajectoryEvaluator,
        LLMJudgeTrajectorySimulationEvaluator, ToolCallOrderEvaluator, ToolCallCountEvaluator,
        ToolCallArgsEvaluator, ToolCallOutputEvaluator, BinaryClassificationEvaluator,
        MulticlassClassificationEvaluator)}
"""Every built-in evaluator by its ``evaluatorTypeId``."""
