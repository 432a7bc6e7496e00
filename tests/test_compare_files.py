"""``assay compare`` on two results JSONL files (AgentV's rows or assay's), by the one engine
(the default policy), with AgentV's exit rule (mean delta < 0) beside assay's (the
comparison's exit code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.analysis.compare import CompareOptions, IncomparableRuns
from assay.analysis.compare_files import agentv_summary, compare_files, fails
from assay.errors import ConfigError
from tests.test_cli_run import assay


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# AgentV rows (no verdict, no repeat): baseline then candidate.
BEFORE = [{"eval_id": "a", "score": 0.85}, {"eval_id": "b", "score": 0.5},
          {"eval_id": "c", "score": 0.85}, {"eval_id": "d", "score": 0.4},
          {"eval_id": "only-before", "score": 1.0}]
AFTER = [{"eval_id": "a", "score": 1.0}, {"eval_id": "b", "score": 0.8},
         {"eval_id": "c", "score": 0.7}, {"eval_id": "d", "score": 0.4, "error": "timeout"}]


def test_files_compare_case_by_case(tmp_path):
    a, b = write(tmp_path / "a.jsonl", BEFORE), write(tmp_path / "b.jsonl", AFTER)
    with pytest.raises(IncomparableRuns, match="only in the baseline: 'only-before'"):
        compare_files(a, b)  # different cases: refused unless allowed, as for stored runs
    result = compare_files(a, b, CompareOptions(allow_different_cases=True))
    statuses = {c.test_case_id: c.status for c in result.test_case_comparisons}
    # a +15 points (pass kept); b fail -> pass; c pass -> borderline (not a pass); d errored
    assert statuses == {"a": "improvement", "b": "improvement", "c": "regression",
                        "d": "error"}
    assert result.baseline_only_test_cases == ["only-before"]
    summary = agentv_summary(result)
    # AgentV's own arithmetic: d counts at its written score (0.4 -> 0.4, a tie), so the mean
    # is (0.15 + 0.3 - 0.15 + 0) / 4 = 0.075 -> 0.075; total is both files' rows, 5 + 4.
    assert summary == {"total": 9, "matched": 4, "wins": 2, "losses": 1, "ties": 1,
                       "errors": 0, "meanDelta": 0.075,
                       "unmatched": {"baseline": 1, "candidate": 0}}
    # the pass rate fell from 3 of 5 to 2 of 4: a regression, though the mean rose.
    assert result.verdict.reasons == ["pass rate dropped 10.0 pt (60.0% → 50.0%)"]
    assert fails(result, "assay") and not fails(result, "agentv")


def test_agentv_rule_fails_on_a_negative_mean(tmp_path):
    before = [{"eval_id": "a", "score": 0.95}, {"eval_id": "b", "score": 0.5}]
    after = [{"eval_id": "a", "score": 0.9}, {"eval_id": "b", "score": 0.45}]
    result = compare_files(write(tmp_path / "a.jsonl", before), write(tmp_path / "b.jsonl",
                                                                      after))
    # 5-point drops: unchanged cases, and an average drop of exactly 5 points is not > 5
    assert {c.status for c in result.test_case_comparisons} == {"unchanged"}
    assert not fails(result, "assay") and fails(result, "agentv")


def test_compare_command_on_files(tmp_path):
    write(tmp_path / "base.jsonl", BEFORE)
    write(tmp_path / "cand.jsonl", AFTER)
    refused = assay(tmp_path, "compare", "base.jsonl", "cand.jsonl")
    assert refused.returncode == 2 and "--allow-different-cases" in refused.stderr
    default = assay(tmp_path, "compare", "base.jsonl", "cand.jsonl", "--allow-different-cases")
    assert default.returncode == 1 and "regression detected" in default.stdout
    agentv = assay(tmp_path, "compare", "base.jsonl", "cand.jsonl", "--exit-rule", "agentv",
                   "--json", "--allow-different-cases")
    assert agentv.returncode == 0, agentv.stderr
    printed = json.loads(agentv.stdout)
    assert printed["agentv"]["meanDelta"] == 0.075
    # the JSON's exit code is the one the process gave, under the rule it was given (it
    # said 1, assay's rule, beside an exit 0); assay's own verdict is still in the JSON
    assert (printed["exit_rule"], printed["exit_code"]) == ("agentv", 0)
    assert printed["verdict"]["regression_detected"] is True
    table = assay(tmp_path, "compare", "base.jsonl", "cand.jsonl", "--exit-rule", "agentv",
                  "--allow-different-cases", env={"COLUMNS": "200"})
    assert table.returncode == 0, table.stderr
    assert "AgentV's mean delta (errored rows at their written score): +0.075" in table.stdout
    # The last line is the verdict the exit code gives: c regressed, yet AgentV's rule
    # passes the comparison, so the line must not call it a regression.
    verdict = table.stdout.strip().splitlines()[-1]
    assert verdict == "no regression by AgentV's rule (mean delta +0.075 is not negative)", \
        table.stdout
    assert default.stdout.strip().splitlines()[-1].startswith("regression detected: ")
    bad = assay(tmp_path, "compare", "base.jsonl", "cand.jsonl", "--exit-rule", "strict")
    assert bad.returncode == 2 and "expected assay or agentv" in bad.stderr


def test_agentv_rule_counts_an_errored_row_at_its_written_score(tmp_path):
    # AgentV writes an errored case as score 0: the drop from 0.9 makes its mean negative,
    # while assay's mean leaves the error out (b: +0.05).
    before = [{"eval_id": "a", "score": 0.9}, {"eval_id": "b", "score": 0.5}]
    after = [{"eval_id": "a", "score": 0, "error": "agent timed out"},
             {"eval_id": "b", "score": 0.55}]
    result = compare_files(write(tmp_path / "a.jsonl", before), write(tmp_path / "b.jsonl",
                                                                      after))
    assert agentv_summary(result)["meanDelta"] == round((-0.9 + 0.05) / 2, 3) == -0.425
    assert fails(result, "agentv")
    # an errored row without a score (as assay writes one) is left out of both
    write(tmp_path / "c.jsonl", [{"eval_id": "a", "error": "timeout"},
                                 {"eval_id": "b", "score": 0.55}])
    result = compare_files(tmp_path / "a.jsonl", tmp_path / "c.jsonl")
    assert agentv_summary(result)["meanDelta"] == 0.05 and not fails(result, "agentv")
    assert agentv_summary(result)["errors"] == 1


@pytest.mark.parametrize("line, message", [
    ("{not json", "base.jsonl:2:2: invalid JSON"),
    ('[1, 2]', "base.jsonl:2: a result row is a JSON object"),
    ('{"score": 1}', "base.jsonl:2: the row has no eval_id"),
    ('{"eval_id": "x", "score": 7}', "base.jsonl:2: score 7 is not a number from 0 to 1"),
    ('{"eval_id": "x", "score": true}', "score True is not a number"),
    ('{"eval_id": "a", "score": 1}', "base.jsonl:2: case 'a' (repeat 0) is also at line 1"),
])
def test_bad_rows_are_located(tmp_path, line, message):
    path = tmp_path / "base.jsonl"
    path.write_text(json.dumps({"eval_id": "a", "score": 0.5}) + "\n" + line + "\n")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare_files(path, path)


def test_assay_rows_compare_with_their_own_verdicts(tmp_path):
    before = [{"eval_id": "x", "repeat": 0, "score": 0.79, "verdict": "borderline"}]
    after = [{"eval_id": "x", "repeat": 0, "score": 0.81, "verdict": "pass"}]
    result = compare_files(write(tmp_path / "a.jsonl", before), write(tmp_path / "b.jsonl",
                                                                      after))
    case = result.test_case_comparisons[0]
    assert case.status == "improvement" and case.candidate_passed and not case.baseline_passed
