"""AgentV 4 files read as they are: ``tests:`` with per-test ``assertions``, its grader types,
its targets file (``grader_target``, a ``cli`` command writing ``{OUTPUT_FILE}``), every
problem located, and the worked example scoring what AgentV 4.42.4 scores.

Reference values marked "AgentV 4.42.4" were produced by running the real ``agentv`` CLI
(npm ``agentv@4.42.4``) on the same files against assay's mock server."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import assay
from assay.cli.app import app
from assay.judges.code.inline import InlineCode
from assay.judges.deterministic.assertions import TextAssertion
from assay.judges.llm.llm_judge import LLMJudge
from assay.judges.llm.rubric import Rubric
from assay.suites import check_any, find_format, load_any
from assay.suites.agentv4 import DEFAULT_PROMPT
from tests.test_cli_run import assay as assay_cli

EXAMPLES = Path(__file__).parent.parent / "examples"
ANSWER = '  The capital of France is Paris. {"a": 1}  '


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def cli_agent(project: Path, answer: str = ANSWER, *, judge_url: str | None = None) -> None:
    """A cli target as AgentV 4 writes one: the answer goes to {OUTPUT_FILE}."""
    write(project / "agent.py", f"""
        import sys
        with open(sys.argv[-1], "w", encoding="utf-8") as out:
            out.write({answer!r})
        """)
    lines = ["targets:", "  - name: agent", "    provider: cli",
             f"    command: {sys.executable} agent.py {{PROMPT}} {{OUTPUT_FILE}}"]
    if judge_url:
        lines += ["    grader_target: grader", "  - name: grader", "    provider: openai",
                  f"    endpoint: {judge_url}", "    api_key: mock-key",
                  "    model: mock-judge"]
    write(project / ".agentv" / "targets.yaml", "\n".join(lines) + "\n")


# -- the worked example ---------------------------------------------------------------------


def test_the_worked_example_scores_0_775_as_in_agentv_4(tmp_path, mock_server):
    """examples/agentv4 as shipped (only the judge's port changed): an llm-grader of weight
    3 scoring 0.7 and contains Paris of weight 1. AgentV 4.42.4: 0.775 (0.7749999999999999),
    graders answer_quality 0.7 and names_paris 1, status quality_failure, exit 0."""
    project = tmp_path / "agentv4"
    shutil.copytree(EXAMPLES / "agentv4", project)
    targets = project / ".agentv" / "targets.yaml"
    targets.write_text(targets.read_text().replace("http://127.0.0.1:8766/v1",
                                                   mock_server.url))
    checked = assay_cli(project, "validate", "EVAL.yaml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 case, 2 evaluators, target agent" in checked.stdout
    out = assay_cli(project, "run", "EVAL.yaml", "-o", "rows.jsonl")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "mean score 0.775 over 1 scored" in out.stdout
    (row,) = [json.loads(x) for x in (project / "rows.jsonl").read_text().splitlines()]
    assert row["score"] == pytest.approx(0.775)
    assert row["candidate_answer"] == "The capital of France is Paris."
    graders = {e["name"]: (e["score"], e["weight"]) for e in row["evaluator_results"]}
    assert graders == {"answer_quality": (0.7, 3.0), "names_paris": (1.0, 1.0)}
    assert mock_server.stats.models == {"mock-judge": 1}  # the grader_target judged it
    assert mock_server.stats.authorization == {"Bearer mock-key": 1}  # the key from .env


def test_the_judge_prompt_fills_agentv_4_variables(tmp_path, mock_server):
    project = tmp_path / "p"
    cli_agent(project, "Paris.", judge_url=mock_server.url)
    suite = write(project / "EVAL.yaml", """
        target: agent
        tests:
          - id: t
            criteria: Names the capital
            input: What is the capital of France?
            expected_output: Paris
            metadata: {topic: geo, tags: [a, b]}
            assertions:
              - type: llm-grader
                prompt: |
                  Q={{input}} A={{output}} C={{criteria}} R={{expected_output}}
                  M={{metadata}} J={{metadata_json}}
                  <<mock:{"score": 0.5, "hits": [], "misses": [], "reasoning": "ok"}>>
        """)
    record = assay.evaluate(suite).records[0]
    (score,) = record.scores
    assert score.value == 0.5 and score.name == "llm-grader"
    user = score.details["judge_request"][-1]["content"]
    # metadata as AgentV 4 writes it: JSON.stringify(m, null, 2) and JSON.stringify(m)
    for label, value in (("Q=", "What is the capital of France?"), ("A=", "Paris."),
                         ("C=", "Names the capital"), ("R=", "Paris"),
                         ("M=", '{\n  "topic": "geo",\n  "tags": [\n    "a",\n    "b"\n  ]\n}'),
                         ("J=", '{"topic":"geo","tags":["a","b"]}')):
        _head, _, rest = user.partition(label)
        assert value in rest.split("\n</")[0], (label, user)


def test_agentv_4_variables_assay_does_not_fill_are_located_never_empty(tmp_path):
    suite = write(tmp_path / "EVAL.yaml", """
        tests:
          - id: t
            criteria: Names the capital
            input: What is the capital of France?
            assertions:
              - type: llm-grader
                prompt: "{{output}} {{tool_calls}} {{rubrics}} {{rubrics_json}} {{file_changes}}"
        """)
    (problem,) = check_any(suite, targets=False)[1]
    assert (problem.line, problem.column) == (7, 17)
    assert "unknown variable(s) {{tool_calls}}, {{rubrics}}, {{rubrics_json}}, " \
        "{{file_changes}}" in problem.message
    assert "{{metadata_json}}" in problem.message  # among those accepted


def test_a_test_without_assertions_gets_agentv_4s_default_grader(tmp_path, mock_server):
    suite = write(tmp_path / "EVAL.yaml", """
        tests:
          - id: t
            criteria: Names Paris
            input: Capital of France?
        """)
    loaded = load_any(suite, targets=False)
    (grader,) = loaded.evaluators
    assert isinstance(grader, LLMJudge) and grader.name == "llm-grader"
    assert grader.prompt == DEFAULT_PROMPT
    assert "{{criteria}}" in grader.prompt and "[[ ## answer ## ]]" in grader.prompt


# -- deterministic graders, against AgentV 4.42.4's own results ------------------------------

AGENTV_442_DETERMINISTIC = {
    # name: (grader, AgentV 4.42.4's score on ANSWER, its assertion text)
    "c1": ({"type": "contains", "value": "Paris"}, 1, 'Output contains "Paris"'),
    "c2": ({"type": "contains", "value": "paris"}, 0, 'Output does not contain "paris"'),
    "c3": ({"type": "icontains", "value": "PARIS"}, 1,
           'Output contains "PARIS" (case-insensitive)'),
    "c4": ({"type": "contains-any", "value": ["Rome", "Paris"]}, 1, 'Output contains "Paris"'),
    "c5": ({"type": "contains-all", "value": ["Rome", "Paris"]}, 0, 'Output missing: "Rome"'),
    "c6": ({"type": "icontains-all", "value": ["FRANCE", "paris"]}, 1,
           "Output contains all 2 expected strings (case-insensitive)"),
    "c7": ({"type": "icontains-any", "value": ["rome", "berlin"]}, 0,
           'Output does not contain any of: "rome", "berlin" (case-insensitive)'),
    "c8": ({"type": "starts-with", "value": "The capital"}, 1,
           'Output starts with "The capital"'),
    "c9": ({"type": "ends-with", "value": '{"a": 1}'}, 1, 'Output ends with "{\\"a\\": 1}"'),
    "c10": ({"type": "equals", "value": 'The capital of France is Paris. {"a": 1}'}, 1, None),
    "c11": ({"type": "regex", "value": "capital of \\w+ is"}, 1, None),
    "c12": ({"type": "regex", "value": "CAPITAL", "flags": "i"}, 1, None),
    "c13": ({"type": "regex", "value": "^Paris"}, 0, None),
    "c14": ({"type": "is-json"}, 0, "Output is not valid JSON"),
    "c15": ({"type": "contains", "value": "Paris", "negate": True}, 0, None),
    "c16": ({"type": "is_json", "negate": True}, 1, None),
    "c17": ({"type": "starts-with", "value": "  The", "required": True}, 1, None),
}


def test_deterministic_graders_score_what_agentv_4_scores(tmp_path):
    """The same answer and graders as a run of AgentV 4.42.4, which scored the case 12/18 =
    0.667 (the 18th grader: an unnamed contains France, named contains-France)."""
    cli_agent(tmp_path)
    entries = [{"name": name, **grader} for name, (grader, _, _) in
               AGENTV_442_DETERMINISTIC.items()]
    entries.append({"type": "contains", "value": "France"})
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(json.dumps({"target": "agent", "tests": [
        {"id": "det", "input": "What is the capital of France?", "assertions": entries}]}))
    record = assay.evaluate(suite).records[0]
    scores = {s.name: s for s in record.scores}
    assert set(scores) == {*AGENTV_442_DETERMINISTIC, "contains-France"}
    for name, (_, expected, text) in AGENTV_442_DETERMINISTIC.items():
        assert scores[name].value == expected, name
        if text is not None:
            assert (scores[name].hits or scores[name].misses) == [text], name
    assert record.score == pytest.approx(12 / 18)


def test_each_grader_type_becomes_the_evaluator_that_does_it(tmp_path):
    write(tmp_path / "prompts" / "judge.md", "Judge {{output}} against {{criteria}}.\n")
    suite = write(tmp_path / "EVAL.yaml", """
        tests:
          - id: t
            criteria: Says hello
            input: hi
            assertions:
              - {type: contains, value: hello}
              - {type: llm_grader, name: from_file, prompt: "file://prompts/judge.md"}
              - {type: rubrics, criteria: [Is polite, {id: short, outcome: Is short}]}
              - {type: python, value: "'hello' in output", weight: 2}
              - {type: javascript, name: js, value: "output.length < 100"}
              - {type: webhook, value: "http://127.0.0.1:9/judge"}
              - {type: code-grader, command: "python3 check.py --strict"}
              - Greets the user
              - Does not ramble
              - {type: semantic_similarity, name: assay_own}
        """)
    write(tmp_path / "check.py", "print('{}')\n")
    graders = load_any(suite, targets=False).cases[0].evaluators or []
    by_name = {g.name: g for g in graders}
    assert [g.name for g in graders] == [
        "contains-hello", "from_file", "rubrics", "python", "js", "webhook", "code-grader",
        "rubrics-2", "assay_own"]  # generated names made distinct, as results key on them
    assert isinstance(by_name["contains-hello"], TextAssertion)
    assert by_name["from_file"].prompt == "Judge {{output}} against {{criteria}}.\n"
    assert isinstance(by_name["rubrics"], Rubric)
    assert [r.expected_outcome for r in by_name["rubrics"].rubrics] == ["Is polite", "Is short"]
    python = by_name["python"]
    assert isinstance(python, InlineCode) and python.language == "python" and python.weight == 2
    assert by_name["js"].language == "javascript"
    assert by_name["code-grader"].script == ["python3", "check.py", "--strict"]  # no shell
    assert by_name["assay_own"].type == "semantic_similarity"


@pytest.mark.parametrize("how", ["parent", "absolute", "link"])
def test_a_prompt_file_outside_the_suites_folder_is_refused_unless_allowed(
        tmp_path, monkeypatch, how):
    """``file://../secret`` (or an absolute path, or a link out of the folder) would send a
    file of the machine to the judge: a located problem naming the way to allow it, and with
    ASSAY_ALLOW_OUTSIDE_FILES=1 the file is read."""
    monkeypatch.delenv("ASSAY_ALLOW_OUTSIDE_FILES", raising=False)
    secret = write(tmp_path / "secret.md", "SECRET-4242 {{output}}\n")
    folder = tmp_path / "suite"
    ref = {"parent": "../secret.md", "absolute": str(secret), "link": "prompts/p.md"}[how]
    if how == "link":
        (folder / "prompts").mkdir(parents=True)
        (folder / "prompts" / "p.md").symlink_to(secret)
    suite = write(folder / "EVAL.yaml", f"""
        tests:
          - id: t
            criteria: Says hello
            input: hi
            assertions:
              - {{type: llm-grader, name: g, prompt: "file://{ref}"}}
        """)
    column = suite.read_text().splitlines()[5].index('"file://') + 1
    [problem] = check_any(suite, targets=False)[1]
    assert (problem.line, problem.column) == (6, column), problem
    assert f"file://{ref} is outside the suite's folder {folder}" in problem.message
    assert "set ASSAY_ALLOW_OUTSIDE_FILES=1 to allow files outside it" in problem.message
    assert "SECRET-4242" not in str(problem)
    result = CliRunner().invoke(app, ["validate", str(suite)])
    out = "".join(result.output.split())
    assert result.exit_code == 2 and "".join(f"{suite}:6:{column}".split()) in out, out
    assert "ASSAY_ALLOW_OUTSIDE_FILES=1" in out
    assert result.exception is None or isinstance(result.exception, SystemExit)
    monkeypatch.setenv("ASSAY_ALLOW_OUTSIDE_FILES", "1")
    [grader] = load_any(suite, targets=False).cases[0].evaluators or []
    assert isinstance(grader, LLMJudge) and grader.prompt.startswith("SECRET-4242")


def test_text_criteria_are_one_rubric_weighted_by_their_number(tmp_path):
    """AgentV 4: [contains, "crit1", "crit2"] -> contains (weight 1) + rubrics (weight 2)."""
    suite = write(tmp_path / "EVAL.yaml", """
        tests:
          - id: t
            input: hi
            assertions:
              - {type: contains, value: hello}
              - Greets the user
              - Does not ramble
        """)
    graders = load_any(suite, targets=False).cases[0].evaluators or []
    assert [(g.name, g.weight) for g in graders] == [("contains-hello", 1.0), ("rubrics", 2.0)]
    assert [r.expected_outcome for r in graders[1].rubrics] == ["Greets the user",
                                                                "Does not ramble"]


def test_suite_assertions_follow_each_tests_own_unless_skipped(tmp_path):
    suite = write(tmp_path / "EVAL.yaml", """
        assertions:
          - {type: is-json, name: json}
        tests:
          - id: own
            input: a
            assertions: [{type: contains, value: x}]
          - id: skips
            input: b
            execution: {skip_defaults: true}
            assertions: [{type: contains, value: y}]
          - id: none
            input: c
        """)
    cases = {c.case.id: c for c in load_any(suite, targets=False).cases}
    assert [g.name for g in cases["own"].evaluators] == ["contains-x", "json"]
    assert [g.name for g in cases["skips"].evaluators] == ["contains-y"]
    assert cases["none"].evaluators is None  # the suite's: its assertions
    assert [g.name for g in load_any(suite, targets=False).evaluators] == ["json"]


def test_inputs_and_expected_outputs_as_agentv_4_expands_them(tmp_path):
    suite = write(tmp_path / "EVAL.yaml", """
        tests:
          - id: text
            criteria: c
            input: What is 2+2?
          - id: messages
            criteria: c
            input:
              - {role: system, content: You are terse.}
              - {role: user, content: Hi}
            expected_output:
              - {role: assistant, content: Hello}
          - id: data
            criteria: c
            input: {question: capital, country: France}
            expected_output: {city: Paris}
        """)
    cases = {c.case.id: c.case for c in load_any(suite, targets=False).cases}
    assert cases["text"].input == "What is 2+2?"
    assert [m.role for m in cases["messages"].input] == ["system", "user"]
    assert cases["messages"].expected_output == "Hello"
    assert cases["messages"].metadata["expected_messages"] == [
        {"role": "assistant", "content": "Hello"}]
    assert cases["data"].input == {"question": "capital", "country": "France"}
    assert cases["data"].expected_output == {"city": "Paris"}
    prefixed = write(tmp_path / "prefixed.yaml", """
        input: Be brief.
        tests:
          - {id: prefixed, criteria: c, input: Hello}
          - {id: alone, criteria: c, input: Hello, execution: {skip_defaults: true}}
        """)
    cases = {c.case.id: c.case for c in load_any(prefixed, targets=False).cases}
    assert [(m.role, m.content) for m in cases["prefixed"].input] == [
        ("user", "Be brief."), ("user", "Hello")]
    assert cases["alone"].input == "Hello"


def test_agentv_4_files_are_a_format_of_their_own(tmp_path):
    v4 = write(tmp_path / "v4.yaml", "tests:\n  - {id: a, criteria: c, input: hi}\n")
    v2 = write(tmp_path / "v2.yaml", "evalcases:\n  - {id: a, expected_outcome: c, "
               "input: hi}\n")
    assert type(find_format(v4)).__name__ == "AgentV4Yaml" or \
        find_format(v4).__name__ == "AgentV4Yaml"
    assert getattr(find_format(v2), "__name__", "") == "EvalYaml"
    assert load_any(v4, targets=False).metadata["format"] == "agentv4"
    assert "format" not in load_any(v2, targets=False).metadata


# -- problems, each located ----------------------------------------------------------------


def test_every_problem_of_an_agentv_4_file_is_located(tmp_path):
    suite = write(tmp_path / "EVAL.yaml", """
        description: bad
        workspace:
          repos: []
        tests:
          - id: a
            criteria: x
            input: hi
            assertions:
              - type: contains
              - type: regex
                value: "(unclosed"
              - type: llm-grader
                prompt: ./prompts/quality.md
              - type: frobnicate
              - type: webhook
                value: ftp://x
              - type: contains
                value: Paris
                weight: -1
              - type: llm-grader
                prompt: "file://missing.md"
              - type: llm-grader
                name: g2
                prompt: "Is {{outpt}} ok?"
              - type: contains
                value: P
                negate: yes please
              - type: llm-grader
                name: g3
                negate: true
          - id: a
            input: hi
          - id: c
            criteria: y
            input: 42
            vars: {x: 1}
        """)
    suite_problems = check_any(suite, targets=False)[1]
    found = [(p.line, p.column, p.message) for p in suite_problems]
    assert [(line, column) for line, column, _ in found] == [
        (2, 1), (9, 9), (10, 9), (13, 17), (14, 15), (16, 16), (19, 17), (21, 17), (24, 17),
        (27, 17), (30, 17), (31, 5), (31, 9), (35, 12), (36, 5)]
    messages = [m for _, _, m in found]
    assert messages[0].startswith("'workspace' (workspaces (repositories, setup scripts)) is "
                                  "AgentV 4's and assay does not do it")
    assert "contains needs value" in messages[1]
    assert "'(unclosed' does not compile" in messages[2]
    assert "looks like a file, but AgentV 4 sends it to the judge as the prompt's text" in \
        messages[3]
    assert messages[4].startswith("unknown grader type 'frobnicate'")
    assert "'ftp://x' is not an http:// or https:// URL" in messages[5]
    assert messages[6] == "weight -1 is negative"
    assert messages[7].startswith("prompt file missing.md not found")
    assert "unknown variable(s) {{outpt}}" in messages[8]
    assert "negate" in messages[9]
    assert messages[10].startswith("negate on a llm-grader grader is not supported")
    assert messages[11] == "a test needs something to judge it by"
    assert messages[12].startswith("duplicate case id 'a'")
    assert messages[13].startswith("input must be text, a message, messages or data")
    assert messages[14].startswith("'vars' (test variables")
    rendered = [str(p) for p in suite_problems]
    assert all(line.startswith(f"{suite}:") for line in rendered)


def test_a_duplicate_grader_name_across_test_and_suite_is_located(tmp_path):
    suite = write(tmp_path / "EVAL.yaml", """
        assertions:
          - {type: contains, value: x, name: same}
        tests:
          - id: a
            input: hi
            assertions:
              - {type: contains, value: x, name: same}
              - {type: contains, value: x}
              - {type: contains, value: x}
        """)
    (problem,) = check_any(suite, targets=False)[1]
    assert (problem.line, problem.column) == (2, 5)
    assert problem.message.startswith("duplicate grader name 'same' (also at line 7)")
    fixed = suite.read_text().replace("name: same}\ntests", "name: other}\ntests")
    suite.write_text(fixed)
    graders = load_any(suite, targets=False).cases[0].evaluators or []
    assert [g.name for g in graders] == ["same", "contains-x", "contains-x-2", "other"]


def test_validate_prints_agentv_4_problems_as_file_line_col(tmp_path):
    write(tmp_path / "EVAL.yaml", """
        tests:
          - id: a
            input: hi
            assertions:
              - {type: equals}
        """)
    out = assay_cli(tmp_path, "validate", "EVAL.yaml")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "EVAL.yaml:5:9: text_assertion evaluator equals needs value" in out.stdout + \
        out.stderr


def test_suite_assertions_required_and_skip_defaults_as_agentv_4_runs_them(tmp_path):
    """AgentV 4.42.4 on these files: own 0.5 (own_paris 1, suite_paris 1, is-json 0 at weight
    2), skips 1 (starts-with-The only), defaults 0 (contains-Rome 0 required, suite_paris 1,
    is-json 0). The graders and their scores are the same here; a failed required grader
    fails its case in both, and where AgentV 4 then reports the case's score as 0, assay
    keeps the weighted mean (0.25), so how far off it was stays visible."""
    cli_agent(tmp_path)
    suite = write(tmp_path / "EVAL.yaml", """
        target: agent
        assertions:
          - {name: suite_paris, type: contains, value: Paris}
          - {type: is-json, weight: 2}
        tests:
          - id: own
            criteria: names Paris
            input: What is the capital of France?
            assertions:
              - {name: own_paris, type: icontains, value: paris}
          - id: skips
            criteria: x
            input: hi
            execution: {skip_defaults: true}
            assertions:
              - {type: starts-with, value: The}
          - id: defaults
            criteria: y
            input: hello
            assertions:
              - {type: contains, value: Rome, required: true}
        """)
    records = {r.case_id: r for r in assay.evaluate(suite).records}
    assert {k: [(s.name, s.value) for s in r.scores] for k, r in records.items()} == {
        "own": [("own_paris", 1.0), ("suite_paris", 1.0), ("is-json", 0.0)],
        "skips": [("starts-with-The", 1.0)],
        "defaults": [("contains-Rome", 0.0), ("suite_paris", 1.0), ("is-json", 0.0)]}
    assert (records["own"].score, records["skips"].score) == (0.5, 1.0)
    assert records["defaults"].verdict.value == "fail" and records["defaults"].score == 0.25


def test_composite_and_metric_graders_are_assays_of_those_names(tmp_path):
    suite = write(tmp_path / "EVAL.yaml", """
        tests:
          - id: t
            input: hi
            assertions:
              - type: composite
                name: both
                assertions:
                  - {type: contains, value: a, name: has_a}
                  - {type: icontains, value: b, name: has_b}
                aggregator: {type: weighted_average, weights: {has_a: 3}}
              - {type: latency, threshold: 5000}
              - {type: token-usage, max_total: 100}
              - type: tool-trajectory
                mode: any_order
                minimums: {search: 1}
        """)
    both, latency, tokens, trajectory = load_any(suite, targets=False).cases[0].evaluators
    assert both.type == "composite" and [m.name for m in both.evaluators] == ["has_a", "has_b"]
    assert all(isinstance(m, TextAssertion) for m in both.evaluators)
    assert both.aggregator.weights == {"has_a": 3}
    assert (latency.type, latency.threshold_ms) == ("latency", 5000)
    assert (tokens.type, tokens.max_total) == ("token_usage", 100)
    assert trajectory.type == "tool_trajectory"


def test_an_execution_that_is_not_a_mapping_is_a_problem_not_a_traceback(tmp_path):
    suite = write(tmp_path / "EVAL.yaml", """
        input: Be brief.
        tests:
          - {id: a, criteria: c, input: hi, execution: [skip_defaults]}
        """)
    (problem,) = check_any(suite, targets=False)[1]
    assert (problem.line, problem.column) == (3, 48)
    assert problem.message.startswith("execution must be a mapping, not a list")
