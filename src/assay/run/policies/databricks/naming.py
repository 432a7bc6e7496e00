"""Per-row results in Databricks Agent Evaluation's names or MLflow 3's.

``databricks`` (the names in Databricks' documentation)::

    response/llm_judged/<judge>/rating | rationale | error_message      (ANSWER judges)
    retrieval/llm_judged/<judge>/rating | rationale | error_message     (RETRIEVAL_LIST)
    retrieval/llm_judged/<judge>/ratings | rationales | error_messages | precision   (per chunk)
    retrieval/ground_truth/document_recall
    metric/<name>/value | rationale | error_message                     (anything else)
    agent/latency_seconds, agent/total_token_count
    response/overall_assessment/rating | rationale

``mlflow`` (``result_df``)::

    request_id, trace_id, <name>/value | rationale [| error_message | error_code]
    (error columns only on errors), <expectation>/value, then MLflow 3's trace columns
    (trace, client_request_id, state, request_time, execution_duration, request, response,
    trace_metadata, tags, spans, assessments: see :mod:`.mlflow_trace`), then inputs, outputs

Both end with a multi-turn case's conversation columns under assay's own names
(``stop_reason``, ``agent_turns``, ``agent_latency_p50_ms``, ``agent_latency_p95_ms``,
``agent_latency_max_ms``): neither family names them.

A missing input is not an error: in ``databricks`` names its reason is the error message (as
Databricks reports its code-1001 errors, which it does not count either); in ``mlflow`` names
the value is None and the reason is the rationale, with no error columns.
"""

from __future__ import annotations

from typing import Any

from assay.judges.feedback import is_measurement
from assay.run.policies.databricks.catalog import (
    ANSWER,
    GROUND_TRUTH,
    OVERALL_ORDER,
    RATED,
    RETRIEVAL,
    RETRIEVAL_LIST,
    SESSION,
    Assessment,
    Catalog,
    assessments,
    chunk_error_text,
    chunks,
    message,
    native,
    precision,
    rating,
)
from assay.run.policies.databricks.mlflow_trace import trace_columns, trace_id
from assay.traces.retrieval import retrieved_context
from assay.types.case import Case
from assay.types.records import CaseRecord, conversation_columns
from assay.types.score import Score

OVERALL = "response/overall_assessment"


def databricks_key(assessment: Assessment) -> str:
    """The column prefix of an assessment in Databricks' names."""
    kind = assessment.kind
    if kind == ANSWER:
        return f"response/llm_judged/{assessment.name}"
    if kind in (RETRIEVAL, RETRIEVAL_LIST):
        return f"retrieval/llm_judged/{assessment.name}"
    if kind == SESSION:
        return f"session/llm_judged/{assessment.name}"
    if kind == GROUND_TRUTH:
        return f"retrieval/ground_truth/{assessment.name}"
    return f"metric/{assessment.name}"


def request_id(record: CaseRecord) -> str:
    return record.case_id if not record.repeat else f"{record.case_id}#{record.repeat}"


def named_row(record: CaseRecord, catalog: Catalog, naming: str,
              chunk_errors: str = "exclude") -> dict[str, Any]:
    """One case record as a row in ``naming`` (``databricks`` or ``mlflow``), ending with a
    multi-turn case's conversation columns (:func:`conversation_columns`) under assay's own
    names, as its rows in no naming have them: neither Databricks nor MLflow has a column
    for what stopped a conversation, its agent turns or the agent's latency over its turns
    (Databricks' ``agent/latency_seconds`` and MLflow's ``execution_duration`` are the
    whole execution's time, which the row has already)."""
    if naming == "mlflow":
        row = mlflow_row(record, catalog, chunk_errors)
    else:
        row = databricks_row(record, catalog, chunk_errors)
    row.update(conversation_columns(record))
    return row


def databricks_row(record: CaseRecord, catalog: Catalog,
                   chunk_errors: str = "exclude") -> dict[str, Any]:
    case, execution = record.case, record.execution
    row: dict[str, Any] = {"request_id": request_id(record), "request": record.input,
                           "response": execution.output}
    context = retrieved_context(execution)
    if context.chunks:
        row["retrieved_context"] = [{"content": c.content, "doc_uri": c.doc_uri}
                                    for c in context.chunks]
    if case.expected_output is not None:
        row["expected_response"] = case.expected_output
    if case.expected_facts:
        row["expected_facts"] = list(case.expected_facts)
    if case.expected_retrieved_context:
        row["expected_retrieved_context"] = [d.model_dump(exclude_none=True)
                                             for d in case.expected_retrieved_context]
    if case.guidelines or case.named_guidelines:
        row["guidelines"] = guidelines_value(case)
    found = assessments(record, catalog)
    for a in found:
        key = databricks_key(a)
        score = a.score
        if a.kind == RETRIEVAL:
            row.update(_chunk_columns(key, score, chunk_errors))
        elif a.kind == GROUND_TRUTH:
            row[key] = score.value
        elif a.kind in RATED:
            row[f"{key}/rating"] = rating(score)
            row[f"{key}/rationale"] = score.rationale
            row[f"{key}/error_message"] = message(score)
        else:
            row[f"{key}/value"] = native(score)
            row[f"{key}/rationale"] = score.rationale
            row[f"{key}/error_message"] = message(score)
    latency = execution.latency_ms
    row["agent/latency_seconds"] = None if latency is None else latency / 1000
    row["agent/total_token_count"] = execution.usage.total_tokens if execution.usage else None
    overall, why = overall_assessment(found)
    row[f"{OVERALL}/rating"] = overall
    row[f"{OVERALL}/rationale"] = why
    return row


def _chunk_columns(key: str, score: Score, chunk_errors: str) -> dict[str, Any]:
    entries = chunks(score)
    if not entries:  # not applicable, or failed before any chunk was rated
        return {f"{key}/ratings": [None], f"{key}/rationales": [score.rationale],
                f"{key}/error_messages": [message(score)], f"{key}/precision": None}
    return {f"{key}/ratings": [e.get("rating") for e in entries],
            f"{key}/rationales": [e.get("rationale") for e in entries],
            f"{key}/error_messages": [chunk_error_text(e) for e in entries],
            f"{key}/precision": precision(score, chunk_errors)}


def overall_rank(a: Assessment) -> tuple[int, int, str]:
    kind = a.info.type
    index = OVERALL_ORDER.index(kind) if kind in OVERALL_ORDER else len(OVERALL_ORDER)
    return index, a.info.order, a.name


def overall_assessment(found: list[Assessment]) -> tuple[str | None, str | None]:
    """The row's overall rating: "yes" when every per-row yes/no judgement that has a rating
    said yes, "no" when any said no (the rationale names the first, in Databricks' order of
    judges), None when none has a rating. Per-chunk judges do not take part."""
    rated = sorted((a for a in found if a.kind in RATED and rating(a.score) is not None),
                   key=overall_rank)
    if not rated:
        return None, None
    first_no = next((a for a in rated if rating(a.score) == "no"), None)
    if first_no is None:
        return "yes", f"all {len(rated)} rated judgement(s) said yes"
    reason = first_no.score.rationale or "no rationale"
    return "no", f"{first_no.name} rated no: {reason}"


EXPECTATION_COLUMNS = ("expected_response", "expected_facts", "guidelines",
                       "expected_retrieved_context")


def mlflow_row(record: CaseRecord, catalog: Catalog,
               chunk_errors: str = "exclude") -> dict[str, Any]:
    case, execution = record.case, record.execution
    row: dict[str, Any] = {"request_id": request_id(record), "trace_id": trace_id(record)}
    found = assessments(record, catalog)
    for a in found:
        name, score = a.mlflow_name, a.score
        if a.kind == RETRIEVAL:
            entries = chunks(score)
            row[f"{name}/value"] = [e.get("rating") for e in entries] or None
            row[f"{name}/rationale"] = [e.get("rationale") for e in entries] or \
                _skip_reason(score)
            row[f"{name}/precision/value"] = precision(score, chunk_errors)
            errors = [chunk_error_text(e) for e in entries]
            if score.error is not None or any(errors):
                row[f"{name}/error_message"] = errors if any(errors) else message(score)
                row[f"{name}/error_code"] = score.error.code if score.error is not None \
                    else next(e["error"]["code"] for e in entries if e.get("error"))
            continue
        row[f"{name}/value"] = native(score)
        row[f"{name}/rationale"] = score.rationale if score.rationale is not None \
            else _skip_reason(score)
        if score.error is not None:
            row[f"{name}/error_message"] = score.error.message
            row[f"{name}/error_code"] = score.error.code
    expectations = {"expected_response": case.expected_output,
                    "expected_facts": case.expected_facts or None,
                    "guidelines": guidelines_value(case),
                    "expected_retrieved_context": [
                        d.model_dump(exclude_none=True) for d in case.expected_retrieved_context]
                    or None, **case.expectations}
    given = {key: value for key, value in expectations.items() if value is not None}
    for key, value in given.items():
        row[f"{key}/value"] = value
    row.update(trace_columns(record, found, given))
    row["inputs"] = record.input  # assay's own names for request and response, kept too
    row["outputs"] = execution.output
    return row


def guidelines_value(case: Case) -> Any:
    """The case's guidelines as given: a list, or a dict of named groups (plain ones under
    ``guideline_adherence``); None for none."""
    if case.named_guidelines:
        plain = {"guideline_adherence": list(case.guidelines)} if case.guidelines else {}
        return {**plain, **{k: list(v) for k, v in case.named_guidelines.items()}}
    return list(case.guidelines) or None


def _skip_reason(score: Score) -> str | None:
    if score.skipped is not None and not is_measurement(score):
        return f"not applicable: {score.skipped}"
    return None


