"""Chat messages and the tool calls they carry (OpenAI's shape)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
)

from assay.types.base import _Model


class FunctionCall(_Model):
    """The ``function`` part of an OpenAI tool call; ``arguments`` is a JSON string."""

    name: str
    arguments: str = "{}"


class ToolCall(_Model):
    """A tool call in OpenAI chat format."""

    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    """One chat message in OpenAI format, tool calls included.

    Extra keys are allowed (providers add their own, such as ``refusal``) and kept.
    """

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        """The message's text, joining the text parts of multi-part content."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if isinstance(p, dict))
