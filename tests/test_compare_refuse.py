"""Comparisons that would mislead are refused: a run that did not complete, runs whose cases
differ, runs that share no case."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.analysis.compare import ComparisonRefused, compare_runs
from assay.store.runs import RunStore
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, Verdict
from tests.assay_process import run_assay

ROOT = Path(__file__).resolve().parents[1]


def _run(run_id: str, status: str = "completed") -> dict[str, Any]:
    return {"id": run_id, "status": status}


def _rows(ids: list[str], score: float = 0.9, verdict: str = "pass") -> list[dict[str, Any]]:
    return [{"case_id": c, "repeat": 0, "score": score, "verdict": verdict} for c in ids]


SIXTY = [f"case-{i:02d}" for i in range(60)]


def test_a_candidate_that_stopped_early_is_refused():
    with pytest.raises(ComparisonRefused) as info:
        compare_runs(_run("A"), _run("B", "interrupted"), _rows(SIXTY), _rows(SIXTY[:8]))
    message = info.value.message
    assert "the candidate B is interrupted, not completed (8 case result(s) stored)" in message
    assert "the baseline has 60 case result(s), the candidate 8" in message
    assert "'case-08#0'" in message and "and 47 more" in message
    assert "--allow-incomplete" in message
    assert info.value.code == "incomparable_runs"


@pytest.mark.parametrize("status", ["running", "interrupted", "failed", None])
def test_a_baseline_that_did_not_complete_is_refused(status):
    with pytest.raises(ComparisonRefused, match=f"the baseline A is {status}, not completed"):
        compare_runs(_run("A", status), _run("B"), _rows(SIXTY), _rows(SIXTY))


def test_completed_runs_with_different_cases_are_refused():
    with pytest.raises(ComparisonRefused) as info:
        compare_runs(_run("A"), _run("B"), _rows(["a", "b", "c"]), _rows(["a", "b", "d"]))
    assert "only in the baseline: 'c#0'" in info.value.message
    assert "only in the candidate: 'd#0'" in info.value.message


def test_different_repeats_are_different_cases():
    after = [*_rows(["a"]), {"case_id": "a", "repeat": 1, "score": 0.9, "verdict": "pass"}]
    with pytest.raises(ComparisonRefused, match="only in the candidate: 'a#1'"):
        compare_runs(_run("A"), _run("B"), _rows(["a"]), after)


def test_runs_sharing_no_case_are_refused_even_when_incomplete_is_allowed():
    for allow in (False, True):
        with pytest.raises(ComparisonRefused, match="they share no case"):
            compare_runs(_run("A"), _run("B"), _rows(["a", "b"]), _rows(["x", "y"]),
                         allow_incomplete=allow)
    with pytest.raises(ComparisonRefused, match="they share no case"):
        compare_runs(_run("A"), _run("B"), [], [])


def test_allow_incomplete_compares_the_shared_cases_and_keeps_the_reasons():
    result = compare_runs(_run("A"), _run("B", "interrupted"), _rows(SIXTY),
                          _rows(SIXTY[:8], score=0.5, verdict="fail"), allow_incomplete=True)
    assert len(result.cases) == 8 and result.count("loss") == 8
    assert len(result.only_before) == 52
    assert any("interrupted" in r for r in result.incomplete)
    assert result.as_dict()["incomplete"] == result.incomplete


def test_complete_runs_of_the_same_cases_compare_as_before():
    result = compare_runs(_run("A"), _run("B"), _rows(SIXTY), _rows(SIXTY))
    assert result.incomplete == [] and result.count("tie") == 60 and not result.regressions


def test_hostile_case_ids_are_quoted_in_the_refusal():
    with pytest.raises(ComparisonRefused) as info:
        compare_runs(_run("A"), _run("B"), _rows(["ok", "\x1b]0;pwned\x07"]), _rows(["ok"]))
    assert "\x1b" not in info.value.message and "\\x1b" in info.value.message


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
    assert "cannot compare base with cand" in refused.stderr
    assert "interrupted, not completed" in refused.stderr

    disjoint = _compare(store_url, "base", "other", "--allow-incomplete")
    assert disjoint.returncode == 2 and "share no case" in disjoint.stderr

    allowed = _compare(store_url, "base", "cand", "--allow-incomplete", "--json")
    assert allowed.returncode == 0, allowed.stderr
    data = json.loads(allowed.stdout)
    assert data["matched"] == 8 and len(data["only_in_baseline"]) == 52
    assert data["incomplete"] and "warning" in allowed.stderr
