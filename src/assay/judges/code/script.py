"""Code judges: a user's script scores the case (AgentV's ``code_judge``).

Some checks are easiest to write as a program (run the generated code, diff a file, call an
internal API). The script gets the case as one JSON object on stdin, in snake_case, and prints
``{"score": 0..1, "hits": [...], "misses": [...], "reasoning": "...", "details": {...}}``.

A script that crashes, hangs, prints something that is not that object, or gives a score
outside [0, 1] produces an error score whose message ends with the tail of its stderr: a broken
judge must be visible and fixable, never read as a 0. The script runs with the suite file's
directory as its working directory (the loader fills ``cwd``), in its own process group so a
timeout kills everything it started.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay._util import jsondata
from assay._util.limits import Calls, TimeoutS
from assay._util.processes import StartFailed, run_program
from assay.errors import EvaluationError
from assay.judges.base import EvalContext, Evaluator, script_files
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.templates import as_text
from assay.judges.registry import register
from assay.traces.summary import trace_summary
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score
from assay.types.usage import Usage

STDERR_TAIL = 2000
DEFAULT_MAX_CALLS = 50
"""Judge calls a script may make through the target proxy per case, unless it says."""
"""How much of a failing script's stderr goes into the error message."""


class ScriptOutput(JudgeAnswer):
    """What a script must print. Unknown keys are ignored so scripts can log extra fields."""

    model_config = ConfigDict(strict=True, extra="ignore")

    score: float
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str = ""
    details: dict[str, Any] | None = None
    passed: bool | None = None

    @field_validator("score", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        # pydantic would accept "0.5" or true; a script that prints those has a bug to see.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"score must be a number, got {value!r}")
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"score must be within [0, 1], got {value!r}")
        return value


def argv_of(script: str | list[str]) -> list[str]:
    """A shell string runs through ``sh -c``; a list is the argv itself."""
    return ["sh", "-c", script] if isinstance(script, str) else list(script)


def _tail(stderr: bytes) -> str:
    text = stderr.decode("utf-8", errors="replace").strip()
    return text[-STDERR_TAIL:]


def _with_stderr(message: str, stderr: bytes | str) -> str:
    tail = _tail(stderr) if isinstance(stderr, bytes) else stderr
    return f"{message}; stderr: {tail}" if tail else f"{message}; stderr was empty"


async def run_json_command(argv: list[str], payload: Any, *, cwd: str | None,
                           timeout_s: float, what: str = "script",
                           env: dict[str, str] | None = None
                           ) -> tuple[dict[str, Any], str]:
    """Run ``argv`` with ``payload`` as JSON on stdin; return the JSON object it printed and
    the tail of its stderr (for messages about what the object contained).

    Raises EvaluationError (``code_judge_failed``, ``code_judge_timeout``, ``code_judge_exit``,
    ``code_judge_bad_output``) carrying the stderr tail, so callers turn it into an error score.
    """
    if cwd is not None and not os.path.isdir(cwd):
        raise EvaluationError("code_judge_failed", f"{what}: cwd {cwd!r} is not a directory")
    data = json.dumps(payload, ensure_ascii=False, default=str).encode()
    try:
        done = await run_program(argv, stdin=data, cwd=cwd, timeout_s=timeout_s,
                                 env={**os.environ, **env} if env else None)
    except StartFailed as exc:
        raise EvaluationError("code_judge_failed",
                              f"{what}: could not start {argv[0]!r}: {exc.reason}") from None
    if done.timed_out:
        raise EvaluationError("code_judge_timeout", _with_stderr(
            f"{what} timed out after {timeout_s:g}s and was killed", done.stderr))
    if done.returncode != 0:
        raise EvaluationError("code_judge_exit", _with_stderr(
            f"{what} exited with status {done.returncode}", done.stderr))
    return _parse_stdout(done.stdout, done.stderr, what), _tail(done.stderr)


def _parse_stdout(stdout: bytes, stderr: bytes, what: str) -> dict[str, Any]:
    """The whole stdout as a JSON object, else its last non-empty line (after log lines). An
    object that names a key twice is an error, not its last value."""
    text = stdout.decode("utf-8", errors="replace").strip()
    lines = [line for line in text.splitlines() if line.strip()]
    for candidate in (text, lines[-1] if lines else ""):
        try:
            value = jsondata.loads_unique(candidate)
        except jsondata.DuplicateKey as exc:  # ambiguous: which score did it mean?
            raise EvaluationError("code_judge_bad_output", _with_stderr(
                f"{what} printed an ambiguous JSON object: {exc}", stderr)) from None
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    shown = text[-300:] if text else "<nothing>"
    raise EvaluationError("code_judge_bad_output", _with_stderr(
        f"{what} did not print a JSON object on stdout (got {shown!r})", stderr))


def parse_script_output(printed: dict[str, Any], stderr: str, what: str) -> ScriptOutput:
    """Validate what a script printed; an invalid result is an error carrying the stderr."""
    try:
        return ScriptOutput.model_validate(printed)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'output'}: {e['msg']}"
                             for e in exc.errors())
        raise EvaluationError("code_judge_bad_output", _with_stderr(
            f"{what} printed an invalid result: {problems}", stderr)) from None


def case_payload(case: Case, execution: Execution, config: dict[str, Any]) -> dict[str, Any]:
    """The JSON a code judge reads on stdin: AgentV's snake_case field names."""
    if isinstance(case.input, list):
        input_messages: list[Any] = [m.model_dump(mode="json", exclude_none=True)
                                     for m in case.input]
    else:
        input_messages = [{"role": "user", "content": case.question()}]
    return {
        "case_id": case.id,
        "question": case.question().strip(),
        "expected_outcome": "\n".join(case.expected_outcomes).strip(),
        "reference_answer": as_text(case.expected_output).strip(),
        "candidate_answer": execution.output_text().strip(),
        "input_messages": input_messages,
        "output_messages": [m.model_dump(mode="json", exclude_none=True)
                            for m in execution.messages],
        "expected_messages": case.metadata.get("expected_messages", []),
        "guidelines": list(case.guidelines),
        "guideline_files": list(case.metadata.get("guideline_files") or []),
        "input_files": list(case.metadata.get("input_files") or []),
        "trace_summary": trace_summary(execution),
        "config": config,
    }


class TargetAccess(BaseModel):
    """The target proxy a script may call: at most ``max_calls`` judge calls per case."""

    model_config = ConfigDict(extra="forbid")

    max_calls: Calls = DEFAULT_MAX_CALLS


@register
class CodeJudge(Evaluator):
    """Scores with a script: case JSON on stdin, ``{score, hits, misses, reasoning}`` out.

    Keys AgentV passes through (any key a code judge does not know) arrive in ``config``.
    ``target: true`` (or ``{max_calls: n}``) lets the script call the judge model through a
    local proxy (see :mod:`assay.llm.target_proxy`); the calls count in the score's usage
    and ``details["target_proxy"]``.
    """

    type = "code_judge"
    passthrough: ClassVar[bool] = True
    script: str | list[str]
    cwd: str | None = Field(default=None,
                            description="working directory; the suite file's directory")
    timeout_s: TimeoutS = 60.0
    config: dict[str, Any] = Field(default_factory=dict)
    target: TargetAccess | None = Field(
        default=None, description="true (or {max_calls}) to let the script call the judge "
        "model through the target proxy")

    @field_validator("target", mode="before")
    @classmethod
    def _true_means_defaults(cls, value: Any) -> Any:
        if value is True:
            return {}
        if value is False:
            return None
        return value

    def models(self) -> list[str | None]:
        return [None] if self.target is not None else []

    def input_files(self) -> dict[Path, str]:
        return script_files(self.script, self.cwd, f"the code-judge script of evaluator "
                            f"{self.name!r}")

    @field_validator("script")
    @classmethod
    def _runnable(cls, script: str | list[str]) -> str | list[str]:
        if isinstance(script, str) and not script.strip():
            raise ValueError("script must not be empty")
        if isinstance(script, list) and (not script or not all(
                isinstance(a, str) for a in script) or not script[0].strip()):
            raise ValueError("script must be a non-empty list of strings")
        return script

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        payload = case_payload(case, execution, self.config)
        what = f"code_judge {self.name!r}"
        if self.target is None:
            printed, stderr = await run_json_command(
                argv_of(self.script), payload, cwd=self.cwd, timeout_s=self.timeout_s,
                what=what)
            return self._scored(printed, stderr, what, Usage(), None)
        from assay.llm.target_proxy import target_proxy

        async with target_proxy(ctx.engine, ctx.model(None), self.target.max_calls,
                                ctx.sample) as (env, proxy):
            try:
                printed, stderr = await run_json_command(
                    argv_of(self.script), payload, cwd=self.cwd, timeout_s=self.timeout_s,
                    what=what, env=env)
            except EvaluationError as exc:
                exc.message += f" (target proxy: {proxy.calls} call(s))"
                raise
        return self._scored(printed, stderr, what, proxy.usage,
                            {"call_count": proxy.calls, "max_calls": proxy.max_calls,
                             "target": proxy.target})

    def _scored(self, printed: dict[str, Any], stderr: str, what: str, usage: Usage,
                proxy: dict[str, Any] | None) -> Score:
        out = parse_script_output(printed, stderr, what)
        details = out.details
        if proxy is not None:
            details = {**(details or {}), "target_proxy": proxy}
        return Score(
            name=self.name, value=out.score, raw=printed.get("score"), scale="0-1",
            passed=out.passed if out.passed is not None else self.verdict(out.score),
            rationale=out.reasoning or None,
            hits=[h for h in out.hits if h.strip()], misses=[m for m in out.misses if m.strip()],
            details=details, usage=usage)
