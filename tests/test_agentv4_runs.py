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
