"""Composite: several evaluators judged as one (AgentV's ``composite``).

A composite is how a suite says "this answer is good when these checks together say so". Its
members are ordinary evaluator configs, built with the registry (so composites nest) and run
concurrently; each keeps its own prompt, rubric and model. Aggregators:

``weighted_average`` (default)
    sum(score x w) / sum(w), ``w`` from ``aggregator.weights[member]``, else the member's own
    ``weight``.
``all_pass``
    1.0 when every member passed, else 0.0.
``min``
    the lowest member score.
``code`` (AgentV's ``code_judge``)
    a command that reads ``{"results": {member: {score, verdict, passed, hits, misses,
    reasoning}}}`` on stdin and prints ``{score, hits, misses, reasoning}``.
``llm_judge``
    a judge model reads the members' results (``{{EVALUATOR_RESULTS_JSON}}`` in ``prompt``, or
    a default prompt) and decides the score, with hits, misses and reasoning.

Weights, where assay deliberately differs from AgentV: inside a composite AgentV ignores a
member's own ``weight`` (a member without an entry in ``aggregator.weights`` counts 1.0),
silently. assay uses the member's ``weight`` when ``aggregator.weights`` does not name it, so
a weight written in the file is never ignored; ``aggregator.weights`` still wins. Each member
keeps its own prompt and rubric (AgentV v2.5 runs ``llm_judge`` members with the default
template).

A member that errored is reported in ``details["errored"]`` and left out of the average and
the minimum, never counted as 0; when every member errored the composite is an error too. A
member whose score is ``blocking`` (a required check that did not pass) makes the composite's
score blocking too, named in ``details["blocking"]``, so it still fails the case. For
``all_pass`` an errored member makes the result unknown (an error) unless another member
failed outright, because a gate must not pass on a check that did not run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from assay._util.limits import TimeoutS
from assay.errors import EvaluationError
from assay.judges.base import EvalContext, Evaluator, script_files
from assay.judges.code.script import argv_of, parse_script_output, run_json_command
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS
from assay.judges.llm.llm_judge import SYSTEM as JUDGE_SYSTEM
from assay.judges.llm.llm_judge import JudgeVerdict
from assay.judges.llm.prompt_check import check_prompt
from assay.judges.llm.templates import delimit, render, variables
from assay.judges.registry import build, register
from assay.llm.structured import ask_structured
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score, verdict_band
from assay.types.usage import Usage

AGGREGATOR_PROMPT = """Review the results of the evaluators below, which each judged the same \
answer, and decide the final score from 0.0 to 1.0 and the final verdict. Weigh what the \
evaluators found; an evaluator that errored has no score.

[[ ## evaluator_results ## ]]
{{EVALUATOR_RESULTS_JSON}}"""


class Aggregator(BaseModel):
    """How member scores become one. ``script`` (alias ``path``) is for ``code`` only."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: Literal["weighted_average", "all_pass", "min", "code", "llm_judge"] = \
        "weighted_average"
    weights: dict[str, float] = Field(default_factory=dict)
    script: str | list[str] | None = Field(default=None, alias="path")
    cwd: str | None = None
    timeout_s: TimeoutS = 60.0
    prompt: str | None = Field(default=None, description="llm_judge: the prompt, with "
                               "{{EVALUATOR_RESULTS_JSON}} where the members' results go")
    model: str | None = Field(default=None, description="llm_judge: the judge model (the "
                              "run's judge when unset)")

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> Any:
        # A bare name is shorthand ("aggregator: min"); AgentV calls the code one code_judge.
        if isinstance(value, str):
            value = {"type": value}
        if isinstance(value, dict) and value.get("type") == "code_judge":
            value = {**value, "type": "code"}
        return value

    @model_validator(mode="after")
    def _complete(self) -> Aggregator:
        if self.type == "code" and not self.script:
            raise ValueError("aggregator type 'code' needs 'script' (the command to run)")
        if self.type != "code" and self.script is not None:
            raise ValueError(f"aggregator type {self.type!r} takes no 'script'")
        if self.type != "llm_judge" and (self.prompt is not None or self.model is not None):
            raise ValueError(f"aggregator type {self.type!r} takes no 'prompt' or 'model'")
        if self.prompt is not None:
            check_prompt(self.prompt, ("EVALUATOR_RESULTS_JSON",), "aggregator prompt")
            if "EVALUATOR_RESULTS_JSON" not in variables(self.prompt):
                self.prompt += "\n\n[[ ## evaluator_results ## ]]\n{{EVALUATOR_RESULTS_JSON}}"
        if self.weights and self.type != "weighted_average":
            raise ValueError(f"aggregator 'weights' only apply to weighted_average, "
                             f"not {self.type!r}")
        bad = [k for k, w in self.weights.items() if not w >= 0]
        if bad:
            raise ValueError(f"aggregator weights must be >= 0 ({', '.join(bad)})")
        return self


MAX_NESTING = 16
"""How deep composites may nest: members are built, run and reported recursively."""


def nesting(members: list[Any]) -> int:
    """How many levels of composites ``members`` hold (built, or configs not yet built).

    Iterative, so a config nested far too deep is measured before anything recurses into it.
    """
    deepest = 0
    stack = [(member, 1) for member in members]
    while stack and deepest <= MAX_NESTING:
        member, depth = stack.pop()
        if isinstance(member, Composite):
            children: Any = member.evaluators
        elif isinstance(member, dict) and member.get("type") == "composite":
            children = member.get("evaluators")
        else:
            continue
        deepest = max(deepest, depth)
        if isinstance(children, list):
            stack.extend((child, depth + 1) for child in children)
    return deepest


@register
class Composite(Evaluator):
    """Runs member evaluators concurrently and aggregates their scores into one."""

    type = "composite"
    evaluators: list[Any]
    aggregator: Aggregator = Field(default_factory=Aggregator)

    @field_validator("evaluators")
    @classmethod
    def _build_members(cls, members: list[Any]) -> list[Evaluator]:
        if not members:
            raise ValueError("a composite needs at least one member evaluator")
        if 1 + nesting(members) > MAX_NESTING:
            raise ValueError(f"composites nest more than {MAX_NESTING} deep; at most "
                             f"{MAX_NESTING} may sit inside one another")
        built: list[Evaluator] = []
        for i, member in enumerate(members):
            if isinstance(member, Evaluator):
                built.append(member)
            elif isinstance(member, dict):
                built.append(build(member, where=f"composite evaluators[{i}]"))
            else:
                raise ValueError(f"evaluators[{i}] must be an evaluator config (a mapping)")
        names = [m.name for m in built]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"member names must be unique; give each of these a 'name': "
                             f"{', '.join(duplicates)}")
        return built

    @field_serializer("evaluators")
    def _dump_members(self, members: list[Evaluator]) -> list[dict[str, Any]]:
        # With the type, so a dumped composite builds again (and fingerprints see the kind).
        return [{"type": m.type, **m.model_dump(mode="json")} for m in members]

    @model_validator(mode="after")
    def _weights_name_members(self) -> Composite:
        names = {m.name for m in self.members}
        unknown = sorted(set(self.aggregator.weights) - names)
        if unknown:
            raise ValueError(f"aggregator.weights name unknown member(s) {', '.join(unknown)}; "
                             f"members: {', '.join(sorted(names))}")
        if self.aggregator.type == "weighted_average" and not any(
                self._weight(m) > 0 for m in self.members):
            raise ValueError("every member has weight 0; weighted_average needs one above 0")
        return self

    @property
    def members(self) -> list[Evaluator]:
        return list(self.evaluators)

    def input_files(self) -> dict[Path, str]:
        return {**script_files(self.aggregator.script, self.aggregator.cwd,
                               f"the aggregator script of evaluator {self.name!r}"),
                **super().input_files()}

    def models(self) -> list[str | None]:
        seen: dict[str | None, None] = {}
        for member in self.members:
            for model in member.models():
                seen.setdefault(model, None)
        if self.aggregator.type == "llm_judge":
            seen.setdefault(self.aggregator.model, None)
        return list(seen)

    def _weight(self, member: Evaluator) -> float:
        return self.aggregator.weights.get(member.name, member.weight)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        members = self.members
        scores: list[Score] = list(await asyncio.gather(
            *(m.evaluate(case, execution, ctx) for m in members)))
        usage = Usage()
        for s in scores:
            usage = usage + s.usage
        results = dict(zip((m.name for m in members), scores, strict=True))
        errored = [name for name, s in results.items() if not s.ok]
        details: dict[str, Any] = {
            "aggregator": self.aggregator.type,
            "members": {m.name: {"type": m.type, "weight": self._weight(m),
                                 **s.model_dump(mode="json", exclude_none=True)}
                        for m, s in zip(members, scores, strict=True)},
            "errored": errored,
        }
        hits = [f"[{name}] {h}" for name, s in results.items() for h in s.hits]
        misses = [f"[{name}] {m}" for name, s in results.items() for m in s.misses]
        misses += [f"[{name}] error {s.error.code}: {s.error.message}"
                   for name, s in results.items() if s.error is not None]
        reasoning = "; ".join(f"{name}: {s.rationale}" for name, s in results.items()
                              if s.rationale)
        # A member that blocks its case blocks it from inside the composite too.
        blocking = [name for name, s in results.items() if s.blocking]
        if blocking:
            details["blocking"] = blocking
        if len(errored) == len(members):
            codes = ", ".join(f"{n}: {s.error.code}" for n, s in results.items()
                              if s.error is not None)
            return Score.failed(self.name, "all_members_failed",
                                f"every member of the composite errored ({codes})",
                                usage=usage, details=details, misses=misses,
                                blocking=bool(blocking))
        try:
            result = await self._aggregate(members, scores, usage, details, hits, misses,
                                           reasoning, ctx)
        except EvaluationError as exc:
            # Keep what the members cost and said even when aggregation itself fails.
            return Score.failed(self.name, exc.code, exc.message, usage=usage,
                                details=details, misses=misses, blocking=bool(blocking))
        if blocking:
            result = result.model_copy(update={
                "blocking": True, "passed": None if result.value is None else False})
        return result

    async def _aggregate(self, members: list[Evaluator], scores: list[Score], usage: Usage,
                         details: dict[str, Any], hits: list[str], misses: list[str],
                         reasoning: str, ctx: EvalContext) -> Score:
        errored = details["errored"]
        kind = self.aggregator.type
        if kind == "code":
            return await self._by_code(dict(zip((m.name for m in members), scores,
                                                strict=True)), usage, details)
        if kind == "llm_judge":
            return await self._by_judge(dict(zip((m.name for m in members), scores,
                                                 strict=True)), usage, details, ctx)
        passed: bool | None = None
        if kind == "weighted_average":
            value = self._weighted(members, scores)
        elif kind == "min":
            value = min(s.value for s in scores if s.value is not None)
        else:
            verdicts = [self._passed(m, s) for m, s in zip(members, scores, strict=True)]
            if any(v is False for v in verdicts):
                value, passed = 0.0, False
            elif errored:
                return Score.failed(self.name, "member_errors",
                                    f"all_pass cannot decide: member(s) {', '.join(errored)} "
                                    "errored and none failed", usage=usage, details=details,
                                    hits=hits, misses=misses)
            else:
                value, passed = 1.0, True
        return Score(name=self.name, value=value, raw=value, scale="0-1",
                     passed=self.verdict(value) if passed is None else passed,
                     rationale=reasoning or None, hits=hits, misses=misses,
                     details=details, usage=usage)

    def _weighted(self, members: list[Evaluator], scores: list[Score]) -> float:
        total = weighted = 0.0
        for member, s in zip(members, scores, strict=True):
            if s.value is None:
                continue
            w = self._weight(member)
            total += w
            weighted += w * s.value
        if total <= 0:
            raise EvaluationError("no_weighted_members",
                                  "every member that produced a score has weight 0")
        return min(1.0, max(0.0, weighted / total))

    @staticmethod
    def _passed(member: Evaluator, s: Score) -> bool | None:
        if s.value is None:
            return None
        return s.passed if s.passed is not None else member.verdict(s.value)

    def _results(self, results: dict[str, Score]) -> dict[str, Any]:
        """What an aggregator reads of each member (AgentV's fields, ``verdict`` included)."""
        members = {m.name: m for m in self.members}
        return {name: {"score": s.value, "verdict": verdict_band(s),
                       "passed": self._passed(members[name], s), "hits": s.hits,
                       "misses": s.misses, "reasoning": s.rationale or "",
                       **({"error": s.error.model_dump()} if s.error else {})}
                for name, s in results.items()}

    async def _by_judge(self, results: dict[str, Score], usage: Usage,
                        details: dict[str, Any], ctx: EvalContext) -> Score:
        user = render(self.aggregator.prompt or AGGREGATOR_PROMPT, {
            "EVALUATOR_RESULTS_JSON": delimit("evaluator_results", self._results(results))})
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": JUDGE_SYSTEM.format(data=DATA_NOT_INSTRUCTIONS)},
            {"role": "user", "content": user}]
        result = await ask_structured(ctx.engine, messages, JudgeVerdict,
                                      model=ctx.model(self.aggregator.model),
                                      name="composite_aggregator", sample=ctx.sample)
        usage = usage + result.usage
        if result.value is None:
            assert result.error is not None
            raise EvaluationError(result.error.code,
                                  f"composite {self.name!r} llm_judge aggregator: "
                                  f"{result.error.message}")
        verdict = result.value
        return Score(name=self.name, value=verdict.score, raw=verdict.score, scale="0-1",
                     passed=self.verdict(verdict.score), rationale=verdict.reasoning or None,
                     hits=[h for h in verdict.hits if h.strip()][:4],
                     misses=[m for m in verdict.misses if m.strip()][:4],
                     details=details, usage=usage, judge_model=result.model)

    async def _by_code(self, results: dict[str, Score], usage: Usage,
                       details: dict[str, Any]) -> Score:
        assert self.aggregator.script is not None
        payload = {"results": self._results(results)}
        what = f"composite {self.name!r} aggregator"
        printed, stderr = await run_json_command(
            argv_of(self.aggregator.script), payload, cwd=self.aggregator.cwd,
            timeout_s=self.aggregator.timeout_s, what=what)
        out = parse_script_output(printed, stderr, what)
        return Score(name=self.name, value=out.score, raw=printed.get("score"), scale="0-1",
                     passed=out.passed if out.passed is not None else self.verdict(out.score),
                     rationale=out.reasoning or None,
                     hits=[h for h in out.hits if h.strip()],
                     misses=[m for m in out.misses if m.strip()],
                     details={**details, **({"script": out.details} if out.details else {})},
                     usage=usage)
