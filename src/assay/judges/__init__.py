"""Evaluators. Importing this package imports every module in it, and so registers every
built-in evaluator type with the registry (a new module needs no edit here)."""

import importlib
import pkgutil

from assay.judges.base import EvalContext, Evaluator
from assay.judges.deterministic import Contains, ExactMatch
from assay.judges.llm_judge import LLMJudge
from assay.judges.registry import EVALUATORS, build, register
from assay.judges.semantic_similarity import SemanticSimilarity

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

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
