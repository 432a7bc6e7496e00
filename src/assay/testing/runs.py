"""Stored runs made to order, for tests, benchmarks and screenshots of the server and reports.

Runs are written through :class:`~assay.store.runs.RunStore` exactly as the runner writes them
(an execution, its scores and the case record per case, then the summary), so what the server
and the reports read back is what a real run leaves. Case contents are deterministic functions
of the case index; a few cases carry hostile text (markup, script, control characters) on
purpose.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from assay.run.policies.default import count_gate_failures
from assay.store.runs import RunStore
from assay.types.case import Case
from assay.types.config import RecordedRunConfig, RunConfig
from assay.types.execution import Execution, RetrievedDocument
from assay.types.messages import FunctionCall, Message, ToolCall
from assay.types.records import (
    CaseRecord,
    EvaluatorSpec,
    RunSnapshot,
    RunStatus,
    SummaryBuilder,
    Verdict,
)
from assay.types.score import Score
from assay.types.usage import Usage
from assay.types.verdict import band

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"
"""Agent output that must show as text wherever it is displayed, and never run."""

EVALUATORS = ("correctness", "relevance", "tool_order")


def _verdict(score: float | None) -> Verdict:
    return band(score)


def make_case(i: int, quality: float, rng: random.Random,
              hostile_at: Iterable[int] = ()) -> CaseRecord:
    """Case ``i`` of a run whose agent is about ``quality`` good."""
    case_id = f"case-{i:06d}"
    hostile = i in set(hostile_at)
    question = f"What is {i} + {i}? Show the tool you used."
    output: Any = HOSTILE if hostile else (
        {"answer": 2 * i, "steps": ["parse", "add"], "note": "summed"} if i % 3 == 0
        else f"The answer is {2 * i}.")
    messages = [
        Message(role="user", content=question),
        Message(role="assistant", content=None, tool_calls=[ToolCall(
            id=f"call_{i}", function=FunctionCall(name="calculator",
                                                  arguments=f'{{"a": {i}, "b": {i}}}'))]),
        Message(role="tool", tool_call_id=f"call_{i}", content=str(2 * i)),
        Message(role="assistant", content=output if isinstance(output, str) else str(output)),
    ]
    target_error = i % 97 == 13
    execution = Execution(
        input=question, output=None if target_error else output, messages=messages,
        retrieved_context=[RetrievedDocument(content=f"Addition of {i} and {i}.",
                                             doc_uri=f"docs://math/{i}")],
        latency_ms=100.0 + (i * 37) % 900,
        error="agent timed out after 30s" if target_error else None)
    scores: list[Score] = []
    for k, name in enumerate(EVALUATORS):
        if target_error:
            scores.append(Score.failed(name, "target_failed", "the agent produced no output"))
            continue
        if (i + k) % 53 == 7:
            scores.append(Score.failed(name, "judge_output_invalid",
                                       "the judge answered <<invalid>> three times",
                                       details={"raw_output": "<<invalid>>"}))
            continue
        if name == "tool_order" and i % 11 == 5:
            scores.append(Score.not_applicable(name, "the case expects no tool calls"))
            continue
        value = max(0.0, min(1.0, rng.gauss(quality, 0.2)))
        scores.append(Score(
            name=name, value=round(value, 3), raw=round(value * 100), scale="0-100",
            passed=value >= 0.8,
            rationale=(HOSTILE if hostile else f"The answer {'matches' if value >= 0.8 else 'misses'} the expected sum."),
            hits=["states the sum"] if value >= 0.5 else [],
            misses=[] if value >= 0.8 else ["no working shown"],
            details={"judge_request": [{"role": "system", "content": "You grade answers."},
                                       {"role": "user", "content": question}],
                     "judge_answer": f'{{"score": {round(value * 100)}}}',
                     **({"blamed_turns": [3]} if value < 0.6 else {}),
                     **({"chunk_ratings": [{"index": 0, "relevant": value >= 0.5,
                                            "reason": "mentions the operands"}]}
                        if name == "relevance" else {})},
            usage=Usage(calls=1, prompt_tokens=120, completion_tokens=30, cost=0.0001),
            latency_ms=250.0, judge_model="openai:gpt-4o-mini"))
    values = [s.value for s in scores if s.value is not None]
    score = sum(values) / len(values) if values else None
    return CaseRecord(
        case_id=case_id, case=Case(id=case_id, input=question, expected_output=str(2 * i),
                                   metadata={"topic": "addition"}),
        target="calculator-agent", execution=execution, scores=scores, score=score,
        verdict=_verdict(score))


def write_run(store: RunStore, cases: int, *, suite: str = "math", quality: float = 0.8,
              status: RunStatus = RunStatus.COMPLETED, seed: int = 0,
              hostile_at: Iterable[int] = (), target: str = "calculator-agent",
              created_at: float | None = None, judge_model: str = "openai:gpt-4o-mini",
              prompt: str = "You are a careful calculator.") -> str:
    """Write a run of ``cases`` cases and return its id."""
    rng = random.Random(seed)
    hostile = set(hostile_at)
    snapshot = RunSnapshot(
        suite_name=suite, suite_path=f"suites/{suite}/EVAL.yaml", target=target,
        judge_models=[judge_model],
        evaluators=[EvaluatorSpec(name=n, type="llm_judge" if n != "tool_order" else
                                  "tool_order") for n in EVALUATORS],
        targets={target: {"provider": "python", "prompt": prompt}},
        run=RecordedRunConfig(judge_model=judge_model, concurrency=8), assay_version="test")
    run_id = store.create_run(suite, snapshot.model_dump(mode="json"),
                              run_id=f"run-{suite}-{seed}-{rng.getrandbits(24):06x}")
    builder = SummaryBuilder()
    for i in range(cases):
        record = make_case(i, quality, rng, hostile)
        record.run_id = run_id
        store.record_execution(run_id, record.case_id, 0, record.execution)
        for s in record.scores:
            store.record_score(run_id, record.case_id, 0, s)
        store.record_case(record)
        builder.add(record)
    store.flush()
    summary = builder.build()
    # the default gates' own rule and words, as a real run states them
    summary.gate_failures = count_gate_failures(summary, RunConfig())
    summary.passed = not summary.gate_failures and summary.scored > 0
    store.set_status(run_id, status.value,
                     summary.model_dump(mode="json") if status is not RunStatus.RUNNING
                     else None)
    if created_at is not None:
        from sqlalchemy import update

        from assay.store import schema

        with store.transaction() as conn:
            conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(
                created_at=created_at, finished_at=created_at + 60))
    return run_id


def store_case(store: RunStore, record: CaseRecord) -> None:
    """Queue ``record`` with its execution and scores, as a run stores a finished case."""
    store.record_execution(record.run_id, record.case_id, record.repeat, record.execution)
    for s in record.scores:
        store.record_score(record.run_id, record.case_id, record.repeat, s)
    store.record_case(record)


def write_connexity_run(store: RunStore, run_id: str = "run-connexity") -> str:
    """A run of one conversation judged by Connexity's multi-metric judge on all of its
    metrics, with two expected outcomes (one met), under the connexity policy's two
    dimensions: the score the judge's own code builds from a validated answer."""
    from assay.judges.llm.connexity import ConnexityJudge, answer_model

    judge = ConnexityJudge(name="conversation")
    selected = judge.selected()
    metrics = tuple((m.name, m.definition.score_type == "binary") for m in selected)
    answers: dict[str, Any] = {}
    for k, (name, binary) in enumerate(metrics):
        low = k % 3 == 0
        answer: dict[str, Any] = {"justification": f"{name}: " + (
            "booked the wrong day" if low else "fine"), "failure_code": "wrong_day" if low
            else None, "turns": [1] if low else []}
        answer.update({"passed": not low} if binary else {"score": 1 if low else 4})
        answers[name] = answer
    answers["expected_outcomes"] = [
        {"index": 1, "passed": True, "justification": "a table was offered"},
        {"index": 2, "passed": False, "justification": "it was for today, not tomorrow"}]
    turns = [Message(role="user", content="Book a table for two tomorrow."),
             Message(role="assistant", content="Booked for today at 7pm."),
             Message(role="user", content="I said tomorrow."),
             Message(role="assistant", content="Done, you are booked.")]
    case = Case.model_validate({"id": "conv-1", "input": [turns[0].model_dump(mode="json")]})
    case = case.model_copy(update={
        "expected_outcomes": ["The agent offers a table", "The booking is for tomorrow"]})
    score = judge.judgement(case, selected, answer_model(metrics, 2).model_validate(answers),
                            len(turns))
    snapshot = RunSnapshot(suite_name="bookings", evaluators=[EvaluatorSpec(
        name="conversation", type="connexity_judge")],
        run=RecordedRunConfig(scoring="connexity"))
    run_id = store.create_run("bookings", snapshot.model_dump(mode="json"), run_id=run_id)
    record = CaseRecord(run_id=run_id, case_id=case.id, case=case,
                        execution=Execution(input=case.input, output=turns[-1].content,
                                            messages=turns, latency_ms=160.0),
                        scores=[score], score=score.value, verdict=Verdict.FAIL,
                        overall_score=score.raw if isinstance(score.raw, float) else None)
    store_case(store, record)
    store.flush()
    builder = SummaryBuilder()
    builder.add(record)
    summary = builder.build()
    summary.metrics_pass_threshold, summary.cases_pass_threshold = 80.0, 100.0
    summary.metrics_passed = (summary.weighted_metrics_score_pct or 0) >= 80
    summary.cases_passed = False
    summary.scoring = "connexity"
    store.set_status(run_id, RunStatus.COMPLETED.value, summary.model_dump(mode="json"))
    return run_id


def traced_execution(order: str = "A1") -> Execution:
    """An agent's execution with a trace: the agent's span, an LLM call (tokens, cost,
    model), a tool call of ``lookup_order`` with ``order_id`` = ``order``, and a second LLM
    call; times in seconds since the epoch."""
    start = 1_700_000_000.0
    spans = [
        {"name": "agent", "span_id": "a1", "start_time": start, "end_time": start + 1.2,
         "attributes": {"openinference.span.kind": "AGENT", "input.value": "Where is A1?"}},
        {"name": "plan", "span_id": "b1", "parent_id": "a1", "start_time": start + 0.01,
         "end_time": start + 0.41, "attributes": {
             "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
             "llm.token_count.prompt": 120, "llm.token_count.completion": 30,
             "llm.cost.total": 0.00012, "output.value": "call lookup_order"}},
        {"name": "lookup_order", "span_id": "c1", "parent_id": "a1", "start_time": start + 0.42,
         "end_time": start + 0.62, "attributes": {
             "tool.name": "lookup_order", "input.value": f'{{"order_id": "{order}"}}',
             "output.value": '{"status": "shipped"}'}},
        {"name": "answer", "span_id": "d1", "parent_id": "a1", "start_time": start + 0.63,
         "end_time": start + 1.19, "attributes": {
             "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
             "llm.token_count.prompt": 200, "llm.token_count.completion": 40,
             "llm.cost.total": 0.0002, "output.value": "It shipped."}},
    ]
    return Execution.model_validate({"input": "Where is A1?", "output": "It shipped.",
                                     "trace": spans, "latency_ms": 1200.0})


def write_traced_run(store: RunStore, run_id: str = "run-traced") -> str:
    """A run of two cases whose agent left a trace, scored by the real ``tool_call_args``
    evaluator: one called ``lookup_order`` with the expected order, one with another."""
    from assay.judges.base import EvalContext
    from assay.judges.deterministic.tool_calls import ToolCallArgs
    from assay.run.sync import run_sync

    evaluator = ToolCallArgs.model_validate({"name": "order_lookup", "tool_calls": [
        {"name": "lookup_order", "args": {"order_id": "A1"}}]})
    snapshot = RunSnapshot(suite_name="orders", evaluators=[EvaluatorSpec(
        name="order_lookup", type="tool_call_args")])
    run_id = store.create_run("orders", snapshot.model_dump(mode="json"), run_id=run_id)
    builder = SummaryBuilder()
    for case_id, order in (("right-order", "A1"), ("wrong-order", "B2")):
        case = Case(id=case_id, input="Where is A1?", expected_output="It shipped.",
                    metadata={"trace": {"id": f"trace-{case_id}", "source": "otlp-file",
                                        "spans": 4, "notes": ["the trace has no retriever span"]}})
        execution = traced_execution(order)
        score = run_sync(evaluator.score(case, execution, EvalContext(None)))  # type: ignore[arg-type]
        record = CaseRecord(run_id=run_id, case_id=case_id, case=case, execution=execution,
                            scores=[score], score=score.value, verdict=_verdict(score.value))
        store_case(store, record)
        builder.add(record)
    store.flush()
    store.set_status(run_id, RunStatus.COMPLETED.value, builder.build().model_dump(
        mode="json"))
    return run_id


__all__ = ["EVALUATORS", "HOSTILE", "make_case", "store_case", "traced_execution",
           "write_connexity_run", "write_run", "write_traced_run"]



def write_scored_run(store: RunStore, scoring: str = "default", *, cases: int = 20,
                     passed: int = 17, suite: str = "figures") -> str:
    """A completed run whose figures are known, summarised and gated by the policy named
    ``scoring`` as the runner does it (settled from its suite, folded record by record), and
    return its id.

    ``passed`` of ``cases`` cases pass with a judge score of 0.9 (an overall 90 of 100 under
    Connexity's policy), the others score 0.6 (60: borderline under the default bands, failed
    under Connexity's); case ``i`` took ``100 + 10 i`` ms and its judge call cost $0.0001.
    Twenty cases with 17 passing read: pass rate 85.0%, mean score 0.855 (``85.5 /100`` under
    Connexity's), latency p50 195 ms, p95 290 ms, judge cost $0.0020, and under Connexity's
    dimensions metrics 85.5 /100 (threshold 80.0 /100) and cases 85.0% (threshold 100.0%).
    """
    from assay.run.policies import settle
    from assay.suites.model import Suite
    from assay.types.config import RunConfig

    settled, config, policy = settle(Suite(name=suite, scoring=scoring), RunConfig())
    fold = policy.fold(settled)
    native = scoring == "connexity"
    snapshot = RunSnapshot(suite_name=suite, judge_models=["openai:gpt-4o-mini"],
                           evaluators=[EvaluatorSpec(name="judge", type="llm_judge")],
                           run=RecordedRunConfig.model_validate(config.model_dump()),
                           assay_version="test")
    run_id = store.create_run(suite, snapshot.model_dump(mode="json"))
    builder = SummaryBuilder()
    for i in range(cases):
        good = i < passed
        value = 0.9 if good else 0.6
        verdict = (Verdict.PASS if good else Verdict.FAIL) if native else band(value)
        score = Score(name="judge", value=value, raw=round(value * 100), scale="0-100",
                      passed=good, usage=Usage(calls=1, prompt_tokens=100, completion_tokens=20,
                                               cost=0.0001), judge_model="openai:gpt-4o-mini")
        case_id = f"case-{i:03d}"
        record = CaseRecord(run_id=run_id, case_id=case_id, case=Case(id=case_id, input="q"),
                            execution=Execution(output="a", latency_ms=100.0 + 10 * i),
                            scores=[score], score=value, verdict=verdict,
                            overall_score=round(value * 100, 2) if native else None)
        store.record_execution(run_id, case_id, 0, record.execution)
        store.record_score(run_id, case_id, 0, score)
        store.record_case(record)
        builder.add(record)
        fold.add(record)
    store.flush()
    summary = builder.build()
    fold.finish(summary, [])
    store.set_status(run_id, RunStatus.COMPLETED.value, summary.model_dump(mode="json"))
    return run_id
