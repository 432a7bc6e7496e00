"""An unknown evaluator or grader type names the one meant when one is close: a list of fifty
types after "unknown evaluator type 'contain'" does not show which one was mistyped."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import assay
from assay.cli.app import app
from assay.errors import EvaluationError

SUITES = {
    "agentv4-assertion": ("tests:\n  - id: a\n    input: hi\n    expected_output: hi\n"
                          "    assertions:\n      - type: contain\n        value: hi\n",
                          "unknown grader type 'contain' (did you mean 'contains'?)"),
    "v2-evaluators": ("description: d\nexecution:\n  evaluators:\n    - name: check\n"
                      "      type: exact_mach\nevalcases:\n  - id: a\n    input: hi\n"
                      "    expected_output: hi\n",
                      "unknown evaluator type 'exact_mach' (did you mean 'exact_match'?)"),
    "v2-shorthand": ("description: d\nevalcases:\n  - id: a\n    input: hi\n"
                     "    expected_output: hi\n    evaluator: semantic_similarty\n",
                     "unknown evaluator type 'semantic_similarty' (did you mean "
                     "'semantic_similarity'?)"),
}


@pytest.mark.parametrize("name", sorted(SUITES))
def test_a_suites_mistyped_type_names_the_one_meant(tmp_path: Path, name: str) -> None:
    text, expected = SUITES[name]
    (tmp_path / "EVAL.yaml").write_text(text)
    checked = CliRunner().invoke(app, ["validate", str(tmp_path / "EVAL.yaml")])
    assert checked.exit_code == 2, checked.output
    assert expected in checked.output
    assert "Traceback" not in checked.output


def test_a_mistyped_type_from_python_names_the_one_meant() -> None:
    with pytest.raises(EvaluationError, match=r"unknown evaluator type 'exact_mach' \(did "
                       r"you mean 'exact_match'\?\)"):
        assay.evaluate([{"id": "a", "input": "x", "expected_output": "x"}],
                       target=lambda q: q, evaluators=[{"type": "exact_mach"}])


def test_a_type_close_to_none_names_none() -> None:
    with pytest.raises(EvaluationError) as raised:
        assay.evaluate([{"id": "a", "input": "x", "expected_output": "x"}],
                       target=lambda q: q, evaluators=[{"type": "zzzzqqq"}])
    assert "did you mean" not in str(raised.value)
