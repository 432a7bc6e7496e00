"""The comparison the API and the compare page show: the library's own
(:func:`assay.analysis.compare.compare_stored`), with what a page needs beside it.

The server adds nothing to how runs are compared: it names runs exactly (an API never matches
a prefix), passes the same :class:`~assay.analysis.compare.CompareOptions` the CLI and Python
take, and answers with the library's :class:`~assay.analysis.compare.Comparison`, plus each
run's list entry (for links and badges), the rows every surface shows (figures and cases,
numbers already formatted by :mod:`assay.types.numbers`), the headline and the exit code the
CLI would give, and the per-case rows ordered regressions first and capped at
:data:`CASES_SHOWN` (the totals in ``aggregate`` count every case).
"""

from __future__ import annotations

from pydantic import Field

from assay.analysis.compare import (
    CaseComparison,
    CompareOptions,
    Comparison,
    RunNotFound,
    compare_stored,
)
from assay.report.comparison import (
    CaseRow,
    FigureRow,
    ReasonRow,
    SignificanceRow,
    case_rows,
    figure_rows,
    metric_rows,
    reason_rows,
    significance_rows,
    thresholds_text,
)
from assay.report.views import RunListItem, list_item
from assay.store.baselines import baseline_ids
from assay.store.queries import RunItem, find_run
from assay.store.runs import RunStore

CASES_SHOWN = 1000
"""Per-case rows in a response (regressions, errors and improvements first)."""
STATUS_ORDER = {"regression": 0, "error": 1, "improvement": 2, "unchanged": 3}


class ServedComparison(Comparison):
    """The library's comparison of two runs, with the runs' list entries and display rows."""

    baseline_run: RunListItem
    candidate_run: RunListItem
    headline_text: str = Field(description="the verdict in one line, as the CLI prints it")
    exit_status: int = Field(description="what assay compare exits with for this pair")
    thresholds_text: str = Field(default="", description="the thresholds, in words")
    figures: list[FigureRow] = Field(default_factory=list)
    metric_rows: list[FigureRow] = Field(default_factory=list, description="each evaluator's "
                                         "mean, then each judge metric, shown")
    reason_rows: list[ReasonRow] = Field(default_factory=list)
    significance_rows: dict[str, SignificanceRow] = Field(
        default_factory=dict, description="each test of 'significance', shown")
    case_rows: list[CaseRow] = Field(default_factory=list)
    cases_truncated: bool = Field(
        default=False, description="test_case_comparisons holds only the first "
        f"{CASES_SHOWN} cases (regressions first); the totals in aggregate count all")


def _order(case: CaseComparison) -> tuple[int, float, str]:
    return (STATUS_ORDER[case.status],
            case.score_delta if case.score_delta is not None else 0.0, case.test_case_id)


def compare(store: RunStore, baseline_id: str, candidate_id: str,
            options: CompareOptions | None = None,
            cases_shown: int = CASES_SHOWN) -> ServedComparison:
    """Compare two runs named exactly. Raises the library's RunNotFound, RunNotCompleted
    (baseline checked first), IncomparableRuns and ConfigError."""
    for role, run_id in (("baseline", baseline_id), ("candidate", candidate_id)):
        if find_run(store, run_id) is None:
            raise RunNotFound(role, run_id)
    result = compare_stored(store, baseline_id, candidate_id, options)
    ordered = result.model_copy(update={"test_case_comparisons": sorted(
        result.test_case_comparisons, key=_order)[:cases_shown]})
    baselines = baseline_ids(store)
    runs = [list_item(RunItem.of(store.run_record(run_id), baselines))
            for run_id in (baseline_id, candidate_id)]
    return ServedComparison(
        **dict(ordered), baseline_run=runs[0], candidate_run=runs[1],
        headline_text=result.headline(), exit_status=result.exit_code(),
        thresholds_text=thresholds_text(result), figures=figure_rows(result),
        metric_rows=metric_rows(result, runs[0].summary, runs[1].summary),
        reason_rows=reason_rows(result), significance_rows=significance_rows(result),
        case_rows=case_rows(ordered),
        cases_truncated=len(result.test_case_comparisons) > cases_shown)
