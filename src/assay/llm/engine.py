"""The judge engine: the only code in assay that talks to models.

Every LLM call passes through :meth:`JudgeEngine.chat`, which is where concurrency, per-model
rate limits, bounded retries, timeouts, the response cache and token/cost accounting live.
Judges build a request and get back a :class:`ChatResult`, or a :class:`ProviderError` that
says why no answer could be had; they never see a provider.

Every text that leaves the engine in an error passes through the process's secret registry
(:data:`assay._util.redact.SECRETS`, to which the engine adds the environment's API keys and every
provider's keys, header values and base URL passwords), so a provider that echoes a request's
headers in its error body cannot leak a key into a score, a store or a terminal; an answer
that quotes a key is scrubbed where it is written (the cache, the store, files, responses).
Answers are bounded in size (``max_response_bytes``), a body that is malformed again and again
is not retried as if the fault were passing, and a judge's answer is cached only once the
judge has accepted it (:meth:`JudgeEngine.remember`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assay._util.redact import SECRETS, register, register_environment
from assay._util.user_code import error_text, user_code
from assay.errors import EvaluationError
from assay.llm.batch import BATCH_PRICE_FACTOR, BATCH_SLOT, BatchBook, BatchPending, Slot
from assay.llm.cache import ResponseCache, cache_key
from assay.llm.models import KEY_ENV_VARS, ModelSpec, parse_model
from assay.llm.pricing import PriceSource, PriceTable
from assay.llm.providers import Provider, close_http_session, create_provider
from assay.llm.rate_limits import Admission, ModelLimiter
from assay.llm.types import (
    DRY_RUN,
    BadResponse,
    CallStats,
    CallTimeout,
    ChatRequest,
    ChatResult,
    NotCached,
    ProviderError,
    RateLimited,
    ResponseTooLarge,
    RetriesExhausted,
)
from assay.types.engine_config import EngineConfig
from assay.types.usage import Usage

OFFLINE_CODES = frozenset({"unreachable_base_url", "missing_api_key"})
"""Preflight failures a cached re-run can go on past (see :meth:`JudgeEngine.preflight`):
the model is fine, only not callable here and now. An unknown model or an invalid URL is
still refused."""


class DryRunSkipped(ProviderError):
    """Raised instead of calling a model in a dry run; the call was counted, not made. An
    evaluator's score for it is not applicable (skipped), never an error."""

    code = DRY_RUN


@dataclass
class DryRunEstimate:
    """What a run would cost: calls and estimated tokens (about 4 characters a token), and
    the answers the response cache holds already (``cached``: a real run would not call for
    them, so they are in no other figure)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    by_model: dict[str, int] = field(default_factory=dict)


class JudgeEngine:
    """Resolves models, and makes calls on their behalf under one set of rules."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.prices = PriceTable(self.config.prices)
        self.cache = ResponseCache(self.config.cache_path) if self.config.cache_mode != "off" \
            else None
        self.usage = Usage()
        self.estimate = DryRunEstimate()
        register_environment(KEY_ENV_VARS)
        self.secrets = SECRETS
        """The process's secret registry (see :mod:`assay._util.redact`)."""
        self.cache_failures = 0
        self.cache_problem: str | None = None
        self._providers: dict[str, Provider] = {}
        self._by_string: dict[str, Provider] = {}
        self._limiters: dict[str, Admission] = {}
        self.admission: Callable[[str], Admission] | None = None
        """Where calls of a model are admitted when not here: a cluster's shared limiter,
        so workers together keep a provider's limits (None: this process's own)."""
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._preflighted: set[str] = set()
        self.offline: dict[str, str] = {}
        """Models that cannot be called now (no server, no key), by display name, each with
        why: a run with the response cache on goes on from the cache, and only the calls it
        does not hold fail (:class:`~assay.llm.types.NotCached`). See :meth:`preflight`."""
        self.offline_misses = 0
        """Calls of an offline model that the cache did not hold (each one failed)."""
        self._identities: dict[Provider, dict[str, Any]] = {}
        self._sources: dict[Provider, PriceSource | None] = {}
        self.estimate_batched = False
        """Whether a dry run estimates its calls at the batch APIs' price (a dry run of a
        batch run: the calls it would make are the ones it would batch)."""
        self.batch: BatchBook | None = None
        """A batch run's book (see :mod:`assay.llm.batch`): judge calls are collected for
        the providers' batch APIs, or answered from finished batches; None: calls are made."""

    # -- models ---------------------------------------------------------------------------

    def resolve(self, model: str | None = None) -> Provider:
        """The provider for a model string (the default model when None); raises ConfigError."""
        name = model or self.config.default_model
        provider = self._by_string.get(name)
        if provider is not None:
            return provider
        try:
            spec = parse_model(name)
            provider = self._providers.get(spec.name)
            if provider is None:
                provider = create_provider(spec)
                provider.max_response_bytes = self.config.max_response_bytes
                register(provider.secrets())
                self._providers[spec.name] = provider
        except EvaluationError as exc:
            raise self._scrubbed_config(exc) from None
        self._by_string[name] = provider
        return provider

    def _identity(self, provider: Provider) -> dict[str, Any]:
        """Who answers for ``provider``, worked out once (asked on every call)."""
        found = self._identities.get(provider)
        if found is None:
            found = self._identities[provider] = provider.cache_identity()
        return found

    def spec(self, model: str | None = None) -> ModelSpec:
        return self.resolve(model).spec

    def scrub(self, text: str) -> str:
        """``text`` with every secret the engine knows hidden: for any text from a model or
        a provider that may be shown or stored."""
        return self.secrets.scrub(text)

    async def preflight(self, *models: str | None, offline_ok: bool = True) -> None:
        """Check models can work (known, key present, server reachable) and the response
        cache can be used, before any call; a dry run checks them too, so it fails where the
        real run would.

        A re-run is meant to be free and to work offline: when a model's server cannot be
        reached or its key is not set, but the cache is read (mode ``use``) and already holds
        answers of that model, the model is marked :attr:`offline` instead of failing the
        run. Its cached answers are replayed; a call the cache does not hold fails alone,
        with the reason, as an error a resume with ``--retry-errors`` computes again.
        ``offline_ok`` False (a batch run, a cluster's workers) keeps the strict check."""
        if self.cache is not None:
            self.cache.check()
        for model in models or (None,):
            provider = self.resolve(model)
            if provider.spec.name in self._preflighted:
                continue
            try:
                await provider.preflight()
            except EvaluationError as exc:
                if not (offline_ok and self._may_replay(provider, exc)):
                    raise self._scrubbed_config(exc) from None
                self.offline[provider.spec.display] = self.scrub(exc.message)
            self._preflighted.add(provider.spec.name)

    def _may_replay(self, provider: Provider, exc: EvaluationError) -> bool:
        """Whether a model whose preflight failed with ``exc`` can still answer from the
        cache: it failed only for want of a server or a key, and the cache is read and holds
        some answer of this model (an empty cache would turn every call into an error where
        one clear message before any call is kinder)."""
        if exc.code not in OFFLINE_CODES or self.cache is None or \
                self.config.cache_mode != "use":
            return False
        try:
            return self.cache.holds_model(provider.spec.display)
        except (sqlite3.Error, OSError):
            return False

    def _scrubbed_config(self, exc: EvaluationError) -> EvaluationError:
        exc.message = self.scrub(exc.message)
        exc.args = (exc.message,)
        return exc

    # -- calls ----------------------------------------------------------------------------

    async def chat(self, request: ChatRequest, model: str | None = None, *, sample: int = 0,
                   remember: bool = True) -> ChatResult:
        """One chat completion, from the cache when possible, retried within bounds.

        ``sample`` numbers independent draws of the same request (repeats of a case): each
        sample is called and cached on its own. The cache key holds who answers (provider,
        model, endpoint) besides the request (see :func:`assay.llm.cache.cache_key`).
        With ``remember`` False the answer is not cached until the caller accepts it with
        :meth:`remember` (a judge does so once the answer validated). Every error raised
        carries a scrubbed message.
        """
        provider = self.resolve(model)
        name = provider.spec.display
        book = self.batch
        key = cache_key(self._identity(provider), request, sample) \
            if self.cache is not None or book is not None else ""
        if self.cache is not None and self.config.cache_mode == "use":
            cached = self._cache_get(key)
            if cached is not None:
                if self.config.dry_run:
                    self.estimate.cached += 1
                return self._account(provider, cached, CallStats(cached=True), key)
        if book is not None:
            slot = BATCH_SLOT.get()
            if slot is not None:
                result = self._from_batch(book, slot, provider, request, key)
                if result is not None:
                    if remember:
                        self.remember(result)
                    return result
        if self.config.dry_run:
            self._estimate(provider, request)
            raise DryRunSkipped(f"dry run: {name} not called")
        if self.offline and name in self.offline:
            self.offline_misses += 1
            raise NotCached(f"{name}: this call's answer is not in the response cache, and "
                            f"the model cannot be called now ({self.offline[name]})")
        started = time.perf_counter()
        try:
            response, attempts = await self._call_with_retries(provider, request)
        except ProviderError as exc:
            raise exc.scrubbed(self.scrub) from None
        stats = CallStats(attempts=attempts, latency_ms=(time.perf_counter() - started) * 1000)
        result = self._account(provider, response, stats, key)
        if remember:
            self.remember(result)
        return result

    def _from_batch(self, book: BatchBook, slot: Slot, provider: Provider,
                    request: ChatRequest, key: str) -> ChatResult | None:
        """A judge call of a batch run (see :mod:`assay.llm.batch`): the answer a finished
        batch gave, checked as a live answer is; None when the call is to be made live (its
        batch failed it, or its answer is unusable); else the request is collected for the
        next batch and :class:`BatchPending` raised."""
        response = book.take(key)
        if response is not None:
            problem = _shape_problem(response)
            if problem is None:
                try:
                    _check_size(response, self.config.max_response_bytes)
                except ResponseTooLarge as exc:
                    problem = str(exc)
            if problem is None:
                return self._account(provider, response, CallStats(attempts=1), key,
                                     batch=True)
            book.answers.pop(key, None)
            book.failed[key] = f"unusable answer: {problem}"
        if key in book.failed:
            return None
        book.collect(slot, provider.spec.display, key, request)
        raise BatchPending(f"{provider.spec.display}: collected for a batch")

    def remember(self, result: ChatResult) -> None:
        """Cache an answer the caller accepted (a cached one is already there)."""
        if self.cache is None or not result.key or result.stats.cached:
            return
        try:
            self.cache.put(result.key, result.model, result.response)
        except (sqlite3.Error, OSError) as exc:  # the answer stands; only the cache missed it
            self._cache_failed(exc)

    def forget(self, result: ChatResult) -> None:
        """Drop a cached answer the caller found unusable, so it is asked for again (not in
        a dry run, which changes nothing)."""
        if self.cache is None or not result.key or self.config.dry_run:
            return
        try:
            self.cache.delete(result.key)
        except (sqlite3.Error, OSError) as exc:
            self._cache_failed(exc)

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        try:
            return self.cache.get(key) if self.cache is not None else None
        except (sqlite3.Error, OSError) as exc:  # unreadable now: ask the model instead
            self._cache_failed(exc)
            return None

    def _cache_failed(self, exc: BaseException) -> None:
        self.cache_failures += 1
        if self.cache_problem is None and self.cache is not None:
            self.cache_problem = (f"the response cache {self.cache.path} failed: "
                                  f"{type(exc).__name__}: {exc}")

    async def _call_with_retries(self, provider: Provider,
                                 request: ChatRequest) -> tuple[dict[str, Any], int]:
        policy = self.config.retry
        name = provider.spec.display
        deadline = time.monotonic() + policy.total_timeout_s
        semaphore = self._semaphore()
        limiter = self._limiter(name)
        estimated_tokens = _estimate_tokens(request)
        attempt = 0  # attempts made so far
        bad_bodies = 0
        failure: ProviderError | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RetriesExhausted(
                    f"{name}: no answer within {policy.total_timeout_s:g}s ({attempt} "
                    f"attempts){_last(failure)}",
                    failure or CallTimeout("total time bound reached"), attempt)
            try:
                # Waiting for the rate limiter counts against the same time bound.
                await limiter.acquire(estimated_tokens, timeout=remaining)
            except TimeoutError:
                raise RetriesExhausted(
                    f"{name}: no answer within {policy.total_timeout_s:g}s: the model stays "
                    f"rate limited past the time bound ({attempt} attempts){_last(failure)}",
                    failure or RateLimited(f"{name}: rate limited"), attempt) from None
            attempt += 1
            if attempt > 1:
                self.usage.retries += 1
            throttled = False
            retry_after: float | None = None
            try:
                # A custom service or a plugin's provider is user code: an exit in it
                # fails this call, not the run.
                async with semaphore:
                    with user_code():
                        response = await provider.complete(
                            request, min(policy.call_timeout_s, remaining))
                problem = _shape_problem(response)
                if problem is not None:
                    raise BadResponse(f"{name}: unusable response: {problem}")
                _check_size(response, self.config.max_response_bytes)
                return response, attempt
            except ResponseTooLarge as exc:
                raise ResponseTooLarge(
                    f"{name}: {exc}; a judgement is a few kilobytes, so the model or server "
                    "is misbehaving (the bound is EngineConfig.max_response_bytes)") from None
            except ProviderError as exc:
                throttled = isinstance(exc, RateLimited)
                if exc.retry_after is not None:
                    retry_after = min(exc.retry_after, policy.max_retry_after_s)
                if not exc.retryable:
                    raise
                failure = exc
                if isinstance(exc, BadResponse):
                    bad_bodies += 1
            except TimeoutError:
                failure = CallTimeout(f"{name}: call timed out")
            except Exception as exc:  # a custom service or SDK failing in its own way
                raise ProviderError(f"{name}: the provider failed: {error_text(exc)}") \
                    from None
            finally:
                await limiter.release(throttled=throttled, retry_after=retry_after)
            if bad_bodies >= policy.max_bad_responses:
                raise RetriesExhausted(
                    f"{name}: answered with a malformed body {bad_bodies} times in "
                    f"{attempt} attempts, so it is not a passing fault; check that the model "
                    f"and server speak the chat-completions protocol. Last: {failure}",
                    failure, attempt)
            if attempt >= policy.max_attempts:
                raise RetriesExhausted(
                    f"{name}: {attempt} attempts failed; last: {failure}", failure, attempt)
            delay = policy.wait_s(attempt, retry_after)
            if retry_after is not None and retry_after >= deadline - time.monotonic():
                # The provider asks for a wait that outlasts the time bound: give up now
                # rather than sleep until the bound and give up then.
                raise RetriesExhausted(
                    f"{name}: no answer within {policy.total_timeout_s:g}s: asked to wait "
                    f"{retry_after:g}s ({attempt} attempts); last: {failure}",
                    failure, attempt)
            delay = min(delay, max(0.0, deadline - time.monotonic()))
            if delay > 0:
                await asyncio.sleep(delay)

    def _account(self, provider: Provider, response: dict[str, Any],
                 stats: CallStats, key: str = "", batch: bool = False) -> ChatResult:
        usage = response.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        stats.prompt_tokens = _token_count(usage.get("prompt_tokens"))
        stats.completion_tokens = _token_count(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):  # OpenAI's (and the Anthropic provider's) cached reads
            stats.cached_prompt_tokens = min(_token_count(details.get("cached_tokens")),
                                             stats.prompt_tokens)
            stats.cache_write_tokens = min(_token_count(details.get("cache_write_tokens")),
                                           stats.prompt_tokens - stats.cached_prompt_tokens)
        stats.cost = self.prices.cost(
            provider.priced_model, stats.prompt_tokens, stats.completion_tokens,
            free=provider.price_free, source=self._price_source(provider),
            cached_tokens=stats.cached_prompt_tokens,
            cache_write_tokens=stats.cache_write_tokens)
        if batch:  # answered through a batch API: billed at its rate
            stats.batch = True
            if stats.cost is not None:
                stats.cost *= BATCH_PRICE_FACTOR
            self.usage.__dict__["batch_calls"] += 1
        # Counted in place: this runs once per call, and building models here showed in
        # profiles of the hot path.
        total = self.usage
        if stats.cached:
            stats.cost = 0.0  # a cached answer costs nothing, priced or not
            total.cached_calls += 1
        else:
            total.calls += 1
            total.add_tokens(stats.prompt_tokens, stats.completion_tokens,
                             stats.cached_prompt_tokens, stats.cache_write_tokens, stats.cost)
        return ChatResult(response=response, stats=stats, key=key, model=provider.spec.display)

    def _estimate(self, provider: Provider, request: ChatRequest) -> None:
        prompt = _estimate_tokens(request)
        completion = int(request.get("max_tokens") or 256)
        est = self.estimate
        est.calls += 1
        est.prompt_tokens += prompt
        est.completion_tokens += completion
        cost = self.prices.cost(provider.priced_model, prompt, completion,
                                free=provider.price_free, source=self._price_source(provider))
        if cost is not None and self.estimate_batched:
            cost *= BATCH_PRICE_FACTOR
        est.cost = None if est.cost is None or cost is None else est.cost + cost
        shown = provider.spec.display
        est.by_model[shown] = est.by_model.get(shown, 0) + 1

    def _price_source(self, provider: Provider) -> PriceSource | None:
        """Where ``provider``'s model has a published price (asked once per provider)."""
        found = self._sources.get(provider, False)
        if found is False:
            found = self._sources[provider] = provider.price_source()
        return found  # type: ignore[return-value]

    def _limiter(self, name: str) -> Admission:
        limiter = self._limiters.get(name)
        if limiter is None:
            if self.admission is not None:
                limiter = self.admission(name)
            else:
                limit = self.config.rate_limits.get(name) or self.config.rate_limits.get(
                    name.split(":", 1)[-1])
                limiter = ModelLimiter(limit, self.config.concurrency)
            self._limiters[name] = limiter
        return limiter

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            if self._semaphores:  # a new loop: limiters hold primitives of the old one
                self._limiters.clear()
            semaphore = asyncio.Semaphore(self.config.concurrency)
            self._semaphores = {loop: semaphore}
        return semaphore

    async def aclose(self) -> None:
        """Close providers, HTTP sessions and the cache file."""
        for provider in self._providers.values():
            await provider.aclose()
        await close_http_session()
        if self.cache is not None:
            self.cache.close()


def _estimate_tokens(request: ChatRequest) -> int:
    chars = 0
    for message in request["messages"]:
        content = message.get("content")
        chars += len(content) if isinstance(content, str) else len(str(content or ""))
    return max(1, chars // 4)


def _last(failure: ProviderError | None) -> str:
    return f"; last: {failure}" if failure is not None else ""


def _token_count(value: Any) -> int:
    """A token count from a response's usage; anything that is not a count is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0
    return max(0, int(value)) if abs(value) < 1e15 else 0


def _check_size(response: dict[str, Any], max_chars: int) -> None:
    """Raise ResponseTooLarge when the answer's text is over ``max_chars``.

    HTTP providers stop reading at the byte bound already; an in-process service (custom,
    LiteLLM, local) has no bytes to count, so its answer's text is measured here.
    """
    message = response["choices"][0]["message"]
    content = message.get("content")
    size = len(content) if isinstance(content, str) else sum(
        len(str(part.get("text", ""))) for part in content or () if isinstance(part, dict))
    for call in message.get("tool_calls") or ():
        arguments = call["function"].get("arguments")
        size += len(arguments) if isinstance(arguments, str) else 0
    if size > max_chars:
        raise ResponseTooLarge(f"the answer is {size:,} characters, over the limit of "
                               f"{max_chars:,}")


def _shape_problem(response: Any) -> str | None:
    """Why a response is not a usable chat completion (None when it is).

    Checked for every provider, custom services included, so a malformed body is a retryable
    ``BadResponse`` that is never cached, not an exception deep inside a judge.
    """
    if not isinstance(response, dict):
        return f"expected a JSON object, got {type(response).__name__}"
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        return "no choices"
    first = choices[0]
    if not isinstance(first, dict):
        return "choices[0] is not an object"
    message = first.get("message")
    if not isinstance(message, dict):
        return "choices[0].message is not an object"
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        return f"the message content is {type(content).__name__}, not text"
    calls = message.get("tool_calls")
    if calls is not None and (not isinstance(calls, list) or not all(
            isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls)):
        return "tool_calls is not a list of function calls"
    return None
