"""The results table ``uipath eval`` prints: one row per evaluation, one column per evaluator,
and an Average row with each evaluator's dataset score.

The dataset score is the evaluator's dataset-level metric when it has one (a classification
evaluator's precision or F-score, an exact match's accuracy over its aggregators), else the
mean of its values over the cases, as UiPath's ``reduce_scores`` gives. A cell is the
evaluator's outcome as every surface shows it (:attr:`assay.types.Score.shown`): its score,
``error CODE`` when it erred (left out of the mean, never averaged in as 0, as UiPath does),
``n/a`` when it did not apply; ``-`` where it did not judge that evaluation at all.

The table's shape is UiPath's (its title, the Evaluation column, one column per evaluator,
the Average row), which someone moving from ``uipath eval`` reads without learning a new
one; that is the fidelity this table keeps. Its numbers are not part of it: UiPath prints one
decimal, which shows 0.92 as 0.9, so scores are shown as every assay surface shows a 0-1
score (:func:`assay.types.numbers.score`, ``0.920``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from assay.report.safe_text import for_terminal
from assay.types import numbers
from assay.types.records import CaseRecord, RunSummary


def evaluator_averages(summary: RunSummary) -> dict[str, float | None]:
    """Each evaluator's dataset score: its dataset metric, else its mean value."""
    averages: dict[str, float | None] = {name: e.mean for name, e in summary.evaluators.items()}
    for name, metric in summary.dataset_metrics.items():
        if metric.value is not None:
            averages[name] = metric.value
    return averages


def results_table(records: Sequence[CaseRecord], summary: RunSummary,
                  evaluation_names: Mapping[str, str] | None = None,
                  evaluator_names: Mapping[str, str] | None = None) -> Table:
    """The table, rows in the records' order; names default to case and evaluator ids."""
    items = evaluation_names or {}
    names = evaluator_names or {}
    order: dict[str, None] = {}
    for record in records:
        for each in record.scores:
            order.setdefault(each.name, None)
    table = Table(title="Evaluation Results", show_header=True, padding=(0, 1))
    table.add_column("Evaluation", style="cyan", min_width=len("Average"))
    for ident in order:
        table.add_column(for_terminal(names.get(ident, ident)), justify="right")
    for record in records:
        label = items.get(record.case_id, record.case_id) + (
            f" #{record.repeat}" if record.repeat else "")
        cells: list[str] = [for_terminal(label)]
        for ident in order:
            score = record.score_named(ident)
            if score is None:
                cells.append(numbers.MISSING)
            elif score.error is not None:
                cells.append(f"[magenta]{for_terminal(score.shown)}[/]")
            else:
                cells.append(score.shown)
        table.add_row(*cells)
    table.add_section()
    averages = evaluator_averages(summary)
    table.add_row("[bold]Average[/]", *(f"[bold]{numbers.score(averages.get(i))}[/]" for i in order))
    return table


def table_for_result(result: Any) -> Table:
    """The table of an :class:`~assay.run.result.EvaluationResult`, with UiPath's names when
    its suite came from a UiPath eval set."""
    meta = (result.suite.metadata.get("uipath") if result.suite is not None else None) or {}
    return results_table(result.records, result.summary, meta.get("evaluation_names"),
                         meta.get("evaluator_names"))
