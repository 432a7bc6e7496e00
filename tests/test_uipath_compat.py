"""UiPath's Python evaluation API on assay: the code of UiPath's documentation as written
(imports changed), the custom LLM service contract, ``target_output_key`` on the LLM judges,
and UiPath's errors.

Scores from the mock server are its token-overlap F1 of the expected and actual blocks of the
prompt, x 100; the hand computations are in the comments.
"""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import assay
from assay.integrations.uipath.evaluators import (
    ContainsEvaluator,
    ExactMatchEvaluator,
    LLMJudgeOutputEvaluator,
    LLMJudgeStrictJSONSimilarityOutputEvaluator,
)
from assay.integrations.uipath.models import (
    AgentExecution,
    NumericEvaluationResult,
    UiPathEvaluationError,
    WorkloadExecution,
)
from assay.judges import EvalContext
from assay.judges.llm.semantic_similarity import SemanticSimilarity
from assay.llm import register_service
from assay.suites.uipath import load_eval_set
from assay.types.case import Case
from assay.types.execution import Execution

DOC_BLOCKS = Path(__file__).parent / "data" / "uipath_docs"
"""Code blocks of UiPath's documentation, with only their imports changed to assay's."""


@pytest.fixture
def judge_is_mock(mock_server, monkeypatch):
    """The run's judge (UiPath's default LLM service) is the mock server."""
    monkeypatch.setenv("ASSAY_JUDGE_MODEL", f"{mock_server.url}#judge-model")
    return mock_server


async def run_block(name: str, namespace: dict[str, Any]) -> Any:
    """Run a code block of UiPath's documentation as written (top-level await included)."""
    path = next(DOC_BLOCKS.glob(f"*_{name}.pysrc"))
    code = compile(path.read_text(), str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if asyncio.iscoroutine(result):
        await result
    return namespace


def test_documentation_blocks_differ_only_in_their_imports():
    for path in DOC_BLOCKS.glob("*.pysrc"):
        for line in path.read_text().splitlines():
            if "import" in line and line.startswith("from "):
                assert line.startswith("from assay.integrations.uipath.")


# -- the documentation's code blocks, run as written ------------------------------


async def test_documentation_code_blocks_run_against_the_mock_server(judge_is_mock, capsys):
    ns: dict[str, Any] = {"__name__": "uipath_docs"}
    await run_block("request_format", ns)  # a dict literal: the documented request shape
    # The model-selection block uses the class the next block imports (the same import).
    exec("from assay.integrations.uipath.evaluators import LLMJudgeOutputEvaluator", ns)
    await run_block("model_selection", ns)
    assert ns["evaluator"].evaluator_config.model == "gpt-4o-2024-11-20"

    await run_block("basic_semantic_similarity", ns)
    # "answer" only: expected the,capital,of,france,is,paris (6 words); actual
    # paris,is,the,capital,city,of,france (7); 6 shared: F1 = 2*6/(6+7) = 12/13 = 0.923 -> 0.92
    assert ns["result"].score == 0.92
    assert isinstance(ns["result"].details, str) and ns["result"].details
    assert "Score: 0.92" in capsys.readouterr().out

    await run_block("custom_prompt", ns)
    # expected item,added,to,shopping,cart (5); actual the,product,has,been,successfully,
    # added,to,your,cart (9); 3 shared: F1 = 6/14 = 0.4286 -> 0.43
    assert ns["result"].score == 0.43

    await run_block("natural_language_quality", ns)
    # expected a,professional,courteous,response,addressing,the,customer,s,inquiry (9); the
    # email has 37 words, of which customer and inquiry are shared: F1 = 4/46 = 0.087 -> 0.09
    assert ns["result"].score == 0.09

    await run_block("strict_json", ns)
    # Identical objects: every key is identical (decided in code), 100 - 0 = 100 -> 1.0.
    assert ns["result"].score == 1.0
    await run_block("result_structure", ns)

    # Three judge calls, each asking for the model exactly as the config wrote it.
    assert judge_is_mock.stats.models == {"gpt-4o-2024-11-20": 3}


# -- target_output_key on the LLM output judges ------------------------------------


async def test_without_the_key_the_judge_sees_the_whole_output(judge_is_mock):
    evaluator = LLMJudgeOutputEvaluator(id="whole", config={"model": "gpt-4o-2024-11-20"})
    result = await evaluator.validate_and_evaluate_criteria(
        agent_execution=AgentExecution(agent_input={}, agent_trace=[],
                                       agent_output={"answer": "Paris is the capital city "
                                                     "of France."}),
        evaluation_criteria={"expected_output": {"answer": "The capital of France is Paris."}})
    # The key "answer" is now a word on both sides: 7 shared of 7 and 8: F1 = 14/15 -> 0.93.
    assert result.score == 0.93


async def test_target_output_key_in_a_uipath_evaluator_file(tmp_path, mock_server,
                                                            engine_factory):
    evaluators = tmp_path / "evaluations" / "evaluators"
    sets = tmp_path / "evaluations" / "eval-sets"
    evaluators.mkdir(parents=True)
    sets.mkdir()
    (evaluators / "semantic.json").write_text(json.dumps({
        "version": "1.0", "id": "Semantic", "evaluatorTypeId":
        "uipath-llm-judge-output-semantic-similarity",
        "evaluatorConfig": {"name": "Semantic", "targetOutputKey": "answer"}}))
    (evaluators / "legacy.json").write_text(json.dumps({
        "id": "LegacyJudge", "category": 1, "type": 4, "targetOutputKey": "answer",
        "prompt": "Compare {{ActualOutput}} with {{ExpectedOutput}}."}))
    (sets / "set.json").write_text(json.dumps({
        "version": "1.0", "id": "s", "evaluatorRefs": ["Semantic", "LegacyJudge"],
        "evaluations": [{"id": "paris", "inputs": {}, "evaluationCriterias": {
            "Semantic": {"expectedOutput": {"answer": "The capital of France is Paris."}},
            "LegacyJudge": {"expectedOutput": {"answer": "The capital of France is Paris."}}}}]}))
    suite = load_eval_set(sets / "set.json")
    assert suite.metadata["warnings"] == []  # no longer dropped with a warning
    item = suite.cases[0]
    judges = {e.name: e for e in item.evaluators or []}
    assert judges["Semantic"].target_output_key == "answer"  # type: ignore[attr-defined]
    assert judges["LegacyJudge"].target_output_key == "answer"  # type: ignore[attr-defined]
    execution = Execution(output={"answer": "Paris is the capital city of France.",
                                  "debug": "trace id 42"})
    score = await judges["Semantic"].evaluate(item.case, execution, EvalContext(engine_factory()))
    assert score.value == 0.92 and score.raw == pytest.approx(92.3077)


async def test_missing_target_key_is_the_documented_error(judge_is_mock):
    evaluator = LLMJudgeOutputEvaluator(id="k", config={"target_output_key": "answer"})
    with pytest.raises(UiPathEvaluationError) as info:
        await evaluator.evaluate(agent_execution=AgentExecution(agent_output={"reply": "x"}),
                                 evaluation_criteria={"expected_output": {"answer": "x"}})
    assert info.value.code == "Python.TARGET_OUTPUT_KEY_NOT_FOUND"
    assert info.value.error_info.category == "User"
    assert "available keys: reply" in str(info.value)
    assert judge_is_mock.stats.requests == 0


# -- the custom LLM service contract ------------------------------------------------


def _answer(content: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": content}}]}


async def test_a_service_written_to_the_documentation_works_with_the_import_changed():
    # The custom LLM service exactly as UiPath's documentation describes its contract: it
    # reads response_format's evaluation_response schema and max_tokens (None allowed), and
    # answers with the JSON in the message content. Nothing but the import changed.
    seen: list[dict[str, Any]] = []

    async def documented_service(**request: Any) -> dict[str, Any]:
        seen.append(request)
        schema = request["response_format"]["json_schema"]
        assert schema["name"] == "evaluation_response"
        assert request["max_tokens"] is None or request["max_tokens"] > 0
        return _answer('{"justification": "close in meaning", "score": 87.4}')

    evaluator = LLMJudgeOutputEvaluator(
        id="svc", config={"name": "LLMJudgeOutputEvaluator", "model": "gpt-4o-2024-11-20",
                          "temperature": 0.0}, llm_service=documented_service)
    result = await evaluator.validate_and_evaluate_criteria(
        agent_execution=AgentExecution(agent_output="Paris"),
        evaluation_criteria={"expected_output": "Paris"})
    assert result.score == 0.87 and result.details == "close in meaning"  # rounded as UiPath's
    request = seen[0]
    assert set(request) == {"model", "messages", "response_format", "max_tokens",
                            "temperature"}  # the documented request, and nothing else
    assert request["model"] == "gpt-4o-2024-11-20"
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert request["response_format"]["type"] == "json_schema"
    assert set(request["response_format"]["json_schema"]["schema"]["properties"]) == {
        "justification", "score"}
    assert request["max_tokens"] is None and request["temperature"] == 0.0


@pytest.mark.parametrize("arguments", [
    {"justification": "j", "score": 87.4},                 # a dict, as UiPath's gateway gives
    json.dumps({"justification": "j", "score": 87.4}),     # a JSON string, as OpenAI gives
])
async def test_function_calling_variant(arguments: Any):
    seen: list[dict[str, Any]] = []

    async def service(**request: Any) -> Any:
        seen.append(request)
        call = SimpleNamespace(id="call_1", name="submit_evaluation", arguments=arguments)
        return SimpleNamespace(choices=[SimpleNamespace(
            message=SimpleNamespace(role="assistant", content=None, tool_calls=[call]))])

    evaluator = LLMJudgeOutputEvaluator(id="fc", config={"model": "claude-3-5-sonnet-20241022"},
                                        llm_service=service, llm_service_mode="tools")
    result = await evaluator.evaluate(agent_execution=AgentExecution(agent_output="a"),
                                      evaluation_criteria={"expected_output": "b"})
    assert result.score == 0.87
    request = seen[0]
    # UiPath 2.14's evaluators' own request, on request: function calling, the tool required.
    assert set(request) == {"model", "messages", "temperature", "tools", "tool_choice"}
    assert request["model"] == "claude-3-5-sonnet-20241022"
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert request["temperature"] == 0.0
    [tool] = request["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "submit_evaluation"
    assert tool["function"]["description"] == (
        "Submit the evaluation score and justification for the agent output")
    assert {"justification", "score"} <= set(tool["function"]["parameters"]["properties"])
    assert request["tool_choice"] == {"type": "required"}
    assert "max_tokens" not in request  # UiPath sends it only when set


@pytest.mark.parametrize(("model", "max_tokens", "sent"), [
    ("claude-sonnet-4-5-20250929", None, 8000),   # UiPath's default for Claude 4.5
    ("claude-haiku-4-5", 300, 300),
    ("gpt-4o-2024-11-20", 300, 300),
])
async def test_function_calling_max_tokens_as_uipath_sends_it(model: str, max_tokens: Any,
                                                              sent: int):
    seen: list[dict[str, Any]] = []

    async def service(**request: Any) -> Any:
        seen.append(request)
        return _answer('{"justification": "j", "score": 40}')  # content JSON is read too

    config: dict[str, Any] = {"model": model}
    if max_tokens is not None:
        config["max_tokens"] = max_tokens
    evaluator = LLMJudgeOutputEvaluator(id="mt", config=config, llm_service=service,
                                        llm_service_mode="tools")
    result = await evaluator.evaluate(agent_execution=AgentExecution(agent_output="a"),
                                      evaluation_criteria={"expected_output": "b"})
    assert result.score == 0.4
    assert seen[0]["max_tokens"] == sent
    assert seen[0]["tool_choice"] == {"type": "required"}


async def test_model_reaches_a_registered_service_as_written(engine_factory):
    seen: list[str] = []

    async def service(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["model"])
        return _answer('{"justification": "j", "score": 50}')

    name = register_service("uipath-gateway", service)
    score = await SemanticSimilarity(model=f"{name}#gpt-4o-2024-11-20").evaluate(
        Case(id="c", expected_output="x"), Execution(output="x"),
        EvalContext(engine_factory(cache_mode="off")))
    assert seen == ["gpt-4o-2024-11-20"] and score.value == 0.5
    assert score.judge_model == "custom:uipath-gateway#gpt-4o-2024-11-20"


# -- the documented errors ----------------------------------------------------------


async def test_service_unavailable_is_a_uipath_evaluation_error():
    async def down(**request: Any) -> Any:
        raise ConnectionError("gateway unreachable")

    evaluator = LLMJudgeOutputEvaluator(id="down", config={"model": "gpt-4o"},
                                        llm_service=down)
    with pytest.raises(UiPathEvaluationError) as info:
        await evaluator.validate_and_evaluate_criteria(
            agent_execution=AgentExecution(agent_output="a"),
            evaluation_criteria={"expected_output": "b"})
    assert info.value.code == "Python.FAILED_TO_GET_LLM_RESPONSE"
    assert info.value.error_info.category == "System"
    assert "gateway unreachable" in str(info.value)


def test_a_prompt_with_an_unknown_placeholder_is_refused():
    with pytest.raises(UiPathEvaluationError) as info:
        LLMJudgeOutputEvaluator(id="p", config={
            "prompt": "{{ActualOutput}} vs {{ExpectedOutput}} given {{Context}}"})
    assert info.value.code == "Python.INVALID_PROMPT_PLACEHOLDERS"
    assert "unknown placeholder(s) {{Context}}" in str(info.value)


PROMPT = "Rate how close the answer is, from 0 to 100: {{ActualOutput}}"
"""A prompt without {{ExpectedOutput}}: UiPath 2.14 appends the missing section (PR #1207)."""


async def test_placeholders_and_bare_model_names_alike_from_files_and_python(
        tmp_path, judge_is_mock):
    # The same evaluator as a project file (coded and legacy) and from Python: a prompt that
    # lacks {{ExpectedOutput}} gets UiPath's tagged section, and the bare model name is asked
    # of the run's judge service by that name, on every path.
    evaluators = tmp_path / "evaluations" / "evaluators"
    sets = tmp_path / "evaluations" / "eval-sets"
    evaluators.mkdir(parents=True)
    sets.mkdir()
    config = {"name": "Close", "model": "gpt-4.1-2025-04-14", "prompt": PROMPT}
    (evaluators / "coded.json").write_text(json.dumps({
        "version": "1.0", "id": "Coded", "evaluatorConfig": config,
        "evaluatorTypeId": "uipath-llm-judge-output-semantic-similarity"}))
    (evaluators / "legacy.json").write_text(json.dumps({
        "id": "Legacy", "category": 1, "type": 5, "model": "gpt-4.1-2025-04-14",
        "prompt": PROMPT}))
    expected = "The capital of France is Paris."
    (sets / "set.json").write_text(json.dumps({
        "version": "1.0", "id": "s", "evaluatorRefs": ["Coded", "Legacy"],
        "evaluations": [{"id": "paris", "inputs": {}, "evaluationCriterias": {
            "Coded": {"expectedOutput": expected}, "Legacy": {"expectedOutput": expected}}}]}))
    suite = load_eval_set(sets / "set.json")
    assert suite.metadata["warnings"] == []  # the bare name is not dropped
    from_files = {e.name: e for e in suite.cases[0].evaluators or []}
    python = LLMJudgeOutputEvaluator(id="Python", config=config)
    from_python = python.assay_evaluator({"expected_output": expected})
    prompts = {e.prompt for e in (*from_files.values(), from_python)}
    assert len(prompts) == 1  # one prompt on every path
    (prompt,) = prompts
    assert prompt == PROMPT + ("\n\n## Expected Output\n<ExpectedOutput>\n{{ExpectedOutput}}"
                               "\n</ExpectedOutput>")
    assert {e.model for e in (*from_files.values(), from_python)} == {
        "#gpt-4.1-2025-04-14"}

    answer = "Paris is the capital city of France."
    result = assay.evaluate(sets / "set.json", target=lambda _: answer, store=":memory:",
                            cache="off")
    by_file = {s.name: s.value for s in result.records[0].scores}
    direct = await python.evaluate(agent_execution=AgentExecution(agent_output=answer),
                                   evaluation_criteria={"expected_output": expected})
    assert by_file == {"Coded": direct.score, "Legacy": direct.score}
    assert judge_is_mock.stats.models == {"gpt-4.1-2025-04-14": 3}  # asked of the judge


async def test_unparsable_response_is_a_uipath_evaluation_error():
    async def chatty(**request: Any) -> dict[str, Any]:
        return _answer("I would say they are quite similar, maybe eighty.")

    evaluator = LLMJudgeOutputEvaluator(id="chatty", config={}, llm_service=chatty)
    with pytest.raises(UiPathEvaluationError) as info:
        await evaluator.evaluate(agent_execution=AgentExecution(agent_output="a"),
                                 evaluation_criteria={"expected_output": "b"})
    assert info.value.code == "Python.INVALID_LLM_RESPONSE"


async def test_criteria_defaults_and_their_absence():
    evaluator = ExactMatchEvaluator(id="em", evaluatorConfig={
        "defaultEvaluationCriteria": {"expectedOutput": {"result": 8}}})
    result = await evaluator.validate_and_evaluate_criteria(
        WorkloadExecution(agent_input={"a": 3}, workload_output={"result": 8.0},
                          workload_trace=[]))
    assert isinstance(result, NumericEvaluationResult) and result.score == 1.0
    assert result.details.expected == "{'result': 8}"  # the expected value as given
    bare = ContainsEvaluator(id="c", evaluator_config={})
    with pytest.raises(UiPathEvaluationError) as info:
        await bare.validate_and_evaluate_criteria(AgentExecution(agent_output="x"))
    assert info.value.code == "Python.MISSING_EVALUATION_CRITERIA"


def test_bad_config_is_rejected_when_built():
    with pytest.raises(UiPathEvaluationError) as info:
        LLMJudgeOutputEvaluator(id="t", config={"temprature": 0.0})
    assert info.value.code == "Python.FAILED_TO_VALIDATE_EVALUATOR_CONFIG"
    assert "'temprature'" in str(info.value)
    with pytest.raises(UiPathEvaluationError, match="temperature"):
        LLMJudgeStrictJSONSimilarityOutputEvaluator(id="t", config={"temperature": "hot"})
    with pytest.raises(UiPathEvaluationError, match="given as evaluatorConfig and config"):
        ExactMatchEvaluator(id="t", config={}, evaluatorConfig={})
