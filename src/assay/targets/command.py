"""A command as the agent: ``provider: cli`` (or ``command``).

``command`` is a shell string (run with ``sh -c``) or an argv list (run directly). The input
is handed over through a placeholder when one appears, and written to stdin otherwise:

``{input}``
    the input as text (JSON when structured)
``{PROMPT}``
    the user's question (AgentV's name)
``{PROMPT_FILE}``
    a file holding the question, made for the call and removed after it
``{EVAL_ID}``, ``{ATTEMPT}``
    the case's id; the repeat of the case (0 for the first)
``{FILES}``
    the case's input files, one argument each (in an argument list it must be an argument
    of its own)
``{OUTPUT_FILE}``
    a path the command writes its answer to (AgentV 4's way): the answer is read from the
    file, not stdout (see :func:`read_output_file`), and the file is removed after

Case data never becomes shell code. In an argv list a placeholder is replaced inside its own
argument, which no shell parses. In a shell string a placeholder is not replaced by the data at
all: it becomes a quoted variable reference (``"${ASSAY_INPUT}"``, ``"${ASSAY_PROMPT}"``...;
``{FILES}`` becomes ``"$@"``, the files passed as the script's arguments) and the data travels
in the environment, so the shell expands it as one word and never parses it.
A placeholder the shell would not expand that way (inside '...' or "...", after a backslash)
or one inside the code of an interpreter in an argv list (``[sh, -c, "echo {input}"]``,
``[python, -c, ...]``) is refused when the target is built, naming the target and the field.

The answer is stdout (or the output file): parsed when it is a JSON object or array, else the
text. A non-zero exit, a timeout or a command that cannot start becomes ``Execution.error``
with the tail of stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from assay._util import jsondata
from assay._util.processes import StartFailed, run_program
from assay.errors import ConfigError
from assay.targets.base import Target, current_sample
from assay.targets.config import TIMEOUT_FIELD, FieldSpec, TargetConfig
from assay.targets.inputs import elapsed_ms, input_text, non_negative, parse_output
from assay.types.case import Case
from assay.types.execution import Execution, TokenUsage
from assay.types.messages import Message

STDERR_TAIL = 2000
DEFAULT_TIMEOUT_S = 120.0
PLACEHOLDERS = ("{input}", "{PROMPT}", "{PROMPT_FILE}", "{EVAL_ID}", "{ATTEMPT}",
                "{OUTPUT_FILE}", "{FILES}")
ENV_VARS = {"{input}": "ASSAY_INPUT", "{PROMPT}": "ASSAY_PROMPT",
            "{PROMPT_FILE}": "ASSAY_PROMPT_FILE", "{EVAL_ID}": "ASSAY_EVAL_ID",
            "{ATTEMPT}": "ASSAY_ATTEMPT", "{OUTPUT_FILE}": "ASSAY_OUTPUT_FILE"}
"""The environment variable that carries each placeholder's value into a shell string
(``{FILES}`` is the script's own arguments, ``"$@"``)."""
INPUT_PLACEHOLDERS = frozenset({"{input}", "{PROMPT}", "{PROMPT_FILE}"})
"""The placeholders that hand over the input: with none of them, it goes to stdin."""

_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish",
                     "csh", "tcsh", "yash", "posh"})
_CODE_FLAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"-c"}), "pypy": frozenset({"-c"}),
    "node": frozenset({"-e", "-p", "--eval", "--print"}), "deno": frozenset({"eval"}),
    "bun": frozenset({"-e", "--eval"}), "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}), "php": frozenset({"-r"}), "lua": frozenset({"-e"}),
    "pwsh": frozenset({"-c", "-command"}), "powershell": frozenset({"-c", "-command"}),
    "cmd": frozenset({"/c", "/k"}), "osascript": frozenset({"-e"}),
}


class CommandTarget(Target):
    """Runs a command once per case."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "command": FieldSpec((str, list), "a command string or a list of arguments"),
        "command_template": FieldSpec((str, list), "a command string or a list of arguments"),
        "timeout_s": TIMEOUT_FIELD,
        "timeout_seconds": TIMEOUT_FIELD,
        "cwd": FieldSpec((str,), "a directory, relative to the suite"),
        "env": FieldSpec((dict,), "a mapping of extra environment variables"),
        "keep_temp_files": FieldSpec((bool,), "keep the prompt and output files of each "
                                     "call (AgentV's option)"),
    }
    REQUIRED: ClassVar[tuple[tuple[str, ...], ...]] = (("command", "command_template"),)

    def __init__(self, command: str | list[str], *, name: str = "command",
                 cwd: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 env: dict[str, str] | None = None, shown: str | None = None,
                 scrub: Callable[[str], str] | None = None, field: str = "command",
                 keep_temp_files: bool = False) -> None:
        if isinstance(command, list) and (not command or not all(
                isinstance(a, str) for a in command)):
            raise ConfigError(f"target {name!r}: {field} must be a non-empty list of strings",
                              code="invalid_target")
        if isinstance(command, str) and not command.strip():
            raise ConfigError(f"target {name!r}: {field} is empty", code="invalid_target")
        self.command = command
        self.name = name
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.env = env or {}
        self.shown = shown or (command if isinstance(command, str) else shlex.join(command))
        self.scrub = scrub or (lambda text: text)
        self.keep_temp_files = keep_temp_files
        where = f"target {name!r}: {field} {self.shown!r}"
        if isinstance(command, str):
            self._script = shell_script(command, where)
            self.uses = {p for p in PLACEHOLDERS if p in command}
        else:
            check_argv(command, where)
            self.uses = {p for p in PLACEHOLDERS if any(p in a for a in command)}
            if any("{FILES}" in a and a != "{FILES}" for a in command):
                raise ConfigError(f"{where} puts {{FILES}} inside an argument; in an "
                                  "argument list it must be an argument of its own (it "
                                  "stands for one argument per file)", code="invalid_target")

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> CommandTarget:
        field = "command" if config.get("command") is not None else "command_template"
        command = config.get(field)
        written = config.written.get(field)
        cwd = config.get("cwd")
        timeout = config.get("timeout_s", config.get("timeout_seconds", DEFAULT_TIMEOUT_S))
        env = {str(k): str(v) for k, v in (config.get("env") or {}).items()}
        return cls(command, name=config.name,
                   cwd=(base_dir / cwd) if cwd else base_dir, timeout_s=float(timeout),
                   env=env, scrub=config.scrub, field=field,
                   shown=written if isinstance(written, str)
                   else shlex.join(str(a) for a in written or []),
                   keep_temp_files=bool(config.get("keep_temp_files", False)))

    async def preflight(self) -> None:
        if self.cwd is not None and not self.cwd.is_dir():
            raise ConfigError(f"target {self.name!r}: cwd {self.cwd} is not a directory",
                              code="invalid_target")
        if isinstance(self.command, list) and not _findable(self.command[0], self.cwd):
            raise ConfigError(f"target {self.name!r}: command {self.command[0]!r} not found",
                              code="invalid_target")

    def argv(self, case: Case, call: _Call | None = None) -> tuple[list[str], bytes | None]:
        """The argv for a case, and what goes to stdin (None when the input is in argv)."""
        call = call or self._values(case, None)
        if isinstance(self.command, str):
            argv = ["sh", "-c", self._script, "sh", *call.files]
        else:
            argv = []
            for arg in self.command:
                if arg == "{FILES}":
                    argv.extend(call.files)
                else:
                    argv.append(_PLACEHOLDER.sub(lambda m: call.values[m.group(0)], arg))
        stdin = None if self.uses & INPUT_PLACEHOLDERS else input_text(case.input).encode()
        return argv, stdin

    def data_env(self, call: _Call) -> dict[str, str]:
        """The environment variables that carry the case's data into a shell string."""
        if not isinstance(self.command, str):
            return {}
        return {ENV_VARS[p]: call.values[p] for p in self.uses if p in ENV_VARS}

    def _values(self, case: Case, folder: Path | None) -> _Call:
        """What each placeholder stands for in one call (the files in ``folder``)."""
        values = {"{input}": input_text(case.input), "{PROMPT}": case.question(),
                  "{EVAL_ID}": case.id, "{ATTEMPT}": str(current_sample())}
        output = prompt = None
        if folder is not None:
            output, prompt = folder / "output.json", folder / "prompt.txt"
            values["{OUTPUT_FILE}"], values["{PROMPT_FILE}"] = str(output), str(prompt)
        files = case.metadata.get("input_files")
        return _Call(values, [str(f) for f in files] if isinstance(files, list) else [],
                     output, prompt)

    @contextlib.contextmanager
    def _call(self, case: Case) -> Iterator[_Call]:
        """The placeholders' values for one call; the prompt and output files it needs
        live in a folder of their own, removed after the call (unless kept)."""
        if not self.uses & {"{PROMPT_FILE}", "{OUTPUT_FILE}"}:
            yield self._values(case, None)
            return
        folder = Path(tempfile.mkdtemp(prefix="assay-cli-"))
        try:
            call = self._values(case, folder)
            assert call.prompt_file is not None
            call.prompt_file.write_text(case.question(), encoding="utf-8")
            yield call
        finally:
            if not self.keep_temp_files:
                shutil.rmtree(folder, ignore_errors=True)

    async def run(self, case: Case) -> Execution:
        with self._call(case) as call:
            return await self._run(case, call)

    async def _run(self, case: Case, call: _Call) -> Execution:
        argv, stdin = self.argv(case, call)
        started = time.perf_counter()
        try:
            done = await run_program(argv, stdin=stdin, cwd=self.cwd,
                                     env={**os.environ, **self.env, **self.data_env(call)},
                                     timeout_s=self.timeout_s)
        except StartFailed as exc:
            if "NUL byte" in exc.reason:
                reason = ("the input holds a NUL byte, which cannot be passed as an argument "
                          "or in the environment; leave {input} out of the command to get it "
                          "on stdin")
                return Execution(input=case.input, latency_ms=elapsed_ms(started),
                                 error=reason)
            hint = (": the input is too long for an argument or the environment; leave "
                    "{input} out of the command to get it on stdin" if exc.too_long else "")
            return Execution(input=case.input, latency_ms=elapsed_ms(started), error=self.scrub(
                f"command {self.shown!r} could not start: {exc.reason}{hint}"))
        latency = elapsed_ms(started)
        if done.timed_out:
            return Execution(input=case.input, latency_ms=latency,
                             error=f"command timed out after {self.timeout_s:g}s and was killed")
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
            return Execution(input=case.input, latency_ms=latency, error=self.scrub(
                f"command exited with status {done.returncode}; "
                f"stderr: {tail or '<empty>'}"))
        if call.output_file is not None and "{OUTPUT_FILE}" in self.uses:
            return read_output_file(call.output_file, case, latency, self.scrub)
        return Execution(input=case.input, latency_ms=latency,
                         output=parse_output(done.stdout.decode("utf-8", "replace")))


@dataclass
class _Call:
    """The placeholders' values for one call of the command."""

    values: dict[str, str]
    files: list[str]
    output_file: Path | None = None
    prompt_file: Path | None = None


def read_output_file(path: Path, case: Case, latency_ms: float,
                     scrub: Callable[[str], str]) -> Execution:
    """The answer a command wrote to ``{OUTPUT_FILE}``, read as AgentV 4 reads it: a JSON
    object with ``output`` (or ``output_messages``: a list of messages, the answer being the
    last assistant message) or ``text``, and optionally ``token_usage`` (``{input, output}``),
    ``cost_usd`` and ``duration_ms``; anything else is the answer as plain text."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        reason = "it was not written" if isinstance(exc, FileNotFoundError) else \
            str(exc.strerror or exc)
        return Execution(input=case.input, latency_ms=latency_ms, error=scrub(
            f"the command exited with status 0 but its answer file {{OUTPUT_FILE}} could not "
            f"be read: {reason}"))
    try:
        data: Any = jsondata.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return Execution(input=case.input, latency_ms=latency_ms, output=text)
    messages = _messages(data.get("output", data.get("output_messages")))
    said = [m for m in messages if m.role == "assistant" and m.content is not None]
    if said:
        output: Any = said[-1].content if isinstance(said[-1].content, str) else said[-1].text()
    elif "text" in data and data["text"] is not None:
        output = data["text"] if isinstance(data["text"], str) else json.dumps(data["text"])
    else:
        output = text
    duration = non_negative(data.get("duration_ms"))
    return Execution(input=case.input, output=output, messages=messages, usage=_usage(data),
                     latency_ms=duration if duration is not None else latency_ms)


def _messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list):
        return []
    found: list[Message] = []
    for item in raw:
        if isinstance(item, dict):
            with contextlib.suppress(ValueError):
                found.append(Message.model_validate(item))
    return found


def _usage(data: dict[str, Any]) -> TokenUsage | None:
    return token_usage(data.get("token_usage"), data.get("cost_usd"))


def token_usage(tokens: Any, cost: Any) -> TokenUsage | None:
    """AgentV's ``{input, output}`` tokens and cost in USD as an execution's usage; None
    when neither was reported."""
    if not isinstance(tokens, dict) and non_negative(cost) is None:
        return None
    tokens = tokens if isinstance(tokens, dict) else {}
    return TokenUsage(prompt_tokens=int(non_negative(tokens.get("input")) or 0),
                      completion_tokens=int(non_negative(tokens.get("output")) or 0),
                      cost=non_negative(cost))


def shell_script(command: str, where: str) -> str:
    """The shell script for a command string, placeholders turned into quoted variables.

    Raises ConfigError when a placeholder sits where the shell would not expand the variable
    as one plain word: inside single or double quotes, or escaped by a backslash.
    """
    out: list[str] = []
    quote = ""  # "'" or '"' while inside quotes
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        escaped = ch == "\\" and quote != "'"
        found = _PLACEHOLDER.match(command, i + 1 if escaped else i)
        if found is not None and (escaped or found.start() == i):
            placeholder = found.group(0)
            if quote or escaped:
                context = {"'": "single quotes", '"': "double quotes"}.get(quote, "an escape")
                raise ConfigError(
                    f"{where} puts {placeholder} inside {context} (column {found.start() + 1}). "
                    "Case data "
                    "is never pasted into shell code: write the placeholder unquoted (assay "
                    f"passes it as {_shell_form(placeholder)}), use an argument list, or "
                    "read the input from stdin", code="invalid_target")
            out.append(_shell_form(placeholder))
            i = found.end()
            continue
        out.append(ch)
        if quote == "'":
            if ch == "'":
                quote = ""
        elif ch == "\\" and i + 1 < n:
            out.append(command[i + 1])
            i += 1
        elif quote == '"':
            if ch == '"':
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1] in " \t\n;&|("):
            end = command.find("\n", i)
            end = n if end < 0 else end
            out.append(command[i + 1:end])
            i = end
            continue
        i += 1
    return "".join(out)


def _shell_form(placeholder: str) -> str:
    """What a placeholder becomes in a shell string."""
    return '"$@"' if placeholder == "{FILES}" else f'"${{{ENV_VARS[placeholder]}}}"'


def check_argv(command: list[str], where: str) -> None:
    """Refuse a placeholder inside code an interpreter in the argv will run (``sh -c``)."""
    for i, arg in enumerate(command):
        program = os.path.basename(arg).lower().removesuffix(".exe")
        if program in _SHELLS:
            flags: frozenset[str] | None = None
        else:
            base = re.sub(r"[\d.]+$", "", program)
            flags = _CODE_FLAGS.get(base)
            if flags is None:
                continue
        for j in range(i + 1, len(command) - 1):
            flag = command[j]
            is_code = (flag.lower() in flags if flags is not None
                       else flag.startswith("-") and not flag.startswith("--") and "c" in flag)
            found = _PLACEHOLDER.search(command[j + 1]) if is_code else None
            if found is not None:
                raise ConfigError(
                    f"{where} puts {found.group(0)} inside the code {command[i]} runs "
                    f"(argument {j + 2}). Case data is never "
                    "pasted into code: pass it as a separate argument (for a shell: "
                    "[sh, -c, 'echo \"$1\"', sh, '{input}']) or read it from stdin",
                    code="invalid_target")


def _findable(program: str, cwd: Path | None) -> bool:
    """True when ``program`` names a file (relative to ``cwd``) or a command on PATH."""
    if os.sep in program or (os.altsep and os.altsep in program):
        return ((cwd or Path.cwd()) / program).exists()
    return shutil.which(program) is not None
