"""AgentV 4's ``python`` and ``javascript`` assertions: a few lines of code that judge the answer.

The code is the body of ``main(output, context)`` (one line is an expression to return, as in
AgentV): ``output`` is the answer's text, ``context`` holds the case (``criteria``,
``expected_output``, ``input``, ``metadata``), the execution's figures (``token_usage``,
``cost_usd``, ``duration_ms``, ``trace``) and the assertion's ``config``; Python reads the keys
in snake_case, JavaScript in camelCase, as AgentV hands them over. It answers ``true``/``false``,
a number in [0, 1], or ``{pass, score, reason, details}``.

Unlike AgentV, which runs JavaScript inside its own process, both languages run here as code
judges do: a program of their own, in a subprocess of its own process group (killed on a
timeout), started from an argument list, never through a shell. The program is a fixed
harness; the code and the case travel as JSON on stdin, so no case data is ever part of a
command line or of code. An assertion that raises, prints no result or answers something else
is an error score naming why (with the tail of its stderr), never a 0.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, ClassVar, Literal, cast

from pydantic import Field, ValidationInfo, field_validator

from assay._util.limits import TimeoutS
from assay.errors import EvaluationError
from assay.judges.base import EvalContext, Evaluator
from assay.judges.code.script import run_json_command
from assay.judges.llm.templates import as_text
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

PYTHON_MAIN = r"""
def as_main(code):
    if "\n" in code.strip():
        body = "\n".join("    " + line for line in code.split("\n"))
    else:
        body = "    return " + code.strip()
    return "def main(output, context):\n" + body + "\n"
"""
"""AgentV's way of making an assertion's code the body of ``main(output, context)`` (one line
is an expression to return): the harness's, and the loader's to check that it compiles."""

PYTHON_HARNESS = PYTHON_MAIN + r"""
import json, sys
payload = json.load(sys.stdin)
namespace = {}
exec(compile(as_main(payload["code"]), "<assertion>", "exec"), namespace)
result = namespace["main"](payload.get("output", ""), payload.get("context", {}))
sys.stdout.write("\n" + json.dumps({"result": result}) + "\n")
"""
"""Reads ``{code, output, context}`` on stdin and prints ``{"result": ...}`` last."""

JAVASCRIPT_HARNESS = r"""
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const trimmed = payload.code.trim().replace(/;+\s*$/, "");
  let body = trimmed;
  if (!trimmed.includes("\n") && !/\breturn\b/.test(trimmed)) {
    const last = trimmed.lastIndexOf(";");
    body = /^(const|let|var)\s/.test(trimmed) && last >= 0
      ? trimmed.slice(0, last + 1) + " return " + trimmed.slice(last + 1).trim()
      : "return " + trimmed;
  }
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  const result = await new AsyncFunction("output", "context", body)(payload.output,
                                                                   payload.context);
  process.stdout.write("\n" + JSON.stringify({ result: result === undefined ? null : result })
                       + "\n");
});
"""
"""AgentV's way of turning the code into a function body, then the same protocol."""


def _load_as_main() -> Callable[[str], str]:
    namespace: dict[str, Any] = {}
    exec(PYTHON_MAIN, namespace)  # this module's own constant: no user input
    return cast(Callable[[str], str], namespace["as_main"])


_as_main = _load_as_main()
"""The harness's :data:`PYTHON_MAIN` here, so the loader wraps code exactly as the harness."""


def assertion_context(case: Case, execution: Execution, config: dict[str, Any] | None,
                      camel: bool = False) -> dict[str, Any]:
    """What AgentV 4 hands an assertion as ``context`` (snake_case; camelCase for
    JavaScript, as AgentV passes its own object to it)."""
    expected = case.metadata.get("expected_messages") or (
        [] if case.expected_output is None else
        [{"role": "assistant", "content": case.expected_output}])
    usage = execution.usage
    values: dict[str, Any] = {
        "criteria": "\n".join(case.expected_outcomes),
        "expected_output": expected,
        "input": [m.model_dump(mode="json", exclude_none=True) for m in case.input]
        if isinstance(case.input, list) else [{"role": "user", "content": case.input}],
        "metadata": case.metadata or None,
        "trace": [s.model_dump(mode="json", exclude_none=True) for s in execution.trace]
        or None,
        "token_usage": {"input": usage.prompt_tokens, "output": usage.completion_tokens}
        if usage is not None else None,
        "cost_usd": usage.cost if usage is not None else None,
        "duration_ms": execution.latency_ms,
    }
    if config:
        values["config"] = config
    if camel:
        return {_camel(k): v for k, v in values.items()}
    return values


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.title() for word in rest)


ANY_SCORE = sys.float_info.epsilon
"""AgentV's pass mark for script and webhook assertions: any score above 0."""


def script_result(result: Any, threshold: float, what: str
                  ) -> tuple[float, bool, str, dict[str, Any] | None]:
    """(score, passed, reason, details) from what an assertion answered: ``true``/``false``,
    a number in [0, 1], or ``{pass, score, reason, details}``. Passing is the answer's own
    ``pass``, else a score at or above ``threshold``. Anything else is an error naming
    what came back."""
    bar = threshold
    if isinstance(result, bool):
        return (1.0 if result else 0.0), result, \
            "assertion passed" if result else f"{what} returned false", None
    if isinstance(result, int | float):
        score = _unit(float(result), what)
        passed = score >= bar
        return score, passed, "assertion passed" if passed else \
            f"{what} returned {result:g}", None
    if isinstance(result, dict) and ("score" in result or "pass" in result):
        given = result.get("pass")
        if given is not None and not isinstance(given, bool):
            raise EvaluationError("code_judge_bad_output",
                                  f"{what} returned pass={given!r}; expected true or false")
        raw = result.get("score")
        if raw is not None and (isinstance(raw, bool) or not isinstance(raw, int | float)):
            raise EvaluationError("code_judge_bad_output",
                                  f"{what} returned score={raw!r}; expected a number in [0, 1]")
        score = _unit(float(raw), what) if raw is not None else (1.0 if given else 0.0)
        passed = given if given is not None else score >= bar
        reason = result.get("reason")
        details = result.get("details")
        return score, passed, str(reason) if reason is not None else (
            "assertion passed" if passed else f"{what} returned a failing result"), \
            details if isinstance(details, dict) else None
    shown = as_text(result)[:200]
    raise EvaluationError("code_judge_bad_output", f"{what} returned {shown!r}; expected true "
                          "or false, a number in [0, 1], or {pass, score, reason}")


def _unit(value: float, what: str) -> float:
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise EvaluationError("code_judge_bad_output",
                              f"{what} returned the score {value!r}, outside [0, 1]")
    return value


def scored(name: str, result: Any, threshold: float, what: str,
           details: dict[str, Any]) -> Score:
    """The Score of an assertion's answer (see :func:`script_result`)."""
    value, passed, reason, extra = script_result(result, threshold, what)
    return Score(name=name, value=value, raw=result if isinstance(result, bool | int | float)
                 else value, scale="0-1", passed=passed, rationale=reason,
                 hits=[reason] if passed else [], misses=[] if passed else [reason],
                 details={**details, **(extra or {})})


@register
class InlineCode(Evaluator):
    """A ``python`` or ``javascript`` assertion: ``value`` is the code, run in a subprocess."""

    type = "inline_code"
    language: Literal["python", "javascript"]
    interpreter: list[str] | None = Field(
        default=None, description="the program that runs it [default: this Python for "
        "python, node for javascript]")
    value: str = Field(description="the code: an expression, or the body of "
                       "main(output, context)")
    threshold: float = Field(default=ANY_SCORE, ge=0, le=1, description="a score at or "
                             "above this passes [default: any score above 0, as in AgentV]")
    config: dict[str, Any] = Field(default_factory=dict,
                                   description="handed to the code as context.config")
    timeout_s: TimeoutS = 60.0
    cwd: str | None = Field(default=None,
                            description="where it runs; the suite file's directory")

    harnesses: ClassVar[dict[str, str]] = {"python": PYTHON_HARNESS,
                                           "javascript": JAVASCRIPT_HARNESS}

    @field_validator("value")
    @classmethod
    def _some_code(cls, value: str, info: ValidationInfo) -> str:
        """Empty code, or Python code that cannot compile, is refused when the suite is read
        (compiling runs nothing), not found once the agent has answered. Under another
        interpreter, whose Python may differ, it is left to run."""
        if not value.strip():
            raise ValueError("the code is empty")
        if info.data.get("language") == "python" and info.data.get("interpreter") is None:
            try:
                compile(_as_main(value), "<assertion>", "exec")
            except SyntaxError as exc:
                line = max((exc.lineno or 1) - 1, 1)  # the code's line, not main's
                raise ValueError(f"the python code does not compile: {exc.msg} (its line "
                                 f"{line})") from None
            except (RecursionError, MemoryError):  # the parser's stack, not the machine's
                raise ValueError("the python code does not compile: it is nested too "
                                 "deeply") from None
            except ValueError as exc:  # a NUL in the code, say
                raise ValueError(f"the python code does not compile: {exc}") from None
        return value

    @field_validator("interpreter", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        return value

    def argv(self) -> list[str]:
        """The program and the harness, as an argument list."""
        if self.language == "python":
            return [*(self.interpreter or [sys.executable]), "-c", PYTHON_HARNESS]
        return [*(self.interpreter or ["node"]), "-e", JAVASCRIPT_HARNESS]

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        what = f"{self.language} assertion {self.name!r}"
        payload = {"code": self.value, "output": execution.output_text(),
                   "context": assertion_context(case, execution, self.config,
                                                camel=self.language == "javascript")}
        printed, _ = await run_json_command(self.argv(), payload, cwd=self.cwd,
                                            timeout_s=self.timeout_s, what=what)
        if "result" not in printed:
            raise EvaluationError("code_judge_bad_output", f"{what} printed no result")
        return scored(self.name, printed["result"], self.threshold, what,
                      {"language": self.language})
