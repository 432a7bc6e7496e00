"""Databricks Agent Evaluation and MLflow 3 evaluation, the assay way.

The judges themselves are evaluators (:mod:`assay.judges.agent_judges`,
:mod:`assay.judges.custom_judges`); this package is what makes a run of them read as
Databricks and MLflow users expect: which judges run on a case (:mod:`.selection`), the
per-row columns in either naming (:mod:`.naming`), the aggregates, the pass rule and the quality
criteria (:mod:`.fold`, :mod:`.criteria`), and the options that set it all up before any call
(:mod:`.setup`). See docs/databricks-mlflow.md.
"""

from __future__ import annotations

from assay.agent_eval.catalog import Catalog
from assay.agent_eval.fold import AssessmentFold, reason
from assay.agent_eval.naming import named_row
from assay.agent_eval.setup import active, fold_for, prepare

__all__ = ["AssessmentFold", "Catalog", "active", "fold_for", "named_row", "prepare",
           "reason"]
