"""Targets files: named ways of running an agent, with secrets taken from the environment.

A targets file (``.assay/targets.yaml``, or AgentV's ``.agentv/targets.yaml``) lists::

    targets:
      - name: my_agent
        provider: python            # python | callable | cli | command | http | recorded,
        function: agent:run         # or a judge-engine model such as openai:gpt-4o-mini
        judge_target: judge         # optional: the target whose model judges this one
        workers: 4                  # optional: concurrent cases for this target
        resources: {GPU: 1}         # optional: what a Ray worker running it asks for
      - name: api
        provider: http
        url: https://agent.example.com/chat
        headers: {Authorization: "Bearer ${{ AGENT_TOKEN }}"}

``${{ VAR }}`` is replaced at load time from the environment, else from a ``.env`` file beside
the targets file. The values are secrets: they live only in :attr:`TargetConfig.settings`,
never in ``repr``, and :meth:`TargetsFile.redacted` gives the config as written (placeholders
kept) for run snapshots. A target registers its secrets (``${{ VAR }}`` values, and values
pasted into fields and headers named like credentials) with :mod:`assay._util.redact` when it is
read, so an agent that echoes one has it hidden wherever its answer is written. Every
problem in a file is reported at once, located.
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay._util.limits import CONCURRENCY, DELAY_MS, TIMEOUT_S, Bound
from assay._util.redact import REDACTED, env_label, register, register_environment, scrub
from assay._util.user_code import user_code
from assay._util.yaml_source import (
    Mark,
    Problem,
    ProblemLog,
    SourceMap,
    YamlSyntaxError,
    load_yaml_file,
)
from assay.errors import ConfigError
from assay.llm.models import KEY_ENV_VARS, KNOWN_PROVIDERS, parse_model

if TYPE_CHECKING:
    from assay.llm.engine import JudgeEngine
    from assay.targets.base import Target

SECRET = re.compile(r"\$\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""``${{ VAR }}``: a value taken from the environment when the file is loaded."""

TARGETS_FILES = (".assay/targets.yaml", ".assay/targets.yml",
                 ".agentv/targets.yaml", ".agentv/targets.yml")
"""Where targets files are looked for in each directory, in order of preference."""

COMMON_FIELDS = ("name", "provider", "judge_target", "grader_target", "workers", "resources")
JUDGE_FIELDS = ("judge_target", "grader_target")
"""The field naming a target's judge: ``judge_target`` (AgentV 2) or ``grader_target``
(AgentV 4), one meaning."""
TOLERATED_FIELDS = ("max_retries", "provider_batching", "subagent_mode_allowed")
"""AgentV target fields that mean nothing here but should not make a shared file invalid."""

_SENSITIVE = re.compile(r"(key|token|secret|password|passwd|auth(?!or)|cookie|credential)",
                        re.I)
"""Field and header names whose values are credentials."""


@dataclass(frozen=True)
class FieldSpec:
    """What a provider field accepts: Python types, and how to say so in a problem; for a
    numeric limit, its range too (a timeout of ``.inf`` would wait without end)."""

    types: tuple[type, ...]
    expected: str
    bound: Bound | None = None


TIMEOUT_FIELD = FieldSpec((int, float), f"seconds: {TIMEOUT_S.expected}", TIMEOUT_S)
"""A target's timeout, in seconds."""
DELAY_MS_FIELD = FieldSpec((int, float), f"milliseconds: {DELAY_MS.expected}", DELAY_MS)
"""A delay a target waits, in milliseconds."""


# provider name -> (module under assay.targets, class name)
_KINDS: dict[str, tuple[str, str]] = {
    "python": ("callable", "CallableTarget"),
    "callable": ("callable", "CallableTarget"),
    "cli": ("command", "CommandTarget"),
    "command": ("command", "CommandTarget"),
    "http": ("http", "HttpTarget"),
    "recorded": ("recorded", "RecordedTarget"),
    "transcript": ("transcript", "TranscriptTarget"),
    "mock": ("mock", "MockTarget"),
    # AgentV's coding agents, as command targets with their usual command lines
    "claude-code": ("agents", "ClaudeCodeTarget"),
    "claude": ("agents", "ClaudeCodeTarget"),
    "claude-cli": ("agents", "ClaudeCodeTarget"),
    "codex": ("agents", "CodexTarget"),
    "codex-cli": ("agents", "CodexTarget"),
    "copilot": ("agents", "CopilotTarget"),
    "copilot-cli": ("agents", "CopilotTarget"),
    "pi": ("agents", "PiTarget"),
    "pi-coding-agent": ("agents", "PiTarget"),
}

LITELLM_PROVIDERS: dict[str, str] = {
    "gemini": "gemini", "google": "gemini", "google-gemini": "gemini",
    "openrouter": "openrouter", "mistral": "mistral", "groq": "groq",
    "deepseek": "deepseek", "xai": "xai", "together": "together_ai", "cohere": "cohere",
    "bedrock": "bedrock", "vertex": "vertex_ai",
}
"""AgentV's provider names (and a few more) that reach their model through LiteLLM."""

DEFAULT_MODELS = {"gemini": "gemini-2.5-flash"}
"""AgentV's model for a provider written without one."""

INLINE_KEYS = ("endpoint", "resource", "resourceName", "api_key", "apiKey", "base_url",
               "api_version", "version")
"""Settings that give a chat model its own endpoint or key, instead of the environment's."""
_CHAT_MODEL = ("chat_model", "ChatModelTarget")
PROVIDERS = (*_KINDS, "<model> (e.g. openai:gpt-4o-mini, fake:x, http://host/v1#model)",
             "azure | anthropic | openai | gemini | ... with model (and endpoint, api_key)")


@dataclass(repr=False)
class TargetConfig:
    """One target of a targets file.

    ``settings`` holds the provider fields with secrets filled in; ``written`` holds them as
    written, ``${{ VAR }}`` kept. Only ``settings`` may reach an agent; only ``written`` may
    reach a log, a store or an error message (see :meth:`scrub`).
    """

    name: str
    provider: str
    judge_target: str | None = None
    workers: int | None = None
    resources: dict[str, float] | None = None
    """What a worker running this target asks a Ray cluster for (``{GPU: 1}``)."""
    settings: dict[str, Any] = field(default_factory=dict)
    written: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    source: Path | None = None
    mark: Mark | None = None
    missing_secrets: list[Problem] = field(default_factory=list)
    """Problems for ``${{ VAR }}`` that are not set: they matter only to a run that uses
    this target (an unused target's missing key must not block a run)."""

    def get(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)

    def kind(self) -> str | None:
        """``callable``, ``command``, ``http``, ``recorded``, ``chat_model``, a target kind an
        installed plugin registered, or None."""
        known = _KINDS.get(self.provider.lower())
        if known is not None:
            return _kind_name(known)
        if self.model_string() is not None:
            return "chat_model"
        return self.provider if _plugin_target(self.provider) is not None else None

    def model_string(self) -> str | None:
        """The judge-engine model this target names, when it is a chat model."""
        return chat_model_string(self.provider, self.settings, self.name)

    def redacted(self) -> dict[str, Any]:
        """The target as written: interpolated secrets shown as ``${{ VAR }}``.

        Literal values of fields that look secret (``api_key``, ``Authorization``...) are
        masked too, in case a secret was pasted in rather than referenced.
        """
        out: dict[str, Any] = {"name": self.name, "provider": self.provider}
        if self.judge_target is not None:
            out["judge_target"] = self.judge_target
        if self.workers is not None:
            out["workers"] = self.workers
        if self.resources is not None:
            out["resources"] = dict(self.resources)
        out.update(_mask(self.written))
        return out

    def __post_init__(self) -> None:
        self.register_secrets()

    def register_secrets(self) -> None:
        """Make this target's secrets known to every scrub of the process (see
        :mod:`assay._util.redact`): its ``${{ VAR }}`` values (labelled with the variable), the
        values written literally in fields and headers named like credentials (``api_key``,
        ``Authorization``, ``X-Api-Key``...), and the environment's keys, which an agent
        inherits. A literal header that names no credential (``X-Client: assay``) is not a
        secret: hiding its value would garble every text that holds the word."""
        register({value: env_label(var) for var, value in self.secrets.items()})
        register(_literal_secrets(self.written))
        register_environment(KEY_ENV_VARS)

    def scrub(self, text: str) -> str:
        """``text`` with every secret value of this target replaced by its placeholder, the
        environment's keys (which an agent inherits) and URL credentials hidden: the judge
        engine's mechanism, :mod:`assay._util.redact`."""
        return scrub(text)

    def __repr__(self) -> str:
        return f"TargetConfig({self.redacted()!r})"

    def input_files(self, base_dir: Path) -> dict[Path, str]:
        """The files this target reads when a run uses it, each with what it is: a Python
        target's module (``function: module:fn`` or ``file.py:fn``, found as it is imported)
        and a recorded target's outputs. No output of a run may be one of them."""
        kind = _KINDS.get(self.provider.lower(), ("", ""))[0]
        if kind == "callable" and isinstance(self.get("function"), str):
            from assay._util.user_code import module_file

            module = module_file(self.get("function"), *function_places(self, base_dir))
            return {module: f"the Python module of target {self.name!r}"} if module else {}
        if kind in ("recorded", "transcript") and isinstance(self.get("path"), str):
            return {base_dir / self.get("path"): f"the recorded outputs of target {self.name!r}"}
        return {}


def function_places(config: TargetConfig, base_dir: Path) -> list[Path]:
    """Where a Python target's module is looked for: the suite's (or project's) directory,
    the targets file's project, then the working directory."""
    places = [base_dir]
    if config.source is not None:
        places.append(project_dir(config.source))
    places.append(Path.cwd())
    return list(dict.fromkeys(p.resolve() for p in places))


@dataclass
class TargetsFile:
    """The targets of one file, by name; ``problems`` is filled when read leniently."""

    path: Path | None
    targets: dict[str, TargetConfig] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        """Where relative paths in the file resolve: the project directory holding
        ``.assay/`` (or ``.agentv/``), else the file's own directory."""
        return project_dir(self.path) if self.path else Path.cwd()

    def names(self) -> list[str]:
        return list(self.targets)

    def unread_problems(self) -> list[Problem]:
        """The problems that may hide a target (a part of the file that could not be read):
        every problem but the unset secrets of targets that were read, whose names are known,
        so a mistyped target name is still answered with the names there are."""
        read = {p for config in self.targets.values() for p in config.missing_secrets}
        return [p for p in self.problems if p not in read]

    def get(self, name: str) -> TargetConfig | None:
        """The named target, or None."""
        return self.targets.get(name)

    def require(self, name: str) -> TargetConfig:
        """The named target, or a ConfigError listing the ones there are; when the file has
        problems of its own (the target may be in a part that could not be read), the error
        lists those problems, located, instead."""
        found = self.targets.get(name)
        if found is None:
            where = f" in {self.path}" if self.path else ""
            unread = self.unread_problems()
            if unread:
                lines = "\n".join(f"  {p}" for p in unread)
                raise ConfigError(f"target {name!r} is not defined{where}, which has "
                                  f"{len(unread)} problem(s):\n{lines}",
                                  code="invalid_targets")
            known = ", ".join(self.targets) or "none"
            raise ConfigError(f"unknown target {name!r}{where}; defined: {known}",
                              code="unknown_target")
        return found

    def redacted(self) -> dict[str, Any]:
        """The whole file as written, secrets as placeholders: safe to store with a run."""
        return {"targets": [t.redacted() for t in self.targets.values()]}

    def input_files(self) -> dict[Path, str]:
        """The file, the ``.env`` files it takes secrets from (whether there is one yet or
        not), and what each of its targets reads (see :meth:`TargetConfig.input_files`)."""
        if self.path is None:
            return {}
        found = {self.path: "the targets file"}
        found.update({env: "the .env file of the targets file"
                      for env in dotenv_files(self.path)})
        for config in self.targets.values():
            found.update(config.input_files(self.base_dir))
        return found


def chat_model_string(provider: str, settings: dict[str, Any],
                      target: str | None = None) -> str | None:
    """``openai:gpt-4o`` from ``provider: openai:gpt-4o``, or ``provider: openai`` plus
    ``model: gpt-4o`` (AgentV's spelling; ``deployment`` for Azure, LiteLLM for ``gemini`` and
    the like); None when the provider names no judge-engine model. A model given its own
    ``endpoint``, ``api_key`` or ``base_url`` is registered under the target's name (see
    :mod:`assay.llm.providers.inline`)."""
    lowered = provider.lower()
    if lowered in _KINDS:
        return None
    try:
        return parse_model(provider).name
    except ConfigError:
        pass
    name = {"azure-openai": "azure"}.get(lowered, lowered)
    model = settings.get("model") or settings.get("deployment") or \
        settings.get("deploymentName") or DEFAULT_MODELS.get(LITELLM_PROVIDERS.get(name, ""))
    if not isinstance(model, str) or not model:
        return None
    kind = "litellm" if name in LITELLM_PROVIDERS else name
    if kind == "litellm":
        model = f"{LITELLM_PROVIDERS[name]}/{model}"
    elif name not in KNOWN_PROVIDERS or name in ("local", "fake", "custom", "target"):
        return None if name not in ("local", "fake") else _parsed(f"{name}:{model}")
    if target is not None and any(settings.get(k) for k in INLINE_KEYS):
        from assay.llm.providers.inline import inline_model

        return inline_model(target, kind, model, settings)
    return _parsed(f"{kind}:{model}")


def _parsed(text: str) -> str | None:
    try:
        return parse_model(text).name
    except ConfigError:
        return None


def _kind_name(entry: tuple[str, str]) -> str:
    """A kind is its module's name, or ``module.Class`` where a module holds several."""
    classes = {v[1] for v in _KINDS.values() if v[0] == entry[0]}
    return entry[0] if len(classes) == 1 else f"{entry[0]}.{entry[1]}"


def builtin_kinds() -> set[str]:
    """Every ``provider:`` name and kind the targets file resolves itself (reserved: a
    plugin's target kind cannot take one)."""
    return {*_KINDS, "chat_model", *(_kind_name(v) for v in _KINDS.values())}


def target_class(kind: str) -> type[Target]:
    """The Target class for a kind; imported on demand so unused kinds cost nothing."""
    plugin = None if kind == "chat_model" or any(
        _kind_name(v) == kind for v in _KINDS.values()) else _plugin_target(kind)
    if plugin is not None:
        return plugin
    module, cls = _CHAT_MODEL if kind == "chat_model" else next(
        v for v in _KINDS.values() if _kind_name(v) == kind)
    found: type[Target] = getattr(importlib.import_module(f"assay.targets.{module}"), cls)
    return found


def _plugin_target(name: str) -> type[Target] | None:
    """A Target class an installed plugin registered under ``name`` (``@target_kind``)."""
    from assay.registry import REGISTRY

    found: type[Target] | None = REGISTRY.get("target", name)
    return found


def find_targets_file(start: Path) -> Path | None:
    """The nearest targets file walking up from ``start``; ``.assay`` before ``.agentv``."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for directory in (here, *here.parents):
        for name in TARGETS_FILES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
    return None


def read_targets(path: Path | str, *, strict: bool = True,
                 environ: dict[str, str] | None = None) -> TargetsFile:
    """Read a targets file, filling in secrets.

    ``strict`` raises one ConfigError listing every problem; otherwise the problems are kept
    in ``TargetsFile.problems`` and the usable targets returned (for ``assay validate``).
    """
    path = Path(path)
    result = TargetsFile(path)
    try:
        loaded = load_yaml_file(path)
    except YamlSyntaxError as exc:
        result.problems.append(exc.problem)
        return _finish(result, strict)
    log = ProblemLog(loaded.source)
    log.extend(loaded.problems)
    env = {**read_dotenv(path), **(os.environ if environ is None else environ)}
    _parse(loaded.data, loaded.source, log, env, result)
    result.problems = log.sorted()
    return _finish(result, strict)


def load_targets(path: Path | str) -> TargetsFile:
    """Read a targets file for running: any problem (a missing secret too) raises."""
    return read_targets(path, strict=True)


def validate_targets(path: Path | str) -> list[Problem]:
    """Every problem in a targets file, located; empty when it is usable."""
    return read_targets(path, strict=False).problems


def load_targets_for(start: Path | str, explicit: Path | str | None = None, *,
                     strict: bool = True) -> TargetsFile | None:
    """The targets a suite runs with: ``explicit``, else the nearest targets file walking up
    from ``start`` (the suite file or its directory); None when there is none."""
    if explicit is not None:
        if not Path(explicit).is_file():
            raise ConfigError(f"targets file {explicit} does not exist", code="invalid_targets")
        return read_targets(explicit, strict=strict)
    found = find_targets_file(Path(start))
    return read_targets(found, strict=strict) if found else None


def project_dir(targets_path: Path) -> Path:
    """The directory a targets file belongs to (above ``.assay``/``.agentv``)."""
    directory = targets_path.resolve().parent
    return directory.parent if directory.name in (".assay", ".agentv") else directory


def target_from_dict(raw: dict[str, Any], environ: dict[str, str] | None = None
                     ) -> TargetConfig:
    """One target given inline (``{"name": ..., "provider": ...}``), secrets filled from the
    environment; raises ConfigError listing its problems."""
    source = SourceMap(Mark("<target>"))
    log = ProblemLog(source)
    env = dict(os.environ if environ is None else environ)
    config = _target(raw, (), source, log, env)
    if log.problems or config is None:
        raise ConfigError("; ".join(p.message + (f" (expected: {p.expected})" if p.expected
                                                 else "") for p in log.problems)
                          or "invalid target", code="invalid_targets")
    config.source = None
    return config


def build_target(config: TargetConfig | dict[str, Any], base_dir: Path | str,
                 engine: JudgeEngine | None = None) -> Target:
    """The Target for a config; relative paths in it resolve against ``base_dir``."""
    if isinstance(config, dict):
        config = target_from_dict(config)
    kind = config.kind()
    if kind is None:
        raise ConfigError(_unknown_provider(config.name, config.provider),
                          code="unknown_provider")
    cls = target_class(kind)
    problems = check_fields(cls, config.settings)
    if problems:
        raise ConfigError(f"target {config.name!r}: " + "; ".join(
            f"{key}: {message} (expected: {expected})" for key, message, expected, _ in problems),
            code="invalid_targets")
    with user_code(f"target {config.name!r}"):  # a plugin's target kind may exit
        target: Target = cls.from_config(  # type: ignore[attr-defined]
            config, Path(base_dir), engine)
    target.name = config.name
    target.workers = config.workers
    target.judge_target = config.judge_target
    target.resources = dict(config.resources) if config.resources else None
    return target


def check_fields(cls: type[Target], settings: dict[str, Any]
                 ) -> list[tuple[str, str, str, bool]]:
    """(field, message, expected, about the value) for unknown, missing and mistyped
    provider fields."""
    fields: dict[str, FieldSpec] = getattr(cls, "FIELDS", {})
    required: tuple[tuple[str, ...], ...] = getattr(cls, "REQUIRED", ())
    problems: list[tuple[str, str, str, bool]] = []
    for key, value in settings.items():
        spec = fields.get(key)
        if spec is None:
            if key in TOLERATED_FIELDS or key.startswith("retry_"):
                continue
            problems.append((key, f"unknown field {key!r} for this provider",
                             "one of " + ", ".join((*COMMON_FIELDS, *fields)), False))
        elif not _is_a(value, spec.types):
            problems.append((key, f"{_type_name(value)} is not accepted", spec.expected, True))
        elif spec.bound is not None and not spec.bound.accepts(value):
            problems.append((key, f"{value!r} is not accepted", spec.expected, True))
    for alternatives in required:
        if not any(settings.get(k) not in (None, "", []) for k in alternatives):
            names = " or ".join(repr(a) for a in alternatives)
            problems.append((alternatives[0], f"missing {names}",
                             fields[alternatives[0]].expected, False))
    return problems


def dotenv_files(targets_path: Path) -> list[Path]:
    """The ``.env`` files a targets file takes secrets from, nearest first: beside it and,
    for a file in ``.assay``/``.agentv``, in the project directory above it."""
    directory = targets_path.resolve().parent
    places = [directory]
    if directory.name in (".assay", ".agentv"):
        places.append(directory.parent)
    return [place / ".env" for place in places]


def read_dotenv(targets_path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines from the ``.env`` files of :func:`dotenv_files`; nearer files
    win."""
    values: dict[str, str] = {}
    for env in reversed(dotenv_files(targets_path)):
        values.update(_parse_dotenv(env))
    return values


def interpolate(value: Any, env: dict[str, str], used: dict[str, str],
                missing: list[tuple[tuple[Hashable, ...], str]],
                path: tuple[Hashable, ...] = ()) -> Any:
    """``value`` with ``${{ VAR }}`` filled from ``env``; notes the secrets used and the
    variables that are missing (with where they were referenced)."""
    if isinstance(value, str):
        def fill(match: re.Match[str]) -> str:
            var = match.group(1)
            if var not in env:
                missing.append((path, var))
                return match.group(0)
            used[var] = env[var]
            return env[var]

        return SECRET.sub(fill, value)
    if isinstance(value, dict):
        return {k: interpolate(v, env, used, missing, (*path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, used, missing, (*path, i)) for i, v in enumerate(value)]
    return value


# -- reading ------------------------------------------------------------------------------


def _finish(result: TargetsFile, strict: bool) -> TargetsFile:
    if strict and result.problems:
        lines = "\n".join(f"  {p}" for p in result.problems)
        raise ConfigError(f"targets file {result.path} has {len(result.problems)} "
                          f"problem(s):\n{lines}", code="invalid_targets")
    return result


def _parse(data: Any, source: SourceMap, log: ProblemLog, env: dict[str, str],
           result: TargetsFile) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("targets"), list):
        log.add(("targets",) if isinstance(data, dict) else (),
                "a targets file needs a 'targets' list", "targets: [{name, provider, ...}]")
        return
    for key in data:
        if key not in ("targets", "$schema"):
            log.add((key,), f"unknown top-level key {key!r}", "targets")
    judge_refs: list[tuple[tuple[Hashable, ...], str]] = []
    for index, raw in enumerate(data["targets"]):
        path: tuple[Hashable, ...] = ("targets", index)
        config = _target(raw, path, source, log, env)
        if config is None:
            continue
        if config.name in result.targets:
            first = result.targets[config.name].mark
            line = f" (first at line {first.line})" if first and first.line else ""
            log.add((*path, "name"), f"duplicate target name {config.name!r}{line}",
                    "each target name once")
            continue
        result.targets[config.name] = config
        if config.judge_target is not None:
            field = next(k for k in JUDGE_FIELDS if raw.get(k) is not None)
            judge_refs.append(((*path, field), config.judge_target))
    for where, name in judge_refs:
        field = str(where[-1])
        if name not in result.targets:
            log.add(where, f"{field} {name!r} is not a target in this file",
                    "one of " + ", ".join(result.targets), value=True)
        elif result.targets[name].model_string() is None:
            log.add(where, f"{field} {name!r} is not a chat model, so it cannot judge",
                    "a target whose provider is a model such as openai:gpt-4o-mini",
                    value=True)


def _target(raw: Any, path: tuple[Hashable, ...], source: SourceMap, log: ProblemLog,
            env: dict[str, str]) -> TargetConfig | None:
    if not isinstance(raw, dict):
        log.add(path, f"a target must be a mapping, not {_type_name(raw)}",
                "{name, provider, ...}")
        return None
    name, provider = raw.get("name"), raw.get("provider")
    ok = True
    if not isinstance(name, str) or not name.strip():
        log.add((*path, "name") if "name" in raw else path,
                "target has no name" if name is None else "target name must be text",
                "name: a non-empty string", value="name" in raw)
        ok = False
    if not isinstance(provider, str) or not provider.strip():
        log.add((*path, "provider") if "provider" in raw else path,
                f"target {name!r} has no provider" if provider is None
                else "provider must be text", "provider: " + ", ".join(PROVIDERS),
                value="provider" in raw)
        ok = False
    given = [k for k in JUDGE_FIELDS if raw.get(k) is not None]
    judge = raw.get(given[0]) if given else None
    if len(given) > 1 and raw[given[0]] != raw[given[1]]:
        log.add((*path, given[1]), f"both {given[0]} and {given[1]} name the judge, "
                "differently", "one of them (grader_target is AgentV 4's name for "
                "judge_target)", value=True)
        ok = False
    if judge is not None and not isinstance(judge, str):
        log.add((*path, given[0]), f"{given[0]} must be a target name", "a string",
                value=True)
        ok = False
    workers = raw.get("workers")
    if workers is not None and (not isinstance(workers, int) or not CONCURRENCY.accepts(workers)):
        log.add((*path, "workers"), f"workers {workers!r} is not accepted",
                CONCURRENCY.expected, value=True)
        ok = False
    resources = raw.get("resources")
    if resources is not None and not _resources_ok(resources):
        log.add((*path, "resources"), f"resources {resources!r} is not accepted",
                "a mapping of resource names (CPU, GPU, memory, or a custom one) to finite "
                "numbers >= 0, such as {GPU: 1}", value=True)
        ok = False
    written = {k: v for k, v in raw.items() if k not in COMMON_FIELDS}
    used: dict[str, str] = {}
    missing: list[tuple[tuple[Hashable, ...], str]] = []
    settings = interpolate(written, env, used, missing)
    unset: list[Problem] = []
    for where, var in missing:
        dotted = ".".join(str(p) for p in where)
        log.add((*path, *where), f"target {name!r}, field {dotted!r}: environment variable "
                f"{var} is not set", f"{var} in the environment or in a .env file beside "
                "the targets file", value=True)
        unset.append(log.problems[-1])
    if not ok:
        return None
    assert isinstance(name, str) and isinstance(provider, str)
    config = TargetConfig(name=name, provider=provider, judge_target=judge, workers=workers,
                          resources={str(k): float(v) for k, v in resources.items()}
                          if resources else None,
                          settings=settings, written=written, secrets=used,
                          source=Path(source.root.file), mark=source.locate(path),
                          missing_secrets=unset)
    kind = config.kind()
    if kind is None:
        log.add((*path, "provider"), _unknown_provider(name, provider),
                "one of " + ", ".join(PROVIDERS), value=True)
        return config
    for key, message, expected, about_value in check_fields(target_class(kind), settings):
        log.add((*path, key), f"target {name!r}: {message}", expected, value=about_value)
    return config


def _unknown_provider(name: str, provider: str) -> str:
    return (f"target {name!r}: unknown provider {provider!r}; known: "
            + ", ".join(PROVIDERS))


def _parse_dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return values
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[key.strip()] = value
    return values


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key) for v in value]
    if _is_literal_secret(value, key):
        return "<redacted>"
    return value


def _literal_secrets(value: Any, key: str = "") -> dict[str, str]:
    """The values of fields named like secrets (``api_key``, ``Authorization``...) written
    literally (pasted in rather than referenced), each to be hidden as ``***``: what
    :func:`_mask` masks in a stored config."""
    found: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            found.update(_literal_secrets(v, str(k)))
    elif isinstance(value, list):
        for v in value:
            found.update(_literal_secrets(v, key))
    elif _is_literal_secret(value, key):
        found[value] = REDACTED
    return found


def _is_literal_secret(value: Any, key: str) -> bool:
    return isinstance(value, str) and bool(_SENSITIVE.search(key)) and bool(value) \
        and not SECRET.search(value)


def _is_a(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, types)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "text",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def _resources_ok(value: Any) -> bool:
    """Whether ``value`` is what Ray takes as a task's resources."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and k and isinstance(v, int | float) and not isinstance(v, bool)
        and math.isfinite(v) and v >= 0 for k, v in value.items())
