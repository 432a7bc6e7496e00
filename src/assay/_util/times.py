"""Times as the API sends them beside its epoch seconds: ISO 8601 in UTC, to the second."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(seconds: float | None) -> str | None:
    """``1795711497.26`` -> ``"2026-11-26T16:44:57Z"``; None stays None."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["iso_utc"]
