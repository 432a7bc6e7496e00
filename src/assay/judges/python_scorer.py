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
(assay's own objects). It may be sync or async, and returns a bool, a number in [0, 1], a
verdict string (yes/no, pass/fail, true/false), a :class:`~assay.Score`, or a list of scores
(several named judgements from one scorer, kept as the score's ``parts``). An exception is that
case's error (``scorer_error``), never a 0.

From EVAL.yaml the same function is ``{type: python, function: module:name}``, imported from
the suite's directory.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, overload

from pydantic import PrivateAttr, model_validator

from assay.errors import ConfigError
from assay.judges.base import EvalContext, Evaluator
from assay.judges.registry import register
from assay.model import Case, Execution, Score

PARAMETERS = ("inputs", "outputs", "expectations", "trace", "case", "execution")
"""What a scorer function may ask for, by parameter name."""

YES = frozenset({"yes", "y", "pass", "passed", "true", "correct", "1"})
NO = frozenset({"no", "n", "fail", "failed", "false", "incorrect", "0"})


def expectations_of(case: Case) -> dict[str, Any]:
    """What a good result looks like, as one dict (the fields the case has)."""
    found: dict[str, Any] = {}
    if case.expected_output is not None:
        found["expected_output"] = case.expected_output
    if case.expected_outcomes:
        found["expected_outcomes"] = list(case.expected_outcomes)
    if case.guidelines:
        found["guidelines"] = list(case.guidelines)
    if case.reference_context:
        found["reference_context"] = list(case.reference_context)
    extra = case.metadata.get("expectations")
    if isinstance(extra, dict):
        found.update(extra)
    return found


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
    _fn: Callable[..., Any] | None = PrivateAttr(default=None)
    _wants: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _load(self) -> PythonScorer:
        if self.function is not None and self._fn is None:
            from pathlib import Path

            from assay.user_code import load_function

            places = [Path(self.cwd)] if self.cwd else []
            self.bind(load_function(self.function, *places, Path.cwd()))
        return self

    def bind(self, fn: Callable[..., Any]) -> PythonScorer:
        """Attach the function to call; its parameter names choose its arguments."""
        self._wants = _wanted(fn, f"scorer {self.name or getattr(fn, '__name__', '?')!r}")
        self._fn = fn
        return self

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        if self._fn is None:
            raise ConfigError(f"scorer {self.name!r} has no function: give function: "
                              "module:name", code="invalid_scorer")
        available = {"inputs": case.input, "outputs": execution.output,
                     "expectations": expectations_of(case), "trace": execution.trace,
                     "case": case, "execution": execution}
        kwargs = {name: available[name] for name in self._wants}
        try:
            if inspect.iscoroutinefunction(self._fn):
                value = await self._fn(**kwargs)
            elif self.run_in_thread:
                value = await asyncio.to_thread(self._fn, **kwargs)
            else:
                value = self._fn(**kwargs)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return Score.failed(self.name, "scorer_error", f"{type(exc).__name__}: {exc}")
        return self.to_score(value)

    def to_score(self, value: Any) -> Score:
        """What the function returned as a Score, or a ``scorer_error`` saying why not."""
        if isinstance(value, Score):
            return value.model_copy(update={"name": self.name}) if value.name != self.name \
                else value
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
            return Score(name=self.name, value=mean, passed=all(
                p.passed is not False for p in parts), parts=parts)
        if isinstance(value, bool):
            return Score(name=self.name, value=1.0 if value else 0.0, raw=value,
                         scale="bool", passed=value)
        if isinstance(value, int | float):
            number = float(value)
            if not 0.0 <= number <= 1.0:
                return Score.failed(self.name, "scorer_error",
                                    f"returned {value!r}; a number must be within [0, 1] (or "
                                    "return a bool, yes/no, or a Score)")
            return Score(name=self.name, value=number, raw=value, scale="0-1",
                         passed=self.verdict(number))
        if isinstance(value, str):
            word = value.strip().lower()
            if word in YES or word in NO:
                ok = word in YES
                return Score(name=self.name, value=1.0 if ok else 0.0, raw=value, label=word,
                             scale="yes/no", passed=ok)
            return Score.failed(self.name, "scorer_error",
                                f"returned the text {value[:80]!r}, which is not a verdict "
                                "(yes/no, pass/fail, true/false)")
        if value is None:
            return Score.not_applicable(self.name, "the scorer returned None")
        return Score.failed(self.name, "scorer_error",
                            f"returned a {type(value).__name__}; expected a bool, a number in "
                            "[0, 1], yes/no, a Score or a list of Scores")


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
           run_in_thread: bool = False) -> Callable[[Callable[..., Any]], ScorerFunction]: ...


def scorer(fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
           threshold: float = 0.8, weight: float = 1.0,
           run_in_thread: bool = False) -> Any:
    """Make a function a scorer (see the module docstring); usable bare or with options."""

    def wrap(function: Callable[..., Any]) -> ScorerFunction:
        evaluator = PythonScorer(name=name or function.__name__, threshold=threshold,
                                 weight=weight, run_in_thread=run_in_thread)
        evaluator.bind(function)
        # Recorded with the run, so a stored run says which function judged it (and an
        # importable one can be rebuilt by `assay rescore`).
        evaluator.function = f"{function.__module__}:{function.__qualname__}"
        return ScorerFunction(function, evaluator)

    return wrap(fn) if fn is not None else wrap
