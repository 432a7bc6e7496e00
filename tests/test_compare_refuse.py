"""Comparisons that would mislead are refused, every difference listed with the option that
allows it: a run that did not complete, runs whose cases differ, runs that share no case."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from assay.analysis.compare import (
    CompareOptions,
    IncomparableRuns,
    RunNotCompleted,
    compare_records,
    compare_stored,
)
from assay.store.runs import RunStore
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, RunRecord, RunStatus, Verdict
from tests.assay_process import run_assay

ROOT = Path(__file__).resolve().parents[1]
SIXTY = [f"case-{i:02d}" for i in range(60)]


def _run(run_id: str, status: str = "completed") -> RunRecord:
    return RunRecord(id=run_id, suite="suite", status=RunStatus(status), created_at=0)


def _records(ids: list[str], score: float = 0.9) -> list[CaseRecord]:
    return [CaseRecord(case_id=c, case=Case(id=c), execution=Execution(), score=score,
                       verdict=Verdict.PASS if score >= 0.8 else Verdict.FAIL) for c in ids]


def test_a_candidate_that_stopped_early_is_refused_with_every_difference():
    with pytest.raises(IncomparableRuns) as info:
        compare_records(_run("A"), _run("B", "interrupted"), _records(SIXTY),
                        _records(SIXTY[:8]))
    message = info.value.message
    assert "the candidate B is interrupted, not completed" in message
    assert "the baseline has 60 case(s), the candidate 8 (8 in both)" in message
    assert "'case-08'" in message and "and 47 more" in message
    assert "--allow-incomplete" in message and "--allow-different-cases" in message
    assert info.value.code == "incomparable_runs"
    assert [d.kind for d in info.value.differences] == ["incomplete", "cases"]


@pytest.mark.parametrize("status", ["running", "interrupted", "failed"])
def test_a_baseline_that_did_not_complete_is_refused(status):
    with pytest.raises(IncomparableRuns, match=f"the baseline A is {status}, not completed"):
        compare_records(_run("A", status), _run("B"), _records(SIXTY), _records(SIXTY))


def test_completed_runs_with_different_cases_are_refused():
    with pytest.raises(IncomparableRuns) as info:
        compare_records(_run("A"), _run("B"), _records(["a", "b", "c"]),
                        _records(["a", "b", "d"]))
    assert "only in the baseline: 'c'" in info.value.message
    assert "only in the candidate: 'd'" in info.value.message


def test_runs_sharing_no_case_are_refused_whatever_is_allowed():
    everything = CompareOptions.allowing_everything()
    with pytest.raises(IncomparableRuns, match="share no case"):
        compare_records(_run("A"), _run("B"), _records(["a", "b"]), _records(["x", "y"]),
                        everything)
    with pytest.raises(IncomparableRuns, match="share no case"):
        compare_records(_run("A"), _run("B"), [], [], everything)


def test_allowed_differences_compare_the_shared_cases_and_are_listed():
    result = compare_records(_run("A"), _run("B", "interrupted"), _records(SIXTY),
                             _records(SIXTY[:8], score=0.5),
                             CompareOptions(allow_incomplete=True, allow_different_cases=True))
    assert len(result.test_case_comparisons) == 8
    assert result.aggregate.total_regressions == 8
    assert len(result.baseline_only_test_cases) == 52
    assert not result.comparable and [d.allowed for d in result.differences] == [True, True]
    assert any("interrupted" in w and "(allowed)" in w for w in result.warnings)


def test_complete_runs_of_the_same_cases_compare_cleanly():
    result = compare_records(_run("A"), _run("B"), _records(SIXTY), _records(SIXTY))
    assert result.comparable and result.differences == []
    assert result.aggregate.total_unchanged == 60 and result.exit_code() == 0


def test_hostile_case_ids_are_quoted_in_the_refusal():
    with pytest.raises(IncomparableRuns) as info:
        compare_records(_run("A"), _run("B"), _records(["ok", "\x1b]0;pwned\x07"]),
                        _records(["ok"]))
    assert "\x1b" not in info.value.message and "\\x1b" in info.value.message


def test_an_unfinished_stored_run_is_refused_first_as_not_completed(store_url):
    store = RunStore(store_url)
    _stored_run(store, "base", SIXTY, "completed")
    _stored_run(store, "cand", SIXTY, "interrupted")
    with pytest.raises(RunNotCompleted, match="Candidate run is not completed"):
        compare_stored(store, "base", "cand")
    store.close()


def test_assay_compare_names_each_option_as_its_keyword_not_the_cli_flag(tmp_path):
    """``assay.compare`` takes ``allow_incomplete=True``; a refusal there named the command
    line's ``--allow-incomplete``, which a Python caller cannot pass."""
    import assay

    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    _stored_run(store, "base", SIXTY, "completed")
    _stored_run(store, "cand", SIXTY, "interrupted")
    _stored_run(store, "fewer", SIXTY[:8], "completed")
    with pytest.raises(RunNotCompleted) as unfinished:
        assay.compare("base", "cand", store=store)
    assert unfinished.value.message.endswith("compare it anyway with allow_incomplete=True")
    with pytest.raises(IncomparableRuns) as refused:
        assay.compare("base", "fewer", store=store)
    assert refused.value.message.endswith("Compare them anyway with "
                                          "allow_different_cases=True"), refused.value.message
    assert "--" not in refused.value.message
    assert assay.compare("base", "fewer", store=store, allow_different_cases=True).comparable \
        is False  # the keyword the message names is the one that works
    store.close()


# -- the command ---------------------------------------------------------------------------


def _stored_run(store: RunStore, run_id: str, ids: list[str], status: str,
                score: float = 0.9) -> None:
    store.create_run("suite", {}, run_id=run_id)
    for case_id in ids:
        store.record_case(CaseRecord(
            run_id=run_id, case_id=case_id, case=Case(id=case_id), execution=Execution(),
            score=score, verdict=Verdict.PASS if score >= 0.8 else Verdict.FAIL))
    store.flush()
    store.set_status(run_id, status)


def _compare(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    return run_assay(["compare", *args, "--store", store_url], env=env, timeout=120)


def test_compare_command_refuses_with_exit_2_and_allows_on_request(store_url):
    store = RunStore(store_url)
    _stored_run(store, "base", SIXTY, "completed")
    _stored_run(store, "cand", SIXTY[:8], "interrupted", score=0.95)
    _stored_run(store, "other", ["elsewhere"], "completed")
    store.close()

    refused = _compare(store_url, "base", "cand")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Candidate run is not completed (status: interrupted)" in refused.stderr

    still = _compare(store_url, "base", "cand", "--allow-incomplete")
    assert still.returncode == 2 and "--allow-different-cases" in still.stderr

    disjoint = _compare(store_url, "base", "other", "--allow-incomplete",
                        "--allow-different-cases")
    assert disjoint.returncode == 2 and "share no case" in disjoint.stderr

    allowed = _compare(store_url, "base", "cand", "--allow-incomplete",
                       "--allow-different-cases", "--json")
    assert allowed.returncode == 0, allowed.stderr
    data = json.loads(allowed.stdout)
    assert len(data["test_case_comparisons"]) == 8
    assert len(data["baseline_only_test_cases"]) == 52
    assert [d["kind"] for d in data["differences"]] == ["incomplete", "cases"]


def test_changed_evaluators_are_named_briefly_never_as_whole_settings():
    """Evaluators added, removed or changed are named with what changed: a long prompt is
    said to have changed, not printed, and no setting reads as a Python repr."""
    from assay.types.records import EvaluatorSpec, RunSnapshot

    prompt = "Grade the answer. " * 40

    def run(run_id: str, *specs: EvaluatorSpec) -> RunRecord:
        return RunRecord(id=run_id, suite="suite", status=RunStatus.COMPLETED, created_at=0,
                         config=RunSnapshot(evaluators=list(specs)))

    before = run("A", EvaluatorSpec(name="quality", type="llm_judge",
                                    params={"prompt": prompt, "threshold": 0.8}),
                 EvaluatorSpec(name="city", type="contains", params={"search_text": "Paris"}))
    after = run("B", EvaluatorSpec(name="quality", type="llm_judge",
                                   params={"prompt": prompt + "Be strict.", "threshold": 0.7}),
                EvaluatorSpec(name="exact", type="exact_match"))
    with pytest.raises(IncomparableRuns) as info:
        compare_records(before, after, _records(SIXTY), _records(SIXTY))
    message = info.value.message
    assert "evaluators.quality: prompt (changed), threshold: 0.8 → 0.7" in message, message
    assert "evaluators.city removed (contains)" in message, message
    assert "evaluators.exact added (exact_match)" in message, message
    assert "Grade the answer" not in message and "{'" not in message, message
    assert len(message) < 600, message


def test_a_run_compared_with_itself_is_warned_about_not_refused():
    records = _records(SIXTY)
    same = compare_records(_run("run-a"), _run("run-a"), records, records)
    assert same.exit_code() == 0
    assert any("same run (run-a)" in w for w in same.warnings)
    other = compare_records(_run("run-a"), _run("run-b"), records, records)
    assert not any("same run" in w for w in other.warnings)
