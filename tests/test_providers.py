"""Providers beyond plain OpenAI-compatible HTTP, each against a real local server."""

from __future__ import annotations

import pytest

from assay.judges import EvalContext, SemanticSimilarity
from assay.judges.llm.templates import delimit
from assay.llm import EngineConfig, JudgeEngine
from assay.llm.pricing import PriceSource
from assay.llm.prompt_cache import shared_end
from assay.llm.providers.anthropic_http import from_anthropic, to_anthropic
from assay.llm.providers.scripted import similarity
from assay.types.case import Case
from assay.types.execution import Execution


async def test_anthropic_messages_api_with_forced_tool(mock_server, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mock_server.url.removesuffix("/v1"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    engine = JudgeEngine(EngineConfig(default_model="anthropic:claude-3-5-haiku-latest",
                                      cache_path=tmp_path / "c.db"))
    await engine.preflight()
    case = Case(id="a", expected_output="the sky is blue")
    execution = Execution(output="blue is the sky today")
    score = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))
    assert score.ok, score.error
    assert score.raw == pytest.approx(
        100 * similarity("the sky is blue", "blue is the sky today"), abs=0.1)
    assert score.value == 0.89  # 8/9 rounded to two places, as UiPath reports it
    assert score.usage.cost is not None and score.usage.cost > 0  # claude-3-5-haiku is priced
    assert mock_server.stats.requests == 1
    await engine.aclose()


async def test_anthropic_missing_key(monkeypatch):
    from assay.errors import ConfigError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        await JudgeEngine(EngineConfig(cache_mode="off")).preflight("anthropic:claude-x")


def test_anthropic_translation_round_trip():
    body = to_anthropic({"model": "m", "messages": [
        {"role": "system", "content": "be fair"}, {"role": "user", "content": "judge"}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "verdict", "schema": {"type": "object"}}}, "max_tokens": 50}, "m")
    assert body["system"] == [{"type": "text", "text": "be fair",
                               "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "judge"}]
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert body["max_tokens"] == 50
    back = from_anthropic({"content": [{"type": "tool_use", "id": "t", "name": "verdict",
                                        "input": {"score": 1}}],
                           "stop_reason": "tool_use",
                           "usage": {"input_tokens": 3, "output_tokens": 2}}, "anthropic:m")
    call = back["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"score": 1}'
    assert back["usage"] == {"prompt_tokens": 3, "completion_tokens": 2,
                             "prompt_tokens_details": {"cached_tokens": 0,
                                                       "cache_write_tokens": 0}}


def test_anthropic_cache_breakpoint_ends_the_part_every_case_shares():
    """The breakpoint sits after the judge's instructions, before the first frame of case
    data; reads and writes of Anthropic's cache come back as OpenAI's usage, every prompt
    token counted once."""
    user = f"Compare them.\n{delimit('actual_output', 'blue')}\n{delimit('expected', 'sky')}"
    body = to_anthropic({"model": "m", "messages": [
        {"role": "system", "content": "be fair"}, {"role": "user", "content": user}]}, "m")
    assert body["system"] == [{"type": "text", "text": "be fair"}]
    head, rest = body["messages"][0]["content"]
    assert head == {"type": "text", "text": "Compare them.\n",
                    "cache_control": {"type": "ephemeral"}}
    assert rest == {"type": "text", "text": user.removeprefix("Compare them.\n")}
    assert shared_end(delimit("any_tag", "x" * 5000)) == 0  # a frame, as delimit writes it
    back = from_anthropic({"content": [], "usage": {
        "input_tokens": 10, "cache_read_input_tokens": 700, "cache_creation_input_tokens": 0,
        "output_tokens": 5}}, "anthropic:m")
    assert back["usage"]["prompt_tokens"] == 710
    assert back["usage"]["prompt_tokens_details"] == {"cached_tokens": 700,
                                                      "cache_write_tokens": 0}


async def test_anthropic_prompt_cache_through_the_server_priced_at_its_rates(
        mock_server, monkeypatch, tmp_path):
    """The first case writes the shared prefix to the cache (billed at the write rate), the
    next reads it (at the read rate); the usage and the cost say so."""
    mock_server.configure(prompt_cache=True)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mock_server.url.removesuffix("/v1"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    engine = JudgeEngine(EngineConfig(default_model="anthropic:claude-sonnet-4-5",
                                      cache_path=tmp_path / "c.db", cache_mode="off"))
    price = engine.prices.price("claude-sonnet-4-5", PriceSource(provider_id="anthropic"))
    assert price is not None and price.cache_read and price.cache_write
    assert price.cache_read < price.prompt < price.cache_write
    judge = SemanticSimilarity()
    scores = [await judge.evaluate(Case(id=f"c{i}", expected_output=f"the sky is blue {i}"),
                                   Execution(output=f"blue is the sky {i}"),
                                   EvalContext(engine)) for i in range(2)]
    first, second = (s.usage for s in scores)
    assert first.cache_write_tokens > 0 and first.cached_prompt_tokens == 0
    assert second.cached_prompt_tokens == first.cache_write_tokens
    assert second.cache_write_tokens == 0
    for u in (first, second):
        plain = u.prompt_tokens - u.cached_prompt_tokens - u.cache_write_tokens
        assert u.cost == pytest.approx((plain * price.prompt + u.cached_prompt_tokens
                                        * price.cache_read + u.cache_write_tokens
                                        * price.cache_write + u.completion_tokens
                                        * price.completion) / 1e6)
    assert second.cost < first.cost
    await engine.aclose()


async def test_azure_deployment_url_and_api_key_header(mock_server, monkeypatch, tmp_path):
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", mock_server.url.removesuffix("/v1"))
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    engine = JudgeEngine(EngineConfig(default_model="azure:my-deployment",
                                      cache_path=tmp_path / "c.db"))
    provider = engine.resolve()
    assert provider.url.endswith(  # type: ignore[attr-defined]
        "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21")
    assert provider.headers["api-key"] == "k"  # type: ignore[attr-defined]
    assert "Authorization" not in provider.headers  # type: ignore[attr-defined]
    score = await SemanticSimilarity().evaluate(Case(id="a", expected_output="x"),
                                                Execution(output="x"), EvalContext(engine))
    assert score.ok and score.value == pytest.approx(1.0)
    await engine.aclose()


async def test_fake_provider_is_a_real_registered_provider(tmp_path):
    engine = JudgeEngine(EngineConfig(default_model="fake:judge", cache_path=tmp_path / "c.db"))
    score = await SemanticSimilarity().evaluate(Case(id="a", expected_output="red car"),
                                                Execution(output="a red car"),
                                                EvalContext(engine))
    assert score.value == pytest.approx(similarity("red car", "a red car"), abs=0.006)
    again = await SemanticSimilarity().evaluate(Case(id="a", expected_output="red car"),
                                                Execution(output="a red car"),
                                                EvalContext(engine))
    assert again.usage.cached_calls == 1


async def test_the_mock_server_streams_when_asked(mock_server):
    """``stream: true`` (what AgentV 4's OpenAI client sends) gets server-sent chunks that put
    back together the answer a plain request gets."""
    import aiohttp
    import orjson

    body = {"model": "m", "messages": [{"role": "user", "content":
                                        '<<mock:{"score": 0.7}>>'}]}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{mock_server.url}/chat/completions", json=body) as plain:
            whole = await plain.json()
        async with http.post(f"{mock_server.url}/chat/completions",
                             json={**body, "stream": True}) as streamed:
            assert streamed.headers["Content-Type"] == "text/event-stream"
            events = [line.removeprefix(b"data: ") for line in
                      (await streamed.read()).split(b"\n\n") if line]
    assert events[-1] == b"[DONE]"
    chunks = [orjson.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"] == '{"score": 0.7}'
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"] == whole["usage"]
