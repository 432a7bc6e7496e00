"""What changed between two runs' snapshots: the agent's prompt and tools, its model and
target, the judge, the scoring, the rest of the run config, and the set of cases.

A comparison reports these beside its verdict, because a changed prompt explains a changed
result and a changed judge makes the two results incomparable: a different judge model, judge
settings (metrics, weights, pass threshold) or scoring measures with another ruler, so the
comparison is flagged ``comparable: false`` with the reasons (and refused under
``--strict-comparability``).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.types.config import RecordedRunConfig
from assay.types.records import RunSnapshot

DIFF_CHARS = 5000
"""How much of a prompt's unified diff is kept."""
TRUNCATED = "\n... (truncated)"
IGNORED_RUN_KEYS = ("concurrency", "dry_run", "cache", "retry", "filter", "repeat",
                    "targets_file", "executor", "ray",
                    "llm_concurrency", "run_id", "batch", "batch_wait", "batch_poll_s")
"""Run settings that change how a run was executed, not what its results mean."""


class _Diff(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FieldChange(_Diff):
    """One setting with different values in the two runs."""

    field: str
    old_value: Any = None
    new_value: Any = None

    def described(self) -> str:
        """The change in a line a person reads: a setting's short values, or which keys of
        a mapping (an evaluator's settings) changed; never whole prompts or Python reprs."""
        old, new = self.old_value, self.new_value
        if isinstance(old, dict) and isinstance(new, dict):
            keys = _changed_keys(old, new)
            parts = [_key_change(key, _at(old, key), _at(new, key))
                     for key in keys[:MAX_KEYS_SHOWN]]
            more = len(keys) - MAX_KEYS_SHOWN
            return f"{self.field}: {', '.join(parts)}" + (f" and {more} more" if more > 0
                                                          else "")
        present = new if old is None else old if new is None else None
        if isinstance(present, dict):  # an evaluator only one run has
            kind = present.get("type")
            return f"{self.field} {'added' if old is None else 'removed'}" + \
                (f" ({brief_value(kind)})" if _short(kind) and kind is not None else "")
        return _key_change(self.field, old, new)


def _key_change(key: str, old: Any, new: Any) -> str:
    """``key: old → new`` when both are short, else the key alone (``prompt``)."""
    if _short(old) and _short(new):
        return f"{key}: {brief_value(old)} → {brief_value(new)}"
    return f"{key} (changed)"


MAX_KEYS_SHOWN = 6
"""Changed keys a description names before it says how many more."""

BRIEF_CHARS = 60
"""The longest value a description shows whole; a longer one is named, not shown."""


def _at(value: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _short(value: Any) -> bool:
    return not isinstance(value, dict | list) and len(_shown(value)) <= BRIEF_CHARS


def brief_value(value: Any) -> str:
    """``value`` as JSON text (a string as it is), cut at :data:`BRIEF_CHARS`."""
    text = _shown(value)
    return text if len(text) <= BRIEF_CHARS else text[:BRIEF_CHARS - 1] + "…"


class PromptDiff(_Diff):
    """The agent's system prompt, line by line."""

    changed: bool = False
    diff: str = ""
    change_ratio: float = Field(default=0.0, description="(added + removed) / max(lines), "
                                "capped at 1")
    added_line_count: int = 0
    removed_line_count: int = 0


class ToolChange(_Diff):
    name: str
    changed_keys: list[str] = Field(default_factory=list)


class ToolsDiff(_Diff):
    """The agent's tools, keyed by function name."""

    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    modified: list[ToolChange] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.modified)


class EvalSetDiff(_Diff):
    """The cases each run holds, and whether the suite file changed."""

    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    common: int = 0
    same_suite: bool = True
    version_changed: bool = False
    baseline_version: str = ""
    candidate_version: str = ""


class ConfigDiff(_Diff):
    prompt_diff: PromptDiff = Field(default_factory=PromptDiff)
    tools_diff: ToolsDiff = Field(default_factory=ToolsDiff)
    agent_model_changed: FieldChange | None = None
    target_changed: FieldChange | None = None
    judge_model_changed: FieldChange | None = None
    judge_settings_changed: list[FieldChange] = Field(default_factory=list)
    simulator_model_changed: FieldChange | None = None
    scoring_changed: FieldChange | None = None
    run_config_changes: list[FieldChange] = Field(default_factory=list)
    target_config_changes: list[FieldChange] = Field(
        default_factory=list, description="settings of the targets (their prompts, models, "
        "URLs; secrets redacted) that differ, by dotted path")
    eval_set: EvalSetDiff = Field(default_factory=EvalSetDiff)
    identity_changes: list[FieldChange] = Field(
        default_factory=list, description="what the runs were made from that differs: the "
        "agent's version, and the git commit, branch and uncommitted changes of the tree")

    @property
    def changed(self) -> bool:
        """Whether anything at all differs between how the two runs were made."""
        return any(getattr(self, name) for name in (
            "agent_model_changed", "target_changed", "judge_model_changed",
            "judge_settings_changed", "simulator_model_changed", "scoring_changed",
            "run_config_changes", "target_config_changes", "identity_changes")) or \
            self.prompt_diff.changed or self.tools_diff.changed


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def prompt_diff(old: str | None, new: str | None) -> PromptDiff:
    """A unified diff (3 lines of context, cut at :data:`DIFF_CHARS`) and how much changed."""
    old, new = old or "", new or ""
    if old == new:
        return PromptDiff()
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    lines = list(difflib.unified_diff(old_lines, new_lines, "baseline", "candidate", n=3))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    text = "".join(lines)
    if len(text) > DIFF_CHARS:
        text = text[:DIFF_CHARS] + TRUNCATED
    ratio = min((added + removed) / max(len(old_lines), len(new_lines), 1), 1.0)
    return PromptDiff(changed=True, diff=text, change_ratio=round(ratio, 4),
                      added_line_count=added, removed_line_count=removed)


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    return tool.get("name") if isinstance(tool.get("name"), str) else None


def tools_diff(old: list[Any] | None, new: list[Any] | None) -> ToolsDiff:
    """Tools keyed by function name: added, removed, and modified (with the keys that
    differ)."""
    before = {n: t for t in old or [] if (n := _tool_name(t)) is not None}
    after = {n: t for t in new or [] if (n := _tool_name(t)) is not None}
    modified = [ToolChange(name=name, changed_keys=_changed_keys(before[name], after[name]))
                for name in sorted(before.keys() & after.keys()) if before[name] != after[name]]
    return ToolsDiff(added=sorted(after.keys() - before.keys()),
                     removed=sorted(before.keys() - after.keys()), modified=modified)


def _changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [prefix or "(value)"] if old != new else []
    keys: list[str] = []
    for key in sorted(set(old) | set(new), key=str):
        where = f"{prefix}.{key}" if prefix else str(key)
        if key not in old or key not in new:
            keys.append(where)
        elif old[key] != new[key]:
            keys.extend(_changed_keys(old[key], new[key], where))
    return keys


def _change(field: str, old: Any, new: Any) -> FieldChange | None:
    return None if old == new else FieldChange(field=field, old_value=old, new_value=new)


def _leaves(value: Any, prefix: str) -> dict[str, Any]:
    """A nested mapping's leaves by dotted path (an empty mapping is a leaf)."""
    if isinstance(value, dict) and value:
        found: dict[str, Any] = {}
        for key, item in value.items():
            found.update(_leaves(item, f"{prefix}.{key}"))
        return found
    return {prefix: value}


def target_changes(old: dict[str, Any], new: dict[str, Any]) -> list[FieldChange]:
    """Every setting of the runs' recorded targets that differs, by dotted path."""
    before, after = _leaves(old, "targets"), _leaves(new, "targets")
    return [change for key in sorted(before.keys() | after.keys())
            if (change := _change(key, before.get(key), after.get(key))) is not None]


def _judge_settings(snapshot: RunSnapshot) -> dict[str, Any]:
    """The judge evaluators' settings, by evaluator name (what decides their scores)."""
    found: dict[str, Any] = {}
    for spec in snapshot.evaluators:
        params = {k: v for k, v in spec.params.items() if k not in ("model",)}
        found[spec.name] = {"type": spec.type, "weight": spec.weight, **params}
    return found


def _settings(run: RecordedRunConfig) -> dict[str, Any]:
    """A run's recorded settings that decide what its results mean. A setting the run does
    not record (one added since it was stored) reads as its default, which is what the run
    had: a newer run is not told apart from an older one by a setting neither changed."""
    return {k: v for k, v in run.model_dump(mode="json").items()
            if k not in IGNORED_RUN_KEYS}


def identity_changes(baseline: RunSnapshot, candidate: RunSnapshot) -> list[FieldChange]:
    """What the runs were made from, where it differs: the agent's version and the git
    tree (commit, branch, uncommitted changes)."""
    def made_from(snapshot: RunSnapshot) -> dict[str, Any]:
        git = snapshot.git
        return {"agent.version": snapshot.agent_version,
                "git.commit": git.commit if git else None,
                "git.branch": git.branch if git else None,
                "git.dirty": git.dirty if git else None}

    before, after = made_from(baseline), made_from(candidate)
    return [change for key in before
            if (change := _change(key, before[key], after[key])) is not None]


def config_diff(baseline: RunSnapshot, candidate: RunSnapshot, baseline_cases: set[str],
                candidate_cases: set[str]) -> ConfigDiff:
    """What differs between two runs' snapshots and case sets."""
    b_extra, c_extra = baseline.model_extra or {}, candidate.model_extra or {}
    b_agent, c_agent = b_extra.get("agent") or {}, c_extra.get("agent") or {}
    b_run, c_run = _settings(baseline.run), _settings(candidate.run)
    before, after = baseline.suite_version(), candidate.suite_version()
    run_changes = [change for key in sorted(set(b_run) | set(c_run))
                   if key not in ("judge_model", "scoring")
                   if (change := _change(f"run.{key}", b_run.get(key), c_run.get(key)))]
    settings: list[FieldChange] = []
    b_judges, c_judges = _judge_settings(baseline), _judge_settings(candidate)
    for name in sorted(set(b_judges) | set(c_judges)):
        change = _change(f"evaluators.{name}", b_judges.get(name), c_judges.get(name))
        if change is not None:
            settings.append(change)
    return ConfigDiff(
        prompt_diff=prompt_diff(b_agent.get("system_prompt"), c_agent.get("system_prompt")),
        tools_diff=tools_diff(b_agent.get("tools"), c_agent.get("tools")),
        agent_model_changed=_change("agent.model", b_agent.get("model"), c_agent.get("model")),
        target_changed=_change("target", baseline.target, candidate.target),
        judge_model_changed=_change("judge.model", ", ".join(baseline.judge_models) or None,
                                    ", ".join(candidate.judge_models) or None),
        judge_settings_changed=settings,
        simulator_model_changed=_change("simulator.model", b_extra.get("simulator_model"),
                                        c_extra.get("simulator_model"))
        if b_extra.get("simulator_model") and c_extra.get("simulator_model") else None,
        scoring_changed=_change("scoring", b_run.get("scoring") or "default",
                                c_run.get("scoring") or "default"),
        run_config_changes=run_changes,
        target_config_changes=target_changes(baseline.targets, candidate.targets),
        identity_changes=identity_changes(baseline, candidate),
        eval_set=EvalSetDiff(
            added=sorted(candidate_cases - baseline_cases),
            removed=sorted(baseline_cases - candidate_cases),
            common=len(baseline_cases & candidate_cases),
            same_suite=baseline.suite_name == candidate.suite_name,
            version_changed=bool(before and after and before != after),
            baseline_version=before[:12], candidate_version=after[:12]))


__all__ = ["ConfigDiff", "FieldChange", "PromptDiff", "ToolsDiff", "config_diff",
           "identity_changes", "prompt_diff", "target_changes", "tools_diff"]
