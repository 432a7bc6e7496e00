"""Recorded transcripts as the agent: grading sessions that already happened (AgentV 4's
``agentv eval --transcript FILE``), with ``assay run --transcript FILE`` or ``provider:
transcript`` and ``path`` in a targets file.

The file is AgentV 4's transcript JSONL (what ``agentv import`` writes from Claude, Codex or
Copilot sessions): one row per message, ``{test_id, message_index, role, content, tool_calls:
[{tool, input, output, id}], transcript_token_usage: {input, output},
transcript_duration_ms, transcript_cost_usd, ...}``. The rows of a test, in
``message_index`` order, are its execution: the last assistant text is the answer, each tool
call an OpenAI-style call followed by its result, the transcript's tokens, cost and duration
its usage and latency.

A transcript answers the case whose id is its ``test_id`` (AgentV 4 pairs them by position
instead, so a reordered file grades the wrong sessions). A case with no transcript, or a
transcript no case asks for, is refused before anything is judged, naming them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from assay.errors import ConfigError
from assay.targets.base import RecordedOutput
from assay.targets.command import token_usage
from assay.targets.config import FieldSpec, TargetConfig
from assay.targets.inputs import non_negative
from assay.targets.recorded import jsonl_rows
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.messages import Message


class TranscriptTarget(RecordedOutput):
    """Answers each case with the recorded session of the same id."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "path": FieldSpec((str,), "a transcript JSONL file (AgentV's), relative to the "
                          "project"),
    }
    REQUIRED: ClassVar[tuple[tuple[str, ...], ...]] = (("path",),)
    name = "transcript"

    def __init__(self, outputs: dict[str, Execution], source: Path) -> None:
        super().__init__(outputs)
        self.source = source

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> TranscriptTarget:
        target = load_transcripts(base_dir / str(config.get("path")))
        target.name = config.name
        return target

    async def run(self, case: Case) -> Execution:
        found = self.outputs.get(case.id)
        if found is None:
            return Execution(input=case.input, error=f"no transcript for case {case.id!r} in "
                             f"{self.source}")
        return found.model_copy(update={"input": case.input}, deep=True)

    def check_cases(self, case_ids: Iterable[str], selected: bool) -> None:
        """Refuse a run where a case has no transcript, or (when every case is run) a
        transcript has no case: a mismatched file would grade the wrong sessions."""
        ids = list(case_ids)
        missing = [i for i in ids if i not in self.outputs]
        extra = [] if selected else [i for i in self.outputs if i not in set(ids)]
        if missing or extra:
            said = [f"no transcript for case(s) {_some(missing)}" if missing else "",
                    f"transcript(s) for no case: {_some(extra)}" if extra else ""]
            raise ConfigError(f"{self.source}: " + "; ".join(s for s in said if s) +
                              " (a transcript answers the case whose id is its test_id)",
                              code="invalid_target")


def _some(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def load_transcripts(path: Path) -> TranscriptTarget:
    """The transcripts of a JSONL file by test id; a bad row is a ConfigError at
    ``file:line`` saying what was expected."""
    rows: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for where, row in jsonl_rows(path, "transcript file"):
        test_id, index = _key(row, where)
        rows.setdefault(test_id, []).append((index, row))
    if not rows:
        raise ConfigError(f"transcript file {path} is empty", code="invalid_target")
    outputs = {test_id: _execution(sorted(found, key=lambda r: r[0]), f"{path}")
               for test_id, found in rows.items()}
    return TranscriptTarget(outputs, path)


def _key(row: Any, where: str) -> tuple[str, int]:
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: a transcript row must be a JSON object",
                          code="invalid_target")
    test_id, index = row.get("test_id"), row.get("message_index", 0)
    if not isinstance(test_id, str) or not test_id:
        raise ConfigError(f"{where}: a transcript row needs 'test_id' (the case it answers)",
                          code="invalid_target")
    if isinstance(index, bool) or not isinstance(index, int):
        raise ConfigError(f"{where}: message_index must be a whole number",
                          code="invalid_target")
    if row.get("role") not in ("system", "user", "assistant", "tool", "developer"):
        raise ConfigError(f"{where}: role {row.get('role')!r} is not a message role "
                          "(expected: user, assistant, tool or system)", code="invalid_target")
    return test_id, index


def _execution(rows: list[tuple[int, dict[str, Any]]], where: str) -> Execution:
    """One session's rows, in order, as an execution."""
    messages: list[Message] = []
    for _, row in rows:
        messages.extend(_messages(row, where))
    said = [m for m in messages if m.role == "assistant" and m.content not in (None, "", [])]
    first = rows[0][1]
    return Execution(input="", output=said[-1].text() if said else None, messages=messages,
                     usage=token_usage(first.get("transcript_token_usage"),
                                       first.get("transcript_cost_usd")),
                     latency_ms=non_negative(first.get("transcript_duration_ms")),
                     error=None if said else "the transcript has no assistant answer")


def _messages(row: dict[str, Any], where: str) -> list[Message]:
    """A row as a message (and, for each tool call with an output, the tool's reply)."""
    content = row.get("content")
    if content is not None and not isinstance(content, str | list):
        content = json.dumps(content, ensure_ascii=False)
    calls = [c for c in row.get("tool_calls") or [] if isinstance(c, dict) and c.get("tool")]
    out: list[dict[str, Any]] = [{"role": row["role"], "content": content,
                                  **({"name": row["name"]} if row.get("name") else {})}]
    if calls:
        out[0]["tool_calls"] = [{"id": c.get("id") or f"call_{i}", "type": "function",
                                 "function": {"name": str(c["tool"]), "arguments": json.dumps(
                                     c.get("input") if c.get("input") is not None else {},
                                     ensure_ascii=False)}} for i, c in enumerate(calls)]
        out += [{"role": "tool", "tool_call_id": c.get("id") or f"call_{i}",
                 "content": c["output"] if isinstance(c["output"], str)
                 else json.dumps(c["output"], ensure_ascii=False)}
                for i, c in enumerate(calls) if "output" in c]
    try:
        return [Message.model_validate(m) for m in out]
    except ValidationError as exc:
        raise ConfigError(f"{where}: test {row.get('test_id')!r} message "
                          f"{row.get('message_index')}: {exc.errors()[0]['msg']}",
                          code="invalid_target") from None
