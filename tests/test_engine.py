"""The judge engine against a real HTTP server: cache, retries, faults, limits, accounting."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from assay.judges import EvalContext, LLMJudge, SemanticSimilarity
from assay.llm import RateLimit
from assay.llm.cache import cache_key
from assay.llm.pricing import PriceSource, published_price
from assay.llm.providers.scripted import similarity
from assay.testing.mock_server import serve_in_thread
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import aggregate
from tests.conftest import fast_retry

PAIRS = [
    ("Paris is the capital of France", "The capital of France is Paris"),
    ("Water boils at 100 degrees Celsius", "At sea level water boils at 100 C"),
    ("The meeting moved to Tuesday", "We will meet on Friday instead"),
]


def _case(i: int) -> tuple[Case, Execution]:
    expected, actual = PAIRS[i % len(PAIRS)]
    actual = f"{actual} (variant {i})"
    return Case(id=f"c{i}", expected_output=expected), Execution(output=actual)


async def _judge_many(engine, n: int, judge=None):  # type: ignore[no-untyped-def]
    judge = judge or SemanticSimilarity()
    ctx = EvalContext(engine)
    pairs = [_case(i) for i in range(n)]
    return await asyncio.gather(*(judge.evaluate(c, e, ctx) for c, e in pairs)), pairs


async def test_scores_come_from_the_server_and_are_normalised(engine_factory, mock_server):
    engine = engine_factory()
    scores, pairs = await _judge_many(engine, 3)
    for score, (case, execution) in zip(scores, pairs, strict=True):
        assert score.error is None
        assert score.scale == "0-100"
        expected = similarity(case.expected_output, execution.output)
        assert score.value == pytest.approx(expected, abs=0.005)  # rounded to two places
        assert score.raw == pytest.approx(expected * 100, abs=0.1)
        assert score.usage.calls == 1
        assert score.usage.prompt_tokens > 0
    assert mock_server.stats.requests == 3


async def test_second_identical_evaluation_makes_zero_requests(engine_factory, mock_server):
    first, _ = await _judge_many(engine_factory(), 20)
    assert mock_server.stats.requests == 20
    # A new engine (as in a new process) on the same cache file.
    second, _ = await _judge_many(engine_factory(), 20)
    assert mock_server.stats.requests == 20, "the re-run must be served from the cache"
    assert [s.value for s in first] == [s.value for s in second]
    assert all(s.usage.cached_calls == 1 and s.usage.calls == 0 for s in second)
    assert all(s.usage.cost == 0.0 for s in second)


async def test_cache_modes_refresh_and_off_call_the_server(engine_factory, mock_server):
    await _judge_many(engine_factory(), 5)
    await _judge_many(engine_factory(cache_mode="refresh"), 5)
    assert mock_server.stats.requests == 10
    await _judge_many(engine_factory(cache_mode="off"), 5)
    assert mock_server.stats.requests == 15
    await _judge_many(engine_factory(), 5)
    assert mock_server.stats.requests == 15


def test_cache_key_ignores_dict_order_and_sees_every_input():
    at = {"provider": "p", "model": "p:m"}
    base: Any = {"model": "m", "messages": [{"role": "user", "content": "x"}],
                 "temperature": 0.0}
    reordered = {"temperature": 0.0, "messages": [{"content": "x", "role": "user"}], "model": "m"}
    assert cache_key(at, base) == cache_key(at, reordered)  # type: ignore[arg-type]
    for change in ({"temperature": 0.5}, {"max_tokens": 10}, {"seed": 3}, {"top_p": 0.5},
                   {"messages": [{"role": "user", "content": "y"}]}):
        assert cache_key(at, {**base, **change}) != cache_key(at, base)
    assert cache_key({**at, "model": "p:other"}, base) != cache_key(at, base)
    assert cache_key({**at, "url": "http://elsewhere/v1"}, base) != cache_key(at, base)
    assert cache_key(at, {**base, "model": "x", "user": "u"}) == cache_key(at, base)


async def test_the_cache_keys_answers_by_the_server_that_gave_them(
        engine_factory, mock_server, monkeypatch):
    """The same model at another OpenAI-compatible server is asked, not answered from the
    first server's cache; another API key for the same server is not another answer."""
    other = serve_in_thread()
    try:
        case, execution = Case(id="c", expected_output="Paris"), Execution(output="Paris.")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-first-key-0123456789")
        for server in (mock_server, other, mock_server):
            monkeypatch.setenv("OPENAI_BASE_URL", server.url)
            engine = engine_factory(default_model="openai:gpt-4o-mini")
            score = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))
            assert score.ok, score.error
        assert mock_server.stats.requests == 1 and other.stats.requests == 1
        assert (score.usage.calls, score.usage.cached_calls) == (0, 1)  # back at the first
        monkeypatch.setenv("OPENAI_API_KEY", "sk-second-key-9876543210")
        engine = engine_factory(default_model="openai:gpt-4o-mini")
        again = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))
        assert (again.usage.calls, again.usage.cached_calls) == (0, 1)
    finally:
        other.stop()


async def test_the_cache_keys_every_parameter_that_changes_an_answer(
        engine_factory, mock_server, monkeypatch):
    """A request field assay does not set itself (top_p) and an API version carried in the
    endpoint's URL each make another answer."""
    engine = engine_factory()
    request: Any = {"messages": [{"role": "user", "content": "hi"}], "top_p": 0.1}
    for top_p in (0.1, 0.9, 0.1):
        result = await engine.chat({**request, "top_p": top_p})
    assert mock_server.stats.requests == 2 and result.stats.cached
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", mock_server.url.removesuffix("/v1"))
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
    for version in ("2024-10-21", "2025-01-01-preview"):
        monkeypatch.setenv("AZURE_OPENAI_API_VERSION", version)
        found = await engine_factory(default_model="azure:deploy").chat(request)
        assert not found.stats.cached, version
    assert mock_server.stats.requests == 4


async def test_200_calls_through_30_percent_faults_all_score_correctly(engine_factory,
                                                                       mock_server):
    mock_server.configure(
        faults={"429": 0.08, "500": 0.06, "503": 0.04, "invalid_json": 0.04, "drop": 0.04,
                "empty_choices": 0.04},
        max_faults_per_request=3, retry_after_s=0.01, seed=7)
    engine = engine_factory(cache_mode="off")
    scores, pairs = await _judge_many(engine, 200)
    assert all(s.error is None for s in scores), [s.error for s in scores if s.error][:3]
    for score, (case, execution) in zip(scores, pairs, strict=True):
        assert score.value == pytest.approx(similarity(case.expected_output, execution.output),
                                            abs=0.005)  # rounded to two places
    faults = mock_server.stats.as_dict()["fault_total"]
    retries = sum(s.usage.retries for s in scores)
    print(f"faults injected: {faults}, retries reported: {retries}")
    assert faults > 40
    assert retries == faults == engine.usage.retries
    assert aggregate(scores).errors == 0


async def test_hang_past_the_call_timeout_is_retried(engine_factory, mock_server):
    # The hang (6 s) is far beyond the call timeout (1 s), which is loose enough that a
    # loaded machine's answer to the retry still comes in time.
    mock_server.configure(faults={"hang": 1.0}, max_faults_per_request=1, hang_s=6.0)
    engine = engine_factory(retry=fast_retry(call_timeout_s=1.0), cache_mode="off")
    started = time.monotonic()
    scores, _ = await _judge_many(engine, 4)
    assert all(s.ok for s in scores)
    assert all(s.usage.retries == 1 for s in scores)
    assert time.monotonic() - started < 5


async def test_429_forever_ends_within_the_time_bound_with_error_scores(engine_factory,
                                                                        mock_server):
    mock_server.configure(faults={"429": 1.0}, retry_after_s=0.2)
    engine = engine_factory(retry=fast_retry(max_attempts=1000, total_timeout_s=1.5),
                            cache_mode="off")
    started = time.monotonic()
    scores, _ = await _judge_many(engine, 5)
    elapsed = time.monotonic() - started
    assert elapsed < 4
    assert all(s.error is not None and s.error.code == "retries_exhausted" for s in scores)
    assert all(s.value is None for s in scores)
    summary = aggregate(scores)
    assert summary.errors == 5 and summary.mean is None


async def test_retry_after_is_honoured(engine_factory, mock_server):
    mock_server.configure(faults={"429": 1.0}, max_faults_per_request=1, retry_after_s=0.4)
    engine = engine_factory(cache_mode="off")
    started = time.monotonic()
    scores, _ = await _judge_many(engine, 1)
    assert scores[0].ok and scores[0].usage.retries == 1
    assert time.monotonic() - started >= 0.4


async def test_non_retryable_rejection_is_not_retried(engine_factory, mock_server):
    engine = engine_factory(cache_mode="off")
    from assay.llm.types import RequestRejected

    with pytest.raises(RequestRejected):
        await engine.chat({"model": "x", "messages": [{"content": "no role"}]})
    assert mock_server.stats.requests == 1


async def test_global_concurrency_limit_caps_in_flight_requests(engine_factory, mock_server):
    mock_server.configure(latency_ms=50)
    engine = engine_factory(concurrency=4, cache_mode="off")
    await _judge_many(engine, 24)
    assert mock_server.stats.max_in_flight == 4


async def test_the_mock_server_times_its_requests(engine_factory, mock_server):
    """What the benchmarks set against a client's own clock: when the first request came,
    when the last was answered, and how many were in flight on average."""
    mock_server.configure(latency_ms=100)
    engine = engine_factory(concurrency=4, cache_mode="off")
    before = time.monotonic()
    await _judge_many(engine, 8)  # two waves of four
    after = time.monotonic()
    stats = mock_server.server.stats.as_dict()
    first, last = stats["first_request_at"], stats["last_response_at"]
    assert before <= first < last <= after and last - first >= 0.2
    assert 3.0 <= stats["mean_in_flight"] <= 4.0


async def test_requests_per_minute_limit_spaces_calls(engine_factory, mock_server, mock_model):
    engine = engine_factory(cache_mode="off",
                            rate_limits={mock_model: RateLimit(requests_per_minute=600)})
    started = time.monotonic()
    await _judge_many(engine, 6)
    # 600 rpm is one call every 0.1 s: six calls need at least 0.5 s.
    assert time.monotonic() - started >= 0.45


async def test_tokens_per_minute_limit_slows_down(engine_factory, mock_server, mock_model):
    engine = engine_factory(cache_mode="off",
                            rate_limits={mock_model: RateLimit(tokens_per_minute=60_000)})
    limiter = engine._limiter(mock_model)
    limiter.tokens, limiter.tokens_at = 0, time.monotonic()  # start with an empty bucket: 1,000 tokens per second refill
    started = time.monotonic()
    await _judge_many(engine, 2)
    assert time.monotonic() - started >= 0.2


async def test_429_halves_allowed_concurrency(engine_factory, mock_server, mock_model):
    mock_server.configure(faults={"429": 1.0}, max_faults_per_request=1, retry_after_s=0.0)
    engine = engine_factory(concurrency=16, cache_mode="off")
    await _judge_many(engine, 8)
    limiter = engine._limiter(mock_model)
    assert limiter.throttled == 8
    assert limiter.allowed < 16


async def test_cost_is_priced_from_the_maintained_table_cached_tokens_at_the_cached_rate(
        engine_factory, mock_server, monkeypatch):
    """OpenAI's model at its published price, read from the maintained table; the prompt
    tokens the provider read from its prompt cache (the second call on, whose system prompt
    it saw before) at the cached rate."""
    mock_server.configure(prompt_cache=True)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    price = published_price("gpt-4o-mini", PriceSource(provider_id="openai"))
    assert price is not None and price.cache_read is not None
    assert price.cache_read < price.prompt
    engine = engine_factory(default_model="openai:gpt-4o-mini", cache_mode="off")
    first, _ = await _judge_many(engine, 1)
    scores, _ = await _judge_many(engine, 2)
    assert first[0].usage.cached_prompt_tokens == 0
    for s in scores:
        u = s.usage
        assert 0 < u.cached_prompt_tokens < u.prompt_tokens
        expected = ((u.prompt_tokens - u.cached_prompt_tokens) * price.prompt
                    + u.cached_prompt_tokens * price.cache_read
                    + u.completion_tokens * price.completion) / 1e6
        assert u.cost == pytest.approx(expected)
        assert u.cost < (u.prompt_tokens * price.prompt + u.completion_tokens
                         * price.completion) / 1e6
    every = [*first, *scores]
    assert engine.usage.cost == pytest.approx(sum(s.usage.cost or 0 for s in every))
    assert engine.usage.cached_prompt_tokens == sum(s.usage.cached_prompt_tokens
                                                    for s in every)
    override = engine_factory(default_model="openai:gpt-4o-mini", cache_mode="off",
                              prices={"gpt-4o-mini": (1.0, 1.0)})
    s2, _ = await _judge_many(override, 1)
    assert s2[0].usage.cost == pytest.approx(s2[0].usage.total_tokens / 1e6)


async def test_a_server_of_ones_own_has_no_published_price(engine_factory, mock_server):
    """A model name the maintained table knows, served by a server on this machine: its
    price is not OpenAI's, so it is unknown (not guessed, not $0) unless given."""
    mock_server.configure(prompt_cache=True)
    engine = engine_factory(default_model=f"{mock_server.url}#gpt-4o-mini", cache_mode="off")
    scores, _ = await _judge_many(engine, 1)
    assert scores[0].usage.cost is None
    given = engine_factory(default_model=f"{mock_server.url}#gpt-4o-mini", cache_mode="off",
                           prices={"gpt-4o-mini": (2.0, 4.0, 1.0)})
    scores, _ = await _judge_many(given, 2)
    for s in scores:
        u = s.usage
        assert u.cost == pytest.approx(((u.prompt_tokens - u.cached_prompt_tokens) * 2.0
                                        + u.cached_prompt_tokens * 1.0
                                        + u.completion_tokens * 4.0) / 1e6)


async def test_unknown_price_is_unknown_not_free(engine_factory, mock_server):
    scores, _ = await _judge_many(engine_factory(cache_mode="off"), 1)
    assert scores[0].usage.cost is None
    assert aggregate(scores).usage.cost is None


async def test_dry_run_estimates_without_calling(engine_factory, mock_server):
    engine = engine_factory(dry_run=True, cache_mode="off")
    scores, _ = await _judge_many(engine, 7)
    assert mock_server.stats.requests == 0
    assert engine.estimate.calls == 7
    assert engine.estimate.prompt_tokens > 7 * 50
    # not applicable, never an error: the placeholder of a call that was counted, not made
    assert all(s.error is None and s.skipped == "dry run: http://127.0.0.1:"
               f"{mock_server.port}/v1#judge-model not called" for s in scores), scores[0]


async def test_prices_file_from_environment(engine_factory, mock_server, tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-model": [2.0, 4.0]}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    scores, _ = await _judge_many(engine_factory(cache_mode="off"), 1)
    u = scores[0].usage
    assert u.cost == pytest.approx((u.prompt_tokens * 2 + u.completion_tokens * 4) / 1e6)


@pytest.mark.parametrize("text, expected", [
    ('{"judge-model": [2.0]}', "'judge-model': expected [usd_per_1m_prompt"),
    ('{"judge-model": [2.0, -1]}', "'judge-model': expected [usd_per_1m_prompt"),
    ('{"judge-model": {"prompt": 1}}', "'judge-model': expected [usd_per_1m_prompt"),
    ('["judge-model"]', "expected a JSON object"),
    ("{not json", "cannot read it as JSON"),
])
def test_a_bad_prices_file_is_refused_naming_it(tmp_path, monkeypatch, text, expected):
    from assay.errors import ConfigError
    from assay.llm.engine import JudgeEngine
    from assay.types.engine_config import EngineConfig

    prices = tmp_path / "prices.json"
    prices.write_text(text)
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    with pytest.raises(ConfigError) as found:
        JudgeEngine(EngineConfig(cache_mode="off", cache_path=tmp_path / "c.db"))
    assert str(prices) in found.value.message and expected in found.value.message


def test_bad_prices_given_in_code_are_refused_naming_the_model(tmp_path):
    from assay.errors import ConfigError
    from assay.types.engine_config import EngineConfig

    with pytest.raises(ConfigError, match=r"prices\['m'\]: expected \(prompt, completion"):
        EngineConfig(prices={"m": (1.0,)}, cache_path=tmp_path / "c.db")


def test_prices_file_may_give_the_cached_rates(engine_factory, tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-model": [2.0, 4.0, 0.5, 2.5],
                                  "other": {"prompt": 1, "completion": 2}}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    table = engine_factory(cache_mode="off").prices
    found = table.price("judge-model")
    assert (found.prompt, found.completion, found.cache_read, found.cache_write) == (
        2.0, 4.0, 0.5, 2.5)
    assert table.cost("judge-model", 1000, 100, cached_tokens=400, cache_write_tokens=100) \
        == pytest.approx((500 * 2.0 + 400 * 0.5 + 100 * 2.5 + 100 * 4.0) / 1e6)
    assert table.price("other").cache_read is None  # cached tokens at the prompt rate
    assert table.cost("other", 1000, 0, cached_tokens=400) == pytest.approx(1000 / 1e6)


async def test_generic_llm_judge_fills_agentv_variables(engine_factory, mock_server):
    judge = LLMJudge(prompt="Q: {{question}}\n{{reference_answer}}\n{{candidate_answer}}")
    case = Case(id="q", input="What is the capital?", expected_output="Paris is the capital")
    execution = Execution(output="the capital is Paris")
    score = await judge.evaluate(case, execution, EvalContext(engine_factory()))
    assert score.ok
    assert score.value == pytest.approx(similarity("Paris is the capital",
                                                   "the capital is Paris"))
    assert score.hits and score.misses


def test_every_retry_waits_by_the_one_backoff_rule():
    """Judge calls and batch API requests wait by ``RetryPolicy.wait_s``: a random wait up
    to the base doubled per attempt, capped, and never less than a provider's Retry-After."""
    from assay.types.engine_config import RetryPolicy

    policy = RetryPolicy(backoff_base_s=0.5, backoff_max_s=3.0)
    waits = [policy.wait_s(attempt) for attempt in (1, 2, 5) for _ in range(200)]
    assert all(0 <= w <= 0.5 for w in waits[:200]) and all(0 <= w <= 1.0 for w in waits[200:400])
    assert all(0 <= w <= 3.0 for w in waits[400:]) and max(waits[400:]) > 1.0
    assert all(policy.wait_s(1, retry_after=7.0) == 7.0 for _ in range(20))
