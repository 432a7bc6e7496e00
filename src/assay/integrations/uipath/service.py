"""The request a UiPath ``llm_service`` receives with ``llm_service_mode="tools"``: the shape
UiPath 2.14's evaluators send.

UiPath's LLM judges (since its move to function calling for every model vendor) call
``await llm_service(**request)`` with::

    {"model": ..., "messages": [system, user], "temperature": ...,
     "tools": [{"type": "function", "function": {"name": "submit_evaluation",
                "description": "Submit the evaluation score and justification for the agent
                output", "parameters": {...}}}],
     "tool_choice": {"type": "required"},
     "max_tokens": ...}          # only when set; 8000 for Claude 4.5 models when unset

UiPath's documentation still describes the earlier contract (``response_format`` with a JSON
schema named ``evaluation_response`` and ``max_tokens`` always present, None allowed). That is
what a custom service gets by default here: a service is written from the documentation, and a
service written to it must keep working with only its import changed (one that reads
``response_format`` would fail on a tool-call request). The tool-call request is the option
for a service written against UiPath's code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOOL_DESCRIPTION", "uipath_tools_request"]

TOOL_DESCRIPTION = "Submit the evaluation score and justification for the agent output"
CLAUDE_MAX_TOKENS = 8000
"""UiPath's default ``max_tokens`` for the models that require one (Claude 4.5)."""
_NEEDS_MAX_TOKENS = ("claude-haiku-4-5", "claude-sonnet-4-5")


def uipath_tools_request(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (a function-calling request) as UiPath's evaluators send it."""
    out = dict(body)
    tools = out.get("tools")
    if isinstance(tools, list):
        out["tools"] = [_described(t) for t in tools]
        out["tool_choice"] = {"type": "required"}
    if out.get("max_tokens") is None:
        out.pop("max_tokens", None)
        model = out.get("model")
        if isinstance(model, str) and any(m in model for m in _NEEDS_MAX_TOKENS):
            out["max_tokens"] = CLAUDE_MAX_TOKENS
    return out


def _described(tool: Any) -> Any:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict):
        return tool
    return {**tool, "function": {**function, "description": TOOL_DESCRIPTION}}
