"""What each score of a run is, in Databricks' and MLflow's terms.

A run's evaluators are known by their recorded specs (type and parameters), so a stored run
is reported the same way as a live one. From a spec comes a :class:`JudgeInfo`: the kind of
assessment (Databricks' ``ANSWER``, ``RETRIEVAL_LIST``, ``RETRIEVAL``, the computed
``GROUND_TRUTH``, or ``METRIC`` for everything else), the MLflow name, the aggregations. A
case record then becomes a list of :class:`Assessment`: one per score, or one per part for a
score made of named judgements (guideline groups, several feedbacks of one scorer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from assay.judges.feedback import is_measurement, numeric
from assay.judges.registry import evaluator_class
from assay.types.records import CaseRecord, EvaluatorSpec
from assay.types.score import Score

ANSWER, RETRIEVAL_LIST, RETRIEVAL = "ANSWER", "RETRIEVAL_LIST", "RETRIEVAL"
GROUND_TRUTH, METRIC, SESSION = "GROUND_TRUTH", "METRIC", "SESSION"
RATED = (ANSWER, RETRIEVAL_LIST, SESSION)
"""Kinds rated yes/no once per case: they take part in the overall assessment (a session
judge rates the case's whole conversation)."""

OVERALL_ORDER = ("correctness", "groundedness", "relevance_to_query", "safety",
                 "guideline_adherence", "global_guideline_adherence", "context_sufficiency")
"""The order in which the overall assessment looks for the first "no" (then custom judges,
in the order they were given)."""


@dataclass(frozen=True)
class JudgeInfo:
    """An evaluator as the agent-judge reports see it."""

    name: str
    type: str
    kind: str
    mlflow_name: str
    aggregations: tuple[str, ...] = ("mean",)
    splits: bool = False
    order: int = 0


def info_for(spec: EvaluatorSpec, order: int = 0) -> JudgeInfo:
    """The :class:`JudgeInfo` of a recorded evaluator."""
    cls = evaluator_class(spec.type)
    params = spec.params or {}
    kind = str(params.get("assessment_type") or getattr(cls, "ASSESSMENT", METRIC))
    own = getattr(cls, "MLFLOW_NAME", "") if cls is not None else ""
    mlflow_name = own if own and spec.name == spec.type else spec.name
    aggregations = params.get("aggregations")
    if not isinstance(aggregations, list) or not aggregations:
        aggregations = ["mean"]
    return JudgeInfo(name=spec.name, type=spec.type, kind=kind, mlflow_name=mlflow_name,
                     aggregations=tuple(str(a) for a in aggregations),
                     splits=bool(getattr(cls, "PARTS_ARE_ASSESSMENTS", False)), order=order)


class Catalog:
    """The run's evaluators by name, with a case's own evaluators taking precedence."""

    def __init__(self, specs: Iterable[EvaluatorSpec]) -> None:
        self.infos = {s.name: info_for(s, i) for i, s in enumerate(specs)}

    def info(self, name: str, record: CaseRecord | None = None) -> JudgeInfo:
        if record is not None and record.evaluators:
            for index, spec in enumerate(record.evaluators):
                if spec.name == name:
                    return info_for(spec, index)
        found = self.infos.get(name)
        if found is None:
            found = JudgeInfo(name=name, type="", kind=METRIC, mlflow_name=name,
                              order=len(self.infos))
        return found


@dataclass
class Assessment:
    """One judgement of one case, named as assay names it (``name``) and as MLflow does."""

    name: str
    info: JudgeInfo
    score: Score

    @property
    def mlflow_name(self) -> str:
        base = self.info.name
        if self.name == base:
            return self.info.mlflow_name
        if self.name.startswith(base + "/"):
            return self.info.mlflow_name + self.name[len(base):]
        return self.name

    @property
    def kind(self) -> str:
        return self.info.kind


def assessments(record: CaseRecord, catalog: Catalog) -> list[Assessment]:
    """The case's judgements: each score, or each part of a score made of named ones."""
    found: list[Assessment] = []
    for score in record.scores:
        info = catalog.info(score.name, record)
        if info.splits and score.parts and (score.details or {}).get("parts_are_assessments"):
            found.extend(Assessment(part.name, info, part) for part in score.parts)
        else:
            found.append(Assessment(score.name, info, score))
    return found


# -- reading a score ------------------------------------------------------------------------


def rating(score: Score) -> str | None:
    """A yes/no score's rating ("yes"/"no"); None without a value or on another scale."""
    if score.value is None:
        return None
    if score.label in ("yes", "no"):
        return score.label
    if score.scale in ("yes/no", "bool"):
        return "yes" if score.value == 1.0 else "no"
    return None


def message(score: Score) -> str | None:
    """Why a score has no value: the error (``code: message``) or the skip reason."""
    if score.error is not None:
        return f"{score.error.code}: {score.error.message}"
    if score.skipped is not None and not is_measurement(score):
        return score.skipped
    return None


def native(score: Score) -> Any:
    """The value as the judge or scorer gave it (MLflow's ``/value``): yes/no, a bool, a
    number or a category; None for an error or a skip."""
    if score.error is not None:
        return None
    if is_measurement(score):
        return score.raw
    if score.value is None:
        return None
    if score.scale == "pass_if":  # a value a pass_if checked: the value, not the check
        return score.raw
    if score.scale == "yes/no":
        return rating(score)
    if score.scale == "label":  # a judge's category (user_frustration's "resolved")
        return score.label
    if score.scale == "bool":
        return bool(score.value == 1.0)
    if isinstance(score.raw, int | float) and not isinstance(score.raw, bool):
        return score.raw
    return score.value


def number(score: Score) -> float | None:
    """The value as MLflow aggregates it (yes 1, no 0, numbers as they are)."""
    return numeric(native(score))


def chunks(score: Score) -> list[dict[str, Any]]:
    found = (score.details or {}).get("chunks")
    return found if isinstance(found, list) else []


def precision(score: Score, chunk_errors: str = "exclude") -> float | None:
    """Chunk precision: yes over rated chunks (``exclude``), or yes over rated and errored
    chunks (``count_as_irrelevant``, MLflow 3's rule); empty chunks never count; None when
    the denominator is empty."""
    entries = chunks(score)
    if not entries:
        return score.value if score.scale == "precision" else None
    return _precision_of(entries, chunk_errors)


def span_precisions(score: Score, chunk_errors: str = "exclude") -> list[float]:
    """One precision per retriever span the chunks came from (MLflow 3 gives one
    ``retrieval_relevance`` feedback per top-level retriever span); a span with no rated
    chunk has none. Chunks from the data (no span) count as one span."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for entry in chunks(score):
        groups.setdefault(entry.get("span_id"), []).append(entry)
    found = [_precision_of(entries, chunk_errors) for entries in groups.values()]
    return [p for p in found if p is not None]


def spans(score: Score) -> list[dict[str, Any]]:
    """A whole-context judgement made once per retriever span: each span's rating,
    rationale and error (``details["spans"]``); [] for a judgement made once."""
    found = (score.details or {}).get("spans")
    return found if isinstance(found, list) else []


def _precision_of(entries: list[dict[str, Any]], chunk_errors: str) -> float | None:
    rated = [e for e in entries if e.get("rating") is not None]
    errored = [e for e in entries if e.get("error")]
    yes = sum(1 for e in rated if e.get("rating") == "yes")
    total = len(rated) + (len(errored) if chunk_errors == "count_as_irrelevant" else 0)
    return yes / total if total else None


def chunk_error_text(entry: dict[str, Any]) -> str | None:
    error = entry.get("error")
    if not error:
        return None
    if isinstance(error, dict):
        return f"{error.get('code')}: {error.get('message')}"
    return str(error)
