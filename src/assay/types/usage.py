"""Tokens, calls and cost, summed over judge calls or agent turns."""

from __future__ import annotations

from collections.abc import Iterable

from assay.types.base import _Model


class Usage(_Model):
    """Judge calls, tokens and money spent on a score (or summed over a case or run).

    ``cost`` is None when any contributing call had no known price: an unknown cost is not
    a free one.
    """

    calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0

    def __add__(self, other: Usage) -> Usage:
        # Validated: pydantic's check of six numbers (4 us) is quicker than model_construct,
        # which builds a model field by field in Python (5 us), and sums run per call.
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Usage(
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            retries=self.retries + other.retries,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=cost,
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages``, built once: a sum by ``+`` builds a model per term, which
        showed in the per-case profile."""
        calls = cached_calls = retries = prompt_tokens = completion_tokens = 0
        cost: float | None = 0.0
        for u in usages:
            calls += u.calls
            cached_calls += u.cached_calls
            retries += u.retries
            prompt_tokens += u.prompt_tokens
            completion_tokens += u.completion_tokens
            cost = None if cost is None or u.cost is None else cost + u.cost
        return cls(calls=calls, cached_calls=cached_calls, retries=retries,
                   prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost=cost)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
