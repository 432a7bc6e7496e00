"""Regression tests for run-level bugs: data loss, silent wrong results, unclear exits.

Each test reproduces one finding of a hostile review through the real ``assay`` command (a
subprocess) or the library, and fails on the code before its fix.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from assay.store.runs import RunStore
from tests.assay_process import run_assay


def assay_cli(cwd: Path, *args: str, env: dict[str, str] | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_assay(args, cwd=cwd, timeout=timeout, env={**os.environ, **(env or {})})


def project(root: Path, agent: str = "def answer(q):\n    return q\n",
            extra_targets: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text(agent)
    (root / ".assay").mkdir(exist_ok=True)
    (root / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: agent\n    provider: python\n    function: agent:answer\n"
        + extra_targets)
    return root


def jsonl_suite(root: Path, n: int, name: str = "s") -> Path:
    path = root / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}",
                                        "expected_output": f"q{i}"}) + "\n" for i in range(n)))
    (root / f"{name}.yaml").write_text(
        "execution:\n  target: agent\n  evaluators:\n    - type: exact_match\n")
    return path


def judged_project(root: Path) -> Path:
    """A project whose suite ``s.jsonl`` has one case, run by the agent and judged by
    semantic_similarity: one judge call a run."""
    project(root)
    (root / "s.jsonl").write_text(json.dumps({"id": "a", "input": "q", "expected_output": "q"})
                                  + "\n")
    (root / "s.yaml").write_text("execution:\n  target: agent\n  evaluators:\n"
                                 "    - type: semantic_similarity\n")
    return root


# -- 1. outputs never overwrite inputs --------------------------------------------------------


@pytest.mark.parametrize("n", [3, 2500])
def test_output_that_is_the_suite_is_refused_and_the_suite_kept(tmp_path, n):
    root = project(tmp_path / "p")
    suite = jsonl_suite(root, n)
    before = suite.read_bytes()
    done = assay_cli(root, "run", "s.jsonl", "-o", "s.jsonl", "--store", "sqlite://")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--output s.jsonl is the suite file" in done.stderr
    assert suite.read_bytes() == before
    sidecar = assay_cli(root, "run", "s.jsonl", "--junit", "s.yaml", "--store", "sqlite://")
    assert sidecar.returncode == 2
    assert "--junit s.yaml is the sidecar of the suite" in sidecar.stderr


def test_output_on_a_recorded_targets_file_or_through_a_symlink_is_refused(tmp_path):
    root = project(tmp_path / "p", extra_targets=(
        "  - name: rec\n    provider: recorded\n    path: outputs.jsonl\n"))
    (root / "outputs.jsonl").write_text(json.dumps({"id": "c0", "output": "q0"}) + "\n")
    jsonl_suite(root, 1)
    before = (root / "outputs.jsonl").read_text()
    done = assay_cli(root, "run", "s.jsonl", "--target", "rec", "-o", "outputs.jsonl",
                     "--store", "sqlite://")
    assert done.returncode == 2
    assert "--output outputs.jsonl is the recorded outputs of target 'rec'" in done.stderr
    assert (root / "outputs.jsonl").read_text() == before
    (root / "link.jsonl").symlink_to(root / "s.jsonl")
    linked = assay_cli(root, "run", "s.jsonl", "-o", "link.jsonl", "--store", "sqlite://")
    assert linked.returncode == 2
    assert f"--output link.jsonl is the suite file ({root / 's.jsonl'})" in linked.stderr


# -- 2. one value the store cannot take is that case's error ----------------------------------


AGENT_OF_HORRORS = textwrap.dedent('''
    import math, sys

    class Opaque:
        pass

    def answer(q):
        if q == "big":
            return {"result": math.factorial(25)}
        if q == "object":
            return {"result": Opaque()}
        if q == "bytes":
            return b"\\xff\\xfe not utf-8"
        if q == "cycle":
            d = {}
            d["self"] = d
            return d
        if q == "nan":
            return {"x": float("nan")}
        return q
''')


def test_unstorable_outputs_become_case_errors_and_every_other_case_is_stored(tmp_path):
    root = project(tmp_path / "p", agent=AGENT_OF_HORRORS)
    inputs = ["ok1", "big", "object", "bytes", "cycle", "nan", "ok2"]
    (root / "s.jsonl").write_text("".join(
        json.dumps({"id": q, "input": q, "expected_output": q}) + "\n" for q in inputs))
    (root / "s.yaml").write_text(
        "execution:\n  target: agent\n  evaluators:\n    - type: exact_match\n")
    store = f"sqlite:///{tmp_path}/runs.db"
    done = assay_cli(root, "run", "s.jsonl", "-o", "out.jsonl", "--store", store,
                     "--max-failed", "10", "--max-errors", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    records = {r.case_id: r for r in RunStore(store).case_records(
        RunStore(store).run_records()[0].id)}
    assert set(records) == set(inputs)
    assert records["big"].output == {"result": 15511210043330985984000000}
    for bad in ("object", "bytes", "cycle"):
        score = records[bad].scores[0]
        assert score.error is not None and score.error.code == "invalid_output", bad
    assert records["nan"].output == {"x": None}
    assert records["ok1"].score == 1.0 and records["ok2"].score == 1.0
    lines = (root / "out.jsonl").read_text().splitlines()
    assert len(lines) == len(inputs)
    for line in lines:
        json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in JSONL"))
    resumed = assay_cli(root, "run", "--resume", RunStore(store).run_records()[0].id,
                        "--store", store)  # its recorded gates: --max-failed 10 --max-errors 10
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr


def test_a_code_judge_detail_the_store_cannot_hold_is_that_scores_error(tmp_path):
    import assay
    from assay.types.config import Gates

    script = tmp_path / "judge.py"
    script.write_text("import json, sys\njson.load(sys.stdin)\n"
                      "print(json.dumps({'score': 1, 'details': {'n': 10 ** 30}}))\n")
    result = assay.evaluate([{"id": "a", "input": "q", "output": "x"}],
                            evaluators=[{"type": "code_judge", "script": [sys.executable,
                                                                          str(script)]}],
                            store=tmp_path / "runs.db",
                            gates=Gates(max_failed=None, max_errors=None))
    score = result.records[0].scores[0]
    assert score.error is None and score.details == {"n": 10 ** 30}  # stored exactly
    reread = RunStore(f"sqlite:///{tmp_path}/runs.db").case_records(result.run_id)
    assert reread[0].scores[0].details == {"n": 10 ** 30}


# -- 9. SIGTERM is handled like Ctrl-C --------------------------------------------------------


@pytest.mark.timeout(60)
def test_sigterm_kills_agent_processes_marks_the_run_and_prints_the_hint(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    pidfile = tmp_path / "agent.pid"
    (root / "agent.py").write_text(textwrap.dedent(f'''
        import os, sys, time
        with open({str(pidfile)!r}, "a") as f:
            f.write(str(os.getpid()) + "\\n")
        time.sleep(300)
    '''))
    (root / ".assay").mkdir()
    (root / ".assay" / "targets.yaml").write_text(
        f"targets:\n  - name: agent\n    provider: cli\n    command: [{json.dumps(sys.executable)}, "
        f"{json.dumps(str(root / 'agent.py'))}]\n")
    jsonl_suite(root, 2)
    store = f"sqlite:///{tmp_path}/runs.db"
    proc = subprocess.Popen([sys.executable, "-m", "assay", "run", "s.jsonl", "--store", store],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if pidfile.exists() and len(pidfile.read_text().split()) >= 2:
            break
        time.sleep(0.05)
    agents = [int(p) for p in pidfile.read_text().split()]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, out + err
    run = RunStore(store).run_records()[0]
    # the store it was run with, or the command would look for the run in the default one
    assert f"Resume with: assay run --resume {run.id} --store {shlex.quote(store)}" in err
    assert run.status.value == "interrupted"
    time.sleep(0.2)
    for pid in agents:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# -- 11. --retry-errors runs a failed agent again ---------------------------------------------


def test_retry_errors_runs_a_failed_target_again(tmp_path):
    flag = tmp_path / "healthy"
    root = project(tmp_path / "p", agent=textwrap.dedent(f'''
        import os
        def answer(q):
            if not os.path.exists({str(flag)!r}):
                raise RuntimeError("503 from the agent")
            return q
    '''))
    jsonl_suite(root, 2)
    store = f"sqlite:///{tmp_path}/runs.db"
    first = assay_cli(root, "run", "s.jsonl", "--store", store)
    assert first.returncode == 1
    run_id = RunStore(store).run_records()[0].id
    flag.write_text("ok")
    again = assay_cli(root, "run", "--resume", run_id, "--retry-errors", "--store", store)
    assert again.returncode == 0, again.stdout + again.stderr
    records = RunStore(store).case_records(run_id)
    assert [r.score for r in records] == [1.0, 1.0]


# -- 13. zero cases is never a pass -----------------------------------------------------------


def test_a_filter_matching_nothing_fails_the_gate(tmp_path):
    root = project(tmp_path / "p")
    jsonl_suite(root, 3)
    done = assay_cli(root, "run", "s.jsonl", "--filter", "typo*", "--store", "sqlite://")
    assert done.returncode == 1
    assert "no case was run" in done.stdout and "all gates passed" not in done.stdout
    assert "0 cases: 0 pass" in done.stdout and "cases 0 ()" not in done.stdout  # counted, none empty
    by_id = assay_cli(root, "run", "s.jsonl", "--eval-id", "typo*", "--store", "sqlite://")
    assert by_id.returncode == 1 and "--eval-id" in by_id.stdout, by_id.stdout  # as typed


def test_a_uipath_eval_set_with_no_evaluations_fails_the_gate(tmp_path):
    root = tmp_path / "proj" / "evaluations"
    (root / "eval-sets").mkdir(parents=True)
    (root / "evaluators").mkdir()
    (root / "evaluators" / "eq.json").write_text(json.dumps({
        "version": "1.0", "id": "eq", "evaluatorTypeId": "uipath-exact-match",
        "evaluatorConfig": {"name": "eq"}}))
    (root / "eval-sets" / "empty.json").write_text(json.dumps({
        "version": "1.0", "id": "s", "name": "empty", "evaluatorRefs": ["eq"],
        "evaluations": []}))
    done = assay_cli(tmp_path, "run", str(root / "eval-sets" / "empty.json"), "--store",
                     "sqlite://")
    assert done.returncode in (1, 2), done.stdout + done.stderr
    assert "all gates passed" not in done.stdout


# -- 14. a dry run writes nothing and checks models ------------------------------------------


def test_dry_run_checks_models_and_writes_nothing(tmp_path, mock_model, mock_server):
    root = judged_project(tmp_path / "p")
    store = f"sqlite:///{tmp_path}/runs.db"
    for _ in range(2):
        bad = assay_cli(root, "run", "s.jsonl", "--dry-run", "--judge-model",
                        "openai:gpt-4o-mini", "--store", store,
                        env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
        assert bad.returncode == 2, bad.stdout + bad.stderr
        assert "OPENAI_API_KEY" in bad.stderr
    for _ in range(2):
        good = assay_cli(root, "run", "s.jsonl", "--dry-run", "--judge-model", mock_model,
                         "--store", store)
        assert good.returncode == 0, good.stdout + good.stderr
        assert "1 judge call(s) at most" in good.stdout
    assert RunStore(store).run_records() == []
    assert mock_server.stats.requests == 0


def test_a_dry_run_counts_what_the_cache_answers_and_reports_no_errors(
        tmp_path, mock_model, mock_server):
    """Recorded outputs are judged as the real run judges them, so every answer the real run
    cached is found: no call is counted for it. A judge a dry run does not call is not an
    error, on the progress bar or anywhere else."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "EVAL.yaml").write_text(textwrap.dedent("""
        execution:
          evaluators: [{name: similar, type: semantic_similarity}]
        evalcases:
          - {id: fr, input: Capital of France?, expected_output: Paris,
             metadata: {output: Paris.}}
          - {id: jp, input: Capital of Japan?, expected_output: Tokyo,
             metadata: {output: Tokyo.}}
    """))
    store = f"sqlite:///{tmp_path}/runs.db"
    real = assay_cli(root, "run", "EVAL.yaml", "--judge-model", mock_model, "--store", store,
                     "--max-failed", "5")
    assert real.returncode == 0 and mock_server.stats.requests == 2, real.stdout + real.stderr
    dry = assay_cli(root, "run", "EVAL.yaml", "--dry-run", "--judge-model", mock_model,
                    "--store", store)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "0 judge call(s) at most (+2 answered from the cache" in dry.stdout, dry.stdout
    assert "errors 0" in dry.stdout and "errors 2" not in dry.stdout, dry.stdout
    agent = judged_project(tmp_path / "agent")  # its agent must run: a blank stands in
    blank = assay_cli(agent, "run", "s.jsonl", "--dry-run", "--judge-model", mock_model,
                      "--store", store)
    assert "1 judge call(s) at most (+0 answered from the cache" in blank.stdout, blank.stdout
    assert "errors 0" in blank.stdout and "errors 1" not in blank.stdout, blank.stdout
    assert mock_server.stats.requests == 2 and len(RunStore(store).run_records()) == 1
    from assay import evaluate

    result = evaluate(root / "EVAL.yaml", judge_model=mock_model, dry_run=True,
                      cache="off")
    assert result.estimate is not None and (result.estimate.calls, result.estimate.cached) \
        == (2, 0)
    summary = result.summary
    assert (summary.evaluator_errors, summary.evaluator_skips) == (0, 2), summary


# -- 16. $ASSAY_CACHE is honoured -------------------------------------------------------------


def test_assay_cache_environment_variable_turns_the_cache_off(tmp_path, mock_model, mock_server):
    root = judged_project(tmp_path / "p")
    for _ in range(2):
        done = assay_cli(root, "run", "s.jsonl", "--judge-model", mock_model, "--store",
                         "sqlite://", env={"ASSAY_CACHE": "off"})
        assert done.returncode == 0, done.stdout + done.stderr
    assert mock_server.stats.requests == 2  # the second run was not served from a cache


def test_assay_cache_off_holds_for_every_command_and_entry_point(
        tmp_path, mock_model, mock_server, monkeypatch):
    """``assay judge``, ``assay rescore`` and ``assay.evaluate()`` build their engines from the
    same rule as ``assay run``: each call below is made, none is answered from the cache."""
    root = judged_project(tmp_path / "p")
    store = f"sqlite:///{root / 'runs.db'}"
    filled = assay_cli(root, "run", "s.jsonl", "--judge-model", mock_model, "--store", store)
    assert filled.returncode == 0, filled.stdout + filled.stderr
    run_id = next(x for x in filled.stdout.splitlines() if x.startswith("run ")).split()[1]
    off = {"ASSAY_CACHE": "off"}
    for _ in range(2):
        judged = assay_cli(root, "judge", "-e", "q", "-a", "q", "--model", mock_model, env=off)
        assert judged.returncode == 0, judged.stdout + judged.stderr
        assert "calls 1 (+0 cached)" in judged.stdout, judged.stdout
    rescored = assay_cli(root, "rescore", run_id, "--store", store, env=off)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "judge calls 1 (+0 cached" in rescored.stdout, rescored.stdout
    assert mock_server.stats.requests == 4
    from assay import evaluate

    monkeypatch.setenv("ASSAY_CACHE", "off")
    rows = [{"input": "q", "expected_output": "q", "output": "q"}]
    for _ in range(2):
        result = evaluate(rows, evaluators=["semantic_similarity"], judge_model=mock_model)
        assert result.summary.usage.calls == 1 and result.summary.usage.cached_calls == 0
    assert mock_server.stats.requests == 6
    bad = assay_cli(root, "judge", "-e", "q", "-a", "q", "--model", mock_model,
                    env={"ASSAY_CACHE": "of"})
    assert bad.returncode == 2 and "ASSAY_CACHE 'of': expected use, refresh or off" in \
        bad.stderr, bad.stderr


# -- 20 and 21. --target is recorded and reused; the judge follows the target that ran -------


def test_target_override_is_recorded_resumed_and_chooses_its_judge(tmp_path, mock_server):
    judge_a = f"{mock_server.url}#judge-a"
    judge_b = f"{mock_server.url}#judge-b"
    root = project(tmp_path / "p", extra_targets=(
        "    judge_target: judge_a\n"
        "  - name: v2\n    provider: python\n    function: agent:answer_v2\n"
        "    judge_target: judge_b\n"
        f"  - name: judge_a\n    provider: {judge_a}\n"
        f"  - name: judge_b\n    provider: {judge_b}\n"))
    (root / "agent.py").write_text(
        "def answer(q):\n    return q\n\ndef answer_v2(q):\n    return 'v2 ' + q\n")
    (root / "s.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}",
                                                      "expected_output": f"q{i}"}) + "\n"
                                          for i in range(4)))
    (root / "s.yaml").write_text("execution:\n  target: agent\n  evaluators:\n"
                                 "    - type: semantic_similarity\n")
    store = f"sqlite:///{tmp_path}/runs.db"
    done = assay_cli(root, "run", "s.jsonl", "--target", "v2", "--store", store,
                     "--max-failed", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    run = RunStore(store).run_records()[0]
    assert run.config.target == "v2" and run.config.target_override == "v2"
    records = RunStore(store).case_records(run.id)
    assert all(r.target == "v2" and r.output.startswith("v2 ") for r in records)
    assert {r.scores[0].judge_model for r in records} == {judge_b}
    # resume runs the remaining cases against the recorded override, with its judge
    RunStore(store).forget_errors(run.id)
    with RunStore(store).engine.begin() as conn:
        from assay.store import schema
        conn.execute(schema.case_results.delete().where(schema.case_results.c.case_id == "c3"))
        conn.execute(schema.scores.delete().where(schema.scores.c.case_id == "c3"))
        conn.execute(schema.executions.delete().where(schema.executions.c.case_id == "c3"))
        # stopped before its last case (a completed run is never run again)
        conn.execute(schema.runs.update().where(schema.runs.c.id == run.id).values(
            status="interrupted"))
    resumed = assay_cli(root, "run", "--resume", run.id, "--store", store)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    c3 = next(r for r in RunStore(store).case_records(run.id) if r.case_id == "c3")
    assert c3.target == "v2" and c3.output == "v2 q3" and c3.scores[0].judge_model == judge_b
    plain = assay_cli(root, "run", "s.jsonl", "--store", store, "--max-failed", "10")
    assert plain.returncode == 0
    latest = RunStore(store).run_records()[0]
    assert {r.scores[0].judge_model for r in RunStore(store).case_records(latest.id)} == \
        {judge_a}


# -- 27. unwritable outputs fail before the run, clearly --------------------------------------


def test_unwritable_outputs_fail_before_the_run_without_a_traceback(tmp_path):
    root = project(tmp_path / "p")
    jsonl_suite(root, 1)
    (root / "afile").write_text("x")
    for option in ("-o", "--junit", "--uipath-output"):
        done = assay_cli(root, "run", "s.jsonl", option, "afile/out.xml", "--store",
                         f"sqlite:///{tmp_path}/runs.db")
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and "afile/out.xml" in done.stderr
    assert RunStore(f"sqlite:///{tmp_path}/runs.db").run_records() == []


# -- 29. a read-only store says so, without a bogus resume hint -------------------------------


def test_read_only_store_is_a_clear_error(tmp_path):
    root = project(tmp_path / "p")
    jsonl_suite(root, 1)
    RunStore(f"sqlite:///{tmp_path}/runs.db").close()
    url = f"sqlite:///file:{tmp_path}/runs.db?mode=ro&uri=true"
    done = assay_cli(root, "run", "s.jsonl", "--store", url)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "readonly" in done.stderr.lower() or "read-only" in done.stderr.lower()
    assert "--resume ?" not in done.stderr and "Traceback" not in done.stderr


# -- the embedded demo judge is named plainly in every summary --------------------------------


@pytest.mark.slow  # the dry run loads the embedded model to check it
def test_a_run_judged_by_the_demo_model_says_its_scores_are_not_meaningful(tmp_path):
    import assay
    from assay.llm.models import DEMO_MODEL_NOTE
    from assay.types.config import Gates

    result = assay.evaluate([{"id": "a", "input": "q", "output": "x", "expected_output": "x"}],
                            evaluators=["semantic_similarity"], dry_run=True,
                            judge_model="local:gemma-3-270m", gates=Gates(max_failed=None))
    assert DEMO_MODEL_NOTE in result.summary.notes
    fine = assay.evaluate([{"id": "a", "input": "q", "output": "x", "expected_output": "x"}],
                          evaluators=["exact_match"])
    assert fine.summary.notes == []


def test_validate_output_shows_control_characters_escaped(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("evalcases:\n  - id: \"a\\e]0;title\\a\"\n    input: x\n    nope: 1\n")
    done = assay_cli(tmp_path, "validate", str(bad))
    assert done.returncode == 2
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout


# -- 24. repeats are independent samples ------------------------------------------------------


def test_repeats_draw_new_agent_answers_and_new_judgements(tmp_path, mock_server):
    judge = f"{mock_server.url}#judge"
    agent = f"{mock_server.url}#agent"
    root = project(tmp_path / "p", extra_targets=f"  - name: model_agent\n    provider: {agent}\n")
    (root / "s.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": f"q{i}", "expected_output": f"q{i}"}) + "\n"
        for i in range(2)))
    (root / "s.yaml").write_text("execution:\n  target: model_agent\n  evaluators:\n"
                                 "    - type: semantic_similarity\n")
    for concurrency in ("1", "8"):  # independence must not depend on -c
        mock_server.server.reset()
        done = assay_cli(root, "run", "s.jsonl", "--repeat", "3", "--judge-model", judge,
                         "-c", concurrency, "--store", "sqlite://", "--max-failed", "10",
                         env={"ASSAY_CACHE_DIR": str(tmp_path / f"cache{concurrency}")})
        assert done.returncode == 0, done.stdout + done.stderr
        # 2 cases x 3 repeats: 6 agent calls and 6 judge calls, none served from a cache
        assert mock_server.stats.requests == 12, concurrency


# -- JSON nested deeper than the decoder recurses ---------------------------------------------

DEEP = "[" * 100_000  # past the standard library's decoder, which raised RecursionError


def test_an_agent_answer_nested_past_the_json_decoder_is_judged_as_its_text(tmp_path):
    import assay
    from tests.test_agentv4 import cli_agent

    cli_agent(tmp_path, DEEP)
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(json.dumps({"target": "agent", "tests": [{
        "id": "deep", "input": "q", "assertions": [
            {"type": "is-json", "name": "json"},
            {"type": "contains", "value": "[[[", "name": "brackets"}]}]}))
    record = assay.evaluate(suite).records[0]
    assert record.execution.error is None  # was "the target failed: RecursionError: ..."
    assert record.execution.output == DEEP
    scores = {s.name: s for s in record.scores}
    assert scores["json"].value == 0 and scores["json"].misses == ["Output is not valid JSON"]
    assert scores["brackets"].value == 1


def test_a_trace_whose_answer_nests_past_the_json_decoder_is_judged_not_the_run_stopped(
        tmp_path):
    import orjson

    import assay
    from tests.trace_support import agent_trace, export

    deep_id, deep_spans = agent_trace("q1", DEEP, start=1_790_000_000)
    plain_id, plain_spans = agent_trace("q2", "Paris", start=1_790_000_100)
    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps(export(*deep_spans, *plain_spans)))
    result = assay.evaluate(traces=str(path), store=":memory:", evaluators=[
        {"type": "contains", "search_text": "[[[", "name": "brackets"}])  # raised
    verdicts = {r.case_id: r.verdict.value for r in result.records}
    assert verdicts == {deep_id: "pass", plain_id: "fail"}


@pytest.mark.parametrize("reader", [
    "assay.targets.inputs:parse_output", "assay.types.spans:mlflow_value",
    "assay.traces.reader:_parsed", "assay.judges.llm.connexity:_json_text"])
def test_readers_that_fall_back_to_text_keep_deep_json_as_text(reader):
    import importlib

    module, name = reader.split(":")
    assert getattr(importlib.import_module(module), name)(DEEP) == DEEP


@pytest.mark.parametrize(("args", "message"), [
    (["compare", "deep.jsonl", "deep.jsonl"], "deep.jsonl:1:1: invalid JSON: JSON nested deeper"),
    (["calibrate", "deep.jsonl", "--judge", "exact_match"], "deep.jsonl line 1: not JSON: JSON "
     "nested deeper"),
    (["run", "suite.jsonl", "--target", "replay", "--targets", "targets.yaml"],
     "deep.jsonl:1: invalid JSON: JSON nested deeper"),
])
def test_files_nested_past_the_json_decoder_are_located_errors(tmp_path, args, message):
    """Results files to compare, calibration sets and a recorded target's outputs went to the
    standard library's decoder as they were: a RecursionError traceback, exit 1."""
    (tmp_path / "deep.jsonl").write_text(DEEP + "\n")
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "input": "x", "expected_output": "y"}\n')
    (tmp_path / "suite.yaml").write_text("evaluators:\n  - type: exact_match\n")
    (tmp_path / "targets.yaml").write_text(
        "targets:\n  - name: replay\n    provider: recorded\n    path: deep.jsonl\n")
    done = run_assay(args, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert message in done.stderr, done.stderr
