"""The comparison the API, the compare page and the static compare report show: the
library's own (:func:`assay.analysis.compare.compare_stored`), with what a page needs beside
it.

Nothing here changes how runs are compared: it names runs exactly (an API never matches
a prefix), passes the same :class:`~assay.analysis.compare.CompareOptions` the CLI and Python
take, and answers with the library's :class:`~assay.analysis.compare.Comparison`, plus each
run's list entry (for links and badges), the rows every surface shows (figures, cases,
significance and evaluators, numbers already formatted by :mod:`assay.types.numbers`), the
headline and the exit code the CLI would give, and one page of the per-case rows, ordered
regressions first (the totals in ``aggregate`` count every case).

A comparison of two finished runs never changes, and one of 10,000 cases takes seconds to
compute: :class:`ComparisonCache` keeps the last few, so that paging through its cases, or
filtering them, reads the one computed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

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
    EvaluatorRow,
    FigureRow,
    ReasonRow,
    SignificanceRow,
    case_rows,
    evaluator_rows,
    figure_rows,
    reason_rows,
    significance_rows,
    thresholds_text,
)
from assay.report.views import RunListItem, list_item
from assay.store.baselines import baseline_ids
from assay.store.queries import RunItem, find_run
from assay.store.runs import RunStore
from assay.store.search import check_query, fold, needle
from assay.types.records import RunRecord, RunStatus

CASES_SHOWN = 1000
"""The most per-case rows one response holds (a page; regressions and errors first)."""
STATUS_ORDER = {"regression": 0, "error": 1, "improvement": 2, "unchanged": 3}


class CaseOrder(StrEnum):
    """How the per-case rows of a comparison are ordered."""

    STATUS = "status"
    """regressions, errors, improvements, then unchanged; the largest drop first in each"""
    CASE = "case"
    DELTA = "delta"
    """the largest drop first"""
    DELTA_DESC = "-delta"
    """the largest rise first"""


class ServedComparison(Comparison):
    """The library's comparison of two runs, with the runs' list entries and display rows."""

    baseline_run: RunListItem
    candidate_run: RunListItem
    headline_text: str = Field(description="the verdict in one line, as the CLI prints it")
    exit_status: int = Field(description="what assay compare exits with for this pair")
    thresholds_text: str = Field(default="", description="the thresholds, in words")
    figures: list[FigureRow] = Field(default_factory=list)
    reason_rows: list[ReasonRow] = Field(default_factory=list)
    significance_rows: list[SignificanceRow] = Field(default_factory=list)
    evaluator_rows: list[EvaluatorRow] = Field(default_factory=list)
    case_rows: list[CaseRow] = Field(default_factory=list)
    case_total: int = Field(default=0, description="matched cases that pass the case filter "
                            "(case_status, case_q); test_case_comparisons and case_rows hold "
                            "case_limit of them from case_offset")
    case_offset: int = 0
    case_limit: int = CASES_SHOWN
    cases_truncated: bool = Field(
        default=False, description="more cases pass the filter than this page holds")


@dataclass(frozen=True)
class CaseSelection:
    """Which of a comparison's per-case rows to answer with."""

    statuses: tuple[str, ...] = ()
    text: str = ""
    order: CaseOrder = CaseOrder.STATUS
    limit: int = CASES_SHOWN
    offset: int = 0

    def __post_init__(self) -> None:
        if self.text:
            check_query(self.text)

    def select(self, cases: list[CaseComparison]) -> list[CaseComparison]:
        """The cases that pass the filter, in this page's order (all pages). The text is
        found in a case id in any case as a search of a run's cases finds it
        (:func:`needle`), so both find the same cases."""
        found = needle(self.text) if self.text else ""
        kept = [c for c in cases if (not self.statuses or c.status in self.statuses)
                and (not found or found in fold(c.test_case_id))]
        return sorted(kept, key=_ORDERS[self.order])


def _by_status(case: CaseComparison) -> tuple[int, float, str]:
    return (STATUS_ORDER[case.status],
            case.score_delta if case.score_delta is not None else 0.0, case.test_case_id)


def _by_delta(sign: float) -> Any:
    def key(case: CaseComparison) -> tuple[bool, float, str]:
        delta = case.score_delta
        return (delta is None, sign * (delta or 0.0), case.test_case_id)
    return key


_ORDERS: dict[CaseOrder, Any] = {
    CaseOrder.STATUS: _by_status, CaseOrder.CASE: lambda c: c.test_case_id,
    CaseOrder.DELTA: _by_delta(1.0), CaseOrder.DELTA_DESC: _by_delta(-1.0)}


@dataclass
class _Computed:
    result: Comparison
    baseline: RunRecord
    candidate: RunRecord


@dataclass
class ComparisonCache:
    """The last comparisons of finished runs, by the runs, their finish times and the
    options: a finished run never changes, so its comparison never does either."""

    size: int = 8
    _found: OrderedDict[tuple[Any, ...], _Computed] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: tuple[Any, ...]) -> _Computed | None:
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                self._found.move_to_end(key)
            return found

    def put(self, key: tuple[Any, ...], value: _Computed) -> None:
        with self._lock:
            self._found[key] = value
            while len(self._found) > self.size:
                self._found.popitem(last=False)


def _computed(store: RunStore, baseline_id: str, candidate_id: str,
              options: CompareOptions, cache: ComparisonCache | None) -> _Computed:
    runs = []
    for role, run_id in (("baseline", baseline_id), ("candidate", candidate_id)):
        found = find_run(store, run_id)
        if found is None:
            raise RunNotFound(role, run_id)
        runs.append(found)
    finished = all(r.status is RunStatus.COMPLETED and r.finished_at for r in runs)
    key = (baseline_id, candidate_id, runs[0].finished_at, runs[1].finished_at,
           options.model_dump_json())
    hit = cache.get(key) if cache is not None and finished else None
    if hit is not None:
        return hit
    result = compare_stored(store, baseline_id, candidate_id, options)
    computed = _Computed(result, store.run_record(baseline_id), store.run_record(candidate_id))
    if cache is not None and finished:
        cache.put(key, computed)
    return computed


def compare(store: RunStore, baseline_id: str, candidate_id: str,
            options: CompareOptions | None = None, page: CaseSelection | None = None,
            cache: ComparisonCache | None = None) -> ServedComparison:
    """Compare two runs named exactly, answering with one page of its cases. Raises the
    library's RunNotFound, RunNotCompleted (baseline checked first), IncomparableRuns and
    ConfigError."""
    page = page or CaseSelection()
    computed = _computed(store, baseline_id, candidate_id, options or CompareOptions(), cache)
    result = computed.result
    selected = page.select(result.test_case_comparisons)
    shown = selected[page.offset:page.offset + page.limit]
    ordered = result.model_copy(update={"test_case_comparisons": shown})
    baselines = baseline_ids(store)
    runs = [list_item(RunItem.of(record, baselines))
            for record in (computed.baseline, computed.candidate)]
    return ServedComparison(
        **dict(ordered), baseline_run=runs[0], candidate_run=runs[1],
        headline_text=result.headline(), exit_status=result.exit_code(),
        thresholds_text=thresholds_text(result), figures=figure_rows(result),
        reason_rows=reason_rows(result), significance_rows=significance_rows(result),
        evaluator_rows=evaluator_rows(result, runs[0].summary, runs[1].summary),
        case_rows=case_rows(ordered), case_total=len(selected), case_offset=page.offset,
        case_limit=page.limit, cases_truncated=page.offset + len(shown) < len(selected))
