"""Python scorers: a decorated function is an evaluator, in-process, no subprocess.

::

    @assay.scorer
    def mentions_paris(outputs) -> bool:
        return "Paris" in str(outputs)

    @assay.scorer(name="close_enough", threshold=0.5)
    async def close(outputs, expectations) -> float:
        ...

The function's parameter names choose what it receives, as MLflow's ``@scorer`` does:
``inputs`` (the case input), ``outputs`` (the agent's output), ``expectations`` (what a good
result looks like, a dict), ``trace`` (the execution's spans), ``case`` and ``execution``
(assay's own objects), each a copy of its own. It may be sync or async, and returns a bool, a
number in [0, 1], a verdict string (yes/no, pass/fail, true/false), a :class:`~assay.Score`, a
:class:`~assay.Feedback` (MLflow's shape: value, rationale, name, error), or a list of scores
or feedbacks (several named judgements from one scorer, kept as the score's ``parts``). NumPy
scalars count as the Python values they hold.

Anything else is that case's error (``scorer_error``) naming what was returned and what is
accepted, never a skip and never a 0, unless the scorer says what it returns:

- ``kind="measurement"``: the scorer measures (a length, a 1-5 rating, a category), as MLflow's
  numeric metrics do. Its values are kept as they are (``raw``), aggregated in the run's metrics
  (``<name>/measured/mean``, ``/min``, ``/max``, ``/count``; MLflow's ``aggregations`` in a
  naming mode), and count in no verdict (see :mod:`assay.judges.feedback`); a run that only
  measured does not pass, since nothing in it was scored.
- ``pass_if``: every value is checked by the condition (``pass_if=">= 3"``, ``"== good"``, or a
  function): the score is 1.0 when it holds, else 0.0, the value kept as ``raw``.
- ``none_is_not_applicable=True``: a ``None`` return means the scorer does not apply to the
  case (not applicable, not an error). Returning ``Score.not_applicable(...)`` says so too.

An exception (``sys.exit()`` included) is that case's error (``scorer_error``), never a 0.

From EVAL.yaml the same function is ``{type: python, function: module:name}``, imported from
the suite's directory.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal, overload

from pydantic import Field, PrivateAttr, field_validator, model_validator

from assay._util.blocking import run_blocking
from assay._util.jsondata import plain_scalar, private_copy
from assay._util.user_code import error_text, user_code
from assay._util.user_paths import user_path
from assay.errors import ConfigError
from assay.judges.base import EvalContext, Evaluator
from assay.judges.feedback import (
    Feedback,
    PassIf,
    as_feedback,
    check_pass_if,
    measured,
    passes,
)
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import MEASUREMENT, Score

PARAMETERS = ("inputs", "outputs", "expectations", "trace", "case", "execution",
              "request", "response", "expected_response", "expected_facts",
              "expected_retrieved_context", "retrieved_context", "guidelines",
              "custom_expected", "custom_inputs", "custom_outputs", "tool_calls")
"""What a scorer function may ask for, by parameter name: MLflow 3's names, assay's own, and
the row fields Databricks' legacy ``@metric`` functions receive by name."""

YES = frozenset({"yes", "y", "pass", "passed", "true", "correct", "1"})
NO = frozenset({"no", "n", "fail", "failed", "false", "incorrect", "0"})

ScorerKind = Literal["score", "measurement"]
"""What a scorer returns: scores (0-1 values, bools, yes/no) or measurements (kept as they
are, counted in no verdict)."""

PASS_IF_SCALE = "pass_if"
"""The scale of a value checked by a ``pass_if``: 1.0 when the condition held, else 0.0."""

ACCEPTED = ("a bool, a number in [0, 1], yes/no text (pass/fail, true/false), a Feedback or "
            "a Score")
"""What a scorer that declares nothing may return, for error messages."""


def expectations_of(case: Case) -> dict[str, Any]:
    """What a good result looks like, as one dict (the fields the case has).

    The expected output appears once, under the name the data gave it (MLflow's
    ``expected_response`` for Databricks and MLflow rows, assay's ``expected_output`` else):
    MLflow hands scorers the expectations as given and adds no key of its own.
    """
    found: dict[str, Any] = {}
    if case.expected_output is not None:
        found[case.expected_output_key] = case.expected_output
    if case.expected_outcomes:
        found["expected_outcomes"] = list(case.expected_outcomes)
    if case.guidelines:
        found["guidelines"] = list(case.guidelines)
    if case.reference_context:
        found["reference_context"] = list(case.reference_context)
    if case.expected_facts:
        found["expected_facts"] = list(case.expected_facts)
    if case.named_guidelines:
        found["guidelines"] = {**({"guideline_adherence": list(case.guidelines)}
                                  if case.guidelines else {}),
                               **{k: list(v) for k, v in case.named_guidelines.items()}}
    if case.expected_retrieved_context:
        found["expected_retrieved_context"] = [
            d.model_dump(exclude_none=True) for d in case.expected_retrieved_context]
    if case.custom_expected is not None:
        found["custom_expected"] = case.custom_expected
    found.update(case.expectations)
    extra = case.metadata.get("expectations")
    if isinstance(extra, dict):
        found.update(extra)
    return found


def _argument(name: str, case: Case, execution: Execution) -> Any:
    """The value of one scorer parameter (see :data:`PARAMETERS`)."""
    if name == "inputs":
        return case.input
    if name == "outputs":
        return execution.output
    if name == "expectations":
        return expectations_of(case)
    if name == "trace":
        return execution.trace
    if name == "case":
        return case
    if name == "execution":
        return execution
    from assay.judges.agent.inputs import request_text, response_text
    from assay.traces.retrieval import retrieved_context
    from assay.traces.tools import tool_calls

    if name == "request":
        return request_text(case)
    if name == "response":
        return response_text(execution)
    if name == "expected_response":
        return case.expected_output
    if name == "expected_facts":
        return list(case.expected_facts)
    if name == "expected_retrieved_context":
        return [d.model_dump(exclude_none=True) for d in case.expected_retrieved_context]
    if name == "retrieved_context":
        return [{"content": c.content, "doc_uri": c.doc_uri}
                for c in retrieved_context(execution).chunks]
    if name == "guidelines":
        return dict(case.named_guidelines) if case.named_guidelines else list(case.guidelines)
    if name == "tool_calls":
        return [c.model_dump(exclude_none=True) for c in tool_calls(execution)]
    return {"custom_expected": case.custom_expected, "custom_inputs": case.custom_inputs,
            "custom_outputs": execution.custom_outputs}[name]


def _wanted(fn: Callable[..., Any], where: str) -> tuple[str, ...]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: cannot read the function's parameters") from None
    names = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.name not in PARAMETERS:
            if param.default is param.empty:
                raise ConfigError(
                    f"{where}: parameter {param.name!r} is not something a scorer can be "
                    f"given; use any of {', '.join(PARAMETERS)}", code="invalid_scorer")
            continue
        names.append(param.name)
    return tuple(names)


@register
class PythonScorer(Evaluator):
    """A Python function as an evaluator (see the module docstring)."""

    type = "python"
    function: str | None = None
    """``module:name`` or ``file.py:name``: the function to import (from suite files)."""
    cwd: str | None = None
    """Where ``function``'s module is looked for first (a suite's directory)."""
    run_in_thread: bool = False
    """Run a sync function in a worker thread (for slow scorers); async ones never need it."""
    description: str | None = None
    aggregations: list[str] = Field(
        default_factory=lambda: ["mean"],
        description="MLflow-style run aggregations of the values: min, max, mean, median, "
        "variance, p90")
    pass_if: str | None = Field(
        default=None, description="a condition that makes a value pass, such as '>= 3' "
        "(a function can be given to the decorator)")
    kind: ScorerKind = Field(
        default="score", description="score: values on the 0-1 scale, anything else an "
        "error; measurement: values kept as they are and aggregated, counted in no verdict")
    none_is_not_applicable: bool = Field(
        default=False, description="a None return means the scorer does not apply to the "
        "case (else it is an error)")
    _fn: Callable[..., Any] | None = PrivateAttr(default=None)
    _wants: tuple[str, ...] = PrivateAttr(default=())
    _pass_if: PassIf | None = PrivateAttr(default=None)

    PARTS_ARE_ASSESSMENTS: ClassVar[bool] = True
    """Several feedbacks from one scorer are separate judgements, each with its own name."""

    @field_validator("aggregations")
    @classmethod
    def _known_aggregations(cls, value: list[str]) -> list[str]:
        from assay.judges.agent.builtin import check_aggregations

        return check_aggregations(value)

    @field_validator("pass_if")
    @classmethod
    def _condition(cls, value: str | None) -> str | None:
        check_pass_if(value)
        return value

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        if self.pass_if is not None:
            self._pass_if = self.pass_if

    @model_validator(mode="after")
    def _measurement_is_no_check(self) -> PythonScorer:
        if self.kind == "measurement" and (self.pass_if is not None or self.required):
            raise ValueError("a measurement counts in no verdict, so it takes no pass_if and "
                             "cannot be required; give pass_if to make its values a check "
                             "instead")
        return self

    @model_validator(mode="after")
    def _load(self) -> PythonScorer:
        if self.function is not None and self._fn is None:
            from assay._util.user_code import load_function

            self.bind(load_function(self.function, *self._places()))
        return self

    def needs_function(self) -> bool:
        return self._fn is None

    def input_files(self) -> dict[Path, str]:
        if self.function is None:
            return {}
        from assay._util.user_code import module_file

        found = module_file(self.function, *self._places())
        return {found: f"the Python module of scorer {self.name!r}"} if found else {}

    def _places(self) -> list[Path]:
        """Where ``function``'s module is looked for: ``cwd``, then the working directory."""
        return [*([user_path(self.cwd)] if self.cwd else []), Path.cwd()]

    def bind(self, fn: Callable[..., Any]) -> PythonScorer:
        """Attach the function to call; its parameter names choose its arguments."""
        self._wants = _wanted(fn, f"scorer {self.name or getattr(fn, '__name__', '?')!r}")
        self._fn = fn
        return self

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        if self._fn is None:
            raise ConfigError(f"scorer {self.name!r} has no function: give function: "
                              "module:name", code="invalid_scorer")
        # Each call its own copy: a scorer that changes the inputs or outputs it was given
        # must not change what the other evaluators and the stored record see.
        kwargs = {name: private_copy(_argument(name, case, execution)) for name in self._wants}
        try:
            with user_code():
                if inspect.iscoroutinefunction(self._fn):
                    value = await self._fn(**kwargs)
                elif self.run_in_thread:
                    value = await run_blocking(self._fn, **kwargs)
                else:
                    value = self._fn(**kwargs)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            return Score.failed(self.name, "scorer_error", error_text(exc))
        return self.checked(self.to_score(value))

    def checked(self, score: Score) -> Score:
        """A Score the function returned, with its ``pass_if`` outcome: ``passed``, and
        ``details["pass_if"]`` (parts each on their own). Plain values were checked when
        they became scores (:meth:`_from_value`)."""
        if self._pass_if is None:
            return score
        if score.parts:  # the parts are checked; the parent passes when they all do
            score.parts = [self.checked(p) for p in score.parts]
            if score.value is not None:
                score.passed = all(p.passed is not False for p in score.parts)
            return score
        if score.value is None or score.scale == PASS_IF_SCALE:
            return score
        native = score.raw if score.raw is not None else score.value
        ok = self._meets_pass_if(score.name, native)
        if isinstance(ok, Score):
            return ok
        score.details = {**(score.details or {}), "pass_if": ok}
        score.passed = ok
        return score

    def _meets_pass_if(self, name: str, native: Any) -> bool | Score:
        """Whether ``native`` meets ``pass_if``, or the error score of a condition that
        failed to run (a function of the user's may raise)."""
        assert self._pass_if is not None
        try:
            with user_code():
                return passes(self._pass_if, native)
        except Exception as exc:
            return Score.failed(name, "scorer_error",
                                f"pass_if failed on {native!r}: {error_text(exc)}")

    def to_score(self, value: Any) -> Score:
        """What the function returned as a Score, or a ``scorer_error`` saying why not."""
        if isinstance(value, Score):
            return value.model_copy(update={"name": self.name}) if value.name != self.name \
                else value
        feedback = as_feedback(value)
        if feedback is not None:
            return self._from_feedback(feedback, self.name)
        if isinstance(value, list) and value and all(
                isinstance(v, Score) or as_feedback(v) is not None for v in value):
            return self._parts(value)
        return self._from_value(value, self.name)

    def _from_feedback(self, feedback: Feedback, name: str) -> Score:
        if feedback.error is not None:
            error = feedback.error
            message = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) \
                else str(error)
            return Score.failed(name, feedback.error_code or "scorer_error", message,
                                rationale=feedback.rationale)
        score = self._from_value(feedback.value, name)
        if feedback.rationale is not None and score.rationale is None:
            score.rationale = str(feedback.rationale)
        if feedback.metadata:
            score.details = {**(score.details or {}), "metadata": dict(feedback.metadata)}
        return score

    def _parts(self, items: list[Any]) -> Score:
        """Several judgements: each part named by its feedback (the scorer's name else)."""
        parts: list[Score] = []
        for item in items:
            if isinstance(item, Score):
                parts.append(item)
                continue
            feedback = as_feedback(item)
            assert feedback is not None
            parts.append(self._from_feedback(feedback, feedback.name or self.name))
        names = [p.name for p in parts]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            return Score.failed(self.name, "scorer_error",
                                f"returned several judgements named {', '.join(doubled)}; "
                                "give each Feedback its own name")
        details = {"parts_are_assessments": True}
        valued = [p.value for p in parts if p.value is not None]
        if not valued:
            errors = [p for p in parts if p.error is not None]
            if errors:
                return Score.failed(self.name, errors[0].error.code,  # type: ignore[union-attr]
                                    errors[0].error.message,  # type: ignore[union-attr]
                                    parts=parts, details=details)
            if all(p.measurement for p in parts):  # the parent measures nothing itself
                return Score.not_applicable(self.name, "every part is a measurement",
                                            parts=parts, details={**details, MEASUREMENT: True})
            return Score.not_applicable(self.name, "no part has a 0-1 value", parts=parts,
                                        details=details)
        mean = sum(valued) / len(valued)
        return Score(name=self.name, value=mean, passed=all(
            p.passed is not False for p in parts), parts=parts, details=details)

    def _from_value(self, value: Any, name: str) -> Score:
        if isinstance(value, list) and value and all(isinstance(v, Score) for v in value):
            parts: list[Score] = value
            valued = [p.value for p in parts if p.value is not None]
            if not valued:
                errors = [p for p in parts if p.error is not None]
                if errors:
                    return Score.failed(self.name, errors[0].error.code,  # type: ignore[union-attr]
                                        errors[0].error.message, parts=parts)  # type: ignore[union-attr]
                return Score.not_applicable(self.name, "no part applied", parts=parts)
            mean = sum(valued) / len(valued)
            return Score(name=name, value=mean, passed=all(
                p.passed is not False for p in parts), parts=parts)
        value = plain_scalar(value)
        if value is None:
            if self.none_is_not_applicable:
                return Score.not_applicable(name, "the scorer returned None: it does not apply "
                                            "to this case")
            return Score.failed(name, "scorer_error", f"returned None; expected {ACCEPTED} "
                                "(declare none_is_not_applicable=True if None means the "
                                "scorer does not apply to the case)")
        if isinstance(value, float) and not math.isfinite(value):
            return Score.failed(name, "scorer_error", f"returned {value!r}, not a number")
        if not isinstance(value, bool | int | float | str):
            accepted = "a number, a bool or a label" if self.kind == "measurement" else \
                f"{ACCEPTED}, or a list of them"
            return Score.failed(name, "scorer_error", f"returned a {type(value).__name__}; "
                                f"expected {accepted}")
        if self.kind == "measurement":
            return measured(name, value, "category" if isinstance(value, str) else
                            "bool" if isinstance(value, bool) else "number")
        if self._pass_if is not None:
            return self._check(name, value)
        if isinstance(value, bool):
            return Score(name=name, value=1.0 if value else 0.0, raw=value,
                         scale="bool", passed=value)
        if isinstance(value, int | float):
            if not 0 <= value <= 1:
                return Score.failed(
                    name, "scorer_error", f"returned {value!r}, outside [0, 1], the range of a "
                    "score; declare the scorer a measurement (kind=\"measurement\") to keep "
                    "such values, or give a pass_if (such as \">= 3\") to check them")
            number = float(value)
            return Score(name=name, value=number, raw=value, scale="0-1",
                         passed=self.verdict(number))
        word = value.strip().lower()
        if word in YES or word in NO:
            ok = word in YES
            return Score(name=name, value=1.0 if ok else 0.0, raw=value, label=word,
                         scale="yes/no", passed=ok)
        return Score.failed(
            name, "scorer_error", f"returned the label {value[:80]!r}, which is not a score; "
            f"expected {ACCEPTED}; declare the scorer a measurement (kind=\"measurement\") "
            "to keep labels, or give a pass_if (such as \"== good\") to check them")

    def _check(self, name: str, value: bool | int | float | str) -> Score:
        """A value checked by ``pass_if``: 1.0 when it holds, else 0.0, the value as raw."""
        ok = self._meets_pass_if(name, value)
        if isinstance(ok, Score):
            return ok
        return Score(name=name, value=1.0 if ok else 0.0, raw=value, scale=PASS_IF_SCALE,
                     label=value if isinstance(value, str) else None, passed=ok,
                     details={"pass_if": ok})


class ScorerFunction:
    """A decorated scorer function: still callable as itself, and an evaluator via
    ``.evaluator`` (what :func:`assay.evaluate` uses when given the function)."""

    def __init__(self, fn: Callable[..., Any], evaluator: PythonScorer) -> None:
        self.fn = fn
        self.evaluator = evaluator
        self.__name__ = getattr(fn, "__name__", evaluator.name)
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def scorer(fn: Callable[..., Any], /) -> ScorerFunction: ...


@overload
def scorer(*, name: str | None = None, threshold: float = 0.8, weight: float = 1.0,
           run_in_thread: bool = False, description: str | None = None,
           aggregations: list[str] | None = None, pass_if: PassIf | None = None,
           kind: ScorerKind = "score", none_is_not_applicable: bool = False
           ) -> Callable[[Callable[..., Any]], ScorerFunction]: ...


def scorer(fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
           threshold: float = 0.8, weight: float = 1.0,
           run_in_thread: bool = False, description: str | None = None,
           aggregations: list[str] | None = None, pass_if: PassIf | None = None,
           kind: ScorerKind = "score", none_is_not_applicable: bool = False) -> Any:
    """Make a function a scorer (see the module docstring); usable bare or with options.

    ``aggregations`` and ``pass_if`` are MLflow's: the run aggregations of the values
    (default mean) and the condition that makes a value pass (a function, or ``">= 3"``).
    ``kind="measurement"`` declares that the function measures (a length, a rating, a
    category): its values are kept and aggregated, and count in no verdict.
    ``none_is_not_applicable`` makes a ``None`` return "does not apply" instead of an error.
    """
    try:
        check_pass_if(pass_if)
        if kind == "measurement" and pass_if is not None:
            raise ValueError("a measurement counts in no verdict, so it takes no pass_if; "
                             "give pass_if alone to make its values a check")
    except ValueError as exc:
        raise ConfigError(f"scorer {name or getattr(fn, '__name__', '?')!r}: {exc}",
                          code="invalid_scorer") from None

    def wrap(function: Callable[..., Any]) -> ScorerFunction:
        try:
            evaluator = PythonScorer(
                name=name or function.__name__, threshold=threshold, weight=weight,
                run_in_thread=run_in_thread, description=description,
                aggregations=aggregations if aggregations is not None else ["mean"],
                pass_if=pass_if if isinstance(pass_if, str) else None, kind=kind,
                none_is_not_applicable=none_is_not_applicable)
        except ValueError as exc:
            raise ConfigError(f"scorer {name or function.__name__!r}: {exc}",
                              code="invalid_scorer") from None
        if pass_if is not None:
            evaluator._pass_if = pass_if
        evaluator.bind(function)
        # Recorded with the run, so a stored run says which function judged it (and an
        # importable one can be rebuilt by `assay rescore`).
        evaluator.function = f"{function.__module__}:{function.__qualname__}"
        return ScorerFunction(function, evaluator)

    return wrap(fn) if fn is not None else wrap
