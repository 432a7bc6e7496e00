"""``assay.resume`` of a run made by ``assay.evaluate``, and the store every entry point keeps
its runs in by default.

A resume finishes a run as it was made: the evaluators it recorded are rebuilt, a Python
function (a target, a scorer), which no store can hold, is asked for by name rather than
silently dropped, and a completed run is never rewritten. ``evaluate``, ``rescore``,
``resume``, ``compare`` and ``assay runs`` share one default store on disk; a run kept in
memory says so when only its id reaches a function that reads a store."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import assay
from assay.errors import ConfigError
from assay.store.errors import StoreError
from assay.store.runs import RunStore
from assay.types.config import Gates
from assay.types.records import RunStatus
from tests.assay_process import run_assay
from tests.test_evaluate import ANSWERS, ROWS, agent

OPEN = Gates(max_failed=None)


def stopped_after_one(store: Path, data: list[dict[str, str]] = ROWS, **options: object) -> str:
    """A run of ``data`` (ROWS) by a Python function that is stopped (as Ctrl-C stops it)
    during its second case: the id of the interrupted run."""
    calls: list[str] = []

    async def stopping(question: str) -> str:
        if calls:
            raise asyncio.CancelledError  # what Ctrl-C does to the run's task
        calls.append(question)
        return ANSWERS[question]

    with pytest.raises((asyncio.CancelledError, KeyboardInterrupt)):
        assay.evaluate(data, target=stopping, store=store, concurrency=1,
                       **{"gates": OPEN, **options})  # type: ignore[arg-type]
    (run,) = RunStore(f"sqlite:///{store}").run_records()
    assert run.status is RunStatus.INTERRUPTED
    return run.id


def test_resuming_a_completed_evaluate_run_with_its_rows_rewrites_nothing(tmp_path):
    store = tmp_path / "runs.db"
    done = assay.evaluate(ROWS, target=agent, evaluators=["exact_match"], store=store,
                          gates=OPEN)
    assert done.summary.scored == 3 and not done.summary.gate_failures
    stored = RunStore(f"sqlite:///{store}").run_record(done.run_id)
    again = assay.resume(done.run_id, data=ROWS, store=store)
    assert again.summary == done.summary
    assert "no case could be scored" not in again.summary.gate_failures
    assert RunStore(f"sqlite:///{store}").run_record(done.run_id) == stored  # not even finished_at
    assert [r.score for r in again.records] == [r.score for r in done.records]


def test_a_resume_of_rows_asks_for_the_data_and_the_function_at_once(tmp_path):
    """A run made from rows by a function was told 'give it again, assay.resume(ID,
    target=agent)'; that call then met 'has no suite path; give the suite': the one error
    names both, and the call it shows is the one that works."""
    store = tmp_path / "runs.db"
    run_id = stopped_after_one(store, evaluators=["exact_match"])
    whole = f"assay.resume({run_id!r}, data=rows, target=stopping)"
    for given, code, missing in [({}, "missing_target", "its data (rows or a DataFrame, not "
                                  "a suite file) and the Python function 'stopping'"),
                                 ({"target": agent}, "missing_suite", "its data"),
                                 ({"data": ROWS}, "missing_target", "Python function")]:
        with pytest.raises(ConfigError) as refused:
            assay.resume(run_id, store=store, **given)
        assert refused.value.code == code and missing in refused.value.message
        assert refused.value.message.endswith(whole), refused.value.message
    resumed = assay.resume(run_id, store=store, data=ROWS, target=agent)
    assert resumed.run.status is RunStatus.COMPLETED


def test_a_resumed_evaluate_run_keeps_its_evaluators_and_asks_for_its_function(tmp_path):
    store = tmp_path / "runs.db"
    run_id = stopped_after_one(store, evaluators=["exact_match"])
    before = RunStore(f"sqlite:///{store}").run_record(run_id)
    with pytest.raises(ConfigError, match=r"Python function 'stopping'.*target=stopping") as e:
        assay.resume(run_id, data=ROWS, store=store)
    assert e.value.code == "missing_target"
    assert RunStore(f"sqlite:///{store}").run_record(run_id) == before  # a refusal changes nothing
    resumed = assay.resume(run_id, data=ROWS, store=store, target=agent)
    assert resumed.run.status is RunStatus.COMPLETED
    s = resumed.summary
    assert s.cases == 3 and s.scored == 3 and list(s.evaluators) == ["exact_match"]
    assert "no case could be scored" not in s.gate_failures
    scores = {r.case_id: r.score_named("exact_match").value for r in resumed.records}
    assert scores == {"fr": 1.0, "es": 0.0, "de": 1.0}


def test_a_scorer_function_is_asked_for_by_name_and_the_others_are_rebuilt(tmp_path):
    @assay.scorer
    def short(outputs: str) -> bool:
        return len(outputs) < 8

    store = tmp_path / "runs.db"
    run_id = stopped_after_one(store, evaluators=[short, "exact_match"])
    with pytest.raises(ConfigError, match=r"'short'.*evaluators=\[") as e:
        assay.resume(run_id, data=ROWS, store=store, target=agent)
    assert "exact_match" not in e.value.message  # that one is rebuilt from the record
    with pytest.raises(ConfigError, match="no evaluator named 'long'"):
        assay.resume(run_id, data=ROWS, store=store, target=agent,
                     evaluators=[assay.scorer(name="long")(lambda outputs: True)])
    resumed = assay.resume(run_id, data=ROWS, store=store, target=agent, evaluators=[short])
    assert list(resumed.summary.evaluators) == ["short", "exact_match"]
    assert all(len(r.scores) == 2 and r.score is not None for r in resumed.records)


def test_evaluate_rescore_resume_and_compare_share_the_default_store(mock_server):
    first = assay.evaluate(ROWS, target=agent, evaluators=["exact_match"], gates=OPEN)
    rescored = assay.rescore(first.run_id, gates=OPEN)  # by id alone, as `assay rescore` does
    assert not first.in_memory and first.store is not None
    assert rescored.run.config.model_extra["rescored_from"] == first.run_id
    assert assay.resume(first.run_id).summary == first.summary
    comparison = assay.compare(first.run_id, rescored.run_id)
    assert comparison.baseline_run_id == first.run_id
    assert {r.id for r in RunStore(first.store.url).run_records()} >= {first.run_id,
                                                                       rescored.run_id}


def test_a_run_kept_in_memory_says_so_when_only_its_id_is_given(mock_server):
    kept = assay.evaluate(ROWS, target=agent, evaluators=["exact_match"], store=":memory:",
                          gates=OPEN)
    assert kept.in_memory and "in_memory=True" in repr(kept)
    for call in (lambda: assay.rescore(kept.run_id),
                 lambda: assay.resume(kept.run_id),
                 lambda: assay.compare(kept.run_id, kept.run_id)):
        with pytest.raises(StoreError, match=r"was kept in memory \(store=':memory:'\).*"
                                             r"pass its result"):
            call()
    again = assay.rescore(kept, gates=OPEN)  # its result leads to its store
    assert again.in_memory and again.store is kept.store
    assert assay.compare(kept, again).candidate_run_id == again.run_id


def test_two_runs_kept_in_memory_compare_by_their_results(mock_server, tmp_path):
    """Each run kept in memory has a store of its own, so no ``store=`` holds both: passing
    the results, as the guide says, compares them (it said "the runs given are in different
    stores: give store="), and so does a run in memory with one on disk."""
    before = assay.evaluate(ROWS, target=agent, evaluators=["exact_match"], store=":memory:",
                            gates=OPEN)
    after = assay.evaluate(ROWS, target=lambda q: "wrong", evaluators=["exact_match"],
                           store=":memory:", gates=OPEN)
    assert before.store is not after.store
    comparison = assay.compare(before, after)
    assert (comparison.baseline_run_id, comparison.candidate_run_id) == (before.run_id,
                                                                         after.run_id)
    assert comparison.verdict.regression_detected
    on_disk = assay.evaluate(ROWS, target=agent, evaluators=["exact_match"], gates=OPEN,
                             store=f"sqlite:///{tmp_path}/runs.db")
    assert assay.compare(before, on_disk).aggregate.total_regressions == 0


@pytest.mark.process
def test_a_run_made_from_python_is_listed_by_assay_runs(tmp_path):
    """No store given: the run lands in ``.assay/runs.db`` under the working directory, where
    the commands look."""
    script = textwrap.dedent("""
        import assay
        rows = [{"id": "a", "input": "q", "output": "x", "expected_output": "x"}]
        print(assay.evaluate(rows, evaluators=["exact_match"]).run_id)
    """)
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_STORE_URL"}
    made = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    run_id = made.stdout.split()[-1]
    assert (tmp_path / ".assay" / "runs.db").is_file()
    listed = run_assay(["runs"], cwd=tmp_path, env=env, timeout=120)
    assert listed.returncode == 0 and run_id in listed.stdout, listed.stdout + listed.stderr
    rescored = run_assay(["rescore", run_id], cwd=tmp_path, env=env, timeout=120)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr


def test_a_resume_counts_the_finished_case_the_suite_no_longer_has(tmp_path):
    """A case stored before the suite dropped it is a finished result the resume keeps: the
    run's figures and gate count it, as the rows ``assay show`` lists do."""
    store = tmp_path / "runs.db"
    failing_first = [ROWS[1], ROWS[0], ROWS[2]]  # 'es' is stored (failed), then the stop
    run_id = stopped_after_one(store, failing_first, evaluators=["exact_match"], gates=Gates())
    resumed = assay.resume(run_id, data=[ROWS[0], ROWS[2]], store=store, target=agent)
    stored = RunStore(f"sqlite:///{store}").case_records(run_id)
    assert sorted(r.case_id for r in stored) == ["de", "es", "fr"]
    s = resumed.summary
    assert s.cases == len(stored) == 3 and s.verdicts.get("fail") == 1
    assert s.passed is False and s.gate_failures
    assert sorted(r.case_id for r in resumed.records) == ["de", "es", "fr"]
