"""AgentV's evaluator habits: ``llm_judge`` with ``rubrics``, executable prompt templates,
extra keys passed into ``config``, ``code_judge`` with the target proxy and AgentV's payload
fields, composites judged by an ``llm_judge`` aggregator with nested member results, and the
pass / borderline / fail band of every evaluator's verdict."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.judges import EvalContext, build
from assay.llm import register_service
from assay.report.rows import agentv_row, evaluator_result
from assay.suites.evalyaml import SuiteError, load_eval_yaml
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score, verdict_band

DATA = Path(__file__).parent / "data" / "agentv"
PY = sys.executable


def scripted(name: str, answers: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """A registered judge answering ``answers`` in turn; returns its model and requests."""
    seen: list[dict[str, Any]] = []

    async def service(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        answer = answers[min(len(seen) - 1, len(answers) - 1)]
        return {"choices": [{"message": {"role": "assistant", "content": json.dumps(answer)}}]}

    return register_service(name, service), seen


def suite_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "EVAL.yaml"
    path.write_text(textwrap.dedent(text))
    return path


# -- llm_judge with rubrics --------------------------------------------------------


def test_llm_judge_with_rubrics_is_a_rubric_judge(tmp_path):
    model, seen = scripted("rubric-judge", [{"checks": [
        {"id": "accurate", "satisfied": True, "reasoning": "names Paris"},
        {"id": "concise", "satisfied": False, "reasoning": "rambles"}]}])
    path = suite_file(tmp_path, f"""
        execution:
          evaluators:
            - name: quality
              type: llm_judge
              model: {model}
              rubrics:
                - {{id: accurate, expected_outcome: Names Paris, weight: 2}}
                - {{id: concise, expected_outcome: One sentence, weight: 1, required: false}}
        evalcases:
          - id: capital
            expected_outcome: Answers Paris
            input: What is the capital of France?
        """)
    suite = load_eval_yaml(path)
    assert suite.evaluators[0].type == "rubric"
    result = assay.evaluate(suite, target=lambda q: "Paris, which is a lovely city, and...",
                            cache="off")
    score = result.records[0].scores[0]
    assert score.value == pytest.approx(2 / 3)  # satisfied weight 2 of 3
    assert "[accurate] (REQUIRED) (weight: 2)" in seen[0]["messages"][1]["content"]


def test_llm_judge_with_rubrics_and_a_prompt_is_a_located_problem(tmp_path):
    path = suite_file(tmp_path, """
        execution:
          evaluators:
            - name: quality
              type: llm_judge
              prompt: "Grade {{candidate_answer}}"
              rubrics: [Names Paris]
        evalcases:
          - {id: c, expected_outcome: x, input: q}
        """)
    with pytest.raises(SuiteError) as info:
        load_eval_yaml(path)
    assert f"{path}:6:" in info.value.message
    assert "rubrics or prompt, not both" in info.value.message


# -- executable prompt templates and extra keys ------------------------------------


async def test_executable_prompt_template_writes_the_user_prompt(tmp_path, engine_factory):
    model, seen = scripted("template-judge", [{"score": 0.9, "reasoning": "ok"}])
    path = suite_file(tmp_path, f"""
        execution:
          evaluators:
            - name: templated
              type: llm_judge
              model: {model}
              prompt:
                script: "{PY} {DATA / 'prompt_template.py'} '; touch pwned' $HOME"
                config: {{style: strict}}
        evalcases:
          - {{id: c, expected_outcome: x, input: "What is the capital of France?"}}
        """)
    judge = load_eval_yaml(path).evaluators[0]
    score = await judge.evaluate(Case(id="c", input="What is the capital of France?"),
                                 Execution(output="Paris"),
                                 EvalContext(engine_factory(cache_mode="off")))
    assert score.value == 0.9
    user = seen[0]["messages"][1]["content"]
    assert user.splitlines()[:2] == ["Grade this answer (strict grading): Paris",
                                     "Question: What is the capital of France?"]
    # Split like a shell would, but run without one: no command ran, no variable expanded.
    assert 'Arguments: ["; touch pwned", "$HOME"]' in user
    assert not (tmp_path / "pwned").exists()


async def test_a_failing_prompt_script_is_an_error_score(engine_factory):
    judge = build({"type": "llm_judge", "prompt_script": [PY, "-c", "import sys; "
                                                          "sys.exit('no template')"]})
    score = await judge.evaluate(Case(id="c", input="q"), Execution(output="a"),
                                 EvalContext(engine_factory()))
    assert score.error is not None and score.error.code == "prompt_script_failed"
    assert "no template" in score.error.message


def test_extra_keys_go_into_config_as_agentv_passes_them(tmp_path):
    path = suite_file(tmp_path, f"""
        execution:
          evaluators:
            - name: words
              type: code_judge
              script: [{PY}, {DATA / 'echo_payload.py'}]
              min_words: 3
              config: {{strict: true}}
            - name: judged
              type: llm_judge
              prompt: "Grade {{{{candidate_answer}}}}"
              style: terse
              config: {{temperature: 0.3, audience: experts}}
        evalcases:
          - {{id: c, expected_outcome: x, input: q}}
        """)
    code, judge = load_eval_yaml(path).evaluators
    assert code.config == {"strict": True, "min_words": 3}  # type: ignore[attr-defined]
    assert judge.temperature == 0.3  # type: ignore[attr-defined]  # a setting of the judge
    assert judge.config == {"audience": "experts", "style": "terse"}  # type: ignore[attr-defined]


def test_a_near_miss_of_a_setting_is_still_a_typo(tmp_path):
    path = suite_file(tmp_path, """
        execution:
          evaluators:
            - {name: judged, type: llm_judge, prompt: "Grade {{candidate_answer}}",
               temprature: 0, audience: experts}
        evalcases:
          - {id: c, expected_outcome: x, input: q}
        """)
    with pytest.raises(SuiteError) as info:
        load_eval_yaml(path)
    assert "unknown key 'temprature'" in info.value.message
    assert "audience" not in info.value.message  # a new key is passed on, as AgentV does


# -- code_judge payload fields and the target proxy --------------------------------


async def test_payload_has_agentv_fields_and_input_files(tmp_path, engine_factory):
    (tmp_path / "spec.md").write_text("The answer must be one word.")
    path = suite_file(tmp_path, f"""
        execution:
          evaluators:
            - {{name: echo, type: code_judge, script: [{PY}, {DATA / 'echo_payload.py'}]}}
        evalcases:
          - id: c
            expected_outcome: One word
            input_messages:
              - role: user
                content:
                  - {{type: file, value: spec.md}}
                  - {{type: text, value: "What is the capital of France?"}}
        """)
    suite = load_eval_yaml(path)
    case = suite.cases[0].case
    score = await suite.evaluators[0].evaluate(case, Execution(output="Paris"),
                                               EvalContext(engine_factory()))
    received = score.details["received"]  # type: ignore[index]
    assert received["input_files"] == [str(tmp_path.resolve() / "spec.md")]
    assert received["guideline_files"] == []  # no .agentv/config.yaml guideline_patterns
    for key in ("question", "expected_outcome", "expected_messages", "reference_answer",
                "candidate_answer", "output_messages", "input_messages", "trace_summary",
                "config"):
        assert key in received


async def test_code_judge_calls_the_judge_through_the_target_proxy(engine_factory,
                                                                   mock_server):
    judge = build({"type": "code_judge", "script": [PY, str(DATA / "proxy_judge.py")],
                   "target": {"max_calls": 1},
                   "config": {"question": "Rate it from 0 to 1. <<mock-raw:0.75>>"}})
    assert judge.models() == [None]  # the run's judge model is checked before the run
    score = await judge.evaluate(Case(id="c", input="q"), Execution(output="a"),
                                 EvalContext(engine_factory()))
    assert score.ok, score.error
    assert score.value == 0.75  # what the judge (the mock server) answered
    details = score.details or {}
    assert details["unauthorized"] == 401
    assert details["status"] == 200 and details["second"] == 429  # max_calls: 1
    assert "Max calls exceeded" in details["refusal"]["error"]
    assert details["info"]["callCount"] == 1 and details["info"]["maxCalls"] == 1
    assert details["target_proxy"]["call_count"] == 1
    assert score.usage.calls == 1 and mock_server.stats.requests == 1


def test_target_true_means_the_default_limit():
    judge = build({"type": "code_judge", "script": "true", "target": True})
    assert judge.target.max_calls == 50  # type: ignore[attr-defined]


# -- composites --------------------------------------------------------------------


MEMBERS = [{"type": "contains", "name": "says_paris", "search_text": "Paris"},
           {"type": "contains", "name": "says_rome", "search_text": "Rome"}]


async def test_llm_judge_aggregator_reads_the_members_results(engine_factory):
    model, seen = scripted("aggregator", [{"score": 0.65, "hits": ["right city"],
                                           "misses": ["no detail"], "reasoning": "decided"}])
    judge = build({"type": "composite", "name": "overall", "evaluators": MEMBERS,
                   "aggregator": {"type": "llm_judge", "model": model,
                                  "prompt": "Decide from: {{EVALUATOR_RESULTS_JSON}}"}})
    score = await judge.evaluate(Case(id="c", input="q"), Execution(output="Paris"),
                                 EvalContext(engine_factory(cache_mode="off")))
    assert score.value == 0.65 and score.rationale == "decided"
    user = seen[0]["messages"][1]["content"]
    assert user.startswith("Decide from: <evaluator_results_")
    results = json.loads(user.split("\n", 1)[1].rsplit("\n", 1)[0])
    assert results["says_paris"]["verdict"] == "pass" and results["says_rome"]["score"] == 0.0
    assert judge.models() == [model]


def test_aggregator_prompt_checks_its_variables():
    with pytest.raises(Exception, match="unknown variable"):
        build({"type": "composite", "evaluators": MEMBERS,
               "aggregator": {"type": "llm_judge", "prompt": "{{results}}"}})
    with pytest.raises(Exception, match="takes no 'prompt'"):
        build({"type": "composite", "evaluators": MEMBERS,
               "aggregator": {"type": "min", "prompt": "x"}})


def test_members_are_nested_evaluator_results_in_rows():
    suite_rows = assay.evaluate(
        [{"input": "q", "expected_output": "Paris"}], target=lambda q: "Paris",
        evaluators=[{"type": "composite", "name": "overall", "evaluators": MEMBERS}])
    row = agentv_row(suite_rows.records[0], "rows",
                     {e.name: e for e in suite_rows.run.config.evaluators})
    overall = row["evaluator_results"][0]
    nested = {e["name"]: e for e in overall["evaluator_results"]}
    assert set(nested) == {"says_paris", "says_rome"}
    assert nested["says_paris"]["verdict"] == "pass" and nested["says_rome"]["verdict"] == "fail"
    assert nested["says_rome"]["type"] == "contains" and nested["says_rome"]["weight"] == 1.0
    assert overall["score"] == 0.5  # (1 + 0) / 2


# -- pass / borderline / fail -----------------------------------------------------


@pytest.mark.parametrize("value, passed, blocking, band", [
    (0.85, True, False, "pass"), (0.8, True, False, "pass"),
    (0.7, False, False, "borderline"), (0.6, False, False, "borderline"),
    (0.59, False, False, "fail"), (0.7, False, True, "fail"),  # a required check that failed
    (0.9, None, False, "pass"), (0.65, None, False, "borderline"),
])
def test_verdict_bands(value, passed, blocking, band):
    score = Score(name="s", value=value, passed=passed, blocking=blocking)
    assert verdict_band(score) == band
    assert evaluator_result(score)["verdict"] == band


def test_errors_and_skips_have_their_own_verdicts():
    assert verdict_band(Score.failed("s", "x", "y")) == "error"
    assert verdict_band(Score.not_applicable("s", "no context")) == "skipped"


async def test_the_target_proxy_refuses_a_body_nested_past_the_decoder(engine_factory):
    """A script's body nested deeper than the JSON decoder goes raised RecursionError in the
    proxy: a 500 and a traceback in the run's log instead of the proxy's 400."""
    import aiohttp

    from assay.llm.target_proxy import target_proxy

    async with target_proxy(engine_factory(), None, 2) as (env, state):
        headers = {"Authorization": f"Bearer {env['ASSAY_TARGET_PROXY_TOKEN']}"}
        async with aiohttp.ClientSession() as session, session.post(
                env["ASSAY_TARGET_PROXY_URL"] + "/invoke", data=b"[" * 100_000,
                headers=headers) as answer:
            assert answer.status == 400, await answer.text()
            assert (await answer.json()) == {"error": "the body is not a JSON object"}
    assert state.calls == 0
