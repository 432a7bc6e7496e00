"""``assay convert --to v4|v2``: AgentV 2's EVAL.yaml and AgentV 4's, each way, checked to mean
the same (case by case, evaluator by evaluator) or refused with nothing kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from assay.authoring import convert as convert_module
from assay.authoring.convert import convert
from assay.authoring.versions import meaning
from assay.errors import ConfigError
from assay.suites import load_any
from tests.test_agentv4 import EXAMPLES, write
from tests.test_cli_run import assay as assay_cli

MATH = Path(__file__).parent / "data" / "suites" / "math"


def _same(a: Path, b: Path) -> None:
    assert meaning(load_any(a, targets=False)) == meaning(load_any(b, targets=False))


def test_an_agentv_2_suite_to_agentv_4_and_back(tmp_path):
    shutil.copytree(MATH, tmp_path, dirs_exist_ok=True)
    out = assay_cli(tmp_path, "convert", "EVAL.yaml", "--to", "v4")
    assert out.returncode == 0, out.stderr
    v4 = tmp_path / "EVAL.v4.yaml"
    data = yaml.safe_load(v4.read_text())
    assert "evalcases" not in data and [t["id"] for t in data["tests"]] == [
        "addition", "multiplication", "greeting"]
    quality, exact = data["assertions"]
    assert quality == {"type": "llm-grader", "name": "quality",
                       "prompt": "file://prompts/quality.md", "weight": 2}
    assert exact == {"type": "exact_match", "name": "exact"}
    greeting = data["tests"][2]
    assert greeting["assertions"] == [{"type": "assay:contains", "name": "polite",
                                       "search_text": "hello"}]  # assay's, not AgentV's
    assert greeting["execution"] == {"skip_defaults": True}  # its list replaced the suite's
    assert greeting["metadata"] == {"note": "Not arithmetic; only checks the agent stays "
                                            "polite."}
    assert data["tests"][1]["rubrics"] == [{"id": "r1", "outcome": "Answers with a number "
                                                                   "only"}]
    _same(tmp_path / "EVAL.yaml", v4)
    back = assay_cli(tmp_path, "convert", "EVAL.v4.yaml", "-o", "back.yaml")
    assert back.returncode == 0, back.stderr
    assert "evalcases" in yaml.safe_load((tmp_path / "back.yaml").read_text())
    _same(tmp_path / "EVAL.yaml", tmp_path / "back.yaml")


def test_the_worked_example_scores_0_775_in_either_format(tmp_path, mock_server):
    project = tmp_path / "agentv4"
    shutil.copytree(EXAMPLES / "agentv4", project)
    targets = project / ".agentv" / "targets.yaml"
    targets.write_text(targets.read_text().replace("http://127.0.0.1:8766/v1",
                                                   mock_server.url))
    out = assay_cli(project, "convert", "EVAL.yaml", "--to", "v2", "--out", "EVAL.v2.yaml")
    assert out.returncode == 0, out.stderr
    v2 = yaml.safe_load((project / "EVAL.v2.yaml").read_text())
    (case,) = v2["evalcases"]
    quality, contains = case["execution"]["evaluators"]
    assert quality["type"] == "llm_judge" and "{{candidate_answer}}" in quality["prompt"]
    assert contains == {"type": "text_assertion", "check": "contains", "name": "names_paris",
                        "value": "Paris", "weight": 1}
    for suite in ("EVAL.yaml", "EVAL.v2.yaml"):
        run = assay_cli(project, "run", suite)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "mean score 0.775 over 1 scored" in run.stdout, suite


def test_agentv_4_features_reach_agentv_2_with_the_same_meaning(tmp_path):
    write(tmp_path / "prompts" / "p.md", "Grade {{output}} for {{criteria}}.\n")
    source = write(tmp_path / "EVAL.yaml", """
        input: Be brief.
        assertions:
          - {type: is-json, name: json, required: 0.5}
        tests:
          - id: own
            criteria: Says hi
            input: hi
            assertions:
              - {type: contains, value: x}
              - {type: contains, value: x}
              - Greets the user
              - {type: llm-grader, prompt: "file://prompts/p.md", min_score: 0.7}
              - {type: python, value: "len(output) < 9"}
          - id: skips
            input: b
            execution: {skip_defaults: true}
            assertions: [{type: regex, value: "^b", flags: i}]
          - id: defaults
            input: c
            expected_output: [{role: assistant, content: C}]
        """)
    convert(source, tmp_path / "v2.yaml", to="v2")
    _same(source, tmp_path / "v2.yaml")
    convert(tmp_path / "v2.yaml", tmp_path / "v4.yaml", to="v4")
    _same(source, tmp_path / "v4.yaml")


@pytest.mark.parametrize("text, message", [
    ("scoring: connexity\nevalcases:\n  - {id: a, expected_outcome: x, input: hi}\n",
     "the suite uses 'scoring', which AgentV 4's format has no way to say"),
    ("evalcases:\n  - {id: a, expected_outcome: x, input: hi, guidelines: [Be kind]}\n",
     "case 'a' uses 'guidelines', which AgentV 4's format has no way to say"),
])
def test_what_agentv_4_cannot_say_is_refused(tmp_path, text, message):
    source = tmp_path / "EVAL.yaml"
    source.write_text(text)
    with pytest.raises(ConfigError, match=message):
        convert(source, to="v4")
    assert not (tmp_path / "EVAL.v4.yaml").exists()


def test_a_conversion_that_would_change_the_meaning_keeps_nothing(tmp_path, monkeypatch):
    shutil.copytree(MATH, tmp_path, dirs_exist_ok=True)
    real = convert_module.CONVERTERS["v4"]

    def lossy(data, base):
        converted = real(data, base)
        converted["assertions"][0]["weight"] = 1  # a weight lost on the way
        return converted

    monkeypatch.setitem(convert_module.CONVERTERS, "v4", lossy)
    with pytest.raises(ConfigError, match=r"would not mean what the source means, so nothing "
                                          r"was kept: .*weight: '2\.0' != '1\.0'"):
        convert(tmp_path / "EVAL.yaml", to="v4")
    assert not (tmp_path / "EVAL.v4.yaml").exists()


def test_convert_refuses_to_replace_what_it_was_not_told_to(tmp_path):
    shutil.copytree(MATH, tmp_path, dirs_exist_ok=True)
    (tmp_path / "EVAL.v4.yaml").write_text("keep me\n")
    out = assay_cli(tmp_path, "convert", "EVAL.yaml", "--to", "v4")
    assert out.returncode == 2 and "EVAL.v4.yaml exists and was not named" in out.stderr
    assert (tmp_path / "EVAL.v4.yaml").read_text() == "keep me\n"
    named = assay_cli(tmp_path, "convert", "EVAL.yaml", "--to", "v4", "-o", "EVAL.v4.yaml")
    assert named.returncode == 0, named.stderr
    onto = assay_cli(tmp_path, "convert", "EVAL.v4.yaml", "--to", "v2", "-o",
                     "prompts/quality.md")
    assert onto.returncode == 2 and "prompts/quality.md" in onto.stderr
    again = assay_cli(tmp_path, "convert", "EVAL.v4.yaml", "--to", "v4", "-o", "x.yaml")
    assert again.returncode == 2 and "already in AgentV 4's format" in again.stderr
    nowhere = assay_cli(tmp_path, "convert", "EVAL.yaml", "--to", "v9")
    assert nowhere.returncode == 2 and "--to 'v9': expected one of v2, v4, jsonl" in \
        nowhere.stderr
