"""Why cases regressed: the AI cause analysis of a comparison's regressions.

For each case a comparison found regressed, one judge call reads the candidate's transcript
and scores beside the baseline's scores of the same case, and says which turn and behaviour
caused the regression and a fix to try (:func:`assay.judges.llm.cause_analysis.analyse_case`).
The analysis is stored with the candidate's case (its record's ``cause_analysis``, marked
``compared_with`` the baseline run), so its page shows it, and is returned by case id. It
changes no verdict. The judge is ``judge_model`` when given, else the case's own LLM judge (the
first evaluator of the candidate run that names a model), else the default judge; its cost is
in each analysis's ``usage``.
"""

from __future__ import annotations

from typing import Any

from assay.analysis.compare import Comparison
from assay.judges.base import EvalContext
from assay.judges.llm.cause_analysis import analyse_case
from assay.llm.build import build_engine
from assay.llm.engine import JudgeEngine
from assay.types.records import CaseRecord, CauseAnalysis, Verdict


def _chosen(records: list[CaseRecord]) -> CaseRecord:
    """The repeat to analyse: the first that did not pass, else the first."""
    return next((r for r in records if r.verdict is not Verdict.PASS), records[0])


def _own_model(record: CaseRecord, run: Any) -> str | None:
    """The first model an evaluator of the case names (its own, else the run's)."""
    specs = record.evaluators if record.evaluators is not None else run.config.evaluators
    for spec in specs:
        model = spec.params.get("model")
        if isinstance(model, str) and model:
            return model
    return None


async def analyse_regressions(store: Any, comparison: Comparison, *,
                              judge_model: str | None = None,
                              engine: JudgeEngine | None = None) -> dict[str, CauseAnalysis]:
    """Analyse every regressed case of ``comparison`` (runs of ``store``), store each
    analysis with the candidate's case, and return them by case id."""
    regressed = [c.test_case_id for c in comparison.test_case_comparisons
                 if c.status == "regression"]
    if not regressed:
        return {}
    own_engine = engine is None
    engine = engine or build_engine()
    candidate = store.run_record(comparison.candidate_run_id)
    after: dict[str, list[CaseRecord]] = {}
    before: dict[str, list[CaseRecord]] = {}
    for record in store.case_records(comparison.candidate_run_id):
        after.setdefault(record.case_id, []).append(record)
    for record in store.case_records(comparison.baseline_run_id):
        before.setdefault(record.case_id, []).append(record)
    found: dict[str, CauseAnalysis] = {}
    try:
        for case_id in regressed:
            if case_id not in after or case_id not in before:
                continue
            record = _chosen(after[case_id])
            ctx = EvalContext(engine, override_model=judge_model)
            analysis = await analyse_case(
                engine, ctx.model(_own_model(record, candidate)), record.case,
                record.execution, record.scores, baseline=before[case_id][0].scores,
                compared_with=comparison.baseline_run_id)
            store.set_cause_analysis(record.run_id, record.case_id, record.repeat, analysis)
            found[case_id] = analysis
    finally:
        if own_engine:
            await engine.aclose()
    return found


__all__ = ["analyse_regressions"]
