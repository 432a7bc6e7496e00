"""Old module paths of assay, kept importable for one release after the layout by stage.

``import assay.runner`` still works and gives ``assay.run.runner`` (the same module
object), with a DeprecationWarning naming the new path. The table goes with the next
release."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the checker sees the loader's base; a run never imports importlib.abc
    from importlib.abc import Loader as _LoaderBase
else:
    _LoaderBase = object

MOVED: dict[str, str] = {
    "assay.agent_eval": "assay.run.policies.databricks",
    "assay.agent_eval.catalog": "assay.run.policies.databricks.catalog",
    "assay.agent_eval.criteria": "assay.run.policies.databricks.criteria",
    "assay.agent_eval.fold": "assay.run.policies.databricks.fold",
    "assay.agent_eval.naming": "assay.run.policies.databricks.naming",
    "assay.agent_eval.options": "assay.run.policies.databricks.options",
    "assay.agent_eval.selection": "assay.run.policies.databricks.selection",
    "assay.agent_eval.setup": "assay.run.policies.databricks.setup",
    "assay.api": "assay.run.score",
    "assay.blocking": "assay._util.blocking",
    "assay.calibrating": "assay.run.calibrate",
    "assay.calibration.stats": "assay.calibration.agreement",
    "assay.compare_files": "assay.analysis.compare_files",
    "assay.compat": "",
    "assay.compat.uipath": "assay.integrations.uipath",
    "assay.compat.uipath.custom": "assay.integrations.uipath.custom",
    "assay.compat.uipath.evaluators": "assay.integrations.uipath.evaluators",
    "assay.compat.uipath.evaluators.base_evaluator": "assay.integrations.uipath.evaluators.base_evaluator",
    "assay.compat.uipath.evaluators.builtin": "assay.integrations.uipath.evaluators.builtin",
    "assay.compat.uipath.models": "assay.integrations.uipath.models",
    "assay.compat.uipath.models.models": "assay.integrations.uipath.models.models",
    "assay.compat.uipath.service": "assay.integrations.uipath.service",
    "assay.connexity": "",
    "assay.connexity.compare": "assay.analysis.compare",
    "assay.connexity.diff": "assay.analysis.diff",
    "assay.connexity.policy": "assay.run.policies.connexity",
    "assay.control_chars": "assay._util.control_chars",
    "assay.conversation": "assay.targets.conversation",
    "assay.convert": "assay.authoring.convert",
    "assay.evaluation": "assay.run.evaluate",
    "assay.gc_pause": "assay._util.gc_pause",
    "assay.jsondata": "assay._util.jsondata",
    "assay.judges.agent_inputs": "assay.judges.agent.inputs",
    "assay.judges.agent_judges": "assay.judges.agent.builtin",
    "assay.judges.agent_prompts": "assay.judges.agent.prompts",
    "assay.judges.answers": "assay.judges.llm.answers",
    "assay.judges.classification": "assay.judges.deterministic.classification",
    "assay.judges.code_judge": "assay.judges.code.script",
    "assay.judges.composite": "assay.judges.combinators.composite",
    "assay.judges.confusion": "assay.judges.deterministic.confusion",
    "assay.judges.connexity": "assay.judges.llm.connexity",
    "assay.judges.connexity_metrics": "assay.judges.llm.connexity_metrics",
    "assay.judges.custom_judges": "assay.judges.agent.custom",
    "assay.judges.expected_tool_calls": "assay.judges.deterministic.expected_tool_calls",
    "assay.judges.json_similarity": "assay.judges.deterministic.json_similarity",
    "assay.judges.jury": "assay.judges.combinators.jury",
    "assay.judges.llm_base": "assay.judges.llm.base",
    "assay.judges.llm_judge": "assay.judges.llm.llm_judge",
    "assay.judges.metrics": "assay.judges.deterministic.metrics",
    "assay.judges.pairwise": "assay.judges.llm.pairwise",
    "assay.judges.prompt_check": "assay.judges.llm.prompt_check",
    "assay.judges.python_scorer": "assay.judges.code.python_scorer",
    "assay.judges.rating": "assay.judges.llm.rating",
    "assay.judges.rubric": "assay.judges.llm.rubric",
    "assay.judges.semantic_similarity": "assay.judges.llm.semantic_similarity",
    "assay.judges.strict_json_similarity": "assay.judges.llm.strict_json_similarity",
    "assay.judges.templates": "assay.judges.llm.templates",
    "assay.judges.tool_calls": "assay.judges.deterministic.tool_calls",
    "assay.judges.trajectory": "assay.judges.deterministic.trajectory",
    "assay.judges.trajectory_judges": "assay.judges.llm.trajectory",
    "assay.judges.uipath_legacy": "assay.judges.deterministic.uipath_legacy",
    "assay.judges.uipath_rag": "assay.judges.llm.uipath_rag",
    "assay.lazy_exports": "assay._util.lazy_exports",
    "assay.limits": "assay._util.limits",
    "assay.listening": "assay._util.listening",
    "assay.llm.config": "assay.types.engine_config",
    "assay.llm.limits": "assay.llm.rate_limits",
    "assay.mocking": "assay.targets.mocking",
    "assay.model": "assay.types",
    "assay.processes": "assay._util.processes",
    "assay.pytest_plugin": "assay.integrations.pytest_plugin",
    "assay.records": "assay.types.records",
    "assay.redact": "assay._util.redact",
    "assay.report.statistics": "assay.report.score_statistics",
    "assay.results": "assay.run.result",
    "assay.rubric_generation": "assay.authoring.rubrics",
    "assay.run_config": "assay.types.config",
    "assay.runner": "assay.run.runner",
    "assay.scaffold": "assay.authoring.scaffold",
    "assay.score_stats": "assay.analysis.score_statistics",
    "assay.scorers": "assay.integrations.mlflow_scorers",
    "assay.server.views": "assay.report.views",
    "assay.spans": "assay.types.spans",
    "assay.sqlite_wal": "assay._util.sqlite_wal",
    "assay.stats": "assay.analysis.significance",
    "assay.sync": "assay.run.sync",
    "assay.testing.answers": "assay.llm.providers.scripted",
    "assay.user_code": "assay._util.user_code",
    "assay.user_paths": "assay._util.user_paths",
    "assay.yaml_source": "assay._util.yaml_source",
}
"""old dotted path -> the module that took its place ("": an old package, now empty)."""


class _Alias(_LoaderBase):
    """Loads an old path as the module at its new path (one object, two names). A plain
    class with the loader's two methods: ``importlib.abc`` costs every start 10 ms."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if not self.new:  # an old package whose modules all moved: a bare package
            package = ModuleType(spec.name)
            package.__path__ = []
            return package
        warnings.warn(f"{spec.name} moved to {self.new}; the old path goes in the next "
                      "release", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new)
        self.spec = module.__spec__  # the import system overwrites it; put it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        if self.spec is not None:
            module.__spec__ = self.spec


class _Finder:
    """Finds the old paths (the meta path finder protocol: ``find_spec`` only)."""

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder first: below an old package path (its ``__path__`` is the new
    folder's) the normal finders would load a second copy of a module under its old
    name. It answers only for the names in MOVED."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
