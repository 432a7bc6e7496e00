"""Result rows where AgentV writes them: ``conversation_id``, ``trace_summary``, ``error``,
the provider requests, a default results file per run, and ``--output-format yaml``."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import yaml

from tests.test_cli_run import assay


def project(tmp_path: Path, judge: str) -> Path:
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(textwrap.dedent(f"""
        targets:
          - {{name: model, provider: "{judge}"}}
          - name: broken
            provider: cli
            command: [{sys.executable}, -c, "import sys; sys.exit('agent crashed')"]
        """))
    (tmp_path / "EVAL.yaml").write_text(textwrap.dedent("""
        execution:
          target: model
          evaluators:
            - {name: quality, type: llm_judge, prompt: "Grade {{candidate_answer}}"}
            - {name: says, type: contains, search_text: mock}
        evalcases:
          - id: first
            conversation_id: conv-7
            expected_outcome: Answers
            input: What is six times seven?
          - id: crashed
            expected_outcome: Answers
            input: q
            execution: {target: broken}
        """))
    return tmp_path / "EVAL.yaml"


def test_rows_carry_agentv_fields_in_the_default_results_file(tmp_path, mock_server):
    suite = project(tmp_path, f"{mock_server.url}#agent-model")
    out = assay(tmp_path, "run", str(suite), "--judge-model", f"{mock_server.url}#judge",
                "--max-failed", "5", "--max-errors", "5")
    assert out.returncode in (0, 1), out.stderr
    files = list((tmp_path / ".assay" / "results").glob("*.jsonl"))
    assert len(files) == 1 and f"results written to {files[0].relative_to(tmp_path)}" in \
        out.stdout
    run_id = files[0].stem
    assert f"run {run_id} stored" in out.stdout
    rows = {r["eval_id"]: r for r in map(json.loads, files[0].read_text().splitlines())}
    first, crashed = rows["first"], rows["crashed"]
    assert first["conversation_id"] == "conv-7" and "conversation_id" not in crashed
    assert first["trace_summary"]["event_count"] == 1  # the model's one message
    request = first["lm_provider_request"]
    assert request["model"].endswith("#agent-model")
    assert request["messages"] == [{"role": "user", "content": "What is six times seven?"}]
    quality = next(e for e in first["evaluator_results"] if e["name"] == "quality")
    judged = quality["evaluator_provider_request"]
    assert judged["target"].endswith("#judge") and judged["user_prompt"].startswith("Grade ")
    assert "system_prompt" in judged
    says = next(e for e in first["evaluator_results"] if e["name"] == "says")
    assert "evaluator_provider_request" not in says  # no judge was asked
    assert "agent crashed" in crashed["error"]
    assert crashed["trace_summary"]["error_count"] == 1


def test_output_format_yaml(tmp_path, mock_server):
    suite = project(tmp_path, f"{mock_server.url}#agent-model")
    out = assay(tmp_path, "run", str(suite), "--judge-model", f"{mock_server.url}#judge",
                "--output-format", "yaml", "-o", "results.yaml", "--max-failed", "5",
                "--max-errors", "5")
    assert out.returncode in (0, 1), out.stderr
    text = (tmp_path / "results.yaml").read_text()
    assert text.startswith("---\n") and "\n---\n" in text
    documents = list(yaml.safe_load_all(text))
    run_id = next(x for x in out.stdout.splitlines() if x.startswith("run ")).split()[1]
    shown = assay(tmp_path, "show", run_id, "--json")
    assert documents == [json.loads(line) for line in shown.stdout.splitlines()]
    assert not (tmp_path / ".assay" / "results").exists()  # -o given: no second copy
    bad = assay(tmp_path, "run", str(suite), "--output-format", "xml")
    assert bad.returncode == 2 and "expected jsonl or yaml" in bad.stderr


def test_no_results_file(tmp_path, mock_server):
    suite = project(tmp_path, f"{mock_server.url}#agent-model")
    out = assay(tmp_path, "run", str(suite), "--judge-model", f"{mock_server.url}#judge",
                "--no-results-file", "--max-failed", "5", "--max-errors", "5")
    assert out.returncode in (0, 1), out.stderr
    assert not (tmp_path / ".assay" / "results").exists()
