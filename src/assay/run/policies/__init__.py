"""Scoring policies: how a case's scores become its verdict, what a run aggregates and gates
on, and how two runs of it compare (see :mod:`.base`).

Three are built in, one module each: ``default`` (AgentV's and UiPath's weighted mean in
bands), ``connexity`` (expected outcomes, 0-100, two run dimensions) and ``databricks``
(Databricks' and MLflow's per-judge yes/no and overall assessment). Another is a module with
a class registered by :func:`assay.registry.scoring_policy`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.registry import REGISTRY

if TYPE_CHECKING:
    from assay.run.policies.base import Scale, ScoringPolicy
    from assay.suites.model import Suite
    from assay.types.config import RunConfig


def policy_for(config: RunConfig) -> ScoringPolicy:
    """The policy ``config`` names (``scoring``; None is the default), built for it."""
    cls = REGISTRY.require("scoring_policy", config.scoring or "default", "scoring")
    policy: ScoringPolicy = cls(config)
    return policy


def scale_of(scoring: str | None) -> Scale:
    """How the policy named ``scoring`` shows a case score (a stored run names its policy in
    its summary). A policy this process cannot load (a plugin not installed here) is shown
    on assay's 0-1 scale: a page of runs never fails for one of them."""
    from assay.errors import EvaluationError
    from assay.run.policies.base import Scale

    try:
        cls = REGISTRY.get("scoring_policy", scoring or "default")
    except EvaluationError:
        cls = None
    found = getattr(cls, "scale", None)
    return found if isinstance(found, Scale) else Scale()


def settle(suite: Suite, config: RunConfig) -> tuple[Suite, RunConfig, ScoringPolicy]:
    """What a run of ``suite`` runs: the config with the suite's scoring, thresholds and data
    options filled in, the suite and config as its policy prepares them (judges added, never
    the given objects changed), and the policy. Everything is checked before any call."""
    from assay.run.policies.databricks.options import active, with_sidecar

    config = with_sidecar(config, suite)
    config = config.settled(suite.scoring, suite.run_thresholds, suite.agent_timeout_s,
                            agent_judges=active(config), batch=suite.batch)
    suite, config = policy_for(config).prepare(suite)
    return suite, config, policy_for(config)


__all__ = ["policy_for", "scale_of", "settle"]
