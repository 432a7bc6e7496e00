"""Bad configuration fails before any call, with a message that says what is accepted."""

from __future__ import annotations

import socket

import pytest

from assay.errors import ConfigError, EvaluationError, TemplateError
from assay.judges import LLMJudge, SemanticSimilarity, build
from assay.llm import EngineConfig, JudgeEngine, parse_model


@pytest.mark.parametrize("text, code, needle", [
    ("gpt-4o", "unknown_model", "no provider prefix"),
    # LiteLLM's, Inspect's and promptfoo's way of writing a model: the same one, as assay's
    ("openai/gpt-4o-mini", "unknown_model", "did you mean 'openai:gpt-4o-mini'?"),
    ("Anthropic/claude-3-5-haiku", "unknown_model", "did you mean 'anthropic:claude-3-5-haiku'"),
    ("bogus:gpt-4o", "unknown_provider", "unknown provider 'bogus'"),
    ("openai:", "unknown_model", "names no model"),
    ("http://127.0.0.1:9/v1", "unknown_model", "#MODEL"),
    ("", "unknown_model", "empty"),
])
def test_unknown_model_strings(text, code, needle):
    with pytest.raises(ConfigError) as info:
        parse_model(text)
    assert info.value.code == code
    assert needle in info.value.message
    assert "Accepted:" in info.value.message and "openai:MODEL" in info.value.message


def test_a_bare_model_with_a_slash_gets_no_suggestion_unless_a_provider_leads():
    with pytest.raises(ConfigError) as info:
        parse_model("meta-llama/Llama-3-8B")
    assert "did you mean" not in info.value.message


def test_model_forms_parse():
    assert parse_model("openai:gpt-4o-mini").name == "openai:gpt-4o-mini"
    spec = parse_model("http://127.0.0.1:8000/v1#my-model")
    assert (spec.provider, spec.model, spec.base_url) == ("http", "my-model",
                                                          "http://127.0.0.1:8000/v1")
    assert parse_model("local:gemma-3-270m").provider == "local"


async def test_missing_api_key(monkeypatch, mock_server):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    engine = JudgeEngine(EngineConfig(default_model="openai:gpt-4o-mini", cache_mode="off"))
    with pytest.raises(ConfigError) as info:
        await engine.preflight()
    assert info.value.code == "missing_api_key"
    assert "OPENAI_API_KEY" in info.value.message


async def test_missing_azure_endpoint(monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        JudgeEngine(EngineConfig(cache_mode="off")).resolve("azure:my-deployment")


async def test_unreachable_base_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connection refused
        engine = JudgeEngine(EngineConfig(default_model=f"http://127.0.0.1:{port}/v1#m",
                                          cache_mode="off"))
        with pytest.raises(ConfigError) as info:
            await engine.preflight()
    assert info.value.code == "unreachable_base_url"
    assert f"127.0.0.1:{port}" in info.value.message


async def test_reachable_server_passes_preflight(mock_model, mock_server):
    engine = JudgeEngine(EngineConfig(default_model=mock_model, cache_mode="off"))
    await engine.preflight()
    assert mock_server.stats.requests == 0


def test_unknown_template_variable_fails_at_build_time():
    with pytest.raises(TemplateError) as info:
        LLMJudge(prompt="Judge {{candidate_answer}} against {{gold}}")
    assert "{{gold}}" in info.value.message and "{{reference_answer}}" in info.value.message
    with pytest.raises(TemplateError, match="ActualOutput"):
        SemanticSimilarity(prompt="{{ActualOutput}} vs {{Expected}}")


def test_build_reports_unknown_type_and_bad_fields():
    with pytest.raises(EvaluationError) as info:
        build({"type": "semantic_similarty"}, where="suite.yaml evaluators[0]")
    assert info.value.code == "unknown_evaluator_type"
    assert "semantic_similarity" in info.value.message and "suite.yaml" in info.value.message
    with pytest.raises(EvaluationError) as bad:
        build({"type": "semantic_similarity", "temperature": "hot"})
    assert "temperature" in bad.value.message
    with pytest.raises(EvaluationError, match="case_sensitive"):
        build({"type": "contains", "case_sensitive": "maybe"})


def test_missing_prompt_placeholder_is_appended():
    judge = SemanticSimilarity(prompt="Judge this.")
    assert "## Actual Output\n<ActualOutput>\n{{ActualOutput}}\n</ActualOutput>" in judge.prompt
    assert "## Expected Output\n<ExpectedOutput>\n{{ExpectedOutput}}\n</ExpectedOutput>" \
        in judge.prompt
