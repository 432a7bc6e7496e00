"""What a Python scorer may return, and what each kind of value means for its case and run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import assay
from assay.errors import ConfigError
from assay.judges.feedback import passes
from assay.types.config import Gates
from assay.types.records import Verdict

ROWS = [{"id": "a", "input": "q", "output": "short"},
        {"id": "b", "input": "q", "output": "a longer answer"}]
LOOSE = Gates(max_failed=None, max_errors=None)


def test_pass_if_compares_integers_exactly() -> None:
    # as floats both sides are 1e16, so "== 10**16 + 1" would pass 10**16
    assert passes("== 10000000000000001", 10**16 + 1)
    assert not passes("== 10000000000000001", 10**16)
    assert passes("> 10000000000000000", 10**16 + 1)
    assert passes(">= 3", 3) and passes("< 0.5", 0.25) and passes("== yes", "yes")
    assert passes(">= 1", True) and not passes(">= 3", "three")


# -- what a scorer returns -----------------------------------------------------------------


def run(*scorers, rows=ROWS, **options):  # type: ignore[no-untyped-def]
    return assay.evaluate(rows, evaluators=list(scorers), **options)


@pytest.mark.parametrize("value", [85, 1.5, -0.1, np.float32(1.5), np.int64(2)])
def test_a_number_off_the_scale_is_an_error_naming_it_and_the_range(value) -> None:
    @assay.scorer(name="rating")
    def rating(outputs):  # type: ignore[no-untyped-def]
        return value

    result = run(rating, gates=LOOSE)
    for record in result.records:
        error = record.scores[0].error
        assert error is not None and error.code == "scorer_error"
        shown = value.item() if isinstance(value, np.generic) else value
        assert error.message.startswith(f"returned {shown!r}, outside [0, 1], the range of a "
                                        "score")
        assert record.verdict is Verdict.ERROR
    assert result.passed is False and result.summary.evaluator_skips == 0


def test_a_label_or_a_none_is_an_error_saying_what_is_accepted() -> None:
    @assay.scorer
    def label(outputs):  # type: ignore[no-untyped-def]
        return "good"

    @assay.scorer
    def nothing(outputs):  # type: ignore[no-untyped-def]
        return None

    result = run(label, nothing, gates=LOOSE)
    errors = {s.name: s.error for s in result.records[0].scores}
    assert errors["label"] is not None and errors["label"].message.startswith(
        "returned the label 'good', which is not a score; expected a bool, a number in [0, 1]")
    assert errors["nothing"] is not None and errors["nothing"].message.startswith(
        "returned None; expected a bool, a number in [0, 1]")
    assert result.passed is False


def test_none_is_not_applicable_only_when_the_scorer_says_so() -> None:
    @assay.scorer(none_is_not_applicable=True)
    def maybe(outputs):  # type: ignore[no-untyped-def]
        return None if outputs == "short" else True

    result = run(maybe)
    by_id = {r.case_id: r for r in result.records}
    assert by_id["a"].scores[0].skipped and by_id["a"].verdict is Verdict.SKIPPED
    assert by_id["b"].score == 1.0
    assert result.passed is True

    @assay.scorer(none_is_not_applicable=True)
    def never(outputs):  # type: ignore[no-untyped-def]
        return None

    nothing = run(never)
    assert nothing.passed is False  # a run with no scored case never passes
    assert "no case was scored: no evaluator applied to any of the 2 case(s)" in nothing.reason


@pytest.mark.parametrize(("value", "expected"), [
    (np.bool_(True), 1.0), (np.bool_(False), 0.0), (np.int64(1), 1.0), (np.float32(0.5), 0.5),
    (np.float64(0.25), 0.25)])
def test_numpy_scalars_are_their_python_values(value, expected) -> None:
    @assay.scorer
    def numpy_score(outputs):  # type: ignore[no-untyped-def]
        return value

    score = run(numpy_score, gates=LOOSE).records[0].scores[0]
    assert score.error is None and score.value == expected
    assert type(score.raw) in (bool, int, float)


def test_a_measurement_keeps_its_values_aggregates_them_and_counts_in_no_verdict() -> None:
    @assay.scorer(kind="measurement")
    def length(outputs):  # type: ignore[no-untyped-def]
        return np.int64(len(outputs))

    @assay.scorer
    def short(outputs):  # type: ignore[no-untyped-def]
        return len(outputs) < 10

    result = run(length, short, gates=LOOSE)
    by_id = {r.case_id: r for r in result.records}
    measured = by_id["b"].score_named("length")
    assert measured is not None and measured.value is None and measured.raw == 15
    assert measured.measurement and type(measured.raw) is int
    assert by_id["a"].score == 1.0 and by_id["b"].score == 0.0  # the measurement is not in it
    m = result.metrics
    assert (m["length/measured/count"], m["length/measured/mean"], m["length/measured/min"],
            m["length/measured/max"]) == (2, 10.0, 5, 15)
    assert m["length/mean"] is None and m["length/skipped"] == 0 and m["measurements"] == 2
    assert m["short/mean"] == 0.5


def test_a_run_that_only_measured_says_so_and_does_not_pass() -> None:
    @assay.scorer(kind="measurement")
    def length(outputs):  # type: ignore[no-untyped-def]
        return len(outputs)

    result = run(length)
    assert result.passed is False
    assert [r.verdict for r in result.records] == [Verdict.SKIPPED] * 2
    assert result.reason == ("1 gate(s) failed: no case was scored: the run only measured "
                             "(length (2)), and a measurement counts in no verdict; add a "
                             "scorer, or a pass_if, that passes or fails cases")
    from assay.report.terminal import summary_lines

    lines = summary_lines(result.summary)
    assert "  length: measured 2 value(s): mean 10, min 5, max 15; a measurement counts in no " \
           "verdict (2 evaluator scores: 0 values, 0 errors, 0 not applicable, 2 " \
           "measurements)" in lines


def test_a_pass_if_makes_any_value_a_check_that_fails_its_case() -> None:
    @assay.scorer(pass_if=">= 3")
    def rating(outputs):  # type: ignore[no-untyped-def]
        return 4 if outputs == "short" else 1

    result = run(rating)
    by_id = {r.case_id: r for r in result.records}
    good, bad = by_id["a"].scores[0], by_id["b"].scores[0]
    assert (good.value, good.raw, good.passed) == (1.0, 4, True)
    assert (bad.value, bad.raw, bad.passed) == (0.0, 1, False)  # 1 is in [0, 1], still a 1-5
    assert by_id["b"].verdict is Verdict.FAIL and result.passed is False


def test_a_measurement_is_no_check() -> None:
    with pytest.raises(ConfigError, match="a measurement counts in no verdict"):
        assay.scorer(kind="measurement", pass_if=">= 3")(lambda outputs: 1)
    from assay.judges import build

    with pytest.raises(Exception, match="a measurement counts in no verdict"):
        build({"type": "python", "kind": "measurement", "required": True})


def measuring_suite(folder: Path, *outputs: str) -> Path:
    """An EVAL.yaml whose one evaluator, a ``type: python`` scorer declared a measurement,
    measures the length of each recorded output (cases a, b...)."""
    from tests.test_validate_cli import write

    write(folder, "lengths.py", "def length(outputs):\n    return len(outputs)\n")
    cases = "".join(f"  - {{id: {chr(97 + i)}, input: q, metadata: {{output: {o!r}}}}}\n"
                    for i, o in enumerate(outputs))
    return write(folder, "EVAL.yaml", "execution:\n  evaluators: [{name: length, type: python, "
                 "function: lengths:length, kind: measurement}]\nevalcases:\n" + cases)


def test_an_eval_yaml_scorer_declares_a_measurement_and_the_command_says_it_only_measured(
        tmp_path) -> None:
    from tests.test_hardening_suites import cli, has

    suite = measuring_suite(tmp_path, "four", "sixteen letters!")
    code, out = cli("run", str(suite), "--store", f"sqlite:///{tmp_path / 'runs.db'}")
    assert code == 1, out
    assert has(out, "length: measured 2 value(s): mean 10, min 4, max 16",
               "gate failed: no case was scored: the run only measured (length (2))"), out
    assert "all gates passed" not in out


def test_the_pytest_plugin_fails_a_case_that_nothing_scored(tmp_path) -> None:
    from assay.integrations.pytest_plugin import assert_case, suite_cases

    (item,) = suite_cases(measuring_suite(tmp_path, "four"))
    with pytest.raises(AssertionError, match=r"case a was not scored: .*only measured"):
        assert_case(item.values[0])


def test_the_pytest_plugin_fails_a_case_no_evaluator_applied_to(tmp_path) -> None:
    from assay.integrations.pytest_plugin import assert_case, suite_cases
    from tests.test_validate_cli import write

    write(tmp_path, "EVAL.yaml", """
        execution:
          evaluators: [{type: groundedness, model: "fake:x"}]
        evalcases:
          - {id: a, input: q, metadata: {output: an answer with no retrieved context}}
        """)
    (item,) = suite_cases(tmp_path / "EVAL.yaml")
    with pytest.raises(AssertionError, match=r"case a was not scored: .*no evaluator applied"):
        assert_case(item.values[0])


def test_suite_cases_takes_the_column_mapping_a_run_takes(tmp_path):
    """``suite_cases`` took any keyword and ignored it: a data file's column mapping was
    dropped without a word. It takes the mapping ``evaluate`` takes, and refuses the rest."""
    from assay.integrations.pytest_plugin import suite_cases

    path = tmp_path / "rows.jsonl"
    path.write_text('{"q": "2+2", "a": "4"}\n', encoding="utf-8")
    (item,) = suite_cases(path, columns={"input": "q", "expected_output": "a"})
    assert item.values[0].item.case.input == "2+2"
    assert item.values[0].item.case.expected_output == "4"
    with pytest.raises(TypeError, match="colums"):
        suite_cases(path, colums={"input": "q"})  # type: ignore[call-arg]
