"""The run dimensions outside the Connexity scoring: a percentage gate over executions in
which a borderline or errored case counts as not passed, and figures reported both ways."""

from __future__ import annotations

import assay
from assay.types.config import RunThresholds


def _rows() -> list[dict[str, str]]:
    return [{"id": "good", "input": "q", "output": "Paris", "expected_output": "Paris"},
            {"id": "close", "input": "q", "output": "Paris!", "expected_output": "Paris"}]


def _closeness(outputs: str, expectations: object) -> float:
    return 1.0 if outputs == "Paris" else 0.7  # 0.7: borderline under the default bands


def test_a_borderline_case_is_not_a_passed_case():
    plain = assay.evaluate(_rows(), evaluators=[_closeness])
    assert plain.summary.verdicts == {"pass": 1, "borderline": 1}
    assert plain.passed  # the count gates see no "fail"
    gated = assay.evaluate(_rows(), evaluators=[_closeness],
                           run_thresholds=RunThresholds(cases_pass_threshold=100))
    assert gated.summary.cases_pass_rate_pct == 50.0 and gated.summary.cases_passed is False
    assert not gated.passed
    assert any("cases dimension" in failure for failure in gated.summary.gate_failures)


def test_the_metrics_dimension_uses_the_case_score_in_percent():
    result = assay.evaluate(_rows(), evaluators=[_closeness],
                            run_thresholds=RunThresholds(metrics_pass_threshold=90))
    assert abs(result.summary.weighted_metrics_score_pct - 85.0) <= 1e-9
    assert result.summary.metrics_passed is False and not result.passed


def test_executions_are_counted_once_each_way():
    result = assay.evaluate(_rows(), evaluators=[_closeness])
    s = result.summary
    assert (s.total_executions, s.passed_count, s.failed_count, s.error_count) == (2, 1, 1, 0)
    assert s.pass_rate_incl_errors == s.pass_rate_excl_errors == 0.5
    assert s.metrics_passed is None and s.cases_passed is None  # not gated unless asked


def test_a_summary_stays_small_however_many_cases_unless_cases_repeat():
    """A summary is read whole by every list of runs: one entry per case of a 100,000-case run
    made it 15 MB and every page of the server 1.5 s slower."""
    import random

    from assay.testing.runs import make_case
    from assay.types.records import SummaryBuilder

    rng = random.Random(1)
    builder = SummaryBuilder()
    for i in range(2000):
        builder.add(make_case(i, 0.8, rng))
    summary = builder.build()
    assert summary.case_summary == {} and summary.total_executions == 2000
    assert len(summary.model_dump_json()) < 10_000
    tracked = SummaryBuilder(track_cases=True)
    for i in range(3):
        tracked.add(make_case(i, 0.8, rng))
    assert len(tracked.build().case_summary) == 3
