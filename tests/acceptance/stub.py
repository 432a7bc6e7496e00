"""The stub judge of the acceptance tests: a deterministic custom service keyed by markers.

::

    stub = StubJudge({"⟦q1⟧": "yes", "⟦q2⟧": "no", "⟦q4⟧": INVALID})
    assay.register_service("stub", stub)        # then judge_model="custom:stub"

For each request the stub looks at the user messages from the last back to the first (a
re-ask's last user message is the re-ask itself) and takes the first that holds a key of
``table``; among the keys it holds, the longest wins. A key may be a tuple of markers that
must all occur (its length is theirs summed): ``("⟦g2⟧", "⟦concise⟧")`` answers one guideline
group of one row. Values:

- ``"yes"`` / ``"no"`` or a number: ``{"rationale": "stub", "result": value}``;
- ``INVALID`` (``"<<invalid>>"``): text that is not JSON, on every attempt, so the judge's
  re-asks run out and the score is the error ``judge_output_invalid``;
- a dict: returned as JSON (after ``expand``, which turns a family's shorthand into the full
  answer; the Connexity shorthand lives in ``tests/acceptance/connexity/stub_tables.py``);
- ``Raw(text)``: the text as it is (a simulated user's message);
- ``ToolCalls([(name, arguments), ...])``: an answer that calls those tools;
- a callable: called with the request, its result answered as above.

No key found raises, so a wrong prompt fails the test loudly (the last user message is kept
in ``unmatched``). ``calls`` counts answers per key, ``prompts`` keeps the matched user message
of every request and ``requests`` every request, for tests that read what a judge was sent.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

INVALID = "<<invalid>>"
NOT_JSON = "I cannot answer that in JSON, sorry."

Key = str | tuple[str, ...]
Expand = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


class Raw(str):
    """A value answered as plain text."""


class ToolCalls(list):  # type: ignore[type-arg]
    """A value answered as tool calls: ``ToolCalls([("get_span", {"span_id": "..."})])``."""


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

    def __init__(self, table: Mapping[Key, Any], expand: Expand | None = None) -> None:
        self.table = dict(table)
        self.expand = expand
        self.calls: Counter[Key] = Counter()
        self.prompts: list[str] = []
        self.unmatched: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.delay = 0.0
        """Seconds each answer takes (a judge that is not instant, for interruption tests)."""

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def match(self, text: str) -> Key | None:
        """The longest key whose markers all occur in ``text``."""
        best: Key | None = None
        best_length = -1
        for key in self.table:
            parts = key if isinstance(key, tuple) else (key,)
            if all(p in text for p in parts):
                length = sum(len(p) for p in parts)
                if length > best_length:
                    best, best_length = key, length
        return best

    def key_for(self, request: Mapping[str, Any]) -> tuple[Key, str]:
        users = [message_text(m) for m in request.get("messages") or []
                 if m.get("role") == "user"]
        for text in reversed(users):
            key = self.match(text)
            if key is not None:
                return key, text
        self.unmatched.append(users[-1] if users else "")
        raise LookupError(f"stub judge: no table key in the user messages: "
                          f"{(users[-1] if users else '')[:300]!r}")

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        key, text = self.key_for(request)
        self.calls[key] += 1
        self.prompts.append(text)
        value = self.table[key]
        if callable(value):
            value = value(request)
        message: dict[str, Any] = {"role": "assistant"}
        if isinstance(value, ToolCalls):
            message.update(content=None, tool_calls=[
                {"id": f"call_{len(self.requests)}_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for i, (name, arguments) in enumerate(value)])
        else:
            message["content"] = self.render(value, request)
        return {"id": "stub", "object": "chat.completion", "created": 0, "model": "stub",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    def render(self, value: Any, request: dict[str, Any]) -> str:
        if callable(value):
            return self.render(value(request), request)
        if isinstance(value, Raw):
            return str(value)
        if value == INVALID:
            return NOT_JSON
        if value in ("yes", "no") or (isinstance(value, int | float)
                                      and not isinstance(value, bool)):
            return json.dumps({"rationale": "stub", "result": value})
        if isinstance(value, dict):
            return json.dumps(self.expand(value, request) if self.expand else value,
                              ensure_ascii=False)
        return str(value)


__all__ = ["INVALID", "Raw", "StubJudge", "ToolCalls", "last_user_text", "message_text"]
