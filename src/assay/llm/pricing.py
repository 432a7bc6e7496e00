"""Token prices, to turn usage into money. Users override or extend the table.

Prices are USD per one million tokens (prompt, completion), matched on the model name without
its provider prefix; the longest matching prefix wins so dated snapshots
(``gpt-4o-mini-2024-07-18``) find their family. An unknown model has an unknown cost (None),
never a free one. ``$ASSAY_PRICES`` may name a JSON file of ``{"model": [prompt, completion]}``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from assay.errors import ConfigError

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5": (1.25, 10.00),
    "o4-mini": (1.10, 4.40),
    "o3-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-opus-4": (15.00, 75.00),
}


class PriceTable:
    """Looks up a model's price; free providers (local, fake) always cost 0."""

    def __init__(self, overrides: dict[str, tuple[float, float]] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES)
        self.prices.update(_from_env())
        self.prices.update(overrides or {})
        self._found: dict[str, tuple[float, float] | None] = {}

    def price(self, model: str) -> tuple[float, float] | None:
        """The (prompt, completion) price per million tokens; looked up once per model."""
        if model in self._found:
            return self._found[model]
        found = self._lookup(model)
        self._found[model] = found
        return found

    def _lookup(self, model: str) -> tuple[float, float] | None:
        if model in self.prices:
            return self.prices[model]
        bare = model.split(":", 1)[-1].split("#", 1)[-1]
        if bare in self.prices:
            return self.prices[bare]
        best = max((k for k in self.prices if bare.startswith(k)), key=len, default=None)
        return self.prices[best] if best else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int,
             free: bool = False) -> float | None:
        if free:
            return 0.0
        price = self.price(model)
        if price is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def _from_env() -> dict[str, tuple[float, float]]:
    path = os.environ.get("ASSAY_PRICES")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
        return {str(k): (float(v[0]), float(v[1])) for k, v in data.items()}
    except (OSError, ValueError, TypeError, IndexError, AttributeError) as exc:
        raise ConfigError(
            f"ASSAY_PRICES={path}: expected a JSON object of "
            f'{{"model": [usd_per_1m_prompt, usd_per_1m_completion]}} ({exc})',
            code="invalid_prices",
        ) from None
