"""JSON text of any record, the one way records are serialised."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
)


def dump_json(value: Any) -> str:
    """Serialise for prompts and files: JSON (never Python repr), UTF-8 kept readable."""
    import json

    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, ensure_ascii=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)
