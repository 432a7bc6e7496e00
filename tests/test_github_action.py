"""The GitHub Action's script, run directly (as the action's step runs it) on a temporary git
repository: the suite runs, the baseline is the suite as it is on main, the comparison goes to
the step summary, failed cases are annotated at their lines, the HTML report is written, and
the exit code is the gate. The action's file names that script and its inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from assay.report.github import escape_data, escape_property, failure_annotations
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, SourceLocation, Verdict
from tests.docblocks import read_blocks

ROOT = Path(__file__).resolve().parent.parent

SUITE = """description: Capitals
execution:
  target: agent
  evaluators:
    - {name: exact, type: exact_match}
evalcases:
  - {id: fr, input: France, expected_output: Paris}
  - {id: de, input: Germany, expected_output: Berlin}
  - {id: it, input: Italy, expected_output: Rome}
"""
GOOD = "ANSWERS = {'France': 'Paris', 'Germany': 'Berlin', 'Italy': 'Rome'}\n"
WORSE = "ANSWERS = {'France': 'Paris', 'Germany': 'Bonn', 'Italy': 'Milan'}\n"
AGENT = "\ndef answer(country: str) -> str:\n    return ANSWERS.get(country, '?')\n"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose main has a good agent, on a branch that made it worse."""
    root = tmp_path / "repo"
    (root / "evals" / ".assay").mkdir(parents=True)
    (root / "evals" / "EVAL.yaml").write_text(SUITE)
    (root / "evals" / "agent.py").write_text(GOOD + AGENT)
    (root / "evals" / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: 'agent:answer'}\n")
    (root / ".gitignore").write_text(".assay/ci.db*\nassay-report.html\n__pycache__/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "ci@example.com")
    _git(root, "config", "user.name", "CI")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "a good agent")
    _git(root, "checkout", "-q", "-b", "change")
    return root


def _action(repo: Path, tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str],
                                                                  str, dict[str, str]]:
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env.update({"GITHUB_WORKSPACE": str(repo), "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_OUTPUT": str(outputs), "GITHUB_SHA": "0123456789abcdef",
                "ASSAY_CACHE": "off", **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}})
    done = subprocess.run([sys.executable, "-m", "assay.integrations.github_action"],
                          cwd=repo, env=env, text=True, capture_output=True, timeout=300)
    written = summary.read_text() if summary.exists() else ""
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) \
        if outputs.exists() else {}
    return done, written, values


@pytest.mark.process
def test_a_regression_against_main_fails_the_job_with_a_summary_annotations_and_a_report(
        repo, tmp_path):
    (repo / "evals" / "agent.py").write_text(WORSE + AGENT)
    _git(repo, "commit", "-qam", "a worse agent")
    done, summary, outputs = _action(repo, tmp_path, suite="evals/EVAL.yaml",
                                     baseline="git:main", args="--max-failed 3")
    assert done.returncode == 1, done.stdout + done.stderr
    assert summary.startswith("### regression detected"), summary
    assert "| pass rate | 100.0% | 33.3% | -66.7 pt |" in summary
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2
    assert all(line.startswith("::error file=evals/EVAL.yaml,line=") for line in errors)
    assert any("title=case de fail" in line for line in errors)
    report = repo / "assay-report.html"
    assert report.is_file() and "assay-data" in report.read_text()
    assert outputs["exit-code"] == "1" and outputs["run-id"] and outputs["baseline-id"]
    listed = subprocess.run(["git", "-C", str(repo), "worktree", "list"], text=True,
                            capture_output=True, check=True).stdout
    assert len(listed.splitlines()) == 1  # the baseline's worktree is gone


@pytest.mark.process
def test_no_regression_passes_and_never_fails_when_told_not_to(repo, tmp_path):
    done, summary, outputs = _action(repo, tmp_path, suite="evals/EVAL.yaml",
                                     baseline="git:main")
    assert done.returncode == 0, done.stdout + done.stderr
    assert summary.startswith("### no regression")
    assert not [line for line in done.stdout.splitlines() if line.startswith("::error")]
    (repo / "evals" / "agent.py").write_text(WORSE + AGENT)
    _git(repo, "commit", "-qam", "a worse agent")
    done, _, outputs = _action(repo, tmp_path, suite="evals/EVAL.yaml", baseline="git:main",
                               args="--max-failed 3", fail_on="never")
    assert done.returncode == 0 and outputs["exit-code"] == "1"


@pytest.mark.process
def test_without_a_baseline_the_runs_own_gates_decide(repo, tmp_path):
    (repo / "evals" / "agent.py").write_text(WORSE + AGENT)
    done, summary, outputs = _action(repo, tmp_path, suite="evals/EVAL.yaml",
                                     baseline="none")
    assert done.returncode == 1, done.stdout + done.stderr
    assert outputs["baseline-id"] == "" and summary  # the run's own summary
    bad, _, _ = _action(repo, tmp_path, suite="evals/nope.yaml", baseline="none")
    assert bad.returncode == 2 and "::error title=assay::" in bad.stdout
    worse_ref, _, _ = _action(repo, tmp_path, suite="evals/EVAL.yaml",
                              baseline="git:no-such-ref")
    assert worse_ref.returncode == 2 and "no-such-ref" in worse_ref.stdout


def _documented_workflow() -> dict:
    """The workflow docs/ci.md shows (its first YAML block, marked there as run here)."""
    block = next(b for b in read_blocks(ROOT / "docs" / "ci.md") if b.language == "yaml")
    assert block.not_run and "test_github_action" in block.not_run
    return yaml.safe_load(block.code)


@pytest.mark.process
def test_the_documented_workflow_fails_a_pull_request_that_made_the_agent_worse(repo, tmp_path):
    steps = _documented_workflow()["jobs"]["assay"]["steps"]
    ours = next(s for s in steps if "assay" in s.get("uses", ""))
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert set(ours["with"]) <= set(action["inputs"])  # every input it gives exists
    (repo / "evals" / "agent.py").write_text(WORSE + AGENT)
    _git(repo, "commit", "-qam", "a worse agent")
    given = {k.replace("-", "_"): str(v) for k, v in ours["with"].items()}
    done, summary, outputs = _action(repo, tmp_path, **given)
    assert done.returncode == 1 and outputs["exit-code"] == "1", done.stdout + done.stderr
    assert summary.startswith("### regression detected")


def test_the_action_file_runs_the_script_with_its_inputs():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    script = next(s for s in steps if s.get("id") == "assay")
    assert script["run"] == "python -m assay.integrations.github_action"
    for name in action["inputs"]:
        if name not in ("python-version", "install"):
            assert f"INPUT_{name.upper().replace('-', '_')}" in script["env"], name
    upload = next(s for s in steps if "upload-artifact" in s.get("uses", ""))
    assert upload["if"] == "always()" and upload["with"]["path"] == "${{ inputs.report }}"


def test_annotations_are_escaped_so_data_cannot_end_a_command():
    record = CaseRecord(case_id="a,b:c%\n::warning::x", case=Case(id="x", input="q"),
                        execution=Execution(input="q", error="boom\n::error::fake"),
                        verdict=Verdict.ERROR, source=SourceLocation(file="/w/s, x.yaml",
                                                                     line=7))
    [line] = failure_annotations([record], Path("/w"))
    assert "\n" not in line and "\r" not in line  # one command, never a second one
    header, _, message = line.removeprefix("::").partition("::")
    assert header == ("error file=s%2C x.yaml,line=7,title=case "
                      "a%2Cb%3Ac%25%0A%3A%3Awarning%3A%3Ax error")
    assert message == "the agent failed: boom%0A::error::fake"  # on the same line: text
    assert escape_data("50%\r\n") == "50%25%0D%0A" and escape_property("a:b,c") == "a%3Ab%2Cc"
    # an escape sequence or a bidirectional override would act on the job's log
    assert escape_data("a\x1b[2Jb\u202ec") == "a\\x1b[2Jb\\u202ec"
    assert escape_property("\x1b]0;t\x07") == "\\x1b]0;t\\x07"


@pytest.mark.process
def test_compare_and_report_write_their_markdown_to_the_step_summary(tmp_path):
    from assay.store.runs import RunStore
    from assay.testing.runs import write_run
    from tests.assay_process import run_assay

    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    base, cand = write_run(store, 20, seed=1), write_run(store, 20, seed=2, quality=0.5)
    store.close()
    summary = tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    done = run_assay(["compare", base, cand, "--store", url], cwd=tmp_path, env=env)
    assert done.returncode == 1 and summary.read_text().startswith("### regression detected")
    assert " regressed, " in done.stdout  # the terminal still shows the comparison
    shown = run_assay(["compare", base, cand, "--store", url, "--json"], cwd=tmp_path, env=env)
    assert json.loads(shown.stdout)["exit_code"] == 1  # JSON alone on standard output
    done = run_assay(["report", cand, "--store", url, "--compare", base, "--markdown", "-"],
                     cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("### regression detected")
    assert summary.read_text().count("### regression detected") == 3  # compare twice, report
    into_store = run_assay(["compare", base, cand, "--store", url], cwd=tmp_path,
                           env={**env, "GITHUB_STEP_SUMMARY": str(tmp_path / "runs.db")})
    assert into_store.returncode == 2 and "output_is_input" in into_store.stderr


def test_a_runs_markdown_report_goes_to_the_step_summary_too(tmp_path):
    """docs/ci.md: every command that writes Markdown appends it to $GITHUB_STEP_SUMMARY.
    ``assay run --report markdown:FILE`` wrote the file and left the summary empty; written
    straight to the summary file, it is there once."""
    from tests.assay_process import run_assay

    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"id": "a", "input": "q", "output": "Paris", "expected_output": "Paris"}) + "\n")
    (tmp_path / "rows.yaml").write_text("evaluators:\n  - type: exact_match\n")
    summary = tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    done = run_assay(["run", "rows.jsonl", "--report", "markdown:run.md", "--store",
                      f"sqlite:///{tmp_path}/runs.db"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    written = (tmp_path / "run.md").read_text()
    assert written.startswith("## assay run ") and summary.read_text() == written
    summary.unlink()
    done = run_assay(["run", "rows.jsonl", "--report", f"markdown:{summary}", "--store",
                      f"sqlite:///{tmp_path}/runs.db"], cwd=tmp_path, env=env)
    assert done.returncode == 0 and summary.read_text().count("## assay run ") == 1


def test_a_case_failed_by_its_policys_score_is_annotated_on_the_policys_scale():
    """A case that failed with no evaluator failing (Connexity's overall score under its
    threshold) was annotated "score 0.650", where every surface shows "65.0 /100"."""
    from assay.run.display import scale_for
    from assay.types.records import RunSummary

    record = CaseRecord(case_id="c", case=Case(id="c", input="q"),
                        execution=Execution(input="q", output="a"), verdict=Verdict.FAIL,
                        score=0.65)
    scale = scale_for(RunSummary(scoring="connexity"))
    [line] = failure_annotations([record], scale=scale)
    assert line.endswith(f"::verdict fail, {scale.name} 65.0 /100"), line
    [plain] = failure_annotations([record])
    assert plain.endswith("::verdict fail, score 0.650"), plain


def test_a_markdown_report_written_to_the_step_summary_keeps_what_earlier_steps_wrote(
        tmp_path):
    """``assay report RUN --markdown $GITHUB_STEP_SUMMARY`` replaced the summary file (the
    job's earlier steps' summaries lost), then appended the same Markdown again; so did
    ``assay run --report markdown:$GITHUB_STEP_SUMMARY``."""
    from tests.assay_process import run_assay

    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"id": "a", "input": "q", "output": "Paris", "expected_output": "Paris"}) + "\n")
    (tmp_path / "rows.yaml").write_text("evaluators:\n  - type: exact_match\n")
    summary = tmp_path / "summary.md"
    summary.write_text("## an earlier step\n")
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    store = f"sqlite:///{tmp_path}/runs.db"
    done = run_assay(["run", "rows.jsonl", "--report", f"markdown:{summary}", "--store", store],
                     cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    text = summary.read_text()
    assert text.startswith("## an earlier step\n") and text.count("## assay run ") == 1
    run_id = json.loads(run_assay(["runs", "--json", "--store", store], cwd=tmp_path,
                                  env=env).stdout)[0]["id"]
    done = run_assay(["report", run_id, "--markdown", str(summary), "--store", store],
                     cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    text = summary.read_text()
    assert text.startswith("## an earlier step\n") and text.count("## assay run ") == 2
