"""The vendored labelled sets: each loader on its own file with exact record counts and label
distributions, every file checked against the size and hash of its source, every folder
with its licence and source note, and the published human figures recomputed from the data."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter

import numpy as np
import pytest

from assay.calibration.agreement import cohen_kappa
from assay.calibration.analysis import analyse
from assay.calibration.items import CalibrationDataError
from assay.calibration.key import JudgeIdentity
from assay.calibration.sets import DATA, SETS, load_set
from assay.types.score import Score

COUNTS = {
    "llmbar-natural": 100, "llmbar-adversarial": 319, "llmbar": 419, "pandalm": 999,
    "hhh": 221, "halueval": 4507, "dices-expert": 350, "inferential-strategies": 300,
    "topical-chat": 360, "qags-cnndm": 235, "qags-xsum": 239, "newsroom": 420, "roscoe": 756,
}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_each_set_loads_with_its_exact_record_count(name):
    loaded = load_set(name)
    assert len(loaded.items) == COUNTS[name] == SETS[name].records
    assert loaded.kind == SETS[name].kind
    assert len({item.id for item in loaded.items}) == len(loaded.items)  # ids are unique
    assert all(item.output is not None for item in loaded.items)
    if loaded.kind == "pairwise":
        assert all(item.output_2 is not None for item in loaded.items)
    assert loaded.default_judge is not None
    assert all(item.file.endswith(".json.gz") for item in loaded.items)


def test_label_distributions_match_the_published_descriptions():
    assert Counter(i.label for i in load_set("halueval").items) == {"pass": 3692, "fail": 815}
    assert Counter(i.group for i in load_set("llmbar-adversarial").items) == {
        "Neighbor": 134, "GPTInst": 92, "GPTOut": 47, "Manual": 46}
    assert Counter(i.label for i in load_set("pandalm").items) == {"2": 472, "1": 422,
                                                                    "tie": 105}
    assert Counter(i.group for i in load_set("roscoe").items) == {
        "gsm8k": 200, "drop": 210, "cosmos": 195, "esnli": 151}
    assert Counter(i.group for i in load_set("hhh").items) == {
        "honest": 61, "helpful": 59, "harmless": 58, "other": 43}
    hhh = load_set("hhh").items
    assert Counter(i.label for i in hhh) == {"1": 111, "2": 110}  # chosen alternates
    assert all(i.guidelines and "Score 1" in i.guidelines[0] for i in hhh)
    assert Counter(i.label for i in load_set("dices-expert").items) == {"pass": 175,
                                                                         "fail": 175}
    qags = load_set("qags-xsum").items
    assert {i.label for i in qags} == {0.0, 1.0} and all(i.context for i in qags)
    assert {float(i.label) for i in load_set("roscoe").items} <= {1, 2, 3, 4, 5}


def test_metric_and_limit_options():
    fluency = load_set("newsroom", metric="Fluency")
    assert "Fluency" in fluency.title and len(fluency.items) == 420
    assert len(load_set("llmbar", limit=7).items) == 7
    with pytest.raises(CalibrationDataError, match="offers: Coherence, Fluency"):
        load_set("newsroom", metric="Length")
    with pytest.raises(CalibrationDataError, match="unknown calibration set 'nope'"):
        load_set("nope")


def test_every_vendored_file_is_its_source_byte_for_byte():
    manifest = json.loads((DATA / "MANIFEST.json").read_text())
    files = sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*.gz"))
    assert files == sorted(manifest)
    for relative, entry in manifest.items():
        raw = gzip.decompress((DATA / relative).read_bytes())
        assert len(raw) == entry["bytes"], relative
        assert hashlib.sha256(raw).hexdigest() == entry["sha256"], relative
    used = {f for info in SETS.values() for f in info.files}
    assert used == set(manifest)  # only the files the loaders read are vendored


def test_every_folder_keeps_its_licence_and_source_note():
    for folder in ("llmbar", "pandalm", "halueval", "unieval", "prometheus-eval",
                   "judge-bench"):
        assert (DATA / folder / "SOURCE.md").is_file(), folder
        note = (DATA / folder / "SOURCE.md").read_text()
        assert "Repository: https://github.com/" in note and "commit" in note
    for licence in ("llmbar", "pandalm", "halueval", "unieval", "prometheus-eval",
                    "judge-bench/data/newsroom", "judge-bench/data/roscoe",
                    "judge-bench/data/dices", "judge-bench/data/inferential-strategies"):
        assert (DATA / licence / "LICENSE").stat().st_size > 500, licence
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert total < 3_000_000  # small enough to ship with the package


def test_pandalm_annotator_agreement_recomputes_the_published_kappas():
    items = load_set("pandalm").items
    space = {"1": 0, "2": 1, "tie": 2}
    table = np.array([[space[str(r)] for r in item.ratings or []] for item in items])
    found = [cohen_kappa(table[:, a], table[:, b], 3) for a, b in ((0, 1), (0, 2), (1, 2))]
    assert [round(float(k), 3) for k in found] == [0.852, 0.879, 0.862]
    assert sum(1 for row in table if len(set(row)) == 1) == 879  # unanimous items


def _any_pairwise_scores(items):
    return [(item, Score(name="j", value=1.0, label="1",
                         details={"orders": [{"picked": "1"}, {"picked": "1"}]}))
            for item in items]


def test_length_baselines_recompute_the_published_figures():
    identity = JudgeIdentity(key="k", name="j", type="pairwise")
    expected = {"llmbar-natural": 0.560}
    for name, value in expected.items():
        labelled = load_set(name)
        report = analyse(labelled, _any_pairwise_scores(labelled.items), identity,
                         passes=lambda s: True, report_id="x", resamples=0)
        assert report.pairwise is not None
        assert report.pairwise.longer_baseline_accuracy.value == pytest.approx(value, abs=5e-4)
    # A judge that always picks the longer output, in both orders, scores the published
    # length baselines in each adversarial group, and their unweighted mean over groups.
    adversarial = load_set("llmbar-adversarial")
    longer = [(item, Score(name="j", value=1.0, label=pick, details={
        "orders": [{"picked": pick}, {"picked": pick}]}))
        for item in adversarial.items
        for pick in ["1" if len(item.output) > len(item.output_2) else "2"]]
    report = analyse(adversarial, longer, identity, passes=lambda s: True, report_id="x",
                     resamples=100)
    published = {"Neighbor": 0.119, "GPTInst": 0.130, "GPTOut": 0.447, "Manual": 0.174}
    found = {g.group: g.statistics["accuracy_mean_of_orders"].value for g in report.groups}
    assert found == pytest.approx(published, abs=5e-4)
    assert report.statistics["accuracy_group_mean"].value == pytest.approx(
        sum(found.values()) / 4)
    assert report.pairwise is not None and report.pairwise.judge_picks_longer.value == 1.0
