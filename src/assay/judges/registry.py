"""Evaluator type names -> classes, and building evaluators from plain dicts.

Each built-in evaluator registers itself with :func:`register`; files (EVAL.yaml, UiPath JSON)
and the Python API build them through :func:`build`, which turns pydantic's complaints into one
:class:`EvaluationError` naming the evaluator and field.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError

from assay.errors import EvaluationError

E = TypeVar("E")
EVALUATORS: dict[str, type[Any]] = {}


def register(cls: type[E]) -> type[E]:
    """Class decorator: make the evaluator buildable by its ``type`` name."""
    EVALUATORS[cls.type] = cls  # type: ignore[attr-defined]
    return cls


def build(config: dict[str, Any], where: str = "evaluator") -> Any:
    """Build an evaluator from ``{"type": ..., **fields}``; raise a readable error."""
    from assay import judges  # noqa: F401  (registers the built-ins)

    kind = config.get("type")
    if kind not in EVALUATORS:
        raise EvaluationError(
            "unknown_evaluator_type",
            f"{where}: unknown evaluator type {kind!r}; known: {', '.join(sorted(EVALUATORS))}",
        )
    fields = {k: v for k, v in config.items() if k != "type"}
    try:
        return EVALUATORS[kind].model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or kind}: {e['msg']}" for e in exc.errors())
        raise EvaluationError("invalid_evaluator_config",
                              f"{where} ({kind}): {problems}") from None
