"""Turning a run's agent-judge options into evaluators, before anything is called.

:func:`prepare` reads the :class:`~assay.RunConfig` fields ``naming``, ``judges``,
``global_guidelines``, ``request_from_messages`` and ``quality_criteria`` (and the same keys
from a data file's YAML sidecar, for what the config leaves at its default), builds the judges,
and checks everything that can be checked without a call: judge names, the quality criteria
and the names they use. A mistake is a :class:`~assay.ConfigError` naming it.
"""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError
from assay.judges.agent.builtin import BUILT_IN, AgentJudge, GlobalGuidelineAdherence
from assay.judges.base import Evaluator
from assay.judges.code.python_scorer import PythonScorer
from assay.judges.registry import build
from assay.run.policies.databricks import criteria as qc
from assay.run.policies.databricks.catalog import info_for
from assay.run.policies.databricks.fold import AssessmentFold
from assay.run.policies.databricks.options import active, with_sidecar
from assay.run.policies.databricks.selection import default_selection
from assay.suites.model import Suite
from assay.types.config import Gates, RunConfig


def prepare(suite: Suite, config: RunConfig) -> tuple[Suite, RunConfig]:
    """The suite with the run's agent judges added, and the config as it will be recorded
    (``judges`` resolved to a list, or ``"default"`` for the per-case selection)."""
    config = with_sidecar(config, suite)
    if not active(config):
        return suite, config
    evaluators = list(suite.evaluators)
    have = {e.name for e in evaluators}
    own_cases = any(item.evaluators is not None for item in suite.cases)
    judges = config.judges
    if judges is None and not evaluators and not own_cases:
        judges = "default"
    wanted = list(BUILT_IN) if judges == "default" else list(judges or [])
    unknown = [j for j in wanted if j not in BUILT_IN]
    if unknown:
        raise ConfigError(f"unknown judge(s) {', '.join(map(repr, unknown))}; the built-in "
                          f"judges are {', '.join(BUILT_IN)} (custom judges go in "
                          "evaluators= or scorers=)", code="unknown_judge")
    if "global_guideline_adherence" in wanted and not config.global_guidelines:
        if judges == "default":
            wanted.remove("global_guideline_adherence")
        else:
            raise ConfigError("judge global_guideline_adherence needs global_guidelines "
                              "(a list of guidelines, or named groups of them)",
                              code="missing_global_guidelines")
    if config.global_guidelines and "global_guideline_adherence" not in wanted and \
            not any(isinstance(e, GlobalGuidelineAdherence) for e in evaluators):
        wanted.append("global_guideline_adherence")
    for name in wanted:
        if name in have:
            continue  # rebuilt from a stored run already
        spec: dict[str, Any] = {"type": name}
        if name == "global_guideline_adherence":
            spec["guidelines"] = config.global_guidelines
        evaluators.append(build(spec, f"judges: {name}"))
        have.add(name)
    evaluators = [_with_run_options(e, config) for e in evaluators]
    names = [e.name for e in evaluators]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ConfigError(f"evaluator name(s) {', '.join(doubled)} used more than once (a "
                          "judge from judges= and an evaluator of the same name); give each "
                          "a distinct name", code="duplicate_evaluator_name")
    if config.quality_criteria:
        check_criteria(config, suite, evaluators)
    update: dict[str, Any] = {"judges": judges if judges == "default" else
                              (list(judges) if judges else None)}
    gates = config.gates
    if gates.max_failed == 0 or gates.max_errors == 0:
        # The pass rule (every answer yes, no error) replaces the case-band gates.
        update["gates"] = Gates(
            min_mean_score=gates.min_mean_score,
            max_failed=None if gates.max_failed == 0 else gates.max_failed,
            max_errors=None if gates.max_errors == 0 else gates.max_errors)
    config = config.model_copy(update=update)
    selected = suite.model_copy(update={"evaluators": evaluators})
    if judges == "default":
        selected = selected.model_copy(update={"select": default_selection})
    return selected, config


def _with_run_options(evaluator: Evaluator, config: RunConfig) -> Evaluator:
    """An agent judge with the run's ``request_from_messages`` and ``retrieval_per`` where
    it sets neither itself: a copy, never the caller's."""
    if not isinstance(evaluator, AgentJudge):
        return evaluator
    update = {key: getattr(config, key) for key in ("request_from_messages", "retrieval_per")
              if key not in evaluator.model_fields_set}
    return evaluator.model_copy(update=update) if update else evaluator


def check_criteria(config: RunConfig, suite: Suite, evaluators: list[Evaluator]) -> None:
    """Parse the quality criteria and refuse names no scorer of the run has."""
    conditions = qc.parse(config.quality_criteria or "")
    known: set[str] = set()
    for index, evaluator in enumerate(evaluators):
        info = info_for(evaluator.spec(), index)
        known |= {info.name, info.mlflow_name}
        if info.kind == "RETRIEVAL":
            known |= {f"{info.name}/precision", f"{info.mlflow_name}/precision"}
        groups: list[str] = []
        if isinstance(evaluator, GlobalGuidelineAdherence) and \
                isinstance(evaluator.guidelines, dict):
            groups = list(evaluator.guidelines)
        elif evaluator.type == "guideline_adherence":
            groups = sorted({k for item in suite.cases for k in item.case.named_guidelines})
        for group in groups:
            known |= {f"{info.name}/{group}", f"{info.mlflow_name}/{group}"}
    open_ended = any(isinstance(e, PythonScorer) for e in evaluators) or \
        suite.case_source is not None
    qc.check_names(conditions, known, open_ended, config.naming)


def assessment_fold(suite: Suite, config: RunConfig) -> AssessmentFold | None:
    """The fold that summarises a run's agent-judge results, when the run uses them."""
    if not active(config):
        return None
    return AssessmentFold(config, [e.spec() for e in suite.evaluators])
