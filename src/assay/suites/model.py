"""A suite: cases, the evaluators that judge them, and the target that runs them.

Every file format (EVAL.yaml, UiPath eval sets, JSONL, DataFrames) loads into this one shape,
so the runner knows nothing about formats. Per-case evaluators are ready-built instances: a
format that lets a case override criteria (UiPath's ``evaluationCriterias``) or weights builds
that case its own copies, and a case that skips an evaluator simply does not list it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from assay._util.limits import OptionalTimeoutS
from assay.judges.base import Evaluator
from assay.types.case import AgentInfo, Case, ConversationSettings
from assay.types.config import RunThresholds, Scoring
from assay.types.execution import Execution
from assay.types.records import SourceLocation

WEIGHTLESS = ("every evaluator of this case has weight 0, so the case would have no score",
              "at least one evaluator with a weight above 0; weight 0 reports a score without "
              "counting it")
"""The problem, and what is expected instead, when no evaluator of a case counts."""


def id_problem(case_id: str) -> str | None:
    """Why ``case_id`` cannot name a case, or None: every format's one rule. A blank id
    names nothing a person can find in a table, a report or ``--case-id``; a NUL no database
    stores as text (PostgreSQL refuses it)."""
    if not case_id.strip():
        return "is blank"
    if "\x00" in case_id:
        return "holds a NUL character"
    return None


def weightless(evaluators: list[Evaluator]) -> bool:
    """Whether a case judged by ``evaluators`` has no score to compute: the case score is the
    weighted mean over evaluators, and an evaluator with weight 0 is reported but not
    counted, so a case needs at least one evaluator with a weight above 0."""
    return bool(evaluators) and all(e.weight == 0 for e in evaluators)


@dataclass
class SuiteFacts:
    """A suite's cases summarised: count, judge models, targets, duplicate evaluator names."""

    cases: int = 0
    models: set[str | None] = field(default_factory=set)
    targets: set[str | None] = field(default_factory=set)
    duplicate_names: dict[str, list[str]] = field(default_factory=dict)
    fingerprint: str = ""
    conversations: int = 0
    """Cases to be played as conversations (a case whose execution the data holds is not)."""
    simulated: int = 0
    """Conversation cases whose user is simulated (not scripted): they need the simulator."""
    files: dict[Path, str] = field(default_factory=dict)
    """The files the cases' evaluators run or import (scripts, Python modules), each with
    what it is (see :meth:`Evaluator.input_files`)."""
    unjudged: int = 0
    """Cases that no evaluator judges (their evaluator list is empty)."""
    examples: dict[str, list[str]] = field(default_factory=dict)
    """The first few case ids of each kind counted above (``unjudged``), to name."""

    def example(self, kind: str, case_id: str) -> None:
        """Count ``case_id`` as one of ``kind``, keeping the first three ids to name."""
        setattr(self, kind, getattr(self, kind) + 1)
        found = self.examples.setdefault(kind, [])
        if len(found) < 3:
            found.append(case_id)


class _EvaluatorFacts:
    """What a list of evaluators contributes to a suite's facts."""

    def __init__(self, evaluators: list[Evaluator]) -> None:
        names = [e.name for e in evaluators]
        self.empty = not evaluators
        self.duplicates = sorted({n for n in names if names.count(n) > 1})
        self.models = {m for e in evaluators for m in e.models()}
        self.files = {path: what for e in evaluators for path, what in e.input_files().items()}
        digest = hashlib.sha256()
        for ev in evaluators:
            digest.update(type(ev).__name__.encode())
            digest.update(ev.model_dump_json().encode())
        self.digest = digest.digest()


class FactsGatherer:
    """Builds a suite's :class:`SuiteFacts` one case at a time.

    The suite gives the settings its cases fall back on (evaluators, target, conversation);
    the cases come from :meth:`Suite.iter_cases`, or from a loader that already holds each
    case once while validating a streamed file.
    """

    def __init__(self, suite: Suite) -> None:
        self._suite = suite
        self._digest = hashlib.sha256()
        self._facts = SuiteFacts()
        self._shared = _EvaluatorFacts(suite.evaluators)  # computed once, not once per case
        self._script = suite.conversation.scripted_messages if suite.conversation else None

    def add(self, item: SuiteCase) -> None:
        facts, digest = self._facts, self._digest
        facts.cases += 1
        own = self._shared if item.evaluators is None else _EvaluatorFacts(item.evaluators)
        if own.duplicates:
            facts.duplicate_names[item.case.id] = own.duplicates
        facts.models.update(own.models)
        facts.files.update(own.files)
        facts.targets.add(item.target or self._suite.target)
        if item.case.conversation is not None and item.execution is None:
            facts.conversations += 1
            script = item.case.conversation.scripted_messages or self._script
            facts.simulated += script is None
        if own.empty:
            facts.example("unjudged", item.case.id)
        digest.update(item.case.model_dump_json().encode())
        if item.execution is not None:  # recorded outputs decide results too
            digest.update(item.execution.model_dump_json().encode())
        digest.update(own.digest)
        digest.update((item.target or "").encode())

    def finish(self) -> SuiteFacts:
        suite, digest = self._suite, self._digest
        digest.update((suite.target or "").encode())
        for extra in (suite.run_thresholds, suite.conversation, suite.agent):
            if extra is not None:  # absent: the fingerprints of older suites stand
                digest.update(extra.model_dump_json().encode())
        if suite.scoring != "default":
            digest.update(suite.scoring.encode())
        if suite.agent_timeout_s is not None:
            digest.update(f"agent_timeout_s={suite.agent_timeout_s!r}".encode())
        self._facts.fingerprint = digest.hexdigest()
        return self._facts


class SuiteCase(BaseModel):
    """A case with what is particular to it in this suite."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    case: Case
    evaluators: list[Evaluator] | None = Field(
        default=None, description="this case's evaluators; None means the suite's")
    target: str | None = Field(default=None, description="a target name overriding the suite's")
    execution: Execution | None = Field(
        default=None, description="what the agent did, when the data records it (outputs "
        "given in the data): used instead of running a target")
    source: SourceLocation | None = Field(default=None, description="where the case is defined")

    @field_validator("execution")
    @classmethod
    def _as_data(cls, value: Execution | None) -> Execution | None:
        """A recorded output crosses into assay as an agent's does (:meth:`Execution.as_data`)."""
        return None if value is None else value.as_data()


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
    scoring: Scoring = Field(default="default", description="how cases and the run are "
                             "judged (see RunConfig.scoring)")
    run_thresholds: RunThresholds | None = Field(
        default=None, description="the suite's run dimensions (the file's 'thresholds')")
    agent_timeout_s: OptionalTimeoutS = Field(
        default=None, description="seconds one run of the agent may take, unless the run says "
        "otherwise (the file's execution.agent_timeout_s)")
    batch: bool | None = Field(
        default=None, description="the judge calls go through the providers' batch APIs, "
        "unless the run says otherwise (the file's execution.batch; see RunConfig.batch). "
        "How answers are sent, not what they mean: not in the fingerprint")
    conversation: ConversationSettings | None = Field(
        default=None, description="defaults for the suite's multi-turn cases")
    agent: AgentInfo | None = Field(
        default=None, description="the agent under test, as judges and comparisons see it")
    files: dict[Path, str] = Field(
        default_factory=dict, exclude=True,
        description="the files its loader read besides the suite file (a sidecar, prompt "
        "files, input files), each with what it is")
    select: Callable[[SuiteCase, Execution, list[Evaluator]], list[Evaluator]] | None = Field(
        default=None, exclude=True,
        description="chooses a case's evaluators once its execution is known (the agent "
        "judges' default selection); None: all of them")
    stored_repeats: dict[str, frozenset[int]] | None = Field(
        default=None, exclude=True,
        description="the repeats each case is judged in, when not every one: a rescore of "
        "a run that stopped before every repeat of every case was stored judges those its "
        "source stored, and never makes up a missing one from another repeat's answer; "
        "None: every repeat of the run")
    _facts: SuiteFacts | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _every_case_scores(self) -> Suite:
        """File formats report this located; a suite built in code is checked here."""
        for item in self.cases:
            if weightless(self.evaluators_for(item)):
                raise ValueError(f"case {item.case.id!r}: {WEIGHTLESS[0]} (expected: "
                                 f"{WEIGHTLESS[1]})")
        return self

    def evaluators_for(self, item: SuiteCase) -> list[Evaluator]:
        return item.evaluators if item.evaluators is not None else self.evaluators

    def evaluators_after(self, item: SuiteCase, execution: Execution) -> list[Evaluator]:
        """The evaluators that judge this execution of the case (see ``select``)."""
        evaluators = self.evaluators_for(item)
        return evaluators if self.select is None else self.select(item, execution, evaluators)

    def repeats_of(self, case_id: str, repeat: int) -> list[int]:
        """The repeats a run of ``repeat`` repeats judges case ``case_id`` in: every one,
        unless the suite names its own (:attr:`stored_repeats`)."""
        if self.stored_repeats is None:
            return list(range(repeat))
        return sorted(r for r in self.stored_repeats.get(case_id, ()) if r < repeat)

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

    def input_files(self) -> dict[Path, str]:
        """Every file running this suite reads, each with what it is: the suite file, what
        its loader read, and what its evaluators run or import. No output may be one."""
        found: dict[Path, str] = {}
        if self.source is not None:
            found[self.source] = "the suite file" if not self.source.is_dir() \
                else "the suite's project directory"
        found.update(self.files)
        found.update(self.facts().files)
        return found

    def fingerprint(self) -> str:
        """A hash of everything that decides results, for run snapshots and resume checks."""
        return self.facts().fingerprint

    def facts(self) -> SuiteFacts:
        """What the runner checks before it starts, gathered in one pass over the cases (a
        streamed suite is read once for all of it, or not at all when its loader gathered
        them while validating) and kept."""
        if self._facts is None:
            gatherer = FactsGatherer(self)
            for item in self.iter_cases():
                gatherer.add(item)
            self._facts = gatherer.finish()
        return self._facts

    def with_facts(self, facts: SuiteFacts) -> Suite:
        """This suite with facts gathered elsewhere (by a loader's validating pass over the
        same cases), so :meth:`facts` need not read a streamed suite again."""
        self._facts = facts
        return self
