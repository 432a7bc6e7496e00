"""The multi-metric judge (``connexity_judge``): one call scores a whole conversation.

One judge call per case scores every selected metric (0-5, or pass/fail for binary ones, see
:mod:`assay.judges.llm.connexity_metrics`) and checks every expected outcome of the case, over the
transcript rendered turn by turn (tool calls and tool results included), with the agent's
system prompt and tools when the suite gives them. The score is

    overall_score = round(Σ score/5 x weight x 100, 2)      (0-100; all 5s give 100.0)

stored as ``raw`` (scale ``0-100``) beside the value ``overall_score / 100``. The case's gate:
when the case has expected outcomes it passes iff every one of them passed (the outcomes do
not enter the score); without outcomes it passes iff ``overall_score >= pass_threshold``
(inclusive, 75 by default). The gate is a required check under every scoring: a score whose
gate failed is ``blocking``, so the case fails under the default scoring too, whatever its
overall score (an 85 with an expected outcome not met is not a pass). ``details`` holds the whole verdict: every metric's score, label,
renormalised weight, tier, justification, failure code and the turns it cites, and every
outcome's result, in the case's order with the statements as the case wrote them.

The answer is checked against the selection: exactly one result per metric (scored metrics
an integer 0-5, binary ones a boolean) and exactly one per outcome, keyed by its number. An
answer that leaves any out, or repeats one, is re-asked, and after the engine's re-asks the
score is the error ``judge_output_invalid`` with the raw answer kept: never a 0, and never a
verdict on the outcomes the judge happened to answer. The prompt's structure follows the
Connexity platform's judge (MIT); the wording and rubrics are assay's own.
"""

from __future__ import annotations

import functools
import json
from typing import Any, ClassVar, Literal, cast

from pydantic import Field, ValidationError, create_model, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from assay._util import jsondata
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer, WholeNumber
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.connexity_metrics import (
    MetricChoice,
    MetricDefinition,
    WeightedMetric,
    label,
    metric_problems,
    overall_score,
    select_metrics,
)
from assay.judges.llm.templates import delimit
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.messages import Message
from assay.types.score import Score

SCHEMA_NAME = "judge_metric_scores"


# -- the transcript -----------------------------------------------------------------------


def transcript_messages(case: Case, execution: Execution) -> list[Message]:
    """The conversation a judge reads: a multi-turn case's recorded transcript, or a one-shot
    case's input followed by what the agent said (its messages, else its output)."""
    if execution.conversation is not None:
        return list(execution.messages)
    produced = list(execution.messages)
    if produced and produced[0].role in ("user", "system", "developer"):
        return produced  # the agent reported the whole conversation
    history = _input_messages(case, execution)
    if produced:
        return [*history, *produced]
    if execution.output is None or execution.output == "":
        return history
    return [*history, Message(role="assistant", content=execution.output_text())]


def _input_messages(case: Case, execution: Execution) -> list[Message]:
    value = execution.input if execution.input not in ("", None) else case.input
    if isinstance(value, list):
        return list(value)
    if value in ("", None):
        return []
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        try:
            return [Message.model_validate(m) for m in value["messages"]]
        except ValueError:
            pass
    text = value if isinstance(value, str) else dump_json(value)
    return [Message(role="user", content=text)]


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_text(text: str) -> str:
    """Text that holds JSON, re-written compactly (``", "`` and ``": "``); other text as is."""
    try:
        return _compact(jsondata.loads(text))
    except ValueError:
        return text


def render_transcript(messages: list[Message]) -> str:
    """The transcript as the judge reads it, one turn per entry::

        Turn 0 [user]: Where is order A-17?
        Turn 1 [assistant]: (no text)
          tool_calls:
            call: lookup_order({"order_id": "A-17"})
        Turn 2 [tool → lookup_order]: {"status": "shipped"}
    """
    names = {call.id: call.function.name for m in messages for call in m.tool_calls or []
             if call.id}
    lines: list[str] = []
    for index, message in enumerate(messages):
        if message.role == "tool":
            name = names.get(message.tool_call_id or "", "unknown")
            body = message.text().strip()
            lines.append(f"Turn {index} [tool → {name}]: "
                         f"{_json_text(body) if body else '(empty)'}")
            continue
        lines.append(f"Turn {index} [{message.role}]: {message.text().strip() or '(no text)'}")
        if message.tool_calls:
            lines.append("  tool_calls:")
            lines.extend(f"    call: {call.function.name}({_json_text(call.function.arguments)})"
                         for call in message.tool_calls)
    return "\n".join(lines)


# -- the answer ---------------------------------------------------------------------------


class ScoredMetricAnswer(JudgeAnswer):
    """A scored metric's result: an integer 0-5."""

    score: WholeNumber = Field(ge=0, le=5)
    justification: str
    failure_code: str | None = Field(
        default=None, description="snake_case name of the problem when score <= 2, else null")
    turns: list[WholeNumber] = Field(
        default_factory=list, description="indices of the turns where the issue was seen")


class BinaryMetricAnswer(JudgeAnswer):
    """A binary metric's result: passed or not."""

    passed: bool
    justification: str
    failure_code: str | None = Field(
        default=None, description="snake_case name of the problem when it failed, else null")
    turns: list[WholeNumber] = Field(default_factory=list)


class OutcomeAnswer(JudgeAnswer):
    """One expected outcome's result, keyed by its number in the list."""

    index: int
    statement: str = ""
    passed: bool
    justification: str = ""


class _Verdict(JudgeAnswer):
    outcome_count: ClassVar[int] = 0
    metric_fields: ClassVar[tuple[tuple[str, str, bool], ...]] = ()
    """(field name, metric name, binary) for each metric, in selection order."""

    @model_validator(mode="after")
    def _one_result_per_outcome(self) -> _Verdict:
        results = getattr(self, "expected_outcomes", None)
        if results is None:
            return self
        indices = [r.index for r in results]
        repeated = sorted({i for i in indices if indices.count(i) > 1})
        if repeated:
            raise ValueError(f"expected_outcomes: outcome(s) {repeated} answered more than "
                             "once; give exactly one result per outcome")
        missing = [i for i in range(1, self.outcome_count + 1) if i not in indices]
        if missing:
            raise ValueError(f"expected_outcomes: outcome(s) {missing} not answered; give "
                             f"exactly one result for each of 1..{self.outcome_count}")
        return self

    def metric_answers(self) -> list[tuple[str, bool, Any]]:
        return [(metric, binary, getattr(self, name))
                for name, metric, binary in self.metric_fields]

    def outcome_answers(self) -> list[OutcomeAnswer]:
        results = getattr(self, "expected_outcomes", None) or []
        return sorted(results, key=lambda r: r.index)


@functools.lru_cache(maxsize=256)
def answer_model(metrics: tuple[tuple[str, bool], ...], outcomes: int) -> type[_Verdict]:
    """The answer schema for a selection of (metric, binary) and a number of outcomes: one
    required object per metric (keyed by its name) and, with outcomes, a list of exactly that
    many results whose ``index`` is one of 1..n."""
    fields: dict[str, Any] = {}
    described: list[tuple[str, str, bool]] = []
    for position, (metric, binary) in enumerate(metrics):
        name = f"metric_{position}"  # metric names may clash with pydantic's own attributes
        kind = BinaryMetricAnswer if binary else ScoredMetricAnswer
        fields[name] = (kind, Field(alias=metric))
        described.append((name, metric, binary))
    if outcomes:
        index_type: Any = cast(Any, Literal)[tuple(range(1, outcomes + 1))]
        outcome = create_model("ExpectedOutcomeResult", __base__=OutcomeAnswer,
                               index=(index_type, ...))
        fields["expected_outcomes"] = (list[outcome],  # type: ignore[valid-type]
                                       Field(min_length=outcomes, max_length=outcomes))
    model = cast(type[_Verdict], create_model(SCHEMA_NAME, __base__=_Verdict, **fields))
    model.outcome_count = outcomes
    model.metric_fields = tuple(described)
    return model


# -- the prompt ---------------------------------------------------------------------------

SYSTEM = """You are an expert evaluator of conversational AI agents. You read one conversation \
between a user and an agent and judge the agent on each metric below, one metric at a time.

Scoring rules:
- Score every metric on its own rubric; a weakness on one metric does not lower another.
- Cite in "turns" the indices of the turns (the N of "Turn N") where you saw what decided the \
score; give [] when no turn stands out.
- Be strict but fair. When the conversation holds no evidence for a metric, score it \
conservatively and say so in the justification.
- A scored metric gets an integer "score" from 0 to 5; a binary metric gets "passed": true or \
false.
- "failure_code" is a short snake_case name for the problem (such as wrong_tool or \
missing_confirmation) when a scored metric is 2 or lower or a binary metric failed; otherwise \
null.
- "justification" is one or two sentences.

Score levels: 0 critical_fail, 1 fail, 2 poor, 3 acceptable, 4 good, 5 excellent.

{data}

## Metrics

{metrics}"""

OUTCOMES_INSTRUCTION = """Check each expected outcome on its own against the conversation. \
Give "expected_outcomes" exactly one result per outcome, in order: {"index": <its number>, \
"statement": "<its text>", "passed": <true|false>, "justification": "<one sentence>"}. An \
outcome passes only when the conversation shows that it happened."""


def _metric_section(metric: WeightedMetric) -> str:
    d = metric.definition
    kind = "Binary (pass/fail)" if d.is_binary else "Scored (0-5 integer)"
    parts = [f"### {d.display_name} (`{d.name}`) — {kind}"]
    if d.description:
        parts.append(d.description)
    if d.rubric:
        parts.append(d.rubric)
    return "\n".join(parts)


@register
class ConnexityJudge(LLMEvaluator):
    """Scores a conversation on weighted 0-5 metrics and checks the case's expected outcomes
    in one judge call; the case passes on its outcomes, else on ``pass_threshold``."""

    type = "connexity_judge"
    response_name = SCHEMA_NAME
    strict_output = True  # Connexity's judge_metric_scores schema is strict
    custom_metrics: list[MetricDefinition] = Field(
        default_factory=list, description="metrics declared by the suite, selectable by name")
    metrics: list[MetricChoice] | None = Field(
        default=None, validate_default=True,
        description="[{metric, weight}] (or metric names); none: the 8 defaults")
    pass_threshold: float = Field(
        default=75.0, ge=0, le=100, allow_inf_nan=False,
        description="a case without expected outcomes passes at this overall score (0-100)")
    temperature: float = Field(default=0.2, ge=0, le=2)
    max_tokens: int | None = Field(default=4096, gt=0)

    @field_validator("metrics", mode="before")
    @classmethod
    def _names_as_choices(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"metric": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("metrics")
    @classmethod
    def _selectable(cls, value: list[MetricChoice] | None, info: Any) -> list[MetricChoice] | None:
        custom = info.data.get("custom_metrics")
        if custom is None and "custom_metrics" in info.data:
            return value
        problems = metric_problems(value, custom or [])
        if problems:  # each at the choice at fault, so a suite's check names every one
            raise ValidationError.from_exception_data("metrics", [
                InitErrorDetails(type=PydanticCustomError("metric_selection", problem),
                                 loc=() if index is None else (index,),
                                 input=value if index is None or value is None else value[index])
                for index, problem in problems])
        return value

    def selected(self) -> list[WeightedMetric]:
        """The metrics this judge scores, with their renormalised weights."""
        return select_metrics(self.metrics, self.custom_metrics)

    def prompts(self, case: Case, execution: Execution, ctx: EvalContext,
                transcript: list[Message]) -> tuple[str, str]:
        """The system and user prompts of the one call that judges this case."""
        selected = self.selected()
        system = SYSTEM.format(data=DATA_NOT_INSTRUCTIONS,
                               metrics="\n\n".join(_metric_section(m) for m in selected))
        outcomes = case.expected_outcomes
        agent = ctx.agent
        prompt = agent.system_prompt if agent and agent.system_prompt else next(
            (m.text() for m in transcript if m.role in ("system", "developer") and m.text()),
            None)
        tools = agent.tools if agent and agent.tools else None
        sections = [
            "## Expected Outcomes\n" + (delimit("expected_outcomes", "\n".join(
                f"{i}. {text}" for i, text in enumerate(outcomes, start=1)))
                if outcomes else "(none)"),
            "## Agent System Prompt\n" + (delimit("agent_system_prompt", prompt) if prompt
                                          else "(not captured for this run)"),
            "## Agent Tools\n" + (delimit("agent_tools", json.dumps(tools, ensure_ascii=False,
                                                                     indent=2))
                                  if tools else "(not captured)"),
        ]
        if case.evaluation_criteria_override:
            sections.append("## Test case-specific evaluation emphasis\n" + delimit(
                "evaluation_emphasis", case.evaluation_criteria_override))
        if outcomes:
            sections.append("## Expected Outcomes Evaluation\n" + OUTCOMES_INSTRUCTION)
        sections.append("## Transcript\n" + delimit("transcript", render_transcript(transcript)))
        sections.append("## Score These Metrics\n" + "\n".join(f"- {m.name}" for m in selected))
        return system, "\n\n".join(sections)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        transcript = transcript_messages(case, execution)
        if not transcript:
            return Score.failed(self.name, "empty_transcript",
                                "there is no conversation to judge: no input and no output")
        selected = self.selected()
        system, user = self.prompts(case, execution, ctx, transcript)
        schema = answer_model(tuple((m.name, m.definition.is_binary) for m in selected),
                              len(case.expected_outcomes))
        result = await self.ask(ctx, system, user, schema)  # kept: judge_request, judge_answer
        if result.value is None:
            return self.failed(result)
        verdict = self.judgement(case, selected, result.value, len(transcript))
        return verdict.model_copy(update={"usage": result.usage, "latency_ms": result.latency_ms,
                                          "judge_model": result.model})

    def judgement(self, case: Case, selected: list[WeightedMetric], answer: _Verdict,
                turns: int) -> Score:
        """The score from a validated answer: overall, the gate, and the full record."""
        weights = {m.name: m for m in selected}
        metric_scores: list[dict[str, Any]] = []
        parts: list[Score] = []
        misses: list[str] = []
        for metric, binary, given in answer.metric_answers():
            chosen = weights[metric]
            value = (5 if given.passed else 0) if binary else int(given.score)
            text = label(value, binary)
            entry = {"metric": metric, "display_name": chosen.definition.display_name,
                     "score": value, "label": text, "weight": chosen.weight,
                     "justification": given.justification, "is_binary": binary,
                     "tier": chosen.definition.tier, "failure_code": given.failure_code,
                     "turns": list(given.turns)}
            metric_scores.append(entry)
            parts.append(Score(
                name=metric, value=value / 5, raw=value,
                scale="pass/fail" if binary else "0-5", label=text,
                passed=bool(given.passed) if binary else None,
                rationale=given.justification,
                details={k: entry[k] for k in ("weight", "tier", "failure_code", "turns",
                                               "is_binary")}))
            if value <= 2:
                misses.append(f"{metric}: {value}/5 ({text})" + (
                    f" - {given.justification}" if given.justification else ""))
        overall = overall_score([(e["score"], e["weight"]) for e in metric_scores])
        outcomes: list[dict[str, Any]] | None = None
        hits: list[str] = []
        if case.expected_outcomes:
            outcomes = []
            for given_outcome in answer.outcome_answers():
                statement = case.expected_outcomes[given_outcome.index - 1]
                outcomes.append({"index": given_outcome.index, "statement": statement,
                                 "passed": given_outcome.passed,
                                 "justification": given_outcome.justification})
                (hits if given_outcome.passed else misses).append(
                    f"outcome {given_outcome.index}: {statement}")
        if outcomes:
            passed = all(o["passed"] for o in outcomes)
            gate = "expected_outcomes"
            failed = sum(1 for o in outcomes if not o["passed"])
            summary = (f"overall {overall:g}; {len(outcomes) - failed} of {len(outcomes)} "
                       f"expected outcomes passed")
        else:
            passed = overall >= self.pass_threshold
            gate = "score_fallback"
            summary = (f"overall {overall:g} {'>=' if passed else '<'} pass threshold "
                       f"{self.pass_threshold:g}")
        details = {"overall_score": overall, "passed": passed, "gate": gate,
                   "pass_threshold": self.pass_threshold, "metric_scores": metric_scores,
                   "expected_outcome_results": outcomes, "summary": summary,
                   "transcript_turns": turns}
        return Score(name=self.name, value=overall / 100, raw=overall, scale="0-100",
                     passed=passed, blocking=not passed, rationale=summary, hits=hits,
                     misses=misses, details=details, parts=parts)


def connexity_record(score: Score) -> dict[str, Any] | None:
    """The judge's verdict record in a score, or None for any other score."""
    details = score.details or {}
    return details if "overall_score" in details and "metric_scores" in details else None


__all__ = ["ConnexityJudge", "answer_model", "connexity_record", "render_transcript",
           "transcript_messages"]
