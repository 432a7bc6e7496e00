"""The progress bar counts every case, tells Rich at most every ``refresh_seconds``, and ends
showing the exact totals however quickly the cases finished."""

from __future__ import annotations

import io

from rich.console import Console

from assay.report.terminal import ProgressBar
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, Verdict
from assay.types.score import Score, ScoreError
from assay.types.usage import Usage


def record(index: int, *, error: bool = False, cached: bool = True) -> CaseRecord:
    score = Score.failed("judge", "judge_failed", "no answer") if error else Score(
        name="judge", value=0.5, usage=Usage(cached_calls=int(cached), calls=int(not cached),
                                             cost=None if not cached else 0.0))
    return CaseRecord(case_id=f"c{index}", case=Case(id=f"c{index}", input="q"),
                      execution=Execution(output="a"), scores=[score],
                      verdict=Verdict.ERROR if error else Verdict.PASS)


def test_the_bar_is_updated_in_batches_and_ends_exact() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    bar = ProgressBar(console, "suite")
    updates = 0
    real_update = bar._progress.update

    def counted(*args: object, **kwargs: object) -> None:
        nonlocal updates
        updates += 1
        real_update(*args, **kwargs)  # type: ignore[arg-type]

    bar._progress.update = counted  # type: ignore[method-assign]
    with bar:
        bar.start(1000, 0)
        for i in range(1000):
            bar.advance(record(i, error=i % 100 == 0, cached=i != 7))
    task = bar._progress.tasks[0]
    assert int(task.completed) == 1000  # the stop shows what was not yet shown
    assert updates < 50  # not once per case
    assert bar.errors == 10
    assert (bar.usage.calls, bar.usage.cached_calls, bar.usage.cost) == (1, 989, None)
    assert "errors 10" in task.fields["status"] and "cost unknown" in task.fields["status"]


def test_without_a_terminal_the_bar_prints_true_counts() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=120)
    bar = ProgressBar(console, "suite")
    with bar:
        bar.start(3, 0)
        for i in range(3):
            bar.advance(record(i))
    assert "1/3 cases" in out.getvalue()  # the first case is printed at once, counted
    assert int(bar._progress.tasks[0].completed) == 3


def test_an_error_score_without_usage_counts_as_an_error_only() -> None:
    bar = ProgressBar(Console(file=io.StringIO()), "suite")
    bar.start(1, 0)
    failed = Score(name="j", error=ScoreError(code="judge_failed", message="x"))
    bar.advance(CaseRecord(case_id="c", case=Case(id="c", input="q"), execution=Execution(),
                           scores=[failed], verdict=Verdict.ERROR))
    assert bar.errors == 1 and bar.usage == Usage()


def test_usage_totals_match_a_sum_by_plus_and_an_unknown_cost_stays_unknown() -> None:
    # The bar, a case's usage and an aggregate sum usage in one pass; it must be the sum.
    parts = [Usage(calls=1, prompt_tokens=400, completion_tokens=12, cost=0.25),
             Usage(cached_calls=1, cost=0.0), Usage(calls=2, retries=1, cost=0.5)]
    by_plus = parts[0] + parts[1] + parts[2]
    assert Usage.total(parts) == by_plus
    assert by_plus == Usage(calls=3, cached_calls=1, retries=1, prompt_tokens=400,
                            completion_tokens=12, cost=0.75)
    assert Usage.total([]) == Usage()
    assert Usage.total([*parts, Usage(calls=1, cost=None)]).cost is None
    record = CaseRecord(case_id="c", case=Case(id="c", input="q"), execution=Execution(),
                        scores=[Score(name=f"j{i}", value=0.5, usage=u)
                                for i, u in enumerate(parts)], verdict=Verdict.PASS)
    assert record.usage == by_plus
    bar = ProgressBar(Console(file=io.StringIO()), "suite")
    bar.start(1, 0)
    bar.advance(record)
    assert (bar.usage.calls, bar.usage.cached_calls, bar.usage.cost) == (3, 1, 0.75)


def test_each_run_of_a_command_counts_on_its_own_bar() -> None:
    """A command that makes several runs (an alignment: learn, then before and after) gets a
    bar per run; cases not yet shown go to their own run's bar, never to the next one's."""
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    bar = ProgressBar(console, "suite")
    bar.refresh_seconds = 3600  # nothing is shown until the bar is told to
    with bar:
        bar.start(8, 0)
        for i in range(8):
            bar.advance(record(i))
        bar.start(4, 0)
        for i in range(4):
            bar.advance(record(i))
    assert [int(t.completed) for t in bar._progress.tasks] == [8, 4]


def test_a_cost_is_shown_by_one_rule_unknown_never_zero():
    """Every surface that shows a cost shows it through ``numbers.cost``: an unknown price
    reads ``unknown`` (never ``$0`` nor ``-``), and an amount too small for four decimals
    keeps two significant digits instead of reading as free."""
    from assay.types.numbers import cost

    assert cost(None) == "unknown" and cost(float("nan")) == "unknown"
    assert cost(0.0) == "$0.0000"  # a free provider (the embedded model) is free
    assert cost(0.0000412) == "$0.000041" and cost(0.0123) == "$0.0123"
    assert cost(12.5) == "$12.50"
