"""Evaluator entries of a suite file -> built evaluators, with every problem located.

Each entry is ``{name, type, weight, ...}`` and is built by the evaluator class the registry
knows for ``type``, so new evaluator types work in suite files as soon as they register. Before
building, what only a file can know is filled in: a ``prompt`` naming a file is read (relative
to the suite), ``cwd`` defaults to the suite's directory, composite members are built
recursively, AgentV's ``config: {...}`` is unpacked into fields, and an LLM evaluator's
``target`` becomes the judge ``model`` it names. A build failure is reported at the key it is
about (pydantic's error locations are mapped back to file positions), never as a traceback.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from assay._util.yaml_source import PathKey, ProblemLog
from assay.errors import ConfigError, EvaluationError, TemplateError
from assay.judges.base import Evaluator
from assay.judges.registry import EVALUATORS, evaluator_class, field_names, unknown_type
from assay.llm.models import parse_model
from assay.targets.config import TargetsFile

AGENTV_SPELLINGS = {"threshold": "threshold_ms"}
"""AgentV field names that mean another field here: ``latency``'s ``threshold`` is in ms,
while assay's ``threshold`` is every evaluator's 0-1 pass mark."""

_PROMPT_FILE = re.compile(
    r"[^\s{}<>|\"']+\.(md|markdown|txt|prompt|j2|jinja|jinja2|tmpl|tpl|hbs|mustache)", re.I)


@dataclass
class EvaluatorBuilder:
    """Builds the evaluators of one suite file, reporting problems into ``log``."""

    log: ProblemLog
    base_dir: Path
    targets: TargetsFile | None = None
    prompt_files: dict[PathKey, str] = field(default_factory=dict)
    """Where a prompt read from a file was named -> the file, for problems in its text."""
    read: dict[Path, str] = field(default_factory=dict)
    """Every file read while building the suite (prompt files, input files) -> what it is:
    the suite's :attr:`~assay.suites.model.Suite.files`, which no output may overwrite."""

    def build_list(self, raw: Any, path: PathKey) -> list[Evaluator] | None:
        """A list of evaluators, or None when any of them (or the list) is invalid."""
        if not isinstance(raw, list):
            self.log.add(path, f"evaluators must be a list, not {type_name(raw)}",
                         "a list of {name, type, ...} mappings", value=True)
            return None
        built: list[Evaluator] = []
        ok = True
        names: dict[str, int] = {}
        for index, entry in enumerate(raw):
            evaluator = self.build(entry, (*path, index))
            if evaluator is None:
                ok = False
                continue
            if evaluator.name in names:
                self.log.add((*path, index, "name") if _has(entry, "name") else (*path, index),
                             f"duplicate evaluator name {evaluator.name!r} (also item "
                             f"{names[evaluator.name] + 1} of this list)",
                             "a unique 'name' for each evaluator in a list")
                ok = False
            names[evaluator.name] = index
            built.append(evaluator)
        return built if ok else None

    def build(self, raw: Any, path: PathKey) -> Evaluator | None:
        """One evaluator, or None after reporting why it cannot be built."""
        if isinstance(raw, str):
            raw = {"type": raw}  # a bare type name is shorthand for its defaults
        if not isinstance(raw, dict):
            self.log.add(path, f"an evaluator must be a mapping, not {type_name(raw)}",
                         "{name, type, weight, ...}")
            return None
        kind = raw.get("type")
        if kind is None:
            self.log.add(path, "evaluator has no 'type'",
                         "type: one of " + ", ".join(self.known()))
            self._check_weight(raw, path)
            return None
        if not isinstance(kind, str):
            self.log.add((*path, "type"), f"type must be an evaluator type's name, not "
                         f"{type_name(kind)}", "type: one of " + ", ".join(self.known()))
            self._check_weight(raw, path)
            return None
        if evaluator_class(kind) is None:
            self.log.add((*path, "type"), unknown_type(kind),
                         "one of " + ", ".join(self.known()), value=True)
            self._check_weight(raw, path)
            return None
        fields: dict[str, Any] = {k: v for k, v in raw.items() if k != "type"}
        origins: dict[str, PathKey] = {k: (*path, k) for k in fields}
        ok = True
        if kind == "llm_judge" and "rubrics" in fields:
            # AgentV: an llm_judge with rubrics judges with its rubric prompt.
            kind = "rubric"
            if "prompt" in fields:
                self.log.add((*path, "prompt"), "an llm_judge with rubrics judges with the "
                             "rubric prompt, so this prompt would not be used",
                             "rubrics or prompt, not both")
                fields.pop("prompt")
                ok = False
        cls: type[Evaluator] = EVALUATORS[kind]
        ok = self._unpack_config(cls, fields, origins, path) and ok
        self._agentv_spellings(cls, fields, origins)
        if not self._check_weight(fields, path):
            fields.pop("weight")
            ok = False
        ok = self._judge_target(cls, fields, origins) and ok
        ok = self._model(cls, fields, origins) and ok
        ok = self._passthrough(cls, fields, origins, path) and ok
        ok = self._prompt(cls, fields, origins) and ok
        self._cwd(cls, fields)
        ok = self._members(cls, fields, origins) and ok
        self._aggregator(fields, origins)
        # Fields dropped above were already reported: pydantic must not call them missing.
        dropped = {k for k in origins if k not in fields}
        evaluator = self._validate(cls, kind, fields, origins, path, dropped)
        return evaluator if ok else None

    def known(self) -> list[str]:
        return sorted(EVALUATORS)

    # -- what only a file knows ----------------------------------------------------------

    def _unpack_config(self, cls: type[Evaluator], fields: dict[str, Any],
                       origins: dict[str, PathKey], path: PathKey) -> bool:
        """AgentV's ``config: {temperature: 0}`` -> fields, for classes without ``config``."""
        if "config" not in fields or "config" in cls.model_fields:
            return True
        config = fields.pop("config")
        origins.pop("config", None)
        if not isinstance(config, dict):
            self.log.add((*path, "config"), f"config must be a mapping, not {type_name(config)}",
                         "a mapping of evaluator settings", value=True)
            return False
        for key, value in config.items():
            if key in fields:
                self.log.add((*path, "config", key),
                             f"{key!r} is set both here and on the evaluator",
                             "each setting once")
                continue
            fields[key] = value
            origins[key] = (*path, "config", key)
        return True

    def _passthrough(self, cls: type[Evaluator], fields: dict[str, Any],
                     origins: dict[str, PathKey], path: PathKey) -> bool:
        """AgentV passes any key an ``llm_judge`` or ``code_judge`` does not know into its
        ``config``; ``config`` keys that name the evaluator's own settings are those settings
        (for classes that say so, such as ``llm_judge``'s ``temperature``). A key that is a
        near miss of a setting (``temprature``) is not passed on: it stays an unknown key,
        reported at its line, since a typo silently ignored is worse than one reported."""
        if not getattr(cls, "passthrough", False) or "config" not in cls.model_fields:
            return True
        config = fields.get("config", {})
        if not isinstance(config, dict):
            return True  # pydantic reports the type, located at the key
        config = dict(config)
        if getattr(cls, "settings_in_config", False):
            for key in list(config):
                if key in cls.model_fields and key not in ("config", "name", "weight"):
                    if key in fields:
                        self.log.add((*path, "config", key),
                                     f"{key!r} is set both here and on the evaluator",
                                     "each setting once")
                        return False
                    fields[key] = config.pop(key)
                    origins[key] = (*path, "config", key)
        known = set(field_names(cls))
        for key in list(fields):
            if key in known or key in ("config", "prompt"):
                continue
            if difflib.get_close_matches(str(key), known, n=1, cutoff=0.8):
                continue  # a misspelt setting ("temprature") is reported, not passed on
            config.setdefault(key, fields.pop(key))
            origins.pop(key, None)
        fields["config"] = config
        origins.setdefault("config", (*path, "config"))
        return True

    @staticmethod
    def _agentv_spellings(cls: type[Evaluator], fields: dict[str, Any],
                          origins: dict[str, PathKey]) -> None:
        for theirs, ours in AGENTV_SPELLINGS.items():
            if theirs in fields and ours in cls.model_fields and ours not in fields:
                fields[ours] = fields.pop(theirs)
                origins[ours] = origins.pop(theirs)

    def _check_weight(self, fields: dict[str, Any], path: PathKey) -> bool:
        if "weight" not in fields or self._weight_ok(fields["weight"]):
            return True
        weight = fields["weight"]
        what = "negative" if _number(weight) and weight < 0 else (
            "not finite" if _number(weight) else f"{type_name(weight)}, not a number")
        self.log.add((*path, "weight"), f"weight {weight!r} is {what}",
                     "a finite number >= 0", value=True)
        return False

    @staticmethod
    def _weight_ok(weight: Any) -> bool:
        return _number(weight) and math.isfinite(weight) and weight >= 0

    def _judge_target(self, cls: type[Evaluator], fields: dict[str, Any],
                      origins: dict[str, PathKey]) -> bool:
        """An LLM evaluator's ``target`` names its judge: a targets-file entry or a model."""
        if "target" not in fields or "target" in cls.model_fields or "model" not in \
                cls.model_fields:
            return True
        name = fields.pop("target")
        where = origins.pop("target")
        if not isinstance(name, str) or not name:
            self.log.add(where, "target must be a target name", "a string", value=True)
            return False
        if "model" in fields:
            self.log.add(where, "both 'target' and 'model' name the judge", "one of them")
            return False
        if self.targets is not None and name in self.targets.targets:
            model = self.targets.targets[name].model_string()
            if model is None:
                self.log.add(where, f"target {name!r} is not a chat model, so it cannot judge",
                             "a target whose provider is a model such as openai:gpt-4o-mini",
                             value=True)
                return False
        else:
            try:
                model = parse_model(name).name
            except ConfigError:
                if self.targets is not None:
                    unknown_target(self.log, where, name, self.targets, "one of " + ", ".join(
                        self.targets.names()) + f" (from {self.targets.path})")
                else:
                    self.log.add(where, f"target {name!r} is not a model and no targets file "
                                 "was found", "a model such as openai:gpt-4o-mini, or a target "
                                 "in .assay/targets.yaml (see --targets)", value=True)
                return False
        fields["model"] = model
        origins["model"] = where
        return True

    def _model(self, cls: type[Evaluator], fields: dict[str, Any],
               origins: dict[str, PathKey]) -> bool:
        """A judge ``model`` is parsed now, as the engine will parse it, so a name it cannot
        call (``gpt-4o`` with no provider, ``foo:bar``) is a located problem, not a failed
        run."""
        model = fields.get("model")
        if "model" not in cls.model_fields or not isinstance(model, str):
            return True  # absent, or not text: pydantic reports the type
        try:
            parse_model(model)
        except ConfigError as exc:
            self.log.add(origins["model"], exc.message, value=True)
            fields.pop("model")
            return False
        return True

    def _prompt(self, cls: type[Evaluator], fields: dict[str, Any],
                origins: dict[str, PathKey]) -> bool:
        """A ``prompt`` naming a file is replaced by the file's text; an executable prompt
        template (``{script: [...], config: {...}}``) becomes the judge's prompt script."""
        if "prompt" not in fields or "prompt" not in cls.model_fields:
            return True
        if isinstance(fields["prompt"], dict) and "prompt_script" in cls.model_fields:
            return self._prompt_script(fields, origins)
        text = self.read_prompt(fields["prompt"], origins["prompt"],
                                f"the prompt file of evaluator {_name(cls, fields)!r}")
        if text is None:
            fields.pop("prompt")
            return False
        fields["prompt"] = text
        return True

    def _prompt_script(self, fields: dict[str, Any], origins: dict[str, PathKey]) -> bool:
        template = fields.pop("prompt")
        where = origins.pop("prompt")
        unknown = [k for k in template if k not in ("script", "config")]
        if unknown or "script" not in template:
            self.log.add(where, "an executable prompt template is {script: [...], config: "
                         "{...}}" + (f"; unknown key(s) {', '.join(map(str, unknown))}"
                                     if unknown else "; 'script' is missing"),
                         "script: the program and its arguments", value=True)
            return False
        fields["prompt_script"] = template["script"]
        origins["prompt_script"] = (*where, "script")
        extra = template.get("config")
        if extra is not None:
            if not isinstance(extra, dict):
                self.log.add((*where, "config"), f"config must be a mapping, not "
                             f"{type_name(extra)}", "a mapping", value=True)
                return False
            fields["config"] = {**extra, **(fields.get("config") or {})}
        return True

    def read_prompt(self, prompt: Any, where: PathKey,
                    what: str = "a prompt file of the suite") -> str | None:
        """The prompt's text: the named file's contents (noted in :attr:`read` as ``what``),
        or the inline text itself."""
        if isinstance(prompt, dict):
            self.log.add(where, "executable prompt templates ({script: ...}) are not "
                         "supported", "a prompt file path or inline prompt text", value=True)
            return None
        if not isinstance(prompt, str):
            self.log.add(where, f"prompt must be text, not {type_name(prompt)}",
                         "a prompt file path or inline prompt text", value=True)
            return None
        candidate = prompt.strip()
        if "\n" in candidate or not candidate:
            return prompt
        file = self.base_dir / Path(candidate).expanduser()
        try:
            if file.is_file():
                self.prompt_files[where] = candidate
                self.read[file] = what
                return file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.log.add(where, f"cannot read prompt file {candidate}: {exc}",
                         "a readable UTF-8 text file", value=True)
            return None
        if candidate.startswith(("./", "../", "/", "~")) or _PROMPT_FILE.fullmatch(candidate):
            self.log.add(where, f"prompt file {candidate} not found (looked in "
                         f"{file.parent})", "a prompt file relative to the suite file, or "
                         "inline prompt text", value=True)
            return None
        return prompt

    def _cwd(self, cls: type[Evaluator], fields: dict[str, Any]) -> None:
        """Scripts run in the suite's directory unless told otherwise (relative to it)."""
        if "cwd" not in cls.model_fields:
            return
        cwd = fields.get("cwd")
        if cwd is None:
            fields["cwd"] = str(self.base_dir)
        elif isinstance(cwd, str) and not Path(cwd).expanduser().is_absolute():
            fields["cwd"] = str(self.base_dir / cwd)

    def _members(self, cls: type[Evaluator], fields: dict[str, Any],
                 origins: dict[str, PathKey]) -> bool:
        """Composite members are built here, so their problems are located too."""
        members = fields.get("evaluators")
        if "evaluators" not in cls.model_fields or not isinstance(members, list):
            return True
        if members and all(isinstance(m, Evaluator) for m in members):
            return True  # built already, by a format that reads its members its own way
        built = self.build_list(members, origins["evaluators"])
        if built is None:
            fields.pop("evaluators")
            return False
        fields["evaluators"] = built
        return True

    def _aggregator(self, fields: dict[str, Any], origins: dict[str, PathKey]) -> None:
        aggregator = fields.get("aggregator")
        if not isinstance(aggregator, dict):
            return
        aggregator = dict(aggregator)
        where = origins["aggregator"]
        if "prompt" in aggregator:
            text = self.read_prompt(aggregator["prompt"], (*where, "prompt"),
                                    "the aggregator prompt file of evaluator "
                                    f"{fields.get('name') or 'composite'!r}")
            if text is not None:
                aggregator["prompt"] = text
        if ("script" in aggregator or "path" in aggregator) and "cwd" not in aggregator:
            aggregator["cwd"] = str(self.base_dir)
        elif isinstance(aggregator.get("cwd"), str) and not Path(
                aggregator["cwd"]).is_absolute():
            aggregator["cwd"] = str(self.base_dir / aggregator["cwd"])
        fields["aggregator"] = aggregator

    # -- building ------------------------------------------------------------------------

    def _validate(self, cls: type[Evaluator], kind: str, fields: dict[str, Any],
                  origins: dict[str, PathKey], path: PathKey,
                  dropped: set[str]) -> Evaluator | None:
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            for error in exc.errors():
                if not (error["loc"] and error["loc"][0] in dropped):
                    self._pydantic_problem(cls, kind, error, origins, path)
            return None
        except TemplateError as exc:
            where = origins.get("prompt", path)
            file = self.prompt_files.get(where)
            self.log.add(where, exc.message + (f" (in prompt file {file})" if file else ""),
                         value=True)
        except EvaluationError as exc:
            self.log.add(path, f"{kind}: {exc.message}")
            return None
        # A bad template stops pydantic early: check the rest without it to find all problems.
        rest = {k: v for k, v in fields.items() if k != "prompt"}
        try:
            cls.model_validate(rest)
        except ValidationError as exc:
            for error in exc.errors():
                if error["loc"] and error["loc"][0] not in (*dropped, "prompt"):
                    self._pydantic_problem(cls, kind, error, origins, path)
        except EvaluationError:
            pass
        return None

    def _pydantic_problem(self, cls: type[BaseModel], kind: str, error: Any,
                          origins: dict[str, PathKey], path: PathKey) -> None:
        loc: tuple[Hashable, ...] = tuple(error["loc"])
        head = str(loc[0]) if loc else ""
        where = (*origins.get(head, (*path, head)), *loc[1:]) if loc else path
        dotted = ".".join(str(p) for p in loc)
        if error["type"] == "extra_forbidden":
            self.log.add(where, f"unknown key {loc[-1]!r} for evaluator type {kind!r}",
                         "one of " + ", ".join(field_names(cls)) if len(loc) == 1 else None)
        elif error["type"] == "missing":
            self.log.add(path, f"{kind} evaluator needs {dotted!r}",
                         _describe(cls, head) if len(loc) == 1 else None)
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
            label = f"{dotted}: " if dotted else ""
            self.log.add(where, f"{kind} evaluator {label}{message}",
                         _describe(cls, head) if len(loc) == 1 else None, value=True)


def unknown_target(log: ProblemLog, where: PathKey, name: str, targets: TargetsFile,
                   expected: str) -> None:
    """Report a target name the targets file does not define. When the file has problems of
    its own, the target may be in a part that could not be read: those problems are reported
    too, located in the targets file, rather than a bare "one of none". An unset secret of a
    target that was read hides no name, so it leaves the plain "unknown target"."""
    unread = targets.unread_problems()
    if not unread:
        log.add(where, f"unknown target {name!r}", expected, value=True)
        return
    log.add(where, f"target {name!r} is not defined in {targets.path}, which has "
            f"{len(unread)} problem(s) of its own (reported with it)",
            "a targets file without problems that defines this target", value=True)
    log.extend(unread)


def type_name(value: Any) -> str:
    """How a YAML value's type is named in a problem."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "text",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _has(entry: Any, key: str) -> bool:
    return isinstance(entry, dict) and key in entry


def _describe(cls: type[BaseModel], field: str) -> str | None:
    info = cls.model_fields.get(field)
    if info is None:
        return None
    if info.description:
        return info.description
    annotation = info.annotation
    text = getattr(annotation, "__name__", None) or str(annotation)
    return f"{field}: " + text.replace("typing.", "")


def _name(cls: type[Evaluator], fields: dict[str, Any]) -> str:
    """The name an evaluator being built will have: its own, else its type's."""
    name = fields.get("name")
    return name if isinstance(name, str) and name else cls.type
