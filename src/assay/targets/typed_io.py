"""Typed agent functions: the declared input type built from the case's input, the declared
output type built from what the function returned.

``uipath new`` writes ``def main(input: EchoIn) -> EchoOut`` with two dataclasses, and
``uipath eval`` builds ``EchoIn`` from the eval set's ``inputs`` before calling it. A Python
agent here gets the same: a parameter annotated with a dataclass, a pydantic model or a
``TypedDict`` receives that type built from the case input (extra keys are left out, as UiPath
leaves them; values are checked and converted as pydantic converts them, so ``"2"`` becomes
``2`` for an ``int``). What it returns is read back the same way: a function that declares a
structured return type and returns a dict gets the dict checked against it, and a dataclass or
pydantic result becomes its fields (pydantic ones by alias, as UiPath dumps them).

An input or output that does not fit is the case's error, naming the type, the function's
parameter and each field that does not fit with why (``field 'repeat': Input should be a valid
integer (got 'two')``), never an ``AttributeError`` from inside the agent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

__all__ = ["TypeMismatch", "as_data", "build_value", "is_structured", "may_return_none",
           "output_data", "parameter_types", "return_type"]


class TypeMismatch(ValueError):
    """A value that does not fit a declared type; the message names the fields."""


def is_structured(annotation: Any) -> bool:
    """A dataclass, a pydantic model or a TypedDict: a type built from a JSON object."""
    if not isinstance(annotation, type):
        return False
    if dataclasses.is_dataclass(annotation):
        return True
    if issubclass(annotation, BaseModel):
        return True
    return typing.is_typeddict(annotation)


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The function's resolved annotations (empty when they cannot be resolved)."""
    target = inspect.unwrap(fn)
    if not inspect.isroutine(target) and callable(target):
        target = type(target).__call__
    with contextlib.suppress(Exception):
        return typing.get_type_hints(target)
    return {}


def parameter_types(fn: Callable[..., Any]) -> dict[str, type]:
    """Parameter name -> its structured annotation, for the parameters that have one."""
    return {name: hint for name, hint in _hints(fn).items()
            if name != "return" and is_structured(hint)}


def may_return_none(fn: Callable[..., Any]) -> bool:
    """Whether the function declares that it may answer nothing (``-> None``,
    ``-> str | None``): only then is a ``None`` result an answer rather than a forgotten
    ``return``."""
    hint = _hints(fn).get("return", inspect.Signature.empty)
    return hint is type(None) or type(None) in typing.get_args(hint)


def return_type(fn: Callable[..., Any]) -> type | None:
    """The function's structured return annotation, if it declares one."""
    hint = _hints(fn).get("return")
    return hint if is_structured(hint) else None


@functools.lru_cache(maxsize=256)
def _adapter(annotation: type) -> TypeAdapter[Any]:
    """How values of ``annotation`` are checked. A TypedDict is checked through a model of
    its fields (pydantic refuses ``typing.TypedDict`` before Python 3.12)."""
    if typing.is_typeddict(annotation):
        hints = typing.get_type_hints(annotation)
        required = getattr(annotation, "__required_keys__", frozenset(hints))
        fields: dict[str, Any] = {name: (hint, ... if name in required else None)
                                  for name, hint in hints.items()}
        model = create_model(annotation.__name__, __config__=ConfigDict(extra="ignore"),
                             **fields)
        return TypeAdapter(model)
    return TypeAdapter(annotation)


def build_value(annotation: type, value: Any, what: str) -> Any:
    """``value`` as an instance of ``annotation`` (a TypedDict stays a dict, holding only
    the keys it declares and was given); TypeMismatch naming ``what`` and each field."""
    typed_dict = typing.is_typeddict(annotation)
    if not typed_dict and isinstance(value, annotation):
        return value
    if not isinstance(value, dict):
        raise TypeMismatch(f"{what} does not fit {annotation.__name__}: expected an object "
                           f"with its fields ({', '.join(_field_names(annotation))}), got "
                           f"{_kind(value)}")
    try:
        built = _adapter(annotation).validate_python(value)
    except ValidationError as exc:
        raise TypeMismatch(f"{what} does not fit {annotation.__name__}: "
                           f"{_problems(exc)}") from None
    if typed_dict:
        return {k: v for k, v in built.model_dump().items() if k in value}
    return built


def as_data(value: Any) -> Any:
    """A structured value as its fields: a pydantic model by alias (as UiPath dumps it), a
    dataclass field by field; anything else unchanged."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def output_data(annotation: type | None, value: Any, what: str) -> Any:
    """What a function returned, as data: built as its declared ``annotation`` first when it
    declares a structured one (so a dict that lacks a field is an error naming it)."""
    if annotation is not None and value is not None and (
            typing.is_typeddict(annotation) or not isinstance(value, annotation)):
        value = build_value(annotation, as_data(value), what)
    return as_data(value)


def _field_names(annotation: type) -> list[str]:
    if dataclasses.is_dataclass(annotation):
        return [f.name for f in dataclasses.fields(annotation)]
    if issubclass(annotation, BaseModel):
        return [f.alias or name for name, f in annotation.model_fields.items()]
    return list(typing.get_type_hints(annotation))


def _kind(value: Any) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f"text {shown!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type(value).__name__


def _problems(exc: ValidationError) -> str:
    """Each field that does not fit, with why and the value given (at most five)."""
    parts = []
    errors = exc.errors()
    for error in errors[:5]:
        loc = ".".join(str(p) for p in error["loc"])
        given = "" if error["type"] == "missing" else f" (got {error.get('input')!r:.60})"
        parts.append(f"field {loc!r}: {error['msg']}{given}" if loc else
                     f"{error['msg']}{given}")
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more")
    return "; ".join(parts)
