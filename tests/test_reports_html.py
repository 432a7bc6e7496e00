"""The static HTML report and the Markdown summary: self-contained, data that cannot become
markup, the CLI command and the run reporters."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from assay.report import STATIC_DIR
from assay.report.html import json_for_script, render_html, report_data
from assay.report.markdown import md_text, render_markdown
from assay.store.runs import RunStore
from assay.testing.runs import HOSTILE, write_run
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, Verdict
from assay.types.score import Score
from tests.assay_process import run_assay

ROOT = Path(__file__).resolve().parents[1]
NASTY_ID = "[x](javascript:alert(1))<img src=x onerror=alert(1)>|pipe`code`*b*"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _assay(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_assay(args, timeout=120, env=_env(), cwd=cwd)


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run = write_run(store, 60, seed=3, hostile_at=[4])
    record = CaseRecord(run_id=run, case_id=NASTY_ID, case=Case(id=NASTY_ID, input="q"),
                        execution=Execution(input="q", output="</script><!-- " + HOSTILE),
                        scores=[Score(name="correctness", value=0.1, passed=False)],
                        score=0.1, verdict=Verdict.FAIL)
    store.record_execution(run, NASTY_ID, 0, record.execution)
    store.record_score(run, NASTY_ID, 0, record.scores[0])
    store.record_case(record)
    store.close()
    return url, run


def test_json_in_a_script_element_cannot_close_it():
    data = {"text": "</script><script>alert(1)</script><!-- & \u2028"}
    text = json_for_script(data)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data


def _between(page: str, start: str, end: str) -> list[str]:
    return re.findall(re.escape(start) + r"(.*?)" + re.escape(end), page, re.S)


def test_the_report_is_one_file_whose_policy_allows_only_its_own_script(stored):
    url, run = stored
    store = RunStore(url)
    page = render_html(report_data(store, store.run_record(run)))
    store.close()
    assert not re.search(r"""<(script|link)[^>]+(src|href)=["']?(https?:|//|static/)""", page)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    scripts = _between(page, "<script>", "</script>")
    styles = _between(page, "<style>", "</style>")
    # the viewer's own script and stylesheet and the vendored ones (static/vendor/)
    assert len(scripts) == 3 and len(styles) == 2
    assert scripts[-1] == (STATIC_DIR / "app.js").read_text()
    assert scripts[0] == (STATIC_DIR / "vendor/diff-9.0.0/diff.min.js").read_text()

    def digest(text: str) -> str:
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    allowed = dict(re.findall(r"(script-src|style-src) ([^;]+)", policy))
    assert allowed["script-src"].split() == [f"'{digest(s)}'" for s in scripts]
    assert allowed["style-src"].split() == [f"'{digest(s)}'" for s in styles]
    assert "default-src 'none'" in policy and "unsafe" not in policy
    data = _between(page, '<script type="application/json" id="assay-data">', "</script>")
    assert len(data) == 1  # the hostile output did not end the data block early
    parsed = json.loads(data[0])
    assert parsed["run"]["id"] == run
    assert parsed["details"][f"{NASTY_ID}#0"]["record"]["execution"]["output"].startswith(
        "</script><!--")
    assert HOSTILE not in page  # only ever present JSON-escaped


def test_a_large_run_keeps_its_problems_and_says_how_many_it_left_out(stored):
    url, run = stored
    store = RunStore(url)
    data = report_data(store, store.run_record(run), max_cases=10)
    store.close()
    assert len(data["cases"]) == 10 == len(data["details"])
    assert data["cases"][0]["verdict"] == "error"
    assert "10 of 61 cases" in data["generated"]


def test_a_huge_answer_is_cut_in_the_report_as_on_a_case_page(tmp_path):
    from assay.report.views import CASE_PAGE_BYTES

    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    run = write_run(store, 3, seed=1)
    huge = "y" * 3_000_000
    record = CaseRecord(run_id=run, case_id="huge", case=Case(id="huge", input="q",
                                                              expected_output="z"),
                        execution=Execution(input="q", output=huge),
                        scores=[Score(name="correctness", value=0.0, passed=False)],
                        score=0.0, verdict=Verdict.FAIL)
    store.record_execution(run, "huge", 0, record.execution)
    store.record_score(run, "huge", 0, record.scores[0])
    store.record_case(record)
    data = report_data(store, store.run_record(run))
    store.close()
    detail = data["details"]["huge#0"]
    assert len(json.dumps(detail)) < 1.1 * CASE_PAGE_BYTES
    output = detail["record"]["execution"]["output"]
    assert output.startswith("yyy") and output.endswith("[cut: 3,000,000 characters in all]")
    assert "/record/execution/output" in [c["pointer"] for c in detail["cuts"]]


def test_a_reports_case_details_share_one_budget():
    from assay.report.html import MIN_CASE_BYTES, REPORT_DETAIL_BYTES, case_bytes
    from assay.report.views import CASE_PAGE_BYTES

    assert case_bytes(1) == CASE_PAGE_BYTES
    assert case_bytes(100) == REPORT_DETAIL_BYTES // 100 >= MIN_CASE_BYTES
    assert case_bytes(10**6) == MIN_CASE_BYTES


def test_markdown_text_is_inert():
    text = md_text(NASTY_ID + "\nnext line\x1b[31m")
    assert "<" not in text and "\n" not in text and "\x1b" not in text
    assert "](" not in text and "\\|" in text and "\\`" in text and "\\*" in text
    assert md_text("x" * 500, limit=10) == "x" * 10 + "…"


def test_markdown_text_shows_reordering_and_hidden_characters_as_the_terminal_does():
    from assay._util.control_chars import printable

    value = "invoice\u202egnp.exe\u200b\u2066x\ufeff"
    text = md_text(value)
    assert not any(c in text for c in "\u202e\u200b\u2066\ufeff")  # they passed through
    # Rendered, the cell reads as the terminal line does: each as its escape.
    assert text.replace("\\\\", "\\") == printable(value)


def test_the_markdown_summary_has_the_figures_and_the_problem_cases(stored):
    url, run = stored
    store = RunStore(url)
    text = render_markdown(store, store.run_record(run))
    store.close()
    assert text.startswith(f"## assay run {run}")
    assert "| evaluator | mean |" in text and "Gates failed" in text
    assert "<img" not in text and "<script" not in text and "javascript:alert(1))" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") == rows[0].count(" | ") for line in rows[:2])
    nasty = next(line for line in rows if "javascript" in line)
    assert nasty.count(" | ") == 3  # the pipe in the id did not add a cell


def test_assay_report_writes_html_and_markdown(stored, tmp_path):
    url, run = stored
    done = _assay("report", run, "--store", url, "--html", str(tmp_path / "r.html"),
                  "--markdown", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"## assay run {run}")
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")
    done = _assay("report", run, "--store", url, "--markdown", str(tmp_path / "r.md"))
    assert done.returncode == 0 and (tmp_path / "r.md").read_text().startswith("## assay")


@pytest.mark.parametrize(("args", "message"), [
    ([], "--html FILE"),
    (["--html", "{store}"], "is the run store"),
    (["--markdown", "{store}"], "is the run store"),
])
def test_assay_report_refuses_bad_requests_clearly(stored, tmp_path, args, message):
    url, run = stored
    store_file = url.removeprefix("sqlite:///")
    before = Path(store_file).read_bytes()
    done = _assay("report", run, "--store", url, *[a.format(store=store_file) for a in args])
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert Path(store_file).read_bytes() == before


def test_assay_report_names_an_unknown_run(stored, tmp_path):
    url, _ = stored
    done = _assay("report", "no-such-run", "--store", url, "--html", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "no-such-run" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_assay_run_writes_html_and_markdown_reports(tmp_path):
    (tmp_path / "agent.py").write_text("def answer(q: str) -> str:\n    return 'echo ' + q\n")
    (tmp_path / "EVAL.yaml").write_text(
        "description: echo\nexecution:\n  target: agent\n  evaluators:\n"
        "    - {name: has_echo, type: contains, search_text: echo}\n"
        "evalcases:\n  - {id: c1, input: q1}\n  - {id: c2, input: q2}\n")
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: 'agent:answer'}\n")
    done = _assay("run", "EVAL.yaml", "--store", f"sqlite:///{tmp_path}/runs.db",
                  "--report", "html:out/report.html", "--report", "markdown:out/summary.md",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"case_id":"c1"' in (tmp_path / "out" / "report.html").read_text()
    assert "has\\_echo" in (tmp_path / "out" / "summary.md").read_text()


def test_the_markdown_lists_a_passing_case_an_evaluator_could_not_score(tmp_path):
    """A pass beside an evaluator's error is among the run's failures (the gate counts it,
    ``assay show --failed`` and JUnit list it): the Markdown's problem cases list it too,
    saying which evaluator could not score it, where it listed only verdicts."""
    import assay
    from assay.types.config import Gates

    @assay.scorer
    def picky(outputs) -> bool:
        if outputs == "half":
            raise ValueError("cannot read this one")
        return True

    rows = [{"id": i, "input": "q", "output": i, "expected_output": e}
            for i, e in (("fine", "fine"), ("half", "half"), ("wrong", "right"))]
    result = assay.evaluate(rows, evaluators=["exact_match", picky],
                            store=f"sqlite:///{tmp_path}/runs.db", gates=Gates(max_failed=None))
    listed = {r.case_id for r in result.records if r.failed_or_errored}
    assert listed == {"half", "wrong"} and result.records[1].verdict is Verdict.PASS
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    text = render_markdown(store, store.run_record(result.run_id))
    store.close()
    assert "2 cases with errors, failures or borderline scores" in text, text
    assert "| half | pass | 1.000 | picky: error " in text, text
    assert "| fine |" not in text


def test_report_names_each_file_it_wrote_on_standard_error(tmp_path):
    """``assay report --html FILE`` printed nothing on success: it names the file (and a
    Markdown file) on standard error, so standard output keeps only a Markdown report
    written there; a missing folder is created, as ``assay run --output`` creates one."""
    from typer.testing import CliRunner

    from assay.cli import app as cli_app

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = RunStore(url)
    run_id = write_run(store, 3)
    store.close()
    page, notes = tmp_path / "new" / "folder" / "report.html", tmp_path / "notes.md"
    shown = CliRunner().invoke(cli_app, ["report", run_id, "--html", str(page), "--markdown",
                                         str(notes), "--store", url],
                               env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert page.is_file() and notes.is_file()
    assert shown.stdout == ""
    assert shown.stderr.splitlines() == [f"HTML report written to {page}",
                                         f"Markdown report written to {notes}"]
    to_stdout = CliRunner().invoke(cli_app, ["report", run_id, "--html", str(page),
                                             "--markdown", "-", "--store", url],
                                   env={"COLUMNS": "400", "GITHUB_STEP_SUMMARY": ""})
    assert to_stdout.exit_code == 0, to_stdout.output
    assert to_stdout.stdout == notes.read_text(encoding="utf-8")
    assert to_stdout.stderr.splitlines() == [f"HTML report written to {page}"]


def test_a_reports_case_details_are_read_a_page_at_a_time(tmp_path):
    """The HTML report read every record of the run at once to keep the details of the
    cases it shows: 1,000 answers of 20 KB (20 MB of text) held together for a report of
    10 cases. It reads them a page at a time, keeping only the cases it shows."""
    import tracemalloc

    from assay.types.records import SummaryBuilder

    store = RunStore(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = store.create_run("s", {})
    builder = SummaryBuilder()
    for i in range(1000):
        case = Case(id=f"c{i:04d}", input="q")
        execution = Execution(output=f"{i} " + "b" * 20_000)
        score = Score(name="e", value=1.0 if i % 10 else 0.0)
        record = CaseRecord(run_id=run_id, case_id=case.id, case=case, execution=execution,
                            scores=[score], score=score.value,
                            verdict=Verdict.PASS if i % 10 else Verdict.FAIL)
        store.record_execution(run_id, case.id, 0, execution)
        store.record_score(run_id, case.id, 0, score)
        store.record_case(record)
        builder.add(record)
    store.flush()
    store.set_status(run_id, "completed", builder.build().model_dump(mode="json"))
    store.read_page = 50
    run = store.run_record(run_id)
    tracemalloc.start()
    try:
        data = report_data(store, run, max_cases=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    store.close()
    assert sorted(data["details"]) == [f"c{i:04d}#0" for i in range(0, 100, 10)]  # the fails
    assert peak < 8 * 2**20, f"a report of 10 cases peaked at {peak / 2**20:.1f} MiB"
