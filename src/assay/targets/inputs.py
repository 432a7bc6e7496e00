"""How a case's input is handed to an agent, and how an agent's text answer is read back.

Targets speak different languages (a function argument, stdin, a chat request); these helpers
keep the conversions the same everywhere: text stays text, anything structured travels as
JSON, and messages are OpenAI-style dicts.
"""

from __future__ import annotations

import time
from typing import Any

from assay._util import jsondata
from assay.types.case import Case, CaseInput
from assay.types.json import dump_json
from assay.types.messages import Message


def plain_input(value: CaseInput) -> str | dict[str, Any] | list[dict[str, Any]]:
    """The input as plain Python: messages become dicts, so user code needs no assay types."""
    if isinstance(value, list):
        return [m.model_dump(mode="json", exclude_none=True) for m in value]
    return value


def input_text(value: CaseInput) -> str:
    """The input as one string: text unchanged, anything else as JSON."""
    return value if isinstance(value, str) else dump_json(plain_input(value))


def input_messages(case: Case) -> list[dict[str, Any]]:
    """The input as a chat conversation: messages as given, anything else as one user turn.

    A dict input that carries a ``messages`` list is taken as that conversation.
    """
    value = case.input
    if isinstance(value, list):
        return [m.model_dump(mode="json", exclude_none=True) for m in value]
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return [dict(m) for m in value["messages"] if isinstance(m, dict)]
    return [{"role": "user", "content": input_text(value)}]


def parse_output(text: str) -> Any:
    """An answer read from text: a JSON object or array is parsed, anything else kept as text
    (so an answer of ``42`` stays the string an agent printed)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return jsondata.loads(stripped)
        except ValueError:
            pass
    return stripped


def assistant_message(raw: dict[str, Any]) -> Message | None:
    """An assistant message from a response's message dict, or None when it is not one."""
    try:
        return Message.model_validate({"role": "assistant", **raw})
    except ValueError:
        return None


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` value)."""
    return (time.perf_counter() - started) * 1000


def non_negative(value: Any) -> float | None:
    """A figure an agent or a recording reported (tokens, a cost, a duration), when it is a
    number >= 0; None for anything else (AgentV drops those too)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None
