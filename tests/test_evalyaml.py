"""EVAL.yaml and JSONL suites load into the Suite shape, and bad ones report every problem."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay._util.yaml_source import YamlSyntaxError, load_yaml
from assay.errors import ConfigError, EvaluationError
from assay.judges.code.script import CodeJudge
from assay.judges.combinators.composite import Composite
from assay.judges.deterministic.match import Contains, ExactMatch
from assay.judges.llm.llm_judge import DEFAULT_PROMPT, LLMJudge
from assay.judges.llm.rubric import Rubric
from assay.suites.evalyaml import (
    Problem,
    SuiteError,
    check_suite,
    load_eval_yaml,
    load_suite,
    validate_eval_yaml,
    validate_suite,
)
from assay.targets.config import read_targets
from assay.types.messages import Message


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


VALID = """
    description: Math and greetings
    name: qa
    dataset: demo
    version: "1.0"
    metadata: {owner: team-a}
    execution:
      target: my_agent
      evaluators:
        - name: quality
          type: llm_judge
          prompt: ./prompts/quality.md
          weight: 2
          config:
            temperature: 0.2
        - name: exact
          type: exact_match
          weight: 0.5
        - name: script
          type: code_judge
          script: python3 judge.py
    evalcases:
      - id: addition
        expected_outcome: Answers 42
        input: What is 15 + 27?
        expected_output: "42"
        note: arithmetic only
        guidelines: [Be brief]
        metadata: {difficulty: easy}
      - id: chat
        input_messages:
          - role: system
            content: You are kind.
          - role: user
            content: Say hello
        expected_messages:
          - role: assistant
            content: Hello!
        rubrics:
          - Is polite
          - {id: greets, expected_outcome: Says hello, weight: 2}
      - id: override
        input: {question: "What is 2+2?", locale: en}
        execution:
          target: other_agent
          evaluators:
            - type: contains
              search_text: "4"
"""


@pytest.fixture
def valid_suite(tmp_path: Path) -> Path:
    write(tmp_path, "prompts/quality.md", "Grade {{candidate_answer}} for {{question}}.\n")
    return write(tmp_path, "EVAL.yaml", VALID)


def test_valid_suite_loads_into_the_expected_suite(valid_suite: Path, tmp_path: Path) -> None:
    suite = load_eval_yaml(valid_suite)

    assert suite.name == "qa"
    assert suite.description == "Math and greetings"
    assert suite.source == valid_suite
    assert suite.target == "my_agent"
    assert suite.metadata == {"owner": "team-a", "dataset": "demo", "version": "1.0"}

    quality, exact, script = suite.evaluators
    assert isinstance(quality, LLMJudge)
    assert (quality.name, quality.weight, quality.temperature) == ("quality", 2.0, 0.2)
    assert quality.prompt == "Grade {{candidate_answer}} for {{question}}.\n"
    assert isinstance(exact, ExactMatch) and exact.weight == 0.5
    assert isinstance(script, CodeJudge)
    assert script.cwd == str(tmp_path.resolve())

    addition, chat, override = suite.cases
    assert addition.case.id == "addition"
    assert addition.case.input == "What is 15 + 27?"
    assert addition.case.expected_output == "42"
    assert addition.case.expected_outcomes == ["Answers 42"]
    assert addition.case.guidelines == ["Be brief"]
    assert addition.case.metadata == {"difficulty": "easy", "note": "arithmetic only"}
    assert addition.evaluators is None and addition.target is None
    assert suite.evaluators_for(addition) == suite.evaluators

    assert chat.case.input == [Message(role="system", content="You are kind."),
                               Message(role="user", content="Say hello")]
    assert chat.case.metadata["expected_messages"] == [
        {"role": "assistant", "content": "Hello!"}]
    assert chat.case.expected_output == "Hello!"
    assert chat.evaluators is not None
    rubric, *rest = chat.evaluators
    assert isinstance(rubric, Rubric)
    assert [(r.id, r.expected_outcome, r.weight) for r in rubric.rubrics] == [
        ("r1", "Is polite", 1.0), ("greets", "Says hello", 2.0)]
    assert rest == suite.evaluators  # the rubric is added to the suite's evaluators

    assert override.case.input == {"question": "What is 2+2?", "locale": "en"}
    assert override.target == "other_agent"
    assert override.evaluators is not None
    assert [type(e) for e in override.evaluators] == [Contains]


def test_validate_of_a_valid_suite_is_empty(valid_suite: Path) -> None:
    assert validate_eval_yaml(valid_suite) == []
    assert validate_suite(valid_suite) == []


def test_cases_alias_and_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "smoke.yml", """
        cases:
          - id: 1
            input: hi
    """)
    suite = load_suite(path)
    assert suite.name == "smoke"  # no name or dataset: the file's stem
    assert suite.cases[0].case.id == "1"
    # AgentV's rule: no evaluator list means llm_judge with its default prompt.
    assert len(suite.evaluators) == 1
    assert isinstance(suite.evaluators[0], LLMJudge)
    assert suite.evaluators[0].prompt == DEFAULT_PROMPT


def test_evaluator_kind_shorthand(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", """
        evaluator: exact_match
        evalcases:
          - {id: a, input: x, expected_output: x}
          - {id: b, input: y, evaluator: contains, evaluators: [{type: contains, search_text: y}]}
          - {id: c, input: z, evaluator: llm_judge}
    """)
    suite = load_eval_yaml(path)
    assert [type(e) for e in suite.evaluators] == [ExactMatch]
    assert suite.cases[0].evaluators is None
    assert suite.cases[1].evaluators is not None
    assert [type(e) for e in suite.cases[1].evaluators] == [Contains]
    assert suite.cases[2].evaluators is not None
    assert [type(e) for e in suite.cases[2].evaluators] == [LLMJudge]


def test_composite_members_read_their_prompt_files(tmp_path: Path) -> None:
    write(tmp_path, "p/acc.md", "Accurate? {{candidate_answer}}")
    path = write(tmp_path, "s.yaml", """
        execution:
          evaluators:
            - name: both
              type: composite
              evaluators:
                - {name: acc, type: llm_judge, prompt: p/acc.md}
                - {name: has, type: contains, search_text: ok}
              aggregator: {type: weighted_average, weights: {acc: 2, has: 1}}
        evalcases:
          - {id: a, input: q}
    """)
    suite = load_eval_yaml(path)
    composite = suite.evaluators[0]
    assert isinstance(composite, Composite)
    acc = composite.members[0]
    assert isinstance(acc, LLMJudge) and acc.prompt == "Accurate? {{candidate_answer}}"


def test_inline_prompt_is_kept_as_text(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", """
        execution:
          evaluators:
            - name: inline
              type: llm_judge
              prompt: |
                Is {{candidate_answer}} relevant to {{question}}?
        evalcases: [{id: a, input: q}]
    """)
    judge = load_eval_yaml(path).evaluators[0]
    assert isinstance(judge, LLMJudge)
    assert judge.prompt == "Is {{candidate_answer}} relevant to {{question}}?\n"


def test_evaluator_target_resolves_to_the_judge_model(tmp_path: Path) -> None:
    targets = write(tmp_path, ".assay/targets.yaml", """
        targets:
          - {name: agent, provider: python, function: "agent:run", judge_target: judge}
          - {name: judge, provider: "fake:judge"}
    """)
    path = write(tmp_path, "s.yaml", """
        execution:
          target: agent
          evaluators:
            - {name: q, type: llm_judge, target: judge}
            - {name: m, type: llm_judge, target: "openai:gpt-4o-mini"}
        evalcases: [{id: a, input: q}]
    """)
    suite = load_eval_yaml(path, targets=targets)
    q, m = suite.evaluators
    assert isinstance(q, LLMJudge) and q.model == "fake:judge"
    assert isinstance(m, LLMJudge) and m.model == "openai:gpt-4o-mini"
    assert suite.judge_target == "fake:judge"  # the judge target's model judges by default
    # Already-read targets work as well as a path.
    assert load_eval_yaml(path, targets=read_targets(targets)).evaluators[0].model == \
        "fake:judge"


def test_content_segments_and_file_inputs(tmp_path: Path) -> None:
    write(tmp_path, "code.py", "print('hi')\n")
    path = write(tmp_path, "s.yaml", """
        evalcases:
          - id: review
            input_messages:
              - role: user
                content:
                  - {type: text, value: "Review this:"}
                  - {type: file, value: code.py}
    """)
    case = load_eval_yaml(path).cases[0].case
    assert isinstance(case.input, list)
    text = case.input[0].text()
    assert text.startswith("Review this:")
    assert "print('hi')" in text and 'path="code.py"' in text


def test_every_problem_is_collected_in_one_pass(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", """
        surprise: 1
        execution:
          evaluators:
            - {type: nope}
            - {type: contains, search_text: x, weight: -1}
        evalcases:
          - {id: a, input: x}
          - {id: a, input: y}
          - {input: z}
          - {id: c}
    """)
    with pytest.raises(SuiteError) as caught:
        load_eval_yaml(path)
    error = caught.value
    assert isinstance(error, EvaluationError)
    assert error.code == "invalid_suite"
    where = [(p.line, p.column) for p in error.problems]
    assert where == [(1, 1), (4, 14), (5, 48), (8, 10), (9, 5), (10, 5)]
    assert "6 problem(s)" in error.message
    assert f"{path}:4:14: unknown evaluator type 'nope'" in error.message


def test_problem_renders_like_a_compiler(tmp_path: Path) -> None:
    problem = Problem("s.yaml", 3, 7, "weight -1 is negative", "a finite number >= 0")
    assert str(problem) == "s.yaml:3:7: weight -1 is negative (expected: a finite number >= 0)"
    assert str(Problem("c.jsonl", 4, None, "bad")) == "c.jsonl:4: bad"
    assert str(Problem("c.jsonl", None, None, "unreadable")) == "c.jsonl: unreadable"


def test_yaml_source_keeps_positions_of_keys_and_items() -> None:
    loaded = load_yaml("a:\n  - x\n  - {b: 1}\nc: d\n", "f.yaml")
    assert loaded.data == {"a": ["x", {"b": 1}], "c": "d"}
    source = loaded.source
    assert (source.keys[("a",)].line, source.keys[("a",)].column) == (1, 1)
    assert (source.keys[("a", 1)].line, source.keys[("a", 1)].column) == (3, 5)
    assert (source.keys[("a", 1, "b")].line, source.keys[("a", 1, "b")].column) == (3, 6)
    assert (source.values[("c",)].line, source.values[("c",)].column) == (4, 4)
    # An unknown deeper path falls back to its nearest located ancestor.
    assert source.locate(("a", 1, "b", "zz")).column == 6


def test_yaml_duplicate_keys_and_syntax_errors() -> None:
    loaded = load_yaml("a: 1\nb: 2\na: 3\n", "f.yaml")
    assert [str(p) for p in loaded.problems] == [
        "f.yaml:3:1: duplicate key 'a' (first at line 1); the last one would silently win "
        "(expected: each key once per mapping)"]
    with pytest.raises(YamlSyntaxError) as caught:
        load_yaml("a: [1, 2\nb: 3\n", "f.yaml")
    assert (caught.value.problem.line, caught.value.problem.column) == (2, 2)
    assert caught.value.code == "invalid_yaml"


# -- JSONL --------------------------------------------------------------------------------


def test_jsonl_cases_with_sidecar(tmp_path: Path) -> None:
    write(tmp_path, "math.yaml", """
        description: From JSONL
        execution:
          target: calc
          evaluators: [{type: exact_match}]
    """)
    path = write(tmp_path, "math.jsonl", """
        {"id": "add", "input": "1+1", "expected_output": "2", "expected_outcome": "two"}

        {"id": "mul", "input_messages": [{"role": "user", "content": "2*3"}], "note": "n"}
    """)
    suite = load_suite(path)
    assert suite.name == "math" and suite.description == "From JSONL"
    assert suite.target == "calc"
    assert [type(e) for e in suite.evaluators] == [ExactMatch]
    assert [c.case.id for c in suite.cases] == ["add", "mul"]
    assert suite.cases[0].case.expected_outcomes == ["two"]
    assert suite.cases[1].case.metadata == {"note": "n"}


def _seven_case_jsonl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A JSONL suite of seven cases, over one chunk (of three), one with its own target and
    evaluators."""
    import assay.suites.evaljsonl as evaljsonl

    monkeypatch.setattr(evaljsonl, "CHUNK_CASES", 3)
    write(tmp_path, "s.yaml", "execution:\n  evaluators: [{type: exact_match}]\n"
          "  target: agent\n")
    lines = [f'{{"id": "c{i}", "input": "q{i}", "expected_output": "a{i}"}}' for i in range(7)]
    lines[4] = ('{"id": "c4", "input": "q4", "execution": {"target": "other", "evaluators": '
                '[{"name": "x", "type": "contains", "search_text": "a"}, '
                '{"name": "y", "type": "exact_match"}]}}')
    return write(tmp_path, "s.jsonl", "\n".join(lines))


def test_a_small_jsonl_suite_over_one_chunk_keeps_its_checked_cases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Read once: the cases its check built are the suite's, so a run does not parse and
    # validate the file a second time, and the file may change or go once it is loaded.
    from assay.suites.model import FactsGatherer

    path = _seven_case_jsonl(tmp_path, monkeypatch)
    suite = load_suite(path)
    path.unlink()
    assert suite.case_source is None
    assert [item.case.id for item in suite.iter_cases()] == [f"c{i}" for i in range(7)]
    assert suite.cases[4].target == "other"
    assert [e.name for e in suite.cases[4].evaluators or []] == ["x", "y"]
    gatherer = FactsGatherer(suite)
    for item in suite.cases:
        gatherer.add(item)
    assert suite.facts() == gatherer.finish()
    assert suite.facts().cases == 7 and suite.facts().targets == {"agent", "other"}


def test_a_jsonl_file_over_the_size_kept_is_streamed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.suites.evalyaml as evalyaml

    path = _seven_case_jsonl(tmp_path, monkeypatch)
    monkeypatch.setattr(evalyaml, "KEEP_BYTES", path.stat().st_size - 1)
    suite = load_suite(path)
    assert suite.case_source is not None and suite.cases == []
    assert [item.case.id for item in suite.iter_cases()] == [f"c{i}" for i in range(7)]


def test_a_streamed_jsonl_suite_gets_its_facts_from_the_validating_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file over one chunk is streamed: each pass re-reads and re-validates it. The facts the
    # runner checks (and the fingerprint that guards resumes) come from the validating pass,
    # so a run reads the file twice (validate, run), not three times, and they are the same
    # facts a pass of their own finds.
    import assay.suites.evalyaml as evalyaml

    monkeypatch.setattr(evalyaml, "KEEP_CASES", 5)  # more cases than a small file keeps
    suite = load_suite(_seven_case_jsonl(tmp_path, monkeypatch))
    assert suite.case_source is not None and suite.count() == 7
    reads = 0
    source = suite.case_source

    def counted() -> Iterator[Any]:
        nonlocal reads
        reads += 1
        yield from source()

    suite.case_source = counted
    facts = suite.facts()
    assert reads == 0
    from assay.suites.model import FactsGatherer

    gatherer = FactsGatherer(suite)
    for item in suite.iter_cases():
        gatherer.add(item)
    again = gatherer.finish()
    assert reads == 1
    assert facts == again
    assert facts.cases == 7 and facts.targets == {"agent", "other"}
    assert facts.fingerprint and not facts.duplicate_names


@pytest.mark.parametrize(("written", "problem"), [
    # no database keeps NUL in a key (PostgreSQL refuses it, failing a run's batch of results)
    ("b\\u0000", "case id holds a NUL character"),
    # an empty id was 'case id must be non-empty text, not text': it is text, and blank
    ("  ", "case id is blank"),
])
def test_a_case_id_no_run_can_keep_is_refused_at_its_line(tmp_path: Path, written: str,
                                                         problem: str) -> None:
    """The suite check refuses an id that names nothing or that no store keeps, naming the
    line and saying what is wrong with it."""
    write(tmp_path, "c.yaml", "execution:\n  evaluators:\n    - {type: exact_match}\n")
    path = write(tmp_path, "c.jsonl", f"""
        {{"id": "a", "input": "x"}}
        {{"id": "{written}", "input": "y"}}
    """)
    rendered = [str(p) for p in validate_suite(path)]
    assert len(rendered) == 1
    assert rendered[0].startswith(f"{tmp_path / 'c.jsonl'}:2: {problem}"), rendered


def test_jsonl_problems_name_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "c.yaml", "execution:\n  evaluators:\n    - {type: code_judge}\n")
    path = write(tmp_path, "c.jsonl", """
        {"id": "a", "input": "x"}
        {"id": "a", "input": "y"}
        {"id": "b" "input": "z"}
        {"id": "c", "colour": "red", "input": "w"}
        ["not", "a", "case"]
    """)
    problems = validate_suite(path)
    rendered = [str(p) for p in problems]
    assert rendered[0].startswith(f"{tmp_path / 'c.jsonl'}:2: duplicate case id 'a'")
    assert rendered[1].startswith(f"{tmp_path / 'c.jsonl'}:3:12: invalid JSON")
    assert rendered[2].startswith(f"{tmp_path / 'c.jsonl'}:4: unknown case key 'colour'")
    assert rendered[3].startswith(f"{tmp_path / 'c.jsonl'}:5: a case must be a mapping")
    assert rendered[4].startswith(f"{tmp_path / 'c.yaml'}:3:7: code_judge evaluator needs "
                                  "'script'")
    assert len(problems) == 5


def test_unsupported_extension_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "cases.csv", "id,input\n")
    with pytest.raises(ConfigError, match=r"unsupported suite file type '\.csv'"):
        check_suite(path)


def test_missing_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    problems = validate_eval_yaml(tmp_path / "nope.yaml")
    assert len(problems) == 1
    assert "cannot read file" in problems[0].message


def test_targets_file_is_discovered_above_the_suite(tmp_path: Path) -> None:
    write(tmp_path, ".agentv/targets.yaml", """
        targets:
          - {name: judge, provider: "fake:big-judge"}
    """)
    path = write(tmp_path, "suites/math/EVAL.yaml", """
        execution:
          target: judge
          evaluators: [{name: q, type: llm_judge, target: judge}]
        evalcases: [{id: a, input: x}]
    """)
    judge = load_eval_yaml(path).evaluators[0]
    assert isinstance(judge, LLMJudge) and judge.model == "fake:big-judge"
    # Without targets, a name that is not a model cannot name a judge.
    problems = validate_eval_yaml(path, targets=False)
    assert [(p.line, p.column) for p in problems] == [(3, 51)]
    assert problems[0].message == "target 'judge' is not a model and no targets file was found"
    with pytest.raises(ConfigError, match="does not exist"):
        load_eval_yaml(path, targets=tmp_path / "missing.yaml")


async def test_example_suite_in_test_data_loads_and_its_agent_runs() -> None:
    from assay.targets.config import build_target, load_targets_for

    path = Path(__file__).parent / "data" / "suites" / "math" / "EVAL.yaml"
    suite = load_eval_yaml(path)
    assert [c.case.id for c in suite.cases] == ["addition", "multiplication", "greeting"]
    assert suite.evaluators_for(suite.cases[1])[0].type == "rubric"
    targets = load_targets_for(path)
    assert targets is not None and suite.target is not None
    config = targets.get(suite.target)
    assert config is not None
    agent = build_target(config, path.parent)
    outputs = [(await agent.run(item.case)).output for item in suite.cases]
    assert outputs == ["42", "6", "hello"]


def test_duplicate_ids_in_a_large_jsonl_are_found_across_chunks(tmp_path):
    """The duplicate finder keeps fixed memory (a bitset) yet names both lines."""
    import json

    from assay.suites.evalyaml import validate_suite

    path = tmp_path / "big.jsonl"
    ids = [f"c{i}" for i in range(2500)]
    ids[2399] = "c5"
    path.write_text("".join(json.dumps({"id": i, "input": "x"}) + "\n" for i in ids))
    (tmp_path / "big.yaml").write_text("execution:\n  evaluators:\n    - type: exact_match\n")
    problems = validate_suite(path)
    assert [(p.line, p.message) for p in problems] == [
        (2400, "duplicate case id 'c5' (first at line 6)")]
