"""Evaluators. Each module registers the evaluator types it defines with the registry; the
registry imports a module when a suite first asks for one of its names
(:mod:`assay.judges.catalog`), so importing this package imports none of them. The classes
below are imported on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.judges.registry import EVALUATORS, build, register
from assay.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from assay.judges.base import EvalContext, Evaluator
    from assay.judges.deterministic import Contains, ExactMatch
    from assay.judges.llm_judge import LLMJudge
    from assay.judges.semantic_similarity import SemanticSimilarity

_EXPORTS: dict[str, str] = {
    "EvalContext": "assay.judges.base",
    "Evaluator": "assay.judges.base",
    "Contains": "assay.judges.deterministic",
    "ExactMatch": "assay.judges.deterministic",
    "LLMJudge": "assay.judges.llm_judge",
    "SemanticSimilarity": "assay.judges.semantic_similarity",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "EVALUATORS",
    "Contains",
    "EvalContext",
    "Evaluator",
    "ExactMatch",
    "LLMJudge",
    "SemanticSimilarity",
    "build",
    "register",
]
