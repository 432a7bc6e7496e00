"""A jury: one judge sampled several times, or several judges, combined into one less noisy
score whose spread is reported as its uncertainty.

A single judgement is one draw from a noisy instrument: the same judge on the same answer can
say pass today and fail tomorrow, and judges of different models disagree. ``jury`` asks each
member ``samples`` times (independent draws through the engine's ``sample`` number, each
called and cached on its own; give members a temperature above 0, or the draws of a
deterministic model agree by construction) and combines the votes:

``majority`` (default)
    the verdict most votes give. For judges that pick between two answers (``pairwise``)
    the most frequent label, a tie when two labels are equally frequent. For scores, the case
    passes when more votes pass than fail; the value is the mean of the votes on the winning
    side, and an even split does not pass (a gate must not pass on a split jury).
``mean``, ``median``
    of the votes' values; the verdict is the jury's own threshold.

``details["spread"]`` holds the standard deviation, minimum and maximum of the votes'
values and the share of votes that agree with the combined verdict; ``details
["uncertainty"]`` is the standard deviation. ``confirm_on_fail`` asks the first member once
and convenes the rest only when that verdict does not pass: the cost of a jury is paid only
where a failing verdict is at stake. A member that errors is left out of the vote (named in
``details["errored"]``); when every vote errored the jury's score is an error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections import Counter
from typing import Any, Literal

from pydantic import Field, field_serializer, field_validator

from assay.judges.base import EvalContext, Evaluator
from assay.judges.registry import build, register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score
from assay.types.usage import Usage

LABEL_VALUES = {"1": 1.0, "2": 0.0, "tie": 0.5}
MAX_SAMPLES = 100


@register
class Jury(Evaluator):
    """Several judges, or several draws of one, combined by majority, mean or median."""

    type = "jury"
    judges: list[Any] = Field(description="the members: evaluator configs or instances")
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES,
                         description="independent draws of each member")
    combine: Literal["majority", "mean", "median"] = "majority"
    confirm_on_fail: bool = Field(
        default=False, description="ask the first member once; convene the whole jury only "
        "when that verdict does not pass")

    @field_validator("judges")
    @classmethod
    def _build_members(cls, members: list[Any]) -> list[Evaluator]:
        if not members:
            raise ValueError("a jury needs at least one judge")
        built: list[Evaluator] = []
        for i, member in enumerate(members):
            if isinstance(member, Evaluator):
                built.append(member)
            elif isinstance(member, dict):
                built.append(build(member, where=f"jury judges[{i}]"))
            else:
                raise ValueError(f"judges[{i}] must be an evaluator config (a mapping)")
        names = [m.name for m in built]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError("judge names must be unique within a jury; give each of these "
                             f"a 'name': {', '.join(duplicates)}")
        return built

    @field_serializer("judges")
    def _dump_members(self, members: list[Evaluator]) -> list[dict[str, Any]]:
        return [{"type": m.type, **m.model_dump(mode="json")} for m in members]

    @property
    def members(self) -> list[Evaluator]:
        return list(self.judges)

    def models(self) -> list[str | None]:
        seen: dict[str | None, None] = {}
        for member in self.members:
            for model in member.models():
                seen.setdefault(model, None)
        return list(seen)

    def calibration_scale(self) -> dict[str, Any]:
        """Pairwise when every member picks between two answers (a split jury is a tie, so
        ties are possible); the members' scale when they all rate on the same one; else
        scores."""
        scales = [getattr(m, "calibration_scale", lambda: {"kind": "score"})()
                  for m in self.members]
        if all(s.get("kind") == "pairwise" for s in scales):
            return {"kind": "pairwise", "ties": True}
        if all(s.get("kind") == "ordinal" for s in scales) and \
                len({tuple(s["scale"]) for s in scales}) == 1:
            return dict(scales[0])
        return {"kind": "score"}

    def _draws(self) -> list[tuple[Evaluator, int]]:
        return [(m, i) for m in self.members for i in range(self.samples)]

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        draws = self._draws()

        async def ask(member: Evaluator, draw: int) -> Score:
            # Draw i of repeat r is sample r * samples + i: draws of a repeat never meet
            # draws of another, and the first draw of the first repeat is the plain judge's.
            sample = dataclasses.replace(ctx, sample=ctx.sample * self.samples + draw)
            return await member.evaluate(case, execution, sample)

        if self.confirm_on_fail and len(draws) > 1:
            first = await ask(*draws[0])
            if first.value is not None and self._vote_passes(draws[0][0], first):
                return self._combined([(draws[0], first)], confirmed=False)
            rest = await asyncio.gather(*(ask(m, i) for m, i in draws[1:]))
            return self._combined([(draws[0], first), *zip(draws[1:], rest, strict=True)],
                                  confirmed=True)
        scores = await asyncio.gather(*(ask(m, i) for m, i in draws))
        return self._combined(list(zip(draws, scores, strict=True)))

    def _vote_passes(self, member: Evaluator, score: Score) -> bool:
        if score.label in LABEL_VALUES and self.calibration_scale()["kind"] == "pairwise":
            return score.value is not None and self.verdict(score.value)
        if score.passed is not None:
            return score.passed
        return score.value is not None and member.verdict(score.value)

    def _combined(self, votes: list[tuple[tuple[Evaluator, int], Score]],
                  confirmed: bool | None = None) -> Score:
        usage = Usage()
        for _, s in votes:
            usage = usage + s.usage
        listed = [{"judge": member.name, "draw": draw,
                   **({"value": s.value, "raw": s.raw, "label": s.label, "passed": s.passed}
                      if s.value is not None else
                      {"error": s.error.code if s.error else None, "skipped": s.skipped})}
                  for (member, draw), s in votes]
        errored = [f"{member.name}#{draw}" for (member, draw), s in votes if s.value is None]
        details: dict[str, Any] = {"combine": self.combine, "votes": listed,
                                   "errored": errored}
        if confirmed is not None:
            details["confirmed"] = confirmed
        valued = [(member, s) for (member, _), s in votes if s.value is not None]
        if not valued:
            skipped = [s.skipped for _, s in votes if s.skipped]
            if skipped and len(skipped) == len(votes):
                return Score.not_applicable(self.name, skipped[0] or "no judge applied",
                                            usage=usage, details=details)
            return Score.failed(self.name, "all_votes_failed",
                                f"every vote of the jury errored ({', '.join(errored)})",
                                usage=usage, details=details)
        values = [float(s.value) for _, s in valued if s.value is not None]
        pairwise = self.calibration_scale()["kind"] == "pairwise" and all(
            s.label in LABEL_VALUES for _, s in valued)
        label: str | None = None
        raw: Any
        if pairwise:
            label, value = self._label_vote([str(s.label) for _, s in valued], values)
            passed = self.verdict(value)
            raw = label
            agreeing = sum(1 for _, s in valued if s.label == label)
        elif self.combine == "majority":
            verdicts = [self._vote_passes(m, s) for m, s in valued]
            ayes = sum(verdicts)
            passed = ayes > len(verdicts) - ayes
            side = [v for v, ok in zip(values, verdicts, strict=True) if ok == passed]
            value = sum(side) / len(side)
            details["split"] = ayes * 2 == len(verdicts)
            raw = value
            agreeing = sum(1 for ok in verdicts if ok == passed)
        else:
            value = statistics.fmean(values) if self.combine == "mean" \
                else statistics.median(values)
            passed = self.verdict(value)
            raws = [s.raw for _, s in valued]
            numeric = all(isinstance(r, int | float) and not isinstance(r, bool)
                          for r in raws)
            raw = (statistics.fmean(raws) if self.combine == "mean"
                   else statistics.median(raws)) if numeric else value
            agreeing = sum(1 for m, s in valued if self._vote_passes(m, s) == passed)
        stdev = statistics.pstdev(values) if len(values) > 1 else 0.0
        details["spread"] = {"stdev": stdev, "min": min(values), "max": max(values),
                             "agreement": agreeing / len(valued), "votes": len(valued)}
        details["uncertainty"] = stdev
        scales = {s.scale for _, s in valued}
        return Score(name=self.name, value=min(1.0, max(0.0, value)), raw=raw,
                     scale=scales.pop() if len(scales) == 1 else "0-1", label=label,
                     passed=passed, details=details, usage=usage,
                     rationale=f"{self.combine} of {len(valued)} vote(s); "
                     f"{agreeing} agree with the verdict")

    def _label_vote(self, labels: list[str], values: list[float]) -> tuple[str, float]:
        if self.combine == "majority":
            counts = Counter(labels).most_common()
            top = counts[0][1]
            winners = [lab for lab, n in counts if n == top]
            label = winners[0] if len(winners) == 1 else "tie"
            return label, LABEL_VALUES[label]
        value = statistics.fmean(values) if self.combine == "mean" \
            else statistics.median(values)
        label = "1" if value > 0.5 else "2" if value < 0.5 else "tie"
        return label, value
