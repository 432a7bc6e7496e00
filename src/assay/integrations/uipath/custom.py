"""UiPath custom coded evaluators (``file://my_evaluator.py:MyEvaluator``) as an assay evaluator.

A UiPath project registers a custom evaluator with two files: the evaluator file, whose
``evaluatorSchema`` names the Python file and class, and a type file
(``evaluatorTypeId: file://types/my-evaluator-types.json``) describing its schemas. The
Python file is looked up as UiPath does (as given, then in the evaluators directory, then in
its ``custom/`` subdirectory); its class must subclass
:class:`assay.integrations.uipath.evaluators.BaseEvaluator` (the same code as for UiPath, with the
import changed from ``uipath.eval`` to ``assay.integrations.uipath``) and implement
``get_evaluator_id()`` and ``evaluate()``. The type file, when named, must exist, be JSON and
carry the class's ``evaluatorTypeId``.

Everything is checked when the evaluator is built (so ``assay validate`` and the start of a run
report it, located): a missing file, a module that fails to import (with a hint when it still
imports ``uipath``), a missing class, a class that does not fit, a config the class rejects.

Scores: a boolean result is 1.0 or 0.0; a numeric one must be within [0, 1] (assay's one
scale; a custom evaluator that answers 0-100 is an error naming the value, never rescaled by
guess); an error result or a raised exception is an error score.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr, model_validator

from assay._util import jsondata
from assay.errors import EvaluationError
from assay.integrations.uipath.evaluators.base_evaluator import BaseEvaluator
from assay.integrations.uipath.models.models import (
    BooleanEvaluationResult,
    ErrorEvaluationResult,
    UiPathEvaluationError,
    WorkloadExecution,
)
from assay.judges.base import EvalContext, Evaluator
from assay.judges.registry import register
from assay.suites.uipath import locate_custom_file, parse_schema
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

__all__ = ["UiPathCustomEvaluator", "check_type_file", "fit", "load_class",
           "locate_custom_file", "parse_schema"]

_MODULES: dict[str, ModuleType] = {}


def load_class(file: Path, name: str) -> type[Any]:
    """Import ``file`` (once per content) and return its class ``name``."""
    if not file.is_file():
        raise ValueError(f"custom evaluator file {file} not found (UiPath keeps them in "
                         "evaluations/evaluators/custom/)")
    source = file.read_bytes()
    key = hashlib.sha256(str(file.resolve()).encode() + b"\0" + source).hexdigest()[:16]
    module = _MODULES.get(key)
    if module is None:
        module_name = f"assay_uipath_custom_{file.stem}_{key}"
        spec = importlib.util.spec_from_file_location(module_name, file)
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot load {file} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except ModuleNotFoundError as exc:
            sys.modules.pop(module_name, None)
            hint = (": change 'uipath.eval' to 'assay.integrations.uipath' in its imports"
                    if (exc.name or "").split(".")[0] == "uipath" else "")
            raise ValueError(f"{file} failed to import: {exc}{hint}") from None
        except Exception as exc:
            sys.modules.pop(module_name, None)
            raise ValueError(f"{file} failed to import: {type(exc).__name__}: {exc}") from None
        _MODULES[key] = module
    found = getattr(module, name, None)
    if found is None:
        classes = sorted(k for k, v in vars(module).items()
                         if isinstance(v, type) and not k.startswith("_")
                         and v.__module__ == module.__name__)
        raise ValueError(f"class {name!r} not found in {file} (classes there: "
                         f"{', '.join(classes) or 'none'})")
    return fit(found, name, file)


def fit(cls: Any, name: str, file: Path) -> type[Any]:
    """``cls`` if it is a usable UiPath evaluator class; else why not."""
    base = "assay.integrations.uipath.evaluators.BaseEvaluator"
    if not isinstance(cls, type):
        raise ValueError(f"{name} in {file} is a {type(cls).__name__}, not a class; expected a "
                         f"subclass of {base}")
    if not issubclass(cls, BaseEvaluator):
        raise ValueError(f"class {name} in {file} is not a subclass of {base} (UiPath's "
                         "uipath.eval.evaluators.BaseEvaluator, with the import changed)")
    if cls.evaluate is BaseEvaluator.evaluate:
        raise ValueError(f"class {name} in {file} does not implement evaluate()")
    try:
        ident = cls.get_evaluator_id()
    except NotImplementedError:
        raise ValueError(f"class {name} in {file} does not implement "
                         "get_evaluator_id()") from None
    if not isinstance(ident, str) or not ident:
        raise ValueError(f"{name}.get_evaluator_id() returned {ident!r}, expected a non-empty "
                         "string")
    return cls


def check_type_file(file: Path, cls: type[Any]) -> None:
    """The type file exists, is a JSON object and names the class's evaluator id."""
    if not file.is_file():
        raise ValueError(f"type file {file} not found (UiPath's 'uipath register evaluator' "
                         "writes it to evaluations/evaluators/custom/types/)")
    try:
        data = jsondata.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"type file {file}:{exc.lineno}:{exc.colno}: invalid JSON: "
                         f"{exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"type file {file} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"type file {file} holds a {type(data).__name__}, expected an object "
                         "with evaluatorTypeId")
    declared = data.get("evaluatorTypeId")
    ident = cls.get_evaluator_id()
    if declared != ident:
        raise ValueError(f"type file {file} declares evaluatorTypeId {declared!r} but "
                         f"{cls.__name__}.get_evaluator_id() is {ident!r}")


@register
class UiPathCustomEvaluator(Evaluator):
    """A UiPath custom coded evaluator, run in-process on each case."""

    type = "uipath_custom"
    file: str = Field(description="the evaluator's Python file")
    class_name: str = Field(description="the evaluator class in that file")
    evaluator: dict[str, Any] = Field(
        default_factory=dict, description="the evaluator file's JSON (id, evaluatorConfig)")
    criteria: dict[str, Any] | None = Field(
        default=None, description="this item's evaluation criteria; None: the defaults")
    type_file: str | None = None

    _instance: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _load(self) -> UiPathCustomEvaluator:
        cls = load_class(Path(self.file), self.class_name)
        if self.type_file is not None:
            check_type_file(Path(self.type_file), cls)
        data = {k: v for k, v in self.evaluator.items()
                if k in ("id", "version", "name", "description", "evaluatorConfig",
                         "evaluatorTypeId", "evaluatorSchema")}
        data.setdefault("id", self.name or cls.get_evaluator_id())
        data.setdefault("evaluatorConfig", {})
        try:
            self._instance = cls.model_validate(data)
        except UiPathEvaluationError as exc:
            raise ValueError(f"{self.class_name}: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{self.class_name} rejects its evaluator file: {exc}") from None
        return self

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        spans = [span.model_dump(mode="json") for span in execution.trace]
        behavior = case.metadata.get("expected_agent_behavior")
        run = WorkloadExecution(
            agent_input=case.input if isinstance(case.input, dict) else {"input": case.input},
            workload_output=execution.output, workload_trace=spans,
            expected_agent_behavior=behavior if isinstance(behavior, str) else None,
            simulation_instructions=str(case.metadata.get("simulation_instructions") or ""))
        try:
            result = await self._instance.validate_and_evaluate_criteria(run, self.criteria)
        except UiPathEvaluationError as exc:
            code = exc.code.split(".", 1)[-1].lower()
            raise EvaluationError(code, f"{self.class_name}: {exc}") from None
        return self.as_score(result)

    def as_score(self, result: Any) -> Score:
        details: Any = getattr(result, "details", None)
        if isinstance(details, BaseModel):
            details = details.model_dump(mode="json")
        rationale = details if isinstance(details, str) else None
        kept = details if isinstance(details, dict) else None
        if isinstance(result, ErrorEvaluationResult):
            return Score.failed(self.name, "evaluator_error",
                                f"{self.class_name} returned an error result: {details}")
        raw = getattr(result, "score", None)
        if isinstance(result, BooleanEvaluationResult) or isinstance(raw, bool):
            value = 1.0 if raw else 0.0
            return Score(name=self.name, value=value, raw=bool(raw), scale="bool",
                         passed=self.verdict(value), rationale=rationale, details=kept)
        if isinstance(raw, int | float) and 0.0 <= float(raw) <= 1.0:
            return Score(name=self.name, value=float(raw), raw=raw, scale="0-1",
                         passed=self.verdict(float(raw)), rationale=rationale, details=kept)
        return Score.failed(self.name, "invalid_score",
                            f"{self.class_name} returned score {raw!r}; assay keeps scores in "
                            "[0, 1] (return a NumericEvaluationResult from 0.0 to 1.0)")
