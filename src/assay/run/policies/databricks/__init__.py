"""Databricks Agent Evaluation and MLflow 3 evaluation, the assay way.

The judges themselves are evaluators (:mod:`assay.judges.agent.builtin`,
:mod:`assay.judges.agent.custom`); this package is what makes a run of them read as
Databricks and MLflow users expect: which judges run on a case (:mod:`.selection`), the
per-row columns in either naming (:mod:`.naming`), the aggregates, the pass rule and the quality
criteria (:mod:`.fold`, :mod:`.criteria`), and the options that set it all up before any call
(:mod:`.setup`). See docs/databricks-mlflow.md.

The policy itself is :class:`.policy.DatabricksPolicy`; a run that sets none of the options
never imports the judges or the rest of this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._util.lazy_exports import lazy_exports
from assay.run.policies.databricks.options import active, with_sidecar

if TYPE_CHECKING:
    from assay.run.policies.databricks.catalog import Catalog
    from assay.run.policies.databricks.fold import AssessmentFold, reason
    from assay.run.policies.databricks.naming import named_row

_EXPORTS: dict[str, str] = {
    "Catalog": "assay.run.policies.databricks.catalog",
    "AssessmentFold": "assay.run.policies.databricks.fold",
    "reason": "assay.run.policies.databricks.fold",
    "named_row": "assay.run.policies.databricks.naming",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["AssessmentFold", "Catalog", "active", "named_row", "reason", "with_sidecar"]
