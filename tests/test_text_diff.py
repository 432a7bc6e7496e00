"""The one line diff the viewer shows (``report/text_diff``): on the side-by-side view of two
runs and on a case page, the expected output against the agent's."""

from __future__ import annotations

from assay.report.text_diff import DIFF_LINES, text_diff
from assay.report.views import case_detail
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, Verdict


def _ops(before: str, after: str) -> list[tuple[str, str]]:
    return [(line.op, line.text) for line in text_diff(before, after)[0]]


def test_a_changed_line_is_removed_then_added_between_the_lines_both_hold():
    assert _ops("a\nb 42\nc", "a\nb 45\nc") == [
        ("same", "a"), ("removed", "b 42"), ("added", "b 45"), ("same", "c")]
    assert _ops("", "x") == [("added", "x")]


def test_the_diff_covers_the_first_lines_of_a_long_output_and_says_so():
    long = "\n".join(str(i) for i in range(DIFF_LINES + 10))
    lines, cut = text_diff(long, long + "!")
    assert cut and len(lines) == DIFF_LINES and all(line.op == "same" for line in lines)
    assert text_diff("a", "b")[1] is False


def _record(expected: object, output: object) -> CaseRecord:
    return CaseRecord(run_id="r", case_id="c", case=Case(id="c", input="q",
                                                         expected_output=expected),
                      execution=Execution(output=output), verdict=Verdict.PASS)


def test_a_case_page_has_the_diff_of_its_expected_and_actual_output():
    detail = case_detail(_record("The total is 42.", "The total is 45."))
    assert [(d.op, d.text) for d in detail.expected_diff or []] == [
        ("removed", "The total is 42."), ("added", "The total is 45.")]
    structured = case_detail(_record({"total": 42}, {"total": 42}))
    assert [d.op for d in structured.expected_diff or []] == ["same"] * 3  # indented JSON
    assert case_detail(_record(None, "x")).expected_diff is None  # nothing expected
    assert case_detail(_record("x", None)).expected_diff is None  # no output
