"""A target whose cases may mock tools and inputs (see :mod:`assay.targets.mocking`).

Every target a run resolves is wrapped: a case without mocking runs as it is. A case with an
input strategy gets its input written by the judge model first; a case with a tool strategy
runs with the mocking session active, which only a Python agent (its tools marked
``@mockable``) can see, so any other target is an error for that case rather than a run that
silently calls the real tools.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from assay.errors import EvaluationError
from assay.llm.engine import JudgeEngine
from assay.llm.structured import ask_structured
from assay.targets.base import Target, WrappedTarget, current_sample
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.messages import Message
from assay.types.spans import Span


class MockedTarget(WrappedTarget):
    """``inner`` with per-case tool and input mocking."""

    def __init__(self, inner: Target, engine: JudgeEngine, model: str | None) -> None:
        super().__init__(inner)
        self.engine = engine
        self.model = model

    async def ask(self, system: str, user: str, schema: type[BaseModel],
                  model: str | None) -> Any:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        chosen = model if model and ":" in model else self.model
        result = await ask_structured(self.engine, messages, schema, model=chosen,
                                      name="mock_response", sample=current_sample())
        if result.value is None:
            assert result.error is not None
            raise EvaluationError("mocking_failed",
                                  f"the judge could not write the mocked answer: "
                                  f"{result.error.message}")
        return result.value

    async def run_turn(self, case: Case, messages: list[Message], turn: int) -> Execution:
        """The inner target's own turn (an HTTP agent's ``metadata`` included), with the case's
        tool mocking active when it asks for it, as for a whole run (a turn's input is the
        conversation, so no input is generated)."""
        raw = case.metadata.get("mocking")
        if not raw:
            return await self.inner.run_turn(case, messages, turn)
        return await self.run(case, lambda c: self.inner.run_turn(c, messages, turn),
                              generate_input=False)

    async def run(self, case: Case,
                  call: Callable[[Case], Awaitable[Execution]] | None = None,
                  generate_input: bool = True) -> Execution:
        """``call`` (the inner target's run, or one of its turns) on the case, its input
        generated and its tools mocked when it asks."""
        call = call or self.inner.run
        raw = case.metadata.get("mocking")
        if not raw:
            return await call(case)
        from assay.targets import mocking

        spec = mocking.Mocking.model_validate(raw)
        if spec.input is not None and generate_input:
            try:
                generated = await self.ask(
                    mocking.INPUT_SYSTEM, mocking.input_prompt(
                        spec.input, case.input,
                        case.metadata.get("expected_agent_behavior")),
                    mocking.GeneratedInput, spec.input.model)
            except EvaluationError as exc:
                return Execution(input=case.input, error=exc.message)
            case = case.model_copy(update={"input": generated.input})
        if spec.tools is None:
            return await call(case)
        from assay.targets.callable import CallableTarget

        if not isinstance(self.inner, CallableTarget):
            return Execution(input=case.input, error=(
                f"this case mocks tools ({spec.tools.type}), which needs a Python agent "
                "(provider: python) whose tools are marked with assay.targets.mocking.mockable; "
                f"target {self.inner.name!r} cannot be mocked"))
        session = mocking.Session(spec.tools, self.ask, asyncio.get_running_loop())
        token = mocking.activate(session)
        try:
            execution = await call(case)
        finally:
            mocking.deactivate(token)
        if session.calls and not execution.trace and not any(
                m.tool_calls for m in execution.messages):
            execution.trace = [Span(name=made["name"], span_id=f"mock-{i}", attributes={
                "tool.name": made["name"], "tool.mocked": True,
                "input.value": json.dumps(made["arguments"], default=str),
                "output.value": json.dumps(made["response"], default=str)})
                for i, made in enumerate(session.calls)]
        return execution
