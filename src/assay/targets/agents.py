"""Coding agents as targets, with the command lines AgentV runs them with.

A targets file names them by AgentV's provider names::

    - name: claude
      provider: claude-code          # also claude, claude-cli
      model: sonnet                  # optional
      args: [--max-turns, "5"]       # optional, before the prompt
      cwd: workspace                 # optional, relative to the project
      timeout_seconds: 600

``claude-code``
    ``claude --output-format stream-json --verbose -p [--model M] [ARGS] PROMPT``; the stream's
    ``result`` is the answer, its ``tool_use`` blocks become tool calls (with their results),
    its usage and cost the execution's.
``codex`` (``codex-cli``)
    ``codex --ask-for-approval never exec --json --color never --skip-git-repo-check
    [--model M] [ARGS] -`` with the prompt on stdin; the last agent message is the answer,
    command executions become ``shell`` tool calls.
``copilot`` (``copilot-cli``)
    ``copilot -s --allow-all-tools --no-color [--model M] [ARGS] -p PROMPT``; stdout is the
    answer.
``pi`` (``pi-coding-agent``)
    ``pi [--provider P] [--model M] --mode json --print --no-session [ARGS] PROMPT``; the
    ``agent_end`` event's messages give the answer and tool calls.

The prompt is the case's input as text (``system_prompt``, when set, goes before it). Every
command runs as an argument list through :mod:`assay._util.processes` (no shell; the prompt is one
argument or stdin, whatever it holds), in its own process group, killed on timeout. A
non-zero exit, or an agent that reports an error, is the execution's error with the tail of
stderr; output that cannot be read as the agent's stream is used as plain text.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, ClassVar

from assay._util import jsondata
from assay._util.processes import StartFailed, run_program
from assay.errors import ConfigError
from assay.targets.base import Target
from assay.targets.config import TIMEOUT_FIELD, FieldSpec, TargetConfig
from assay.targets.inputs import elapsed_ms, input_text
from assay.types.case import Case
from assay.types.execution import Execution, TokenUsage
from assay.types.messages import Message

STDERR_TAIL = 2000
DEFAULT_TIMEOUT_S = 600.0


class AgentCliTarget(Target):
    """A coding agent's command-line interface, run once per case."""

    executable: ClassVar[str] = ""
    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "executable": FieldSpec((str,), "the agent's program (default: its usual name)"),
        "command": FieldSpec((str,), "the agent's program (default: its usual name)"),
        "binary": FieldSpec((str,), "the agent's program (default: its usual name)"),
        "model": FieldSpec((str,), "the model the agent should use"),
        "args": FieldSpec((list,), "extra arguments, a list of strings"),
        "arguments": FieldSpec((list,), "extra arguments, a list of strings"),
        "cwd": FieldSpec((str,), "where the agent runs, relative to the project"),
        "timeout_seconds": TIMEOUT_FIELD,
        "timeout_s": TIMEOUT_FIELD,
        "system_prompt": FieldSpec((str,), "text put before each prompt"),
        "env": FieldSpec((dict,), "a mapping of extra environment variables"),
        "provider_name": FieldSpec((str,), "pi: the model provider"),
        "log_dir": FieldSpec((str,), "accepted for AgentV files; not used"),
        "log_format": FieldSpec((str,), "accepted for AgentV files; not used"),
    }

    def __init__(self, *, name: str, program: str | None = None, model: str | None = None,
                 args: list[str] | None = None, cwd: Path | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, system_prompt: str | None = None,
                 env: dict[str, str] | None = None, provider_name: str | None = None) -> None:
        self.name = name
        self.program = program or self.executable
        self.model = model
        self.args = [str(a) for a in args or []]
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.system_prompt = system_prompt
        self.env = env or {}
        self.provider_name = provider_name

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> AgentCliTarget:
        args = config.get("args", config.get("arguments"))
        if args is not None and not all(isinstance(a, str | int | float) for a in args):
            raise ConfigError(f"target {config.name!r}: args must be a list of strings",
                              code="invalid_target")
        cwd = config.get("cwd")
        timeout = config.get("timeout_seconds", config.get("timeout_s", DEFAULT_TIMEOUT_S))
        return cls(name=config.name,
                   program=config.get("executable") or config.get("command")
                   or config.get("binary"),
                   model=config.get("model"), args=args,
                   cwd=(base_dir / cwd) if cwd else base_dir, timeout_s=float(timeout),
                   system_prompt=config.get("system_prompt"),
                   env={str(k): str(v) for k, v in (config.get("env") or {}).items()},
                   provider_name=config.get("provider_name"))

    async def preflight(self) -> None:
        if self.cwd is not None and not self.cwd.is_dir():
            raise ConfigError(f"target {self.name!r}: cwd {self.cwd} is not a directory",
                              code="invalid_target")
        if shutil.which(self.program) is None and not Path(self.program).exists():
            raise ConfigError(f"target {self.name!r}: {self.program!r} is not installed (not "
                              "found on PATH); set 'executable' to its path",
                              code="invalid_target")

    def prompt(self, case: Case) -> str:
        text = input_text(case.input) if isinstance(case.input, str) else case.question()
        return f"{self.system_prompt}\n\n{text}" if self.system_prompt else text

    def argv(self, prompt: str) -> tuple[list[str], str | None]:
        """The command line for a prompt, and what goes to stdin (None: nothing)."""
        raise NotImplementedError

    def parse(self, stdout: str) -> tuple[Any, list[Message], TokenUsage | None, str | None]:
        """(answer, messages, usage, the agent's own error) from what the agent printed."""
        return stdout.strip(), [], None, None

    async def run(self, case: Case) -> Execution:
        argv, stdin = self.argv(self.prompt(case))
        request = {"kind": "agent", "provider": type(self).__name__, "argv": argv[:-1] + (
            ["<prompt>"] if stdin is None else argv[-1:]), "cwd": str(self.cwd or "")}
        started = time.perf_counter()
        try:
            done = await run_program(argv, stdin=stdin.encode() if stdin is not None else None,
                                     cwd=self.cwd, env={**os.environ, **self.env},
                                     timeout_s=self.timeout_s)
        except StartFailed as exc:
            return Execution(input=case.input, latency_ms=elapsed_ms(started),
                             error=f"{self.program!r} could not start: {exc.reason}",
                             provider_request=request)
        latency = elapsed_ms(started)
        tail = done.stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
        if done.timed_out:
            return Execution(input=case.input, latency_ms=latency, provider_request=request,
                             error=f"{self.program} timed out after {self.timeout_s:g}s and "
                             "was killed")
        if done.returncode != 0:
            return Execution(input=case.input, latency_ms=latency, provider_request=request,
                             error=f"{self.program} exited with status {done.returncode}; "
                             f"stderr: {tail or '<empty>'}")
        output, messages, usage, problem = self.parse(done.stdout.decode("utf-8", "replace"))
        if problem is not None:
            return Execution(input=case.input, latency_ms=latency, provider_request=request,
                             messages=messages, error=f"{self.program} reported an error: "
                             f"{problem}")
        return Execution(input=case.input, output=output, messages=messages, usage=usage,
                         latency_ms=latency, provider_request=request)


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = jsondata.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _call(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {
        "name": name, "arguments": arguments if isinstance(arguments, str)
        else json.dumps(arguments, default=str)}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content
                       if isinstance(p, dict) and p.get("type") in ("text", None))
    return "" if content is None else json.dumps(content, default=str)


def _blocks_to_messages(role: str, blocks: Any) -> list[Message]:
    """Anthropic-style content blocks (text, tool_use, tool_result) as OpenAI messages."""
    if not isinstance(blocks, list):
        return [Message(role="assistant" if role == "assistant" else "user",
                        content=_text(blocks))] if blocks else []
    messages: list[Message] = []
    text = "".join(str(b.get("text", "")) for b in blocks
                   if isinstance(b, dict) and b.get("type") == "text")
    calls = [_call(b.get("id"), str(b.get("name")), b.get("input", b.get("arguments", {})))
             for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
    if role == "assistant" and (text or calls):
        messages.append(Message.model_validate({"role": "assistant", "content": text or None,
                                                **({"tool_calls": calls} if calls else {})}))
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            messages.append(Message(role="tool", tool_call_id=str(block.get("tool_use_id")),
                                    content=_text(block.get("content"))))
    return messages


class ClaudeCodeTarget(AgentCliTarget):
    executable = "claude"

    def argv(self, prompt: str) -> tuple[list[str], str | None]:
        argv = [self.program, "--output-format", "stream-json", "--verbose", "-p"]
        if self.model:
            argv += ["--model", self.model]
        return [*argv, *self.args, prompt], None

    def parse(self, stdout: str) -> tuple[Any, list[Message], TokenUsage | None, str | None]:
        events = _events(stdout)
        if not events:
            return stdout.strip(), [], None, None
        messages: list[Message] = []
        answer: Any = None
        usage = None
        problem = None
        for event in events:
            kind = event.get("type")
            found = event.get("message")
            message: dict[str, Any] = found if isinstance(found, dict) else {}
            if kind in ("assistant", "user"):
                messages += _blocks_to_messages(str(kind), message.get("content"))
            elif kind == "result":
                answer = event.get("result")
                raw = event.get("usage") or {}
                usage = TokenUsage(prompt_tokens=int(raw.get("input_tokens") or 0),
                                   completion_tokens=int(raw.get("output_tokens") or 0),
                                   cost=event.get("total_cost_usd"))
                if event.get("is_error"):
                    problem = str(answer or event.get("subtype") or "error")
        if answer is None:
            texts = [m.text() for m in messages if m.role == "assistant" and m.text()]
            answer = texts[-1] if texts else ""
        return answer, messages, usage, problem


class CodexTarget(AgentCliTarget):
    executable = "codex"

    def argv(self, prompt: str) -> tuple[list[str], str | None]:
        argv = [self.program, "--ask-for-approval", "never", "exec", "--json", "--color",
                "never", "--skip-git-repo-check"]
        if self.model:
            argv += ["--model", self.model]
        return [*argv, *self.args, "-"], prompt

    def parse(self, stdout: str) -> tuple[Any, list[Message], TokenUsage | None, str | None]:
        events = _events(stdout)
        if not events:
            return stdout.strip(), [], None, None
        messages: list[Message] = []
        answers: list[str] = []
        usage = None
        problem = None
        for number, event in enumerate(events):
            item = event.get("item") if event.get("type") == "item.completed" else event.get("msg")
            if isinstance(item, dict):
                kind = item.get("type") or item.get("item_type")
                if kind in ("agent_message", "assistant_message"):
                    text = item.get("text") or item.get("message") or ""
                    answers.append(str(text))
                    messages.append(Message(role="assistant", content=str(text)))
                elif kind == "command_execution":
                    call_id = str(item.get("id") or f"cmd_{number}")
                    messages.append(Message.model_validate({
                        "role": "assistant", "content": None,
                        "tool_calls": [_call(call_id, "shell",
                                             {"command": item.get("command")})]}))
                    messages.append(Message(role="tool", tool_call_id=call_id,
                                            content=str(item.get("aggregated_output") or "")))
                elif kind == "error":
                    problem = str(item.get("message") or item)
            if event.get("type") == "turn.completed" and isinstance(event.get("usage"), dict):
                raw = event["usage"]
                usage = TokenUsage(prompt_tokens=int(raw.get("input_tokens") or 0),
                                   completion_tokens=int(raw.get("output_tokens") or 0))
            if event.get("type") in ("turn.failed", "error"):
                problem = str(event.get("error") or event.get("message") or event)
        return (answers[-1] if answers else ""), messages, usage, problem


class CopilotTarget(AgentCliTarget):
    executable = "copilot"

    def argv(self, prompt: str) -> tuple[list[str], str | None]:
        argv = [self.program, "-s", "--allow-all-tools", "--no-color"]
        if self.model:
            argv += ["--model", self.model]
        return [*argv, *self.args, "-p", prompt], None


class PiTarget(AgentCliTarget):
    executable = "pi"

    def argv(self, prompt: str) -> tuple[list[str], str | None]:
        argv = [self.program]
        if self.provider_name:
            argv += ["--provider", self.provider_name]
        if self.model:
            argv += ["--model", self.model]
        argv += ["--mode", "json", "--print", "--no-session"]
        return [*argv, *self.args, prompt], None

    def parse(self, stdout: str) -> tuple[Any, list[Message], TokenUsage | None, str | None]:
        events = [e for e in _events(stdout) if e.get("type") == "agent_end"]
        if not events:
            return stdout.strip(), [], None, None
        messages: list[Message] = []
        for message in events[-1].get("messages") or []:
            if isinstance(message, dict) and message.get("role") in ("assistant", "user",
                                                                      "toolResult", "tool"):
                messages += _blocks_to_messages(str(message["role"]), message.get("content"))
        texts = [m.text() for m in messages if m.role == "assistant" and m.text()]
        return (texts[-1] if texts else ""), messages, None, None
