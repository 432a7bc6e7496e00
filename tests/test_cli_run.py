"""``assay run``, ``runs``, ``show`` and ``compare`` end to end, as a user runs them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.assay_process import run_assay

AGENT = '''
import os
VERSION = os.environ.get("AGENT_VERSION", "good")

def answer(question: str) -> str:
    if VERSION == "bad" and "Kenya" in question:
        return "No idea."
    return {"France": "Paris is the capital of France.",
            "Japan": "Tokyo is the capital of Japan.",
            "Kenya": "Nairobi is the capital of Kenya."}[question.split()[-1].rstrip("?")]
'''

SUITE = '''
description: capitals
execution:
  target: agent
  evaluators:
    - name: names_city
      type: contains
      weight: 2
    - name: similar
      type: semantic_similarity
evalcases:
  - id: fr
    input: Capital of France?
    expected_output: Paris is the capital of France.
    metadata: {search_text: Paris}
  - id: jp
    input: Capital of Japan?
    expected_output: Tokyo is the capital of Japan.
    metadata: {search_text: Tokyo}
  - id: ke
    input: Capital of Kenya?
    expected_output: Nairobi is the capital of Kenya.
    metadata: {search_text: Nairobi}
'''


@pytest.fixture
def project(tmp_path: Path, mock_server) -> Path:  # type: ignore[no-untyped-def]
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "EVAL.yaml").write_text(SUITE)
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(textwrap.dedent(f"""
        targets:
          - name: agent
            provider: python
            function: agent:answer
            judge_target: judge
          - name: judge
            provider: {mock_server.url}#judge
    """))
    return tmp_path


def assay(project: Path, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "ASSAY_CACHE_DIR": str(project / "cache"), **(env or {})}
    return run_assay(args, cwd=project, env=full_env, timeout=180)


def _run_id(out: str) -> str:
    line = next(x for x in out.splitlines() if x.startswith("run "))
    return line.split()[1]


def test_run_stores_writes_files_and_passes_gates(project, mock_server):
    out = assay(project, "run", "EVAL.yaml", "-o", "results.jsonl", "--junit", "junit.xml")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "all gates passed" in out.stdout
    rows = [json.loads(x) for x in (project / "results.jsonl").read_text().splitlines()]
    assert sorted(r["eval_id"] for r in rows) == ["fr", "jp", "ke"]
    row = rows[0]
    for key in ("timestamp", "eval_id", "dataset", "score", "hits", "misses",
                "candidate_answer", "target", "reasoning", "evaluator_results"):
        assert key in row
    assert {e["name"] for e in row["evaluator_results"]} == {"names_city", "similar"}
    assert all(r["score"] == pytest.approx(1.0) for r in rows)
    suite = ET.parse(project / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "0"
    assert mock_server.stats.requests == 3
    db = sqlite3.connect(project / ".assay" / "runs.db")
    (config,) = db.execute("SELECT config FROM runs").fetchone()
    snapshot = json.loads(config)
    assert snapshot["suite_hash"] and snapshot["assay_version"]
    assert snapshot["judge_models"] == [f"{mock_server.url}#judge"]
    assert db.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 6
    # A second identical run costs no judge calls.
    again = assay(project, "run", "EVAL.yaml")
    assert again.returncode == 0 and mock_server.stats.requests == 3
    assert "judge calls 0 (+3 cached" in again.stdout


def test_runs_show_and_compare_exit_codes(project, mock_server):
    good = assay(project, "run", "EVAL.yaml")
    bad = assay(project, "run", "EVAL.yaml", env={"AGENT_VERSION": "bad"})
    assert good.returncode == 0
    assert bad.returncode == 1 and "gate failed" in bad.stdout
    good_id, bad_id = _run_id(good.stdout), _run_id(bad.stdout)
    listed = assay(project, "runs")
    assert good_id in listed.stdout and bad_id in listed.stdout
    shown = assay(project, "show", bad_id, env={"COLUMNS": "250"})
    assert shown.returncode == 0 and "ke" in shown.stdout and "fail" in shown.stdout
    assert "not found" in shown.stdout  # the contains miss is shown
    assert "3 cases: 2 pass, 1 fail, 0 borderline, 0 error, 0 skipped;" in shown.stdout  # counts, not a dict
    regressed = assay(project, "compare", good_id, bad_id)
    assert regressed.returncode == 1, regressed.stdout
    assert "regression detected" in regressed.stdout and "1 case(s) regressed" in regressed.stdout
    improved = assay(project, "compare", bad_id, good_id, "--json")
    assert improved.returncode == 0
    data = json.loads(improved.stdout)
    counts = data["aggregate"]
    assert counts["total_improvements"] == 1 and counts["total_regressions"] == 0
    assert data["aggregate"]["avg_score_delta"] > 0 and data["exit_code"] == 0
    same = assay(project, "compare", good_id, good_id)
    assert same.returncode == 0


def test_filter_repeat_and_dry_run(project, mock_server):
    dry = assay(project, "run", "EVAL.yaml", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "3 judge call(s)" in dry.stdout and mock_server.stats.requests == 0
    assert not (project / ".assay" / "runs.db").exists() or "dry-run" not in assay(
        project, "runs").stdout
    out = assay(project, "run", "EVAL.yaml", "--filter", "j*", "--repeat", "2", "-o", "r.jsonl")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(x) for x in (project / "r.jsonl").read_text().splitlines()]
    assert sorted((r["eval_id"], r["repeat"]) for r in rows) == [("jp", 0), ("jp", 1)]


def test_max_failed_counts_cases_not_repeats(project, mock_server):
    """One case that failed in each of 3 repeats is one failing case: the gate said "3
    case(s) failed", counting executions. ``max_failed`` counts cases, and the gate says how
    many of their repeats failed, the same in ``assay run``, ``assay show`` and Markdown."""
    bad = assay(project, "run", "EVAL.yaml", "--repeat", "3", "--junit", "junit.xml",
                env={"AGENT_VERSION": "bad"})
    assert bad.returncode == 1, bad.stdout + bad.stderr
    gate = "1 case failed (3 of 3 repeats; allowed 0)"
    assert f"gate failed: {gate}" in bad.stdout
    assert "9 executions: 6 pass, 3 fail," in bad.stdout  # the verdicts are per repeat
    run_id = _run_id(bad.stdout)
    assert f"gate failed: {gate}" in assay(project, "show", run_id,
                                           env={"COLUMNS": "250"}).stdout
    markdown = assay(project, "report", run_id, "--markdown", "-").stdout
    assert "- 1 case failed \\(3 of 3 repeats; allowed 0\\)" in markdown
    assert "| executions | pass rate |" in markdown
    suite = ET.parse(project / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("9", "3")
    allowed = assay(project, "run", "EVAL.yaml", "--repeat", "3", "--max-failed", "1",
                    env={"AGENT_VERSION": "bad"})
    assert allowed.returncode == 0 and "all gates passed" in allowed.stdout, allowed.stdout


def test_gates_and_configuration_errors(project, mock_server):
    low = assay(project, "run", "EVAL.yaml", "--min-score", "1.01")
    assert low.returncode == 2  # an impossible gate is a usage error
    (project / "broken.yaml").write_text("evalcases:\n  - id: a\n    input: [unclosed\n")
    broken = assay(project, "run", "broken.yaml")
    assert broken.returncode == 2 and "broken.yaml:" in broken.stderr
    assert "Traceback" not in broken.stderr
    unknown = assay(project, "run", "EVAL.yaml", "--target", "nobody")
    assert unknown.returncode == 2 and "unknown target 'nobody'" in unknown.stderr
    missing = assay(project, "show", "no-such-run")
    assert missing.returncode == 2 and "no run 'no-such-run'" in missing.stderr


def test_resume_with_retry_errors_recomputes_failed_judgements(project, mock_server):
    mock_server.configure(faults={"500": 1.0})
    failed = assay(project, "run", "EVAL.yaml", "--max-attempts", "1")
    assert failed.returncode == 1
    assert "3 evaluator score(s) could not be computed" in failed.stdout
    run_id = _run_id(failed.stdout)
    mock_server.configure(faults={})
    plain = assay(project, "run", "--resume", run_id)
    assert plain.returncode == 1  # the stored errors stand until asked to retry them
    retried = assay(project, "run", "--resume", run_id, "--retry-errors")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "3 error score(s) will be computed again" in retried.stdout
    db = sqlite3.connect(project / ".assay" / "runs.db")
    assert db.execute("SELECT COUNT(*) FROM scores WHERE run_id = ?", (run_id,)).fetchone() \
        == (6,)
    assert db.execute("SELECT COUNT(*) FROM scores WHERE error_code IS NOT NULL").fetchone() \
        == (0,)


def test_a_resume_takes_its_own_judge_call_retries(project, mock_server):
    """A run a slow judge stopped short (every call past --call-timeout) is resumed with a
    longer --call-timeout, --total-timeout and more --max-attempts for the rest of it:
    they were refused beside --resume as a new run's options. Each resume is recorded in
    the run's snapshot with the retry it used; the run's own options stay as recorded."""
    mock_server.configure(latency_ms=400)
    slow = assay(project, "run", "EVAL.yaml", "--call-timeout", "0.05", "--total-timeout",
                 "0.1", "--max-attempts", "1")
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "3 evaluator score(s) could not be computed" in slow.stdout
    run_id = _run_id(slow.stdout)
    again = assay(project, "run", "--resume", run_id, "--retry-errors")
    assert again.returncode == 1, again.stdout + again.stderr  # the recorded 0.05 s still
    db = sqlite3.connect(project / ".assay" / "runs.db")  # stopped waiting for the judge:
    for table in ("scores", "case_results"):  # the answers stored, no judgement yet
        db.execute(f"DELETE FROM {table}")
    db.execute("UPDATE runs SET status = 'interrupted'")
    db.commit()
    longer = assay(project, "run", "--resume", run_id, "--call-timeout", "5",
                   "--total-timeout", "10", "--max-attempts", "2")
    assert longer.returncode == 0, longer.stdout + longer.stderr
    assert "all gates passed" in longer.stdout
    snapshot = json.loads(db.execute("SELECT config FROM runs").fetchone()[0])
    assert snapshot["run"]["retry"]["call_timeout_s"] == 0.05  # as the run started
    assert [(r["retry"]["call_timeout_s"], r["retry"]["total_timeout_s"],
             r["retry"]["max_attempts"]) for r in snapshot["resumes"]] == \
        [(0.05, 0.1, 1), (5.0, 10.0, 2)]
    listed = json.loads(assay(project, "runs", "--json").stdout)
    assert listed[0]["config"]["resumes"][1]["retry"]["call_timeout_s"] == 5.0
    refused = assay(project, "run", "--resume", run_id, "--call-timeout", "5",
                    "--agent-timeout", "9")
    assert refused.returncode == 2
    assert "--agent-timeout chooses for a new run" in refused.stderr, refused.stderr


def _interrupted_run(project: Path, change: str) -> tuple[str, sqlite3.Connection]:
    """A completed run of the suite, marked interrupted and changed by the SQL ``change``
    (its id, and the store's database)."""
    done = assay(project, "run", "EVAL.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    db = sqlite3.connect(project / ".assay" / "runs.db")
    db.execute("UPDATE runs SET status = 'interrupted'")
    db.execute(change)
    db.commit()
    return _run_id(done.stdout), db


def test_a_resume_refuses_the_options_of_a_new_run(project, mock_server):
    """`assay run --resume RUN --dry-run` ran the rest of the run, and --repeat, --filter or
    a gate beside --resume or --rerun-failed was dropped without a word: the run's recorded
    choices are what a resume runs with."""
    run_id, db = _interrupted_run(project, "DELETE FROM case_results WHERE case_id = 'ke'")
    requests = mock_server.stats.requests
    dry = assay(project, "run", "--resume", run_id, "--dry-run", "--repeat", "3")
    assert dry.returncode == 2, dry.stdout + dry.stderr
    assert dry.stderr == (
        "error [invalid_config]: --repeat, --dry-run choose for a new run; --resume runs with "
        "the choices the run recorded (leave them out, or start a new run)\n")
    assert mock_server.stats.requests == requests  # nothing was judged
    assert db.execute("SELECT status FROM runs").fetchone() == ("interrupted",)
    rerun = assay(project, "run", "--rerun-failed", run_id, "--max-failed", "3")
    assert rerun.returncode == 2 and "--max-failed chooses for a new run; --rerun-failed" \
        in rerun.stderr, rerun.stdout + rerun.stderr
    resumed = assay(project, "run", "--resume", run_id, "-c", "2", "--cache", "off")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr


def test_a_resume_names_a_finished_case_whose_repeat_is_damaged(project, mock_server):
    """`assay run --resume` ran such a case again, silently, beside its damaged row."""
    run_id, db = _interrupted_run(
        project, "UPDATE case_results SET repeat = 'first' WHERE case_id = 'fr'")
    requests = mock_server.stats.requests
    resumed = assay(project, "run", "--resume", run_id)
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    assert resumed.stderr == (
        f"error [case_unreadable]: case 'fr' (repeat first) of run {run_id} cannot be read: "
        "its repeat column holds the text 'first', not a whole number. The store's other "
        "rows are intact\n"), resumed.stderr
    assert mock_server.stats.requests == requests
    assert db.execute("SELECT status FROM runs").fetchone() == ("interrupted",)
    assert db.execute("SELECT COUNT(*) FROM case_results").fetchone() == (3,)


def test_output_to_a_pipe_is_never_wrapped_mid_phrase(project, mock_server):
    long_name = "capitals of " + " and ".join(["France", "Japan", "Kenya"] * 8)
    (project / "EVAL.yaml").write_text(SUITE.replace("description: capitals",
                                                     f"name: {long_name}"))
    bad = assay(project, "run", "EVAL.yaml", env={"AGENT_VERSION": "bad", "COLUMNS": "80"})
    assert bad.returncode == 1, bad.stdout + bad.stderr
    shown = assay(project, "show", _run_id(bad.stdout), env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert any(x.startswith("run ") and x.rstrip().endswith(f"suite {long_name} · completed")
               for x in lines), shown.stdout
    # A table row keeps its cells whole: the case's reasoning is on the row's one line.
    row = next(x for x in lines if x.startswith("│ ke "))
    assert "names_city: " in row and "similar: " in row and "not found" in row, shown.stdout
