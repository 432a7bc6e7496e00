"""A run's cost never hides a part whose cost is unknown.

A run's estimated cost sums the agent's, the simulated user's and the judge's costs that are
known. A part that made calls at an unknown cost (an agent that reports its tokens but not its
cost, a model with no known price) is named after the sum on every surface
(``$0.0123 + unknown (agent)``, ``unknown (agent, judge)``), and a comparison does not
present a change of such partial sums as a measured change of cost. The runs are real: an
agent in-process, the judge and the simulated user on the project's mock server
(``openai:gpt-4o-mini`` is priced, the mock server's own model name is not), stored in SQLite.
"""

from __future__ import annotations

import json
import re
import sqlite3
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import assay
from assay.cli import app as cli_app
from assay.report.comparison import figure_rows
from assay.run.display import run_display
from assay.store.runs import RunStore
from assay.targets.conversation import STOP_SIGNAL
from assay.testing.mock_server import RunningServer
from assay.types import numbers
from assay.types.records import RunSummary
from assay.types.usage import Usage
from tests.server_support import serve
from tests.test_one_number import html_report, junit

PRICED = "openai:gpt-4o-mini"
"""A judge model with a known price, answered by the mock server."""
AGENT_COST = 0.002
"""What the agent says one execution cost, when it says it."""


@pytest.fixture
def openai_on_mock(mock_server: RunningServer, monkeypatch: pytest.MonkeyPatch
                   ) -> RunningServer:
    """``openai:`` models answered by the mock server."""
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return mock_server


def _cli(*args: str, code: int = 0) -> str:
    done = CliRunner().invoke(cli_app, list(args))
    assert done.exit_code == code, done.output
    return done.output


def _agent(priced: Callable[[str], bool]) -> Callable[[str], assay.Execution]:
    """An agent that reports its tokens on every question, and its cost on those ``priced``
    says it knows the cost of."""
    def agent(question: str) -> assay.Execution:
        return assay.Execution(output=question, usage={
            "prompt_tokens": 10, "completion_tokens": 5,
            "cost": AGENT_COST if priced(question) else None})
    return agent


ROWS = [{"id": question, "input": question, "expected_output": question}
        for question in ("first", "second")]


def _run(url: str, judge_model: str, priced: Callable[[str], bool]) -> assay.EvaluationResult:
    return assay.evaluate(ROWS, target=_agent(priced), evaluators=["semantic_similarity"],
                          judge_model=judge_model, store=url, cache="off", concurrency=1)


def _never(_question: str) -> bool:
    return False


def _always(_question: str) -> bool:
    return True


def _first(question: str) -> bool:
    return question == "first"


@pytest.mark.parametrize("judge, priced, unknown, agent_known", [
    (PRICED, _never, ["agent"], 0),  # the agent reports tokens, no cost
    ("mock", _never, ["agent", "judge"], None),  # nothing is known
    (PRICED, _first, ["agent"], 1),  # the agent priced one execution of two
    (PRICED, _always, [], 2),  # every part known: the sum alone
])
def test_a_runs_cost_names_each_part_whose_cost_is_unknown(
        openai_on_mock, mock_model, tmp_path, judge, priced, unknown, agent_known):
    """The summary summed the known costs and said nothing of a part that spent at an
    unknown cost: ``$0.000064`` read as the whole run's cost while the agent's was unknown.
    It now names those parts, and the run's cost says them after the known sum."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    judge_model = mock_model if judge == "mock" else judge
    result = _run(url, judge_model, priced)
    summary = result.summary
    assert summary.cost_unknown == unknown
    # the figures for code: the whole cost, or None rather than a partial sum
    assert result.assay_metrics["cost_usd"] == (None if unknown else summary.estimated_cost_usd)
    assert result.assay_metrics["agent_tokens"] == 30
    assert summary.agent_usage.calls == 2 and summary.usage.calls == 2
    if agent_known is None:
        assert summary.estimated_cost_usd is None
        want = "unknown (agent, judge)"
    else:
        assert summary.usage.cost is not None
        known = summary.usage.cost + agent_known * AGENT_COST
        assert summary.estimated_cost_usd == pytest.approx(known)
        want = numbers.usd(known) + (" + unknown (agent)" if unknown else "")
        assert re.fullmatch(r"\$0\.\d{4,6}( \+ unknown \(agent\))?", want)
    stored = _stored(url)
    assert stored.cost_unknown == unknown
    assert run_display(stored).cost == want


def _stored(url: str) -> RunSummary:
    """The summary of the one run ``url`` holds, as the store reads it back."""
    store = RunStore(url)
    try:
        (run,) = store.run_records()
        summary = run.summary
    finally:
        store.close()
    assert summary is not None
    return summary


AGENT_UNKNOWN = re.compile(r"\$0\.\d{4,6} \+ unknown \(agent\)")
"""The cost every surface shows of a run whose judge is priced and whose agent is not."""


def test_every_surface_shows_the_part_whose_cost_is_unknown(openai_on_mock, tmp_path):
    """The terminal (``assay show RUN`` and its ``--summary``), Markdown, JUnit's
    properties, the HTML report, the REST API's display fields and the result's ``str`` and
    notebook table all show the run's cost as one text, the unknown agent named."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = _run(url, PRICED, _never)
    shown = result.display.cost
    assert AGENT_UNKNOWN.fullmatch(shown), shown
    tokens = f"tokens: agent 30, simulated user -, judge {result.display.judge_tokens}"
    _every_surface_shows(url, result.run_id, f"{shown}; {tokens}", tmp_path)
    assert f"cost {shown}" in str(result)
    assert f"cost {shown}" in result._repr_html_()


def _every_surface_shows(url: str, run_id: str, spent: str, tmp_path: Path) -> None:
    """``spent`` (the run's cost and tokens) in ``assay show`` and its ``--summary``, in
    Markdown, JUnit's properties, the HTML report and the REST API's display fields."""
    shown = spent.split(";")[0]
    line = f"total cost {spent}\n"
    assert line in _cli("show", run_id, "--summary", "--store", url)
    assert line in _cli("show", run_id, "--store", url)
    markdown = _cli("report", run_id, "--markdown", "-", "--store", url)
    assert f"Total cost: {spent}\n" in markdown, markdown
    assert junit(url, run_id, tmp_path)[2]["assay.cost"] == shown
    assert html_report(url, run_id, tmp_path)[0]["cost"] == shown
    with serve(url) as served, served.client() as client:
        assert client.get(f"/runs/{run_id}").json()["display"]["cost"] == shown
        listed = client.get("/runs").json()["items"][0]
        assert listed["display"]["cost"] == shown


def test_a_run_that_made_no_paid_call_costs_a_known_zero(tmp_path):
    """A run of deterministic checks (no judge call, an agent that reports no usage) showed
    "total cost unknown" beside "judge cost $0.0000". A part that made no call costs a known
    $0, so the run's cost is $0.0000 on every surface, also from a summary stored before
    (whose total was left empty); the total is unknown only when a part that spent has no
    price."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = assay.evaluate(ROWS, target=lambda question: question,
                            evaluators=["exact_match"], store=url)
    summary = result.summary
    assert (summary.usage.calls, summary.agent_usage.calls) == (0, 0)
    assert (summary.estimated_cost_usd, summary.cost_unknown) == (0.0, [])
    assert result.display.judge_cost == result.display.cost == "$0.0000"
    assert result.assay_metrics["cost_usd"] == 0.0
    spent = "$0.0000; tokens: agent -, simulated user -, judge -"
    _every_surface_shows(url, result.run_id, spent, tmp_path)
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("UPDATE runs SET summary = json_set(summary, '$.estimated_cost_usd', "
                   "json('null')) WHERE id = ?", (result.run_id,))
    _every_surface_shows(url, result.run_id, spent, tmp_path)


def test_a_summary_stored_without_the_unknown_parts_names_them_from_its_usages(
        openai_on_mock, mock_model, tmp_path):
    """A summary stored before the unknown parts were recorded still reads, and names the
    parts its usages say spent at an unknown cost: its total must not read as complete."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _run(url, mock_model, _never).run_id
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("UPDATE runs SET summary = json_remove(summary, '$.cost_unknown') "
                   "WHERE id = ?", (run_id,))
        (stored,) = db.execute("SELECT summary FROM runs WHERE id = ?", (run_id,)).fetchone()
    assert "cost_unknown" not in json.loads(stored)
    store = RunStore(url)
    try:
        summary = store.run_record(run_id).summary
    finally:
        store.close()
    assert summary is not None and summary.cost_unknown == ["agent", "judge"]
    assert "total cost unknown (agent, judge);" in _cli("show", run_id, "--summary",
                                                       "--store", url)
    assert RunSummary().cost_unknown == []
    spent = RunSummary(simulator_usage=Usage(calls=2, cost=None),
                       usage=Usage(cached_calls=3, cost=None))
    assert spent.cost_unknown == ["simulated user", "judge"]


# -- a conversation: the simulated user's cost and tokens, what stopped it --------------------

DESK = """\
    name: desk
    conversation:
      max_turns: 4
      simulator: {{model: "{simulator}"}}
    execution:
      evaluators:
        - {{type: semantic_similarity, model: "{judge}"}}
    evalcases:
      - id: where-is-my-order
        persona: {persona}
        expected_output: Order A-17 has shipped.
    """
"""A one-case conversation whose simulated user asks once, then stops."""


def conversation_run(url: str, folder: Path, simulator: str) -> assay.EvaluationResult:
    """A conversation with a simulated user on ``simulator`` (the mock server's own model:
    no known price), an agent that prices its turns and a priced judge; needs ``openai:``
    models answered by the mock server (:func:`openai_on_mock`)."""
    def desk(messages: list[dict[str, Any]]) -> assay.Execution:
        return assay.Execution(output="Order A-17 has shipped.", usage={
            "prompt_tokens": 40, "completion_tokens": 10, "cost": AGENT_COST})

    persona = json.dumps("A customer checking on an order. <<mock-seq:"
                         + json.dumps(["Where is my order A-17?", STOP_SIGNAL]) + ">>")
    suite = folder / "desk.yaml"
    suite.write_text(textwrap.dedent(DESK.format(simulator=simulator, judge=PRICED,
                                                 persona=persona)), encoding="utf-8")
    return assay.evaluate(suite, target=desk, store=url, cache="off")


SIMULATOR_UNKNOWN = re.compile(r"\$0\.\d{4} \+ unknown \(simulated user\)")


def test_a_conversations_cost_tokens_and_stop_reasons_show_in_the_run(
        openai_on_mock, mock_model, tmp_path):
    """A simulated user with no known price is named in the run's cost; its tokens, the
    agent's and what stopped the conversations are shown by ``assay show RUN`` and sent in
    the REST API's display fields, which the web UI shows."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = conversation_run(url, tmp_path, mock_model)
    summary, shown = result.summary, result.display
    assert summary.cost_unknown == ["simulated user"]
    assert summary.simulator_usage.calls == 2 and summary.stop_reasons == {"user_ended": 1}
    assert SIMULATOR_UNKNOWN.fullmatch(shown.cost), shown.cost
    assert summary.usage.cost is not None
    assert summary.estimated_cost_usd == pytest.approx(AGENT_COST + summary.usage.cost)
    assert (shown.agent_tokens, shown.stop_reasons) == ("50", "user_ended 1")
    assert shown.simulator_tokens == numbers.count(summary.simulator_usage.total_tokens)
    text = _cli("show", result.run_id, "--store", url)
    assert (f"total cost {shown.cost}; tokens: agent 50, simulated user {shown.simulator_tokens}"
            f", judge {shown.judge_tokens}\nconversations stopped: user_ended 1\n") in text, text
    with serve(url) as served, served.client() as client:
        display = client.get(f"/runs/{result.run_id}").json()["display"]
    assert {key: display[key] for key in ("cost", "agent_tokens", "simulator_tokens",
                                          "judge_tokens", "stop_reasons")} == \
        {"cost": shown.cost, "agent_tokens": "50", "simulator_tokens": shown.simulator_tokens,
         "judge_tokens": shown.judge_tokens, "stop_reasons": "user_ended 1"}


def test_a_part_that_made_no_call_shows_no_tokens_and_nothing_spent_reads_as_such():
    """A part that made no call has no tokens to show (``-``, never ``0``); a bare summary
    (what a run without one is shown with, whose spending is not known) keeps its one word."""
    shown = run_display(RunSummary())
    assert (shown.agent_tokens, shown.simulator_tokens, shown.judge_tokens,
            shown.stop_reasons, shown.cost) == ("-", "-", "-", "-", "unknown")
    assert numbers.cost_parts(0.0123, ["agent"]) == "$0.0123 + unknown (agent)"
    assert numbers.cost_parts(None, ["agent", "judge"]) == "unknown (agent, judge)"
    assert numbers.cost_parts(12.5, []) == "$12.50"
    escaped = run_display(RunSummary(stop_reasons={"\x1b[2J": 1, "max_turns": 1234}))
    assert escaped.stop_reasons == r"\x1b[2J 1, max_turns 1,234"


# -- a comparison of runs whose costs leave a part out -------------------------------------


@pytest.fixture
def compared_runs(openai_on_mock, tmp_path) -> Iterator[tuple[str, str, str]]:
    """(the store, a baseline whose agent priced nothing, a candidate whose agent priced
    one execution of two): the candidate's partial sum is higher by that one execution."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    baseline = _run(url, PRICED, _never).run_id
    candidate = _run(url, PRICED, _first).run_id
    yield url, baseline, candidate


WHY = "the cost is not compared: the baseline's agent cost and the candidate's agent cost " \
      "are unknown"


def test_a_cost_change_of_runs_with_an_unknown_part_is_not_a_measured_change(compared_runs):
    """The candidate's known costs were higher by one execution's agent cost, which a
    comparison showed as the cost's change (``+$0.0020 (more)``) and, with a cost gate,
    as a regression ("cost rose 1559.5%"), though both runs' agent costs are unknown. Now
    every surface says the change is not comparable, why, and that the gate was not
    checked; the JSON has no delta."""
    url, baseline, candidate = compared_runs
    result = assay.compare(baseline, candidate, store=url,
                           thresholds={"max_cost_increase_pct": 0.1})
    assert result.aggregate.cost_delta_usd is None
    assert not result.verdict.regression_detected, result.verdict.reasons
    cost = next(row for row in figure_rows(result) if row.label == "cost")
    assert AGENT_UNKNOWN.fullmatch(cost.baseline) and AGENT_UNKNOWN.fullmatch(cost.candidate)
    assert (cost.change, cost.direction) == ("not comparable", "unknown")
    warning = f"{WHY}; the cost gate (a rise over 10.0%) was not checked"
    assert result.warnings == [warning]
    text = _cli("compare", baseline, candidate, "--store", url,
                "--max-cost-increase-pct", "0.1")
    flat = " ".join(text.split())
    assert "not comparable" in flat and warning in flat, text
    assert "(more)" not in text and "cost rose" not in text
    markdown = _cli("compare", baseline, candidate, "--store", url, "--markdown")
    assert "not comparable" in markdown and "the cost is not compared" in markdown
    found = json.loads(_cli("compare", baseline, candidate, "--store", url, "--json"))
    assert found["aggregate"]["cost_delta_usd"] is None
    assert found["candidate"]["cost_unknown"] == ["agent"]
    with serve(url) as served, served.client() as client:
        page = client.get("/runs/compare", params={
            "baseline_run_id": baseline, "candidate_run_id": candidate}).json()
    shown = json.dumps(page)
    assert "not comparable" in shown and WHY in shown


def test_runs_whose_costs_are_known_in_full_are_compared_as_before(openai_on_mock, tmp_path):
    """Two runs that priced every part: their change of cost is measured, with no warning;
    one whose agent priced only part of its executions is not compared on cost."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    partly, full, again = (_run(url, PRICED, priced).run_id
                           for priced in (_first, _always, _always))
    assert assay.compare(partly, full, store=url).aggregate.cost_delta_usd is None
    known = assay.compare(full, again, store=url)
    assert known.aggregate.cost_delta_usd == 0.0 and known.warnings == []
    row = next(row for row in figure_rows(known) if row.label == "cost")
    assert row.change == numbers.usd_change(0.0) and "unknown" not in row.baseline
