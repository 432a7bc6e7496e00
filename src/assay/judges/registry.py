"""Evaluator type names -> classes, and building evaluators from plain dicts.

Each built-in evaluator registers itself with :func:`register`; files (EVAL.yaml, UiPath JSON)
and the Python API build them through :func:`build`, which turns pydantic's complaints into one
:class:`EvaluationError` naming the evaluator and field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from assay.errors import EvaluationError
from assay.registry import REGISTRY, evaluator

register = evaluator
"""Class decorator: make an evaluator buildable by its ``type`` (:func:`assay.registry.evaluator`)."""

class _Evaluators(Mapping[str, type[Any]]):
    """The registry's evaluator table as a mapping: looking a name up imports only the module
    that defines it; listing the names imports every built-in (plugins once looked for)."""

    def __getitem__(self, kind: str) -> type[Any]:
        found = evaluator_class(kind)
        if found is None:
            raise KeyError(kind)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(list(REGISTRY.table("evaluator")))

    def __len__(self) -> int:
        return len(REGISTRY.table("evaluator"))


EVALUATORS: Mapping[str, type[Any]] = _Evaluators()
"""Evaluator type names -> classes, built-ins and plugins, imported as they are asked for."""


def evaluator_class(kind: Any) -> type[Any] | None:
    """The class registered for an evaluator type, installed plugins included; None if none."""
    if not isinstance(kind, str):
        return None
    found: type[Any] | None = REGISTRY.get("evaluator", kind)
    return found


def unknown_type(kind: str) -> str:
    """The words for an evaluator type that is not registered, with the name meant when one
    is close (``contain``: did you mean 'contains'?), as every reader of evaluators says it."""
    from assay._util.names import did_you_mean

    return f"unknown evaluator type {kind!r}" + did_you_mean(kind, REGISTRY.names("evaluator"))


def build(config: dict[str, Any], where: str = "evaluator") -> Any:
    """Build an evaluator from ``{"type": ..., **fields}``; raise a readable error."""
    kind = config.get("type")
    cls = evaluator_class(kind)
    if cls is None:
        raise EvaluationError(
            "unknown_evaluator_type",
            f"{where}: {unknown_type(str(kind))}; "
            f"known: {', '.join(REGISTRY.names('evaluator'))}",
        )
    fields = {k: v for k, v in config.items() if k != "type"}
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(_problem(cls, kind, e) for e in exc.errors())
        raise EvaluationError("invalid_evaluator_config",
                              f"{where} ({kind}): {problems}") from None


def field_names(cls: type[Any]) -> list[str]:
    """The keys an evaluator type's configuration takes (``type`` first), as written: the
    names a problem with an unknown key lists."""
    names = ["type"]
    for name, info in cls.model_fields.items():
        names.append(info.alias if isinstance(info.alias, str) else name)
    return names


def _problem(cls: type[Any], kind: Any, error: Any) -> str:
    """One validation error of an evaluator's configuration, in the words a suite file's
    problem uses: an unknown key is named with the keys there are, not pydantic's "Extra
    inputs are not permitted"."""
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden" and len(loc) == 1:
        return (f"unknown key {loc[0]!r} for evaluator type {kind!r} (expected: one of "
                f"{', '.join(field_names(cls))})")
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{'.'.join(str(p) for p in loc) or kind}: {message}"
