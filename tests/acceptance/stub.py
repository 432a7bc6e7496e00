"""The stub judge of the acceptance tests: a deterministic custom service keyed by markers.

``StubJudge(table)`` is registered with ``assay.register_service("stub", StubJudge(table))`` and
used as the model ``custom:stub``. For each request it finds the longest key of ``table`` that
occurs in the last user message (keys are markers such as ``⟦C01⟧`` placed in inputs) and
answers with its value (a re-ask, which adds a user message of its own, is answered by the
key of the latest user message that holds one):

- a dict: returned as JSON (after ``expand``, which turns a family's shorthand into the full
  answer; the Connexity shorthand lives in ``tests/acceptance/connexity/stub_tables.py``);
- ``"yes"`` / ``"no"``: ``{"rationale": "stub", "result": ...}``;
- ``INVALID`` (``"<<invalid>>"``): text that is not JSON, on every attempt, so the judge's
  re-asks run out and the score is the error ``judge_output_invalid``;
- ``Raw(text)``: the text as it is (a simulated user's message);
- a callable: called with the request, its result answered as above.

No key found raises, so a wrong prompt fails the test loudly. ``calls`` counts answers per
key and ``requests`` keeps every request, for tests that read what a judge was sent.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

INVALID = "<<invalid>>"
NOT_JSON = "I cannot answer that in JSON, sorry."


class Raw(str):
    """A value answered as plain text."""


Expand = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


def message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content or ""


def last_user_text(request: Mapping[str, Any]) -> str:
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    return message_text(users[-1]) if users else ""


class StubJudge:
    """A deterministic LLM service: answers come from ``table`` by marker."""

    def __init__(self, table: Mapping[str, Any], expand: Expand | None = None) -> None:
        self.table = dict(table)
        self.expand = expand
        self.calls: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.delay = 0.0
        """Seconds each answer takes (a judge that is not instant, for interruption tests)."""

    def key_for(self, request: Mapping[str, Any]) -> str:
        users = [message_text(m) for m in request.get("messages") or []
                 if m.get("role") == "user"]
        for text in reversed(users):
            found = [key for key in self.table if key in text]
            if found:
                return max(found, key=len)
        raise LookupError(f"stub judge: no table key in the user messages: "
                          f"{(users[-1] if users else '')[:300]!r}")

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        key = self.key_for(request)
        self.calls[key] += 1
        content = self.render(self.table[key], request)
        return {"id": "stub", "object": "chat.completion", "model": "stub",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    def render(self, value: Any, request: dict[str, Any]) -> str:
        if callable(value):
            return self.render(value(request), request)
        if isinstance(value, Raw):
            return str(value)
        if value == INVALID:
            return NOT_JSON
        if value in ("yes", "no"):
            return json.dumps({"rationale": "stub", "result": value})
        if isinstance(value, dict):
            return json.dumps(self.expand(value, request) if self.expand else value,
                              ensure_ascii=False)
        return str(value)

    def total(self) -> int:
        return sum(self.calls.values())


__all__ = ["INVALID", "Raw", "StubJudge", "last_user_text", "message_text"]
