"""MLflow's ``ConversationSimulator``, on assay's conversation engine.

::

    simulator = ConversationSimulator(
        test_cases=[{"goal": "Learn how to track experiments", "persona": "A data scientist"},
                    {"goal": "Debug a deployment", "context": {"user_id": 7}}],
        max_turns=5, user_model="openai:gpt-4o-mini")
    assay.evaluate(data=simulator, predict_fn=predict_fn,
                   scorers=[ConversationCompleteness(), UserFrustration()])

Each test case is a conversation case: ``goal`` (required) becomes its expected outcome, the
simulated user's goal; ``persona`` (default MLflow's "You are an inquisitive user having a
natural conversation."), ``simulation_guidelines`` (how the user must behave),
``expectations`` (ground truth for the judges, as in a data row) and ``context`` (keyword
arguments for ``predict_fn``). A simulated user opens with a first step toward the goal
(never the goal itself) and, after each agent turn, a yes/no check asks whether the goal is
fully achieved: yes ends the conversation (``goal_achieved``), else it goes on up to
``max_turns``. ``predict_fn`` has MLflow's shape, ``predict_fn(input: list[dict],
**context)`` (``messages=`` when it names that parameter; ``mlflow_session_id`` when it takes
one): :meth:`ConversationSimulator.agent` adapts it, and :func:`assay.evaluate` does so when
given a simulator.

A test case with another key, or without a goal, is an error naming the test case and the
key, before any call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay._util.limits import MAX_TURNS
from assay.errors import ConfigError
from assay.suites.dataset import DatasetError, suite_from_rows
from assay.suites.model import Suite, SuiteCase
from assay.types.case import (
    Case,
    ConversationSettings,
    ConversationSpec,
    SimulatorSettings,
)

DEFAULT_PERSONA = "You are an inquisitive user having a natural conversation."
"""MLflow's persona for a test case that gives none."""
TEST_CASE_KEYS = ("goal", "persona", "context", "expectations", "simulation_guidelines")
RESERVED_CONTEXT = ("input", "messages", "mlflow_session_id")
"""Keys ``context`` may not use: they are the conversation's own arguments (MLflow's rule)."""


class ConversationSimulator:
    """Test cases played as conversations with a goal-seeking simulated user (see the
    module docstring)."""

    def __init__(self, test_cases: Sequence[Mapping[str, Any]], max_turns: int = 10,
                 user_model: str | None = None, *, name: str = "simulation") -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or \
                not 1 <= max_turns <= MAX_TURNS:
            raise ConfigError(f"ConversationSimulator: max_turns {max_turns!r} is not a whole "
                              f"number from 1 to {MAX_TURNS}", code="invalid_simulation")
        self.test_cases = [_checked(case, index) for index, case in enumerate(test_cases)]
        if not self.test_cases:
            raise ConfigError("ConversationSimulator: test_cases is empty",
                              code="invalid_simulation")
        self.max_turns = max_turns
        self.user_model = user_model
        self.name = name

    def suite(self) -> Suite:
        """The test cases as a suite of conversation cases (its evaluators are the run's)."""
        rows = []
        for index, test_case in enumerate(self.test_cases):
            row: dict[str, Any] = {"id": f"simulation-{index}",
                                   "input": {"goal": test_case["goal"]},
                                   "expected_outcomes": [test_case["goal"]]}
            if test_case.get("expectations") is not None:
                row["expectations"] = test_case["expectations"]
            if test_case.get("context"):
                row["custom_inputs"] = dict(test_case["context"])
            rows.append(row)
        loaded = suite_from_rows(rows, name=self.name)
        cases = [SuiteCase(case=self._conversation(item.case, test_case))
                 for item, test_case in zip(loaded.cases, self.test_cases, strict=True)]
        settings = ConversationSettings(
            max_turns=self.max_turns, simulator=SimulatorSettings(
                model=self.user_model, stop_signal=False, stop_on_goal=True))
        return Suite(name=self.name, cases=cases, conversation=settings,
                     metadata={"format": "conversation_simulator"})

    @staticmethod
    def _conversation(case: Case, test_case: Mapping[str, Any]) -> Case:
        spec = ConversationSpec.model_validate({
            "persona": test_case.get("persona") or DEFAULT_PERSONA,
            "simulation_guidelines": test_case.get("simulation_guidelines")})
        return case.model_copy(update={"conversation": spec})

    @staticmethod
    def agent(predict_fn: Callable[..., Any]) -> Callable[..., Any]:
        """``predict_fn`` in MLflow's shape as an assay agent of one conversation turn: it is
        called with the conversation so far as ``input`` (or ``messages``), the test case's
        ``context`` as keyword arguments, and ``mlflow_session_id`` when it takes one."""
        try:
            parameters = inspect.signature(predict_fn).parameters
        except (TypeError, ValueError):
            raise ConfigError("ConversationSimulator: cannot read predict_fn's parameters",
                              code="invalid_target") from None
        key = "messages" if "messages" in parameters else "input"
        open_ended = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        if key not in parameters and not open_ended:
            raise ConfigError("ConversationSimulator: predict_fn takes the conversation as "
                              "'input' (or 'messages'), as MLflow calls it: "
                              "predict_fn(input: list[dict], **context)",
                              code="invalid_target")

        def arguments(case: Case) -> dict[str, Any]:
            messages = [m.model_dump(mode="json", exclude_none=True) if hasattr(m, "model_dump")
                        else m for m in (case.input if isinstance(case.input, list) else [])]
            found: dict[str, Any] = {key: messages}
            if "mlflow_session_id" in parameters or open_ended:
                found["mlflow_session_id"] = f"assay-{case.id}"
            context = case.custom_inputs if isinstance(case.custom_inputs, dict) else {}
            found.update({k: v for k, v in context.items() if open_ended or k in parameters})
            return found

        if inspect.iscoroutinefunction(predict_fn):
            async def turn_async(case: Case) -> Any:
                return await predict_fn(**arguments(case))
            turn_async.__name__ = getattr(predict_fn, "__name__", "predict_fn")
            return turn_async

        def turn(case: Case) -> Any:
            return predict_fn(**arguments(case))
        turn.__name__ = getattr(predict_fn, "__name__", "predict_fn")
        return turn


def _checked(test_case: Any, index: int) -> dict[str, Any]:
    """A test case as MLflow accepts one; a ConfigError names what is wrong."""
    where = f"ConversationSimulator test_cases[{index}]"
    if not isinstance(test_case, Mapping):
        raise DatasetError(f"{where}: a {type(test_case).__name__}, expected a dict with a "
                           "'goal'")
    unknown = [str(k) for k in test_case if k not in TEST_CASE_KEYS]
    if unknown:
        raise DatasetError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
                           f"expected {', '.join(TEST_CASE_KEYS)}")
    goal = test_case.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise DatasetError(f"{where}: 'goal' is required (what the simulated user wants)")
    guidelines = test_case.get("simulation_guidelines")
    if guidelines is not None and not isinstance(guidelines, str) and not (
            isinstance(guidelines, list) and all(isinstance(g, str) for g in guidelines)):
        raise DatasetError(f"{where}: 'simulation_guidelines' must be text or a list of texts")
    context = test_case.get("context")
    if context is not None:
        if not isinstance(context, Mapping):
            raise DatasetError(f"{where}: 'context' must be a dict of predict_fn arguments")
        reserved = [k for k in context if k in RESERVED_CONTEXT]
        if reserved:
            raise DatasetError(f"{where}: context key(s) {', '.join(map(repr, reserved))} "
                               "are the conversation's own arguments; rename them")
    return dict(test_case)


__all__ = ["DEFAULT_PERSONA", "ConversationSimulator"]
