"""What the agent judges read from a case and its execution: request, response, ground truth.

Databricks' and MLflow's judges take a *request* (text, chat messages or an inputs dict), a
*response* (text, a chat completion, a chat agent's messages, or the trace's root span output),
the ground truth (``expected_response`` or ``expected_facts``) and the retrieved context
(:func:`assay.traces.retrieval.retrieved_context`). Every agent judge reads them through these functions,
so a field is present or missing for all of them alike, and a missing one is named the same
way in every "not applicable" message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.messages import Message
from assay.types.spans import trace_output

RequestMode = Literal["last", "all"]
"""How a chat conversation becomes the request text: its last message (Databricks' documented
behaviour: judges see only the last entry), or the whole conversation as JSON."""


def missing(fields: list[str], metric: str) -> str:
    """The reason a judge did not apply, worded as Databricks words it (error 1001)."""
    return f"Missing required field(s): {', '.join(fields)} for metric: {metric}"


def request_text(case: Case, mode: RequestMode = "last") -> str | None:
    """The request as judges see it; None when there is none."""
    value: Any = case.input
    messages = _messages(value)
    if messages is not None:
        if not messages:
            return None
        if mode == "all":
            return dump_json(messages)
        return _content(messages[-1]) or None
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, dict):
        if not value:
            return None
        return case.question()
    return None


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """Chat messages as plain dicts, when the value is a conversation (a list of messages,
    or a dict with a ``messages`` list, or an ``input`` list as the Responses API and
    MLflow's conversation simulator send it); None otherwise."""
    if isinstance(value, dict):
        listed = value.get("messages", value.get("input"))
        if isinstance(listed, list) and listed and all(
                isinstance(m, dict | Message) for m in listed):
            value = listed
    if isinstance(value, list) and all(isinstance(m, dict | Message) for m in value):
        return [m.model_dump(mode="json", exclude_none=True) if isinstance(m, Message)
                else dict(m) for m in value]
    return None


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else dump_json(content)


def response_text(execution: Execution) -> str | None:
    """The agent's answer as text; None when there is none.

    Text as it is; a chat completion's first choice; a chat agent's last message; the
    trace's root span output when the execution has no output of its own (a root span whose
    output is null has none: it is not the answer ``"null"``); anything else as JSON. An
    empty string is an answer (an empty one); None is no answer.
    """
    output = execution.output
    if output is None:
        output = trace_output(execution.trace)  # an execution built without validation
        if output is None:
            return None
    return _as_answer(output)


def _as_answer(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        choices = output.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                return _content(message)
        messages = _messages(output)
        if messages:
            return _content(messages[-1])
        for key in ("content", "response", "output", "answer"):
            if isinstance(output.get(key), str):
                return str(output[key])
    messages = _messages(output)
    if messages:
        return _content(messages[-1])
    return dump_json(output)


@dataclass
class GroundTruth:
    """What a correct answer must say, as one claim text for a judge.

    ``ignored`` names ground truth given but not used: with both an expected response and
    expected facts, the expected response is the claim (as MLflow 3 does) and the facts are
    recorded as ignored rather than silently dropped.
    """

    claim: str
    source: Literal["expected_response", "expected_facts"]
    ignored: str | None = None


def ground_truth(case: Case) -> GroundTruth | None:
    """The claim a correctness or sufficiency judge checks; None when there is none."""
    expected = case.expected_output
    has_response = expected is not None and not (isinstance(expected, str) and
                                                 not expected.strip())
    facts = [f for f in case.expected_facts if f.strip()]
    if has_response:
        text = expected if isinstance(expected, str) else dump_json(expected)
        return GroundTruth(text, "expected_response",
                           ignored="expected_facts" if facts else None)
    if facts:
        return GroundTruth("".join(f"\n- {fact}" for fact in facts), "expected_facts")
    return None


def conversation(case: Case, execution: Execution) -> list[dict[str, Any]]:
    """The whole exchange as chat messages: a conversation assay played turn by turn is its
    transcript; otherwise the input conversation and the agent's messages (or its answer as
    one assistant turn)."""
    if execution.conversation is not None:
        return [m.model_dump(mode="json", exclude_none=True) for m in execution.messages]
    found = _messages(case.input) or ([{"role": "user", "content": request_text(case)}]
                                      if request_text(case) else [])
    if execution.messages:
        found += [m.model_dump(mode="json", exclude_none=True) for m in execution.messages]
    else:
        answer = response_text(execution)
        if answer is not None:
            found.append({"role": "assistant", "content": answer})
    return found
