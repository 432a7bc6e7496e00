"""People's labels of judges' scores: added (never changed) with who and when, the latest of a
score counting, over the API with bad input refused, shown as judge-human agreement, and read
by ``assay calibrate --run`` with no file in between, giving what the same labels in a file
give."""

from __future__ import annotations

import json
import time

import pytest

from assay.errors import ConfigError
from assay.run.calibrate import calibrate_async
from assay.run.evaluate import evaluate_async
from assay.store import labels
from assay.store.runs import RunStore
from assay.testing.runs import write_run
from tests.assay_process import run_assay

GRADED = {"type": "llm_judge", "name": "graded", "prompt": "{{candidate_answer}}"}


def test_a_label_is_added_with_who_and_when_and_the_latest_counts(tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    run = write_run(store, 5)
    before = time.time()
    first = labels.add_label(store, run, "case-000001", 0, "correctness", agrees=True,
                             author="alice", comment="right")
    assert first.author == "alice" and first.created_at >= before
    assert first.judge_value is not None and first.judge_passed is not None
    second = labels.add_label(store, run, "case-000001", 0, "correctness", agrees=False,
                              author="bob", comment="too generous")
    labels.add_label(store, run, "case-000002", 0, "relevance", agrees=False, value=0.2,
                     author="alice")
    assert [x.id for x in labels.labels(store, run)][:2] == [first.id, second.id]
    current = labels.current_labels(store, run)
    assert [(x.case_id, x.author) for x in current] == [("case-000001", "bob"),
                                                       ("case-000002", "alice")]
    assert labels.human_value(current[0]) is (not first.judge_passed)
    assert labels.human_value(current[1]) == 0.2
    agreement = {a.evaluator: a for a in labels.agreement(store, run)}
    assert agreement["correctness"].labelled == 1 and agreement["correctness"].agreed == 0
    assert agreement["correctness"].agreement_text == "0.0%"


@pytest.mark.parametrize(("change", "problem"), [
    ({"author": " "}, "author"), ({"author": "a\nb"}, "author"),
    ({"comment": "x" * 5001}, "comment"), ({"value": 1.5}, "0 to 1"),
    ({"value": [1]}, "true or false"), ({"case_id": "nope"}, "no case"),
    ({"evaluator": "nope"}, "no score from 'nope'")])
def test_a_bad_label_is_refused_saying_why(tmp_path, change, problem):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    run = write_run(store, 3)
    given = {"case_id": "case-000001", "evaluator": "correctness", "author": "alice",
             "comment": "", "value": None, **change}
    with pytest.raises(ConfigError, match=problem):
        labels.add_label(store, run, given["case_id"], 0, given["evaluator"], agrees=False,
                         author=given["author"], comment=given["comment"],
                         value=given["value"])
    assert labels.labels(store, run) == []


def test_labels_over_the_api(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run = write_run(store, 3)
    store.close()
    with serve(url) as served, served.client() as api:
        made = api.post(f"/runs/{run}/labels", json={
            "case_id": "case-000001", "evaluator": "correctness", "agrees": False,
            "value": False, "comment": "<script>x</script>", "author": "alice"})
        assert made.status_code == 201, made.text
        assert made.json()["comment"] == "<script>x</script>"
        assert made.json()["value_shown"] == "fail" and made.json()["created"].endswith("Z")
        scored = api.post(f"/runs/{run}/labels", json={
            "case_id": "case-000002", "evaluator": "correctness", "agrees": False,
            "value": 0.4, "author": "alice"})
        assert scored.json()["value_shown"] == "0.400"  # as every surface shows a 0-1 score
        listed = api.get(f"/runs/{run}/labels", params={"case_id": "case-000001"}).json()
        assert [x["id"] for x in listed] == [made.json()["id"]]
        assert api.get(f"/runs/{run}/agreement").json()[0]["labelled"] == 2
        for bad, status in (({"agrees": "yes"}, 400), ({"author": ""}, 400),
                            ({"evaluator": "nope"}, 404), ({"case_id": "nope"}, 404),
                            ({"extra": 1}, 400), ({"value": 2.0}, 400),
                            # agreeing, yet a value: stored and shown, never counted
                            ({"value": 0.3}, 400), ({"value": False}, 400)):
            body = {"case_id": "case-000001", "evaluator": "correctness", "agrees": True,
                    "author": "bob", **bad}
            answer = api.post(f"/runs/{run}/labels", json=body)
            assert answer.status_code == status, (bad, answer.text)
        assert len(api.get(f"/runs/{run}/labels").json()) == 2
        both = api.post(f"/runs/{run}/labels", json={
            "case_id": "case-000001", "evaluator": "correctness", "agrees": True,
            "value": 0.3, "author": "bob"}).json()
        assert both["code"] == "invalid_label" and "send agrees false" in both["detail"]
        assert api.post("/runs/nope/labels", json={
            "case_id": "c", "evaluator": "e", "agrees": True, "author": "a"}).status_code == 404


async def test_calibrate_reads_a_runs_stored_labels_as_a_file_of_them_would_be_read(
        tmp_path, mock_model, mock_server):
    url = f"sqlite:///{tmp_path}/runs.db"
    run = await evaluate_async([{"id": f"c{i}", "input": f"q{i}", "output": f"answer {i}"}
                                for i in range(8)], evaluators=[GRADED],
                               judge_model=mock_model, store=url)
    store = RunStore(url)
    with pytest.raises(ConfigError, match="no human labels"):
        await calibrate_async(run=run.run_id, store=url, resamples=0)
    wanted = {}
    for i in range(8):
        judged = store.case_records(run.run_id)[i]
        score = judged.scores[0]
        agrees = i % 3 != 0
        labels.add_label(store, run.run_id, judged.case_id, 0, "graded", agrees=agrees,
                         author="alice")
        wanted[judged.case_id] = score.passed if agrees else not score.passed
    asked = mock_server.stats.requests
    stored = await calibrate_async(run=run.run_id, store=url, resamples=50)
    assert mock_server.stats.requests == asked  # no judge was called
    assert stored.counts.scored == 8 and stored.run_id == run.run_id
    file = tmp_path / "labels.csv"
    file.write_text("case_id,label\n" + "".join(
        f"{case},{'pass' if passed else 'fail'}\n" for case, passed in wanted.items()))
    from_file = await calibrate_async(run=run.run_id, labels=file, store=url, resamples=50)
    for name in ("accuracy", "kappa"):
        assert stored.statistics[name].value == from_file.statistics[name].value, name
    assert stored.statistics["accuracy"].value == pytest.approx(5 / 8)


async def test_a_run_whose_judge_reads_the_expected_outcome_calibrates_on_its_labels(
        tmp_path, mock_model, mock_server):
    """docs/how-to/viewer.md: people label a run's judge on its case pages and ``assay
    calibrate --run RUN --evaluator NAME`` measures it against them. A judge whose prompt
    shows ``{{expected_outcome}}`` (examples/suite's ``quality``) was refused, as if its
    items had to be judged again: they are not, its stored scores are compared."""
    url = f"sqlite:///{tmp_path}/runs.db"
    outcome = {"type": "llm_judge", "name": "graded",
               "prompt": "{{candidate_answer}} meets {{expected_outcome}}?"}
    run = await evaluate_async([{"id": f"c{i}", "input": f"q{i}", "output": f"answer {i}",
                                 "expected_outcomes": [f"says {i}"]} for i in range(4)],
                               evaluators=[outcome], judge_model=mock_model, store=url)
    store = RunStore(url)
    for record in store.case_records(run.run_id):
        labels.add_label(store, run.run_id, record.case_id, 0, "graded", agrees=True,
                         author="alice")
    asked = mock_server.stats.requests
    stored = await calibrate_async(run=run.run_id, evaluator="graded", store=url, resamples=0)
    assert mock_server.stats.requests == asked  # no judge was called
    assert stored.counts.scored == 4 and stored.statistics["accuracy"].value == 1.0


@pytest.mark.process
def test_the_command_calibrates_a_run_against_its_labels(tmp_path, mock_model, mock_server):
    import asyncio

    url = f"sqlite:///{tmp_path}/runs.db"
    run = asyncio.run(evaluate_async([{"id": f"c{i}", "input": f"q{i}", "output": f"a {i}"}
                                      for i in range(6)], evaluators=[GRADED],
                                     judge_model=mock_model, store=url))
    store = RunStore(url)
    for i in range(6):
        labels.add_label(store, run.run_id, f"c{i}", 0, "graded", agrees=True, author="a")
    done = run_assay(["calibrate", "--run", run.run_id, "--store", url, "--json",
                      "--resamples", "0"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["scored"] == 6
    assert report["statistics"]["accuracy"]["value"] == 1.0
