"""A suite: cases, the evaluators that judge them, and the target that runs them.

Every file format (EVAL.yaml, UiPath eval sets, JSONL, DataFrames) loads into this one shape,
so the runner knows nothing about formats. Per-case evaluators are ready-built instances: a
format that lets a case override criteria (UiPath's ``evaluationCriterias``) or weights builds
that case its own copies, and a case that skips an evaluator simply does not list it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.judges.base import Evaluator
from assay.model import Case


class SuiteCase(BaseModel):
    """A case with what is particular to it in this suite."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    case: Case
    evaluators: list[Evaluator] | None = Field(
        default=None, description="this case's evaluators; None means the suite's")
    target: str | None = Field(default=None, description="a target name overriding the suite's")


class Suite(BaseModel):
    """What ``assay run`` runs."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str
    description: str = ""
    source: Path | None = None
    target: str | None = None
    judge_target: str | None = None
    evaluators: list[Evaluator] = Field(default_factory=list)
    cases: list[SuiteCase] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    case_source: Callable[[], Iterable[SuiteCase]] | None = Field(
        default=None, exclude=True,
        description="for large datasets: re-reads the cases on each pass instead of `cases`")
    case_count: int | None = Field(default=None, description="the number of streamed cases")

    def evaluators_for(self, item: SuiteCase) -> list[Evaluator]:
        return item.evaluators if item.evaluators is not None else self.evaluators

    def iter_cases(self) -> Iterator[SuiteCase]:
        """Every case, streamed from the source when there is one: use this, not ``cases``."""
        if self.case_source is not None:
            yield from self.case_source()
        else:
            yield from self.cases

    def count(self) -> int:
        if self.case_source is not None and self.case_count is not None:
            return self.case_count
        if self.case_source is not None:
            return sum(1 for _ in self.iter_cases())
        return len(self.cases)

    def fingerprint(self) -> str:
        """A hash of everything that decides results, for run snapshots and resume checks."""
        digest = hashlib.sha256()
        for item in self.iter_cases():
            digest.update(item.case.model_dump_json().encode())
            for ev in self.evaluators_for(item):
                digest.update(type(ev).__name__.encode())
                digest.update(ev.model_dump_json().encode())
            digest.update((item.target or "").encode())
        digest.update((self.target or "").encode())
        return digest.hexdigest()
