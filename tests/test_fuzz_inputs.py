"""Fuzzing every input assay reads: suite files, UiPath projects, JSONL datasets, targets files
and judge responses.

Whatever the input, the only acceptable outcomes are a result, a clear error (an
:class:`assay.errors.EvaluationError`, located where the format allows) or, for judge
responses, an error *score*; never another exception type, never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from assay._util.yaml_source import Problem
from assay.errors import EvaluationError
from assay.judges import EvalContext, LLMJudge, SemanticSimilarity, build
from assay.judges.base import Evaluator
from assay.judges.llm.llm_judge import JudgeVerdict
from assay.judges.llm.rubric import ChecklistCheck, ChecklistVerdict, RangeCheck, RangeVerdict
from assay.judges.llm.rubric import answer_schema as rubric_schema
from assay.judges.llm.semantic_similarity import SimilarityVerdict
from assay.judges.llm.strict_json_similarity import verdict_for
from assay.judges.llm.trajectory import TrajectoryVerdict
from assay.llm import EngineConfig, JudgeEngine, RetryPolicy, extract_json, register_service
from assay.suites.evalyaml import check_suite, load_suite
from assay.suites.uipath import load_uipath
from assay.targets.config import build_target, read_targets
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

pytestmark = [pytest.mark.fuzz, pytest.mark.timeout(60)]  # a parser that hangs fails

FUZZ = settings(deadline=None, database=None, max_examples=150,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

UIPATH_PROJECT = Path(__file__).parent / "data" / "uipath_project"

VALID_SUITE = """\
description: the base every mutation starts from
execution:
  target: agent
  evaluators:
    - {name: similar, type: semantic_similarity, weight: 2}
    - {name: judge, type: llm_judge, prompt: "Q: {{question}} A: {{candidate_answer}}"}
    - {name: has_it, type: contains, search_text: Paris}
evalcases:
  - id: one
    input: What is the capital of France?
    expected_output: Paris
    expected_outcome: Names Paris
    rubrics: [Names Paris, {id: polite, expected_outcome: Is polite, weight: 2}]
  - id: two
    input_messages:
      - {role: system, content: Be brief}
      - {role: user, content: "Capital of Japan?"}
    expected_messages:
      - {role: assistant, content: Tokyo}
    metadata: {search_text: Tokyo}
    note: a note
  - id: three
    input: {question: "2+2"}
    expected_output: {answer: 4}
    execution:
      evaluators:
        - {type: exact_match}
"""

SUITE_KEYS = ("description", "name", "dataset", "version", "execution", "evalcases", "cases",
              "evaluator", "target", "metadata", "id", "input", "input_messages",
              "expected_output", "expected_messages", "expected_outcome", "outcome",
              "rubrics", "note", "guidelines", "reference_context", "evaluators", "type",
              "role", "content", "prompt", "weight", "search_text", "tool_calls", "value",
              "threshold", "score_ranges", "score_range", "required", "required_min_score",
              "aggregator", "evaluators", "conversation_id", "text", "file", "name")
EVALUATOR_TYPES = ("llm_judge", "semantic_similarity", "rubric", "contains", "exact_match",
                   "composite", "code_judge", "strict_json_similarity", "json_similarity",
                   "tool_trajectory", "llm_judge_trajectory", "nope")
UIPATH_KEYS = ("version", "id", "name", "evaluatorRefs", "evaluatorConfigs", "evaluations",
               "evaluationCriterias", "inputs", "expectedOutput", "expectedAgentBehavior",
               "evaluatorTypeId", "evaluatorConfig", "defaultEvaluationCriteria", "ref",
               "weight", "evaluatorWeights", "type", "category", "prompt", "model",
               "targetOutputKey", "searchText", "toolCallsOrder", "expectedClass",
               "mockingStrategy", "simulationInstructions", "temperature")
TARGET_KEYS = ("targets", "name", "provider", "function", "judge_target", "workers", "url",
               "headers", "command", "cwd", "timeout_s", "path", "max_retries")
VERDICT_KEYS = ("score", "justification", "hits", "misses", "reasoning", "keys", "key",
                "status", "extra_keys", "checks", "id", "satisfied", "overall_reasoning")


def leaves(nan: bool = True) -> st.SearchStrategy[Any]:
    return (st.none() | st.booleans() | st.integers() | st.integers(-(2 ** 70), 2 ** 70)
            | st.floats(allow_nan=nan, allow_infinity=nan) | st.text(max_size=20))


def values(keys: tuple[str, ...], nan: bool = True, json_keys: bool = False
           ) -> st.SearchStrategy[Any]:
    """Nested values whose mapping keys are mostly ones the format knows (text only, with
    ``json_keys``, so that the value survives a trip through JSON)."""
    key: st.SearchStrategy[Any] = st.sampled_from(keys) | st.text(max_size=8)
    if not json_keys:
        key = key | st.integers(-3, 3)
    return st.recursive(
        leaves(nan) | st.sampled_from(EVALUATOR_TYPES),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(key, inner, max_size=5),
        max_leaves=25)


def mutate(data: st.DataObject, document: Any, keys: tuple[str, ...]) -> Any:
    """Replace, delete or add at one to three random places of a parsed document."""
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        parent: Any = None
        place: Any = None
        node = document
        for _ in range(data.draw(st.integers(0, 5), label="depth")):
            if isinstance(node, dict) and node:
                step = data.draw(st.sampled_from(sorted(node, key=str)))
            elif isinstance(node, list) and node:
                step = data.draw(st.integers(0, len(node) - 1))
            else:
                break
            parent, place, node = node, step, node[step]
        action = data.draw(st.sampled_from(("replace", "delete", "add")), label="action")
        if parent is None:
            document = data.draw(values(keys))
        elif action == "delete":
            del parent[place]
        elif action == "add" and isinstance(node, dict):
            node[data.draw(st.sampled_from(keys))] = data.draw(values(keys))
        elif action == "add" and isinstance(node, list):
            node.insert(data.draw(st.integers(0, len(node))), data.draw(values(keys)))
        else:
            parent[place] = data.draw(values(keys))
    return document


def text_mutation(data: st.DataObject, text: str) -> str:
    """Cut, insert or duplicate a random slice of ``text``."""
    start = data.draw(st.integers(0, len(text)), label="start")
    end = data.draw(st.integers(start, min(len(text), start + 40)), label="end")
    action = data.draw(st.sampled_from(("cut", "insert", "duplicate")), label="edit")
    if action == "cut":
        return text[:start] + text[end:]
    if action == "duplicate":
        return text[:end] + text[start:end] + text[end:]
    return text[:start] + data.draw(st.text(max_size=10), label="inserted") + text[start:]


def clear_or_fine(fn: Callable[[], Any]) -> Any:
    """Call ``fn``: a value, or None when it raised a clear error. Anything else fails."""
    try:
        return fn()
    except EvaluationError as exc:
        assert exc.code and exc.message.strip(), exc
        return None


def check_suite_file(path: Path, *others: Path) -> None:
    """Both entry points agree: problems located in the file (or in ``others``, such as a
    JSONL file's sidecar), or a suite with cases."""
    suite, problems = clear_or_fine(lambda: check_suite(path)) or (None, None)
    loaded = clear_or_fine(lambda: load_suite(path))
    if problems is None:  # check_suite itself refused (it names the file)
        assert loaded is None
        return
    files = {str(f) for f in (path, *others)}
    assert all(isinstance(p, Problem) and p.file in files and p.message for p in problems)
    if problems:
        assert suite is None and loaded is None
        assert all(str(p).startswith(p.file) for p in problems)
    else:
        assert suite is not None and loaded is not None and loaded.count() >= 1


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def test_the_base_suite_is_valid(workdir: Path) -> None:
    path = workdir / "base.yaml"
    path.write_text(VALID_SUITE, encoding="utf-8")
    suite, problems = check_suite(path)
    assert problems == [] and suite is not None and suite.count() == 3


# -- EVAL.yaml ------------------------------------------------------------------------------------


@FUZZ
@given(values(SUITE_KEYS))
def test_random_yaml_documents(workdir: Path, document: Any) -> None:
    path = workdir / "random.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    check_suite_file(path)


@FUZZ
@given(st.text(max_size=300) | st.binary(max_size=200))
def test_random_text_and_bytes(workdir: Path, content: str | bytes) -> None:
    path = workdir / "text.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    check_suite_file(path)


def test_unprintable_character_is_a_located_problem(workdir: Path) -> None:
    """Found by fuzzing: the YAML reader's complaint escaped as a raw ``ReaderError``."""
    path = workdir / "control.yaml"
    path.write_text("evalcases:\n  - id: a\n    input: x\x9ey\n", encoding="utf-8")
    suite, problems = check_suite(path)
    assert suite is None
    assert [str(p).split(": ", 1)[0] for p in problems] == [f"{path}:3:13"]
    assert "U+009E" in problems[0].message


@settings(FUZZ, max_examples=300)
@given(st.data())
def test_mutations_of_a_valid_suite(workdir: Path, data: st.DataObject) -> None:
    path = workdir / "mutated.yaml"
    if data.draw(st.booleans(), label="structural"):
        document = mutate(data, yaml.safe_load(VALID_SUITE), SUITE_KEYS)
        path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    else:
        path.write_text(text_mutation(data, VALID_SUITE), encoding="utf-8")
    check_suite_file(path)


# -- JSONL datasets ------------------------------------------------------------------------------


def valid_cases() -> list[dict[str, Any]]:
    return list(yaml.safe_load(VALID_SUITE)["evalcases"])


@FUZZ
@given(st.data())
def test_jsonl_datasets(workdir: Path, data: st.DataObject) -> None:
    path = workdir / "cases.jsonl"
    sidecar = workdir / "cases.yaml"
    lines = []
    for _ in range(data.draw(st.integers(0, 6), label="lines")):
        kind = data.draw(st.sampled_from(("random", "text", "valid", "mutated")), label="kind")
        if kind == "random":
            lines.append(json.dumps(data.draw(values(SUITE_KEYS, nan=False))))
        elif kind == "text":
            lines.append(data.draw(st.text(max_size=60)))
        else:
            case = data.draw(st.sampled_from(valid_cases()))
            lines.append(json.dumps(case if kind == "valid" else mutate(data, case, SUITE_KEYS)))
    path.write_text("\n".join(lines), encoding="utf-8")
    head = data.draw(st.none() | values(SUITE_KEYS)
                     | st.just({"execution": yaml.safe_load(VALID_SUITE)["execution"]}),
                     label="sidecar")
    if head is None:
        sidecar.unlink(missing_ok=True)
    else:
        sidecar.write_text(yaml.safe_dump(head), encoding="utf-8")
    check_suite_file(path, sidecar)


# -- UiPath projects ------------------------------------------------------------------------------


Project = tuple[Path, dict[Path, str]]


@pytest.fixture(scope="module")
def uipath_copy(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A copy of the test UiPath project, with its files' original text."""
    root = tmp_path_factory.mktemp("uipath") / "project"
    shutil.copytree(UIPATH_PROJECT, root)
    return root, {p: p.read_text(encoding="utf-8") for p in root.rglob("*.json")}


@settings(FUZZ, max_examples=300)
@given(st.data())
def test_mutated_uipath_projects(uipath_copy: Project, data: st.DataObject) -> None:
    root, originals = uipath_copy
    for path, text in originals.items():
        path.write_text(text, encoding="utf-8")
    files = sorted(originals)
    for path in data.draw(st.lists(st.sampled_from(files), min_size=1, max_size=3,
                                   unique=True), label="files"):
        if data.draw(st.integers(0, 9), label="as text") == 0:
            path.write_text(text_mutation(data, originals[path]), encoding="utf-8")
        else:
            document = mutate(data, json.loads(originals[path]), UIPATH_KEYS)
            path.write_text(json.dumps(document), encoding="utf-8")
    eval_set = data.draw(st.sampled_from(sorted((root / "evaluations" / "eval-sets").glob(
        "*.json"))), label="eval set")
    suite = clear_or_fine(lambda: load_uipath(eval_set))
    if suite is not None:
        assert suite.metadata["format"] == "uipath"
        for item in suite.iter_cases():
            assert all(isinstance(e, Evaluator) for e in suite.evaluators_for(item))


# -- targets files --------------------------------------------------------------------------------


@FUZZ
@given(values(TARGET_KEYS) | st.fixed_dictionaries({"targets": st.lists(
    st.fixed_dictionaries({"name": st.text(max_size=6), "provider": st.sampled_from(
        ("cli", "command", "http", "recorded", "fake:judge", "bogus", "http://127.0.0.1:9/v1#m"))},
        optional={k: values(TARGET_KEYS) for k in ("url", "command", "headers", "workers",
                                                   "judge_target", "timeout_s", "path")})
    | values(TARGET_KEYS), max_size=4)}))
def test_targets_files(tmp_path_factory: pytest.TempPathFactory, document: Any) -> None:
    root = tmp_path_factory.getbasetemp() / "fuzz-targets"
    path = root / ".assay" / "targets.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    found = clear_or_fine(lambda: read_targets(path, strict=False))
    if found is None:
        return
    assert all(p.message for p in found.problems)
    for name in found.names():
        config = found.require(name)
        if config.kind() == "callable":
            continue  # never import a fuzzed module name

        def make(config: Any = config) -> Any:
            return build_target(config, root)

        clear_or_fine(make)


# -- judge responses ------------------------------------------------------------------------------

SCHEMAS: list[type[BaseModel]] = [
    SimilarityVerdict, JudgeVerdict, TrajectoryVerdict, verdict_for(["a", "b"]),
    rubric_schema(ChecklistVerdict, ChecklistCheck, ("r1", "r2")),
    rubric_schema(RangeVerdict, RangeCheck, ("c1",)),
]

answers = (st.text(max_size=300)
           | values(VERDICT_KEYS).map(json.dumps)
           | st.builds(lambda a, b, c: f"{a}```json\n{b}\n```{c}", st.text(max_size=20),
                       values(VERDICT_KEYS).map(json.dumps), st.text(max_size=20))
           | values(VERDICT_KEYS).map(json.dumps).map(lambda s: s[: len(s) // 2]))


@settings(FUZZ, max_examples=400)
@given(answers)
def test_judge_text_through_extraction_and_every_schema(text: str) -> None:
    try:
        value = extract_json(text)
    except ValueError:
        return
    for schema in SCHEMAS:
        with contextlib.suppress(ValidationError, ValueError):
            schema.model_validate(value)


prose = st.text(alphabet=st.characters(blacklist_characters="{`"), max_size=30)


@FUZZ
@given(prose, st.dictionaries(st.text(max_size=8),
                              values(VERDICT_KEYS, nan=False, json_keys=True), max_size=4),
       prose)
def test_a_json_object_in_prose_is_found(before: str, obj: dict[str, Any], after: str) -> None:
    assert extract_json(before + json.dumps(obj) + after) == obj


def test_integers_beyond_64_bits_survive_extraction() -> None:
    """Found by fuzzing: a fast JSON parser turned them into rounded floats."""
    for text in ('{"n": -9223372036854775809}', '{"n": 18446744073709551616}',
                 'the answer: {"n": 123456789012345678901234567890}'):
        value = extract_json(text)
        assert isinstance(value["n"], int) and str(value["n"]) in text


def chat(message: Any, finish: Any = "stop", usage: Any = None) -> dict[str, Any]:
    response: dict[str, Any] = {"choices": [{"message": message, "finish_reason": finish}]}
    if usage is not None:
        response["usage"] = usage
    return response


responses = st.one_of(
    answers.map(lambda t: chat({"role": "assistant", "content": t})),
    st.builds(chat, values(VERDICT_KEYS).map(lambda v: {"role": "assistant", "content": v}),
              st.none() | st.sampled_from(("length", "stop", "tool_calls")) | leaves(),
              values(VERDICT_KEYS)),
    st.builds(lambda args: chat({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": args}}]}),
        values(VERDICT_KEYS) | answers),
    st.builds(lambda calls: chat({"role": "assistant", "tool_calls": calls}),
              values(VERDICT_KEYS)),
    values(VERDICT_KEYS).map(chat),
    values(VERDICT_KEYS).map(lambda choices: {"choices": choices}),
    values(VERDICT_KEYS),
)

JUDGES: list[Callable[[str], Evaluator]] = [
    lambda m: SemanticSimilarity(model=m),
    lambda m: LLMJudge(model=m),
    lambda m: build({"type": "rubric", "rubrics": ["names it", "is brief"], "model": m}),
    lambda m: build({"type": "rubric", "model": m, "rubrics": [
        {"id": "c1", "expected_outcome": "right", "score_ranges": [
            {"score_range": [0, 5], "expected_outcome": "wrong"},
            {"score_range": [6, 10], "expected_outcome": "right"}]}]}),
    lambda m: build({"type": "strict_json_similarity", "model": m}),
    lambda m: build({"type": "llm_judge_trajectory", "model": m}),
]

_next_response: list[Any] = [None]


async def _fuzzed_service(**request: Any) -> Any:
    return copy.deepcopy(_next_response[0])


MODELS = {mode: register_service(f"fuzz-{mode}", _fuzzed_service, structured_mode=mode)
          for mode in ("json_schema", "tools", "prompt")}


@settings(FUZZ, max_examples=300)
@given(responses, st.sampled_from(range(len(JUDGES))), st.sampled_from(sorted(MODELS)))
def test_judge_responses_through_the_full_structured_path(response: Any, judge_index: int,
                                                          mode: str) -> None:
    """Any answer a judge service gives ends as a score or an error score, quickly."""
    _next_response[0] = response
    model = MODELS[mode]
    judge = JUDGES[judge_index](model)
    engine = JudgeEngine(EngineConfig(
        default_model=model, cache_mode="off", reasks=1,
        retry=RetryPolicy(max_attempts=2, backoff_base_s=0, backoff_max_s=0)))
    case = Case(id="c", input="q", expected_output={"a": 1, "b": "x"},
                expected_outcomes=["names it"])

    async def go() -> Score:
        try:
            return await asyncio.wait_for(
                judge.evaluate(case, Execution(output={"a": 2, "b": "x"}), EvalContext(engine)),
                10)
        finally:
            await engine.aclose()

    score = asyncio.run(go())
    assert (score.value is None) != (score.error is None), score
    if score.error is not None:
        # evaluator_failed means an exception escaped the judge: never for a bad answer.
        assert score.error.code != "evaluator_failed", score.error
        assert score.error.message
    else:
        assert score.value is not None and 0.0 <= score.value <= 1.0


# -- assay validate on fuzzed files ---------------------------------------------------------------


@pytest.fixture(scope="module")
def clidir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project directory with a targets file that names the base suite's target."""
    root = tmp_path_factory.mktemp("cli")
    (root / ".assay").mkdir()
    (root / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: agent:answer}\n",
        encoding="utf-8")
    return root


@settings(FUZZ, max_examples=5)
@given(st.data())
def test_assay_validate_on_fuzzed_files(clidir: Path, data: st.DataObject) -> None:
    """Through the real command: exit 2, every problem printed located, no traceback."""
    workdir = clidir
    jsonl = data.draw(st.booleans(), label="jsonl")
    path = workdir / ("cli.jsonl" if jsonl else "cli.yaml")
    (workdir / "cli.yaml").unlink(missing_ok=True)  # no sidecar for the JSONL file
    if jsonl:
        cases = [mutate(data, case, SUITE_KEYS) for case in valid_cases()]
        lines = [json.dumps(c) for c in cases] + ["{not json"]  # always at least one problem
        path.write_text("\n".join(lines), encoding="utf-8")
    else:
        document = mutate(data, yaml.safe_load(VALID_SUITE), SUITE_KEYS)
        if not isinstance(document, dict):
            document = {"evalcases": document}
        document["fuzz_unknown_key"] = True  # always at least one problem
        path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "assay", "validate", str(path)],
                            capture_output=True, text=True, timeout=60, cwd=workdir)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines and all(line.startswith(str(path)) for line in lines), result.stdout


def test_assay_validate_on_an_unprintable_character(clidir: Path) -> None:
    workdir = clidir
    path = workdir / "control-cli.yaml"
    path.write_text("description: x\x07\nevalcases: []\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "assay", "validate", str(path)],
                            capture_output=True, text=True, timeout=60, cwd=workdir)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stdout.startswith(f"{path}:1:15: invalid YAML: character U+0007")
