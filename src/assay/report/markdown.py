"""A run as Markdown, for a pull-request comment or a GitHub step summary.

Markdown renders inline HTML and links, so every value that came from data goes through
:func:`md_text`: HTML's special characters become entities, Markdown's punctuation is escaped,
line breaks are flattened, every other control character is shown as its escape by the rule
the terminal and the web UI use (:func:`~assay._util.control_chars.printable`: bidirectional
overrides and zero-width characters too, which reorder or hide what a pull-request comment
shows), and long text is cut. A case id that reads ``<img src=x onerror=...>`` or
``[click](javascript:...)`` shows as those characters.
"""

from __future__ import annotations

import re
from typing import Any

from assay._util.control_chars import printable
from assay._util.redact import scrub
from assay.run.display import execution_name, repeats_shown, run_display, scale_for
from assay.store import queries
from assay.store.runs import RunStore
from assay.types import numbers
from assay.types.records import RunRecord
from assay.types.score import NOT_APPLICABLE

PROBLEMS_SHOWN = 20
_LINE_BREAKS = re.compile(r"[\t\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+")
"""What ends a line (or a cell) somewhere: flattened to a space, so a value stays one line."""
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()!|~#])")
"""What Markdown reads as markup inside a line (emphasis, code, links, images, cells); the
characters that matter only at a line's start cannot be there, as every value sits mid-line."""


def md_text(value: Any, limit: int = 200) -> str:
    """``value`` as inert Markdown text on one line (table-cell safe), known secrets hidden
    (see :mod:`assay._util.redact`)."""
    text = "" if value is None else scrub(str(value))
    text = printable(_LINE_BREAKS.sub(" ", text)).strip()
    if len(text) > limit:
        text = text[:limit] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", text)


def render_markdown(store: RunStore, run: RunRecord, problems: int = PROBLEMS_SHOWN) -> str:
    s = run.summary
    target = queries.run_target(run)
    gate = "no summary" if s is None else ("✅ gates passed" if s.passed else "❌ gates failed")
    lines = [f"## assay run {md_text(run.id)}", "",
             f"**{md_text(run.suite)}**" + (f" · target {md_text(target)}" if target else "")
             + f" · {md_text(run.status.value)} · {gate}", ""]
    if s is None:
        return "\n".join(lines) + "\n"
    shown = run_display(s)
    lines += [f"| {shown.counted} | pass rate | mean score | agent errors "
              "| turn latency p50 | turn latency p95 | judge cost |",
              "|---:|---:|---:|---:|---:|---:|---:|",
              f"| {numbers.count(s.cases)} | {shown.pass_rate} | {shown.mean_score} | "
              f"{numbers.count(s.target_errors)} | "
              f"{shown.latency_p50} | {shown.latency_p95} | {shown.judge_cost} |", "",
              f"{md_text(shown.verdicts, 400)}", "", f"{md_text(shown.evaluator_scores, 400)}", ""]
    if s.metrics_pass_threshold is not None or s.cases_pass_threshold is not None:
        lines += [f"Dimensions: metrics {shown.metrics_dimension} (threshold "
                  f"{shown.metrics_threshold}), cases {shown.cases_dimension} (threshold "
                  f"{shown.cases_threshold})", ""]
    lines += [f"Total cost: {shown.cost}; tokens: agent {shown.agent_tokens}, simulated "
              f"user {shown.simulator_tokens}, judge {shown.judge_tokens}", ""]
    if shown.stop_reasons != numbers.MISSING:
        lines += [f"Conversations stopped: {md_text(shown.stop_reasons, 400)}", ""]
    for label, text in repeats_shown(shown):
        lines += [f"{label.capitalize()}: {md_text(text, 400)}", ""]
    if s.gate_failures:
        lines += ["**Gates failed**", ""] + [f"- {md_text(g, 400)}" for g in s.gate_failures]
        lines.append("")
    from assay.run.result import verdict_notes

    for note in verdict_notes(run):
        lines += [f"> {md_text(note, 400)}", ""]
    if s.evaluators:
        measured = bool(shown.measured)  # the column only when an evaluator measured
        lines += [f"| evaluator | mean | values | passed | failed | errors | {NOT_APPLICABLE} |"
                  + (" measured |" if measured else ""),
                  "|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if measured else "")]
        for name, e in s.evaluators.items():
            lines.append(f"| {md_text(name)} | {shown.evaluators[name]} | {e.scored} | "
                         f"{e.passed} | {e.failed} | {e.errors} | {e.skipped} |"
                         + (f" {shown.measured.get(name, '0 value(s)')} |" if measured else ""))
        lines.append("")
    if shown.dataset_metrics:
        lines += ["| dataset metric | value |", "|---|---|"]
        lines += [f"| {md_text(name)} | {md_text(text, 400)} |"
                  for name, text in shown.dataset_metrics.items()]
        lines.append("")
    where = queries.CaseFilter(verdicts=list(queries.VERDICT_ORDER[:3]),
                               with_evaluator_errors=True)
    rows, total = queries.case_page(store, run.id, where, limit=problems)
    if rows:
        scale = scale_for(run)
        counted = numbers.count_of(total, shown.counted.removesuffix("s"))
        lines += [f"<details><summary>{counted} with errors, failures or borderline "
                  f"scores{'' if total <= len(rows) else f' (first {len(rows)})'}</summary>", "",
                  "| case | verdict | score | output or error |", "|---|---|---:|---|"]
        for r in rows:
            name = execution_name(r.case_id, r.repeat)
            lines.append(f"| {md_text(name, 80)} | {md_text(r.verdict.value)} | "
                         f"{scale.shown(r.score)} | "
                         f"{md_text(r.target_error or _evaluator_error(r) or r.output_preview, 160)} |")
        lines += ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def _evaluator_error(row: queries.CaseRow) -> str | None:
    """The first evaluator that could not score the case, as its score is shown
    (``sim: error missing_expected_output``): what keeps a case that passed among the
    problems; None when every evaluator scored it."""
    return next((f"{name}: {cell.shown}" for name, cell in row.scores.items()
                 if cell.state == "error"), None)


