"""Calling the agent: what it raises, how long it may take, and what it may change."""

from __future__ import annotations

import asyncio
from typing import Any

import assay
from assay.model import Case, Execution
from assay.run_config import Gates
from assay.targets.base import Target

ROWS = [{"id": "a", "input": "q", "expected_output": "x"}]
LOOSE = Gates(max_failed=None, max_errors=None)


def execution_error(target: Any, **options: Any) -> str:
    result = assay.evaluate(ROWS, target=target, evaluators=["exact_match"], gates=LOOSE,
                            **options)
    error = result.records[0].execution.error
    assert error is not None
    return error


def test_an_agents_own_timeout_error_is_its_error_not_a_deadline() -> None:
    def sync_agent(q: str) -> str:
        raise TimeoutError("the upstream API timed out")

    async def async_agent(q: str) -> str:
        raise TimeoutError("the upstream API timed out")

    for agent in (sync_agent, async_agent):
        error = execution_error(agent)
        assert error == "agent function raised TimeoutError: the upstream API timed out"
        # and the same under a run deadline that has not expired
        assert execution_error(agent, agent_timeout_s=30) == error


def test_a_target_raising_timeout_error_under_a_run_deadline_is_its_own_error() -> None:
    class Gateway(Target):
        name = "gateway"

        async def run(self, case: Case) -> Execution:
            raise TimeoutError("gateway gave up")

    error = execution_error(Gateway(), agent_timeout_s=30)
    assert error == "TimeoutError: gateway gave up"


def test_an_agent_past_the_run_deadline_is_stopped_and_says_so() -> None:
    async def slow(q: str) -> str:
        await asyncio.sleep(30)
        return "x"

    error = execution_error(slow, agent_timeout_s=0.2)
    assert error == "the agent took longer than the agent timeout of 0.2s and was stopped"


async def test_an_agent_turn_raising_timeout_error_is_not_the_conversation_deadline() -> None:
    from assay.conversation import converse
    from assay.model import ConversationSettings, ConversationSpec

    class Gateway(Target):
        async def run(self, case: Case) -> Execution:
            raise TimeoutError("gateway gave up")

    case = Case(id="c", conversation=ConversationSpec(first_message="hi",
                                                      scripted_messages=["more"]))
    try:
        execution = await converse(Gateway(), case, ConversationSettings())
    except TimeoutError as exc:  # the agent's error, reported by the runner as such
        assert str(exc) == "gateway gave up"
    else:
        raise AssertionError(f"reported as {execution.conversation}")
