"""One run, the same counts and labels on every surface: the terminal (``assay show``), the
Markdown report, JUnit, the HTML report, ``assay show --json``, ``assay runs --json`` and the
REST API over real HTTP (which the web UI renders as sent).

The run has repeats (2) and, in each, a case that passes, one that fails, one no evaluator
could score, one no evaluator applied to, and one that passed while one of its evaluators
errored: every kind of count a run has. Verdicts count executions (a case and a repeat), the
scores' errors and not-applicable ones count evaluator scores, and each says which.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

import assay
from assay.cli import app as cli_app
from assay.report.html import report_data
from assay.report.markdown import render_markdown
from assay.report.reporters import write_report
from assay.report.terminal import summary_lines
from assay.store.runs import RunStore
from assay.types.score import Score
from tests.server_support import serve

VERDICTS = "10 executions: 4 pass, 2 fail, 0 borderline, 2 error, 2 skipped"
SCORES = "20 evaluator scores: 10 values, 6 errors, 4 not applicable"
JUDGE = "10 evaluator scores: 6 values (4 passed, 2 failed), 2 errors, 2 not applicable"


@assay.scorer
def judge(outputs: str) -> Any:
    """Passes "pass", fails "fail", cannot judge "boom", does not apply to the rest."""
    if "pass" in outputs:
        return 1.0
    if "fail" in outputs:
        return 0.0
    if "boom" in outputs:
        raise ValueError("cannot judge this one")
    return Score.not_applicable("judge", "nothing to judge")


@assay.scorer
def extra(outputs: str) -> Any:
    """Cannot judge "boom", does not apply to "nothing", passes the rest."""
    if "boom" in outputs:
        raise ValueError("extra cannot judge")
    if "nothing" in outputs:
        return Score.not_applicable("extra", "nothing to judge")
    return 1.0


def echo(question: str) -> str:
    return question


ROWS = [{"id": "c-pass", "input": "pass"}, {"id": "c-fail", "input": "fail"},
        {"id": "c-err", "input": "boom"}, {"id": "c-none", "input": "nothing"},
        {"id": "c-mixed", "input": "pass boom"}]


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The run, rendered by every surface."""
    tmp = tmp_path_factory.mktemp("one-run")
    url = f"sqlite:///{tmp / 'runs.db'}"
    result = assay.evaluate(ROWS, target=echo, evaluators=[judge, extra], store=url,
                            repeat=2, cache="off")
    run_id = result.run_id
    write_report("junit", result, tmp / "junit.xml")
    cli = CliRunner()
    store = RunStore(url)
    run = store.run_record(run_id)
    found = {
        "markdown": render_markdown(store, run),
        "html": report_data(store, run),
        "junit": ET.parse(tmp / "junit.xml").getroot().find("testsuite"),
        "show": cli.invoke(cli_app, ["show", run_id, "--store", url]).output,
        "show_json": [json.loads(line) for line in cli.invoke(
            cli_app, ["show", run_id, "--store", url, "--json"]).output.splitlines()],
        "runs_json": json.loads(cli.invoke(cli_app, ["runs", "--store", url, "--json"]).output),
        "runs": cli.invoke(cli_app, ["runs", "--store", url]).output,
        "show_failed": cli.invoke(cli_app, ["show", run_id, "--store", url, "--failed",
                                            "--limit", "2"]).output,
        "run_summary": " ".join(summary_lines(result.summary)),  # what `assay run` prints
    }
    store.close()
    with serve(url) as served, served.client() as client:
        found["rest"] = client.get(f"/runs/{run_id}").json()
        found["rest_runs"] = client.get("/runs").json()
        found["rest_cases"] = client.get(f"/runs/{run_id}/cases").json()
    yield found


def _properties(suite: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}


def test_every_surface_counts_the_verdicts_in_executions(surfaces):
    rows = surfaces["show_json"]
    counted = Counter(r["verdict"] for r in rows)
    assert (len(rows), counted) == (10, {"pass": 4, "fail": 2, "error": 2, "skipped": 2})
    assert surfaces["rest"]["display"]["verdicts"] == VERDICTS
    assert surfaces["html"]["run"]["display"]["verdicts"] == VERDICTS
    assert _properties(surfaces["junit"])["assay.verdicts"] == VERDICTS
    assert VERDICTS in surfaces["markdown"]
    assert VERDICTS in re.sub(r"\s+", " ", surfaces["show"])
    assert VERDICTS in surfaces["run_summary"]
    assert "| executions | pass rate |" in surfaces["markdown"]


def test_every_surface_counts_evaluator_scores_in_one_unit_and_one_name(surfaces):
    """An evaluator score that did not apply was "skipped" in the Markdown (beside an
    executions column, counting scores) and the web UI, and "not applicable" in the
    terminal: it is "not applicable" everywhere, counted as evaluator scores."""
    states = Counter(e["verdict"] if e["error"] or e["skipped"] else "value"
                     for r in surfaces["show_json"] for e in r["evaluator_results"])
    assert states == {"value": 10, "error": 6, "skipped": 4}  # the premise, row by row
    for display in (surfaces["rest"]["display"], surfaces["html"]["run"]["display"]):
        assert display["evaluator_scores"] == SCORES
        assert display["evaluator_counts"]["judge"] == JUDGE
    props = _properties(surfaces["junit"])
    assert (props["assay.evaluator_scores"], props["assay.evaluator.judge.counts"]) == \
        (SCORES, JUDGE)
    markdown = surfaces["markdown"]
    assert SCORES in markdown and "| values | passed | failed | errors | not applicable |" \
        in markdown
    assert "skipped |" not in markdown  # no column calls a score that did not apply skipped
    show = re.sub(r"\s+", " ", surfaces["show"])
    assert SCORES in show
    assert SCORES in surfaces["run_summary"] and f"judge: mean 0.667 ({JUDGE})" in \
        surfaces["run_summary"]


def test_junit_says_why_its_errors_are_more_than_the_error_verdicts(surfaces):
    """JUnit lists a passed execution whose evaluator errored as ``<error>`` (it has no
    place for it, and an error is never a pass): the suite's counts add up to the run's
    executions and its ``assay.junit_errors`` says which verdicts its errors had."""
    suite = surfaces["junit"]
    counts = {k: int(suite.get(k, "")) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": 10, "failures": 2, "errors": 4, "skipped": 2}
    assert _properties(suite)["assay.junit_errors"] == \
        "4 executions an evaluator could not score, whatever its verdict (verdicts: 2 error, " \
        "2 pass)"


def test_every_list_of_runs_counts_a_runs_cases_and_its_executions(surfaces):
    """A run of 5 cases x 2 repeats was listed as "10" cases: the executions, counted as
    cases."""
    listed = "5 (10 executions)"
    assert surfaces["runs_json"][0]["cases"] == listed
    assert surfaces["rest_runs"]["items"][0]["cases"] == listed
    assert listed in surfaces["runs"]


def test_the_markdowns_problem_list_counts_executions(surfaces):
    """It said "6 case(s) with errors" of 3 cases (in 6 executions)."""
    assert "6 executions with errors, failures or borderline scores" in surfaces["markdown"]


def test_a_reports_left_out_rows_are_counted_in_their_unit(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = assay.evaluate(ROWS, target=echo, evaluators=[judge], store=url, repeat=2,
                            cache="off")
    store = RunStore(url)
    data = report_data(store, store.run_record(result.run_id), max_cases=3)
    store.close()
    assert "3 of 10 executions, problems first" in data["generated"]


def test_every_surface_names_a_repeated_execution_alike(surfaces):
    """The second run of c-err was "c-err#1" in the terminal and JUnit, "c-err #1" in
    Markdown and the web UI: one name (``execution_name``) everywhere."""
    name = "c-err#1"
    assert name in surfaces["show"]
    assert name in {case.get("name") for case in surfaces["junit"].iter("testcase")}
    assert "| c-err\\#1 | error |" in surfaces["markdown"]
    assert name in {row["display"]["name"] for row in surfaces["html"]["cases"]}
    assert surfaces["html"]["details"][f"{name}"]["display"]["name"] == name
    assert name in {row["display"]["name"] for row in surfaces["rest_cases"]["items"]}


def test_assay_show_counts_what_it_left_out_in_executions(surfaces):
    """``assay show --failed --limit 2`` said "2 of 6 cases that did not pass shown (10 in
    the run)" of 3 cases in 6 executions."""
    assert "2 of 6 executions that did not pass shown (10 in the run)" in \
        re.sub(r"\s+", " ", surfaces["show_failed"])
