"""The calibration gate: a run passes it only when each judge it covers has a current
calibration that meets it; a judge never calibrated, or calibrated before its prompt or model
changed, fails it with a message saying how to calibrate. Calibrations are stored under the
judge's key, and the key follows what the judge would send."""

from __future__ import annotations

import pytest

from assay.calibration import store as calibrations
from assay.calibration.key import judge_identity
from assay.judges import build
from assay.run.calibrate import calibrate_async
from assay.run.evaluate import evaluate_async, open_store
from assay.types.config import CalibrationGate, Gates

ALWAYS_PASS = 'Grade it. <<mock:{"score": 1.0, "reasoning": "fine"}>> {{candidate_answer}}'
JUDGE = {"type": "llm_judge", "name": "correct", "prompt": ALWAYS_PASS}
LABELLED = [{"id": f"l{i}", "question": f"q{i}", "response": f"answer {i}",
             "label": "pass" if i % 2 else "fail"} for i in range(10)]
ROWS = [{"id": f"c{i}", "input": f"q{i}", "output": f"answer {i}"} for i in range(3)]


async def run_with(store: str, model: str, gate: CalibrationGate, judge: dict | None = None):
    return await evaluate_async(ROWS, evaluators=[judge or JUDGE], store=store,
                                judge_model=model, gates=Gates(max_failed=None,
                                                               calibration=gate))


async def test_a_judge_without_calibration_fails_the_gate_with_how_to_calibrate(
        tmp_path, mock_model):
    store = f"sqlite:///{tmp_path}/runs.db"
    result = await run_with(store, mock_model, CalibrationGate(min_kappa=0.5))
    assert not result.passed
    (failure,) = result.summary.gate_failures
    assert failure.startswith(f"judge 'correct' (llm_judge on {mock_model}) has no "
                              "calibration in sqlite:///")
    assert "Calibrate it: assay calibrate SET --judge JUDGE.yaml --judge-model" in failure
    assert f"--store sqlite:///{tmp_path}/runs.db" in failure


async def test_a_current_calibration_passes_and_a_changed_prompt_or_model_is_stale(
        tmp_path, mock_model, mock_server):
    store = f"sqlite:///{tmp_path}/runs.db"
    report = await calibrate_async(LABELLED, judge=JUDGE, judge_model=mock_model, store=store,
                                   resamples=100)
    assert report.statistics["accuracy"].value == 0.5  # it passes everything
    assert report.statistics["kappa"].value == pytest.approx(0.0)
    stored = calibrations.latest(open_store(store), report.judge.key)
    assert stored is not None and stored.id == report.id and stored.accuracy == 0.5
    assert stored.report.judge.models == [mock_model]

    passing = await run_with(store, mock_model, CalibrationGate(min_accuracy=0.5))
    assert passing.passed, passing.summary.gate_failures

    low = await run_with(store, mock_model, CalibrationGate(min_kappa=0.5))
    (failure,) = low.summary.gate_failures
    assert "kappa 0.000" in failure and f"calibration {report.id} on rows" in failure
    assert "below the gate 0.5" in failure

    changed = {**JUDGE, "prompt": ALWAYS_PASS + "\nBe strict."}
    stale = await run_with(store, mock_model, CalibrationGate(min_accuracy=0.5), changed)
    (failure,) = stale.summary.gate_failures
    assert "its calibration is stale" in failure and report.id in failure
    assert "prompt changed" in failure and "Calibrate it again: assay calibrate" in failure

    other_model = mock_model.replace("#judge-model", "#other-model")
    moved = await run_with(store, other_model, CalibrationGate(min_accuracy=0.5))
    (failure,) = moved.summary.gate_failures
    assert f"model {mock_model} -> {other_model}" in failure and "stale" in failure

    elsewhere = await run_with(store, mock_model, CalibrationGate(set="llmbar"))
    (failure,) = elsewhere.summary.gate_failures
    assert "has no calibration on llmbar" in failure

    unknown = await run_with(store, mock_model, CalibrationGate(evaluators=["nope"]))
    assert "names evaluator 'nope', which the suite does not have" in \
        unknown.summary.gate_failures[0]


async def test_the_key_follows_model_prompt_schema_and_verdict_settings():
    base = await judge_identity(build(JUDGE), default_model="openai:gpt-4o-mini")
    renamed = await judge_identity(build({**JUDGE, "name": "other", "weight": 3}),
                                   default_model="openai:gpt-4o-mini")
    assert renamed.key == base.key  # a name or weight is not the judge
    for change, what in (({"prompt": ALWAYS_PASS + "!"}, "prompt changed"),
                         ({"threshold": 0.5}, "settings changed"),
                         ({"temperature": 0.7}, "settings changed")):
        other = await judge_identity(build({**JUDGE, **change}),
                                     default_model="openai:gpt-4o-mini")
        assert other.key != base.key and what in other.changes_from(base)
    moved = await judge_identity(build(JUDGE), default_model="openai:gpt-4o-mini",
                                 override_model="openai:gpt-4o")
    assert moved.key != base.key
    assert moved.changes_from(base) == ["model openai:gpt-4o-mini -> openai:gpt-4o"]
    ties = await judge_identity(build({"type": "pairwise", "ties": "forbid"}))
    allowed = await judge_identity(build({"type": "pairwise"}))
    assert "answer schema changed" in ties.changes_from(allowed)
    plain = await judge_identity(build({"type": "exact_match"}))
    assert plain.models == [] and plain.key  # no model: keyed by its settings alone


async def test_a_password_in_the_judge_url_never_reaches_the_key_store_or_message(
        tmp_path, mock_server):
    secret_model = mock_server.url.replace("http://", "http://user:hunter2@") + "#judge-model"
    store = f"sqlite:///{tmp_path}/runs.db"
    result = await run_with(store, secret_model, CalibrationGate(min_kappa=0.1))
    assert "hunter2" not in " ".join(result.summary.gate_failures)
    report = await calibrate_async(LABELLED, judge=JUDGE, judge_model=secret_model,
                                   store=store, resamples=0)
    assert "hunter2" not in report.to_json()
    own = await calibrate_async(LABELLED, judge={**JUDGE, "model": secret_model},
                                store=store, resamples=0)
    assert "hunter2" not in own.to_json() and own.judge.spec["model"].count("***") == 1
    assert "hunter2" not in (tmp_path / "runs.db").read_bytes().decode("latin-1")


async def test_a_suite_asks_for_the_gate_in_its_metadata(tmp_path, mock_model):
    from assay.errors import ConfigError
    from assay.suites import load_any

    suite_file = tmp_path / "EVAL.yaml"
    suite_file.write_text(
        "description: asks for calibrated judges\n"
        "metadata:\n  calibration_gate: {min_kappa: 0.5}\n"
        "execution:\n  target: agent\n  evaluators:\n"
        "    - {name: correct, type: llm_judge, prompt: '{{candidate_answer}}'}\n"
        "evalcases:\n  - {id: a, input: q, expected_output: x}\n")
    suite = load_any(suite_file, None)
    assert suite.metadata["calibration_gate"] == {"min_kappa": 0.5}
    result = await evaluate_async(suite, target=lambda q: "answer", store=f"sqlite:///"
                                  f"{tmp_path}/runs.db", judge_model=mock_model,
                                  gates=Gates(max_failed=None))
    (failure,) = result.summary.gate_failures
    assert "has no calibration" in failure
    assert f"--suite {suite_file} --evaluator correct" in failure
    suite_file.write_text(suite_file.read_text().replace("min_kappa", "min_kapa"))
    with pytest.raises(ConfigError, match=r"EVAL.yaml: metadata.calibration_gate: min_kapa: "
                       r"Extra inputs are not permitted"):
        await evaluate_async(load_any(suite_file, None), target=lambda q: "answer",
                             store=f"sqlite:///{tmp_path}/runs.db", judge_model=mock_model)


async def test_a_calibration_whose_time_is_text_is_listed_with_no_time(
        tmp_path, mock_model, mock_server):
    """A calibration's ``created_at`` holding text (SQLite's REAL column takes it) failed
    every reader of the calibrations with "cannot be read", the gate's included: it reads
    as no time, named, by the rule every stored time goes through, and sorts after the
    calibrations whose time is known."""
    from sqlalchemy import text

    store = f"sqlite:///{tmp_path}/runs.db"
    first = await calibrate_async(LABELLED, judge=JUDGE, judge_model=mock_model, store=store,
                                  resamples=0)
    second = await calibrate_async(LABELLED, judge=JUDGE, judge_model=mock_model,
                                   store=store, resamples=0)
    runs = open_store(store)
    with runs.transaction() as conn:
        conn.execute(text("UPDATE calibrations SET created_at = 'yesterday' WHERE id = :id"),
                     {"id": second.id})
    listed = {c.id: c for c in calibrations.find(runs)}
    said = "created_at: its column holds the text 'yesterday', not a number"
    assert (listed[second.id].created_at, listed[second.id].unreadable) == (None, said)
    assert listed[first.id].created_at == first.created_at
    assert listed[first.id].unreadable is None
    assert [c.id for c in calibrations.find(runs)] == [first.id, second.id]
    found = calibrations.latest(runs, first.judge.key)
    assert found is not None and found.id == first.id
    with runs.transaction() as conn:
        conn.execute(text("UPDATE calibrations SET created_at = 'yesterday'"))
    changed = {**JUDGE, "prompt": ALWAYS_PASS + "\nBe strict."}
    stale = await run_with(store, mock_model, CalibrationGate(min_accuracy=0.5), changed)
    (failure,) = stale.summary.gate_failures
    assert "its calibration is stale" in failure and "(made at an unknown time, judge " \
        "'correct')" in failure and "1970" not in failure, failure
