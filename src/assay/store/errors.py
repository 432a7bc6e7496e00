"""The store's error type, apart from the store so that its migrations can raise it too."""

from __future__ import annotations

from assay.errors import ErrorCategory, EvaluationError


class StoreError(EvaluationError):
    """The store could not be read or written; what was already written stays readable."""

    def __init__(self, message: str) -> None:
        super().__init__("store_error", message, ErrorCategory.SYSTEM)
