"""A Python function as the agent: ``provider: python`` with ``function: module:function``.

The function gets the case input (a string, a dict, or a list of message dicts), or the whole
:class:`Case` when its first parameter is annotated ``Case``. A dict input whose keys are the
function's parameter names is passed as keyword arguments, as MLflow passes ``inputs`` to a
``predict_fn`` (``predict_fn(**inputs)``); any other dict is passed whole. A parameter
annotated with a dataclass, a pydantic model or a TypedDict gets that type built from the
input, as ``uipath eval`` builds ``main(input: EchoIn)``'s (:mod:`assay.targets.typed_io`).
It may be sync or async, and may return text, a dict, a dataclass or pydantic model (its
fields; checked against a declared structured return type), or an :class:`Execution` (to
report messages, traces or usage too). A ``None`` result is the case's error (a forgotten
``return``), unless the function declares it may return None. Sync
functions run in a daemon thread (:mod:`assay._util.blocking`) so a slow agent never blocks the event
loop, and one that hangs past its timeout is abandoned instead of keeping the process alive. The module is
imported with the suite's directory on the path, and ``agent.py:run`` names a file directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from assay._util.blocking import run_blocking
from assay._util.jsondata import private_copy
from assay._util.user_code import load_function, raised, user_code
from assay.targets.base import Target
from assay.targets.config import TIMEOUT_FIELD, FieldSpec, TargetConfig, function_places
from assay.targets.inputs import elapsed_ms, plain_input
from assay.targets.typed_io import (
    TypeMismatch,
    build_value,
    may_return_none,
    output_data,
    parameter_types,
    return_type,
)
from assay.types.case import Case
from assay.types.execution import Execution

__all__ = ["CallableTarget", "load_function", "raised"]


_NO_DEADLINE = contextlib.nullcontext()


class CallableTarget(Target):
    """Calls a Python function for each case."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "function": FieldSpec((str,), "'module:function' or 'path/to/file.py:function'"),
        "timeout_s": TIMEOUT_FIELD,
    }
    REQUIRED: ClassVar[tuple[tuple[str, ...], ...]] = (("function",),)

    def __init__(self, fn: Callable[..., Any], *, name: str = "python",
                 timeout_s: float | None = None) -> None:
        self.fn = fn
        self.name = name
        self.timeout_s = timeout_s
        self.wants_case = _first_parameter_is_case(fn)
        self.is_async = inspect.iscoroutinefunction(fn) or (
            not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__))
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.signature = None
        self.typed = {} if self.wants_case else parameter_types(fn)
        """Parameters whose declared type is built from the input (dataclass, model...)."""
        self.returns = return_type(fn)
        self.answers_none = may_return_none(fn)
        """Whether a ``None`` result is an answer (the function declares it may return
        None), not a forgotten ``return``."""
        self.label = getattr(fn, "__qualname__", None) or type(fn).__name__

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> CallableTarget:
        fn = load_function(str(config.get("function")), *function_places(config, base_dir))
        timeout = config.get("timeout_s")
        return cls(fn, name=config.name, timeout_s=float(timeout) if timeout else None)

    async def run(self, case: Case) -> Execution:
        # Each call gets its own copy of a structured input: an agent that changes the dict
        # it was given must not change the case for the next repeat (messages are dumped
        # afresh by plain_input, and text needs no copy).
        argument: Any = private_copy(case) if self.wants_case else \
            private_copy(case.input) if isinstance(case.input, dict) else plain_input(case.input)
        started = time.perf_counter()
        # A deadline in this task (none without timeout_s: the run's bounds the call): a
        # TimeoutError the agent raises itself is its own error, not the deadline's.
        deadline = asyncio.timeout(self.timeout_s) if self.timeout_s is not None else None
        try:
            async with deadline or _NO_DEADLINE:
                result, took = await self._call(argument)
        except TypeMismatch as exc:  # the input does not fit the declared type
            return Execution(input=case.input, latency_ms=elapsed_ms(started), error=str(exc))
        except Exception as exc:  # sys.exit() in the agent too: _call runs it as user code
            if isinstance(exc, TimeoutError) and deadline is not None and deadline.expired():
                return Execution(input=case.input, latency_ms=elapsed_ms(started),
                                 error=f"agent function timed out after {self.timeout_s:g}s")
            return Execution(input=case.input, latency_ms=elapsed_ms(started),
                             error=f"agent function {raised(exc)}")
        latency = took if took is not None else elapsed_ms(started)
        if result is None and not self.answers_none:
            # Judged, a missing answer would be a low score the agent never earned.
            return Execution(input=case.input, latency_ms=latency,
                             error=f"agent function {self.label} returned None: did it forget "
                             "to return its answer? (declare '-> None' or '-> str | None' "
                             "when answering nothing is meant)")
        if self.returns is not None and not isinstance(result, Execution):
            try:
                result = output_data(self.returns, result, f"the output of {self.label}")
            except TypeMismatch as exc:
                return Execution(input=case.input, latency_ms=latency, error=str(exc),
                                 error_code="invalid_output")
        return _execution(case, result, latency)

    def _keywords(self, argument: Any) -> dict[str, Any] | None:
        """The input as keyword arguments, when it is a dict of the function's parameters
        (each built as its declared type when it has a structured one)."""
        if self.wants_case or self.signature is None or not isinstance(argument, dict) or \
                not argument or not all(isinstance(k, str) for k in argument):
            return None
        try:
            self.signature.bind(**argument)
        except TypeError:
            return None
        return {k: self._typed(k, v) for k, v in argument.items()}

    def _typed(self, name: str, value: Any) -> Any:
        """``value`` as parameter ``name``'s declared structured type, when it has one."""
        annotation = self.typed.get(name)
        if annotation is None:
            return value
        return build_value(annotation, value, f"the case input for parameter {name!r} of "
                           f"{self.label}")

    def _positional(self, argument: Any) -> Any:
        """The input as the first parameter, built as its declared type when it has one."""
        if not self.typed or self.signature is None:
            return argument
        first = next(iter(self.signature.parameters), None)
        return argument if first is None else self._typed(first, argument)

    async def _call(self, argument: Any) -> tuple[Any, float | None]:
        """The function's result, and for a sync function the time it took on its own
        thread: the agent's latency, without the wait for a thread or the event loop."""
        keywords = self._keywords(argument)
        if keywords is None:
            argument = self._positional(argument)
        took: float | None
        with user_code():
            if self.is_async:
                return await (self.fn(**keywords) if keywords is not None
                              else self.fn(argument)), None
            if keywords is not None:
                result, took = await run_blocking(_timed, self.fn, (), keywords)
            else:
                result, took = await run_blocking(_timed, self.fn, (argument,), {})
            if inspect.isawaitable(result):
                result = await result
                took = None
            return result, took


def _timed(fn: Callable[..., Any], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> tuple[Any, float]:
    """``fn(*args, **kwargs)`` and the milliseconds it took, measured on its own thread."""
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, (time.perf_counter() - started) * 1000


def _first_parameter_is_case(fn: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if not parameters:
        return False
    first = parameters[0]
    annotation: Any = first.annotation
    # Unresolvable forward references fall back to the annotation's text.
    with contextlib.suppress(Exception):
        annotation = typing.get_type_hints(fn).get(first.name, annotation)
    if annotation is Case:
        return True
    return isinstance(annotation, str) and annotation.rsplit(".", 1)[-1] == "Case"


def _execution(case: Case, result: Any, latency_ms: float) -> Execution:
    if isinstance(result, Execution):
        execution = result.model_copy()
        if execution.input in ("", None):
            execution.input = case.input
        if execution.latency_ms is None:
            execution.latency_ms = latency_ms
        return execution
    return Execution(input=case.input, output=result, latency_ms=latency_ms)
