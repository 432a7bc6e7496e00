"""What a pydantic ValidationError says, as one line a person reads: each field, and why."""

from __future__ import annotations

from pydantic import ValidationError


def field_problems(exc: ValidationError, whole: str = "value", limit: int = 5) -> str:
    """``loc: msg`` of the first ``limit`` errors, joined by ``; ``; an error about the value
    as a whole (no location) is named ``whole``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or whole}: {e['msg']}"
                     for e in exc.errors()[:limit])
