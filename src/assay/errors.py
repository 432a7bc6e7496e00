"""Errors that stop work before it starts.

Configuration problems (an unknown model, a missing key, a template with an unknown variable)
raise :class:`EvaluationError` before any call is made. Failures *during* evaluation never
raise out of an evaluator: they become error scores (see :class:`assay.types.score.Score`).
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCategory(StrEnum):
    """Whose problem it is: the user's input, the system, or unknown."""

    USER = "user"
    SYSTEM = "system"
    UNKNOWN = "unknown"


class EvaluationError(Exception):
    """A problem found before evaluation; ``code`` is stable, ``message`` says what to fix."""

    def __init__(
        self, code: str, message: str, category: ErrorCategory = ErrorCategory.USER
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.category = category

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "category": self.category.value}


class ConfigError(EvaluationError):
    """A model string, key, URL or option that cannot work."""

    def __init__(self, message: str, code: str = "invalid_config") -> None:
        super().__init__(code, message, ErrorCategory.USER)


class TemplateError(EvaluationError):
    """A prompt template that references a variable nobody will fill."""

    def __init__(self, message: str) -> None:
        super().__init__("unknown_template_variable", message, ErrorCategory.USER)
