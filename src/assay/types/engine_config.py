"""One typed object that configures the judge engine, instead of options copied everywhere."""

from __future__ import annotations

import functools
import os
import random
from pathlib import Path
from typing import Any, Literal, cast

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay._util.limits import Attempts, Concurrency, DelayS, Retries, TimeoutS
from assay._util.user_paths import user_path
from assay.errors import ConfigError

CacheMode = Literal["use", "refresh", "off"]
CACHE_MODES: tuple[CacheMode, ...] = ("use", "refresh", "off")
CACHE_ENV = "ASSAY_CACHE"
"""The environment variable that sets the cache mode of every command and entry point."""

DEFAULT_JUDGE_MODEL = "local:gemma-3-270m"
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""A judge answer larger than this fails its call: a judgement is a few kilobytes, and a
body of tens of megabytes would only fill memory, the store and the files."""


def cache_mode(given: str | None = None, where: str = "cache mode") -> CacheMode:
    """The response cache mode: ``given`` (an option, a field), else ``$ASSAY_CACHE``, else
    ``use``. The one rule for every command and entry point that builds an engine (through
    :class:`EngineConfig`, whose ``cache_mode`` left unset comes from here), so
    ``ASSAY_CACHE=off`` means off everywhere. A value that is no mode is a ConfigError naming
    where it came from (``where``, or the variable)."""
    if given is None:
        given = os.environ.get(CACHE_ENV, "").strip() or "use"
        where = CACHE_ENV
    if given not in CACHE_MODES:
        raise ConfigError(f"{where} {given!r}: expected use, refresh or off",
                          code="invalid_cache_mode")
    return cast(CacheMode, given)


def default_cache_path() -> Path:
    """The response cache file: ``$ASSAY_CACHE_DIR`` or the user cache dir."""
    env = os.environ
    return _cache_path(env.get("ASSAY_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME"))


@functools.lru_cache(maxsize=8)
def _cache_path(given: str | None, _xdg: str | None, _home: str | None) -> Path:
    """The cache file for these values of the variables it depends on, worked out once: every
    engine asks (one per ``assay.score`` call), and the user cache dir takes a while to find."""
    return user_path(given or platformdirs.user_cache_dir("assay")) / "responses.sqlite"


class RateLimit(BaseModel):
    """A per-model budget; None means unlimited."""

    model_config = ConfigDict(extra="forbid")

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


class RetryPolicy(BaseModel):
    """Bounded retries: by attempts and by total time, with exponential backoff and jitter."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: Attempts = 6
    total_timeout_s: TimeoutS = 300.0
    call_timeout_s: TimeoutS = 120.0
    backoff_base_s: DelayS = 0.5
    backoff_max_s: DelayS = 30.0
    max_retry_after_s: DelayS = 60.0
    max_bad_responses: Attempts = Field(
        default=4,
        description="malformed bodies (not JSON, no choices) one call accepts before it "
        "gives up: a proxy can garble an answer now and then, but a service that never "
        "speaks the protocol should fail in seconds, not after every attempt and backoff")

    def wait_s(self, attempt: int, retry_after: float | None = None) -> float:
        """How long to wait after ``attempt`` failed tries before the next: a random wait up
        to ``backoff_base_s`` doubled per attempt, at most ``backoff_max_s`` (full jitter, so
        many callers that failed together do not come back together), and at least the
        provider's ``retry_after`` when it gave one. The one rule of every retry: judge
        calls and batch API requests alike."""
        delay = random.uniform(0, min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1)))
        return delay if retry_after is None else max(delay, retry_after)


class EngineConfig(BaseModel):
    """Everything the judge engine needs; every layer passes this one object along."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    default_model: str = Field(
        default_factory=lambda: os.environ.get("ASSAY_JUDGE_MODEL") or DEFAULT_JUDGE_MODEL
    )
    concurrency: Concurrency = 32
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    cache_mode: CacheMode | None = Field(
        default=None, validate_default=True,
        description="use, refresh or off; given as None (or left out): $ASSAY_CACHE, else "
        "use. Always a mode once the config is built.")
    cache_path: Path = Field(default_factory=default_cache_path)
    reasks: Retries = 2
    prices: dict[str, tuple[float, ...]] = Field(
        default_factory=dict,
        description="model -> (USD per 1M prompt tokens, USD per 1M completion tokens), "
        "optionally followed by the rates of prompt tokens read from and written to the "
        "provider's prompt cache; overrides the maintained price table",
    )
    dry_run: bool = False
    max_response_bytes: int = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES, gt=0,
        description="a model answer larger than this fails its call, with a clear error")

    @field_validator("cache_mode", mode="before")
    @classmethod
    def _cache_mode(cls, value: Any) -> CacheMode:
        # ConfigError (not ValueError) passes through pydantic unchanged: one clear line.
        return cache_mode(value, "cache_mode")

    @field_validator("prices")
    @classmethod
    def _rates(cls, value: dict[str, tuple[float, ...]]) -> dict[str, tuple[float, ...]]:
        for model, rates in value.items():
            if not 2 <= len(rates) <= 4 or any(not 0 <= r < float("inf") for r in rates):
                raise ConfigError(
                    f"prices[{model!r}]: expected (prompt, completion[, cache_read"
                    "[, cache_write]]) in USD per 1M tokens, each a number of at least 0; "
                    f"got {list(rates)}", code="invalid_prices")
        return value

    @field_validator("cache_path")
    @classmethod
    def _expanded(cls, value: Path) -> Path:
        return user_path(value)

    def input_files(self) -> dict[Path, str]:
        """The response cache file, when the engine uses one: no output may be it."""
        return {} if self.cache_mode == "off" else {self.cache_path: "the response cache"}

    @field_validator("default_model")
    @classmethod
    def _named(cls, value: str) -> str:
        # ConfigError (not ValueError) passes through pydantic unchanged: one clear line.
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(
                "the judge model is empty; name one such as openai:gpt-4o-mini or "
                f"{DEFAULT_JUDGE_MODEL} (or leave the option out for the default)",
                code="unknown_model")
        return value.strip()
