"""``uipath eval``'s flags of 2.14 on ``assay eval``, on the project ``uipath new`` makes:
``--input-overrides`` (scores checked against the real uipath eval's on the same flags),
``--verbose``, ``--trace-file``, ``--eval-set-run-id``, ``--resume``, ``--max-llm-concurrency``,
``--model-settings-id``, ``--agent-memory-settings-id``, ``--report-coverage`` and
``--enable-mocker-cache``."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from assay.store.runs import RunStore
from assay.types.spans import normalize_trace
from tests.test_cli_run import assay
from tests.test_uipath_typed_entrypoints import PROJECT, REFERENCE, scores_of


@pytest.fixture
def echo(tmp_path: Path) -> Path:
    project = tmp_path / "echo-agent"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("reference", "variants"))
    return project


def test_input_overrides_verbose_trace_file_and_run_id(echo: Path):
    flags = REFERENCE["input_overrides"]["flags"]  # '{"once": {"message": "Bye"}}'
    out = assay(echo, "eval", *flags, "--verbose", "--output-file", "out.json",
                "--trace-file", "spans.jsonl", "--eval-set-run-id", "nightly-42",
                "--max-llm-concurrency", "3", "--enable-mocker-cache", "--max-failed", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert scores_of(echo / "out.json") == REFERENCE["input_overrides"]["scores"]
    items = {r["evaluationName"]: r for r in
             json.loads((echo / "out.json").read_text())["evaluationSetResults"]}
    once = items["Echo once"]["agentExecutionOutput"]  # --verbose
    assert once["result"] == {"output": {"message": "Bye"}, "status": "successful",
                              "error": None}
    assert once["execution_time"] >= 0 and once["trace"] == {"spans": []}

    lines = [json.loads(x) for x in (echo / "spans.jsonl").read_text().splitlines()]
    roots = [s for s in lines if s["attributes"].get("span_type") == "eval"]
    assert sorted(s["attributes"]["evalId"] for s in roots) == ["once", "twice"]
    outputs = [s for s in lines if s["name"] == "Evaluation output"]
    assert sorted((s["attributes"]["evaluatorId"], s["attributes"]["value"]) for s in outputs
                  if s["attributes"]["execution.id"] == "once") == [
        ("ContainsEvaluator", 0.0), ("ExactMatchEvaluator", 0.0)]
    spans = normalize_trace((echo / "spans.jsonl").read_text())  # readable back as a trace
    assert len(spans) == len(lines) == 2 * (1 + 2 * 2)

    run = RunStore(f"sqlite:///{echo / '.assay' / 'runs.db'}").run_record("nightly-42")
    assert run.config.run.input_overrides == {"once": {"message": "Bye"}}  # --eval-set-run-id
    again = assay(echo, "eval", "--eval-set-run-id", "nightly-42")
    assert again.returncode == 2 and "run id 'nightly-42' is already in the store" in \
        again.stderr


def test_input_overrides_for_an_unknown_item_are_refused_before_any_run(echo: Path):
    out = assay(echo, "eval", "--input-overrides", '{"onse": {"message": "x"}}')
    assert out.returncode == 2
    assert "input_overrides name case(s) the suite does not have: 'onse'" in out.stderr
    bad = assay(echo, "eval", "--input-overrides", "['once']")
    assert bad.returncode == 2 and "expected an object of case id" in bad.stderr


def test_resume_finishes_the_eval_sets_interrupted_run(echo: Path):
    first = assay(echo, "eval", "--eval-set-run-id", "r1")
    assert first.returncode == 0, first.stdout + first.stderr
    db = echo / ".assay" / "runs.db"
    with sqlite3.connect(db) as conn:  # as a run stopped before its second item leaves it
        for table in ("case_results", "executions", "scores"):
            conn.execute(f"DELETE FROM {table} WHERE run_id = 'r1' AND case_id = 'twice'")
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE id = 'r1'")
    resumed = assay(echo, "eval", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "run r1 (Echo)" in resumed.stdout
    store = RunStore(f"sqlite:///{db}")
    assert store.run_record("r1").status == "completed"
    assert sorted(r.case_id for r in store.case_records("r1")) == ["once", "twice"]
    nothing = assay(echo, "eval", "--resume")
    assert nothing.returncode == 2 and "no run of 'Echo' is waiting to be finished" in \
        nothing.stderr


AGENT = '''
from assay import Case


def main(case: Case) -> dict:
    return {"message": case.input["message"], "settings": case.metadata.get("model_settings"),
            "memory": case.metadata.get("agent_memory_settings")}
'''


def test_model_and_memory_settings_reach_the_agent(echo: Path):
    (echo / "main.py").write_text(AGENT)
    eval_set = echo / "evaluations" / "eval-sets" / "default.json"
    data = json.loads(eval_set.read_text())
    data.update(modelSettings=[{"id": "fast", "modelName": "gpt-4o-mini",
                                "temperature": "same-as-agent"}],
                agentMemoryEnabled=True,
                agentMemorySettings=[{"id": "wide", "resultCount": 5, "searchMode": "semantic",
                                      "threshold": 0.5}])
    eval_set.write_text(json.dumps(data))
    out = assay(echo, "eval", "--model-settings-id", "fast", "--agent-memory-settings-id",
                "wide", "--out", "rows.jsonl", "--max-failed", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    row = json.loads((echo / "rows.jsonl").read_text().splitlines()[0])
    answer = json.loads(row["candidate_answer"])
    assert answer["settings"] == {"model": "gpt-4o-mini"}  # same-as-agent left out
    assert answer["memory"] == {"enabled": True, "resultCount": 5, "searchMode": "semantic",
                                "threshold": 0.5}
    missing = assay(echo, "eval", "--model-settings-id", "slow")
    assert missing.returncode == 2
    assert "the eval set defines no modelSettings entry 'slow' (defined: 'fast')" in \
        missing.stderr


def test_report_coverage_measures_the_projects_files(echo: Path):
    out = assay(echo, "eval", "--report-coverage")
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("main.py"))
    assert line.split()[-1] == "100%"  # both items ran every line and branch of main()


def test_verbose_needs_an_output_file(echo: Path):
    out = assay(echo, "eval", "--verbose")
    assert out.returncode == 2 and "--verbose adds the agent's execution to --output-file" \
        in out.stderr
