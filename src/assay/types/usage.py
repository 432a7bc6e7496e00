"""Tokens, calls and cost, summed over judge calls or agent turns."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from assay.types.base import _Model


class Usage(_Model):
    """Judge calls, tokens and money spent on a score (or summed over a case or run).

    ``cost`` is None when any contributing call had no known price: an unknown cost is not
    a free one. ``prompt_tokens`` counts every prompt token; ``cached_prompt_tokens`` and
    ``cache_write_tokens`` say how many of them the provider read from, or wrote to, its
    prompt cache (priced at their own rates).
    """

    calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = Field(
        default=0, description="prompt tokens the provider read from its prompt cache "
        "(OpenAI's prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens)")
    cache_write_tokens: int = Field(
        default=0, description="prompt tokens written to the provider's prompt cache "
        "(Anthropic's cache_creation_input_tokens)")
    cost: float | None = 0.0

    def add(self, other: Usage) -> None:
        """Add ``other`` into this one, in place: the one rule every sum of usage follows
        (an unknown cost makes the sum's cost unknown)."""
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.retries += other.retries
        self.add_tokens(other.prompt_tokens, other.completion_tokens,
                        other.cached_prompt_tokens, other.cache_write_tokens, other.cost)

    def add_tokens(self, prompt: int, completion: int, cached_prompt: int, cache_write: int,
                   cost: float | None) -> None:
        """Add one call's (or one usage's) tokens and cost, in place: no model is built,
        which matters once per judge call."""
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cached_prompt_tokens += cached_prompt
        self.cache_write_tokens += cache_write
        self.cost = None if self.cost is None or cost is None else self.cost + cost

    def __add__(self, other: Usage) -> Usage:
        total = self.model_copy()
        total.add(other)
        return total

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages``, built once: a sum by ``+`` builds a model per term, which
        showed in the per-case profile."""
        total = cls()
        for u in usages:
            total.add(u)
        return total

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
