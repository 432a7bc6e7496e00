"""Judges of a whole conversation: MLflow 3's session-level judges.

``conversation_completeness`` (did the assistant address every request the user made?),
``knowledge_retention`` (does each reply keep what the user said before? one question per
assistant reply, any "no" fails the conversation, the replies at fault named in
``details["blamed_turns"]``) and ``user_frustration`` (``none``, ``resolved`` or
``unresolved``) read the conversation a case holds: a conversation assay played (a simulated
or scripted user against the agent), or a row whose messages are the whole exchange. MLflow
gathers a session from traces that share ``mlflow.trace.session``; in assay a conversation is
one case, so its judgements are that case's scores.

The prompts are assay's own; their questions follow MLflow's open prompts (Apache-2.0).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

from assay.judges.agent import prompts
from assay.judges.agent.builtin import AgentJudge
from assay.judges.agent.inputs import conversation, missing
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.templates import delimit
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.score import Score, ScoreError
from assay.types.usage import Usage

FRUSTRATION_VALUES: dict[str, float] = {"none": 1.0, "resolved": 0.5, "unresolved": 0.0}
"""user_frustration's labels on assay's 0-1 scale: no frustration is best, frustration that
was resolved half, frustration left unresolved the worst (and the only one that fails)."""


class FrustrationAnswer(JudgeAnswer):
    """user_frustration's answer: reasoning first, then one of three labels."""

    rationale: str
    result: Literal["none", "resolved", "unresolved"]


def transcript(messages: list[dict[str, Any]]) -> str:
    """A conversation as numbered lines (``[1] user: ...``), tool calls shown by name."""
    lines = []
    for number, message in enumerate(messages, 1):
        content = message.get("content")
        text = content if isinstance(content, str) else \
            "" if content is None else dump_json(content)
        calls = [c.get("function", {}).get("name") for c in message.get("tool_calls") or []
                 if isinstance(c, dict)]
        if calls and not text.strip():
            text = f"[calls {', '.join(str(c) for c in calls)}]"
        lines.append(f"[{number}] {message.get('role', '?')}: {text}")
    return "\n".join(lines)


class SessionJudge(AgentJudge):
    """Base of the conversation judges: the case's whole conversation is the input."""

    ASSESSMENT: ClassVar[str] = "SESSION"
    NEEDS: ClassVar[tuple[str, ...]] = ()

    def exchange(self, case: Case, execution: Execution) -> list[dict[str, Any]] | None:
        """The conversation to judge; None when the case has no assistant reply to judge."""
        found = conversation(case, execution)
        if not any(m.get("role") == "assistant" for m in found):
            return None
        return found

    def not_applicable(self) -> Score:
        return Score.not_applicable(self.name, missing(["conversation"], self.name) +
                                    " (no assistant reply)")


@register
class ConversationCompleteness(SessionJudge):
    """Did the assistant address every request the user made by the end of the conversation?"""

    type = "conversation_completeness"
    MLFLOW_NAME = "conversation_completeness"

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        found = self.exchange(case, execution)
        if found is None:
            return self.not_applicable()
        user = prompts.CONVERSATION_COMPLETENESS.format(
            conversation=delimit("conversation", transcript(found)))
        return await self.ask_yes_no(ctx, user)


@register
class KnowledgeRetention(SessionJudge):
    """Does every assistant reply keep what the user said in earlier turns? One question per
    reply (the conversation up to it), the conversation failing when any reply does not."""

    type = "knowledge_retention"
    MLFLOW_NAME = "knowledge_retention"

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        found = self.exchange(case, execution)
        if found is None:
            return self.not_applicable()
        replies = [i for i, m in enumerate(found) if m.get("role") == "assistant" and
                   isinstance(m.get("content"), str) and m["content"].strip()]
        if not replies:
            return self.not_applicable()
        turns = await asyncio.gather(*(self._turn(found[:end + 1], ctx) for end in replies))
        return self._overall(list(turns), replies, len(found) - len(execution.messages)
                             if execution.messages else None)

    async def _turn(self, upto: list[dict[str, Any]], ctx: EvalContext) -> Score:
        user = prompts.KNOWLEDGE_RETENTION.format(
            conversation=delimit("conversation", transcript(upto)))
        return await self.ask_yes_no(ctx, user)

    def _overall(self, turns: list[Score], replies: list[int], offset: int | None) -> Score:
        """One verdict over every reply's: an error when a reply could not be judged, else
        no when any reply said no (worst case, as MLflow aggregates), the replies at fault
        as ``blamed_turns`` (indices of the execution's messages)."""
        usage = Usage()
        for turn in turns:
            usage = usage + turn.usage
        lines = [f"[{index + 1}] assistant: {turn.label or 'error'}: "
                 f"{turn.rationale or (turn.error.message if turn.error else '')}"
                 for index, turn in zip(replies, turns, strict=True)]
        details: dict[str, Any] = {"turns": [
            {"message": index, "rating": turn.label, "rationale": turn.rationale,
             "error": None if turn.error is None else turn.error.code}
            for index, turn in zip(replies, turns, strict=True)]}
        errors = [t for t in turns if t.error is not None]
        if errors:
            first = errors[0].error
            assert first is not None
            return Score(name=self.name, error=ScoreError(
                code=first.code, message=f"{len(errors)} of {len(turns)} reply(ies) could "
                f"not be judged; first: {first.message}"), usage=usage, details=details)
        failed = [index for index, turn in zip(replies, turns, strict=True)
                  if turn.label == "no"]
        if offset is not None and offset >= 0:
            details["blamed_turns"] = [index - offset for index in failed]
        word = "no" if failed else "yes"
        return Score(name=self.name, value=0.0 if failed else 1.0, raw=word, label=word,
                     scale="yes/no", passed=not failed, rationale="\n".join(lines),
                     usage=usage, judge_model=turns[-1].judge_model, details=details)


@register
class UserFrustration(SessionJudge):
    """Was the user frustrated, and did it end resolved? ``none``, ``resolved``,
    ``unresolved``; only ``unresolved`` fails."""

    type = "user_frustration"
    MLFLOW_NAME = "user_frustration"
    ASSESSMENT: ClassVar[str] = "METRIC"

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        found = self.exchange(case, execution)
        if found is None:
            return self.not_applicable()
        user = prompts.USER_FRUSTRATION.format(
            conversation=delimit("conversation", transcript(found)))
        result = await self.ask(ctx, prompts.SESSION_SYSTEM, user, FrustrationAnswer)
        if result.value is None:
            return self.failed(result)
        label = result.value.result
        return Score(name=self.name, value=FRUSTRATION_VALUES[label], raw=label, label=label,
                     scale="label", passed=label != "unresolved",
                     rationale=result.value.rationale, usage=result.usage,
                     latency_ms=result.latency_ms, judge_model=result.model)


SESSION_JUDGES = ("conversation_completeness", "knowledge_retention", "user_frustration")

__all__ = ["SESSION_JUDGES", "ConversationCompleteness", "KnowledgeRetention",
           "UserFrustration", "transcript"]
