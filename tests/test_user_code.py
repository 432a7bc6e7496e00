"""User code that exits (``sys.exit()``, a ``KeyboardInterrupt`` of its own): that one call's
error, or a clear error naming it, never the end of a run or a silent exit of a command."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import ConfigError
from assay.judges import EvalContext, Evaluator
from assay.store.runs import RunStore
from assay.targets.base import Target
from assay.types.case import Case
from assay.types.config import Gates
from assay.types.execution import Execution
from assay.types.score import Score
from tests.assay_process import run_assay
from tests.test_validate_cli import write

ROWS = [{"id": "a", "input": "q", "output": "fine", "expected_output": "fine"},
        {"id": "b", "input": "q", "output": "EXIT-NOW", "expected_output": "EXIT-NOW"}]
LOOSE = Gates(max_failed=None, max_errors=None)


def scores_of(result: Any, name: str) -> dict[str, Score]:
    return {r.case_id: r.score_named(name) for r in result.records}


def test_a_scorer_calling_sys_exit_in_assay_run_fails_its_case_and_the_run_completes(
        tmp_path: Path) -> None:
    write(tmp_path, "checks.py", """
        import sys

        def same(outputs, expectations):
            if outputs == "exit":
                sys.exit(3)
            return outputs == expectations["expected_output"]
        """)
    write(tmp_path, "EVAL.yaml", """
        execution:
          evaluators: [{name: same, type: python, function: checks:same}]
        evalcases:
          - {id: a, input: q, expected_output: fine, metadata: {output: fine}}
          - {id: b, input: q, expected_output: exit, metadata: {output: exit}}
          - {id: c, input: q, expected_output: also, metadata: {output: also}}
        """)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "400"}
    done = run_assay(["run", "EVAL.yaml", "--store", store], cwd=tmp_path, env=env, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out  # the error fails the gate; the run itself completed
    assert "--resume" not in out and "Traceback" not in out
    runs = RunStore(store)
    records = {r.case_id: r for r in runs.case_records(runs.run_records()[0].id)}
    assert sorted(records) == ["a", "b", "c"]  # every case stored
    error = records["b"].scores[0].error
    assert error is not None and error.code == "scorer_error"
    assert error.message == "SystemExit: called sys.exit(3)"
    assert records["a"].scores[0].value == records["c"].scores[0].value == 1.0


@pytest.mark.parametrize("how", ["sync", "thread", "async"])
def test_a_scorer_raising_keyboard_interrupt_or_exiting_fails_only_its_case(how: str) -> None:
    def check(outputs: str) -> bool:
        if outputs == "EXIT-NOW":
            if how == "async":
                raise KeyboardInterrupt
            sys.exit()
        return True

    fn: Any = check
    if how == "async":
        async def checked(outputs: str) -> bool:
            return check(outputs)
        fn = checked
    scorer = assay.scorer(name="check", run_in_thread=how == "thread")(fn)
    result = assay.evaluate(ROWS, evaluators=[scorer], gates=LOOSE)
    scores = scores_of(result, "check")
    assert scores["a"].value == 1.0
    error = scores["b"].error
    assert error is not None and error.code == "scorer_error"
    assert error.message == ("KeyboardInterrupt: " if how == "async"
                             else "SystemExit: called sys.exit()")


def test_an_evaluator_and_a_target_that_exit_fail_their_case() -> None:
    class Exiting(Evaluator):
        type = "exits_when_told"

        async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
            if execution.output == "exit":
                sys.exit("bye")
            return Score(name=self.name, value=1.0)

    class Agent(Target):
        async def run(self, case: Case) -> Execution:
            if case.input == "stop":
                raise SystemExit(2)
            return Execution(output="exit" if case.input == "x" else "fine")

    rows = [{"id": "a", "input": "q"}, {"id": "b", "input": "x"}, {"id": "c", "input": "stop"}]
    result = assay.evaluate(rows, target=Agent(), evaluators=[Exiting()], gates=LOOSE)
    by_id = {r.case_id: r for r in result.records}
    assert by_id["a"].scores[0].value == 1.0
    assert by_id["b"].scores[0].error.message == "SystemExit: called sys.exit('bye')"  # type: ignore[union-attr]
    assert by_id["c"].execution.error == "SystemExit: called sys.exit(2)"


def test_a_custom_llm_service_that_exits_fails_its_judge_call_only() -> None:
    async def service(body: dict[str, Any]) -> dict[str, Any]:
        if "EXIT-NOW" in json.dumps(body):
            sys.exit(9)
        return {"choices": [{"message": {"role": "assistant", "content": json.dumps(
            {"justification": "same", "score": 100})}}]}

    model = assay.register_service("exits-on-demand", service)
    result = assay.evaluate(ROWS, evaluators=["semantic_similarity"], judge_model=model,
                            gates=LOOSE, cache="off")
    scores = scores_of(result, "semantic_similarity")
    assert scores["a"].value == 1.0
    error = scores["b"].error
    assert error is not None and "SystemExit: called sys.exit(9)" in error.message


def test_a_reporter_that_exits_is_an_error_naming_it(tmp_path: Path) -> None:
    from assay.registry import reporter
    from assay.report.reporters import write_report

    @reporter("test-exits")
    def exits(result: Any, path: Path) -> None:
        sys.exit(5)

    result = assay.evaluate(ROWS[:1], evaluators=["exact_match"])
    with pytest.raises(ConfigError, match=r"the reporter 'test-exits' called sys.exit\(5\)"):
        write_report("test-exits", result, tmp_path / "out.txt")


async def test_the_runs_own_stopping_passes_through() -> None:
    from assay._util.user_code import UserCodeExit, user_code

    with pytest.raises(asyncio.CancelledError), user_code():
        raise asyncio.CancelledError
    with pytest.raises(UserCodeExit), user_code():  # raised by the code itself
        raise KeyboardInterrupt
    seen: list[str] = []

    async def cancelled_run() -> None:
        asyncio.current_task().cancel()  # type: ignore[union-attr]  # Ctrl-C cancels a run
        with pytest.raises(KeyboardInterrupt), user_code():
            raise KeyboardInterrupt
        seen.append("passed through")

    with pytest.raises(asyncio.CancelledError):
        await asyncio.ensure_future(cancelled_run())
    assert seen == ["passed through"]


def test_outside_an_event_loop_ctrl_c_is_the_users() -> None:
    from assay._util.user_code import UserCodeExit, user_code

    with pytest.raises(KeyboardInterrupt), user_code():
        raise KeyboardInterrupt
    with pytest.raises(UserCodeExit, match=r"called sys.exit\(1\)"), user_code():
        sys.exit(1)


def test_a_hook_that_exits_is_an_error_naming_it_and_what_was_stored_stays(tmp_path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    seen: list[str] = []

    def on_record(record: Any) -> None:
        seen.append(record.case_id)
        if record.case_id == "b":
            sys.exit(0)

    with pytest.raises(ConfigError, match=r"the on_record hook called sys.exit\(0\)"):
        assay.evaluate(ROWS, evaluators=["exact_match"], store=store, concurrency=1,
                       on_record=on_record)
    runs = RunStore(store)
    run = runs.run_records()[0]
    assert run.status.value == "failed"
    assert sorted(r.case_id for r in runs.case_records(run.id)) == ["a", "b"]
    with pytest.raises(ConfigError, match=r"the on_start hook called sys.exit\(1\)"):
        assay.evaluate(ROWS, evaluators=["exact_match"], on_start=lambda run: sys.exit(1))
