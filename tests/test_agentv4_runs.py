"""What AgentV 4 added to a run: grading recorded transcripts (``--transcript``), a budget
(``--budget-usd``: stop before it is spent, resumable, nothing lost) and re-running only what
failed (``--rerun-failed``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.errors import ConfigError
from tests.test_agentv4 import write
from tests.test_cli_run import assay as assay_cli

SUITE = """
    tests:
      - id: capital
        input: What is the capital of France?
        assertions:
          - {name: names_paris, type: contains, value: Paris}
      - id: tools
        input: Look up the weather
        assertions:
          - {name: sunny, type: icontains, value: sunny}
          - {name: used_tool, type: contains, value: weather}
    """

SESSIONS = [
    {"test_id": "capital", "message_index": 0, "role": "user",
     "content": "What is the capital of France?", "transcript_token_usage":
     {"input": 10, "output": 5}, "transcript_duration_ms": 1500, "transcript_cost_usd": 0.001},
    {"test_id": "capital", "message_index": 1, "role": "assistant", "content": "It is Paris.",
     "transcript_token_usage": {"input": 10, "output": 5}, "transcript_duration_ms": 1500,
     "transcript_cost_usd": 0.001},
    {"test_id": "tools", "message_index": 0, "role": "user", "content": "Look up the weather"},
    {"test_id": "tools", "message_index": 1, "role": "assistant", "content": "",
     "tool_calls": [{"tool": "weather", "input": {"city": "Paris"},
                     "output": {"sky": "clear"}, "id": "t1"}]},
    {"test_id": "tools", "message_index": 2, "role": "assistant",
     "content": "It is Sunny today."},
]


def transcripts(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps({"target": "claude", "source": {
        "provider": "claude", "session_id": "s"}, **row}) + "\n" for row in rows))
    return path


def test_recorded_transcripts_are_graded_as_agentv_4_grades_them(tmp_path):
    """AgentV 4.42.4 on the same files (``agentv eval EVAL.yaml --transcript ...``): capital
    1 (names_paris 1, tokens 10+5, cost 0.001, 1500 ms), tools 0.5 (sunny 1, used_tool 0)."""
    write(tmp_path / "EVAL.yaml", SUITE)
    transcripts(tmp_path / "sessions.jsonl", SESSIONS)
    out = assay_cli(tmp_path, "run", "EVAL.yaml", "--transcript", "sessions.jsonl", "-o",
                    "rows.jsonl", "--max-failed", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {r["eval_id"]: r for r in map(json.loads, (tmp_path / "rows.jsonl").read_text()
                                         .splitlines())}
    assert {k: r["score"] for k, r in rows.items()} == {"capital": 1.0, "tools": 0.5}
    assert {e["name"]: e["score"] for e in rows["tools"]["evaluator_results"]} == {
        "sunny": 1.0, "used_tool": 0.0}
    result = assay.evaluate(tmp_path / "EVAL.yaml", transcript=str(tmp_path / "sessions.jsonl"))
    capital = next(r for r in result.records if r.case_id == "capital").execution
    assert capital.output == "It is Paris." and capital.latency_ms == 1500
    assert capital.usage is not None and (capital.usage.prompt_tokens,
                                          capital.usage.cost) == (10, 0.001)
    tools = next(r for r in result.records if r.case_id == "tools").execution
    assert [m.role for m in tools.messages] == ["user", "assistant", "tool", "assistant"]
    call = tools.messages[1].tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "t1", "weather", {"city": "Paris"})
    assert json.loads(tools.messages[2].content) == {"sky": "clear"}


def test_a_transcript_answers_the_case_of_its_id_not_of_its_place(tmp_path):
    """AgentV 4 pairs transcripts with tests by position: a file listing the sessions in
    another order grades each test on another session. Here each keeps its own."""
    write(tmp_path / "EVAL.yaml", SUITE)
    reordered = transcripts(tmp_path / "s.jsonl", [*SESSIONS[2:], *SESSIONS[:2]])
    result = assay.evaluate(tmp_path / "EVAL.yaml", transcript=str(reordered))
    assert {r.case_id: r.score for r in result.records} == {"capital": 1.0, "tools": 0.5}


def test_a_case_without_a_transcript_is_refused_before_judging(tmp_path):
    write(tmp_path / "EVAL.yaml", SUITE)
    partial = transcripts(tmp_path / "s.jsonl", [*SESSIONS[:2], {
        "test_id": "elsewhere", "message_index": 0, "role": "assistant", "content": "x"}])
    with pytest.raises(ConfigError, match="no transcript for case\\(s\\) 'tools'; transcript"
                                          "\\(s\\) for no case: 'elsewhere'"):
        assay.evaluate(tmp_path / "EVAL.yaml", transcript=str(partial))
    only = assay.evaluate(tmp_path / "EVAL.yaml", transcript=str(partial), filter="capital")
    assert [r.score for r in only.records] == [1.0]  # a filtered run needs only its cases


@pytest.mark.parametrize("line, message", [
    ("{not json", "s.jsonl:2: invalid JSON"),
    ('{"message_index": 0, "role": "user"}', "s.jsonl:2: a transcript row needs 'test_id'"),
    ('{"test_id": "a", "role": "robot"}', "s.jsonl:2: role 'robot' is not a message role"),
])
def test_a_bad_transcript_row_is_located(tmp_path, line, message):
    write(tmp_path / "EVAL.yaml", SUITE)
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(SESSIONS[0]) + "\n" + line + "\n")
    with pytest.raises(ConfigError, match=message):
        assay.evaluate(tmp_path / "EVAL.yaml", transcript=str(path))


def test_a_transcript_target_in_a_targets_file(tmp_path):
    transcripts(tmp_path / "sessions.jsonl", SESSIONS)
    write(tmp_path / ".agentv" / "targets.yaml", """
        targets:
          - {name: recorded_sessions, provider: transcript, path: sessions.jsonl}
        """)
    write(tmp_path / "EVAL.yaml", "target: recorded_sessions\n" + SUITE.strip() + "\n")
    result = assay.evaluate(tmp_path / "EVAL.yaml")
    assert {r.case_id: r.score for r in result.records} == {"capital": 1.0, "tools": 0.5}


# -- --budget-usd ------------------------------------------------------------------------------


def priced_suite(tmp_path: Path, mock_url: str, cases: int, monkeypatch) -> Path:
    """``cases`` alike cases, each judged once by a priced mock model (about $0.1 a case)."""
    from tests.test_agentv4 import cli_agent

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"mock-judge": [300.0, 300.0]}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    cli_agent(tmp_path, "Paris", judge_url=mock_url)
    tests = [{"id": f"case-{i}", "input": "Capital of France?", "assertions": [
        {"type": "llm-grader", "prompt": 'Judge {{output}}\n<<mock:{"score": 1, "hits": [], '
         '"misses": [], "reasoning": "ok"}>>'}]} for i in range(cases)]
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(json.dumps({"target": "agent", "tests": tests}))
    return suite


def test_a_budget_stops_the_run_before_it_is_spent_and_a_resume_runs_the_rest(
        tmp_path, mock_server, monkeypatch):
    suite = priced_suite(tmp_path, mock_server.url, 6, monkeypatch)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    probe = assay.evaluate(suite, store=store, filter="case-0", cache="off")
    per_case = probe.records[0].scores[0].usage.cost
    assert per_case is not None and 0.05 < per_case < 0.5
    budget = per_case * 2.5  # room for two cases, not three
    mock_server.server.reset()
    result = assay.evaluate(suite, store=store, budget_usd=budget, concurrency=4,
                            cache="off")
    assert result.run.status.value == "interrupted"
    assert len(result.records) == 2 and mock_server.stats.requests == 2
    spent = sum(r.scores[0].usage.cost or 0 for r in result.records)
    assert spent <= budget
    assert not result.passed
    (failure,) = result.summary.gate_failures
    assert failure.startswith(f"the budget of ${budget:.4f} stopped the run with 4 case(s) "
                              "not run")
    mock_server.server.reset()
    resumed = assay.resume(result.run_id, store=store, cache="off")
    assert resumed.run.status.value == "completed" and resumed.passed
    assert len(resumed.records) == 6
    assert mock_server.stats.requests == 4  # only the cases the budget did not run


def test_budget_usd_on_the_command_line_says_how_to_resume(tmp_path, mock_server,
                                                           monkeypatch):
    suite = priced_suite(tmp_path, mock_server.url, 4, monkeypatch)
    out = assay_cli(tmp_path, "run", suite.name, "--budget-usd", "0.05", "--cache", "off")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "gate failed: the budget of $0.0500 stopped the run with 3 case(s) not run" in \
        out.stdout
    assert "resume with: assay run --resume " in out.stdout
    run_id = out.stdout.split("resume with: assay run --resume ")[1].split()[0]
    again = assay_cli(tmp_path, "run", "--resume", run_id, "--cache", "off")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "cases 4" in again.stdout


def test_a_budget_cannot_be_kept_on_an_unknown_cost(tmp_path, mock_server):
    from tests.test_agentv4 import cli_agent

    cli_agent(tmp_path, "Paris", judge_url=mock_server.url)  # mock-judge has no price
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(json.dumps({"target": "agent", "tests": [
        {"id": f"c{i}", "input": "x", "assertions": [
            {"type": "llm-grader", "prompt": "Judge {{output}}"}]} for i in range(3)]}))
    result = assay.evaluate(suite, budget_usd=10.0, cache="off")
    assert len(result.records) == 1
    assert "a case's cost is unknown" in result.summary.gate_failures[0]
    assert result.run.status.value == "interrupted"
