"""The JUnit report: well-formed whatever the case ids and judge text hold, errors reported as
errors, failures naming the evaluator that failed, with time, timestamp and location."""

from __future__ import annotations

import xml.dom.minidom
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from assay.judges import Contains, ExactMatch, SemanticSimilarity
from assay.report.files import write_junit, xml_text
from assay.report.rows import agentv_row
from assay.run.runner import case_verdict, evaluator_spec
from assay.types.case import Case
from assay.types.config import RunConfig
from assay.types.execution import Execution
from assay.types.records import CaseRecord
from assay.types.score import Score

HOSTILE = "".join(chr(c) for c in [*range(0x20), 0x7F]) + "\ud800\udfff\ufffe\uffff"


def _row(case_id: str, scores: list[Score], evaluators: list[Any] | None = None,
         latency_ms: float | None = 1234.0, **extra: Any) -> dict[str, Any]:
    """A result row as the runner builds it."""
    evaluators = evaluators or [ExactMatch(name=s.name) for s in scores]
    value, verdict = case_verdict(evaluators, scores, RunConfig())
    record = CaseRecord(case_id=case_id, case=Case(id=case_id, input="q", expected_output="a"),
                        target="agent", execution=Execution(output="a", latency_ms=latency_ms),
                        scores=scores, score=value, verdict=verdict)
    row = agentv_row(record, "suite", {e.name: evaluator_spec(e) for e in evaluators})
    row.update(extra)
    return row


def _parse(path: Path) -> ET.Element:
    """Parse strictly: expat rejects any character XML 1.0 does not allow."""
    data = path.read_bytes()
    xml.dom.minidom.parseString(data)
    return ET.fromstring(data)


def _case(root: ET.Element, name: str) -> ET.Element:
    found = [c for c in root.iter("testcase") if c.get("name") == name]
    assert len(found) == 1, [c.get("name") for c in root.iter("testcase")]
    return found[0]


def test_control_characters_and_surrogates_anywhere_keep_the_xml_well_formed(tmp_path):
    rows = []
    for i, char in enumerate(HOSTILE):
        bad = f"id-{i}-{char}-{HOSTILE}"
        rows.append(_row(bad, [
            Score(name=f"judge{char}", value=0.1, passed=False, rationale=f"why {char}",
                  misses=[f"miss {char}"]),
            Score.failed(f"llm{char}", f"code{char}", f"boom {char}\x1b[2J\x1b]0;title\x07")],
            evaluators=[ExactMatch(name=f"judge{char}"), ExactMatch(name=f"llm{char}")]))
    rows.append(_row(f"fail-{HOSTILE}", [Score(name="e", value=0.0, passed=False,
                                               rationale=HOSTILE)]))
    out = tmp_path / "junit.xml"
    write_junit(out, f"suite {HOSTILE}", rows, f"run{HOSTILE}")
    root = _parse(out)
    cases = list(root.iter("testcase"))
    assert len(cases) == len(HOSTILE) + 1
    assert len({c.get("name") for c in cases}) == len(cases)  # ids stay distinct
    assert "\\x1b" in _case(root, xml_text(f"id-27-\x1b-{HOSTILE}")).get("name", "")
    assert "\\ud800" in cases[0].get("name", "")


@pytest.mark.parametrize("char", list(HOSTILE))
def test_xml_text_leaves_only_characters_xml_allows(char):
    text = xml_text(f"a{char}b")
    assert all(c in "\t\n\r" or 0x20 <= ord(c) < 0x7F or 0x9F < ord(c) < 0xD800
               or 0xE000 <= ord(c) <= 0xFFFD for c in text)
    if char in "\t\n\r":
        assert text == f"a{char}b"


def test_a_case_whose_llm_judge_errored_is_an_error_not_a_pass(tmp_path):
    row = _row("c1", [Score(name="exact", value=1.0, passed=True),
                      Score.failed("quality", "judge_output_invalid", "the judge said prose")],
               evaluators=[ExactMatch(name="exact"), ExactMatch(name="quality")])
    assert row["verdict"] == "pass"  # the case itself scored from what could be computed
    out = tmp_path / "junit.xml"
    write_junit(out, "suite", [row], "run-1")
    root = _parse(out)
    suite = root.find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    error = _case(root, "c1").find("error")
    assert error is not None
    assert "quality [judge_output_invalid]: the judge said prose" in (error.text or "")
    assert "quality" in error.get("message", "")


def test_a_failure_names_the_evaluator_that_failed_not_another_ones_misses(tmp_path):
    row = _row("c2", [
        Score(name="city", value=0.2, passed=False, rationale="names Lyon, not Paris",
              misses=["Paris not found"]),
        Score(name="tone", value=0.9, passed=True, misses=["a little curt"])],
        evaluators=[Contains(name="city", search_text="Paris"), SemanticSimilarity(name="tone")])
    row["evaluator_results"][0]["threshold"] = 0.8  # used when the row carries it
    out = tmp_path / "junit.xml"
    write_junit(out, "suite", [row], "run-1")
    root = _parse(out)
    failure = _case(root, "c2").find("failure")
    assert failure is not None and row["verdict"] == "fail"
    assert "city" in failure.get("message", "") and "tone" not in failure.get("message", "")
    text = failure.text or ""
    assert "city: score 0.200, threshold 0.800: names Lyon, not Paris" in text
    assert "miss: Paris not found" in text
    assert "a little curt" not in text and "tone" not in text


def test_a_target_failure_is_an_error(tmp_path):
    scores = [Score.failed("exact", "target_failed", "the target failed: HTTP 500")]
    row = _row("c3", scores)
    write_junit(tmp_path / "j.xml", "suite", [row], "run-1")
    error = _case(_parse(tmp_path / "j.xml"), "c3").find("error")
    assert error is not None and "exact [target_failed]" in (error.text or "")


def test_a_case_no_evaluator_applied_to_is_skipped_neither_a_pass_nor_an_error(tmp_path):
    """Every surface counts a case whose evaluators all did not apply as skipped; JUnit wrote
    it as a test that passed (and ``skipped="0"``), which CI counts as a pass."""
    rows = [_row("c5", [Score.not_applicable("context", "the case has no retrieved context")]),
            _row("c6", [Score(name="exact", value=1.0, passed=True)])]
    assert [row["verdict"] for row in rows] == ["skipped", "pass"]
    write_junit(tmp_path / "j.xml", "suite", rows, "run-1")
    root = _parse(tmp_path / "j.xml")
    suite = root.find("testsuite")
    assert suite is not None
    assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == \
        ["2", "0", "0", "1"]
    skipped = _case(root, "c5").find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "not applicable: context: the case has no retrieved context"
    assert _case(root, "c6").find("skipped") is None


def test_time_timestamp_and_location(tmp_path):
    located = _row("c4", [Score(name="e", value=1.0, passed=True)], latency_ms=1500.0,
                   file="suites/EVAL.yaml", line=42)
    plain = _row("c5", [Score(name="e", value=1.0, passed=True)], latency_ms=None)
    located["timestamp"], plain["timestamp"] = "2025-01-02T03:04:06Z", "2025-01-02T03:04:05Z"
    write_junit(tmp_path / "j.xml", "suite", [located, plain], "run-1")
    root = _parse(tmp_path / "j.xml")
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("time") == "1.500" and suite.get("timestamp") == "2025-01-02T03:04:05"
    case = _case(root, "c4")
    assert case.get("time") == "1.500" and case.get("timestamp") == "2025-01-02T03:04:06"
    assert case.get("file") == "suites/EVAL.yaml" and case.get("line") == "42"
    other = _case(root, "c5")
    assert other.get("time") == "0.000" and other.get("file") is None
