"""Multi-turn cases: an agent talks with a simulated or scripted user until something stops it.

A case with a :class:`~assay.types.case.ConversationSpec` is run as a conversation. The user side
is either scripted (``first_message`` then ``scripted_messages``, in order) or simulated by a
judge-engine model playing the case's persona, background and goal (its expected outcomes).
The agent side is any target, one turn at a time (:meth:`Target.run_turn`: the conversation
so far in, the turn's assistant and tool messages out). The loop::

    [agent greeting, when first_turn is agent]      counts as agent round 1
    repeat:
        the user's message (the script's next, or the simulated user's)
            -> stop: script_exhausted, user_ended, simulator_error
        the time check                               -> stop: timeout
        the agent's turn                             -> stop: agent_error
        a terminating tool called in that turn       -> stop: terminating_tool
        with stop_on_goal, the goal check says yes   -> stop: goal_achieved
        max_turns agent rounds reached               -> stop: max_turns

Every turn of the transcript carries its ``timestamp`` (UTC, ISO 8601, when it was added), and
the last message of a turn the agent or the simulated user produced its ``latency_ms`` and
``token_count`` (the tokens its call reported, when it reported any), as Connexity's
transcript records them; none of these is sent to the agent.

So the agent always answers the last scripted message, and a simulated user that never
stops is bounded by ``max_turns`` (10 by default; at most :data:`~assay._util.limits.MAX_TURNS`,
which also bounds a suite that sets none) and the case's timeout (at most a day): validation
refuses a limit that is not finite or not in range, so no conversation runs without end. Why a conversation
stopped is recorded in ``Execution.conversation.stop_reason``, never as a turn of the
transcript: a judge reads only what was said. An agent that fails, or a simulated user that
cannot answer, makes the case's execution an error (it is not judged); a timeout does not (the
conversation so far is judged).

The time limit (``timeout_per_test_case_ms``) is the whole conversation's: an agent turn still
running when it comes is stopped there, not let finish, so a case never runs past its limit
and a hung agent never holds it (Connexity cuts an HTTP agent's turn the same way, by giving
its request the time left, while its hosted agent's turn runs on). The stopped turn's answer
is not in the transcript; ``conversation.cut_turn`` says which round it was, and
``conversation.detail`` says so in words.

The simulated user sees the conversation with the roles flipped (its own messages as the
assistant's, the agent's as the user's; a tool-call-only agent turn as "[Assistant requested
tool calls]"; system and tool messages left out), keeps its first message when the agent
spoke second, and may end the conversation with :data:`STOP_SIGNAL`. Its requests carry a
seed and go through the engine's response cache, so a baseline and a candidate that answer
alike meet the same user; each repeat of a case is its own draw.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from assay._util.limits import MAX_TURNS
from assay.errors import ConfigError
from assay.llm.engine import JudgeEngine
from assay.llm.types import ChatRequest, ProviderError
from assay.targets.base import RecordedOutput, Target, current_sample
from assay.types import numbers
from assay.types.case import Case, ConversationSettings, ConversationSpec
from assay.types.execution import ConversationInfo, Execution, TokenUsage
from assay.types.messages import Message
from assay.types.usage import Usage

STOP_SIGNAL = "[END_CONVERSATION]"
"""What the simulated user answers to end the conversation."""
TOOL_CALLS_ONLY = "[Assistant requested tool calls]"
"""How an agent turn with tool calls and no text reads to the simulated user."""
OPENING = ("(The conversation has not started yet. Write your opening message to the "
           "assistant.)")

Clock = Callable[[], float]
"""Seconds on a monotonic clock (``time.monotonic``; tests inject their own)."""


# -- the simulated user's view -----------------------------------------------------------


def simulator_messages(system: str, transcript: list[Message]) -> list[dict[str, Any]]:
    """The request messages of the simulated user: its instructions, then the conversation
    with the roles flipped. The first flipped message is kept even though it is the
    simulator's own (role assistant): dropping it would make the user start over."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in transcript:
        if message.role == "user":
            messages.append({"role": "assistant", "content": message.text()})
        elif message.role == "assistant":
            text = message.text()
            if text.strip():
                messages.append({"role": "user", "content": text})
            elif message.tool_calls:
                messages.append({"role": "user", "content": TOOL_CALLS_ONLY})
    if len(messages) == 1:
        messages.append({"role": "user", "content": OPENING})
    return messages


def simulator_prompt(case: Case, spec: ConversationSpec, stop_signal: bool,
                     goal_led: bool = False) -> str:
    """The simulated user's instructions: who it is, what it knows and what it wants, how it
    must behave (the case's simulation guidelines), and with ``goal_led`` (a conversation
    that stops when its goal is achieved, MLflow's ConversationSimulator) that it approaches
    the goal a step at a time rather than stating it."""
    persona = spec.persona.strip() if spec.persona and spec.persona.strip() else \
        "(no persona specified)"
    background = json.dumps(spec.user_context, indent=2, ensure_ascii=False) \
        if spec.user_context else "(none)"
    goals = "\n".join(f"- {o}" for o in case.expected_outcomes) or \
        "(no stated goal: behave as a typical user of this assistant would)"
    ending = (f"- When your goal is met, or the conversation has clearly come to an end, "
              f"reply with exactly {STOP_SIGNAL} and nothing else."
              if stop_signal else
              "- You may close the conversation politely when your goal is met.")
    return f"""You are playing the USER in a conversation with an AI assistant, to test the \
assistant. Stay in character for the whole conversation.

PERSONA CONTEXT
{persona}

BACKGROUND CONTEXT (only you know this; share it when it becomes relevant)
{background}

YOUR GOAL / SUCCESS CRITERIA
{goals}

RULES
- Stay in character as the user; never act as the assistant and never say that you are \
simulating.
- Write only your next message: one or two sentences, plain text, no emojis, no "User:" \
prefix.
- Reveal details gradually, as a real user would: when asked, or when they become relevant.
- Be a little imperfect, like a real person: you may be vague, hesitate or correct yourself.
- The roles are reversed in this conversation: the assistant's messages reach you as the \
user's, and yours are shown as the assistant's.
{ending}{_led(goal_led)}{_guidelines(spec.simulation_guidelines)}"""


def _led(goal_led: bool) -> str:
    if not goal_led:
        return ""
    return ("\n- Never state or summarise your whole goal: open with a concrete first step "
            "toward it, and pursue its parts one at a time, as a real user would. Never "
            "answer it yourself or act as the expert.")


def _guidelines(guidelines: list[str]) -> str:
    if not guidelines:
        return ""
    listed = "\n".join(f"- {g}" for g in guidelines)
    return ("\n\nSIMULATION GUIDELINES (requirements on how you, the user, behave; they "
            f"come before the rules above)\n{listed}")


# -- the user side -----------------------------------------------------------------------


@dataclass
class UserReply:
    """The user's next message, or why there is none."""

    text: str | None = None
    stop: str | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_ms: float | None = None


class ScriptedUser:
    """Replays the script's messages in order; then stops (``script_exhausted``)."""

    def __init__(self, messages: list[str]) -> None:
        self._next: Iterator[str] = iter(messages)

    async def reply(self, transcript: list[Message], timeout_s: float) -> UserReply:
        text = next(self._next, None)
        return UserReply(stop="script_exhausted") if text is None else UserReply(text=text)


class SimulatedUser:
    """A judge-engine model playing the user (see :func:`simulator_prompt`)."""

    def __init__(self, engine: JudgeEngine, model: str | None, case: Case,
                 spec: ConversationSpec, settings: ConversationSettings) -> None:
        self.engine = engine
        self.model = model
        self.settings = settings.simulator
        self.system = simulator_prompt(case, spec, self.settings.stop_signal,
                                       goal_led=self.settings.stop_on_goal)

    def request(self, transcript: list[Message]) -> ChatRequest:
        request: ChatRequest = {"model": self.engine.spec(self.model).model,
                                "messages": simulator_messages(self.system, transcript),
                                "temperature": self.settings.temperature}
        if self.settings.seed is not None:
            request["seed"] = self.settings.seed
        return request

    async def reply(self, transcript: list[Message], timeout_s: float) -> UserReply:
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(
                self.engine.chat(self.request(transcript), self.model, sample=current_sample()),
                max(timeout_s, 0.001))
        except TimeoutError:
            return UserReply(stop="timeout")
        except ProviderError as exc:
            return UserReply(error=f"the simulated user failed: {exc}")
        stats = result.stats
        usage = Usage(cached_calls=1, cost=0.0) if stats.cached else Usage(
            calls=1, retries=max(0, stats.attempts - 1), prompt_tokens=stats.prompt_tokens,
            completion_tokens=stats.completion_tokens, cost=stats.cost)
        text = result.text().strip()
        if self.settings.stop_signal and STOP_SIGNAL in text:
            return UserReply(stop="user_ended", usage=usage)
        if not text:
            return UserReply(error="the simulated user answered with no text", usage=usage)
        took = (time.perf_counter() - started) * 1000
        return UserReply(text=text, usage=usage, latency_ms=took)


class GoalCheck:
    """After each agent turn, whether the simulated user's goal (the case's expected outcomes)
    is fully achieved: one yes/no question to the simulator's model. A check that cannot be
    answered leaves the goal unchecked and the conversation goes on (the turn's answer is
    recorded as the error)."""

    def __init__(self, engine: JudgeEngine, model: str | None, case: Case) -> None:
        self.engine = engine
        self.model = model
        self.goal = "\n".join(f"- {o}" for o in case.expected_outcomes)

    async def achieved(self, transcript: list[Message]) -> tuple[bool, str, Usage]:
        """(achieved, what the check answered, what it cost)."""
        from assay.judges.agent.builtin import YesNoAnswer
        from assay.judges.agent.prompts import GOAL_ACHIEVED, SESSION_SYSTEM
        from assay.judges.agent.session import transcript as lines
        from assay.judges.llm.templates import delimit
        from assay.llm.structured import ask_structured

        said = [m.model_dump(mode="json", exclude_none=True) for m in transcript]
        user = GOAL_ACHIEVED.format(goal=delimit("goal", self.goal),
                                    conversation=delimit("conversation", lines(said)))
        result = await ask_structured(
            self.engine, [{"role": "system", "content": SESSION_SYSTEM},
                          {"role": "user", "content": user}], YesNoAnswer, model=self.model,
            name="goal_check", sample=current_sample())
        if result.value is None:
            assert result.error is not None
            return False, f"{result.error.code}: {result.error.message}", result.usage
        return result.value.result == "yes", result.value.result, result.usage


# -- the agent side ----------------------------------------------------------------------


def turn_messages(execution: Execution, history: list[Message]) -> list[Message]:
    """The assistant and tool messages an agent's turn produced.

    An agent may answer with the turn's messages, with the whole conversation (the history
    it was given is then dropped), with a message dict or list of them as its output, or with
    plain output (one assistant message).
    """
    produced = list(execution.messages)
    if produced and len(produced) >= len(history) and all(
            _same(a, b) for a, b in zip(produced, history, strict=False)):
        produced = produced[len(history):]
    produced = [m for m in produced if m.role in ("assistant", "tool")]
    if produced:
        return produced
    output = execution.output
    if isinstance(output, dict) and output.get("role") == "assistant":
        return [Message.model_validate(output)]
    if isinstance(output, list) and output and all(
            isinstance(m, dict) and m.get("role") in ("assistant", "tool") for m in output):
        return [Message.model_validate(m) for m in output]
    if output is None:
        return []
    return [Message(role="assistant", content=execution.output_text())]


def _same(a: Message, b: Message) -> bool:
    return a.role == b.role and a.text() == b.text() and a.tool_call_id == b.tool_call_id


TURN_FIELDS = ("latency_ms", "token_count", "timestamp")
"""What the transcript records of a turn besides what was said (never sent to the agent)."""


def _now() -> str:
    """The wall-clock time a turn is added, in UTC (ISO 8601)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _turn(message: Message, latency_ms: float | None = None,
          token_count: int | None = None) -> Message:
    """``message`` with the transcript's record of its turn: when it was added, and (on a
    turn's last message) how long the turn took and the tokens it reported."""
    data = message.model_dump(mode="json", exclude_none=True)
    data["timestamp"] = _now()
    if latency_ms is not None:
        data["latency_ms"] = latency_ms
    if token_count is not None:
        data["token_count"] = token_count
    return Message.model_validate(data)


def _plain(message: Message) -> Message:
    """A transcript message as an agent is sent it: chat fields only, no assay bookkeeping."""
    extra = message.model_extra or {}
    if not any(k in extra for k in TURN_FIELDS):
        return message
    data = message.model_dump(mode="json", exclude_none=True)
    for key in TURN_FIELDS:
        data.pop(key, None)
    return Message.model_validate(data)


def _tokens(usage: TokenUsage | Usage | None) -> int | None:
    """The tokens a call reported (prompt and completion), None when it reported none."""
    if usage is None or not (usage.prompt_tokens or usage.completion_tokens):
        return None
    return usage.prompt_tokens + usage.completion_tokens


def _called(messages: list[Message], tools: set[str]) -> bool:
    return any(call.function.name in tools for m in messages for call in m.tool_calls or [])


# -- the loop ----------------------------------------------------------------------------


@dataclass
class _State:
    transcript: list[Message] = field(default_factory=list)
    plain: list[Message] = field(default_factory=list)
    """The transcript as the agent is sent it, one message per transcript message: each is
    made plain once, when it is added, so a long conversation's rounds do not each redo
    every earlier one."""
    latencies: list[float] = field(default_factory=list)
    rounds: int = 0
    user_turns: int = 0
    simulator: Usage = field(default_factory=Usage)
    agent: TokenUsage | None = None
    goal_checks: list[str] = field(default_factory=list)
    stop: str | None = None
    error: str | None = None
    error_code: str | None = None
    cut: int | None = None
    """The agent round stopped by the time limit while it ran."""

    def add(self, *messages: Message) -> None:
        """Add ``messages`` to the transcript (and their plain form to what the agent sees)."""
        self.transcript.extend(messages)
        self.plain.extend(_plain(m) for m in messages)


async def converse(agent: Target, case: Case, settings: ConversationSettings | None = None,
                   *, engine: JudgeEngine | None = None, simulator_model: str | None = None,
                   clock: Clock = time.monotonic) -> Execution:
    """Run ``case`` as a conversation with ``agent``; the execution holds the transcript."""
    spec = case.conversation or ConversationSpec()
    settings = settings or ConversationSettings()
    script = spec.scripted_messages if spec.scripted_messages is not None \
        else settings.scripted_messages
    if script is None and engine is None:
        raise ConfigError("a simulated user needs a judge engine", code="invalid_config")
    user: ScriptedUser | SimulatedUser = ScriptedUser(script) if script is not None else \
        SimulatedUser(engine, simulator_model, case, spec, settings)  # type: ignore[arg-type]
    max_turns = spec.max_turns if spec.max_turns is not None else settings.max_turns
    if max_turns is None:  # no cap of the suite's own: the hard one still holds
        max_turns = MAX_TURNS
    limit = settings.timeout_per_test_case_ms / 1000
    tools = set(settings.terminating_tools)
    goal = GoalCheck(engine, simulator_model, case) if script is None and engine is not None \
        and settings.simulator.stop_on_goal and case.expected_outcomes else None
    started, wall = clock(), time.perf_counter()
    state = _State()

    def remaining() -> float:
        return limit - (clock() - started)

    async def agent_turn() -> bool:
        """The agent's turn; False when the conversation must stop."""
        if remaining() <= 0:
            state.stop = "timeout"
            return False
        history = list(state.plain)
        deadline = asyncio.timeout(remaining())  # in this task: the agent's own
        try:  # TimeoutError is its error, not the conversation's deadline
            async with deadline:
                execution = await agent.run_turn(case, history, state.rounds)
        except TimeoutError:
            if not deadline.expired():
                raise
            state.stop, state.cut = "timeout", state.rounds + 1
            return False
        state.rounds += 1
        if execution.error is not None:
            state.stop, state.error_code = "agent_error", execution.error_code or \
                "target_failed"
            state.error = f"agent turn {state.rounds}: {execution.error}"
            return False
        try:
            produced = turn_messages(execution, state.transcript)
        except ValueError as exc:
            state.stop, state.error_code = "agent_error", "invalid_output"
            state.error = f"agent turn {state.rounds}: the answer is not a chat message: {exc}"
            return False
        if not produced:
            state.stop, state.error_code = "agent_error", "target_failed"
            state.error = f"agent turn {state.rounds}: the agent answered nothing"
            return False
        state.add(*(_turn(m, *((execution.latency_ms, _tokens(execution.usage))
                               if i == len(produced) - 1 else ()))
                    for i, m in enumerate(produced)))
        if execution.latency_ms is not None:
            state.latencies.append(execution.latency_ms)
        if execution.usage is not None:
            state.agent = _add(state.agent, execution.usage)
        if tools and _called(produced, tools):
            state.stop = "terminating_tool"
            return False
        if goal is not None:
            achieved, answer, spent = await goal.achieved(state.transcript)
            state.goal_checks.append(answer)
            state.simulator = state.simulator + spent
            if achieved:
                state.stop = "goal_achieved"
                return False
        if max_turns is not None and state.rounds >= max_turns:
            state.stop = "max_turns"
            return False
        return True

    going = True
    if spec.first_turn == "agent":
        if spec.first_message is not None:
            state.add(_turn(Message(role="assistant", content=spec.first_message)))
            state.rounds = 1
            if max_turns is not None and state.rounds >= max_turns:
                state.stop, going = "max_turns", False
        else:
            going = await agent_turn()
    opening = spec.first_message if spec.first_turn == "user" else None
    while going:
        if opening is not None:
            reply, opening = UserReply(text=opening), None
        else:
            reply = await user.reply(state.transcript, remaining())
        state.simulator = state.simulator + reply.usage
        if reply.error is not None:
            state.stop, state.error, state.error_code = "simulator_error", reply.error, \
                "simulator_failed"
            break
        if reply.stop is not None or reply.text is None:
            state.stop = reply.stop or "user_ended"
            break
        state.add(_turn(Message(role="user", content=reply.text), reply.latency_ms,
                        _tokens(reply.usage)))
        state.user_turns += 1
        going = await agent_turn()
    return _execution(case, state, (time.perf_counter() - wall) * 1000,
                      settings.timeout_per_test_case_ms)


def _add(total: TokenUsage | None, more: TokenUsage) -> TokenUsage:
    if total is None:
        return more.model_copy()
    cost = None if total.cost is None or more.cost is None else total.cost + more.cost
    return TokenUsage(prompt_tokens=total.prompt_tokens + more.prompt_tokens,
                      completion_tokens=total.completion_tokens + more.completion_tokens,
                      cost=cost)


def _execution(case: Case, state: _State, wall_ms: float, limit_ms: float) -> Execution:
    said = [m for m in state.transcript if m.role == "assistant" and m.text().strip()]
    detail = state.error if state.cut is None else (
        f"the agent's turn {state.cut} was still running at the conversation's time limit "
        f"({numbers.milliseconds(limit_ms)}) and was stopped; its answer is not in the "
        "transcript")
    info = ConversationInfo(stop_reason=state.stop or "user_ended", agent_turns=state.rounds,
                            user_turns=state.user_turns, turn_latencies_ms=state.latencies,
                            simulator_usage=state.simulator, detail=detail,
                            cut_turn=state.cut, goal_checks=state.goal_checks)
    return Execution(input=case.input, output=said[-1].text() if said else None,
                     messages=state.transcript, latency_ms=wall_ms, usage=state.agent,
                     error=state.error, error_code=state.error_code, conversation=info)


# -- targets that converse -----------------------------------------------------------------


class ConversationTarget(Target):
    """A target that plays conversation cases turn by turn and runs the others as usual."""

    def __init__(self, agent: Target, engine: JudgeEngine | None,
                 settings: ConversationSettings | None = None,
                 simulator_model: str | None = None, clock: Clock = time.monotonic) -> None:
        self.agent = agent
        self.engine = engine
        self.settings = settings
        self.simulator_model = simulator_model
        self.clock = clock
        self.name = agent.name
        self.workers = agent.workers
        self.judge_target = agent.judge_target
        # A whole conversation runs under the run's agent timeout: its own limit counts.
        limits = [agent.timeout_s, settings.timeout_per_test_case_ms / 1000 if settings
                  else None]
        self.timeout_s = max((t for t in limits if t is not None), default=None)

    async def run(self, case: Case) -> Execution:
        if case.conversation is None:
            return await self.agent.run(case)
        if isinstance(self.agent, RecordedOutput):
            return Execution(input=case.input, error="a conversation case needs an agent to "
                             "talk to: give the suite (or the case) a target, or --target")
        return await converse(self.agent, case, self.settings, engine=self.engine,
                              simulator_model=self.simulator_model, clock=self.clock)

    async def run_turn(self, case: Case, messages: list[Message], turn: int) -> Execution:
        return await self.agent.run_turn(case, messages, turn)

    async def preflight(self) -> None:
        await self.agent.preflight()

    async def aclose(self) -> None:
        await self.agent.aclose()


class ConversationResolver:
    """Wraps a run's target resolver so that every target it gives can converse."""

    def __init__(self, resolve: Callable[[str | None], Target], engine: JudgeEngine,
                 settings: ConversationSettings | None, simulator_model: str | None) -> None:
        self.resolve = resolve
        self.engine = engine
        self.settings = settings
        self.simulator_model = simulator_model
        self._made: dict[int, Target] = {}

    def __call__(self, name: str | None) -> Target:
        inner = self.resolve(name)
        if isinstance(inner, ConversationTarget) or isinstance(
                getattr(inner, "inner", None), ConversationTarget):  # given already conversing
            return inner
        made = self._made.get(id(inner))
        if made is None:
            made = self._made[id(inner)] = ConversationTarget(
                inner, self.engine, self.settings, self.simulator_model)
        return made


__all__ = ["STOP_SIGNAL", "ConversationResolver", "ConversationTarget", "ScriptedUser",
           "SimulatedUser", "converse", "simulator_messages", "simulator_prompt",
           "turn_messages"]
