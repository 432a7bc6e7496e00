"""The metrics of the multi-metric judge: definitions, rubrics, weights and their selection.

Eight scored metrics (0-5) are the default set, in four tiers, with the weights of the
Connexity platform's default (execution 0.15 each, knowledge 0.125 each, process and delivery
0.10 each); ``task_completion`` is an opt-in binary metric (pass/fail, scored 5 or 0) whose
default weight is 0, so it must be given a weight when selected. A suite may declare metrics
of its own (:class:`MetricDefinition`) and select any of them with a weight.

Selection is checked when the judge is built, so a suite with an unknown metric or an
impossible weight never starts (the messages are the platform's own, so users of both
recognise them). Weights are renormalised over the selected metrics to sum to 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Tier = Literal["execution", "knowledge", "process", "delivery"]
ScoreType = Literal["scored", "binary"]

LABELS: dict[int, str] = {0: "critical_fail", 1: "fail", 2: "poor", 3: "acceptable",
                          4: "good", 5: "excellent"}
"""Descriptive labels of a 0-5 score. No metric gates a case: a 0 is reported, not fatal."""

RESERVED_NAMES = ("expected_outcomes", "summary")
"""Keys of the judge's answer that a metric may not be named."""

TASK_COMPLETION = "task_completion"


class MetricDefinition(BaseModel):
    """A metric the judge can score: predefined, or declared by a suite."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$",
                      description="snake_case, used as the metric's key in answers and reports")
    display_name: str = ""
    description: str = ""
    tier: Tier = "execution"
    default_weight: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    score_type: ScoreType = "scored"
    rubric: str = Field(default="", description="what each score level means")
    include_in_defaults: bool = Field(
        default=False, description="scored when the judge selects no metrics")
    is_draft: bool = Field(default=False, description="a draft is never used")

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in RESERVED_NAMES:
            raise ValueError(f"{name!r} is reserved; choose another metric name")
        return name

    def model_post_init(self, context: Any) -> None:
        if not self.display_name:
            self.display_name = self.name.replace("_", " ").title()

    @property
    def is_binary(self) -> bool:
        return self.score_type == "binary"


class MetricChoice(BaseModel):
    """A metric selected for a judge; ``weight`` None means the metric's default weight."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    weight: float | None = Field(default=None, allow_inf_nan=False)


@dataclass(frozen=True)
class WeightedMetric:
    """A selected metric with its weight renormalised over the selection."""

    definition: MetricDefinition
    weight: float

    @property
    def name(self) -> str:
        return self.definition.name


def _rubric(*levels: str) -> str:
    return "\n".join(f"{5 - i}: {text}" for i, text in enumerate(levels))


PREDEFINED: dict[str, MetricDefinition] = {m.name: m for m in (
    MetricDefinition(
        name="tool_routing", display_name="Tool Routing", tier="execution",
        default_weight=0.15, include_in_defaults=True,
        description="Did the agent call the right tools at the right moments, and avoid "
        "calls it did not need?",
        rubric=_rubric(
            "Every needed tool was called at the right point; no wrong or needless call.",
            "The right tools, with one minor lapse in timing or one redundant call.",
            "Mostly right, but a needed call came late or an unneeded one was made.",
            "Several routing mistakes; the task still moved forward in part.",
            "Mostly wrong or missing tool calls; the task could not progress as it should.",
            "No needed tool was called, or the calls made worked against the user.")),
    MetricDefinition(
        name="parameter_extraction", display_name="Parameter Extraction", tier="execution",
        default_weight=0.15, include_in_defaults=True,
        description="Were the arguments of each tool call taken correctly from what the "
        "user said and from earlier results?",
        rubric=_rubric(
            "Every argument is correct and complete, taken from the conversation.",
            "Correct arguments with one small, harmless imprecision.",
            "One argument wrong or missing, noticed or harmless in the end.",
            "Several arguments wrong, guessed or missing.",
            "Most arguments wrong or invented.",
            "Arguments unrelated to the request, or made up entirely.")),
    MetricDefinition(
        name="result_interpretation", display_name="Result Interpretation",
        tier="execution", default_weight=0.15, include_in_defaults=True,
        description="Did the agent read tool results correctly and act on them?",
        rubric=_rubric(
            "Every result was read correctly and used well in what followed.",
            "Results read correctly, one detail used imperfectly.",
            "One result partly misread, without serious harm.",
            "A result misread in a way that misled the user or the next step.",
            "Results mostly ignored or misread.",
            "Results contradicted or invented.")),
    MetricDefinition(
        name="grounding_fidelity", display_name="Grounding Fidelity", tier="knowledge",
        default_weight=0.125, include_in_defaults=True,
        description="Is everything the agent stated supported by its instructions, tool "
        "results or the user, with nothing invented?",
        rubric=_rubric(
            "Every claim is supported; nothing invented.",
            "Supported throughout, with one loosely worded but harmless claim.",
            "One unsupported claim of little consequence.",
            "Unsupported claims that could mislead the user.",
            "Many claims invented or contradicting the sources.",
            "The answer rests on invented facts.")),
    MetricDefinition(
        name="instruction_compliance", display_name="Instruction Compliance",
        tier="knowledge", default_weight=0.125, include_in_defaults=True,
        description="Did the agent follow its system prompt and business rules?",
        rubric=_rubric(
            "Every instruction and rule followed.",
            "Followed, with one minor deviation of style or order.",
            "One rule bent without serious consequence.",
            "A rule broken in a way that matters to the user or the business.",
            "Several rules broken.",
            "The instructions were ignored or contradicted.")),
    MetricDefinition(
        name="information_gathering", display_name="Information Gathering",
        tier="process", default_weight=0.10, include_in_defaults=True,
        description="Did the agent ask for what it needed, once, at the right time, "
        "without asking for what it already had?",
        rubric=_rubric(
            "Asked for exactly what was needed, clearly and at the right time.",
            "Gathered what was needed with one unnecessary or clumsy question.",
            "Missed or repeated one question, recovering later.",
            "Several needed details not asked for, or asked repeatedly.",
            "Acted without the information it needed.",
            "Made no attempt to gather needed information.")),
    MetricDefinition(
        name="conversation_management", display_name="Conversation Management",
        tier="process", default_weight=0.10, include_in_defaults=True,
        description="Did the agent keep the conversation on track: context kept, turns "
        "coherent, interruptions and changes of topic handled?",
        rubric=_rubric(
            "Coherent throughout; context kept; every turn moves the conversation on.",
            "Coherent with one small lapse of flow.",
            "One loss of context or detour that the agent recovered from.",
            "Repeated losses of context or confusing turns.",
            "The conversation went in circles or off track.",
            "No coherent conversation.")),
    MetricDefinition(
        name="response_delivery", display_name="Response Delivery", tier="delivery",
        default_weight=0.10, include_in_defaults=True,
        description="Are the agent's replies clear, concise, well-toned and suited to the "
        "channel?",
        rubric=_rubric(
            "Clear, concise, well-toned replies that suit the channel.",
            "Good replies with one small lapse of length or tone.",
            "Understandable but wordy, terse or awkward in places.",
            "Often unclear, too long or poorly toned.",
            "Hard to follow or inappropriate in tone.",
            "Unusable replies.")),
    MetricDefinition(
        name=TASK_COMPLETION, display_name="Task Completion", tier="execution",
        default_weight=0.0, score_type="binary", include_in_defaults=False,
        description="Did the agent accomplish what the user came for?",
        rubric="pass: the user's goal was fully accomplished in the conversation.\n"
               "fail: it was not, or only in part."),
)}
"""The predefined metrics, by name."""


class MetricSelectionError(ValueError):
    """A metric selection that cannot be scored; the message says which metric and why."""


def available(custom: list[MetricDefinition] | None = None) -> dict[str, MetricDefinition]:
    """Every metric a judge may select: the predefined ones and the suite's, drafts left out."""
    found = dict(PREDEFINED)
    for metric in custom or []:
        if metric.name in PREDEFINED:
            raise MetricSelectionError(f"custom metric {metric.name!r} has the name of a "
                                       "predefined metric; choose another name")
        if not metric.is_draft:
            found[metric.name] = metric
    return found


def select_metrics(choices: list[MetricChoice] | list[dict[str, Any]] | None,
                   custom: list[MetricDefinition] | None = None) -> list[WeightedMetric]:
    """The metrics to score with renormalised weights, or MetricSelectionError (the first
    of :func:`metric_problems`).

    No selection (None or empty) means the default set: the predefined scored metrics that
    are in the defaults, and any suite metric marked ``include_in_defaults``.
    """
    picked, problems = _pick(choices, custom)
    if problems:
        raise MetricSelectionError(problems[0][1])
    total = math.fsum(weight for _, weight in picked)
    return [WeightedMetric(metric, weight / total) for metric, weight in picked]


def metric_problems(choices: list[MetricChoice] | list[dict[str, Any]] | None,
                    custom: list[MetricDefinition] | None = None) -> list[tuple[int | None, str]]:
    """Every reason the selection cannot be scored, each with the index of the choice at
    fault (None: the selection as a whole), so a suite's check names each at its line."""
    return _pick(choices, custom)[1]


def _pick(choices: list[MetricChoice] | list[dict[str, Any]] | None,
          custom: list[MetricDefinition] | None
          ) -> tuple[list[tuple[MetricDefinition, float]], list[tuple[int | None, str]]]:
    """The chosen metrics with their weights as given, and what is wrong with the choice."""
    try:
        known = available(custom)
    except MetricSelectionError as exc:
        return [], [(None, str(exc))]
    drafts = {m.name for m in custom or [] if m.is_draft}
    picked: list[tuple[MetricDefinition, float]] = []
    problems: list[tuple[int | None, str]] = []
    if not choices:
        picked = [(m, m.default_weight) for m in known.values()
                  if m.include_in_defaults and (m.name not in PREDEFINED or not m.is_binary)]
    seen: set[str] = set()
    for index, given in enumerate(choices or []):
        choice = given if isinstance(given, MetricChoice) else MetricChoice.model_validate(given)
        problem = _choice_problem(choice, known.get(choice.metric), drafts, seen)
        if problem is not None:
            problems.append((index, problem))
            continue
        metric = known[choice.metric]
        seen.add(metric.name)
        picked.append((metric, metric.default_weight if choice.weight is None
                       else choice.weight))
    if not problems and (not picked or math.fsum(w for _, w in picked) <= 0):
        problems.append((None, "Metric weights must sum to a positive value"))
    return picked, problems


def _choice_problem(choice: MetricChoice, metric: MetricDefinition | None, drafts: set[str],
                    seen: set[str]) -> str | None:
    """What is wrong with one choice of the selection, or None."""
    if metric is None:
        why = " (it is a draft)" if choice.metric in drafts else ""
        return f"Unknown metric: {choice.metric}{why}"
    if metric.name in seen:
        return f"Metric {metric.name} is selected more than once"
    if choice.weight is None and metric.default_weight <= 0:
        return f"{metric.name} requires an explicit weight when selected"
    if choice.weight is not None and choice.weight < 0:
        return f"Negative weight for metric {metric.name}"
    return None


def overall_score(scores: list[tuple[int, float]]) -> float:
    """``round(Σ score/5 x weight x 100, 2)`` over (0-5 score, renormalised weight) pairs:
    every metric at 5 gives exactly 100.0, every metric at 3 gives 60.0."""
    return round(math.fsum(score / 5 * weight for score, weight in scores) * 100, 2)


def label(score: int, binary: bool = False) -> str:
    """The descriptive label of a score (``pass``/``fail`` for a binary metric)."""
    if binary:
        return "pass" if score >= 5 else "fail"
    return LABELS[max(0, min(5, score))]


__all__ = ["LABELS", "PREDEFINED", "MetricChoice", "MetricDefinition", "MetricSelectionError",
           "WeightedMetric", "available", "label", "metric_problems", "overall_score",
           "select_metrics"]
