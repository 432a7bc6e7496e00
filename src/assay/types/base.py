"""What every noun shares: strict pydantic models, JSON values."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
)

JSONValue = Any
"""Anything JSON can hold; kept loose because agents return arbitrary structures."""


class _Model(BaseModel):
    # Built on first use, not at import: a run uses a few of these (see judges.base).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)
