"""A UiPath project layout run end to end with ``assay run``, against the real local server."""

from __future__ import annotations

import json
import shutil
import sqlite3
import textwrap
from pathlib import Path

from tests.test_cli_run import assay

DATA = Path(__file__).parent / "data" / "uipath_project"

CALCULATOR = '''
import json
from assay.types import Execution, Message

def run(inputs: dict) -> Execution:
    """A calculator agent that calls one tool per request, as UiPath's sample does."""
    a, b, op = inputs["a"], inputs["b"], inputs["operator"]
    tool = {"+": "add", "*": "multiply"}[op]
    result = a + b if op == "+" else a * b
    call = {"id": "call_1", "type": "function",
            "function": {"name": tool, "arguments": json.dumps({"a": a, "b": b})}}
    messages = [Message(role="assistant", content=None, tool_calls=[call]),
                Message(role="tool", tool_call_id="call_1", content=str(result)),
                Message(role="assistant", content=json.dumps({"result": result}))]
    return Execution(input=inputs, output={"result": float(result), "operator": op},
                     messages=messages)
'''


def test_uipath_project_runs_with_assay_run(tmp_path, mock_server):
    project = tmp_path / "calculator"
    shutil.copytree(DATA, project)
    (project / "calculator.py").write_text(CALCULATOR)
    (project / ".assay").mkdir()
    (project / ".assay" / "targets.yaml").write_text(textwrap.dedent("""
        targets:
          - name: calculator
            provider: python
            function: calculator:run
    """))
    eval_set = project / "evaluations" / "eval-sets" / "calculator.json"
    out = assay(project, "run", str(eval_set), "--target", "calculator", "--judge-model",
                f"{mock_server.url}#judge", "-o", "results.jsonl", "--uipath-output",
                "uipath.json", "--max-failed", "3")
    assert out.returncode in (0, 1), out.stderr
    assert "Traceback" not in out.stderr
    rows = {r["eval_id"]: r for r in map(json.loads,
                                          (project / "results.jsonl").read_text().splitlines())}
    assert set(rows) == {"add", "multiply", "add-again"}
    add = {e["name"]: e for e in rows["add"]["evaluator_results"]}
    # Per-item criteria: an absent evaluator id is skipped, null uses the defaults.
    assert "ClassificationEvaluator" not in add
    assert add["ContainsEvaluator"]["score"] == 1.0  # searchText "8" in {"result": 8.0}
    assert add["ToolOrderEvaluator"]["score"] == 1.0  # the agent called "add"
    assert add["SemanticEvaluator"]["weight"] == 2.0
    assert add["SemanticEvaluator"]["score"] is not None  # judged by the mock server
    multiply = {e["name"]: e for e in rows["multiply"]["evaluator_results"]}
    assert multiply["ExactMatchEvaluator"]["score"] == 1.0
    assert set(multiply) == {"ExactMatchEvaluator", "TrajectoryEvaluator",
                             "ClassificationEvaluator"}
    assert mock_server.stats.requests >= 3
    db = sqlite3.connect(project / ".assay" / "runs.db")
    stored = db.execute("SELECT case_id, COUNT(*) FROM scores GROUP BY case_id").fetchall()
    assert dict(stored) == {cid: len(r["evaluator_results"]) for cid, r in rows.items()}
    uipath = json.loads((project / "uipath.json").read_text())
    assert "evaluationSetResults" in json.dumps(uipath)
