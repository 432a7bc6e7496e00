"""A run as Markdown, for a pull-request comment or a GitHub step summary.

Markdown renders inline HTML and links, so every value that came from data goes through
:func:`md_text`: HTML's special characters become entities, Markdown's punctuation is escaped,
line breaks and control characters are flattened, and long text is cut. A case id that reads
``<img src=x onerror=...>`` or ``[click](javascript:...)`` shows as those characters.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from assay._util.redact import scrub
from assay.store import queries
from assay.store.runs import RunStore
from assay.types.records import RunRecord

PROBLEMS_SHOWN = 20
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()!|~#])")
"""What Markdown reads as markup inside a line (emphasis, code, links, images, cells); the
characters that matter only at a line's start cannot be there, as every value sits mid-line."""


def md_text(value: Any, limit: int = 200) -> str:
    """``value`` as inert Markdown text on one line (table-cell safe), known secrets hidden
    (see :mod:`assay._util.redact`)."""
    text = "" if value is None else scrub(str(value))
    text = _CONTROL.sub(" ", text).strip()
    if len(text) > limit:
        text = text[:limit] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", text)


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def render_markdown(store: RunStore, run: RunRecord, problems: int = PROBLEMS_SHOWN) -> str:
    s = run.summary
    target = queries.run_target(run)
    gate = "no summary" if s is None else ("✅ gates passed" if s.passed else "❌ gates failed")
    lines = [f"## assay run {md_text(run.id)}", "",
             f"**{md_text(run.suite)}**" + (f" · target {md_text(target)}" if target else "")
             + f" · {md_text(run.status.value)} · {gate}", ""]
    if s is None:
        return "\n".join(lines) + "\n"
    lines += ["| cases | pass rate | mean score | errors | skipped | latency p50 | judge cost |",
              "|---:|---:|---:|---:|---:|---:|---:|",
              f"| {s.cases} | {_pct(s.pass_rate)} | {_num(s.mean_score)} | "
              f"{s.evaluator_errors} evaluator, {s.target_errors} agent | {s.evaluator_skips} | "
              f"{_num(s.latency.p50_ms, 0)} ms | "
              f"{'unknown' if s.usage.cost is None else f'${s.usage.cost:.4f}'} |", ""]
    verdicts = ", ".join(f"{n} {md_text(v)}" for v, n in sorted(s.verdicts.items()))
    lines += [f"Verdicts: {verdicts or 'none'}", ""]
    if s.gate_failures:
        lines += ["**Gates failed**", ""] + [f"- {md_text(g, 400)}" for g in s.gate_failures]
        lines.append("")
    from assay.run.result import verdict_notes

    for note in verdict_notes(run):
        lines += [f"> {md_text(note, 400)}", ""]
    if s.evaluators:
        lines += ["| evaluator | mean | scored | passed | failed | errors | skipped |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for e in s.evaluators.values():
            lines.append(f"| {md_text(e.name)} | {_num(e.mean)} | {e.scored} | {e.passed} | "
                         f"{e.failed} | {e.errors} | {e.skipped} |")
        lines.append("")
    where = queries.CaseFilter(verdicts=list(queries.VERDICT_ORDER[:3]))
    rows, total = queries.case_page(store, run.id, where, limit=problems)
    if rows:
        lines += [f"<details><summary>{total} case(s) with errors, failures or borderline "
                  f"scores{'' if total <= len(rows) else f' (first {len(rows)})'}</summary>", "",
                  "| case | verdict | score | output or error |", "|---|---|---:|---|"]
        for r in rows:
            name = r.case_id + (f" #{r.repeat}" if r.repeat else "")
            lines.append(f"| {md_text(name, 80)} | {md_text(r.verdict.value)} | "
                         f"{_num(r.score)} | {md_text(r.target_error or r.output_preview, 160)} |")
        lines += ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def write_markdown(store: RunStore, run: RunRecord, path: Path) -> None:
    from assay.report.outputs import write_atomic

    write_atomic(path, render_markdown(store, run).encode("utf-8"), "Markdown report")
