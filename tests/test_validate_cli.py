"""``assay validate``: every problem printed as file:line:col, exit 0 when valid, 2 when not."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store.runs import RunStore

runner = CliRunner()


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def validate(*args: str) -> tuple[int, list[str]]:
    result = runner.invoke(app, ["validate", *args])
    return result.exit_code, [line for line in result.stdout.splitlines() if line.strip()]


OK_EVALUATORS = """
execution:
  evaluators:
    - {name: exact, type: exact_match}
"""

# (kind, file text, the expected problem line after "FILE:")
BROKEN: list[tuple[str, str, str]] = [
    ("yaml syntax", """
        evalcases:
          - id: a
            input: [unclosed
        """,
     "4:1: invalid YAML: expected ',' or ']', but got '<stream end>' "
     "(while parsing a flow sequence at line 3)"),
    ("unknown top-level key", """
        descripton: typo
        evalcases: [{id: a, input: x}]
        """,
     "1:1: unknown top-level key 'descripton' (expected: one of description, name, dataset, "
     "version, execution, evalcases, cases, evaluator, target, metadata, scoring, thresholds, "
     "conversation, agent)"),
    ("unknown case key", """
        evalcases:
          - id: a
            input: x
            expected_outcom: typo
        """,
     "4:5: unknown case key 'expected_outcom' (expected: one of id, expected_outcome, outcome, "
     "input, input_messages, expected_output, expected_messages, rubrics, note, guidelines, "
     "reference_context, execution, evaluators, evaluator, conversation_id, metadata, "
     "expected_outcomes, expected_tool_calls, evaluation_criteria_override, name, description, "
     "tags, difficulty, status, persona, persona_context, first_turn, first_message, "
     "user_context, scripted_messages, max_turns)"),
    ("unknown evaluator key", """
        execution:
          evaluators:
            - name: q
              type: llm_judge
              temprature: 0
        evalcases: [{id: a, input: x}]
        """,
     "5:7: unknown key 'temprature' for evaluator type 'llm_judge' (expected: one of type, "
     "name, weight, threshold, required, model, temperature, max_tokens, seed, guidance, "
     "examples, aligned, prompt, uses_answer, prompt_script, config, cwd, timeout_s)"),
    ("unknown evaluator type", """
        execution:
          evaluators:
            - name: q
              type: llm_judgee
        evalcases: [{id: a, input: x}]
        """,
     "4:13: unknown evaluator type 'llm_judgee' (did you mean 'llm_judge'?) (expected: one of "),
    ("missing prompt file", """
        execution:
          evaluators:
            - name: q
              type: llm_judge
              prompt: ./prompts/quality.md
        evalcases: [{id: a, input: x}]
        """,
     "5:15: prompt file ./prompts/quality.md not found (looked in "),
    ("duplicate case id", """
        evalcases:
          - id: same
            input: x
          - id: same
            input: y
        """,
     "4:9: duplicate case id 'same' (first at line 2) (expected: a unique id for each case)"),
    ("missing id", """
        evalcases:
          - input: x
        """,
     "2:5: case has no 'id' (expected: id: a unique name for the case)"),
    ("no input", """
        evalcases:
          - id: a
            expected_outcome: something
        """,
     "2:5: case 'a' has neither 'input' nor 'input_messages' (expected: input: text or a "
     "mapping, or input_messages: [{role, content}])"),
    ("unknown template variable", """
        execution:
          evaluators:
            - name: q
              type: llm_judge
              prompt: "Judge {{answer}} against {{question}}"
        evalcases: [{id: a, input: x}]
        """,
     "5:15: llm_judge prompt uses unknown variable(s) {{answer}}; accepted: {{question}}, "),
    ("negative weight", """
        execution:
          evaluators:
            - {name: q, type: exact_match, weight: -0.5}
        evalcases: [{id: a, input: x}]
        """,
     "3:44: weight -0.5 is negative (expected: a finite number >= 0)"),
    ("non-numeric weight", """
        execution:
          evaluators:
            - name: q
              type: exact_match
              weight: heavy
        evalcases: [{id: a, input: x}]
        """,
     "5:15: weight 'heavy' is text, not a number (expected: a finite number >= 0)"),
    ("empty evalcases", """
        description: nothing yet
        evalcases: []
        """,
     "2:12: evalcases is empty (expected: at least one case)"),
    ("no cases at all", """
        description: nothing yet
        """,
     "1:1: the suite has no cases (expected: evalcases: a list of "
     "{id, input, expected_outcome, ...})"),
    ("wrong type: execution", """
        execution: [target, x]
        evalcases: [{id: a, input: x}]
        """,
     "1:12: execution must be a mapping, not a list (expected: {target, evaluators})"),
    ("wrong type: input", """
        evalcases:
          - id: a
            input: 42
        """,
     "3:12: input must be text, a mapping or messages, not a number (expected: text, a "
     "mapping, or [{role, content}])"),
    ("duplicate yaml key", """
        evalcases:
          - id: a
            input: x
            input: y
        """,
     "4:5: duplicate key 'input' (first at line 3); the last one would silently win "
     "(expected: each key once per mapping)"),
    ("bad message role", """
        evalcases:
          - id: a
            input_messages:
              - {role: robot, content: hi}
        """,
     "4:16: message role: Input should be 'system', 'user', 'assistant', 'tool', "
     "'developer' or 'function'"),
    ("missing required evaluator field", """
        execution:
          evaluators:
            - {name: c, type: code_judge}
        evalcases: [{id: a, input: x}]
        """,
     "3:7: code_judge evaluator needs 'script' (expected: script: "),
    ("duplicate evaluator names", """
        execution:
          evaluators:
            - {type: exact_match}
            - {type: exact_match}
        evalcases: [{id: a, input: x}]
        """,
     "4:7: duplicate evaluator name 'exact_match' (also item 1 of this list) (expected: a "
     "unique 'name' for each evaluator in a list)"),
]


@pytest.mark.parametrize(("kind", "text", "expected"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_file_reports_located_problem(tmp_path: Path, kind: str, text: str,
                                             expected: str) -> None:
    path = write(tmp_path, "EVAL.yaml", text)
    code, lines = validate(str(path))
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{path}:{expected}"), lines[0]


def test_valid_file_exits_zero_with_a_summary(tmp_path: Path) -> None:
    path = write(tmp_path, "EVAL.yaml", OK_EVALUATORS + """
evalcases:
  - {id: a, input: x, expected_output: x}
  - id: b
    input: y
    execution:
      evaluators: [{type: contains, search_text: y}]
""")
    code, lines = validate(str(path))
    assert (code, lines) == (0, [f"{path}: ok, 2 cases, 2 evaluators"])


def test_unknown_target_with_targets_file(tmp_path: Path) -> None:
    targets = write(tmp_path, "targets.yaml", """
        targets:
          - {name: agent, provider: python, function: "agent:run"}
    """)
    path = write(tmp_path, "EVAL.yaml", OK_EVALUATORS + """
  target: agnet
evalcases:
  - id: a
    input: x
    execution: {target: also_missing}
""")
    code, lines = validate(str(path), "--targets", str(targets))
    assert code == 2
    assert lines == [
        f"{path}:5:11: unknown target 'agnet' (expected: one of agent (from {targets}), or a "
        "model such as openai:gpt-4o-mini)",
        f"{path}:9:25: unknown target 'also_missing' (expected: one of agent (from "
        f"{targets}), or a model such as openai:gpt-4o-mini)"]


def test_discovered_targets_file_problems_are_reported(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    targets = write(tmp_path, ".assay/targets.yaml", """
        targets:
          - name: api
            provider: http
            url: http://127.0.0.1:9/chat
            headers: {Authorization: "Bearer ${{ AGENT_TOKEN }}"}
    """)
    path = write(tmp_path, "suites/EVAL.yaml", OK_EVALUATORS + """
  target: api
evalcases: [{id: a, input: x}]
""")
    code, lines = validate(str(path))
    assert code == 2
    assert lines == [
        f"{targets}:5:30: target 'api', field 'headers.Authorization': environment variable "
        "AGENT_TOKEN is not set (expected: AGENT_TOKEN in the environment or in a .env file "
        "beside the targets file)"]  # and no "ok": the run would refuse the suite


def test_all_problems_of_all_files_in_one_run(tmp_path: Path) -> None:
    first = write(tmp_path, "one.yaml", """
        bogus: 1
        evalcases:
          - {id: a}
    """)
    second = write(tmp_path, "two.jsonl", '{"id": "x", "input": "y"}\n{"id": "x"}\n')
    good = write(tmp_path, "three.yaml", OK_EVALUATORS + "evalcases: [{id: a, input: b}]\n")
    code, lines = validate(str(first), str(second), str(good), str(tmp_path / "missing.yaml"))
    assert code == 2
    assert lines[0].startswith(f"{first}:1:1: unknown top-level key 'bogus'")
    assert lines[1].startswith(f"{first}:3:5: case 'a' has neither")
    assert lines[2].startswith(f"{second}:2: duplicate case id 'x' (first at line 1)")
    assert lines[3].startswith(f"{second}:2: case 'x' has neither")
    assert lines[4] == f"{good}: ok, 1 case, 1 evaluator"
    assert lines[5].startswith(f"{tmp_path / 'missing.yaml'}: no such file or directory")


def test_real_command_line(tmp_path: Path) -> None:
    bad = write(tmp_path, "EVAL.yaml", "evalcases:\n  - id: a\n    input: x\n    wat: 1\n")
    assay = Path(sys.executable).parent / "assay"
    result = subprocess.run([str(assay), "validate", str(bad)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stdout.startswith(f"{bad}:4:5: unknown case key 'wat'")
    assert "Traceback" not in result.stderr


def test_validate_refuses_what_run_refuses_before_its_first_call(tmp_path: Path) -> None:
    """A suite whose target cannot be found, and rows no evaluator judges: each passed
    validate, and run stored a run of errors (or failed only once it had started)."""
    lost = write(tmp_path, "lost/EVAL.yaml", OK_EVALUATORS + """
  target: nowhere
evalcases: [{id: a, input: x}]
""")
    rows = write(tmp_path, "rows/data.csv", "input,expected_output\n" +
                 "".join(f"q{i},a{i}\n" for i in range(30)))
    code, lines = validate(str(lost), str(rows))
    assert code == 2
    assert lines[0].startswith(f"{lost}: unknown target 'nowhere': no targets file "), lines
    assert lines[1].startswith(f"{rows}: 30 case(s) have no evaluator, so nothing would judge "
                               "them (first: 'row-"), lines
    assert not any(": ok, " in line for line in lines)
    # ... and run refuses both the same way, before anything is stored.
    for path, message in ((lost, "unknown target 'nowhere'"),
                          (rows, "30 case(s) have no evaluator")):
        store = tmp_path / f"{path.parent.name}.db"
        result = runner.invoke(app, ["run", str(path), "--store", f"sqlite:///{store}"])
        assert result.exit_code == 2, result.output
        assert message in result.output
        assert RunStore(f"sqlite:///{store}").run_records() == []
