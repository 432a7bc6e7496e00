"""The per-case result row in AgentV's JSONL shape (snake_case), rendered from a CaseRecord.

This is what ``assay run --output results.jsonl`` writes and ``assay show --json`` prints: one
self-contained JSON object per (case, repeat), with assay's own fields (raw values, scales,
error codes, skips, usage) beside AgentV's: ``conversation_id`` (when the case has one),
``trace_summary``, ``error`` (when the agent failed), the request the agent's provider was
sent (``lm_provider_request`` for a chat model, ``agent_provider_request`` for a command or
coding agent) and, per evaluator, ``evaluator_provider_request`` (what its judge was asked).

Each evaluator's ``verdict`` is AgentV's band (pass at its threshold, 0.8 by default;
borderline from 0.6; else fail), and a composite's members are its nested
``evaluator_results``, as AgentV writes them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from assay.traces.summary import trace_summary
from assay.types.records import CaseRecord, EvaluatorSpec, conversation_columns
from assay.types.score import Score, verdict_band

AGENT_REQUEST_KINDS = frozenset({"command", "agent"})
"""Executions whose ``provider_request`` AgentV calls ``agent_provider_request``."""


def judge_request(score: Score) -> dict[str, Any] | None:
    """What the score's judge was last asked, as AgentV's ``evaluator_provider_request``
    shows it (from the request the score keeps in ``details``; None when no judge was)."""
    messages = (score.details or {}).get("judge_request")
    if not isinstance(messages, list):
        return None
    by_role = {m.get("role"): m.get("content") for m in messages if isinstance(m, dict)}
    return {"target": score.judge_model, "system_prompt": by_role.get("system"),
            "user_prompt": by_role.get("user")}


def evaluator_result(score: Score, spec: EvaluatorSpec | None = None) -> dict[str, Any]:
    """One evaluator's entry in a row; composite members and groups nest as
    ``evaluator_results``."""
    verdict = verdict_band(score)
    entry: dict[str, Any] = {
        "name": score.name, "type": spec.type if spec else None, "score": score.value,
        "weight": spec.weight if spec else None,
        "threshold": spec.params.get("threshold") if spec else None,
        "raw": score.raw, "scale": score.scale, "label": score.label, "passed": score.passed,
        "verdict": verdict, "blocking": score.blocking, "hits": score.hits,
        "misses": score.misses,
        "reasoning": score.rationale,
        "error": score.error.model_dump() if score.error else None,
        "skipped": score.skipped, "details": score.details, "judge_model": score.judge_model,
        "latency_ms": score.latency_ms, "usage": score.usage.model_dump(),
    }
    asked = judge_request(score)
    if asked is not None:
        entry["evaluator_provider_request"] = asked
    nested = [evaluator_result(p) for p in score.parts] + _members(score)
    if nested:
        entry["evaluator_results"] = nested
    return entry


def _members(score: Score) -> list[dict[str, Any]]:
    """A composite's members (kept in its details) as nested results."""
    details = score.details or {}
    members = details.get("members") if "aggregator" in details else None
    if not isinstance(members, dict):
        return []
    nested = []
    for name, dumped in members.items():
        if not isinstance(dumped, dict):
            continue
        fields = {k: v for k, v in dumped.items() if k in Score.model_fields}
        try:
            member = Score.model_validate({**fields, "name": name})
        except ValidationError:
            continue
        nested.append(evaluator_result(member, EvaluatorSpec(
            name=name, type=str(dumped.get("type") or ""),
            weight=float(dumped.get("weight", 1.0)))))
    return nested


def agentv_row(record: CaseRecord, dataset: str = "",
               specs: Mapping[str, EvaluatorSpec] | None = None) -> dict[str, Any]:
    """The result row of one case record. ``specs`` are the run's evaluators by name (their
    type, weight and threshold go in the ``evaluator_results`` entries); a case's own
    evaluators take precedence."""
    specs = dict(specs or {})
    if record.evaluators is not None:
        specs.update({e.name: e for e in record.evaluators})
    scores = record.scores
    finished = record.finished_at or time.time()
    row: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(finished)),
        "eval_id": record.case_id,
        "dataset": dataset,
        "repeat": record.repeat,
        "score": record.score,
        "verdict": record.verdict.value,
        "hits": [f"[{s.name}] {h}" for s in scores for h in s.hits],
        "misses": [f"[{s.name}] {m}" for s in scores for m in s.misses],
        "input": record.input,
        "expected_output": record.expected_output,
        "candidate_answer": record.execution.output_text(),
        "target": record.target,
        "reasoning": " | ".join(f"{s.name}: {s.rationale}" for s in scores if s.rationale),
        "evaluator_results": [
            evaluator_result(s, specs.get(s.name)) for s in scores],
        "errors": sum(1 for s in scores if s.error),
        "usage": record.usage.model_dump(),
        "latency_ms": record.execution.latency_ms,
    }
    if record.overall_score is not None:
        row["overall_score"] = record.overall_score
    if record.execution.conversation is not None:
        row.update(conversation_columns(record))
        row["transcript"] = [m.model_dump(mode="json", exclude_none=True)
                             for m in record.execution.messages]
    conversation_id = record.case.metadata.get("conversation_id")
    if conversation_id is not None:
        row["conversation_id"] = conversation_id
    row["trace_summary"] = trace_summary(record.execution)
    request = record.execution.provider_request
    if request is not None:
        kind = "agent" if request.get("kind") in AGENT_REQUEST_KINDS else "lm"
        row[f"{kind}_provider_request"] = request
    if record.execution.error:
        row["error"] = record.execution.error
    if record.source is not None:
        row["file"] = record.source.file
        if record.source.line is not None:
            row["line"] = record.source.line
    return row


