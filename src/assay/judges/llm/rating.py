"""A rating on a declared integer scale, optionally weighted by the judge's token probabilities.

``rating`` asks for a whole number on ``scale`` (1-5 by default) for ``criteria``, with a short
reasoning first. The answer is kept as ``raw`` on that scale and normalised to 0-1 as
``(raw - low) / (high - low)``. Because the scale is declared, calibration can compare the
ratings with human labels on the same scale (weighted kappa), and refuses labels on another.

``logprobs: true`` weights the rating by the judge's own probabilities, as G-Eval does (Liu et
al., EMNLP 2023): the request asks for the top log-probabilities of each token, and the score
is the probability-weighted mean of the scale values the judge considered at the score's
token, normalised over those values. This turns a coarse integer into a continuous score and
removes ties that blunt rank correlations. Where the provider returns no log-probabilities,
or the score is not one token, the plain rating stands and ``details`` says why.

The default prompt shows only the sections a case has. A custom ``prompt`` uses the variables
of ``llm_judge`` (``{{question}}``, ``{{candidate_answer}}``, ``{{reference_answer}}``,
``{{context}}``, ``{{guidelines}}``...) and must show the answer.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from pydantic import Field, create_model, field_validator, model_validator

from assay.errors import TemplateError
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer, WholeNumber
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.llm_judge import ANSWER_VARIABLES, VARIABLES, template_values
from assay.judges.llm.prompt_check import check_prompt, uses_any
from assay.judges.llm.templates import render, used_variables
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

SYSTEM = """You are a strict, fair judge. {data}

Rate the answer for {criteria} on a whole-number scale from {low} ({low} = worst) to {high} \
({high} = best). Respond with a JSON object with two fields: "reasoning", one or two \
sentences, then "score", a whole number from {low} to {high}."""

_SCORE = re.compile(r'"score"\s*:\s*(-?\d+)')
MAX_TOP_LOGPROBS = 20
"""OpenAI's limit on alternatives per token."""


@functools.lru_cache(maxsize=64)
def answer_model(low: int, high: int) -> type[JudgeAnswer]:
    """The answer schema for one scale: reasoning, then a whole number within it."""
    model: type[JudgeAnswer] = create_model(
        f"Rating{low}to{high}".replace("-", "minus"), __base__=JudgeAnswer,
        reasoning=(str, ""), score=(WholeNumber, Field(ge=low, le=high)))
    return model


@register
class Rating(LLMEvaluator):
    """A whole-number rating on a declared scale, normalised to 0-1."""

    type = "rating"
    prompt: str | None = Field(
        default=None, description="a prompt template; None: assay's prompt, showing only the "
        "sections a case has")
    criteria: str = Field(default="overall quality", min_length=1,
                          description="what is rated, in a few words")
    scale: tuple[int, int] = Field(default=(1, 5), description="the lowest and highest rating")
    logprobs: bool = Field(
        default=False, description="weight the rating by the judge's token probabilities "
        "(G-Eval), where the provider returns them")

    @field_validator("scale")
    @classmethod
    def _ordered(cls, scale: tuple[int, int]) -> tuple[int, int]:
        low, high = scale
        if not low < high or high - low > 100:
            raise ValueError(f"scale {list(scale)} must be [low, high] with low < high and "
                             "at most 100 steps")
        return scale

    @field_validator("prompt")
    @classmethod
    def _known_variables(cls, prompt: str | None) -> str | None:
        if prompt is None:
            return None
        check_prompt(prompt, VARIABLES, "rating prompt")
        return prompt

    @model_validator(mode="after")
    def _shows_the_answer(self) -> Rating:
        if self.prompt is not None and not uses_any(self.prompt, ANSWER_VARIABLES):
            raise TemplateError("rating prompt never shows the judge the agent's answer: it "
                                "uses neither {{candidate_answer}} nor {{output_messages}}")
        return self

    def calibration_scale(self) -> dict[str, Any]:
        """What calibration compares this judge's answers with: integers on its scale."""
        return {"kind": "ordinal", "scale": list(self.scale)}

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        low, high = self.scale
        system = SYSTEM.format(data=DATA_NOT_INSTRUCTIONS, criteria=self.criteria, low=low,
                               high=high)
        top = min(MAX_TOP_LOGPROBS, max(5, high - low + 1)) if self.logprobs else None
        result = await self.ask(ctx, system, self._user(case, execution), answer_model(low, high),
                                top_logprobs=top)
        if result.value is None:
            return self.failed(result)
        answered = int(result.value.score)  # type: ignore[attr-defined]
        raw: float = answered
        details: dict[str, Any] | None = None
        if self.logprobs:
            weighted = weighted_rating(result.logprobs, low, high)
            if isinstance(weighted, str):
                details = {"weighted": False, "why": weighted, "answered": answered}
            else:
                raw = weighted[0]
                details = {"weighted": True, "answered": answered,
                           "distribution": weighted[1]}
        value = min(1.0, max(0.0, (raw - low) / (high - low)))
        return Score(name=self.name, value=value, raw=raw, scale=f"{low}-{high}",
                     passed=self.verdict(value),
                     rationale=result.value.reasoning or None,  # type: ignore[attr-defined]
                     details=details, usage=result.usage, latency_ms=result.latency_ms,
                     judge_model=result.model)

    def _user(self, case: Case, execution: Execution) -> str:
        if self.prompt is not None:
            return render(self.prompt, template_values(case, execution,
                                                       used_variables(self.prompt)))
        values = template_values(case, execution, _BUILT_IN)
        present = {
            "question": case.question().strip(),
            "guidelines": "\n".join(case.guidelines).strip(),
            "context": "\n\n".join(d.content for d in execution.retrieved_context)
            or "\n\n".join(case.reference_context),
            "reference_answer": case.expected_output not in (None, ""),
        }
        parts = [f"Rate the answer for {self.criteria}."]
        for key in ("question", "guidelines", "context", "reference_answer"):
            if present[key]:
                parts.append(f"[[ ## {key} ## ]]\n{values[key]}")
        parts.append(f"[[ ## answer ## ]]\n{values['candidate_answer']}")
        return "\n\n".join(parts)


_BUILT_IN = ("question", "guidelines", "context", "reference_answer", "candidate_answer")
"""The variables of the prompt a rating judge writes when it is given none."""


def weighted_rating(tokens: list[dict[str, Any]] | None, low: int,
                    high: int) -> tuple[float, dict[str, float]] | str:
    """The probability-weighted rating and its distribution over the scale, read from the
    alternatives at the score's token; or why it cannot be (a reason, as text)."""
    if not tokens:
        return "the provider returned no token log-probabilities"
    pieces = [str(t.get("token", "")) for t in tokens]
    text = "".join(pieces)
    found = _SCORE.search(text)
    if found is None:
        return "no score was found in the answer's tokens"
    start, position, at = found.start(1), 0, -1
    for index, piece in enumerate(pieces):
        if position <= start < position + len(piece):
            at = index
            break
        position += len(piece)
    piece, token = pieces[at], tokens[at]
    if piece.strip() != found.group(1):
        return "the score is split over several tokens"
    probabilities: dict[int, float] = {}
    for alternative in token.get("top_logprobs") or []:
        spelled = str(alternative.get("token", "")).strip()
        logprob = alternative.get("logprob")
        if not re.fullmatch(r"-?\d+", spelled) or not isinstance(logprob, int | float):
            continue
        value = int(spelled)
        if low <= value <= high and math.isfinite(logprob):
            probabilities[value] = probabilities.get(value, 0.0) + math.exp(logprob)
    total = sum(probabilities.values())
    if total <= 0:
        return "no alternative at the score's token lies on the scale"
    weighted = sum(v * p for v, p in probabilities.items()) / total
    return weighted, {str(v): p / total for v, p in sorted(probabilities.items())}
