"""The shipped examples run as their READMEs say (the endpoint one against the mock server)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.test_cli_run import assay

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_openai_endpoint_example_runs_against_a_compatible_server(tmp_path, mock_server):
    project = tmp_path / "openai_endpoint"
    shutil.copytree(EXAMPLES / "openai_endpoint", project)
    env = {"OPENAI_BASE_URL": mock_server.url, "OPENAI_API_KEY": "dummy"}
    checked = assay(project, "validate", "EVAL.yaml", env=env)
    assert checked.returncode == 0, checked.stderr
    out = assay(project, "run", "EVAL.yaml", "-o", "results.jsonl", "--max-failed", "3",
                env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [json.loads(x) for x in (project / "results.jsonl").read_text().splitlines()]
    assert sorted(r["eval_id"] for r in rows) == ["damaged-item", "refund-window",
                                                   "shipping-abroad"]
    for row in rows:
        names = {e["name"]: e for e in row["evaluator_results"]}
        assert set(names) == {"answers_the_question", "policy", "close_to_reference"}
        assert all(e["error"] is None for e in names.values()), names
        assert row["candidate_answer"].startswith("mock answer")
    # agent calls (3) + judge calls (3 evaluators x 3 cases)
    assert mock_server.stats.requests == 12
    assert mock_server.stats.models == {"gpt-4o-mini": 12}
    stored = json.loads(assay(project, "runs", "--json", env=env).stdout)[0]
    assert "dummy" not in json.dumps(stored)


@pytest.mark.slow  # validating loads the embedded model the quickstart judges with
def test_quickstart_validates(tmp_path):
    project = tmp_path / "quickstart"
    shutil.copytree(EXAMPLES / "quickstart", project)
    out = assay(project, "validate", "EVAL.yaml")
    assert out.returncode == 0 and "5 cases" in out.stdout
