"""What assay prints reads as text, never as Python: counts, lists, mappings and matrices are
written out (``fail 1, pass 3``), not shown as reprs (``{'pass': 3}``)."""

from __future__ import annotations

import re

from assay._util.control_chars import printable
from assay.integrations.pytest_plugin import _explain
from assay.report.terminal import summary_lines
from assay.types.records import RunSummary
from assay.types.score import Score

PYTHON_REPR = re.compile(r"[{\[]'|'[}\]]|\[\[")
"""The marks of a Python repr of a dict, a list of strings or a nested list."""


def test_lists_and_mappings_read_as_text() -> None:
    assert printable({"pass": 4, "fail": 1}) == "pass: 4, fail: 1"
    assert printable(["a", "b"]) == "a, b"
    assert printable((1, 5)) == "1, 5"
    assert printable({"b", "a"}) == "a, b"
    assert printable({"a": [1, 2]}) == '{"a": [1, 2]}'  # nested: JSON, never a repr
    assert printable([[1, 0], [0, 2]]) == "[[1, 0], [0, 2]]"
    assert printable({"x": None}) == "x: none"
    assert printable(["\x1b[2J"]) == r"\x1b[2J"  # still made safe


def test_a_summary_shows_counts_lists_and_matrices_as_text() -> None:
    matrix = Score(name="f1", skipped="no single value",
                   details={"classes": ["cat", "dog"], "confusionMatrix": [[3, 1], [0, 2]]})
    summary = RunSummary(cases=6, verdicts={"pass": 4, "fail": 2}, scoring="connexity",
                         stop_reasons={"max_turns": 2, "user_ended": 4},
                         dataset_metrics={"f1": matrix})
    lines = summary_lines(summary)
    shown = "\n".join(lines)
    assert not PYTHON_REPR.search(shown), shown
    assert lines[0].startswith("6 cases: 4 pass, 2 fail, 0 borderline, 0 error, 0 skipped")
    assert "dataset metric f1: rows predicted, columns expected (cat, dog): cat 3 1; dog 0 2" \
        in shown
    assert "conversations stopped: max_turns 2, user_ended 4" in shown


def test_a_failed_assertion_shows_the_judges_raw_answer_as_text() -> None:
    score = Score(name="pair", value=0.0, raw={"winner": "B", "reasons": ["shorter"]},
                  passed=False)
    explained = _explain(score, None)
    assert 'judge said {"winner": "B", "reasons": ["shorter"]}' in explained
    assert not PYTHON_REPR.search(explained), explained


def test_a_rubric_answer_missing_ids_names_them_as_text() -> None:
    from pydantic import ValidationError

    from assay.judges.llm.rubric import ChecklistCheck, ChecklistVerdict, answer_schema

    schema = answer_schema(ChecklistVerdict, ChecklistCheck, ("tone", "facts"))
    try:
        schema.model_validate({"checks": [{"id": "tone", "satisfied": True},
                                          {"id": "tone", "satisfied": False}]})
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"])
    else:
        raise AssertionError("a repeated id was accepted")
    assert "repeated: tone" in message and not PYTHON_REPR.search(message), message
