"""``assay eval``: ``agentv eval``'s command line (several suites and globs, --eval-id,
--agent-timeout, --max-retries, console statistics) and ``uipath eval``'s habits (the entry
point, --eval-ids, --workers, --output-file, --no-report), with tool and input mocking."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from assay.analysis.score_statistics import score_statistics
from assay.suites.paths import expand, parse_eval_ids
from assay.targets.mocking import from_uipath
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, Verdict
from assay.types.score import Score
from tests.test_cli_run import assay

UIPATH = Path(__file__).parent / "data" / "uipath_project"


# -- statistics by hand -----------------------------------------------------------


def _record(case_id: str, score: float | None, error: str | None = None) -> CaseRecord:
    return CaseRecord(case_id=case_id, case=Case(id=case_id),
                      execution=Execution(error=error), score=score,
                      scores=[Score(name="s", value=score) if score is not None
                              else Score.failed("s", "target_failed", error or "x")],
                      verdict=Verdict.PASS if score is not None else Verdict.ERROR)


def test_statistics_by_hand():
    records = [_record("a", 1.0), _record("b", 0.5), _record("c", 0.75), _record("d", 0.2),
               _record("e", 0.9), _record("f", None, error="agent crashed")]
    stats = score_statistics(records)
    assert (stats.total, stats.scored) == (6, 5)
    assert stats.mean == pytest.approx(0.67)             # 3.35 / 5
    assert stats.median == 0.75 and (stats.min, stats.max) == (0.2, 1.0)
    # deviations .33 -.17 .08 -.47 .23; squares sum .418; / (5 - 1) = .1045
    assert stats.stdev == pytest.approx(0.1045 ** 0.5)
    assert [count for _, _, count in stats.histogram] == [0, 1, 1, 1, 2]  # 1.0 in the last
    assert stats.top == [("a", 1.0), ("e", 0.9), ("c", 0.75)]
    assert stats.bottom == [("c", 0.75), ("b", 0.5), ("d", 0.2)]
    assert stats.errors == [("f", "agent crashed")]  # left out of the figures, not a 0


def test_arguments_name_suites_globs_and_entry_points(tmp_path):
    (tmp_path / "evals").mkdir()
    for name in ("b.yaml", "a.yaml", "c.txt"):
        (tmp_path / "evals" / name).write_text("x")
    (tmp_path / "main.py").write_text("")
    entry, suites = expand(["main.py", "evals/*.yaml"], tmp_path)
    assert entry == "main.py"
    assert suites == [tmp_path / "evals" / "a.yaml", tmp_path / "evals" / "b.yaml"]
    with pytest.raises(Exception, match="matches no file"):
        expand(["evals/*.json"], tmp_path)
    with pytest.raises(Exception, match="no such file"):
        expand(["evals/missing.yaml"], tmp_path)
    assert parse_eval_ids("['add', 'multiply']") == ["add", "multiply"]
    assert parse_eval_ids("add, multiply") == ["add", "multiply"]
    with pytest.raises(Exception, match="expected a list"):
        parse_eval_ids("['add'")


# -- the agentv eval command line ----------------------------------------------------


AGENT = '''
import time
from pathlib import Path

def run(question: str) -> str:
    if question == "slow":
        time.sleep(30)
    if question == "flaky":
        marker = Path(__file__).parent / "flaky.seen"
        if not marker.exists():
            marker.write_text("1")
            raise RuntimeError("first attempt fails")
    if question == "nope":
        return "no idea"
    return "42"
'''


def agentv_project(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / ".agentv").mkdir()
    (tmp_path / ".agentv" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: agent:run}\n")
    for folder, cases in (("evals/math", ["fast", "slow"]), ("evals/more", ["flaky", "nope"])):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "EVAL.yaml").write_text(textwrap.dedent(f"""
            execution:
              target: agent
              evaluators: [{{name: has_42, type: contains, search_text: "42"}}]
            evalcases:
              - {{id: {cases[0]}, expected_outcome: says 42, input: {cases[0]}}}
              - {{id: {cases[1]}, expected_outcome: says 42, input: {cases[1]}}}
              - {{id: other-{cases[0]}, expected_outcome: x, input: fast}}
            """))


def test_agentv_eval_command_line(tmp_path):
    agentv_project(tmp_path)
    out = assay(tmp_path, "eval", "evals/math/EVAL.yaml", "evals/m*e/*.yaml",
                "--eval-id", "[fns]*", "--workers", "2", "--agent-timeout", "2",
                "--max-retries", "1", "--out", "all.jsonl", "--max-failed", "5",
                "--max-errors", "5")
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert sorted(r["eval_id"] for r in rows) == ["fast", "flaky", "nope", "slow"]
    by_id = {r["eval_id"]: r for r in rows}
    assert "agent timeout of 2s" in by_id["slow"]["error"]           # --agent-timeout
    assert by_id["flaky"]["score"] == 1.0 and "error" not in by_id["flaky"]  # retried once
    assert {r["dataset"] for r in rows} == {"EVAL"}
    text = out.stdout
    assert text.count("run ") >= 2  # one stored run per suite
    assert "errors (1 case(s) without a score" in text and "slow: the agent took longer" in text
    # fast 1, flaky 1, nope 0: mean 0.667, median 1, std dev sqrt(1/3)
    assert "total 4, scored 3: mean 0.667, median 1.000, min 0.000, max 1.000, std dev 0.577" \
        in text
    assert "score distribution:" in text and "top: fast 1.000, flaky 1.000, nope 0.000" in text


def test_assay_run_takes_agentv_evals_command_line_too(tmp_path):
    """docs/agentv.md: ``agentv eval``'s flags work on ``assay run`` as on ``assay eval``;
    ``--out`` was 'No such option' there."""
    agentv_project(tmp_path)
    out = assay(tmp_path, "run", "evals/more/EVAL.yaml", "--eval-id", "f*", "--workers", "2",
                "--agent-timeout", "2", "--max-retries", "1", "--out", "rows.jsonl",
                "--max-failed", "5", "--max-errors", "5")
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [(r["eval_id"], r["score"]) for r in rows] == [("flaky", 1.0)]  # retried once


# -- uipath eval habits ----------------------------------------------------------------


CALCULATOR = '''
from assay.targets.mocking import mockable


@mockable()
def lookup_rate(currency: str) -> float:
    """The exchange rate of a currency to EUR."""
    raise RuntimeError("the real rate service must not be called in tests")


def main(inputs: dict) -> dict:
    a, b, op = inputs["a"], inputs["b"], inputs["operator"]
    result = a + b if op == "+" else a * b
    if "currency" in inputs:
        result = result * lookup_rate(inputs["currency"])
    return {"result": float(result), "operator": op}
'''


@pytest.fixture
def calculator(tmp_path) -> Path:
    project = tmp_path / "calculator"
    shutil.copytree(UIPATH, project)
    (project / "main.py").write_text(CALCULATOR)
    (project / "uipath.json").write_text(json.dumps({"functions": {"main": "main.py:main"}}))
    (project / "entry-points.json").write_text(json.dumps({"entryPoints": [{
        "filePath": "main", "type": "function", "input": {
            "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
                                             "operator": {"type": "string"}}}}]}))
    (project / "evaluations" / "eval-sets" / "legacy.json").unlink()  # one eval set
    return project


def test_uipath_eval_finds_the_entry_point_and_eval_set(calculator, mock_server):
    out = assay(calculator, "eval", "--judge-model", f"{mock_server.url}#judge",
                "--max-failed", "5", "--max-errors", "9")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Evaluation Results" in out.stdout and "Average" in out.stdout
    rows = [json.loads(line) for f in (calculator / ".assay" / "results").glob("*.jsonl")
            for line in f.read_text().splitlines()]
    assert {r["eval_id"] for r in rows} == {"add", "multiply", "add-again"}
    multiply = next(r for r in rows if r["eval_id"] == "multiply")
    assert multiply["candidate_answer"] == '{"result": 12.0, "operator": "*"}'


def test_uipath_eval_aliases(calculator, mock_server):
    out = assay(calculator, "eval", "main", "evaluations/eval-sets/calculator.json",
                "--eval-ids", "['add', 'multiply']", "--workers", "2",
                "--output-file", "out.json", "--no-report", "--judge-model",
                f"{mock_server.url}#judge", "--max-failed", "5", "--max-errors", "9")
    assert out.returncode == 0, out.stdout + out.stderr
    written = json.loads((calculator / "out.json").read_text())
    assert [r["evaluationName"] for r in written["evaluationSetResults"]] == [
        "Add two numbers", "Multiply"]
    missing = assay(calculator, "eval", "other", "evaluations/eval-sets/calculator.json")
    assert missing.returncode == 2 and "entry point 'other' is not declared" in missing.stderr


def test_assay_run_takes_the_same_aliases(calculator, mock_server):
    out = assay(calculator, "run", "evaluations/eval-sets/calculator.json", "--eval-ids",
                "add", "--workers", "1", "--output-file", "run.json", "--no-report",
                "--judge-model", f"{mock_server.url}#judge", "--max-failed", "5",
                "--max-errors", "9")
    assert out.returncode == 0, out.stdout + out.stderr
    written = json.loads((calculator / "run.json").read_text())
    assert [r["evaluationName"] for r in written["evaluationSetResults"]] == ["Add two numbers"]


@pytest.mark.parametrize("command", ["eval", "run"])
def test_no_report_says_it_does_nothing(tmp_path, command):
    out = assay(tmp_path, command, "--help", env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    described = " ".join(out.stdout.split("--no-report", 1)[1].split("\n  -", 1)[0].split())
    assert "does nothing" in described and "assay reports to no platform" in described


# -- tool and input mocking -------------------------------------------------------------


def _item(path: Path, index: int, **changes: object) -> None:
    data = json.loads(path.read_text())
    data["evaluations"][index].update(changes)
    path.write_text(json.dumps(data))


def test_recorded_tool_answers_and_generated_inputs(calculator, mock_server):
    eval_set = calculator / "evaluations" / "eval-sets" / "calculator.json"
    _item(eval_set, 0, inputs={"a": 3, "b": 5, "operator": "+", "currency": "USD"},
          mockingStrategy={"type": "mockito", "config": [
              {"function": "lookup_rate", "arguments": {"kwargs": {}, "args": ["USD"]},
               "then": [{"type": "return", "value": 2.0}]}]})
    generated = {"input": {"a": 6, "b": 7, "operator": "*"}}
    _item(eval_set, 1, inputMockingStrategy={
        "prompt": f"Multiply two small numbers. <<mock:{json.dumps(generated)}>>"})
    out = assay(calculator, "eval", "--eval-ids", "add,multiply", "--judge-model",
                f"{mock_server.url}#judge", "--out", "rows.jsonl", "--max-failed", "5",
                "--max-errors", "9")
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {r["eval_id"]: r for r in map(json.loads,
                                          (calculator / "rows.jsonl").read_text().splitlines())}
    assert rows["add"]["candidate_answer"] == '{"result": 16.0, "operator": "+"}'  # (3+5)*2
    assert rows["add"]["trace_summary"]["tool_names"] == ["lookup_rate"]
    assert rows["multiply"]["input"] == {"a": 6, "b": 7, "operator": "*"}
    assert rows["multiply"]["candidate_answer"] == '{"result": 42.0, "operator": "*"}'


def test_tools_simulated_by_the_judge(calculator, mock_server):
    eval_set = calculator / "evaluations" / "eval-sets" / "calculator.json"
    _item(eval_set, 0, inputs={"a": 1, "b": 1, "operator": "+", "currency": "GBP"},
          mockingStrategy={"type": "llm", "prompt": 'The rate is 1.5. <<mock:{"response": 1.5}>>',
                           "toolsToSimulate": [{"name": "lookup_rate"}]})
    out = assay(calculator, "eval", "--eval-ids", "add", "--judge-model",
                f"{mock_server.url}#judge", "--out", "rows.jsonl", "--max-failed", "5",
                "--max-errors", "9")
    assert out.returncode == 0, out.stdout + out.stderr
    row = json.loads((calculator / "rows.jsonl").read_text().splitlines()[0])
    assert row["candidate_answer"] == '{"result": 3.0, "operator": "+"}'  # (1+1)*1.5


def test_unexpected_call_and_unmockable_targets_are_errors(calculator, mock_server):
    eval_set = calculator / "evaluations" / "eval-sets" / "calculator.json"
    _item(eval_set, 0, inputs={"a": 1, "b": 1, "operator": "+", "currency": "JPY"},
          mockingStrategy={"type": "mockito", "config": [
              {"function": "lookup_rate", "arguments": {"args": ["USD"]},
               "then": [{"type": "return", "value": 2.0}]}]})
    out = assay(calculator, "eval", "--eval-ids", "add", "--judge-model",
                f"{mock_server.url}#judge", "--out", "rows.jsonl", "--max-errors", "9",
                "--max-failed", "9")
    row = json.loads((calculator / "rows.jsonl").read_text().splitlines()[0])
    assert "which no recorded behaviour of it expects" in row["error"]
    (calculator / ".assay").mkdir(exist_ok=True)
    (calculator / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: shell, provider: cli, command: [echo, '{}']}\n")
    out = assay(calculator, "eval", "--eval-ids", "add", "--target", "shell", "--out",
                "rows.jsonl", "--max-errors", "9", "--max-failed", "9", "--judge-model",
                f"{mock_server.url}#judge")
    assert out.returncode in (0, 1), out.stderr
    row = json.loads((calculator / "rows.jsonl").read_text().splitlines()[0])
    assert "target 'shell' cannot be mocked" in row["error"]


def test_legacy_simulation_fields_become_strategies():
    mocking = from_uipath({"simulateTools": True, "simulationInstructions": "Rates are 2.",
                           "toolsToSimulate": [{"name": "lookup_rate"}], "simulateInput": True,
                           "inputGenerationInstructions": "Two numbers to add"})
    assert mocking is not None and mocking.tools is not None and mocking.input is not None
    assert (mocking.tools.type, mocking.tools.tools) == ("llm", ["lookup_rate"])
    assert mocking.input.prompt == "Two numbers to add"
    with pytest.raises(ValueError, match=r"mockingStrategy\.type 'replay'"):
        from_uipath({"mockingStrategy": {"type": "replay"}})
