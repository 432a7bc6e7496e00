"""JSON that names a key twice is ambiguous, wherever assay acts on it: a judge's answer is an
error score naming the key (never its last value as a verdict), a suite file an error at its
file and line, a request body a 400 naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay._util.jsondata import DuplicateKey, loads_unique
from assay.cli.app import app
from assay.judges import EvalContext, SemanticSimilarity
from assay.llm.structured import extract_json
from assay.testing.mock_server import RunningServer
from assay.types.case import Case
from assay.types.execution import Execution


async def test_a_judge_answer_naming_its_score_twice_is_an_error_naming_the_key(
        engine_factory, mock_server: RunningServer) -> None:
    mock_server.configure(faults={"duplicate_score": 1.0})
    engine = engine_factory(cache_mode="off")
    case = Case(id="c", expected_output="Paris is the capital of France")
    score = await SemanticSimilarity().evaluate(
        case, Execution(output="Paris is the capital"), EvalContext(engine))
    assert score.error is not None, f"a verdict from an ambiguous answer: {score.value}"
    assert score.error.code == "judge_output_invalid"
    assert "duplicate key 'score'" in score.error.message
    assert score.value is None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_provider_answer_naming_a_key_twice_is_that_calls_error_naming_the_key(
        engine_factory, mock_server: RunningServer, mock_model: str,
        monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    """A chat answer whose body names ``choices`` (``content``) twice says two things: the
    call fails naming the key and where, the score is an error (never the verdict of the
    copy a reader happened to keep), and the next call is judged as ever."""
    model = mock_model
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock_server.url.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        model = "anthropic:claude-3-5-haiku-latest"
    key = "choices" if provider == "openai" else "content"
    mock_server.configure(faults={"repeated_key": 1.0})
    engine = engine_factory(cache_mode="off", default_model=model)
    case = Case(id="c", expected_output="Paris is the capital of France")
    judge, execution = SemanticSimilarity(), Execution(output="Paris is the capital")
    score = await judge.evaluate(case, execution, EvalContext(engine))
    assert score.error is not None, f"a verdict from an ambiguous answer: {score.value}"
    assert score.value is None
    assert f"names a key twice, so it says two things: duplicate key '{key}' at column" \
        in score.error.message, score.error.message
    mock_server.configure(faults={})
    again = await judge.evaluate(case, execution, EvalContext(engine))
    assert again.error is None and again.value is not None


@pytest.mark.parametrize("text", [
    '{"score": 5, "reasoning": "fine", "score": 1}',
    'My verdict:\n```json\n{"score": 5,\n "score": 1}\n```',
    'Here it is: {"reasoning": "ok", "score": 5, "score": 1} thanks',
    '{"reasoning": "raw\nnewline", "score": 5, "score": 1}',
])
def test_every_way_an_answer_is_read_refuses_a_repeated_key(text: str) -> None:
    with pytest.raises(DuplicateKey) as raised:
        extract_json(text)
    assert raised.value.key == "score"
    read = raised.value.doc  # the fenced block's text, for a fenced answer
    assert read[raised.value.pos:].startswith('"score"')
    assert read[:raised.value.pos].count('"score"') == 1, "located at the second one"


def test_a_repeated_key_is_located_in_the_innermost_object() -> None:
    text = '[\n  {"a": 1},\n  {"b": {"c": 1,\n         "c": 2}}\n]'
    with pytest.raises(DuplicateKey) as raised:
        loads_unique(text)
    assert (raised.value.key, raised.value.lineno, raised.value.colno) == ("c", 4, 10)
    assert loads_unique('{"a": {"a": 1}, "b": [{"a": 2}]}') == {"a": {"a": 1}, "b": [{"a": 2}]}


# -- suite files: an error at the file and line, naming the key ----------------------------


def _cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _has(out: str, text: str) -> bool:
    """Whether ``text`` is in the output, however the terminal wrapped its lines."""
    return "".join(text.split()) in "".join(out.split())


def test_an_agentv_jsonl_case_naming_a_key_twice_is_a_located_error(tmp_path: Path) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_text('{"id": "ok", "input": "x"}\n'
                     '{"id": "a", "input": "x", "expected_output": "yes", '
                     '"expected_output": "no"}\n')
    for args in (("validate", str(suite)),
                 ("run", str(suite), "--store", f"sqlite:///{tmp_path / 'runs.db'}")):
        code, out = _cli(tmp_path, *args)
        assert code == 2, out
        assert _has(out, f"{suite}:2:53: duplicate key 'expected_output'"), out
        assert "Traceback" not in out


def test_a_dataset_row_naming_a_column_twice_is_a_located_error(tmp_path: Path) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text('{"question": "q", "expected": "x"}\n'
                       '{"question": "q", "expected": "yes", "expected": "no"}\n')
    code, out = _cli(tmp_path, "validate", str(dataset))
    assert code == 2, out
    assert _has(out, f"{dataset}:2: duplicate key 'expected' at column 38"), out


def test_a_uipath_eval_set_naming_a_key_twice_is_a_located_error(tmp_path: Path) -> None:
    eval_set = tmp_path / "evaluations" / "eval-sets" / "s.json"
    eval_set.parent.mkdir(parents=True)
    eval_set.write_text('{\n  "id": "s",\n  "name": "s",\n  "evaluatorRefs": [],\n'
                        '  "evaluations": [],\n  "evaluations": [{"id": "a"}]\n}\n')
    code, out = _cli(tmp_path, "run", str(eval_set),
                     "--store", f"sqlite:///{tmp_path / 'runs.db'}")
    assert code == 2, out
    assert _has(out, f"{eval_set}:6:3: invalid JSON: duplicate key 'evaluations'"), out
