"""AgentV's EVAL.yaml (and its JSONL variant) -> :class:`Suite`, or every problem at once.

::

    description: Math questions
    execution:
      target: my_agent                 # a target name (see assay.targets.config)
      evaluators:
        - {name: quality, type: llm_judge, prompt: ./prompts/quality.md, weight: 2}
    evalcases:                         # also: cases
      - id: addition
        expected_outcome: Answers 42
        input: What is 15 + 27?        # or input_messages: [{role, content}]
        expected_output: "42"          # or expected_messages: [...]
        rubrics: [Shows the working]   # a rubric evaluator for this case
        note: ...                      # {{note}} in judge prompts
        execution: {evaluators: [...]} # replaces the suite's evaluators for this case

Checking walks the whole file and reports every problem, each at ``file:line:col`` with what
was expected, so one run of ``assay validate`` shows everything to fix. Nothing runs on a
suite with problems: :func:`load_eval_yaml` raises :class:`SuiteError` carrying them all.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from assay._util.gc_pause import gc_paused
from assay._util.limits import TIMEOUT_S
from assay._util.yaml_source import (
    Loaded,
    Mark,
    PathKey,
    Problem,
    ProblemLog,
    YamlSyntaxError,
    load_yaml_file,
)
from assay.errors import ConfigError, ErrorCategory, EvaluationError
from assay.judges.base import Evaluator
from assay.judges.registry import EVALUATORS, evaluator_class, unknown_type
from assay.llm.models import parse_model
from assay.suites.agentv_config import GuidelineConfig, load_guideline_config
from assay.suites.evaluator_config import EvaluatorBuilder, type_name, unknown_target
from assay.suites.model import (
    WEIGHTLESS,
    FactsGatherer,
    Suite,
    SuiteCase,
    id_problem,
    weightless,
)
from assay.targets.config import TargetsFile, load_targets_for, read_targets
from assay.types.case import (
    AgentInfo,
    Case,
    ConversationSettings,
    ConversationSpec,
    ToolExpectation,
)
from assay.types.config import RunThresholds
from assay.types.json import dump_json
from assay.types.messages import Message
from assay.types.records import SourceLocation

__all__ = ["Problem", "SuiteError", "check_suite", "load_eval_yaml", "load_suite",
           "validate_eval_yaml", "validate_suite"]

TOP_KEYS = ("description", "name", "dataset", "version", "execution", "evalcases", "cases",
            "evaluator", "target", "metadata", "scoring", "thresholds", "conversation", "agent")
EXECUTION_KEYS = ("target", "evaluators", "agent_timeout_s", "batch")
CASE_EXECUTION_KEYS = ("target", "evaluators")
"""A case's own ``execution``: the agent timeout and batch are the run's, set for the suite."""
CONVERSATION_KEYS = ("persona", "persona_context", "first_turn", "first_message", "user_context",
                     "scripted_messages", "max_turns")
"""Case keys that make a case a conversation with a simulated (or scripted) user."""
INFO_KEYS = ("name", "description", "tags", "difficulty", "status")
"""Case keys that describe a case (Connexity's test cases carry them); kept in its metadata.
Only ``status: active`` cases (the default) run."""
DIFFICULTIES = ("normal", "hard")
STATUSES = ("draft", "active", "archived")
CASE_KEYS = ("id", "expected_outcome", "outcome", "input", "input_messages",
             "expected_output", "expected_messages", "rubrics", "note", "guidelines",
             "reference_context", "execution", "evaluators", "evaluator", "conversation_id",
             "metadata", "expected_outcomes", "expected_tool_calls",
             "evaluation_criteria_override", *INFO_KEYS, *CONVERSATION_KEYS)
YAML_SUFFIXES = (".yaml", ".yml")
JSONL_SUFFIXES = (".jsonl",)

Targets = TargetsFile | Path | str | Literal[False] | None
"""The targets a suite is checked against: a targets file (read or by path), None to use the
nearest ``.assay/targets.yaml`` (or ``.agentv/``) above the suite, or False for none."""


class SuiteError(EvaluationError):
    """A suite file with problems; ``problems`` lists them all, located."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__("invalid_suite", f"{file} has {len(problems)} problem(s):\n{lines}",
                         ErrorCategory.USER)
        self.file = file
        self.problems = problems


def load_eval_yaml(path: Path | str, targets: Targets = None) -> Suite:
    """An EVAL.yaml file as a Suite; raises SuiteError listing every problem.

    ``targets`` lets target names be checked and an evaluator's ``target`` resolve to its
    judge model (see :data:`Targets`); with none, target names are taken on trust.
    """
    return _valid(path, *check_eval_yaml(path, targets))


def validate_eval_yaml(path: Path | str, targets: Targets = None) -> list[Problem]:
    """Every problem in an EVAL.yaml file, in file order; empty when it is valid."""
    return check_eval_yaml(path, targets)[1]


def check_eval_yaml(path: Path | str, targets: Targets = None
                    ) -> tuple[Suite | None, list[Problem]]:
    """The suite (None when it cannot be built) and every problem found."""
    display = str(path)
    with gc_paused():  # the whole suite is built in memory: see assay._util.gc_pause
        try:
            loaded = load_yaml_file(Path(path), display)
        except YamlSyntaxError as exc:
            return None, [exc.problem]
        return _check(loaded, Path(path), targets)


def load_suite(path: Path | str, targets: Targets = None) -> Suite:
    """A suite file of any supported format, chosen by extension (.yaml/.yml, .jsonl)."""
    return _valid(path, *check_suite(path, targets))


def _valid(path: Path | str, suite: Suite | None, problems: list[Problem]) -> Suite:
    """The suite, or SuiteError with every problem: nothing runs on an invalid suite."""
    if problems or suite is None:
        raise SuiteError(str(path), problems)
    return suite


def validate_suite(path: Path | str, targets: Targets = None) -> list[Problem]:
    """Every problem in a suite file of any supported format."""
    return check_suite(path, targets)[1]


def check_suite(path: Path | str, targets: Targets = None
                ) -> tuple[Suite | None, list[Problem]]:
    """Dispatch on the extension; an unsupported one is a ConfigError naming the formats."""
    suffix = Path(path).suffix.lower()
    if suffix in YAML_SUFFIXES:
        return check_eval_yaml(path, targets)
    if suffix in JSONL_SUFFIXES:
        return _check_jsonl(Path(path), targets)
    raise ConfigError(f"{path}: unsupported suite file type {suffix or '(none)'!r}; expected "
                      "an EVAL.yaml (.yaml, .yml) or a JSONL file of cases (.jsonl)",
                      code="invalid_suite")


def _check(loaded: Loaded, path: Path, targets: Targets) -> tuple[Suite | None, list[Problem]]:
    from assay.suites.agentv4 import check_agentv4, is_agentv4

    if is_agentv4(loaded.data) and path.suffix.lower() in YAML_SUFFIXES:
        return check_agentv4(loaded, path, targets)  # AgentV 4's file: tests, assertions
    log = ProblemLog(loaded.source)
    log.extend(loaded.problems)
    found = _targets(targets, path)
    guideline_config, config_problems = load_guideline_config(path)
    log.extend(config_problems)
    checker = _SuiteChecker(log, path, EvaluatorBuilder(log, path.parent.resolve(), found),
                            found, guideline_config=guideline_config)
    suite = checker.suite(loaded.data)
    problems = log.sorted()
    return (None if problems else suite), problems


KEEP_CASES = 10_000
"""A JSONL suite of at most this many cases (and :data:`KEEP_BYTES`) keeps the cases its
check built; a larger one is read again from the file on each pass over its cases."""

KEEP_BYTES = 4 << 20
"""The largest JSONL file whose checked cases are kept: about 60 MB of cases at most (a
short case takes some 3 KB in memory), and a file this size is read in well under a second."""


def _check_jsonl(path: Path, targets: Targets) -> tuple[Suite | None, list[Problem]]:
    """Check a JSONL suite chunk by chunk, so memory does not grow with the dataset.

    A small file (:data:`KEEP_CASES`, :data:`KEEP_BYTES`) keeps the cases checked here, as a
    YAML suite would; a larger one becomes a suite whose cases are re-read from the file on
    each pass (validated once, here, in full). Reading a 5,000-case file a second time while
    it ran cost a cached re-run about a twentieth of its time.
    """
    from assay.suites.evaljsonl import CHUNK_CASES, iter_eval_jsonl

    found = _targets(targets, path)
    problems: list[Problem] = []
    first: Suite | None = None
    facts: FactsGatherer | None = None  # the run's facts, from this pass, not another read
    seen = IdSeen()
    count = 0
    files = sidecars(path)  # and what each chunk's cases read (prompt and input files)
    try:
        small = path.stat().st_size <= KEEP_BYTES
    except OSError:
        small = False  # iter_eval_jsonl says why the file cannot be read
    kept: list[SuiteCase] | None = [] if small else None
    # A small file's cases are kept (up to KEEP_CASES of them), so the collector is paused
    # while they are built (see assay._util.gc_pause): 5,000 cases checked in 110 ms instead of
    # 130-150. What it could leave uncollected is bounded by KEEP_BYTES of input. A larger
    # file is a stream, whose chunks are let go, and keeps the collector.
    with gc_paused() if small else contextlib.nullcontext():
        for loaded in iter_eval_jsonl(path):
            if loaded.data is None:
                return None, loaded.problems
            suite, chunk_problems = _check(loaded, path, found if found is not None else False)
            problems.extend(chunk_problems)
            if suite is None:
                continue
            files.update(suite.files)
            if first is None or facts is None:
                first, facts = suite, FactsGatherer(suite)
            for item in suite.cases:
                seen.add(item.case.id)
                if not problems:
                    facts.add(item)
            count += len(suite.cases)
            if kept is not None and count <= KEEP_CASES and not problems:
                kept.extend(suite.cases)
            else:
                kept = None
    problems.extend(_duplicate_ids(path, seen))
    if problems or first is None or facts is None:
        unique = {str(p): p for p in problems}  # sidecar problems repeat in every chunk
        return None, sorted(unique.values(),
                            key=lambda p: (p.file, p.line or 0, p.column or 0))
    first = first.model_copy(update={"files": files})
    if count <= CHUNK_CASES:
        return first, []
    if kept is not None:
        return first.model_copy(update={"cases": kept}).with_facts(facts.finish()), []
    resolved: Targets = found if found is not None else False

    def stream() -> Iterator[SuiteCase]:
        for loaded in iter_eval_jsonl(path):
            chunk, _ = _check(loaded, path, resolved)
            if chunk is not None:
                yield from chunk.cases

    streamed = first.model_copy(update={"cases": [], "case_source": stream,
                                        "case_count": count})
    return streamed.with_facts(facts.finish()), []


def sidecars(path: Path) -> dict[Path, str]:
    """Where a JSONL suite's sidecar is read from (``.yaml``, else ``.yml``), whether there
    is one yet or not: an output written there would become the suite's settings."""
    from assay.suites.evaljsonl import SIDECAR_SUFFIXES

    return {path.with_suffix(s).absolute(): "the sidecar of the suite"
            for s in SIDECAR_SUFFIXES}


class IdSeen:
    """Finds repeated case ids in a stream of any length in fixed memory.

    Each id sets a bit of a 16 MB bitset (2^27 bits) chosen by its hash; an id whose bit was
    already set is a candidate. Only candidates are kept (with the ids they could repeat
    found in a second pass over the file), so a million distinct ids cost 16 MB, not the
    hundred a dict of every id would. The bitset is an anonymous memory map: the system
    hands out zeroed pages as bits are first set, so a suite of a few thousand cases
    touches a few MB, where zero-filling 16 MB up front cost every check 9 ms.
    """

    BITS = 1 << 27

    def __init__(self) -> None:
        self._bits = mmap.mmap(-1, self.BITS // 8)
        self.candidates: set[int] = set()

    def add(self, case_id: str) -> None:
        slot = self.slot(case_id)
        byte, bit = divmod(slot, 8)
        if self._bits[byte] >> bit & 1:
            self.candidates.add(slot)
        else:
            self._bits[byte] |= 1 << bit

    def slot(self, case_id: str) -> int:
        return hash(case_id) % self.BITS


def _duplicate_ids(path: Path, seen: IdSeen) -> list[Problem]:
    """Problems for case ids that repeat: a second, light pass over the candidates only."""
    if not seen.candidates:
        return []
    from assay.suites.evaljsonl import iter_case_ids

    first: dict[str, int | None] = {}
    problems = []
    for case_id, line in iter_case_ids(path):
        if seen.slot(case_id) not in seen.candidates:
            continue
        if case_id in first:
            problems.append(Problem(str(path), line, None,
                                    f"duplicate case id {case_id!r} (first at line "
                                    f"{first[case_id]})", "unique case ids"))
        else:
            first[case_id] = line
    return problems


def _targets(targets: Targets, path: Path) -> TargetsFile | None:
    """Only names matter for checking a suite, so the file is read leniently: its own
    problems (a missing secret) are for whoever runs or validates the targets."""
    if targets is False:
        return None
    if isinstance(targets, TargetsFile):
        return targets
    if targets is None:
        return load_targets_for(path.parent, strict=False)
    if not Path(targets).is_file():
        raise ConfigError(f"targets file {targets} does not exist", code="invalid_targets")
    return read_targets(targets, strict=False)


@dataclass
class _SuiteChecker:
    """Walks one document; every ``_`` method reports into ``log`` and carries on."""

    log: ProblemLog
    path: Path
    evaluators: EvaluatorBuilder
    targets: TargetsFile | None
    seen_ids: dict[str, Mark] = field(default_factory=dict)
    not_run: dict[str, list[str]] = field(default_factory=dict)
    """The ids of the cases whose status is not active, by status: loaded, checked, not run."""
    suite_evaluators: list[Evaluator] = field(default_factory=list)
    suite_has_list: bool = False
    conversation: ConversationSettings | None = None
    files: list[str] = field(default_factory=list)
    """The input file segments read for the case being checked (its ``input_files``)."""
    guideline_config: GuidelineConfig = field(default_factory=GuidelineConfig)
    guideline_files: list[tuple[str, str]] = field(default_factory=list)
    """The case's input files matching ``guideline_patterns``: (absolute path, text)."""

    @property
    def base_dir(self) -> Path:
        return self.evaluators.base_dir

    @functools.cached_property
    def source_file(self) -> str:
        """The suite file's absolute path, as each case's source names it (made once: a
        suite of many cases would otherwise ask the file system for the directory each
        time)."""
        return str(self.path.absolute())

    def suite(self, data: Any) -> Suite | None:
        if data is None:
            self.log.add((), "the file is empty", "a mapping with 'evalcases'")
            return None
        if not isinstance(data, dict):
            self.log.add((), f"a suite file must be a mapping, not {type_name(data)}",
                         "a mapping with 'description', 'execution' and 'evalcases'")
            return None
        self._unknown_keys(data, (), TOP_KEYS, "top-level key")
        name = self._text(data, "name", ()) or self._text(data, "dataset", ()) or \
            self.path.stem
        description = self._text(data, "description", ()) or ""
        metadata = self._mapping(data, "metadata", ()) or {}
        for key in ("dataset", "version"):
            if data.get(key) is not None:
                metadata.setdefault(key, data[key])
        execution = self._execution(data, ())
        target = execution.get("target") or self._target(data, ())
        evaluators = self._suite_evaluators(data, execution)
        self.suite_evaluators = evaluators or []
        self.suite_has_list = "evaluators" in execution
        scoring = self._scoring(data)
        thresholds = self._typed(RunThresholds, data, "thresholds", ())
        self.conversation = self._typed(ConversationSettings, data, "conversation", ())
        agent = self._agent(data)
        cases = self._cases(data)
        if evaluators is None or cases is None:
            return None
        judge = self._judge_model(target)
        try:
            # Absolute, so a run's recorded suite path resumes from any directory.
            if self.not_run:
                metadata["not_run"] = dict(self.not_run)
            return Suite(name=name, description=description, source=self.path.absolute(),
                         target=target, judge_target=judge, evaluators=evaluators,
                         cases=cases, metadata=metadata, scoring=scoring,
                         run_thresholds=thresholds, conversation=self.conversation,
                         agent=agent, files=self._files(),
                         agent_timeout_s=execution.get("agent_timeout_s"),
                         batch=execution.get("batch"))
        except ValidationError as exc:
            self.log.add((), f"cannot build the suite: {exc}")
            return None

    def _files(self) -> dict[Path, str]:
        """The files read besides the suite file: the AgentV config that chose guideline
        files, prompt files and input files."""
        found: dict[Path, str] = {}
        if self.guideline_config.source is not None:
            found[self.guideline_config.source] = "the AgentV config of the suite"
        found.update(self.evaluators.read)
        return found

    def _judge_model(self, target: str | None) -> str | None:
        """The model of the suite target's ``judge_target``: the run's default judge."""
        if self.targets is None or target is None or target not in self.targets.targets:
            return None
        judge = self.targets.targets[target].judge_target
        config = self.targets.targets.get(judge) if judge else None
        return config.model_string() if config is not None else None

    # -- scoring, thresholds, conversations and the agent -----------------------------------

    def _scoring(self, data: dict[str, Any]) -> Any:
        value = data.get("scoring")
        if value is None:
            return "default"
        from assay.registry import REGISTRY

        if not isinstance(value, str) or REGISTRY.get("scoring_policy", value) is None:
            self.log.add(("scoring",), f"unknown scoring {value!r}", "one of "
                         + ", ".join(REGISTRY.names("scoring_policy")), value=True)
            return "default"
        return value

    def _typed(self, model: type[Any], data: dict[str, Any], key: str,
               path: PathKey) -> Any:
        """``data[key]`` validated as ``model``, each problem at the key it is about."""
        raw = data.get(key)
        where = (*path, key)
        if raw is None:
            return None
        if not isinstance(raw, dict):
            self.log.add(where, f"{key} must be a mapping, not {type_name(raw)}",
                         "a mapping of " + ", ".join(model.model_fields), value=True)
            return None
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            self._pydantic(exc, where, key, model)
            return None

    def _pydantic(self, exc: ValidationError, where: PathKey, what: str,
                  model: type[BaseModel]) -> None:
        for error in exc.errors():
            loc = tuple(error["loc"])
            dotted = ".".join(str(p) for p in loc)
            if error["type"] == "extra_forbidden":
                self.log.add((*where, *loc), f"unknown key {loc[-1]!r} in {what}",
                             "one of " + ", ".join(model.model_fields) if len(loc) == 1
                             else None)
            elif error["type"] == "missing":
                self.log.add((*where, *loc[:-1]), f"{what} needs {dotted!r}")
            else:
                message = str(error["msg"]).removeprefix("Value error, ")
                self.log.add((*where, *loc), f"{what}.{dotted}: {message}" if dotted
                             else f"{what}: {message}", value=True)

    def _agent(self, data: dict[str, Any]) -> AgentInfo | None:
        raw = data.get("agent")
        if isinstance(raw, dict) and isinstance(raw.get("system_prompt"), str):
            prompt = self.evaluators.read_prompt(raw["system_prompt"],
                                                 ("agent", "system_prompt"),
                                                 "the agent's system prompt file")
            if prompt is None:
                return None
            raw = {**raw, "system_prompt": prompt}
            return self._typed(AgentInfo, {"agent": raw}, "agent", ())
        return self._typed(AgentInfo, data, "agent", ())

    # -- execution and evaluators --------------------------------------------------------

    def _execution(self, data: dict[str, Any], path: PathKey,
                   known: tuple[str, ...] = EXECUTION_KEYS) -> dict[str, Any]:
        """``execution`` checked: ``target`` (a known name) and raw ``evaluators``; a key
        not ``known`` is a problem."""
        raw = data.get("execution")
        where = (*path, "execution")
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.log.add(where, f"execution must be a mapping, not {type_name(raw)}",
                         "{target, evaluators}", value=True)
            return {}
        self._unknown_keys(raw, where, known, "key in execution")
        out: dict[str, Any] = {}
        target = self._target(raw, where)
        if target is not None:
            out["target"] = target
        if "evaluators" in raw:
            out["evaluators"] = raw["evaluators"]
            out["evaluators_path"] = (*where, "evaluators")
        timeout = raw.get("agent_timeout_s")
        if timeout is not None:
            if isinstance(timeout, int | float) and TIMEOUT_S.accepts(timeout):
                out["agent_timeout_s"] = float(timeout)
            else:
                self.log.add((*where, "agent_timeout_s"), f"agent_timeout_s must be a "
                             f"positive number of seconds, not {timeout!r}",
                             f"{TIMEOUT_S.expected}, such as 600", value=True)
        batch = raw.get("batch")
        if isinstance(batch, bool):
            out["batch"] = batch
        elif batch is not None:  # null: not set, as for agent_timeout_s
            self.log.add((*where, "batch"), f"batch must be true or false, not "
                         f"{type_name(batch)} ({batch!r})", "true (the judge calls go "
                         "through the providers' batch APIs) or false", value=True)
        return out

    def _target(self, data: dict[str, Any], path: PathKey) -> str | None:
        if data.get("target") is None:
            return None
        name = data["target"]
        where = (*path, "target")
        if not isinstance(name, str) or not name:
            self.log.add(where, f"target must be a target name, not {type_name(name)}",
                         "a name from the targets file", value=True)
            return None
        if self.targets is not None and name not in self.targets.targets and \
                not _is_model(name):
            known = ", ".join(self.targets.names()) or "none"
            unknown_target(self.log, where, name, self.targets, f"one of {known} (from "
                           f"{self.targets.path}), or a model such as openai:gpt-4o-mini")
        return name

    def _suite_evaluators(self, data: dict[str, Any], execution: dict[str, Any]
                          ) -> list[Evaluator] | None:
        if "evaluators" in execution:
            return self.evaluators.build_list(execution["evaluators"],
                                              execution["evaluators_path"])
        default = self._default_kind(data, ())
        if default is False:
            return None
        # AgentV's rule: with no evaluator list, cases are judged by llm_judge's default.
        return [e for e in [self.evaluators.build({"type": default or "llm_judge"},
                                                  ("evaluator",))] if e is not None]

    def _default_kind(self, data: dict[str, Any], path: PathKey) -> str | bool | None:
        """The ``evaluator: KIND`` shorthand: a type name, None when absent, False if bad."""
        kind = data.get("evaluator")
        if kind is None:
            return None
        if not isinstance(kind, str):
            self.log.add((*path, "evaluator"), "evaluator must be one evaluator type's name, "
                         f"not {type_name(kind)}", "evaluator: TYPE (a list of evaluators "
                         "goes under execution: evaluators:)")
            return False
        if evaluator_class(kind) is None:
            self.log.add((*path, "evaluator"), unknown_type(kind),
                         "one of " + ", ".join(self.evaluators.known()), value=True)
            return False
        return kind

    # -- cases ---------------------------------------------------------------------------

    def _cases(self, data: dict[str, Any]) -> list[SuiteCase] | None:
        if "evalcases" in data and "cases" in data:
            self.log.add(("cases",), "both 'evalcases' and 'cases' are given",
                         "one list of cases")
        key = "evalcases" if "evalcases" in data else "cases"
        raw = data.get(key)
        if raw is None:
            self.log.add((key,) if key in data else (), "the suite has no cases",
                         "evalcases: a list of {id, input, expected_outcome, ...}")
            return None
        if not isinstance(raw, list):
            self.log.add((key,), f"{key} must be a list, not {type_name(raw)}",
                         "a list of cases", value=True)
            return None
        if not raw:
            self.log.add((key,), f"{key} is empty", "at least one case", value=True)
            return None
        cases = [self._case(item, (key, index)) for index, item in enumerate(raw)]
        if not all(cases):
            return None
        built = [c for c in cases if c is not None]
        active = [c for c in built if c.case.metadata.get("status", "active") == "active"]
        for item in built:
            status = item.case.metadata.get("status", "active")
            if status != "active":
                self.not_run.setdefault(status, []).append(item.case.id)
        if not active:
            self.log.add((key,), f"every case is {' or '.join(sorted(self.not_run))}, so none "
                         "would run", "at least one case with status: active (the default)")
            return None
        return active

    def _case(self, raw: Any, path: PathKey) -> SuiteCase | None:
        if not isinstance(raw, dict):
            self.log.add(path, f"a case must be a mapping, not {type_name(raw)}",
                         "{id, input, expected_outcome, ...}")
            return None
        self._unknown_keys(raw, path, CASE_KEYS, "case key")
        problems_before = len(self.log)
        self.files = []
        self.guideline_files = []
        case_id = self._case_id(raw, path)
        written_id = raw.get("id")
        label = f"case {str(written_id)!r}" if isinstance(written_id, str | int) and \
            not isinstance(written_id, bool) and str(written_id).strip() else "case"
        outcomes = self._outcomes(raw, path)
        conversation = self._conversation(raw, path, label)
        case_input = self._input(raw, path, label, conversation)
        tool_calls = self._tool_expectations(raw, path)
        emphasis = self._text(raw, "evaluation_criteria_override", path)
        metadata = self._mapping(raw, "metadata", path) or {}
        metadata.update(self._case_info(raw, path))
        expected = raw.get("expected_output")
        if "expected_messages" in raw:
            messages = self._messages(raw["expected_messages"], (*path, "expected_messages"))
            if messages is not None:
                metadata["expected_messages"] = [
                    m.model_dump(mode="json", exclude_none=True) for m in messages]
                if "expected_output" not in raw:
                    expected = _last_assistant(messages, raw["expected_messages"])
        note = raw.get("note")
        if note is not None:
            if isinstance(note, str):
                metadata["note"] = note
            else:
                self.log.add((*path, "note"), f"note must be text, not {type_name(note)}",
                             "text", value=True)
        case_input = self._files_read(raw, metadata, case_input)
        guidelines = self._strings(raw, "guidelines", path)
        context = self._strings(raw, "reference_context", path)
        execution = self._execution(raw, path, CASE_EXECUTION_KEYS)
        evaluators = self._case_evaluators(raw, path, execution)
        self._weighted(raw, path, execution, evaluators)
        if len(self.log) > problems_before or case_id is None or case_input is None:
            return None
        return self._suite_case(path, label, execution.get("target"), evaluators, dict(
            id=case_id, input=case_input, expected_output=expected,
            expected_outcomes=outcomes or [], guidelines=guidelines or [],
            reference_context=context or [], metadata=metadata,
            expected_tool_calls=tool_calls or [], evaluation_criteria_override=emphasis,
            conversation=conversation))

    def _files_read(self, raw: dict[str, Any], metadata: dict[str, Any],
                    case_input: Any) -> Any:
        """The case's input with the text of its guideline files in front; ``metadata``
        given the files its input read (``input_files``, ``guideline_files``) and its
        ``conversation_id``."""
        if raw.get("conversation_id") is not None:
            metadata["conversation_id"] = raw["conversation_id"]
        if self.files:
            metadata.setdefault("input_files", list(dict.fromkeys(self.files)))
        if self.guideline_files:
            metadata.setdefault("guideline_files",
                                list(dict.fromkeys(p for p, _ in self.guideline_files)))
            return _with_guidelines(case_input, self.guideline_files)
        return case_input

    def _suite_case(self, path: PathKey, label: str, target: str | None,
                    evaluators: list[Evaluator] | bool | None,
                    fields: dict[str, Any]) -> SuiteCase | None:
        """The case built from checked ``fields``, with its own target and evaluators
        (None: the suite's); what the case model still refuses is reported at ``path``."""
        try:
            case = Case(**fields)
        except ValidationError as exc:
            for error in exc.errors():
                self.log.add(path, f"{label}: {'.'.join(map(str, error['loc']))}: "
                             f"{error['msg']}")
            return None
        mark = self.seen_ids.get(case.id)
        return SuiteCase(case=case, target=target,
                         evaluators=evaluators if isinstance(evaluators, list) else None,
                         source=SourceLocation(file=self.source_file, line=mark.line)
                         if mark is not None and mark.line else None)

    def _case_info(self, raw: dict[str, Any], path: PathKey) -> dict[str, Any]:
        """What describes a case (name, description, tags, difficulty, status), checked."""
        found: dict[str, Any] = {}
        for key in ("name", "description"):
            text = self._text(raw, key, path)
            if text is not None:
                found[key] = text
        tags = self._strings(raw, "tags", path)
        if tags is not None:
            found["tags"] = tags
        for key, allowed in (("difficulty", DIFFICULTIES), ("status", STATUSES)):
            value = raw.get(key)
            if value is None:
                continue
            if value not in allowed:
                self.log.add((*path, key), f"{key} must be one of {', '.join(allowed)}, not "
                             f"{value!r}", " or ".join(allowed), value=True)
            else:
                found[key] = value
        return found

    def _case_id(self, raw: dict[str, Any], path: PathKey) -> str | None:
        if "id" not in raw:
            self.log.add(path, "case has no 'id'", "id: a unique name for the case")
            return None
        value = raw["id"]
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            self.log.add((*path, "id"), f"case id must be text, not {type_name(raw['id'])}",
                         "a unique name", value=True)
            return None
        problem = id_problem(value)
        if problem is not None:
            self.log.add((*path, "id"), f"case id {problem}",
                         "a unique name, not blank and without NUL characters", value=True)
            return None
        mark = self.log.source.locate((*path, "id"), value=True)
        first = self.seen_ids.get(value)
        if first is not None:
            self.log.add((*path, "id"), f"duplicate case id {value!r} (first at line "
                         f"{first.line})", "a unique id for each case", value=True)
            return None
        self.seen_ids[value] = mark
        return value

    def _outcomes(self, raw: dict[str, Any], path: PathKey) -> list[str] | None:
        given = [k for k in ("expected_outcome", "expected_outcomes", "outcome") if k in raw]
        if len(given) > 1:
            self.log.add((*path, given[1]), f"both {given[0]!r} and {given[1]!r} are given",
                         "one list of expected outcomes")
            return None
        return self._strings(raw, given[0], path) if given else None

    def _conversation(self, raw: dict[str, Any], path: PathKey,
                      label: str) -> ConversationSpec | None:
        """A case with any conversation key, or any case of a suite with a ``conversation``
        block, is played as a conversation."""
        keys = [k for k in CONVERSATION_KEYS if k in raw]
        if not keys and self.conversation is None:
            return None
        fields = {k: raw[k] for k in keys}
        if "persona_context" in fields:
            if "persona" in fields:
                self.log.add((*path, "persona_context"), "both 'persona' and "
                             "'persona_context' are given", "one of them")
                return None
            fields["persona"] = fields.pop("persona_context")
        if "max_turns" in fields and fields["max_turns"] is None:
            fields.pop("max_turns")  # null: the suite's
        if "first_message" not in fields and isinstance(raw.get("input"), str) and \
                fields.get("first_turn", "user") == "user":
            fields["first_message"] = raw["input"]
        try:
            return ConversationSpec.model_validate(fields)
        except ValidationError as exc:
            for error in exc.errors():
                loc = tuple(error["loc"])
                key = "persona_context" if loc and loc[0] == "persona" and \
                    "persona_context" in raw else (loc[0] if loc else None)
                message = str(error["msg"]).removeprefix("Value error, ")
                self.log.add((*path, key, *loc[1:]) if key is not None else path,
                             f"{label}: {'.'.join(map(str, loc))}: {message}", value=True)
            return None

    def _tool_expectations(self, raw: dict[str, Any],
                           path: PathKey) -> list[ToolExpectation] | None:
        value = raw.get("expected_tool_calls")
        where = (*path, "expected_tool_calls")
        if value is None:
            return None
        if not isinstance(value, list):
            self.log.add(where, f"expected_tool_calls must be a list, not {type_name(value)}",
                         "a list of {tool, expected_params, mock_response}", value=True)
            return None
        found: list[ToolExpectation] = []
        for index, item in enumerate(value):
            if isinstance(item, str):
                item = {"tool": item}
            if not isinstance(item, dict):
                self.log.add((*where, index), f"an expected tool call must be a mapping, not "
                             f"{type_name(item)}", "{tool, expected_params, mock_response}")
                continue
            try:
                found.append(ToolExpectation.model_validate(item))
            except ValidationError as exc:
                self._pydantic(exc, (*where, index), "expected tool call", ToolExpectation)
        return found

    def _input(self, raw: dict[str, Any], path: PathKey, label: str,
               conversation: ConversationSpec | None = None
               ) -> str | dict[str, Any] | list[Message] | None:
        if "input_messages" in raw:
            messages = self._messages(raw["input_messages"], (*path, "input_messages"),
                                      is_input=True)
            return messages
        if "input" not in raw and conversation is not None:
            return conversation.first_message if conversation.first_turn == "user" and \
                conversation.first_message else ""
        if "input" not in raw:
            self.log.add(path, f"{label} has neither 'input' nor 'input_messages'",
                         "input: text or a mapping, or input_messages: [{role, content}]")
            return None
        value = raw["input"]
        if isinstance(value, str | dict):
            return value
        if isinstance(value, list):
            return self._messages(value, (*path, "input"), is_input=True)
        self.log.add((*path, "input"), f"input must be text, a mapping or messages, not "
                     f"{type_name(value)}", "text, a mapping, or [{role, content}]",
                     value=True)
        return None

    def _case_evaluators(self, raw: dict[str, Any], path: PathKey,
                         execution: dict[str, Any]) -> list[Evaluator] | bool | None:
        """This case's evaluators; None means the suite's, False that they are invalid."""
        own: list[Evaluator] | None = None
        ok = True
        if "evaluators" in execution and "evaluators" in raw:
            self.log.add((*path, "evaluators"), "both execution.evaluators and evaluators "
                         "are given", "one evaluator list per case")
            ok = False
        if "evaluators" in execution:
            own = self.evaluators.build_list(execution["evaluators"],
                                             execution["evaluators_path"])
            ok = ok and own is not None
        elif "evaluators" in raw:
            own = self.evaluators.build_list(raw["evaluators"], (*path, "evaluators"))
            ok = ok and own is not None
        kind = self._default_kind(raw, path)
        if kind is False:
            ok = False
        elif kind is not None and own is None and not self.suite_has_list:
            # AgentV's order: case list, then suite list, then this default kind.
            built = self.evaluators.build({"type": kind}, (*path, "evaluator"))
            own = [built] if built is not None else None
        rubric = self._rubric(raw, path)
        if rubric is False:
            ok = False
        if not ok:
            return False
        if isinstance(rubric, Evaluator):
            base = own if own is not None else self.suite_evaluators
            return [rubric, *[e for e in base if e.name != rubric.name]]
        return own

    def _weighted(self, raw: dict[str, Any], path: PathKey, execution: dict[str, Any],
                  evaluators: list[Evaluator] | bool | None) -> None:
        """A case needs an evaluator that counts; the problem is at the list that lacks one
        (the suite's list once, however many cases use it)."""
        if evaluators is False:
            return
        own = evaluators if isinstance(evaluators, list) else None
        if not weightless(own if own is not None else self.suite_evaluators):
            return
        if own is None:
            where: PathKey = ("execution", "evaluators")
        elif "evaluators" in execution:
            where = execution["evaluators_path"]
        else:
            where = (*path, "evaluators") if "evaluators" in raw else path
        self.log.add(where, *WEIGHTLESS)

    def _rubric(self, raw: dict[str, Any], path: PathKey) -> Evaluator | bool | None:
        if "rubrics" not in raw:
            return None
        rubrics = raw["rubrics"]
        where = (*path, "rubrics")
        if not isinstance(rubrics, list) or not rubrics:
            self.log.add(where, "rubrics must be a non-empty list", "a list of criteria "
                         "(text, or {id, expected_outcome, weight, required})", value=True)
            return False
        if "rubric" not in EVALUATORS:
            self.log.add(where, "case rubrics need the 'rubric' evaluator type, which is not "
                         "available", "one of " + ", ".join(self.evaluators.known()))
            return False
        before = len(self.log)
        built = self.evaluators.build({"type": "rubric", "name": "rubrics",
                                       "rubrics": rubrics}, path)
        if built is None or len(self.log) > before:
            return False
        return built

    # -- small typed readers ---------------------------------------------------------------

    def _messages(self, raw: Any, path: PathKey, is_input: bool = False
                  ) -> list[Message] | None:
        if not isinstance(raw, list) or not raw:
            self.log.add(path, "messages must be a non-empty list", "[{role, content}, ...]",
                         value=True)
            return None
        messages: list[Message] = []
        ok = True
        for index, item in enumerate(raw):
            where = (*path, index)
            if not isinstance(item, dict):
                self.log.add(where, f"a message must be a mapping, not {type_name(item)}",
                             "{role, content}")
                ok = False
                continue
            fields = dict(item)
            content = fields.get("content")
            if isinstance(content, list):
                fields["content"] = self._segments(content, (*where, "content"), is_input)
                if fields["content"] is None:
                    ok = False
                    continue
            elif content is not None and not isinstance(content, str):
                fields["content"] = dump_json(content)  # structured content travels as JSON
            try:
                messages.append(Message.model_validate(fields))
            except ValidationError as exc:
                ok = False
                for error in exc.errors():
                    key = error["loc"][0] if error["loc"] else None
                    self.log.add((*where, key) if key in item else where,
                                 f"message {'.'.join(map(str, error['loc']))}: "
                                 f"{error['msg']}", value=key in item)
        return messages if ok else None

    def _segments(self, raw: list[Any], path: PathKey, is_input: bool = False
                  ) -> list[dict[str, Any]] | None:
        """AgentV content segments: ``{type: text, value}`` and ``{type: file, value: path}``
        (the file's text, relative to the suite) become OpenAI text parts. An input file
        matching ``guideline_patterns`` leaves only ``<Attached: path>`` here, as in AgentV's
        question; its text goes to the case's guidelines system message."""
        parts: list[dict[str, Any]] = []
        ok = True
        for index, segment in enumerate(raw):
            where = (*path, index)
            if isinstance(segment, str):
                parts.append({"type": "text", "text": segment})
            elif isinstance(segment, dict) and segment.get("type") == "file":
                text = self._file_segment(segment.get("value"), (*where, "value"), is_input)
                ok = ok and text is not None
                if text is not None:
                    parts.append({"type": "text", "text": text})
            elif isinstance(segment, dict) and segment.get("type") == "text" and \
                    "value" in segment and "text" not in segment:
                parts.append({"type": "text", "text": str(segment["value"])})
            elif isinstance(segment, dict):
                parts.append(segment)
            else:
                self.log.add(where, f"a content part must be text or a mapping, not "
                             f"{type_name(segment)}", "{type: text, value} or "
                             "{type: file, value: path}")
                ok = False
        return parts if ok else None

    def _file_segment(self, value: Any, path: PathKey, is_input: bool = False) -> str | None:
        if not isinstance(value, str) or not value:
            self.log.add(path, "a file segment needs 'value': the file's path", "a path",
                         value=True)
            return None
        file = Path(os.path.normpath(self.base_dir / value))  # absolute, as AgentV reports
        try:
            body = file.read_text(encoding="utf-8")
            self.evaluators.read[file] = "an input file of the suite"
            if is_input and self.guideline_config.is_guideline(file):
                self.guideline_files.append((str(file), body))
                return f"<Attached: {value}>"
            if is_input:
                self.files.append(str(file))
        except (OSError, UnicodeDecodeError) as exc:
            reason = "not found" if isinstance(exc, FileNotFoundError) else str(exc)
            self.log.add(path, f"input file {value}: {reason}", "a UTF-8 text file relative "
                         "to the suite file", value=True)
            return None
        return f"\n<file path=\"{value}\">\n{body}\n</file>\n"

    def _unknown_keys(self, data: dict[Hashable, Any], path: PathKey,
                      known: tuple[str, ...], what: str) -> None:
        for key in data:
            if key not in known:
                self.log.add((*path, key), f"unknown {what} {key!r}",
                             "one of " + ", ".join(known))

    def _text(self, data: dict[str, Any], key: str, path: PathKey) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            self.log.add((*path, key), f"{key} must be text, not {type_name(value)}", "text",
                         value=True)
            return None
        return value

    def _strings(self, data: dict[str, Any], key: str, path: PathKey) -> list[str] | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        self.log.add((*path, key), f"{key} must be text or a list of text, not "
                     f"{type_name(value)}", "text or a list of text", value=True)
        return None

    def _mapping(self, data: dict[str, Any], key: str, path: PathKey) -> dict[str, Any] | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.log.add((*path, key), f"{key} must be a mapping, not {type_name(value)}",
                         "a mapping", value=True)
            return None
        return {str(k): v for k, v in value.items()}


def _with_guidelines(case_input: Any, files: list[tuple[str, str]]) -> Any:
    """The input messages with the guideline files' text in a leading system message, as
    AgentV builds its chat prompt: ``[[ ## Guidelines ## ]]`` then each file in a tag."""
    if not isinstance(case_input, list):
        return case_input
    texts = dict(files)
    body = "\n\n".join(f"<file path=\"{Path(p).name}\">\n{text.strip()}\n</file>"
                        for p, text in texts.items())
    return [Message(role="system", content=f"[[ ## Guidelines ## ]]\n\n{body}"),
            *case_input]


def _is_model(name: str) -> bool:
    """True for a judge-engine model string, which works as a target without a targets file."""
    try:
        parse_model(name)
    except ConfigError:
        return False
    return True


def _last_assistant(messages: list[Message], raw: list[Any]) -> Any:
    """The reference answer in expected messages: the last assistant turn's content (kept
    structured when it was written structured), else its tool calls."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "assistant":
            continue
        written = raw[index].get("content") if isinstance(raw[index], dict) else None
        if written is not None and not isinstance(written, str | list):
            return written
        if message.content is not None:
            return message.text()
        if message.tool_calls:
            return [c.model_dump(mode="json", exclude_none=True) for c in message.tool_calls]
    return None
