"""Databricks Agent Evaluation and MLflow 3 evaluation, the assay way.

The judges themselves are evaluators (:mod:`assay.judges.agent.builtin`,
:mod:`assay.judges.agent.custom`); this package is what makes a run of them read as
Databricks and MLflow users expect: which judges run on a case (:mod:`.selection`), the
per-row columns in either naming (:mod:`.naming`), the aggregates, the pass rule and the quality
criteria (:mod:`.fold`, :mod:`.criteria`), and the options that set it all up before any call
(:mod:`.setup`). See docs/databricks-mlflow.md.

Every run asks :func:`prepare` and :func:`fold_for`; a run that sets none of the options
returns at once, without importing the judges or the rest of this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._util.lazy_exports import lazy_exports
from assay.run.policies.databricks.options import active, with_sidecar

if TYPE_CHECKING:
    from assay.run.policies.databricks.catalog import Catalog
    from assay.run.policies.databricks.fold import AssessmentFold, reason
    from assay.run.policies.databricks.naming import named_row
    from assay.suites.model import Suite
    from assay.types.config import RunConfig

_EXPORTS: dict[str, str] = {
    "Catalog": "assay.run.policies.databricks.catalog",
    "AssessmentFold": "assay.run.policies.databricks.fold",
    "reason": "assay.run.policies.databricks.fold",
    "named_row": "assay.run.policies.databricks.naming",
}


def prepare(suite: Suite, config: RunConfig) -> tuple[Suite, RunConfig]:
    """The suite with the run's agent judges added, and the config as it will be recorded
    (see :func:`assay.run.policies.databricks.setup.prepare`)."""
    config = with_sidecar(config, suite)
    if not active(config):
        return suite, config
    from assay.run.policies.databricks import setup

    return setup.prepare(suite, config)


def fold_for(suite: Suite, config: RunConfig) -> AssessmentFold | None:
    """The fold that summarises a run's agent-judge results, when the run uses them."""
    if not active(config):
        return None
    from assay.run.policies.databricks import setup

    return setup.fold_for(suite, config)


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["AssessmentFold", "Catalog", "active", "fold_for", "named_row", "prepare",
           "reason"]
