"""Why a case failed, in one judge call: the turn and the agent's behaviour that caused it,
and a fix to try (Connexity's AI cause analysis, row C37 of its specification).

The judge reads what every judge read (the transcript, turn by turn, as
:func:`~assay.judges.llm.connexity.render_transcript` renders it), the case's expected
outcomes, and how each evaluator scored the case (its value, rationale and misses; the
multi-metric judge's metrics and outcome results), then names the single turn that most
caused the failure, what the agent did there, why that failed the case and what to change.
For a regression it also reads how the same case was scored in the baseline run.

The answer's ``turn`` must be one of the transcript's turns (a schema enum), so it always
points at something that was said. An analysis that cannot be made (the judge failed, or
answered unusably after its re-asks) keeps the error instead; it never changes a verdict or
a score either way. It is off unless a run asks for it (``--cause-analysis``), and its call
is counted, and priced, with the run's judge calls.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal, cast

from pydantic import Field, create_model

from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS
from assay.judges.llm.connexity import connexity_record, render_transcript, transcript_messages
from assay.judges.llm.templates import delimit
from assay.llm.engine import JudgeEngine
from assay.llm.structured import ask_structured
from assay.types import numbers
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CauseAnalysis
from assay.types.score import Score

SCHEMA_NAME = "cause_analysis"
TURN_TEXT_CHARS = 300
"""How much of the blamed turn's text the analysis keeps beside its index."""
RATIONALE_CHARS = 1500
"""How much of each evaluator's rationale the prompt quotes."""

SYSTEM = """You are an expert at debugging conversational AI agents. A test case of an agent \
failed its evaluation. Read the conversation, the case's expected outcomes and how each \
evaluator scored it, then find the single turn, and the agent's behaviour in it, that most \
caused the failure, and say how to fix it.

Rules:
- "turn" is the N of the "Turn N" that most caused the failure (an agent turn, or the user \
turn the agent mishandled); null only when no turn can be blamed (nothing was said).
- "behaviour": what the agent did (or failed to do) there, in one sentence.
- "cause": why that made the case fail, naming the evaluator, metric or expected outcome it \
failed, in one or two sentences.
- "suggested_fix": one concrete change to try (to the agent's prompt, its tools, its model, \
or the test case itself when the case is wrong), in one or two sentences.
- "confidence": high, medium or low.

{data}"""


class _Answer(JudgeAnswer):
    behaviour: str = Field(min_length=1)
    cause: str = Field(min_length=1)
    suggested_fix: str = Field(min_length=1)
    confidence: Literal["high", "medium", "low"]


@functools.lru_cache(maxsize=64)
def answer_model(turns: int) -> type[_Answer]:
    """The answer schema for a transcript of ``turns`` turns: ``turn`` is one of them."""
    turn_type: Any = cast(Any, Literal)[tuple(range(turns))] | None if turns else None
    return cast(type[_Answer], create_model(
        SCHEMA_NAME, __base__=_Answer,
        turn=(turn_type, Field(description="the N of the Turn N that caused it"))))


def _score_lines(scores: Sequence[Score]) -> str:
    """How each evaluator scored the case, as the analysis reads it."""
    lines: list[str] = []
    for score in scores:
        if score.error is not None:
            lines.append(f"- {score.name}: error {score.error.code}: {score.error.message}")
            continue
        if score.value is None:
            lines.append(f"- {score.name}: did not apply ({score.skipped or 'no value'})")
            continue
        raw = f" (raw {score.raw} on {score.scale})" if score.raw is not None and score.scale \
            else ""
        passed = "" if score.passed is None else (" passed" if score.passed else " FAILED")
        lines.append(f"- {score.name}: {numbers.score(score.value)}{raw}{passed}")
        if score.rationale:
            lines.append(f"  rationale: {score.rationale[:RATIONALE_CHARS]}")
        lines.extend(f"  miss: {miss}" for miss in score.misses[:10])
        record = connexity_record(score)
        if record is not None:
            lines.extend(f"  metric {m['metric']}: {m['score']}/5 ({m['label']}), turns "
                         f"{m.get('turns') or []}: {m.get('justification', '')}"
                         for m in record.get("metric_scores") or [])
            lines.extend(f"  outcome {o['index']} {'passed' if o['passed'] else 'FAILED'}: "
                         f"{o['statement']} ({o.get('justification', '')})"
                         for o in record.get("expected_outcome_results") or [])
    return "\n".join(lines) or "(no scores)"


def analysis_prompt(case: Case, execution: Execution, scores: Sequence[Score],
                    baseline: Sequence[Score] | None = None) -> tuple[str, int]:
    """The user prompt of the analysis, and how many turns its transcript has."""
    transcript = transcript_messages(case, execution)
    outcomes = "\n".join(f"{i}. {text}" for i, text in enumerate(case.expected_outcomes, 1))
    sections = [
        "## Expected Outcomes\n" + (delimit("expected_outcomes", outcomes) if outcomes
                                    else "(none)"),
        "## Transcript\n" + delimit("transcript", render_transcript(transcript) or "(empty)"),
        "## How the evaluators scored this case (it failed)\n" + delimit(
            "scores", _score_lines(scores)),
    ]
    if case.evaluation_criteria_override:
        sections.insert(1, "## Test case-specific evaluation emphasis\n" + delimit(
            "evaluation_emphasis", case.evaluation_criteria_override))
    if baseline is not None:
        sections.append("## The same case in the baseline run, where it did better\n" + delimit(
            "baseline_scores", _score_lines(baseline)) + "\nExplain what changed for the "
            "worse: the regression is the failure to analyse.")
    return "\n\n".join(sections), len(transcript)


async def analyse_case(engine: JudgeEngine, model: str | None, case: Case,
                       execution: Execution, scores: Sequence[Score], *,
                       baseline: Sequence[Score] | None = None,
                       compared_with: str | None = None, sample: int = 0) -> CauseAnalysis:
    """One judge call: which turn and behaviour made ``case`` fail, and a fix to try."""
    user, turns = analysis_prompt(case, execution, scores, baseline)
    system = SYSTEM.format(data=DATA_NOT_INSTRUCTIONS)
    result = await ask_structured(
        engine, [{"role": "system", "content": system}, {"role": "user", "content": user}],
        answer_model(turns), model=model, name=SCHEMA_NAME, sample=sample)
    kept: dict[str, Any] = {"model": result.model, "usage": result.usage,
                            "latency_ms": result.latency_ms, "compared_with": compared_with}
    if result.value is None:
        return CauseAnalysis(error=result.error, **kept)
    answer = result.value
    turn = cast(int | None, getattr(answer, "turn", None))
    transcript = transcript_messages(case, execution) if turn is not None else []
    said = transcript[turn] if turn is not None and turn < len(transcript) else None
    return CauseAnalysis(
        turn=turn, turn_role=said.role if said else None,
        turn_text=said.text()[:TURN_TEXT_CHARS] if said else None,
        behaviour=answer.behaviour, cause=answer.cause, suggested_fix=answer.suggested_fix,
        confidence=answer.confidence, **kept)


__all__ = ["analyse_case", "analysis_prompt", "answer_model"]
