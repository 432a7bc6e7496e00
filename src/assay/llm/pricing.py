"""Token prices, to turn usage into money: current prices from a maintained table, which users
override or extend.

Where a price comes from, first match wins:

1. ``EngineConfig.prices`` and the JSON file named by ``$ASSAY_PRICES``
   (``{"model": [prompt, completion]}`` or ``[prompt, completion, cache_read, cache_write]``,
   USD per one million tokens), matched on the model name without its provider prefix; the
   longest matching prefix wins, so dated snapshots (``gpt-4o-mini-2024-07-18``) find their
   family;
2. the maintained table of the ``genai-prices`` package (else LiteLLM's ``model_cost``, where
   LiteLLM is installed), for a model whose provider publishes its prices: OpenAI, Azure
   OpenAI, Anthropic, a LiteLLM provider, or an OpenAI-compatible URL of a hosted service.
   A server of your own (``ollama:``, ``vllm:``, a URL on this machine or a private network)
   has no published price.

An unknown model has an unknown cost (None, shown as "unknown"), never a free one; the free
providers (the embedded model, ``fake:``) cost 0. Prompt tokens read from a provider's prompt
cache are priced at the cached rate, and tokens written to Anthropic's cache at its write rate
(each at the plain prompt rate when the table has none).

The maintained table is imported on the first price it is asked for (about a tenth of a second),
never by a run whose judges it cannot price.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from assay._util import jsondata
from assay._util.control_chars import quoted
from assay.errors import ConfigError

MILLION = 1_000_000

PUBLISHED = {"openai": "openai", "azure": "azure", "anthropic": "anthropic",
             "litellm": "litellm"}
"""assay's provider -> the provider id the maintained table knows it by."""


@dataclass(frozen=True, slots=True)
class Price:
    """USD per one million tokens. ``cache_read`` and ``cache_write`` are None when the table
    gives no cached rate (such tokens are then priced as plain prompt tokens)."""

    prompt: float
    completion: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float:
        """The cost of one call. ``prompt_tokens`` counts every prompt token, the cached
        reads and the cache writes among them (as OpenAI reports ``prompt_tokens``)."""
        cached = min(max(cached_tokens, 0), prompt_tokens)
        written = min(max(cache_write_tokens, 0), prompt_tokens - cached)
        plain = prompt_tokens - cached - written
        read_rate = self.prompt if self.cache_read is None else self.cache_read
        write_rate = self.prompt if self.cache_write is None else self.cache_write
        return (plain * self.prompt + cached * read_rate + written * write_rate
                + completion_tokens * self.completion) / MILLION


@dataclass(frozen=True, slots=True)
class PriceSource:
    """Where the maintained table looks a model up: its provider id there, or the URL of
    its API."""

    provider_id: str | None = None
    api_url: str | None = None


def price_source(provider: str, base_url: str | None) -> PriceSource | None:
    """Where a model of assay's ``provider`` (served at ``base_url``) has a published price;
    None for a server of one's own, whose price only an override can give."""
    if provider in PUBLISHED:
        return PriceSource(provider_id=PUBLISHED[provider])
    if provider == "http" and base_url and not _own_server(base_url):
        return PriceSource(api_url=base_url)
    return None


def _own_server(url: str) -> bool:
    """A URL on this machine or a private network: a server of one's own, not a hosted API."""
    host = (urlsplit(url).hostname or "").lower()
    if host in ("", "localhost") or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host  # a bare name resolves within the network
    return address.is_private or address.is_loopback or address.is_link_local


class PriceTable:
    """Looks up a model's price once per model, and turns usage into money."""

    def __init__(self, overrides: dict[str, Any] | None = None) -> None:
        self.prices: dict[str, Price] = _from_env()
        self.prices.update({k: as_price(v, f"prices[{k!r}]") for k, v in
                            (overrides or {}).items()})
        self._found: dict[tuple[str, PriceSource | None], Price | None] = {}

    def price(self, model: str, source: PriceSource | None = None) -> Price | None:
        """The model's price per million tokens, None when unknown; looked up once."""
        key = (model, source)
        if key in self._found:
            return self._found[key]
        found = self._override(model)
        if found is None and source is not None:
            found = published_price(model.split(":", 1)[-1].split("#", 1)[-1], source)
        self._found[key] = found
        return found

    def _override(self, model: str) -> Price | None:
        if not self.prices:
            return None
        if model in self.prices:
            return self.prices[model]
        bare = model.split(":", 1)[-1].split("#", 1)[-1]
        if bare in self.prices:
            return self.prices[bare]
        best = max((k for k in self.prices if bare.startswith(k)), key=len, default=None)
        return self.prices[best] if best else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int,
             free: bool = False, *, source: PriceSource | None = None,
             cached_tokens: int = 0, cache_write_tokens: int = 0) -> float | None:
        """What a call cost in USD; 0 for a free provider, None when the price is unknown."""
        if free:
            return 0.0
        price = self.price(model, source)
        if price is None:
            return None
        return price.cost(prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens)


def as_price(value: Any, where: str) -> Price:
    """A price as a user writes it: ``[prompt, completion]``, optionally followed by the
    cached-read and cache-write rates, or an object with those names; USD per 1M tokens."""
    if isinstance(value, Price):
        return value
    if isinstance(value, dict):
        value = [value.get("prompt"), value.get("completion"), value.get("cache_read"),
                 value.get("cache_write")]
    if not isinstance(value, list | tuple) or not 2 <= len(value) <= 4 or any(
            v is not None and not _a_rate(v) for v in value) or None in value[:2]:
        raise ConfigError(
            f"{where}: expected [usd_per_1m_prompt, usd_per_1m_completion] (optionally "
            "followed by the cached-read and cache-write rates), each a number from 0 to "
            f"{MAX_RATE:,.0f}", code="invalid_prices")
    rates = [None if v is None else float(v) for v in value] + [None, None]
    return Price(rates[0], rates[1], rates[2], rates[3])  # type: ignore[arg-type]


MAX_RATE = 1_000_000.0
"""The most a price may be, in USD per one million tokens (a dollar a token): a larger one is a
mistake, and a rate near the float's limit made costs infinite (shown, stored and gated on as
unknown) or, as an integer past it, stopped the run with an OverflowError."""


def _a_rate(value: Any) -> bool:
    """Whether ``value`` is a rate: a number (not a boolean) from 0 to :data:`MAX_RATE`; NaN
    is none (it compares false with everything)."""
    return not isinstance(value, bool) and isinstance(value, int | float) and \
        0 <= value <= MAX_RATE


def _from_env() -> dict[str, Price]:
    path = os.environ.get("ASSAY_PRICES")
    if not path:
        return {}
    try:
        data = jsondata.loads_unique(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"ASSAY_PRICES={path}: cannot read it as JSON ({exc})",
                          code="invalid_prices") from None
    if not isinstance(data, dict):
        raise ConfigError(f'ASSAY_PRICES={path}: expected a JSON object of {{"model": '
                          "[usd_per_1m_prompt, usd_per_1m_completion]}", code="invalid_prices")
    return {str(k): as_price(v, f"ASSAY_PRICES={path}: {quoted(k)}") for k, v in data.items()}


def published_price(model: str, source: PriceSource) -> Price | None:
    """The current price of ``model`` in the maintained table (genai-prices, else LiteLLM's
    ``model_cost``); None when neither is installed or neither knows the model."""
    try:
        return _genai_price(model, source)
    except ImportError:
        return _litellm_price(model, source)


def _genai_price(model: str, source: PriceSource) -> Price | None:
    import genai_prices

    try:
        found = genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model,
                                        provider_id=source.provider_id) \
            if source.api_url is None else \
            genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model,
                                    provider_api_url=source.api_url)
    except LookupError:
        return None
    rates = found.model_price
    prompt, completion = _rate(rates.input_mtok), _rate(rates.output_mtok)
    if prompt is None or completion is None:
        return None
    return Price(prompt, completion, _rate(rates.cache_read_mtok), _rate(rates.cache_write_mtok))


def _rate(value: Any) -> float | None:
    """A rate of the maintained table as a float: the base rate of a tiered price (a judge's
    prompt is far below the first tier)."""
    if value is None:
        return None
    return float(getattr(value, "base", value))


def _litellm_price(model: str, source: PriceSource) -> Price | None:
    try:
        from litellm import model_cost
    except ImportError:
        return None
    entry = model_cost.get(model) or model_cost.get(model.split("/", 1)[-1])
    if not isinstance(entry, dict) or source.api_url is not None:
        return None
    try:
        per_token = [entry.get("input_cost_per_token"), entry.get("output_cost_per_token"),
                     entry.get("cache_read_input_token_cost"),
                     entry.get("cache_creation_input_token_cost")]
        if per_token[0] is None or per_token[1] is None:
            return None
        rates = [None if v is None else float(v) * MILLION for v in per_token]
    except (TypeError, ValueError):
        return None
    return Price(rates[0], rates[1], rates[2], rates[3])  # type: ignore[arg-type]
