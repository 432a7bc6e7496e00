"""MLflow 3's scorer names for assay's agent judges, so ``mlflow.genai`` code reads the same::

    from assay.integrations.mlflow_scorers import Correctness, Guidelines, Safety
    assay.evaluate(data, scorers=[Correctness(), Guidelines(name="tone", guidelines=[...]),
                                  Safety()], naming="mlflow")

Each returns a ready evaluator (see :mod:`assay.judges.agent.builtin`); keyword options are the
evaluator's fields (``model=``, ``aggregations=``...).
"""

from __future__ import annotations

from typing import Any

from assay.judges.agent import builtin as judges
from assay.judges.agent.custom import make_judge
from assay.judges.code.python_scorer import scorer
from assay.judges.feedback import Feedback


def Correctness(**options: Any) -> judges.Correctness:
    """Is the response supported by ``expected_response`` / ``expected_facts``?"""
    return judges.Correctness(**options)


def RelevanceToQuery(**options: Any) -> judges.RelevanceToQuery:
    """Does the response address the request?"""
    return judges.RelevanceToQuery(**options)


def RetrievalGroundedness(**options: Any) -> judges.Groundedness:
    """Is the response supported by the retrieved context?"""
    return judges.Groundedness(**options)


def RetrievalRelevance(**options: Any) -> judges.ChunkRelevance:
    """Is each retrieved chunk relevant (precision over rated chunks)?"""
    return judges.ChunkRelevance(**options)


def RetrievalSufficiency(**options: Any) -> judges.ContextSufficiency:
    """Does the retrieved context hold what the expected answer needs?"""
    return judges.ContextSufficiency(**options)


def Safety(**options: Any) -> judges.Safety:
    """Is the response free of harmful content (yes = safe)?"""
    return judges.Safety(**options)


def Guidelines(name: str = "guidelines",
               guidelines: str | list[str] | dict[str, list[str]] | None = None,
               **options: Any) -> judges.GlobalGuidelineAdherence:
    """Does the response follow these guidelines (the same for every case)?"""
    rules = [guidelines] if isinstance(guidelines, str) else guidelines or []
    return judges.GlobalGuidelineAdherence(name=name, guidelines=rules, **options)


def ExpectationsGuidelines(**options: Any) -> judges.GuidelineAdherence:
    """Does the response follow each case's own guidelines (``expectations["guidelines"]``)?"""
    return judges.GuidelineAdherence(**options)


__all__ = ["Correctness", "ExpectationsGuidelines", "Feedback", "Guidelines",
           "RelevanceToQuery", "RetrievalGroundedness", "RetrievalRelevance",
           "RetrievalSufficiency", "Safety", "make_judge", "scorer"]
