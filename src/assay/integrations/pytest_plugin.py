"""pytest integration: an agent's tests read like assertions about its answers.

::

    from assay.integrations.pytest_plugin import assert_passes, suite_cases, assert_case

    def test_capital():
        assert_passes(SemanticSimilarity(), Case(id="fr", expected_output="Paris"),
                      "The capital is Paris")

    @pytest.mark.parametrize("item", suite_cases("EVAL.yaml"))
    def test_suite(item):
        assert_case(item)          # the suite's target and evaluators, for that case

A failed judgement fails the test with a message naming the evaluator, its score, the
threshold and the judge's rationale; so does an agent that failed (it raised, timed out or
answered what is not data), with why. A judgement that could not be made (the judge was
unreachable, its answer unusable) is reported as an ERROR, not as a failed assertion: it says
nothing about the agent. The terminal summary lists each test's judge calls, cost and latency;
judge answers come from assay's response cache, so re-running unchanged tests is free.
Each test's figures travel on its report, so the summary is whole under pytest-xdist too.

The plugin is registered through the ``pytest11`` entry point; it only adds the summary and
the error reporting, and does nothing for tests that do not use it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from assay._util.control_chars import printable
from assay.errors import EvaluationError
from assay.types import numbers
from assay.types.verdict import reaches


def shown(text: str) -> str:
    """A message for pytest to print: case ids, evaluator names, rationales and error texts
    come from suites, agents and models, so control characters (terminal escapes) are made
    visible and known secrets hidden, as everywhere assay puts data on a terminal."""
    from assay.report.safe_text import plain_for_terminal

    return plain_for_terminal(text)


class JudgeError(EvaluationError):
    """A judgement that could not be made: reported by pytest as an error, not a failure."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, shown(message))


@dataclass
class _Usage:
    calls: int = 0
    cached: int = 0
    cost: float | None = 0.0
    latency_ms: float = 0.0
    judgements: list[str] = field(default_factory=list)
    judges: set[str] = field(default_factory=set)
    states: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    """The scores judged: values, errors, not applicable, measurements (as
    :func:`~assay.run.display.score_counts` counts a run's)."""


_CURRENT: dict[str, _Usage] = {}
"""What the tests running in this process judged, until their reports carry it away."""
_ACTIVE: list[str] = []
_SUMMARY: dict[str, dict[str, Any]] = {}
"""Every test's figures, as its report brought them (from this process or an xdist worker)."""


def _record(score: Any) -> None:
    if not _ACTIVE:
        return
    usage = _CURRENT.setdefault(_ACTIVE[-1], _Usage())
    usage.calls += score.usage.calls
    usage.cached += score.usage.cached_calls
    usage.cost = None if usage.cost is None or score.usage.cost is None \
        else usage.cost + score.usage.cost
    usage.latency_ms += score.latency_ms or 0.0
    usage.judgements.append(score.name)
    usage.states[_state(score)] += 1
    if score.judge_model:
        usage.judges.add(score.judge_model)


def _state(score: Any) -> int:
    """Where ``score`` counts in :attr:`_Usage.states`."""
    if score.error is not None:
        return 1
    if score.measurement:
        return 3
    return 0 if score.value is not None else 2


def _explain(score: Any, threshold: float | None) -> str:
    bar = "" if threshold is None else f" (threshold {numbers.score(threshold)})"
    value = "no value" if score.value is None else numbers.score(score.value)
    raw = "" if score.raw is None or score.raw == score.value else \
        f", judge said {printable(score.raw)}"
    lines = [f"{score.name} scored {value}{bar}{raw}"]
    if score.rationale:
        lines.append(f"rationale: {score.rationale}")
    if score.misses:
        lines.append("misses: " + "; ".join(score.misses))
    return "\n".join(lines)


def check_score(score: Any, threshold: float | None = None) -> Any:
    """Fail (AssertionError) on a failing score, raise JudgeError on an error score; return
    the score when it passes (or did not apply, or only measured: a measurement counts in no
    verdict).

    A score passes as its run shows it passing: by its own ``passed``, which its evaluator
    set at its threshold and by its own rules (a required rubric item that failed, a
    ``pass_if``, expected outcomes not met); only a score with no pass of its own is held
    against ``threshold``, as its evaluator would hold it."""
    _record(score)
    if score.error is not None:
        raise JudgeError(score.error.code,
                         f"{score.name} could not judge: [{score.error.code}] "
                         f"{score.error.message}")
    if score.value is None:
        return score
    passed = score.passed if score.passed is not None else \
        threshold is not None and reaches(score.value, threshold)
    if not passed:
        raise AssertionError(shown(_explain(score, threshold)))
    return score


@contextlib.contextmanager
def _judging() -> Iterator[None]:
    """Judging that cannot start (the judge unreachable, its key missing, its model or the
    suite's target unknown) raises assay's own errors, not the agent's: each is a
    :class:`JudgeError`, which pytest reports as an ERROR, never as a failed test."""
    try:
        yield
    except JudgeError:
        raise
    except EvaluationError as exc:
        raise JudgeError(exc.code, f"could not judge: [{exc.code}] {exc.message}") from exc


def assert_passes(evaluator: Any, case: Any, output: Any = None, *,
                  judge_model: str | None = None, threshold: float | None = None) -> Any:
    """Judge ``output`` (an answer, or an :class:`~assay.Execution`) for ``case`` and assert
    ``evaluator`` (an evaluator, its type name, a ``{"type": ...}`` dict or a scorer
    function) passes it, as a run of that case shows the evaluator passing or failing it;
    ``threshold`` has the evaluator judge at it instead of its own. Returns the Score."""
    from assay.run.evaluate import as_evaluator
    from assay.run.score import score_record_async
    from assay.run.sync import run_sync
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.score import CaseScore

    if not isinstance(case, Case):
        case = Case.model_validate(case)
    execution = output if isinstance(output, Execution) else Execution(
        input=case.input, output=output)
    with _judging():  # a type name, a dict or a scorer function is built as a run builds it
        built = as_evaluator(evaluator, "assert_passes evaluator")
        if threshold is not None:  # the evaluator judges at it, as a suite's threshold: does
            built = built.model_copy(update={"threshold": threshold})
        record = run_sync(score_record_async(built, case, execution,
                                             judge_model=judge_model or None))
    result = CaseScore.of(record.scores[0], record.verdict, record.score)
    failed = _agent_failure(record, f"case {record.case_id}")
    if failed is not None:
        _record(result)
        raise AssertionError(shown(failed))
    return check_score(result, built.threshold)


def _agent_failure(record: Any, which: str) -> str | None:
    """Why the agent failed the case (it raised, timed out, answered what is not data), or
    None. Its scores' errors are then the agent's, not a judge's: the test fails, never an
    ERROR that "says nothing about the agent"."""
    error = record.execution.error
    if error is None:
        return None
    code = record.execution.error_code or "target_failed"
    return f"{which}: the agent failed [{code}]: {error}"


@dataclass(frozen=True)
class SuiteItem:
    """One case of a suite, as a pytest parameter."""

    suite: Any
    item: Any

    def __repr__(self) -> str:  # pytest shows it in a failing test's arguments
        return shown(self.item.case.id)


def suite_cases(path: str | Path, *, columns: Mapping[str, str] | None = None) -> list[Any]:
    """A suite's cases as pytest parameters (ids are case ids), for ``parametrize``. A
    relative ``path`` is read from the folder of the test file that calls this, as an import
    is, so the tests collect from any directory (``pytest examples/pytest`` from the root).
    ``columns`` maps case fields to a data file's columns, as :func:`assay.evaluate` takes
    it."""
    from assay.errors import EvaluationError
    from assay.run.evaluate import load_data

    try:
        suite = load_data(beside_caller(path), columns=columns)
    except EvaluationError as exc:
        refused = exc.message
    else:
        return [pytest.param(SuiteItem(suite, item), id=item.case.id)
                for item in suite.iter_cases()]
    # the test file's collection error is the line, not a traceback through assay's loaders
    pytest.fail(f"suite_cases({str(path)!r}): {refused}", pytrace=False)


def beside_caller(path: str | Path, depth: int = 2) -> Path:
    """``path``, relative ones taken from the folder of the file ``depth`` frames up (the
    test module calling a helper); as given when that caller has no file (a REPL)."""
    given = Path(path)
    if given.is_absolute():
        return given
    module_file = sys._getframe(depth).f_globals.get("__file__")
    return Path(module_file).resolve().parent / given if module_file else given


def assert_case(param: SuiteItem, **options: Any) -> Any:
    """Run one suite case as a run of the suite runs it, and assert it passes.

    The case runs through the suite itself (only its id selected), so every setting of the
    suite holds: its target, evaluators and judge, its scoring policy and run thresholds, its
    conversation settings, agent, metadata (a calibration gate, a sidecar's run options),
    evaluator selection and agent timeout. ``options`` are a run's (``store=``,
    ``judge_model=``, ``repeat=``, ``agent_retries=``, ``retry=``...). The case passes when
    every run of it (each repeat) has a passing verdict by the suite's scoring policy and the
    run meets its gates. An evaluator error is a JudgeError, unless the agent failed (a
    failure, saying why); a failure names each failing repeat with its verdict and failing
    evaluators, and every failed gate, and, run with repeats, says whether the case is flaky
    as a run's summary says it (:func:`~assay.run.display.repeats_shown`); a case that
    nothing scored (every evaluator not applicable, or only measuring) fails. Returns the
    first repeat's record. A suite's ``execution.batch`` is the one setting not followed: a
    test needs its verdict now, so its judge calls are live unless ``options`` say
    ``batch=True`` (with ``batch_wait=True``, the test waits for the batches)."""
    from assay.run.display import repeats_shown
    from assay.run.evaluate import evaluate

    with _judging():
        result = evaluate(param.suite, **{"batch": False, **options,
                                          "case_ids": [param.item.case.id]})
    problems = [line for record in result.records
                for line in _failures(record, len(result.records), result.reason)]
    problems += [f"gate failed: {g}" for g in result.summary.gate_failures]
    if problems or not result.passed:
        problems = problems or [f"case {param.item.case.id} did not pass: {result.reason}"]
        problems += [f"{label}: {text}" for label, text in repeats_shown(result.display)]
        raise AssertionError(shown("\n".join(problems)))
    return result.records[0]


def _failures(record: Any, repeats: int, reason: str) -> list[str]:
    """What failed in one run of a case (a heading and its failing evaluators), or nothing
    when it passed; a JudgeError for an evaluator that could not judge."""
    from assay.run.display import execution_name

    which = f"case {execution_name(record.case_id, record.repeat)}" + (
        f" (of {repeats} repeats)" if repeats > 1 else "")  # named as every surface names it
    failed = _agent_failure(record, which)
    if failed is not None:
        for score in record.scores:
            _record(score)
        return [failed]
    problems = []
    for score in record.scores:
        try:
            check_score(score)
        except AssertionError as exc:
            problems.append(str(exc))
    if record.score is None:  # nothing scored it: not applicable, or only measured
        return [f"{which} was not scored: {reason}"]
    if record.verdict.value != "pass":
        return [f"{which} {record.verdict.value} (score {numbers.score(record.score)}):",
                *problems]
    return []


# -- pytest hooks --------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    _ACTIVE.append(item.nodeid)
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        _ACTIVE.pop()
        usage = _CURRENT.get(item.nodeid)
        if usage is not None:
            usage.latency_ms = (time.perf_counter() - started) * 1000


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call":
        usage = _CURRENT.pop(item.nodeid, None)
        if usage is not None:
            # A plain dict on the report: pytest-xdist sends a report's attributes from the
            # worker to the process that prints the summary.
            report.assay_usage = {  # type: ignore[attr-defined]
                "calls": usage.calls, "cached": usage.cached, "cost": usage.cost,
                "latency_ms": usage.latency_ms, "judgements": len(usage.judgements),
                "scores": usage.states,
                "judges": sorted(usage.judges)}
        if call.excinfo is not None and call.excinfo.errisinstance(JudgeError):
            report.assay_judge_error = True  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                report.longrepr = str(call.excinfo.value)
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    usage = getattr(report, "assay_usage", None)
    if isinstance(usage, dict):
        _SUMMARY[report.nodeid] = usage


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config
                             ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    if getattr(report, "assay_judge_error", False):
        return "error", "E", ("ERROR (judge)", {"red": True})
    return None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    if not _SUMMARY:
        return
    from assay.run.display import score_counts

    terminalreporter.section("assay judgements")
    total_calls = total_cached = 0
    total_cost: float | None = 0.0
    for nodeid, usage in sorted(_SUMMARY.items()):
        counted = score_counts(*usage.get("scores", [usage["judgements"], 0, 0, 0]))
        terminalreporter.write_line(
            f"{nodeid}: {counted}; {usage['calls']} call(s) "
            f"(+{usage['cached']} cached), cost {numbers.cost(usage['cost'])}, "
            f"{numbers.milliseconds(usage['latency_ms'])}")
        total_calls += usage["calls"]
        total_cached += usage["cached"]
        total_cost = None if total_cost is None or usage["cost"] is None \
            else total_cost + usage["cost"]
    terminalreporter.write_line(f"total: {total_calls} judge call(s) (+{total_cached} from "
                                f"the cache), cost {numbers.cost(total_cost)}")
    from assay.llm.models import judge_notes

    for note in judge_notes(m for usage in _SUMMARY.values() for m in usage.get("judges", [])):
        terminalreporter.write_line(f"note: {note}", yellow=True)
    _SUMMARY.clear()
