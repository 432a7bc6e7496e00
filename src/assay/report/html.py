"""The static HTML report: one self-contained file with a run's page and its cases' details.

It is the web UI itself (the same page, stylesheet and script as ``assay serve``), inlined,
with the run's data embedded as JSON in a ``<script type="application/json">`` block that the
page reads in place of the API. Opened from disk it needs no network, and its
Content-Security-Policy lets only that one script and stylesheet run (by their hashes): the
data is never markup, and the page builds every element from it with ``textContent``.

A run of many cases keeps the report small: the first ``max_cases`` cases, problems first
(errors, failures, borderline), are included, and the page says how many there were.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay._util.redact import scrub_json
from assay._version import __version__
from assay.errors import ConfigError
from assay.store import queries
from assay.store.runs import RunStore
from assay.store.search import casefold_table
from assay.types.records import RunRecord

MAX_CASES = 5000

_JSON_IN_HTML = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                               "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_for_script(data: Any) -> str:
    """JSON that cannot end or comment out the ``<script>`` element it sits in: every ``<``,
    ``>`` and ``&`` is written as a JSON escape (the parsed value is unchanged). Known
    secrets in its strings are hidden (see :mod:`assay._util.redact`)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return scrub_json(text).translate(_JSON_IN_HTML)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


REPORT_DETAIL_BYTES = 50_000_000
"""About the most the case details of one report file hold (JSON bytes), shared among its
cases: a report is one file, opened whole by a browser, so a run of huge answers must not make
it gigabytes. Each case gets at most what a case page of the server holds."""
MIN_CASE_BYTES = 20_000
"""The least room a case of a report is given, however many cases share the budget."""


def case_bytes(cases: int) -> int:
    """The room of each case's details in a report of ``cases`` cases: the report's budget
    shared out, within a case page's size (:data:`~assay.report.views.CASE_PAGE_BYTES`) and
    :data:`MIN_CASE_BYTES`. A larger case is cut as a case page is, every cut listed."""
    from assay.report.views import CASE_PAGE_BYTES

    share = REPORT_DETAIL_BYTES // max(1, cases)
    return max(MIN_CASE_BYTES, min(CASE_PAGE_BYTES, share))


def report_data(store: RunStore, run: RunRecord, max_cases: int = MAX_CASES) -> dict[str, Any]:
    """What the page reads: the run, its score distributions, and its first ``max_cases``
    cases (problems first), each with its details."""
    from assay.report.family import run_family
    from assay.report.views import (
        bounded_case,
        case_detail,
        has_metric_judge,
        run_detail,
        shown_rows,
    )
    from assay.run.display import scale_for

    target = queries.run_target(run)
    rows, total = queries.case_page(store, run.id, queries.CaseFilter(), limit=max_cases)
    details: dict[str, Any] = {}
    wanted = {(r.case_id, r.repeat) for r in rows}
    limit = case_bytes(len(wanted))
    for record in store.iter_case_records(run.id):  # a page at a time: never the whole run
        if (record.case_id, record.repeat) in wanted:
            details[f"{record.case_id}#{record.repeat}"] = bounded_case(
                case_detail(record, run), limit)
    return {
        "generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        + f" · assay {__version__}"
        + (f" · {len(rows)} of {total} {_counted(run)}, problems first"
           if total > len(rows) else ""),
        "run": run_detail(run, target, family=run_family(
            run, queries.metric_score_rows(store, run.id) if has_metric_judge(run) else None
        )).model_dump(mode="json"),
        "histograms": queries.histograms(store, run.id).model_dump(mode="json"),
        "cases": [r.model_dump(mode="json") for r in shown_rows(rows, scale_for(run))],
        "details": details,
        "fold": casefold_table(),
    }


def _counted(run: RunRecord) -> str:
    """What a report's rows are: cases, or executions for a run with repeats
    (:func:`~assay.run.display.executions_named`), as the run's figures name them."""
    from assay.run.display import executions_named

    return "cases" if run.summary is None else executions_named(run.summary)


SIDES_SHOWN = 200
"""Cases of a static comparison shown side by side (regressions and errors first)."""


def comparison_data(store: RunStore, baseline: RunRecord, candidate: RunRecord,
                    max_cases: int = MAX_CASES) -> dict[str, Any]:
    """What a static compare report adds to the candidate's report: the comparison as the
    compare page reads it (its first ``max_cases`` cases, regressions first) and the first
    :data:`SIDES_SHOWN` regressions and errors side by side."""
    from assay.report.comparison import case_sides
    from assay.report.comparison_page import CaseSelection, compare

    served = compare(store, baseline.id, candidate.id, page=CaseSelection(limit=max_cases))
    worst = [c.test_case_id for c in served.test_case_comparisons
             if c.status in ("regression", "error")][:SIDES_SHOWN]
    sides = {case_id: case_sides(case_id, queries.case_record(store, baseline.id, case_id, 0),
                                 queries.case_record(store, candidate.id, case_id, 0)
                                 ).model_dump(mode="json") for case_id in worst}
    return {"comparison": json.loads(served.model_dump_json()), "sides": sides}  # NaN: null


_STYLESHEET = re.compile(r'<link rel="stylesheet" href="static/([^"]+)">\n?')
_SCRIPT = re.compile(r'<script src="static/([^"]+)" defer></script>\n?')


def _static_text(name: str) -> str:
    """A file of the viewer's, to inline: refused if it holds what would end its element."""
    from assay.report import STATIC_DIR

    text = (STATIC_DIR / name).read_text(encoding="utf-8")
    if "</style" in text.lower() or "</script" in text.lower():
        raise ConfigError(f"the viewer's file {name} cannot be inlined (it holds a closing tag)")
    return text


def _hashes(texts: Iterable[str]) -> str:
    """The CSP sources that allow exactly these inline texts."""
    return " ".join(f"'{_sha256(text)}'" for text in texts)


def render_html(data: dict[str, Any]) -> str:
    """The report page for ``data`` (see :func:`report_data`): the viewer's ``index.html``
    with every stylesheet and script it loads from ``static/`` (its own and the vendored
    ones) inlined in the same order, each allowed by its hash and nothing else."""
    from assay.report import STATIC_DIR

    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    styles = {name: _static_text(name) for name in _STYLESHEET.findall(page)}
    scripts = [_static_text(name) for name in _SCRIPT.findall(page)]
    if not styles or not scripts or "</body>" not in page:
        raise ConfigError("the viewer's index.html does not have the expected layout")
    policy = (f"default-src 'none'; script-src {_hashes(scripts)}; "
              f"style-src {_hashes(styles.values())}; img-src data:; base-uri 'none'; "
              "form-action 'none'")
    page = page.replace(
        '<meta charset="utf-8">',
        f'<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" '
        f'content="{policy}">', 1)
    page = _STYLESHEET.sub(lambda link: f"<style>{styles[link.group(1)]}</style>\n", page)
    body = (f'<script type="application/json" id="assay-data">{json_for_script(data)}</script>\n'
            + "".join(f"<script>{script}</script>\n" for script in scripts) + "</body>")
    head, _, tail = _SCRIPT.sub("", page).rpartition("</body>")
    return head + body + tail


def write_html(store: RunStore, run: RunRecord, path: Path,
               max_cases: int = MAX_CASES, baseline: RunRecord | None = None) -> None:
    """The report of ``run``; with ``baseline``, its comparison with it too (the page opens
    on the comparison)."""
    from assay.report.outputs import write_atomic

    data = report_data(store, run, max_cases)
    if baseline is not None:
        data.update(comparison_data(store, baseline, run, max_cases))
    write_atomic(path, render_html(data).encode("utf-8"), "HTML report")
