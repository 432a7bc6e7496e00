"""Every surface that shows a verdict says when its judge is no real judge (the embedded
270M demo model, or a ``fake:`` model): run summaries, ``assay show``, the Python result
(``repr``, ``print``, the notebook table), ``assay judge``, a calibration, the pytest summary,
and a run of ``assay init``'s scaffold. The note is one function of the run's recorded judge,
so a run stored without it shows it too."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

import assay
import assay.run.result
from assay.llm import models
from assay.run.calibrate import calibrate_async
from assay.store.runs import RunStore
from assay.types.records import RunStatus
from tests.assay_process import run_assay

ROOT = Path(__file__).resolve().parent.parent
FAKE = "the judge is a fake (fake:NAME)"


def assay_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache")}
    env.pop("ASSAY_JUDGE_MODEL", None)
    return run_assay(args, cwd=cwd, env=env, timeout=120)


def test_the_note_is_a_function_of_the_judge_models() -> None:
    notes = models.judge_notes
    assert notes(["local:gemma-3-270m"]) == [models.DEMO_MODEL_NOTE]
    assert [n[:len(FAKE)] for n in notes(["fake:judge", "openai:gpt-4o-mini"])] == [FAKE]
    assert notes(["openai:gpt-4o-mini", None]) == []


def test_the_databricks_example_on_a_fake_judge_says_so_wherever_it_is_shown(tmp_path):
    result = assay.evaluate(ROOT / "examples" / "databricks" / "eval_set.jsonl",
                            naming="databricks", judge_model="fake:judge",
                            store=tmp_path / "runs.db")
    assert result.summary.notes[0].startswith(FAKE)
    assert f"note: {FAKE}" in str(result)
    assert FAKE in repr(result)
    assert f"<b>note</b>: {FAKE}" in result._repr_html_()


def test_a_run_stored_without_the_note_shows_it(tmp_path):
    store = f"sqlite:///{tmp_path}/runs.db"
    rows = [{"id": "a", "input": "q", "output": "Paris", "expected_output": "Paris"}]
    result = assay.evaluate(rows, evaluators=["semantic_similarity"],
                            judge_model="fake:judge", store=store)
    runs = RunStore(store)
    old = result.summary.model_copy(update={"notes": []})  # as an older assay stored it
    runs.set_status(result.run_id, RunStatus.COMPLETED.value, old.model_dump(mode="json"))
    stored = runs.run_record(result.run_id)
    assert stored.summary.notes == []
    notes = assay.run.result.verdict_notes(stored)
    assert len(notes) == 1 and notes[0].startswith(FAKE)
    shown = assay_cli(tmp_path, "show", result.run_id, "--store", store)
    assert shown.returncode == 0, shown.stderr
    assert f"note: {FAKE}" in shown.stdout
    summary = assay_cli(tmp_path, "show", result.run_id, "--summary", "--store", store)
    assert f"note: {FAKE}" in summary.stdout


def test_the_init_scaffold_does_not_pass_silently_on_its_fake_judge(tmp_path):
    made = assay_cli(tmp_path, "init", "project")
    assert made.returncode == 0, made.stderr
    ran = assay_cli(tmp_path / "project", "run", "EVAL.yaml")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"note: {FAKE}" in ran.stdout
    last = ran.stdout.strip().splitlines()[-1]
    assert last == "all gates passed, but on a judge that is not a real one (see the note " \
        "above)", ran.stdout


def test_assay_judge_notes_a_fake_judge(tmp_path):
    done = assay_cli(tmp_path, "judge", "-e", "Paris", "-a", "Paris", "-m", "fake:judge")
    assert f"note: {FAKE}" in done.stderr, done.stdout + done.stderr


async def test_a_calibration_of_a_fake_judge_notes_it(tmp_path):
    report = await calibrate_async(
        [{"id": "x", "output": "o", "reference": "o", "label": "pass"},
         {"id": "y", "output": "p", "reference": "o", "label": "fail"}],
        judge="semantic_similarity", judge_model="fake:judge",
        store=f"sqlite:///{tmp_path}/runs.db", resamples=0)
    assert report.notes and report.notes[0].startswith(FAKE)


@pytest.mark.process
def test_the_pytest_summary_notes_a_fake_judge(pytester: pytest.Pytester):
    pytester.makepyfile(test_agent=textwrap.dedent('''
        from assay import Case, SemanticSimilarity
        from assay.integrations.pytest_plugin import assert_passes

        def test_similar():
            assert_passes(SemanticSimilarity(threshold=0.0), Case(id="a", expected_output="x"),
                          "x", judge_model="fake:judge")
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert f"note: {FAKE}" in result.stdout.str()


pytest_plugins = ["pytester"]
