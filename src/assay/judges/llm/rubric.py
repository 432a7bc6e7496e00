"""Rubric judges: an LLM checks the answer against listed criteria (AgentV's rubrics).

Two modes, chosen by the criteria themselves:

Checklist (no ``score_ranges``)
    Each item ``{id, expected_outcome, weight=1, required=True}`` is satisfied or not. The score
    is the satisfied weight over the total weight; an unsatisfied *required* item fails the
    verdict and the case (the score is ``blocking``) whatever the score, because a rubric
    author marks as required what no amount of polish elsewhere can make up for.
Score ranges (every criterion has ``score_ranges``)
    Each criterion is scored 0-10 against bands that describe what each range means, given as
    ``[{score_range: [min, max], expected_outcome}]`` or the shorthand ``{0: "Bad", 3: "OK",
    7: "Good", 10: "Perfect"}`` (each key starts a band that runs to the next key). Bands must
    be integers, must not overlap and must cover 0-10, so every answer the judge can give has
    a meaning. The score is sum(raw/10 x w) / sum(w); a criterion below its
    ``required_min_score`` fails the verdict and the case (``blocking``); a raw score of 7 or
    more is a hit.

The judge's answer is validated against the rubric itself: an unknown, repeated or missing id
is a validation error, so the engine re-asks, and after its bounded re-asks the score is an
error, never a 0.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Literal, cast

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)

from assay._util.control_chars import plain_text
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer, WholeNumber
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.llm_judge import template_values
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

HIT_AT = 7
"""A raw 0-10 score at or above this counts as a hit in score-range mode."""

_OUTCOME = AliasChoices("expected_outcome", "description", "outcome")


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ScoreRange(_Config):
    """One band of a 0-10 scale and what an answer in it looks like."""

    score_range: tuple[int, int]
    expected_outcome: str = Field(min_length=1, validation_alias=_OUTCOME)

    @field_validator("score_range")
    @classmethod
    def _ordered(cls, bounds: tuple[int, int]) -> tuple[int, int]:
        low, high = bounds
        if not 0 <= low <= high <= 10:
            raise ValueError(f"score_range {list(bounds)} must satisfy 0 <= min <= max <= 10")
        return bounds


def _ranges_from_map(value: dict[Any, Any]) -> list[dict[str, Any]]:
    """``{0: "Bad", 3: "OK"}`` -> bands 0-2 and 3-10: each key starts a band."""
    starts: list[tuple[int, str]] = []
    for key, text in value.items():
        try:
            start = int(str(key))
        except ValueError:
            raise ValueError(f"score_ranges key {key!r} is not an integer") from None
        if str(start) != str(key).strip():
            raise ValueError(f"score_ranges key {key!r} is not an integer")
        starts.append((start, text))
    starts.sort()
    return [{"score_range": [start, (starts[i + 1][0] - 1) if i + 1 < len(starts) else 10],
             "expected_outcome": text} for i, (start, text) in enumerate(starts)]


class RubricItem(_Config):
    """One criterion. ``required`` gates checklists; ``required_min_score`` gates ranges."""

    id: str = Field(min_length=1)
    expected_outcome: str = Field(min_length=1, validation_alias=_OUTCOME)
    weight: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    required: bool = True
    score_ranges: list[ScoreRange] | None = None
    required_min_score: int | None = Field(default=None, ge=0, le=10)

    @field_validator("score_ranges", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _ranges_from_map(value) if isinstance(value, dict) else value

    @field_validator("score_ranges")
    @classmethod
    def _cover_zero_to_ten(cls, ranges: list[ScoreRange] | None) -> list[ScoreRange] | None:
        if ranges is None:
            return None
        covered: dict[int, list[int]] = {}
        for band in ranges:
            for point in range(band.score_range[0], band.score_range[1] + 1):
                covered.setdefault(point, []).append(1)
        overlapping = sorted(p for p, n in covered.items() if len(n) > 1)
        if overlapping:
            raise ValueError(f"score_ranges overlap at {overlapping}")
        gaps = [p for p in range(11) if p not in covered]
        if gaps:
            raise ValueError(f"score_ranges must cover 0-10; not covered: {plain_text(gaps)}")
        return sorted(ranges, key=lambda b: b.score_range[0])

    def min_score(self) -> int | None:
        """The gate in score-range mode; an explicit ``required: true`` alone means 10."""
        if self.required_min_score is not None:
            return self.required_min_score
        return 10 if "required" in self.model_fields_set and self.required else None


class _Verdict(JudgeAnswer):
    """What every rubric answer shares: checks whose ids are exactly the rubric's."""

    expected_ids: ClassVar[tuple[str, ...]] = ()
    overall_reasoning: str = ""

    def ids(self) -> list[str]:
        return [c.id for c in getattr(self, "checks", [])]

    @model_validator(mode="after")
    def _exactly_the_rubric(self) -> _Verdict:
        ids = self.ids()
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError("each rubric id must be checked once; repeated: "
                             f"{plain_text(repeated)}")
        missing = [i for i in self.expected_ids if i not in ids]
        if missing:
            raise ValueError(f"checks are missing rubric id(s) {plain_text(missing)}; give one "
                             f"check for each of {plain_text(list(self.expected_ids))}")
        return self


class ChecklistCheck(JudgeAnswer):
    """The judge's verdict on one checklist item."""

    id: str
    satisfied: bool
    reasoning: str = ""


class ChecklistVerdict(_Verdict):
    """A checklist answer: one check per rubric item."""

    checks: list[ChecklistCheck]


class RangeCheck(JudgeAnswer):
    """The judge's 0-10 score for one criterion."""

    id: str
    score: WholeNumber = Field(ge=0, le=10)
    reasoning: str = ""


class RangeVerdict(_Verdict):
    """A score-range answer: one 0-10 check per criterion."""

    checks: list[RangeCheck]


@functools.lru_cache(maxsize=256)
def answer_schema(base: type[_Verdict], check: type[BaseModel],
                  ids: tuple[str, ...]) -> type[_Verdict]:
    """``base`` narrowed to this rubric: ids an enum (so the judge sees them), all required."""
    id_type: Any = cast(Any, Literal)[ids]
    narrowed_check = create_model(check.__name__, __base__=check, id=(id_type, ...))
    # One check per id: said in the schema the judge sees; the validator explains misses.
    sized = Field(json_schema_extra={"minItems": len(ids), "maxItems": len(ids)})
    schema = cast(type[_Verdict], create_model(
        base.__name__, __base__=base,
        checks=(list[narrowed_check], sized)))  # type: ignore[valid-type]
    schema.expected_ids = ids
    return schema


SYSTEM_CHECKLIST = """You are a strict, fair judge. Decide for each rubric item whether the \
candidate answer satisfies it. {data}

Respond with a single JSON object with exactly one check per rubric id:
{{"checks": [{{"id": "<rubric id>", "satisfied": <true|false>, "reasoning": "<one sentence>"}}], \
"overall_reasoning": "<1-2 sentences>"}}"""

SYSTEM_RANGES = """You are a strict, fair judge. Score the candidate answer on each criterion \
with an integer from 0 to 10, using the criterion's score bands. {data}

Respond with a single JSON object with exactly one check per criterion id:
{{"checks": [{{"id": "<criterion id>", "score": <integer 0-10>, "reasoning": "<one sentence>"}}], \
"overall_reasoning": "<1-2 sentences>"}}"""

USER = """[[ ## rubrics ## ]]
{rubrics}

[[ ## question ## ]]
{question}

[[ ## expected_outcome ## ]]
{expected_outcome}

[[ ## reference_answer ## ]]
{reference_answer}

[[ ## candidate_answer ## ]]
{candidate_answer}"""
"""The rubric (the evaluator's own, the same for every case) first and the case's data last,
so a provider's prompt cache can reuse everything before the question."""


@register
class Rubric(LLMEvaluator):
    """An LLM checks the answer against a checklist or against 0-10 score bands."""

    type = "rubric"
    rubrics: list[RubricItem] = Field(min_length=1,
                                      validation_alias=AliasChoices("rubrics", "criteria"))

    @field_validator("rubrics", mode="before")
    @classmethod
    def _plain_strings(cls, items: Any) -> Any:
        # AgentV lets a rubric be a bare string; number those so the judge can name them.
        if isinstance(items, list):
            return [{"id": f"r{i + 1}", "expected_outcome": item} if isinstance(item, str)
                    else item for i, item in enumerate(items)]
        return items

    @field_validator("rubrics")
    @classmethod
    def _one_mode(cls, items: list[RubricItem]) -> list[RubricItem]:
        ids = [item.id for item in items]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"rubric ids must be unique; repeated: {', '.join(repeated)}")
        with_ranges = [item.id for item in items if item.score_ranges is not None]
        if with_ranges and len(with_ranges) != len(items):
            without = [item.id for item in items if item.score_ranges is None]
            raise ValueError(f"score_ranges given for {', '.join(with_ranges)} but not for "
                             f"{', '.join(without)}: use score ranges for every criterion or "
                             "for none")
        if not with_ranges and any(item.required_min_score is not None for item in items):
            raise ValueError("required_min_score only applies to criteria with score_ranges")
        if sum(item.weight for item in items) <= 0:
            raise ValueError("rubric weights add up to 0; at least one must be above 0")
        return items

    @property
    def ranged(self) -> bool:
        return self.rubrics[0].score_ranges is not None

    def _rubric_text(self) -> str:
        lines = []
        for item in self.rubrics:
            if self.ranged:
                gate = item.min_score()
                head = f"- [{item.id}] (weight: {item.weight:g})" + (
                    f" (minimum score: {gate})" if gate is not None else "")
                lines.append(f"{head}: {item.expected_outcome}")
                for band in item.score_ranges or []:
                    low, high = band.score_range
                    lines.append(f"    {low}-{high}: {band.expected_outcome}")
            else:
                required = " (REQUIRED)" if item.required else ""
                lines.append(f"- [{item.id}]{required} (weight: {item.weight:g}): "
                             f"{item.expected_outcome}")
        return "\n".join(lines)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        user = USER.format(rubrics=self._rubric_text(), **template_values(
            case, execution, ("question", "expected_outcome", "reference_answer",
                              "candidate_answer")))
        ids = tuple(item.id for item in self.rubrics)
        if self.ranged:
            system = SYSTEM_RANGES.format(data=DATA_NOT_INSTRUCTIONS)
            schema = answer_schema(RangeVerdict, RangeCheck, ids)
        else:
            system = SYSTEM_CHECKLIST.format(data=DATA_NOT_INSTRUCTIONS)
            schema = answer_schema(ChecklistVerdict, ChecklistCheck, ids)
        result = await self.ask(ctx, system, user, schema)
        if result.value is None:
            return self.failed(result)
        checks = {c.id: c for c in getattr(result.value, "checks", [])}
        reasoning = result.value.overall_reasoning or None
        scored = (self._ranges(checks, reasoning) if self.ranged
                  else self._checklist(checks, reasoning))
        return scored.model_copy(update={"usage": result.usage, "latency_ms": result.latency_ms,
                                         "judge_model": result.model})

    def _checklist(self, checks: dict[str, Any], reasoning: str | None) -> Score:
        total = sum(item.weight for item in self.rubrics)
        satisfied = sum(item.weight for item in self.rubrics if checks[item.id].satisfied)
        hits: list[str] = []
        misses: list[str] = []
        failed_required: list[str] = []
        for item in self.rubrics:
            check = checks[item.id]
            line = _line(item, check.reasoning)
            if check.satisfied:
                hits.append(line)
            else:
                misses.append(line)
                if item.required:
                    failed_required.append(item.id)
        value = min(1.0, max(0.0, satisfied / total))
        return Score(
            name=self.name, value=value, raw={i: checks[i].satisfied for i in checks},
            scale="checklist", passed=self.verdict(value) and not failed_required,
            blocking=bool(failed_required), rationale=reasoning, hits=hits, misses=misses,
            details={"mode": "checklist", "satisfied_weight": satisfied, "total_weight": total,
                     "checks": [{"id": item.id, "satisfied": checks[item.id].satisfied,
                                 "weight": item.weight, "required": item.required,
                                 "reasoning": checks[item.id].reasoning}
                                for item in self.rubrics]})

    def _ranges(self, checks: dict[str, Any], reasoning: str | None) -> Score:
        total = sum(item.weight for item in self.rubrics)
        weighted = sum(checks[item.id].score / 10 * item.weight for item in self.rubrics)
        hits: list[str] = []
        misses: list[str] = []
        below: list[str] = []
        for item in self.rubrics:
            check = checks[item.id]
            line = _line(item, f"{check.score}/10" + (
                f" - {check.reasoning}" if check.reasoning else ""))
            (hits if check.score >= HIT_AT else misses).append(line)
            gate = item.min_score()
            if gate is not None and check.score < gate:
                below.append(item.id)
                misses.append(f"[{item.id}] scored {check.score}, below the required "
                              f"minimum {gate}")
        value = min(1.0, max(0.0, weighted / total))
        raw_scores = {item.id: checks[item.id].score for item in self.rubrics}
        return Score(
            name=self.name, value=value, raw=raw_scores, scale="0-10",
            passed=self.verdict(value) and not below, blocking=bool(below),
            rationale=reasoning, hits=hits, misses=misses,
            details={"raw_scores": raw_scores, "normalization": "score / 10",
                     "aggregation": "weighted_average", "below_required_min": below})


def _line(item: RubricItem, reasoning: str) -> str:
    return f"[{item.id}] {item.expected_outcome}" + (f": {reasoning}" if reasoning else "")
