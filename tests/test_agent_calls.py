"""Calling the agent: what it raises, how long it may take, and what it may change."""

from __future__ import annotations

import asyncio
from typing import Any

import assay
from assay.targets.base import Target
from assay.types.case import Case
from assay.types.config import Gates
from assay.types.execution import Execution

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
    from assay.targets.conversation import converse
    from assay.types.case import ConversationSettings, ConversationSpec

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


def test_a_hung_agent_is_stopped_by_the_default_agent_timeout(monkeypatch) -> None:
    import threading

    import assay.run.runner

    # the default is 600 s; made short here, with nothing else setting a timeout
    monkeypatch.setattr(assay.run.runner, "DEFAULT_AGENT_TIMEOUT_S", 0.3)

    def hung(q: str) -> str:
        threading.Event().wait(30)
        return "x"

    error = execution_error(hung)
    assert error == "the agent took longer than the agent timeout of 0.3s and was stopped"


def test_the_agent_timeout_is_the_runs_else_the_suites_else_600_s_or_the_targets_own(
        tmp_path) -> None:
    from assay.run.runner import agent_timeout
    from assay.targets.callable import CallableTarget
    from assay.types.config import DEFAULT_AGENT_TIMEOUT_S, RunConfig

    def fn(q: str) -> str:
        return q

    assert DEFAULT_AGENT_TIMEOUT_S == 600.0
    assert agent_timeout(RunConfig(), CallableTarget(fn)) == 600.0
    assert agent_timeout(RunConfig(), CallableTarget(fn, timeout_s=900)) == 900.0
    assert agent_timeout(RunConfig(), CallableTarget(fn, timeout_s=30)) == 600.0
    assert agent_timeout(RunConfig(agent_timeout_s=5), CallableTarget(fn, timeout_s=900)) == 5
    suite_says = RunConfig().settled("default", None, 120.0)
    assert suite_says.agent_timeout_s == 120.0
    assert RunConfig(agent_timeout_s=7).settled("default", None, 120.0).agent_timeout_s == 7


def test_a_suite_sets_its_agent_timeout_and_the_run_records_it(tmp_path) -> None:
    from tests.test_validate_cli import write

    write(tmp_path, "agent.py", """
        import threading

        def answer(q):
            if q == "hang":
                threading.Event().wait(30)
            return q
        """)
    suite = write(tmp_path, "EVAL.yaml", """
        execution:
          agent_timeout_s: 0.3
          evaluators: [{type: exact_match}]
        evalcases:
          - {id: a, input: ok, expected_output: ok}
          - {id: b, input: hang, expected_output: hang}
        """)
    from assay._util.user_code import load_function

    result = assay.evaluate(suite, target=load_function("agent:answer", tmp_path), gates=LOOSE)
    by_id = {r.case_id: r for r in result.records}
    assert by_id["a"].score == 1.0
    assert by_id["b"].execution.error == ("the agent took longer than the agent timeout of "
                                          "0.3s and was stopped")
    assert result.run.config.run.agent_timeout_s == 0.3


def test_a_bad_suite_agent_timeout_is_a_located_error(tmp_path) -> None:
    from assay.suites import check_any
    from tests.test_validate_cli import write

    suite = write(tmp_path, "EVAL.yaml", """
        execution:
          agent_timeout_s: -1
          evaluators: [{type: exact_match}]
        evalcases:
          - {id: a, input: ok, expected_output: ok, metadata: {output: ok}}
        """)
    _, problems = check_any(suite)
    assert [(p.line, p.message) for p in problems] == [
        (2, "agent_timeout_s must be a positive number of seconds, not -1")]


def test_an_agent_that_changes_its_input_changes_no_other_call() -> None:
    seen: list[Any] = []

    def greedy(request: dict[str, Any]) -> str:
        seen.append({**request, "items": list(request["items"])})
        request["items"].append("mine")  # changes what it was given
        request["extra"] = True
        return "x"

    def keywords(question: str, items: list[str]) -> str:
        seen.append(list(items))
        items.append("mine")
        return "x"

    def whole(case: Case) -> str:
        seen.append(dict(case.metadata))
        case.metadata["touched"] = True
        assert isinstance(case.input, dict)
        case.input["items"].append("mine")
        return "x"

    rows = [{"id": "a", "input": {"question": "q", "items": ["one"]}, "expected_output": "x"}]
    for agent, first in ((greedy, {"question": "q", "items": ["one"]}), (keywords, ["one"]),
                         (whole, {})):
        seen.clear()
        result = assay.evaluate(rows, target=agent, evaluators=["exact_match"], repeat=3,
                                concurrency=1)
        assert seen == [first] * 3  # every repeat sees the input as the case gives it
        for record in result.records:
            assert record.case.input == {"question": "q", "items": ["one"]}
            assert record.input == {"question": "q", "items": ["one"]}
            assert record.case.metadata.get("touched") is None


def test_a_scorer_that_changes_what_it_was_given_changes_nothing_else() -> None:
    @assay.scorer
    def rude(inputs: Any, outputs: Any, expectations: Any) -> bool:
        outputs["answer"] = "changed"
        inputs["items"].clear()
        expectations["expected_output"]["answer"] = "changed"
        return True

    row = {"id": "a", "input": {"items": [1]}, "output": {"answer": "x"},
           "expected_output": {"answer": "x"}}
    result = assay.evaluate([row], evaluators=[rude, "exact_match"], concurrency=1)
    record = result.records[0]
    assert record.output == {"answer": "x"} and record.case.input == {"items": [1]}
    assert record.case.expected_output == {"answer": "x"}
    assert record.score_named("exact_match").value == 1.0  # type: ignore[union-attr]
