"""Which Target runs a case, and which model judges it: names resolved once per run.

A run names targets in three ways: the suite's (or a case's) target name, a ``--target``
override, or a Python object passed to :func:`assay.evaluate` (a callable or a Target). Names
come from the targets file found beside the suite (or given), or are judge-engine model strings.
The targets file is read leniently: a run fails on the problems of the targets it uses (a
missing secret among them), never on those of targets it does not touch.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.llm.engine import JudgeEngine
from assay.llm.models import parse_model
from assay.targets.base import RecordedOutput, Target
from assay.targets.config import TargetsFile, build_target, load_targets_for


def case_judge(targets: TargetsFile | None, target: str | None, suite_target: str | None,
               suite_judge: str | None) -> str | None:
    """The judge model of a case that ``target`` ran: the target's ``judge_target`` (AgentV's
    rule: the target that ran a case chooses its judge; ``grader_target`` in AgentV 4), else,
    for a chat-model target that names no judge, the target's own model (AgentV's rule too:
    the target is its own judge), else the suite's own judge when the target is the suite's;
    None: the engine's default. ``assay run`` judges every case by this rule, and ``assay
    calibrate --suite`` calibrates the judge it gives. ``--judge-model`` overrides them all."""
    judge = _judge_target_model(targets, target)
    if judge is None and target == suite_target:
        return suite_judge
    return judge


def _judge_target_model(targets: TargetsFile | None, name: str | None) -> str | None:
    """The model of target ``name``'s ``judge_target``, else the target's own model when it
    is a chat model that names no judge; None otherwise. A target that is an agent (a command,
    an HTTP endpoint, a function) cannot judge, so its cases get the default judge."""
    if targets is None or not name:
        return None
    config = targets.get(name)
    if config is None:
        return None
    if not config.judge_target:
        return config.model_string()
    judge = targets.get(config.judge_target)
    return judge.model_string() if judge is not None else None


class TargetResolver:
    """Resolves target names for the runner, building each target once.

    ``given`` (a Target from the caller) answers for every name when set, as ``--target``
    does for a name; it is closed at the end only when ``owns_given`` (assay built it).
    ``find_file`` False reads no targets file but ``targets_file``: for a session that judges
    executions it is given and runs no target (one case judged by ``assay.score``).
    """

    def __init__(self, engine: JudgeEngine, base_dir: Path, targets_file: Path | None = None,
                 given: Target | None = None, owns_given: bool = False, *,
                 unanswered_is_missing: bool = False, find_file: bool = True) -> None:
        self.engine = engine
        self.unanswered_is_missing = unanswered_is_missing
        """What a case with no recorded output and no agent is (see :class:`RecordedOutput`):
        the run's scoring policy says."""
        self.given = given
        self.owns_given = owns_given
        self.file: TargetsFile | None = load_targets_for(
            base_dir, targets_file, strict=False) if find_file or targets_file else None
        self.base_dir = self.file.base_dir if self.file else base_dir
        self._built: dict[str | None, Target] = {}
        self._mocked: dict[str | None, Target] = {}

    @property
    def path(self) -> Path | None:
        return self.file.path if self.file else None

    def redacted(self) -> dict[str, Any]:
        """The targets file as written (secrets as placeholders): safe to store."""
        return self.file.redacted() if self.file else {}

    def check(self, names: Iterable[str | None]) -> None:
        """Raise one ConfigError with the problems of the targets file that matter to a run
        of ``names``: every problem except the unset secrets of targets not used."""
        if self.file is None or not self.file.problems:
            return
        used = self._closure(names)
        ignored = {p for name, cfg in self.file.targets.items() if name not in used
                   for p in cfg.missing_secrets}
        problems = [p for p in self.file.problems if p not in ignored]
        if problems:
            lines = "\n".join(f"  {p}" for p in problems)
            raise ConfigError(f"targets file {self.file.path} has {len(problems)} "
                              f"problem(s):\n{lines}", code="invalid_targets")

    def _closure(self, names: Iterable[str | None]) -> set[str]:
        """The named targets and the judge targets they name."""
        used = {n for n in names if n}
        if self.file is not None:
            for name in list(used):
                config = self.file.get(name)
                if config is not None and config.judge_target:
                    used.add(config.judge_target)
        return used

    def judge_model(self, name: str | None) -> str | None:
        """The model of a target's ``judge_target`` (AgentV's rule: the target that ran a
        case chooses its judge); None when it names none."""
        return _judge_target_model(self.file, name)

    def replaying(self, name: str | None) -> Target | None:
        """The target for ``name`` when it only replays outputs recorded beforehand (the
        data's own, or a ``recorded`` target's file), so using it runs no agent; else None.
        What a dry run uses where it can."""
        if self.given is not None:
            return None
        config = self.file.get(name) if self.file and name else None
        if name is not None and (config is None or config.kind() != "recorded"):
            return None
        found = self._target(name)
        return found if isinstance(found, RecordedOutput) else None

    def __call__(self, name: str | None) -> Target:
        """The target for ``name``, able to mock tools and inputs for cases that ask."""
        from assay.targets.mocked import MockedTarget

        key = "\0given" if self.given is not None else name
        if key not in self._mocked:
            inner = self.given if self.given is not None else self._target(name)
            self._mocked[key] = MockedTarget(inner, self.engine, None)
        return self._mocked[key]

    def _target(self, name: str | None) -> Target:
        if name not in self._built:
            self._built[name] = self._build(name)
        return self._built[name]

    def _build(self, name: str | None) -> Target:
        if name is None:
            return RecordedOutput(unanswered_is_missing=self.unanswered_is_missing)
        config = self.file.get(name) if self.file else None
        if config is not None:
            self.check([name])
            return build_target(config, self.base_dir, self.engine)
        if ":" in name or name.startswith(("http://", "https://")):
            parse_model(name)  # a clear error for a bad model string
            return build_target({"name": name, "provider": name}, self.base_dir, self.engine)
        if self.file is None:
            raise ConfigError(
                f"unknown target {name!r}: no targets file (.assay/targets.yaml) was found "
                f"above {self.base_dir}; define the target there, pass --targets FILE, or "
                "give a model string such as openai:gpt-4o-mini", code="unknown_target")
        if self.file.problems:
            self.file.require(name)  # lists the file's own problems, located
        known = ", ".join(self.file.names()) or "none"
        raise ConfigError(
            f"unknown target {name!r}; targets defined in {self.file.path}: {known}; or give "
            "a model string such as openai:gpt-4o-mini", code="unknown_target")

    async def aclose(self) -> None:
        for target in self._built.values():
            await target.aclose()
        if self.given is not None and self.owns_given:
            await self.given.aclose()
