"""``assay align``: a judge improved from human labels, measured on labels it never saw.

The labels (tests/data/alignment_labels.jsonl) are twelve answers to "what is the capital":
six name it (pass), six do not (fail, with the reviewer's comment). The stub judge plays a
lenient model that says "yes" to every answer, until it is shown what the humans taught it
(the aligned judge's instructions), when it answers as the humans did. So, with a third held
out (2 pass, 2 fail): before, accuracy 2/4 = 0.5 and kappa 0; after, 1.0 and 1.0.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import assay
from assay.calibration import store as calibrations
from assay.calibration.alignment import AlignmentReport, split
from assay.calibration.files import load_labelled
from assay.cli.app import app
from assay.errors import ConfigError
from assay.judges.llm.base import ALIGNMENT_HEADER
from assay.store.runs import RunStore
from assay.types.config import CalibrationGate, Gates
from tests.acceptance.stub import StubJudge

pytest.importorskip("numpy")
pytest.importorskip("scipy")

LABELS = Path(__file__).parent / "data" / "alignment_labels.jsonl"
MARKER = re.compile(r"⟦a(\d\d)⟧")
GUIDANCE = "- An answer that does not name the capital asked for is not correct."


class Reviewer:
    """The stub model: lenient correctness answers before alignment, the humans' after, and
    the reviser's guidance; it records which items the aligned judge was asked about."""

    def __init__(self) -> None:
        self.aligned_items: list[str] = []
        self.base_items: list[str] = []
        self.stub = StubJudge({"⟦a": self.correctness,
                               "its verdict differed from the humans": self.revise})
        assay.register_service("stub", self.stub)

    def correctness(self, request: dict[str, Any]) -> Any:
        system = request["messages"][0]["content"]
        user = request["messages"][-1]["content"]
        item = MARKER.findall(user)[-1]
        if ALIGNMENT_HEADER in system:
            assert GUIDANCE in system  # the guidance reached the judge's prompt
            self.aligned_items.append(f"i{item}")
            return "yes" if int(item) <= 6 else "no"
        self.base_items.append(f"i{item}")
        return "yes"

    @staticmethod
    def revise(request: dict[str, Any]) -> dict[str, Any]:
        return {"rationale": "it passes answers that name no capital", "guidance": GUIDANCE}


def align(tmp_path: Path, **options: Any) -> AlignmentReport:
    chosen = {"judge": {"type": "correctness"}, "judge_model": "custom:stub", "holdout": 0.34,
              "examples": 4, "store": f"sqlite:///{tmp_path}/runs.db", "cache": "off",
              "resamples": 200, **options}
    return assay.align(LABELS, **chosen)


def test_align_learns_from_some_labels_and_is_measured_on_the_others(tmp_path: Path) -> None:
    reviewer = Reviewer()
    report = align(tmp_path)
    learn, held = split(load_labelled(LABELS), 0.34, 0)
    assert report.held_out_ids == [i.id for i in held.items]
    assert report.learned_ids == [i.id for i in learn.items]
    assert not set(report.held_out_ids) & set(report.learned_ids)
    assert len(report.held_out_ids) == 4  # 2 of each label
    # the base judge was wrong on the fail items it learned from
    assert sorted(d.id for d in report.disagreements) == \
        sorted(i.id for i in learn.items if i.label == "fail")
    assert report.guidance == GUIDANCE
    # examples from the learned items only, both labels, the judge's mistakes first
    chosen = {i.id: i for i in learn.items}
    assert len(report.examples) == 4 and set(report.examples) <= set(chosen)
    assert {chosen[e].label for e in report.examples} == {"pass", "fail"}
    # the aligned judge was never asked about an item it learned from
    assert sorted(reviewer.aligned_items) == sorted(report.held_out_ids)
    # before and after on the held-out items, with intervals and a paired change
    assert report.before.accuracy.value == 0.5  # type: ignore[union-attr]
    assert report.before.kappa.value == 0.0  # type: ignore[union-attr]
    assert report.after.accuracy.value == 1.0  # type: ignore[union-attr]
    assert report.after.kappa.value == 1.0  # type: ignore[union-attr]
    change = report.improvement["accuracy"]
    assert change.value == 0.5 and change.low is not None and change.high is not None
    assert report.improvement["kappa"].value == 1.0
    assert report.before.accuracy.low is not None  # type: ignore[union-attr]
    assert not any("human labels of run" in note for note in report.notes)  # from the file
    # the new judge version: its own key, its examples and what it learned from
    assert report.after.judge.key != report.before.judge.key
    assert report.judge["guidance"] == GUIDANCE
    assert report.judge["aligned"]["learned_ids"] == report.learned_ids
    assert [e["id"] for e in report.judge["examples"]] == report.examples


def test_the_alignment_is_stored_with_the_aligned_judges_key(tmp_path: Path) -> None:
    Reviewer()
    report = align(tmp_path)
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    found = calibrations.latest(store, report.after.judge.key)
    assert found is not None and found.id == report.after.id
    note = found.report.alignment
    assert note is not None and note.id == report.id
    assert note.base_key == report.before.judge.key
    assert note.held_out == report.held_out_ids and note.learned == 8
    assert note.before["accuracy"].value == 0.5 and note.improvement["accuracy"].value == 0.5
    # the base judge's figures on the held-out items are the alignment's, not a calibration
    assert calibrations.latest(store, report.before.judge.key) is None


def test_calibrate_never_counts_the_labels_an_aligned_judge_learned_from(
        tmp_path: Path) -> None:
    reviewer = Reviewer()
    report = align(tmp_path)
    reviewer.aligned_items.clear()
    again = assay.calibrate(LABELS, judge=report.judge, judge_model="custom:stub",
                            store=f"sqlite:///{tmp_path}/runs.db", cache="off",
                            resamples=0)
    assert again.counts.items == 4
    assert sorted(reviewer.aligned_items) == sorted(report.held_out_ids)
    assert any("8 item(s) the aligned judge learned from were left out" in n
               for n in again.notes)
    with pytest.raises(ConfigError, match="every item is one the aligned judge learned from"):
        learned_only = [json.loads(line) for line in LABELS.read_text().splitlines()
                        if json.loads(line)["id"] in report.learned_ids]
        assay.calibrate(learned_only, judge=report.judge, judge_model="custom:stub",
                        store=f"sqlite:///{tmp_path}/runs.db", cache="off", resamples=0)


def test_the_calibration_gate_knows_which_version_was_measured(tmp_path: Path) -> None:
    """A run judged by the aligned judge passes the gate on its held-out calibration; the
    judge it came from has none."""
    Reviewer()
    report = align(tmp_path)
    store = f"sqlite:///{tmp_path}/runs.db"
    rows = [{"id": "c", "input": "⟦a01⟧ q", "output": "⟦a01⟧ a", "expected_output": "b"}]
    gate = CalibrationGate(min_kappa=0.5)
    passed = assay.evaluate(rows, evaluators=[report.judge], judge_model="custom:stub",
                            store=store, cache="off",
                            gates=Gates(max_failed=None, calibration=gate))
    assert passed.passed, passed.summary.gate_failures
    plain = assay.evaluate(rows, evaluators=[{"type": "correctness"}],
                           judge_model="custom:stub", store=store, cache="off",
                           gates=Gates(max_failed=None, calibration=gate))
    (failure,) = plain.summary.gate_failures
    assert "has no calibration of its own" in failure and report.id in failure


def test_bad_alignments_are_refused_before_any_call(tmp_path: Path) -> None:
    reviewer = Reviewer()
    with pytest.raises(ConfigError, match="asks no model"):
        align(tmp_path, judge={"type": "exact_match"})
    with pytest.raises(ConfigError, match=r"holdout 1\.5"):
        align(tmp_path, holdout=1.5)
    few = [json.loads(line) for line in LABELS.read_text().splitlines()][:3]
    with pytest.raises(ConfigError, match="each side needs at least 2"):
        assay.align(few, judge={"type": "correctness"}, judge_model="custom:stub",
                    store=f"sqlite:///{tmp_path}/runs.db", cache="off")
    report = align(tmp_path)
    with pytest.raises(ConfigError, match="aligned already"):
        align(tmp_path, judge=report.judge)
    calls = reviewer.stub.total
    with pytest.raises(ConfigError):
        align(tmp_path, judge={"type": "exact_match"})
    assert reviewer.stub.total == calls


def test_assay_align_command(tmp_path: Path) -> None:
    reviewer = Reviewer()
    judge_file = tmp_path / "aligned.yaml"
    report_file = tmp_path / "alignment.json"
    result = CliRunner().invoke(app, [
        "align", str(LABELS), "--judge", '{"type": "correctness"}', "--judge-model",
        "custom:stub", "--holdout", "0.34", "--store", f"sqlite:///{tmp_path}/runs.db",
        "--cache", "off", "--resamples", "100", "-o", str(judge_file),
        "--report", str(report_file)])
    assert result.exit_code == 0, result.output
    assert "learned from 8 item(s) (4 disagreement(s) with the humans); measured on 4 " \
           "held-out item(s)" in result.output
    accuracy = next(line for line in result.output.splitlines() if "accuracy" in line)
    # a rate is a percent, its change in points, a coefficient's change signed
    assert "50.0%" in accuracy and "+50.0 pt" in accuracy
    assert "+1.000" in next(line for line in result.output.splitlines() if "kappa" in line)
    aligned = yaml.safe_load(judge_file.read_text())
    assert aligned["type"] == "correctness" and aligned["guidance"] == GUIDANCE
    assert json.loads(report_file.read_text())["held_out_ids"] == \
        sorted(reviewer.aligned_items)
    # the written judge is the new version: calibrate takes it as it is
    again = CliRunner().invoke(app, [
        "calibrate", str(LABELS), "--judge", str(judge_file), "--judge-model", "custom:stub",
        "--store", f"sqlite:///{tmp_path}/runs.db", "--cache", "off", "--resamples", "0"])
    assert again.exit_code == 0, again.output
    assert "left out" in again.output
    refused = CliRunner().invoke(app, ["align", str(LABELS), "-j", '{"type": "correctness"}',
                                       "--judge-model", "custom:stub", "-o", str(LABELS)])
    assert refused.exit_code == 2 and "--output" in refused.output


def test_settings_added_for_alignment_leave_other_judges_keys_as_they_were() -> None:
    """guidance, examples, aligned (and retrieval_per, max_tool_calls) are recorded and keyed
    only when set: a judge that uses none of them has the spec and the calibration key it
    had before they existed, so its stored runs and calibrations still match."""
    from assay.calibration.key import settings_of
    from assay.judges.registry import build

    for spec in ({"type": "correctness"}, {"type": "make_judge",
                                           "instructions": "Rate {{ outputs }}"}):
        judge = build(spec)
        added = {"guidance", "examples", "aligned", "retrieval_per", "max_tool_calls"}
        assert not added & set(judge.spec().params)
        assert not added & set(settings_of(judge))
    aligned = build({"type": "correctness", "guidance": "- Be strict."})
    assert aligned.spec().params["guidance"] == "- Be strict."


def test_assay_align_learns_from_the_labels_given_on_a_runs_case_pages(tmp_path: Path) -> None:
    from assay.store.labels import add_label

    Reviewer()  # the stub model the judge and the reviser ask
    url = f"sqlite:///{tmp_path}/runs.db"
    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    run = assay.evaluate([{"id": r["id"], "input": r["input"], "output": r["output"],
                           "expected_output": r["reference"]} for r in rows],
                         evaluators=[{"type": "correctness"}], judge_model="custom:stub",
                         store=url, cache="off")
    store = RunStore(url)
    for row in rows:  # the lenient judge passed every answer; the humans did not
        add_label(store, run.run_id, row["id"], 0, "correctness",
                  agrees=row["label"] == "pass", author="reviewer")
    judge_file = tmp_path / "aligned.yaml"
    result = CliRunner().invoke(app, [
        "align", "--run", run.run_id, "--judge-model", "custom:stub", "--holdout", "0.34",
        "--store", url, "--cache", "off", "--resamples", "100", "-o", str(judge_file)])
    assert result.exit_code == 0, result.output
    assert "learned from 8 item(s) (4 disagreement(s) with the humans)" in result.output
    assert f"learned from the human labels of run {run.run_id}" in result.output
    accuracy = next(line for line in result.output.splitlines() if "accuracy" in line)
    assert "+50.0 pt" in accuracy
    assert yaml.safe_load(judge_file.read_text())["guidance"] == GUIDANCE
    both = CliRunner().invoke(app, ["align", str(LABELS), "--run", run.run_id,
                                    "--store", url])
    assert both.exit_code == 2 and "give the labels" in both.output
    neither = CliRunner().invoke(app, ["align", "--store", url])
    assert neither.exit_code == 2 and "give the labels" in neither.output
