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
    batch_calls: int = Field(
        default=0, description="calls (among ``calls``) answered through a provider's batch "
        "API, priced at its batch rate (half the price)")
    cost: float | None = 0.0

    def add(self, other: Usage) -> None:
        """Add ``other`` into this one, in place: the one rule every sum of usage follows
        (an unknown cost makes the sum's cost unknown)."""
        mine, theirs = self.__dict__, other.__dict__
        mine["calls"] += theirs["calls"]
        mine["cached_calls"] += theirs["cached_calls"]
        mine["retries"] += theirs["retries"]
        mine["batch_calls"] += theirs["batch_calls"]
        self.add_tokens(theirs["prompt_tokens"], theirs["completion_tokens"],
                        theirs["cached_prompt_tokens"], theirs["cache_write_tokens"],
                        theirs["cost"])

    def add_tokens(self, prompt: int, completion: int, cached_prompt: int, cache_write: int,
                   cost: float | None) -> None:
        """Add one call's (or one usage's) tokens and cost, in place. The values are numbers
        already checked, so they are added to the fields as they are held: pydantic's
        attribute assignment (a Python call a field) showed in every case's sums."""
        mine = self.__dict__
        mine["prompt_tokens"] += prompt
        mine["completion_tokens"] += completion
        mine["cached_prompt_tokens"] += cached_prompt
        mine["cache_write_tokens"] += cache_write
        mine["cost"] = None if mine["cost"] is None or cost is None else mine["cost"] + cost

    def __add__(self, other: Usage) -> Usage:
        return Usage.total((self, other))

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
