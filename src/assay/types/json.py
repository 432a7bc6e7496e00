"""JSON text of any record, the one way records are serialised."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
)


def dump_json(value: Any, indent: int | None = None, tight: bool = False) -> str:
    """Serialise for prompts and files: JSON (never Python repr), UTF-8 kept readable; one
    line unless ``indent`` is given, without spaces after ``,`` and ``:`` when ``tight`` (as
    JavaScript's ``JSON.stringify`` writes it)."""
    import json

    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, ensure_ascii=False, default=_json_default, indent=indent,
                      separators=(",", ":") if tight else None)


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)
