"""The comparison the API and the compare page show: the library's own
(:func:`assay.analysis.run_comparison.compare_records`), with what a page needs beside it.

The server adds nothing to how runs are compared: it names runs exactly (an API never matches a
prefix), loads them with :func:`~assay.analysis.run_comparison.load_run` (404 for an unknown run, 400
for one that did not complete, Connexity's responses) and answers with the library's
:class:`~assay.analysis.run_comparison.RunComparison` -- the verdict with each reason's paired test,
the significance of every paired difference, aggregate and per-metric deltas, the config diff --
plus each run's list entry (for links and badges) and the per-case rows ordered regressions
first and capped at :data:`CASES_SHOWN` (the totals in ``aggregate`` count every case).
"""

from __future__ import annotations

from pydantic import Field

from assay.analysis.run_comparison import (
    CaseComparison,
    CompareThresholds,
    RunComparison,
    RunNotFound,
    compare_records,
    load_run,
)
from assay.store.baselines import baseline_ids
from assay.store.queries import RunItem, find_run
from assay.store.runs import RunStore

CASES_SHOWN = 1000
"""Per-case rows in a response (regressions, errors and improvements first)."""
STATUS_ORDER = {"regression": 0, "error": 1, "improvement": 2, "unchanged": 3}


class ServedComparison(RunComparison):
    """The library's comparison of two runs, with the runs' list entries."""

    baseline_run: RunItem
    candidate_run: RunItem
    cases_truncated: bool = Field(
        default=False, description="test_case_comparisons holds only the first "
        f"{CASES_SHOWN} cases (regressions first); the totals in aggregate count all")


def _order(case: CaseComparison) -> tuple[int, float, str]:
    return (STATUS_ORDER[case.status],
            case.score_delta if case.score_delta is not None else 0.0, case.test_case_id)


def compare(store: RunStore, baseline_id: str, candidate_id: str,
            thresholds: CompareThresholds | None = None,
            require_significance: float | None = None,
            cases_shown: int = CASES_SHOWN) -> ServedComparison:
    """Compare two completed runs named exactly. Raises the library's RunNotFound,
    RunNotCompleted (baseline checked first) and ConfigError."""
    for role, run_id in (("baseline", baseline_id), ("candidate", candidate_id)):
        if find_run(store, run_id) is None:
            raise RunNotFound(role, run_id)
    base, before = load_run(store, baseline_id, "baseline")
    cand, after = load_run(store, candidate_id, "candidate")
    result = compare_records(base, cand, before, after, thresholds=thresholds,
                             require_significance=require_significance)
    cases = sorted(result.test_case_comparisons, key=_order)
    baselines = baseline_ids(store)
    return ServedComparison(
        **{**dict(result), "test_case_comparisons": cases[:cases_shown]},
        baseline_run=RunItem.of(base, baselines),
        candidate_run=RunItem.of(cand, baselines),
        cases_truncated=len(cases) > cases_shown)
