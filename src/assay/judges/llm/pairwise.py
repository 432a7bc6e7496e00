"""Pairwise judging: which of two answers is better, asked in both orders.

A judge shown two answers tends to prefer one position whatever the answers say (GPT-4 kept
its verdict after the answers were swapped only 65% of the time in the MT-Bench study). So
``pairwise`` asks twice, once with the agent's answer first and once with it second, and
keeps a verdict only when both orders agree; a verdict that flips with the order is a tie and
is recorded as inconsistent (``details["consistent"]``), which is what calibration counts as
position consistency. Ties the judge may give itself are allowed, or forbidden with
``ties: forbid`` (the answer schema then has no ``tie``; a flip is still a tie).

The two answers are the agent's output (answer 1) and, by default, the case's expected output
(answer 2, the baseline); ``baseline: metadata.KEY`` takes answer 2 from the case's metadata.
The score is 1.0 when answer 1 wins, 0.0 when the baseline wins and 0.5 for a tie; ``label``
(and ``raw``) is ``"1"``, ``"2"`` or ``"tie"``. With the default threshold a case passes only
when the agent's answer wins.

The default prompt follows the rules of LLMBar (Zeng et al., ICLR 2024): honest execution of
the instruction first, then helpfulness, accuracy and harmlessness; order, length and style
must not decide. It shows only the sections a case has. A custom ``prompt`` uses
``{{question}}``, ``{{answer_a}}``, ``{{answer_b}}`` (both required), ``{{reference_answer}}``,
``{{guidelines}}`` and ``{{context}}``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field, field_validator

from assay.errors import TemplateError
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.prompt_check import check_prompt
from assay.judges.llm.templates import as_text, delimit, render, variables
from assay.judges.registry import register
from assay.llm.structured import StructuredResult
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

VARIABLES = ("question", "answer_a", "answer_b", "reference_answer", "guidelines", "context")
LABELS = ("1", "2", "tie")
VALUES = {"1": 1.0, "2": 0.0, "tie": 0.5}

RULES = """Rules:
1. First decide whether each answer honestly and precisely does what the instruction asks. \
An answer that does not follow the instruction loses to one that does, however well written.
2. Then prefer the answer that is more helpful, accurate and harmless.
3. The order in which the answers are shown, their length and their style must not decide: \
a longer answer is not better for being longer."""

SYSTEM = """You are an impartial judge comparing two answers to the same instruction. {data}

{rules}

Respond with a JSON object with two fields: "winner", {choices}; "reasoning", one short \
sentence saying why."""

CHOICES = {"allow": '"A" or "B" for the better answer, or "tie" when neither is better',
           "forbid": '"A" or "B" for the better answer (you must choose one)'}


REASONING_CHARS = 300
"""The pick comes first and the reasoning is one short sentence: a bound that keeps a small
local model (whose output is constrained to the schema) from rambling for hundreds of tokens
per call."""


class PairwiseChoice(JudgeAnswer):
    """The judge's pick when ties are forbidden."""

    winner: Literal["A", "B"]
    reasoning: str = Field(default="", max_length=REASONING_CHARS)


class PairwiseChoiceOrTie(JudgeAnswer):
    """The judge's pick when it may call a tie."""

    winner: Literal["A", "B", "tie"]
    reasoning: str = Field(default="", max_length=REASONING_CHARS)


@register
class Pairwise(LLMEvaluator):
    """Compares the agent's answer with a baseline answer in both orders."""

    type = "pairwise"
    prompt: str | None = Field(
        default=None, description="a prompt template; None: assay's prompt, showing only the "
        "sections a case has")
    ties: Literal["allow", "forbid"] = Field(
        default="allow", description="whether the judge may answer 'tie' (a verdict that "
        "flips with the order is a tie either way)")
    baseline: str = Field(
        default="expected_output", description="where answer 2 comes from: expected_output, "
        "or metadata.KEY")

    @field_validator("prompt")
    @classmethod
    def _known_variables(cls, prompt: str | None) -> str | None:
        if prompt is None:
            return None
        check_prompt(prompt, VARIABLES, "pairwise prompt")
        missing = [v for v in ("answer_a", "answer_b") if v not in variables(prompt)]
        if missing:
            raise TemplateError(
                "pairwise prompt never shows the judge " + " and ".join(
                    "{{" + v + "}}" for v in missing) + " (expected both {{answer_a}} and "
                "{{answer_b}}: the judge compares two answers)")
        return prompt

    @field_validator("baseline")
    @classmethod
    def _baseline_field(cls, value: str) -> str:
        if value != "expected_output" and not (value.startswith("metadata.") and
                                               len(value) > len("metadata.")):
            raise ValueError(f"baseline {value!r}: expected 'expected_output' or "
                             "'metadata.KEY'")
        return value

    def calibration_scale(self) -> dict[str, Any]:
        """What calibration compares this judge's answers with: pairwise labels."""
        return {"kind": "pairwise", "ties": self.ties == "allow"}

    def second_answer(self, case: Case) -> Any:
        """Answer 2 (the baseline) of a case, or None when the case has none."""
        if self.baseline == "expected_output":
            return case.expected_output
        return case.metadata.get(self.baseline.removeprefix("metadata."))

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        baseline = self.second_answer(case)
        if baseline is None:
            return Score.not_applicable(
                self.name, f"the case has no second answer to compare with ({self.baseline})")
        first = execution.output_text().strip()
        second = as_text(baseline).strip()  # an empty answer is still an answer
        schema: type[PairwiseChoice] | type[PairwiseChoiceOrTie] = (
            PairwiseChoiceOrTie if self.ties == "allow" else PairwiseChoice)
        system = SYSTEM.format(data=DATA_NOT_INSTRUCTIONS, rules=RULES,
                               choices=CHOICES[self.ties])
        original, swapped = await asyncio.gather(
            self.ask(ctx, system, self._user(case, first, second), schema),
            self.ask(ctx, system, self._user(case, second, first), schema))
        usage = original.usage + swapped.usage
        orders = [_order("1", original), _order("2", swapped)]
        details: dict[str, Any] = {"orders": orders}
        for result in (original, swapped):
            if result.value is None:
                failed = self.failed(result)
                return failed.model_copy(update={"usage": usage, "details": {
                    **(failed.details or {}), **details}})
        picked = [str(order["picked"]) for order in orders]
        consistent = picked[0] == picked[1]
        label = picked[0] if consistent else "tie"
        details["consistent"] = consistent
        value = VALUES[label]
        reasons = [str(o["reasoning"]) for o in orders if o.get("reasoning")]
        rationale = "; ".join(reasons) if consistent else (
            "the verdict flipped when the answers were swapped, so it counts as a tie"
            + (f" ({'; '.join(reasons)})" if reasons else ""))
        return Score(name=self.name, value=value, raw=label, scale="1|2|tie", label=label,
                     passed=self.verdict(value), rationale=rationale or None,
                     details=details, usage=usage, judge_model=original.model)

    def _user(self, case: Case, answer_a: str, answer_b: str) -> str:
        values = {
            "question": case.question().strip(),
            "answer_a": answer_a,
            "answer_b": answer_b,
            "reference_answer": as_text(case.expected_output).strip()
            if self.baseline != "expected_output" else "",
            "guidelines": "\n".join(case.guidelines).strip(),
            "context": "\n\n".join(case.reference_context).strip(),
        }
        if self.prompt is not None:
            return render(self.prompt, {k: delimit(k, v) for k, v in values.items()})
        sections = [("instruction", "question"), ("guidelines", "guidelines"),
                    ("context", "context"), ("reference_answer", "reference_answer"),
                    ("answer_A", "answer_a"), ("answer_B", "answer_b")]
        parts = ["Which answer better follows the instruction?"]
        for header, key in sections:
            if values[key] or key in ("answer_a", "answer_b", "question"):
                parts.append(f"[[ ## {header} ## ]]\n{delimit(key, values[key])}")
        return "\n\n".join(parts)


def _order(shown_first: str, result: StructuredResult[Any]) -> dict[str, Any]:
    """One order's verdict in terms of the answers: which answer was shown first, what the
    judge picked (A/B/tie) and which answer that is (1, 2 or tie)."""
    order: dict[str, Any] = {"shown_first": shown_first}
    if result.value is None:
        order["error"] = result.error.code if result.error else "no answer"
        return order
    winner = result.value.winner
    if winner == "tie":
        picked = "tie"
    elif (winner == "A") == (shown_first == "1"):
        picked = "1"
    else:
        picked = "2"
    order.update(winner=winner, picked=picked, reasoning=result.value.reasoning)
    return order
