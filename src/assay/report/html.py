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
import time
from pathlib import Path
from typing import Any

from assay._util.redact import scrub_json
from assay._version import __version__
from assay.errors import ConfigError
from assay.store import queries
from assay.store.runs import RunStore
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


def report_data(store: RunStore, run: RunRecord, max_cases: int = MAX_CASES) -> dict[str, Any]:
    """What the page reads: the run, its score distributions, and its first ``max_cases``
    cases (problems first), each with its details."""
    from assay.report.family import run_family
    from assay.report.views import case_detail, has_metric_judge, run_detail, shown_rows
    from assay.run.display import scale_for

    target = queries.run_target(run)
    rows, total = queries.case_page(store, run.id, queries.CaseFilter(), limit=max_cases)
    details: dict[str, Any] = {}
    wanted = {(r.case_id, r.repeat) for r in rows}
    for record in store.case_records(run.id):
        if (record.case_id, record.repeat) in wanted:
            details[f"{record.case_id}#{record.repeat}"] = case_detail(
                record, run).model_dump(mode="json")
    return {
        "generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        + f" · assay {__version__}"
        + (f" · {len(rows)} of {total} cases, problems first" if total > len(rows) else ""),
        "run": run_detail(run, target, family=run_family(
            run, queries.metric_score_rows(store, run.id) if has_metric_judge(run) else None
        )).model_dump(mode="json"),
        "histograms": queries.histograms(store, run.id).model_dump(mode="json"),
        "cases": [r.model_dump(mode="json") for r in shown_rows(rows, scale_for(run))],
        "details": details,
    }


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


def render_html(data: dict[str, Any]) -> str:
    """The report page for ``data`` (see :func:`report_data`)."""
    from assay.report import STATIC_DIR

    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    css = (STATIC_DIR / "app.css").read_text(encoding="utf-8")
    script = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    if "</" in css or "</script" in script.lower():
        raise ConfigError("the viewer's own files cannot be inlined (they hold a closing tag)")
    policy = (f"default-src 'none'; script-src '{_sha256(script)}'; "
              f"style-src '{_sha256(css)}'; img-src data:; base-uri 'none'; form-action 'none'")
    head_link = '<link rel="stylesheet" href="static/app.css">'
    head_script = '<script src="static/app.js" defer></script>'
    if head_link not in page or head_script not in page or "</body>" not in page:
        raise ConfigError("the viewer's index.html does not have the expected layout")
    page = page.replace(
        '<meta charset="utf-8">',
        f'<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" '
        f'content="{policy}">', 1)
    page = page.replace(head_link, f"<style>{css}</style>", 1).replace(head_script, "", 1)
    body = (f'<script type="application/json" id="assay-data">{json_for_script(data)}</script>\n'
            f"<script>{script}</script>\n</body>")
    return page.replace("</body>", body, 1)


def write_html(store: RunStore, run: RunRecord, path: Path,
               max_cases: int = MAX_CASES, baseline: RunRecord | None = None) -> None:
    """The report of ``run``; with ``baseline``, its comparison with it too (the page opens
    on the comparison)."""
    from assay.report.outputs import write_atomic

    data = report_data(store, run, max_cases)
    if baseline is not None:
        data.update(comparison_data(store, baseline, run, max_cases))
    write_atomic(path, render_html(data).encode("utf-8"), "HTML report")
