"""UiPath's evaluator base classes: what built-in and custom evaluators are written against.

An evaluator is a pydantic model with an ``id`` and a config; it is parameterised by its
criteria, config and justification types (``BaseEvaluator[Criteria, Config, Justification]``),
which is how a custom evaluator declares them. The config is accepted as ``config=``,
``evaluator_config=`` or ``evaluatorConfig=`` (UiPath's documentation uses the first, its code
only the last), in camelCase or snake_case keys.

``validate_and_evaluate_criteria`` falls back to the config's ``default_evaluation_criteria``
when no criteria are given, validates them into the criteria type and calls ``evaluate``;
problems are :class:`UiPathEvaluationError` with UiPath's codes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from assay._util.validation import field_problems
from assay.integrations.uipath.models.models import (
    BaseEvaluationResult,
    EvaluationResultDto,
    UiPathEvaluationError,
    UiPathEvaluationErrorCategory,
    WorkloadExecution,
)

USER = UiPathEvaluationErrorCategory.USER
SYSTEM = UiPathEvaluationErrorCategory.SYSTEM


class BaseEvaluationCriteria(BaseModel):
    """What one evaluation item expects; subclasses add the fields."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


T = TypeVar("T", bound=BaseEvaluationCriteria)


class BaseEvaluatorConfig(BaseModel, Generic[T]):
    """How an evaluator behaves; subclasses add settings and a default ``name``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    name: str = ""
    description: str = ""
    default_evaluation_criteria: T | None = None


class BaseEvaluatorJustification(BaseModel):
    """Why a deterministic evaluator scored as it did: the two values it compared."""

    expected: str
    actual: str

    @classmethod
    def try_from(cls, details: Any) -> BaseEvaluatorJustification | None:
        if isinstance(details, cls):
            return details
        try:
            return cls.model_validate(details)
        except ValidationError:
            return None


C = TypeVar("C")
K = TypeVar("K")
J = TypeVar("J")


class BaseEvaluator(BaseModel, Generic[C, K, J]):
    """Base of every UiPath evaluator. Subclasses implement :meth:`evaluate` and
    :meth:`get_evaluator_id`."""

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True,
                              extra="forbid")

    version: str = "1.0"
    id: str
    evaluator_type_id: str | None = Field(default=None, alias="evaluatorTypeId")
    evaluator_schema: str | None = Field(default=None, alias="evaluatorSchema")
    evaluator_config: Any = Field(alias="evaluatorConfig")
    llm_service: Any = Field(default=None, exclude=True)

    default_config_name: ClassVar[str] = ""

    _created: float = PrivateAttr(default=0.0)

    @model_validator(mode="before")
    @classmethod
    def _config(cls, values: Any) -> Any:
        if not isinstance(values, Mapping):
            return values
        values = dict(values)
        given = [k for k in ("evaluatorConfig", "evaluator_config", "config") if k in values]
        if len(given) > 1:
            raise UiPathEvaluationError(
                "FAILED_TO_VALIDATE_EVALUATOR_CONFIG", "Invalid evaluator config",
                f"the config is given as {' and '.join(given)}; give it once", SYSTEM)
        raw = values.pop(given[0]) if given else {}
        if isinstance(raw, BaseModel):
            raw = raw.model_dump(by_alias=False, exclude_unset=True)
        if not isinstance(raw, Mapping):
            raise UiPathEvaluationError(
                "FAILED_TO_VALIDATE_EVALUATOR_CONFIG", "Invalid evaluator config",
                f"the config is a {type(raw).__name__}, expected a mapping", SYSTEM)
        config = dict(raw)
        for key in ("name", "description"):  # top-level name/description win, as in UiPath
            if values.get(key) is not None:
                config[key] = values.pop(key)
            else:
                values.pop(key, None)
        values["evaluatorConfig"] = cls.validate_config(config)
        return values

    @classmethod
    def validate_config(cls, config: dict[str, Any]) -> Any:
        """The config as the evaluator's config type; a bad one is a located error."""
        kind = cls.config_type()
        if kind is Any or not isinstance(kind, type) or not issubclass(kind, BaseModel):
            return config
        try:
            validated = kind.model_validate(config)
        except ValidationError as exc:
            raise UiPathEvaluationError(
                "FAILED_TO_VALIDATE_EVALUATOR_CONFIG", "Invalid evaluator config",
                field_problems(exc), SYSTEM) from None
        if not getattr(validated, "name", "x") and cls.default_config_name:
            validated.name = cls.default_config_name  # type: ignore[attr-defined]
        return validated

    # -- the declared types ----------------------------------------------------------------

    @classmethod
    def _type_args(cls) -> tuple[Any, ...]:
        for klass in cls.__mro__:
            meta = getattr(klass, "__pydantic_generic_metadata__", None)
            if meta and meta.get("origin") is BaseEvaluator and meta.get("args"):
                return tuple(meta["args"])
        return (Any, Any, Any)

    @classmethod
    def evaluation_criteria_type(cls) -> Any:
        return cls._type_args()[0]

    @classmethod
    def config_type(cls) -> Any:
        return cls._type_args()[1]

    @classmethod
    def justification_type(cls) -> Any:
        return cls._type_args()[2]

    # -- what a subclass provides ------------------------------------------------------------

    @classmethod
    def get_evaluator_id(cls) -> str:
        """The evaluator's type id (``uipath-exact-match``, or a custom one)."""
        raise NotImplementedError(f"{cls.__name__} does not implement get_evaluator_id()")

    async def evaluate(self, workload_execution: WorkloadExecution,
                       evaluation_criteria: Any) -> BaseEvaluationResult:
        raise NotImplementedError(f"{type(self).__name__} does not implement evaluate()")

    # -- what every evaluator shares ---------------------------------------------------------

    @property
    def name(self) -> str:
        return str(getattr(self.evaluator_config, "name", "") or self.default_config_name
                   or self.id)

    @property
    def description(self) -> str:
        return str(getattr(self.evaluator_config, "description", "") or "")

    async def validate_and_evaluate_criteria(
            self, agent_execution: WorkloadExecution | None = None,
            evaluation_criteria: Any = None, *,
            workload_execution: WorkloadExecution | None = None) -> BaseEvaluationResult:
        """Evaluate with ``evaluation_criteria``, else the config's defaults."""
        execution = execution_of(agent_execution, workload_execution)
        criteria = evaluation_criteria
        if criteria is None:
            criteria = getattr(self.evaluator_config, "default_evaluation_criteria", None)
        if criteria is None:
            raise UiPathEvaluationError(
                "MISSING_EVALUATION_CRITERIA", "No evaluation criteria",
                f"evaluator {self.id!r} got no evaluation criteria and its config has no "
                "default_evaluation_criteria", USER)
        return await self._timed(execution, self.validate_evaluation_criteria(criteria))

    def validate_evaluation_criteria(self, criteria: Any) -> Any:
        """The criteria as the evaluator's criteria type (a dict when it declares none)."""
        kind = self.evaluation_criteria_type()
        if kind is Any or not isinstance(kind, type) or not issubclass(kind, BaseModel):
            return criteria
        try:
            if isinstance(criteria, kind):
                return criteria
            if isinstance(criteria, BaseModel):
                criteria = criteria.model_dump(exclude_unset=True)
            return kind.model_validate(criteria)
        except ValidationError as exc:
            raise UiPathEvaluationError(
                "CANNOT_VALIDATE_EVALUATION_CRITERIA", "Invalid evaluation criteria",
                f"evaluator {self.id!r}: {field_problems(exc)}", USER) from None

    def validate_justification(self, details: Any) -> Any:
        """``details`` as the evaluator's justification type (text when it declares str)."""
        kind = self.justification_type()
        if kind is str or kind is Any:
            return details if kind is Any else str(details)
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            try:
                return kind.model_validate(details)
            except ValidationError as exc:
                raise UiPathEvaluationError(
                    "CANNOT_CONVERT_JUSTIFICATION", "Invalid justification",
                    field_problems(exc), SYSTEM) from None
        return details

    async def _timed(self, execution: WorkloadExecution, criteria: Any) -> BaseEvaluationResult:
        started = time.perf_counter()
        result = await self.evaluate(execution, criteria)
        if getattr(result, "evaluation_time", None) is None:
            result.evaluation_time = time.perf_counter() - started
        return result

    def reduce_scores(self, results: Sequence[EvaluationResultDto]) -> float:
        """The evaluator's dataset score: the mean of its per-item scores."""
        scores = [r.score for r in results]
        return sum(scores) / len(scores) if scores else 0.0


def execution_of(agent_execution: Any, workload_execution: Any) -> WorkloadExecution:
    """The execution given under either keyword (``agent_execution`` in UiPath's docs,
    ``workload_execution`` in its current code), as a :class:`WorkloadExecution`."""
    execution = workload_execution if workload_execution is not None else agent_execution
    if execution is None:
        raise UiPathEvaluationError("INVALID_ACTUAL_OUTPUT", "No execution",
                                    "give agent_execution= (or workload_execution=)", USER)
    if isinstance(execution, WorkloadExecution):
        return execution
    if isinstance(execution, Mapping):
        try:
            return WorkloadExecution.model_validate(execution)
        except ValidationError as exc:
            raise UiPathEvaluationError("INVALID_ACTUAL_OUTPUT", "Invalid execution",
                                        field_problems(exc), USER) from None
    raise UiPathEvaluationError(
        "INVALID_ACTUAL_OUTPUT", "Invalid execution",
        f"expected an AgentExecution (WorkloadExecution), got {type(execution).__name__}", USER)


__all__ = ["BaseEvaluationCriteria", "BaseEvaluator", "BaseEvaluatorConfig",
           "BaseEvaluatorJustification", "execution_of"]
