"""UiPath-style trajectory judges: how well did the run match the expected agent behaviour?

``llm_judge_trajectory`` and ``llm_judge_trajectory_simulation`` ask a judge model for a 0-100
score, kept as ``raw``; the value is ``raw / 100`` rounded to two places, as UiPath reports it
(``raw`` keeps the exact answer). Prompts use UiPath's placeholders:

``{{UserOrSyntheticInput}}``
    what the agent was given (the execution's input, else the case's), as JSON
``{{ExpectedAgentBehavior}}``
    the ``expected_agent_behavior`` field (``expectedAgentBehavior`` in UiPath files), else
    the case's ``expected_outcomes``, one per line
``{{AgentRunHistory}}``
    every tool call (name, arguments, output) followed by the final output
``{{SimulationInstructions}}``
    the ``simulation_instructions`` field, else ``case.metadata["simulation_instructions"]``

Any other ``{{variable}}`` is rejected when the judge is built. A custom prompt that lacks
``{{AgentRunHistory}}`` or ``{{ExpectedAgentBehavior}}`` gets it appended, as UiPath does.

Two deliberate differences from UiPath. The run history includes the agent's final output:
UiPath renders only tool spans, so a judge cannot tell whether the agent finally said the right
thing. And simulation instructions reach the prompt: UiPath's runtime builds the execution
without them, so its simulation judge always sees an empty section.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, Field, field_validator

from assay.errors import EvaluationError
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.prompt_check import check_prompt
from assay.judges.llm.semantic_similarity import with_placeholders
from assay.judges.llm.templates import as_text, delimit, render
from assay.judges.registry import register
from assay.traces.tools import tool_calls
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

VARIABLES = ("UserOrSyntheticInput", "ExpectedAgentBehavior", "AgentRunHistory",
             "SimulationInstructions")

TRAJECTORY_PROMPT = """Judge how well the agent performed, on a scale from 0 to 100. Consider \
whether the tools it called, their order and arguments, and its final output match the expected \
behaviour. Give a brief, clear justification for your score.
----
AgentInput:
{{UserOrSyntheticInput}}
----
ExpectedAgentBehavior:
{{ExpectedAgentBehavior}}
----
AgentRunHistory:
{{AgentRunHistory}}"""

SIMULATION_PROMPT = TRAJECTORY_PROMPT + """
----
SimulationInstructions:
{{SimulationInstructions}}"""

_RESPONSE = """Respond with a JSON object with two fields: "justification", one or two \
sentences on where the run met or missed the expected behaviour, then "score", a number from \
0 to 100."""

TRAJECTORY_SYSTEM = """You are an expert evaluator of AI agents. You judge an agent's behaviour \
from its execution trajectory: you are given the agent's input, a description of the behaviour \
expected of it, and the history of its run (the tools it called, with their arguments and \
outputs, then its final output). Score from 0 to 100: 0 means the agent did not meet the \
expectation at all, 100 means it fully met it. {data}

""" + _RESPONSE

SIMULATION_SYSTEM = """You are an expert evaluator of AI agents. You judge an agent that ran \
inside a simulation: a simulation engine produced the tool responses by following the \
simulation instructions, and the agent did not know they were simulated. Judge the agent on \
what it did with the responses it received (which tools it called, with which arguments, and \
what it finally answered) against the behaviour expected of it, not on how realistic the \
simulated responses were. Score from 0 to 100: 0 means the agent did not meet the expectation \
at all, 100 means it fully met it. {data}

""" + _RESPONSE


class TrajectoryVerdict(JudgeAnswer):
    """Reasoning first, then the score, so the model thinks before it commits."""

    justification: str
    score: float = Field(ge=0.0, le=100.0)


def run_history(execution: Execution) -> str:
    """The run as plain text: numbered tool calls, then any agent error, then the output.

    Tool calls come from :func:`assay.traces.tools.tool_calls`: trace spans with ``tool.name`` (not
    ``tool.synthesized``), else the OpenAI-format tool calls of the messages, never both.
    """
    parts = []
    for number, call in enumerate(tool_calls(execution), start=1):
        output = "(no output recorded)" if call.output is None else call.output
        parts.append(f"Tool call {number}: {call.name}\n"
                     f"Arguments: {as_text(call.args)}\nOutput: {output}")
    if not parts:
        parts.append("No tool calls.")
    if execution.error:
        parts.append(f"Agent error: {execution.error}")
    final = "(none)" if execution.output is None else execution.output_text()
    parts.append(f"Final output:\n{final}")
    return "\n\n".join(parts)


@register
class LLMJudgeTrajectory(LLMEvaluator):
    """0-100 judgement of the run (tool calls and final output) against expected behaviour."""

    type = "llm_judge_trajectory"
    response_name = "evaluation_response"
    tool_name = "submit_evaluation"
    system: ClassVar[str] = TRAJECTORY_SYSTEM
    prompt: str = TRAJECTORY_PROMPT
    expected_agent_behavior: str | None = Field(
        default=None,
        validation_alias=AliasChoices("expected_agent_behavior", "expectedAgentBehavior"))
    simulation_instructions: str | None = Field(
        default=None,
        validation_alias=AliasChoices("simulation_instructions", "simulationInstructions"))

    @field_validator("prompt")
    @classmethod
    def _placeholders(cls, prompt: str) -> str:
        check_prompt(prompt, VARIABLES, f"{cls.type} prompt")
        return with_placeholders(prompt, actual="AgentRunHistory",
                                 expected="ExpectedAgentBehavior")

    def expected_behavior(self, case: Case) -> str:
        """The field, else the case's expected outcomes; raise when there is neither."""
        behavior = self.expected_agent_behavior or ""
        if not behavior.strip():
            behavior = "\n".join(case.expected_outcomes)
        if not behavior.strip():
            raise EvaluationError(
                "missing_expected_agent_behavior",
                f"{self.name}: case {case.id!r} has no expected agent behaviour; set "
                "'expected_agent_behavior' on the evaluator or give the case expected_outcomes")
        return behavior

    def instructions(self, case: Case) -> str:
        """The field, else ``case.metadata["simulation_instructions"]``, else empty."""
        if self.simulation_instructions:
            return self.simulation_instructions
        return as_text(case.metadata.get("simulation_instructions"))

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        agent_input = execution.input if execution.input not in ("", None, []) else case.input
        user = render(self.prompt, {
            "UserOrSyntheticInput": delimit("agent_input", agent_input),
            "ExpectedAgentBehavior": delimit("expected_agent_behavior",
                                             self.expected_behavior(case)),
            "AgentRunHistory": delimit("agent_run_history", run_history(execution)),
            "SimulationInstructions": delimit("simulation_instructions", self.instructions(case)),
        })
        result = await self.ask(ctx, self.system.format(data=DATA_NOT_INSTRUCTIONS), user,
                                TrajectoryVerdict)
        if result.value is None:
            return self.failed(result)
        return self.on_100_point_scale(result, result.value.score, result.value.justification)


@register
class LLMJudgeTrajectorySimulation(LLMJudgeTrajectory):
    """The trajectory judge for runs whose tool responses were simulated."""

    type = "llm_judge_trajectory_simulation"
    system: ClassVar[str] = SIMULATION_SYSTEM
    prompt: str = SIMULATION_PROMPT
