"""A deterministic judge for acceptance tests, registered as an assay custom service.

::

    stub = StubJudge({"⟦q1⟧": "yes", "⟦q2⟧": "no", "⟦q4⟧": "<<invalid>>"})
    assay.register_service("stub", stub)        # then judge_model="custom:stub"

For each request the stub finds the **longest key of the table that occurs in the user
message** and answers with its value. A re-ask's last user message is the re-ask itself, so
the stub looks at the user messages from the last back to the first and takes the first that
holds a key. A key may also be a tuple of markers that must all occur (its length is theirs
summed): ``("⟦g2⟧", "⟦concise⟧")`` answers one guideline group of one row.

Values:

- ``"yes"`` / ``"no"``: ``{"rationale": "stub", "result": "yes"}`` (yes/no judges);
- a number: ``{"rationale": "stub", "result": n}`` (custom judges that answer a score);
- ``"<<invalid>>"``: text that is not JSON, on every attempt (so after the engine's re-asks
  the score is ``judge_output_invalid``);
- ``{"scores": [TR, PE, RI, GF, IC, IG, CM, RD], "outcomes": [bool, ...]}``: the Connexity
  judge's strict answer (see :func:`connexity_answer`);
- any other dict: returned as JSON as it is.

No key found raises, so a prompt that lost its marker fails the test loudly (the request is
kept in ``unmatched``). ``calls`` counts requests per key; ``prompts`` keeps the matched user
message of every request, in order.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

Key = str | tuple[str, ...]

CONNEXITY_METRICS = ("tool_routing", "parameter_extraction", "result_interpretation",
                     "grounding_fidelity", "instruction_compliance", "information_gathering",
                     "conversation_management", "response_delivery")
INVALID = "<<invalid>>"


class StubJudge:
    """See the module docstring."""

    def __init__(self, table: Mapping[Key, Any]) -> None:
        self.table = dict(table)
        self.calls: Counter[Key] = Counter()
        self.prompts: list[str] = []
        self.unmatched: list[str] = []

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def match(self, text: str) -> Key | None:
        best: Key | None = None
        best_length = -1
        for key in self.table:
            parts = key if isinstance(key, tuple) else (key,)
            if all(p in text for p in parts):
                length = sum(len(p) for p in parts)
                if length > best_length:
                    best, best_length = key, length
        return best

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        users = [m.get("content") for m in request.get("messages", [])
                 if m.get("role") == "user" and isinstance(m.get("content"), str)]
        for text in reversed(users):
            key = self.match(text)
            if key is not None:
                break
        else:
            self.unmatched.append(users[-1] if users else "")
            raise LookupError("stub judge: no key of the table occurs in the request")
        self.calls[key] += 1
        self.prompts.append(text)
        return completion(expand(self.table[key], text))


def expand(value: Any, prompt: str) -> str:
    """The answer text for a table value (see the module docstring)."""
    if value == INVALID:
        return "this is not JSON at all"
    if value in ("yes", "no"):
        return json.dumps({"rationale": "stub", "result": value})
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps({"rationale": "stub", "result": value})
    if isinstance(value, dict) and set(value) <= {"scores", "outcomes"} and "scores" in value:
        return json.dumps(connexity_answer(value["scores"], value.get("outcomes", []), prompt))
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def connexity_answer(scores: list[int], outcomes: list[bool], prompt: str) -> dict[str, Any]:
    """The Connexity judge's strict answer: one object per metric (justification "stub",
    failure_code "stub_issue" when the score is 2 or less, no turns) and, for outcomes, the
    statements copied from the prompt's numbered list."""
    answer: dict[str, Any] = {}
    for metric, score in zip(CONNEXITY_METRICS, scores, strict=True):
        answer[metric] = {"score": score, "justification": "stub",
                          "failure_code": "stub_issue" if score <= 2 else None, "turns": []}
    if outcomes:
        statements = re.findall(r"^\s*\d+\.\s+(.+?)\s*$", prompt, re.M)
        answer["expected_outcomes"] = [
            {"statement": statements[i] if i < len(statements) else "", "passed": passed,
             "justification": "stub"} for i, passed in enumerate(outcomes)]
    return answer


def completion(content: str) -> dict[str, Any]:
    return {"id": "stub", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
