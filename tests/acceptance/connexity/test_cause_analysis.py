"""AI cause analysis (Connexity's row C37): with ``--cause-analysis``, one more judge call per
failed case reads its transcript, scores and outcomes, and says which turn and behaviour caused
the failure and a fix to try; it is kept with the case, shown on its page, off by default, and
its cost counts with the judge's."""

from __future__ import annotations

import json

from assay.report.views import bounded_case, case_detail
from assay.store.runs import RunStore
from tests.acceptance.connexity.harness import HERE, cli, has, run, summary

SCORING = HERE / "scoring.yaml"
ASKED = "How the evaluators scored this case"
"""A heading only the analysis prompt has: the stub's key for the analysis call."""
ANSWER = {"turn": 1, "behaviour": "The agent said the order shipped but offered no refund.",
          "cause": "Expected outcome 2 (the agent offers a refund) failed.",
          "suggested_fix": "Tell the agent in its prompt to offer a refund for late orders.",
          "confidence": "high"}


def test_a_failed_case_is_analysed_and_kept_with_its_case(stub, store):
    stub.table[ASKED] = ANSWER
    _code, out, run_id = run(store, SCORING, "--filter", "C0[17]", "--cause-analysis")
    records = {r.case_id: r for r in RunStore(store).case_records(run_id)}
    failed, passed = records["C07"], records["C01"]
    assert failed.verdict.value == "fail" and passed.verdict.value == "pass"
    analysis = failed.cause_analysis
    assert analysis is not None and analysis.error is None
    assert (analysis.turn, analysis.turn_role) == (1, "assistant")
    assert analysis.behaviour == ANSWER["behaviour"] and analysis.confidence == "high"
    assert analysis.suggested_fix == ANSWER["suggested_fix"]
    assert analysis.usage.calls == 1 and analysis.usage.prompt_tokens == 10
    assert passed.cause_analysis is None  # only failed cases are analysed
    # one call, reading the transcript, the scores and the outcome that failed
    assert stub.calls[ASKED] == 1
    prompt = next(p for p in stub.prompts if ASKED in p)
    assert "Turn 0 [user]: ⟦C07⟧ Where is order A-17?" in prompt
    assert "outcome 2 FAILED: The agent offers a refund" in prompt
    # its cost counts with the judge's, and the run says what it cost
    figures = summary(store, run_id)
    assert figures["cause_analyses"] == 1 and figures["cause_analysis_usage"]["calls"] == 1
    assert figures["usage"]["calls"] == 3  # two judgements and one analysis
    assert has(out, "of which cause analysis of 1 failed case(s): 1 call(s) (+0 cached); "
                    "cost unknown")  # the stub reports no cost: unknown, as every cost is shown
    # the case page carries it (the viewer's "Why it failed" panel reads it)
    page = bounded_case(case_detail(failed))
    assert page["record"]["cause_analysis"]["suggested_fix"] == ANSWER["suggested_fix"]
    assert page["display"]["cause_cost"] == "unknown"  # an analysis was made, its price unknown


def test_cause_analysis_is_off_by_default(stub, store):
    stub.table[ASKED] = ANSWER
    _code, _out, run_id = run(store, SCORING, "--filter", "C07")
    (record,) = RunStore(store).case_records(run_id)
    assert record.verdict.value == "fail" and record.cause_analysis is None
    assert stub.calls[ASKED] == 0 and summary(store, run_id)["cause_analyses"] == 0


def test_a_turn_that_is_not_in_the_transcript_is_re_asked_then_kept_as_an_error(stub, store):
    stub.table[ASKED] = {**ANSWER, "turn": 7}  # the transcript has turns 0 and 1
    _code, _out, run_id = run(store, SCORING, "--filter", "C07", "--cause-analysis")
    (record,) = RunStore(store).case_records(run_id)
    analysis = record.cause_analysis
    assert analysis is not None and analysis.error is not None
    assert analysis.error.code == "judge_output_invalid" and analysis.turn is None
    assert stub.calls[ASKED] == 3  # the ask and two re-asks
    assert record.verdict.value == "fail"  # advice only: the verdict is the judge's


def test_a_regression_is_analysed_against_the_baseline_and_kept(stub, store):
    stub.table[ASKED] = ANSWER
    base = run(store, HERE / "compare_base.yaml")[2]
    cand = run(store, HERE / "compare_cand.yaml")[2]
    code, out = cli("compare", base, cand, "--store", store, "--json", "--cause-analysis")
    result = json.loads(out)
    assert code == 1, out
    cases = {c["test_case_id"]: c for c in result["test_case_comparisons"]}
    regressed = sorted(k for k, c in cases.items() if c["status"] == "regression")
    assert regressed == ["A", "B"]  # C-16: A by score, B by a pass flip
    assert all((cases[k]["cause_analysis"] is not None) == (k in regressed) for k in cases)
    assert cases["B"]["cause_analysis"]["compared_with"] == base
    assert stub.calls[ASKED] == 2  # one call per regressed case
    prompt = [p for p in stub.prompts if ASKED in p][-1]
    assert "## The same case in the baseline run, where it did better" in prompt
    # kept with the candidate's case, for its page
    stored = {r.case_id: r for r in RunStore(store).case_records(cand)}
    kept = stored["B"].cause_analysis
    assert kept is not None and kept.suggested_fix == ANSWER["suggested_fix"]
    assert kept.compared_with == base and stored["C"].cause_analysis is None
    text_code, text = cli("compare", base, cand, "--store", store, "--cause-analysis")
    assert text_code == 1 and has(text, "why B regressed: turn 1:", "[cost $0.0000]")  # cached
