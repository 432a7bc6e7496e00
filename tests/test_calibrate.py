"""``assay.calibrate`` and ``assay calibrate`` end to end on the mock server: a calibration is
a stored, cached, resumable run; errors are counted and left out, never scored as
disagreements; a stored run can be calibrated against labels by case id; the CLI prints,
writes JSON and sets exit codes, and the run gate's advice works as printed."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay.calibration import store as calibrations
from assay.calibration.items import CalibrationDataError
from assay.calibration.report import CalibrationReport, text_lines
from assay.llm import RetryPolicy
from assay.run.calibrate import calibrate_async
from assay.run.evaluate import evaluate_async, open_store
from tests.assay_process import run_assay


async def test_a_calibration_is_a_stored_cached_run(tmp_path, mock_model, mock_server):
    store = f"sqlite:///{tmp_path}/runs.db"
    report = await calibrate_async("llmbar-natural", limit=30, judge_model=mock_model,
                                   store=store, resamples=200)
    assert report.counts.items == report.counts.scored == 30
    assert report.set.name == "llmbar-natural" and report.set.licence == "MIT"
    assert report.run_id and report.judge.type == "pairwise"
    assert {"accuracy", "kappa", "alpha"} <= set(report.statistics)
    assert report.anchors and report.anchors[0].value == 0.96
    assert mock_server.stats.requests == 60
    run_store = open_store(store)
    records = run_store.case_records(report.run_id)
    assert len(records) == 30
    assert all("label" not in json.dumps(r.case.metadata) for r in records)  # never shown
    assert calibrations.latest(run_store, report.judge.key).id == report.id
    again = await calibrate_async("llmbar-natural", limit=30, judge_model=mock_model,
                                  store=store, resamples=200)
    assert mock_server.stats.requests == 60  # every judgement came from the cache
    assert again.statistics == report.statistics  # same answers, same seed, same figures
    assert CalibrationReport.model_validate_json(report.to_json()) == report
    assert any("position consistency" in line for line in text_lines(report))


async def test_a_stopped_calibration_resumes_without_asking_again(tmp_path, mock_model,
                                                                  mock_server):
    mock_server.configure(latency_ms=100)
    store = f"sqlite:///{tmp_path}/runs.db"
    task = asyncio.ensure_future(calibrate_async(
        "llmbar-natural", limit=20, judge_model=mock_model, store=store, concurrency=4,
        cache="off"))
    deadline = asyncio.get_running_loop().time() + 60
    while mock_server.stats.completed < 8 and not task.done():
        assert asyncio.get_running_loop().time() < deadline, "the calibration never started"
        await asyncio.sleep(0.02)
    assert not task.done(), task.result()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert left == [], f"the stopped calibration left tasks running: {left}"
    (run,) = open_store(store).run_records()
    assert run.status.value == "interrupted"
    done_before = len(open_store(store).case_records(run.id))
    assert 0 < done_before < 20
    asked = mock_server.stats.requests
    report = await calibrate_async("llmbar-natural", limit=20, judge_model=mock_model,
                                   store=store, concurrency=4, cache="off", resume=run.id,
                                   resamples=100)
    assert report.run_id == run.id and report.counts.scored == 20
    assert mock_server.stats.requests - asked <= 2 * (20 - done_before) + 8


async def test_judge_errors_are_counted_and_left_out(tmp_path, mock_model, mock_server):
    mock_server.configure(faults={"500": 0.3}, seed=3)
    report = await calibrate_async(
        "llmbar-natural", limit=30, judge_model=mock_model, store=f"sqlite:///{tmp_path}/r.db",
        retry=RetryPolicy(max_attempts=1, call_timeout_s=5, total_timeout_s=5), resamples=0)
    counts = report.counts
    assert counts.errors > 0 and counts.scored + counts.errors == 30
    assert sum(counts.error_codes.values()) == counts.errors
    assert report.statistics["accuracy"].n == counts.scored
    assert any("left out" in note for note in report.notes)


GRADED = {"type": "llm_judge", "name": "graded", "prompt": "{{candidate_answer}}"}


async def _graded_run(store: str, model: str, cases: int) -> Any:
    """A stored run of ``cases`` cases c0, c1... judged by :data:`GRADED`."""
    rows = [{"id": f"c{i}", "input": f"q{i}", "output": f"answer {i}"} for i in range(cases)]
    return await evaluate_async(rows, evaluators=[GRADED], judge_model=model, store=store)


async def test_a_stored_run_is_calibrated_against_labels_by_case_id(tmp_path, mock_model,
                                                                     mock_server):
    store = f"sqlite:///{tmp_path}/runs.db"
    run = await _graded_run(store, mock_model, 8)
    judge = GRADED
    asked = mock_server.stats.requests
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,label\n" + "".join(f"c{i},{'pass' if i % 2 else 'fail'}\n"
                                                  for i in range(8)))
    report = await calibrate_async(run=run.run_id, labels=labels, store=store, resamples=50)
    assert mock_server.stats.requests == asked  # no judge was called
    assert report.run_id == run.run_id and report.counts.scored == 8
    assert report.judge.name == "graded" and report.set.kind == "binary"
    assert report.judge.key == (await calibrate_async(
        [{"id": "x", "output": "o", "label": "pass"}], judge=judge, judge_model=mock_model,
        store=f"sqlite:///{tmp_path}/other.db", resamples=0)).judge.key
    labels.write_text("case_id,label\nc1,pass\nc99,fail\n")
    with pytest.raises(CalibrationDataError, match=r"labels.csv line 3, field 'case_id': case "
                       r"'c99' is not in run"):
        await calibrate_async(run=run.run_id, labels=labels, store=store)


async def test_a_case_labelled_twice_is_refused_with_every_line_named(tmp_path, mock_model,
                                                                       mock_server):
    store = f"sqlite:///{tmp_path}/runs.db"
    run = await _graded_run(store, mock_model, 3)
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,label\n" + "c0,pass\n" * 100 + "c1,pass\nc2,fail\nc2,pass\n")
    with pytest.raises(CalibrationDataError) as caught:
        await calibrate_async(run=run.run_id, labels=labels, store=store, resamples=0)
    message = caught.value.message
    assert message.startswith(f"{labels}, field 'case_id': ")
    lines = ", ".join(f"line {n}" for n in range(2, 102))
    assert f"duplicate id 'c0' given 100 times ({lines})" in message
    assert "duplicate id 'c2' given 2 times (line 103, line 104)" in message
    assert "'c1'" not in message
    assert calibrations.find(open_store(store), limit=5) == []  # nothing was stored


# -- the command line ---------------------------------------------------------------------------


def assay(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache")}
    env.pop("ASSAY_JUDGE_MODEL", None)
    return run_assay(args, cwd=cwd, env=env, timeout=240)


def test_cli_lists_sets_prints_reports_and_sets_exit_codes(tmp_path, mock_model):
    listed = assay(tmp_path, "calibrate", "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {s["name"]: s["records"] for s in json.loads(listed.stdout)}["halueval"] == 4507
    labelled = tmp_path / "labels.jsonl"
    labelled.write_text("".join(json.dumps({"response": f"answer {i}", "label": i % 2}) + "\n"
                                for i in range(8)))
    store = f"sqlite:///{tmp_path}/runs.db"
    judge = '{"type": "llm_judge", "prompt": "{{candidate_answer}}"}'
    shown = assay(tmp_path, "calibrate", str(labelled), "--judge", judge, "--judge-model",
                  mock_model, "--store", store, "--resamples", "50", "-o", "report.json")
    assert shown.returncode == 0, shown.stderr
    assert "statistics (value, 95.0% bootstrap interval):" in shown.stdout
    assert "Cohen's kappa" in shown.stdout and "stored in sqlite:///" in shown.stdout
    written = CalibrationReport.model_validate_json((tmp_path / "report.json").read_text())
    as_json = assay(tmp_path, "calibrate", str(labelled), "--judge", judge, "--judge-model",
                    mock_model, "--store", store, "--resamples", "50", "--json",
                    "--min-kappa", "0.99")
    assert as_json.returncode == 1 and "gate failed: kappa" in as_json.stderr
    assert json.loads(as_json.stdout)["statistics"] == json.loads(written.to_json())[
        "statistics"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"response": "a", "label": "pass"}\n{"response": "b", "label": "meh"}\n')
    refused = assay(tmp_path, "calibrate", str(bad), "--judge", judge, "--judge-model",
                    mock_model, "--store", store)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"{bad} line 2, field 'label': unknown label 'meh'" in " ".join(
        refused.stderr.split())
    copies = tmp_path / "copies.jsonl"
    copies.write_text('{"id": "a", "response": "x", "label": "pass"}\n' * 3)
    repeated = assay(tmp_path, "calibrate", str(copies), "--judge", judge, "--judge-model",
                     mock_model, "--store", store)
    assert repeated.returncode == 2 and "Traceback" not in repeated.stderr
    assert "duplicate id 'a' given 3 times (line 1, line 2, line 3)" in " ".join(
        repeated.stderr.split())
    clobber = assay(tmp_path, "calibrate", str(labelled), "--judge", judge, "-o",
                    str(labelled), "--store", store)
    assert clobber.returncode == 2 and "input" in clobber.stderr


def test_alpha_on_one_labelled_item_is_undefined_in_the_report_and_its_json(tmp_path,
                                                                             mock_model):
    """One item the judge and the human disagree on: alpha was printed as 0.000."""
    labelled = tmp_path / "one.jsonl"
    labelled.write_text(json.dumps({"response": "answer 1", "label": 1}) + "\n")
    said = "undefined: fewer than two items have two ratings to compare"
    common = ["calibrate", str(labelled), "--judge",
              '{"type": "llm_judge", "prompt": "{{candidate_answer}}"}', "--judge-model",
              mock_model, "--store", f"sqlite:///{tmp_path}/runs.db", "--resamples", "50"]
    shown = assay(tmp_path, *common, "-o", "report.json")
    assert shown.returncode == 0, shown.stderr
    assert "accuracy                     0.0%" in shown.stdout  # they disagree
    assert f"Krippendorff's alpha         {said}\n" in shown.stdout, shown.stdout
    as_json = assay(tmp_path, *common, "--json")
    for report in (json.loads(as_json.stdout),
                   json.loads((tmp_path / "report.json").read_text())):
        alpha = report["statistics"]["alpha"]
        assert alpha["value"] is None and alpha["undefined"] == said, alpha
        assert alpha["low"] is None and alpha["high"] is None
    stored = calibrations.latest(open_store(f"sqlite:///{tmp_path}/runs.db"),
                                 report["judge"]["key"])
    assert stored is not None and stored.report.statistics["alpha"].undefined == said


SUITE = '''
description: capitals
execution:
  target: agent
  evaluators:
    - name: similar
      type: semantic_similarity
evalcases:
  - id: fr
    input: Capital of France?
    expected_output: Paris is the capital of France.
'''


def judged_project(root: Path, judge_url: str) -> Path:
    """A suite whose agent's ``judge_target`` is the model at ``judge_url``, and a labelled
    file for its ``similar`` evaluator (returned)."""
    (root / "agent.py").write_text("def answer(q):\n    return 'Paris is the capital "
                                   "of France.'\n")
    (root / "EVAL.yaml").write_text(SUITE)
    (root / ".assay").mkdir()
    (root / ".assay" / "targets.yaml").write_text(textwrap.dedent(f"""
        targets:
          - name: agent
            provider: python
            function: agent:answer
            judge_target: judge
          - name: judge
            provider: {judge_url}#judge
    """))
    labelled = root / "similar.jsonl"
    rows = [{"response": f"the answer is {w}", "reference": f"the answer is {w}",
             "label": "pass"} for w in ("one", "two", "three")]
    rows += [{"response": f"{w} {w}", "reference": "something else entirely", "label": "fail"}
             for w in ("x", "y", "z")]
    labelled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return labelled


def test_calibrating_a_suites_evaluator_calibrates_the_judge_its_runs_use(tmp_path,
                                                                           mock_server):
    labelled = judged_project(tmp_path, mock_server.url)
    # No --judge-model: the judge is the one the suite's target names, not the engine's
    # default (the embedded model), on which a calibration would not count for its runs.
    calibrated = assay(tmp_path, "calibrate", str(labelled), "--suite", "EVAL.yaml",
                       "--evaluator", "similar", "--resamples", "20")
    assert calibrated.returncode == 0, calibrated.stdout + calibrated.stderr
    assert f"judge similar (semantic_similarity, {mock_server.url}#judge)" in \
        calibrated.stdout
    gated = assay(tmp_path, "run", "EVAL.yaml", "--min-judge-accuracy", "0.8")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "all gates passed" in gated.stdout


def test_the_run_gate_advice_calibrates_the_judge_as_printed(tmp_path, mock_server):
    labelled = judged_project(tmp_path, mock_server.url)
    first = assay(tmp_path, "run", "EVAL.yaml", "--min-judge-accuracy", "0.8")
    assert first.returncode == 1, first.stdout + first.stderr
    # The gate's line is printed whole, however narrow the output: the command it advises
    # copies from a log as one piece (the old output broke it wherever the width fell).
    line = next(x for x in first.stdout.splitlines() if x.startswith("gate failed"))
    assert "gate failed: judge 'similar' (semantic_similarity on " in line
    advice = re.search(r"Calibrate it: (assay calibrate SET --suite \S+ --evaluator similar "
                       r"--judge-model \S+ --store \S+)", line)
    assert advice is not None, first.stdout
    command = shlex.split(advice.group(1))[2:]  # as a shell reads it: the URL is quoted
    command[command.index("SET")] = str(labelled)
    calibrated = assay(tmp_path, "calibrate", *command, "--resamples", "50")
    assert calibrated.returncode == 0, calibrated.stdout + calibrated.stderr
    assert "accuracy                     100.0%" in calibrated.stdout
    second = assay(tmp_path, "run", "EVAL.yaml", "--min-judge-accuracy", "0.8")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "all gates passed" in second.stdout
