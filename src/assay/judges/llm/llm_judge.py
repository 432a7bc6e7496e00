"""A generic LLM judge with a user prompt template (AgentV's ``llm_judge``).

The judge answers ``{score 0-1, hits, misses, reasoning}``. Template variables are AgentV's:
``{{question}}``, ``{{expected_outcome}}``, ``{{candidate_answer}}``, ``{{reference_answer}}``,
``{{input_messages}}``, ``{{expected_messages}}``, ``{{output_messages}}``, ``{{note}}``, plus
``{{guidelines}}`` and ``{{context}}``; and AgentV 4's names for the same values, ``{{input}}``
(the question), ``{{output}}`` (the answer), ``{{criteria}}`` (the expected outcome) and
``{{expected_output}}`` (the reference answer), with ``{{metadata}}`` and ``{{metadata_json}}``
(the case's metadata as indented and as one-line JSON, empty when it has none). A template that uses any other variable is rejected when the judge is built, before any
call.

An executable prompt template (AgentV's ``prompt: {script: [...], config: {...}}``) is a
program that writes the prompt: it runs as an argument list (a string is split like a shell
would split it, but no shell runs it), gets the case on stdin as a code judge does (with
``config``), and its stdout is the judge's user prompt. Any key an ``llm_judge`` does not know
is kept in ``config``, as AgentV passes them through; ``config`` keys that are the judge's own
settings (``temperature``, ``max_tokens``) are those settings.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from assay._util.limits import TimeoutS
from assay.errors import EvaluationError, TemplateError
from assay.judges.base import EvalContext, script_files
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.prompt_check import check_prompt, uses_any
from assay.judges.llm.templates import as_text, delimit, render, used_variables
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.score import Score

VARIABLES = ("question", "expected_outcome", "candidate_answer", "reference_answer",
             "input_messages", "expected_messages", "output_messages", "note", "guidelines",
             "context", "input", "output", "criteria", "expected_output", "metadata",
             "metadata_json")
ANSWER_VARIABLES = ("candidate_answer", "output_messages", "output")
"""What shows the judge the agent's answer: a prompt uses one, or says it does not."""

DEFAULT_PROMPT = """You are an expert evaluator. Grade the candidate_answer on how well it achieves \
the expected_outcome for the original question. Use the reference_answer, if one is given, as a \
gold standard: the candidate does not need to match it verbatim but should capture its key points.

[[ ## expected_outcome ## ]]
{{expected_outcome}}

[[ ## question ## ]]
{{question}}

[[ ## reference_answer ## ]]
{{reference_answer}}

[[ ## candidate_answer ## ]]
{{candidate_answer}}"""

SYSTEM = """You are a strict, fair judge. {data}

Respond with a JSON object with four fields: "score", a number from 0.0 to 1.0; "hits", a list \
of up to 4 short strings naming what the answer did well; "misses", a list of up to 4 short \
strings naming what it missed or got wrong; "reasoning", one or two sentences."""


class JudgeVerdict(JudgeAnswer):
    """What the judge must return."""

    score: float = Field(ge=0.0, le=1.0)
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str = ""


def template_values(case: Case, execution: Execution,
                    names: Iterable[str] = VARIABLES) -> dict[str, str]:
    """The variables ``names`` (by default every one a template may use) as delimited prompt
    text.

    A judge asks only for what its template uses: the default prompt uses four of the ten,
    and the message lists, dumped as JSON and framed, cost more than those four together.
    """
    return {name: delimit(name, _RAW_VALUES[name](case, execution)) for name in names
            if name in _RAW_VALUES}


def _input_messages(case: Case, execution: Execution) -> Any:
    if isinstance(case.input, list):
        return case.input
    return [{"role": "user", "content": case.question()}]


def _metadata(indent: int | None) -> Callable[[Case, Execution], str]:
    """AgentV 4's ``{{metadata}}`` (``indent`` 2) and ``{{metadata_json}}`` (one line), as
    its ``JSON.stringify`` writes them: the case's own metadata, without what the loader
    keeps there; empty when there is none."""
    def value(case: Case, execution: Execution) -> str:
        own = {k: v for k, v in case.metadata.items()
               if k not in ("expected_messages", "input_files")}
        return dump_json(own, indent=indent, tight=indent is None) if own else ""
    return value


def _context(case: Case, execution: Execution) -> str:
    return ("\n\n".join(d.content for d in execution.retrieved_context)
            or "\n\n".join(case.reference_context))


_RAW_VALUES: dict[str, Callable[[Case, Execution], Any]] = {
    "question": lambda case, execution: case.question().strip(),
    "expected_outcome": lambda case, execution: "\n".join(case.expected_outcomes).strip(),
    "candidate_answer": lambda case, execution: execution.output_text().strip(),
    "reference_answer": lambda case, execution: as_text(case.expected_output).strip(),
    "input_messages": _input_messages,
    "expected_messages": lambda case, execution: case.metadata.get("expected_messages", []),
    "output_messages": lambda case, execution: execution.messages,
    "note": lambda case, execution: as_text(case.metadata.get("note", "")),
    "guidelines": lambda case, execution: "\n".join(case.guidelines),
    "context": _context,
    "metadata": _metadata(2),
    "metadata_json": _metadata(None),
}
_RAW_VALUES.update({"input": _RAW_VALUES["question"], "output": _RAW_VALUES["candidate_answer"],
                    "criteria": _RAW_VALUES["expected_outcome"],
                    "expected_output": _RAW_VALUES["reference_answer"]})
"""How each template variable is read from a case and its execution, before framing."""


@register
class LLMJudge(LLMEvaluator):
    """Scores with a prompt template (or a prompt script); 0-1 with hits, misses, reasoning."""

    type = "llm_judge"
    passthrough: ClassVar[bool] = True
    settings_in_config: ClassVar[bool] = True
    prompt: str = DEFAULT_PROMPT
    uses_answer: bool = Field(
        default=True, description="false for a prompt that deliberately does not show the "
        "judge the agent's answer ({{candidate_answer}} or {{output_messages}})")
    prompt_script: list[str] | None = Field(
        default=None, description="a program that prints the user prompt (AgentV's "
        "prompt: {script: ...}); run without a shell, the case as JSON on stdin")
    config: dict[str, Any] = Field(default_factory=dict,
                                   description="passed to a prompt script with the case")
    cwd: str | None = Field(default=None, description="where a prompt script runs")
    timeout_s: TimeoutS = Field(default=60.0, description="how long a prompt script may "
                                "run")

    def input_files(self) -> dict[Path, str]:
        return script_files(self.prompt_script, self.cwd,
                            f"the prompt script of evaluator {self.name!r}")

    @field_validator("prompt_script", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"prompt script {value!r} cannot be split into arguments: "
                                 f"{exc}") from None
        if isinstance(value, list) and (not value or not all(
                isinstance(a, str) for a in value) or not value[0].strip()):
            raise ValueError("a prompt script is a non-empty list of arguments")
        return value

    @field_validator("prompt")
    @classmethod
    def _known_variables(cls, prompt: str) -> str:
        check_prompt(prompt, VARIABLES, "llm_judge prompt")
        return prompt

    @model_validator(mode="after")
    def _shows_the_answer(self) -> LLMJudge:
        """A judge that never sees the answer still answers with a score: say so, or fix it."""
        if self.prompt_script is not None:
            return self  # the script decides what the prompt shows
        shown = uses_any(self.prompt, ANSWER_VARIABLES)
        if self.uses_answer and not shown:
            raise TemplateError(
                "llm_judge prompt never shows the judge the agent's answer: it uses none of "
                "{{candidate_answer}}, {{output}} and {{output_messages}} (expected: one of "
                "them in the prompt, or uses_answer: false when the judge must not see the "
                "answer)")
        if not self.uses_answer and shown:
            raise TemplateError("llm_judge prompt uses the agent's answer, but uses_answer is "
                                "false (expected: uses_answer true, or a prompt without "
                                "{{candidate_answer}}, {{output}} and {{output_messages}})")
        return self

    async def user_prompt(self, case: Case, execution: Execution) -> str:
        """The user prompt: the template filled in, or what the prompt script printed."""
        if self.prompt_script is None:
            return render(self.prompt, template_values(case, execution,
                                                       used_variables(self.prompt)))
        from assay._util.processes import StartFailed, run_program
        from assay.judges.code.script import case_payload

        what = f"llm_judge {self.name!r} prompt script"
        data = json.dumps(case_payload(case, execution, self.config), ensure_ascii=False,
                          default=str).encode()
        try:
            done = await run_program(self.prompt_script, stdin=data, cwd=self.cwd,
                                     timeout_s=self.timeout_s)
        except StartFailed as exc:
            raise EvaluationError("prompt_script_failed", f"{what}: could not start "
                                  f"{self.prompt_script[0]!r}: {exc.reason}") from None
        tail = done.stderr.decode("utf-8", "replace").strip()[-2000:]
        if done.timed_out:
            raise EvaluationError("prompt_script_failed", f"{what} timed out after "
                                  f"{self.timeout_s:g}s and was killed; stderr: {tail}")
        if done.returncode != 0:
            raise EvaluationError("prompt_script_failed", f"{what} exited with status "
                                  f"{done.returncode}; stderr: {tail or '<empty>'}")
        prompt = done.stdout.decode("utf-8", "replace").strip()
        if not prompt:
            raise EvaluationError("prompt_script_failed", f"{what} printed no prompt; "
                                  f"stderr: {tail or '<empty>'}")
        return prompt

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        user = await self.user_prompt(case, execution)
        result = await self.ask(ctx, SYSTEM.format(data=DATA_NOT_INSTRUCTIONS), user,
                                JudgeVerdict)
        if result.value is None:
            return self.failed(result)
        verdict = result.value
        return Score(
            name=self.name, value=verdict.score, raw=verdict.score, scale="0-1",
            passed=self.verdict(verdict.score), rationale=verdict.reasoning,
            hits=[h for h in verdict.hits if h.strip()][:4],
            misses=[m for m in verdict.misses if m.strip()][:4],
            usage=result.usage, latency_ms=result.latency_ms, judge_model=result.model)
