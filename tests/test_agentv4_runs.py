"""What AgentV 4 added to a run: grading recorded transcripts (``--transcript``), a budget
(``--budget-usd``: stop before it is spent, resumable, nothing lost) and re-running only what
failed (``--rerun-failed``)."""

from __future__ import annotations

import json
import shlex
import sys
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
    assert "4 cases: " in again.stdout


def test_the_resume_command_prints_a_store_path_with_brackets_as_it_runs(tmp_path, mock_server,
                                                                          monkeypatch):
    """A path with ``[draft]`` in it is printed as written, with no markup escape in it, so
    the command copied from the terminal resumes the run."""
    suite = priced_suite(tmp_path, mock_server.url, 4, monkeypatch)
    (tmp_path / "[draft] runs").mkdir()
    out = assay_cli(tmp_path, "run", suite.name, "--budget-usd", "0.05", "--cache", "off",
                    "--store", "[draft] runs/runs.db")
    assert out.returncode == 1, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("resume with: "))
    assert "\\" not in line and "[draft] runs/runs.db" in line, line
    command = shlex.split(line.removeprefix("resume with: "))
    again = assay_cli(tmp_path, *command[1:], "--cache", "off")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 cases: " in again.stdout


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


def test_a_cases_cost_counts_the_analysis_of_its_failure():
    """--cause-analysis makes one more judge call per failed case: the budget counts it, and
    an analysis of unknown price makes the case's cost unknown."""
    from assay.run.budget import record_cost
    from assay.types import Case, Execution, Score
    from assay.types.records import CaseRecord, CauseAnalysis, Verdict
    from assay.types.usage import Usage

    case = Case(id="c", input="q")
    judged = Score(name="j", value=0.0, usage=Usage(calls=1, cost=0.25))
    record = CaseRecord(case_id="c", case=case, execution=Execution(input="q", output="a"),
                        scores=[judged], verdict=Verdict.FAIL)
    assert record_cost(record) == 0.25
    record.cause_analysis = CauseAnalysis(usage=Usage(calls=1, cost=0.5))
    assert record_cost(record) == 0.75
    record.cause_analysis = CauseAnalysis(usage=Usage(calls=1, prompt_tokens=9, cost=None))
    assert record_cost(record) is None


# -- --rerun-failed ------------------------------------------------------------------------------

FLAKY_AGENT = """
import json, sys
case_id, out = sys.argv[1], sys.argv[2]
with open("calls.log", "a") as log:
    log.write(case_id + "\\n")
answer = json.load(open("answers.json")).get(case_id)
if answer is None:
    sys.exit("no answer today")
open(out, "w").write(answer)
"""


def test_rerun_failed_runs_only_what_failed_in_a_new_whole_run(tmp_path):
    (tmp_path / "agent.py").write_text(FLAKY_AGENT)
    write(tmp_path / ".agentv" / "targets.yaml", f"""
        targets:
          - name: agent
            provider: cli
            command: ["{sys.executable}", agent.py, "{{EVAL_ID}}", "{{OUTPUT_FILE}}"]
        """)
    (tmp_path / "EVAL.yaml").write_text(json.dumps({"target": "agent", "tests": [
        {"id": i, "input": "Capital of France?",
         "assertions": [{"type": "contains", "value": "Paris"}]} for i in ("a", "b", "c")]}))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"a": "Paris", "b": "Lyon"}))  # b fails, c errors
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    first = assay_cli(tmp_path, "run", "EVAL.yaml", "--store", store, "-o", "first.jsonl")
    assert first.returncode == 1, first.stdout + first.stderr
    first_id = first.stdout.split("run ")[-1].split()[0]
    answers.write_text(json.dumps({"a": "Paris", "b": "Paris", "c": "Paris"}))
    (tmp_path / "calls.log").write_text("")
    again = assay_cli(tmp_path, "run", "--rerun-failed", first_id, "--store", store, "-o",
                      "again.jsonl")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"re-running the failures of run {first_id}: 2 failed or errored, 1 kept" in \
        again.stdout
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["b", "c"]
    rows = [json.loads(x) for x in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert sorted((r["eval_id"], r["score"]) for r in rows) == [("a", 1.0), ("b", 1.0),
                                                                 ("c", 1.0)]
    from assay.store.runs import open_store

    opened = open_store(store)
    new_id = next(r.id for r in opened.run_records() if r.id != first_id)
    new_run, old_run = opened.run_record(new_id), opened.run_record(first_id)
    assert new_run.status.value == "completed"
    assert new_run.config.model_extra["rerun_of"] == first_id
    assert {r.case_id: r.verdict.value for r in opened.case_records(first_id)} == {
        "a": "pass", "b": "fail", "c": "error"}  # the run re-run is left as it was
    kept = next(r for r in opened.case_records(new_id) if r.case_id == "a")
    original = next(r for r in opened.case_records(first_id) if r.case_id == "a")
    assert kept.execution == original.execution and kept.scores == original.scores
    compared = assay_cli(tmp_path, "compare", first_id, new_id, "--store", store)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert old_run.summary is not None and old_run.summary.cases == 3


def test_rerun_failed_of_a_run_stored_under_a_given_id_gets_an_id_of_its_own(tmp_path):
    """A run given its id (uipath eval's --eval-set-run-id) records it; its re-run is a new
    run, so it takes a new id rather than being refused as that run already stored."""
    from assay.types.config import RunConfig

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    rows = [{"id": "a", "input": "q", "expected_output": "q"},
            {"id": "b", "input": "x", "expected_output": "y"}]
    first = assay.evaluate(rows, target=echo, evaluators=["exact_match"], store=store,
                           config=RunConfig(run_id="nightly-1"))
    assert first.run_id == "nightly-1"
    again = assay.rerun_failed("nightly-1", store=store, target=echo, data=rows)
    assert again.run_id != "nightly-1"
    assert again.run.config.model_extra["rerun_of"] == "nightly-1"
    assert sorted(r.case_id for r in again.records) == ["a", "b"]


def echo(question: str) -> str:
    return question


def test_rerun_failed_of_a_run_still_running_is_refused(tmp_path):
    from assay.store.runs import open_store

    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = store.create_run("s", {})
    store.hold_lease(run_id)
    with pytest.raises(ConfigError, match="is still running"):
        assay.rerun_failed(run_id, store=store)
