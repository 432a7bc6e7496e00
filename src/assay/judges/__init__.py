"""Evaluators. Each module registers the evaluator types it defines with the registry; the
registry imports a module when a suite first asks for one of its names
(:mod:`assay.judges.catalog`), so importing this package imports none of them. The classes
below are imported on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._util.lazy_exports import lazy_exports
from assay.judges.registry import EVALUATORS, build, register

if TYPE_CHECKING:
    from assay.judges.base import EvalContext, Evaluator
    from assay.judges.deterministic.match import Contains, ExactMatch
    from assay.judges.llm.llm_judge import LLMJudge
    from assay.judges.llm.semantic_similarity import SemanticSimilarity

_EXPORTS: dict[str, str] = {
    "EvalContext": "assay.judges.base",
    "Evaluator": "assay.judges.base",
    "Contains": "assay.judges.deterministic.match",
    "ExactMatch": "assay.judges.deterministic.match",
    "LLMJudge": "assay.judges.llm.llm_judge",
    "SemanticSimilarity": "assay.judges.llm.semantic_similarity",
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
