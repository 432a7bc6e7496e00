"""The default gates' words count what they say they count: with repeats, a failed case once
however many of its repeats failed, and the executions an evaluator error left unscored as
executions, not cases."""

from __future__ import annotations

from assay.run.policies.default import count_gate_failures
from assay.types.case import Case
from assay.types.config import RunConfig
from assay.types.execution import Execution
from assay.types.records import CaseRecord, RunSummary, SummaryBuilder, Verdict
from assay.types.score import Score


def _summary(repeats: int) -> RunSummary:
    builder = SummaryBuilder(track_cases=repeats > 1)
    for repeat in range(repeats):
        for case_id, verdict in (("ok", Verdict.PASS), ("broken", Verdict.ERROR)):
            error = {"code": "judge_failed", "message": "no answer"} \
                if verdict is Verdict.ERROR else None
            score = Score(name="judge", value=None if error else 1.0, error=error)
            builder.add(CaseRecord(case_id=case_id, case=Case(id=case_id), repeat=repeat,
                                   execution=Execution(), scores=[score], verdict=verdict,
                                   score=None if error else 1.0))
    return builder.build()


def test_the_errors_gate_says_executions_when_cases_repeat():
    once = count_gate_failures(_summary(1), RunConfig())
    assert once == ["1 evaluator score(s) could not be computed, 1 case(s) left with no "
                    "score (allowed 0 errors)"], once
    thrice = count_gate_failures(_summary(3), RunConfig())
    assert thrice == ["3 evaluator score(s) could not be computed, 3 execution(s) left with "
                      "no score (allowed 0 errors)"], thrice
