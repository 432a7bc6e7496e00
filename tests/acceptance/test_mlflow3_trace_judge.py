"""``make_judge`` with ``{{ trace }}``: a judge that reads the agent's trace through tools.

The trace is the one mlflow 3.17.2 wrote for a traced agent with two retriever spans
(``databricks/mlflow3_two_retrievers_trace.json``). The stub judge plays a model that calls
the tools (``ToolCalls``) and then answers.
"""

from __future__ import annotations

import json
from typing import Any

import assay
from tests.acceptance.stub import ToolCalls
from tests.acceptance.test_databricks import DATA, evaluate, judge

SEARCH_A = "cedf4844dd8aefd0"  # the span id of search_a in the file (base64 there)


def rows() -> list[dict[str, Any]]:
    trace = json.loads((DATA / "mlflow3_two_retrievers_trace.json").read_text(encoding="utf-8"))
    return [{"request_id": "t", "inputs": {"question": "capital of France?"}, "trace": trace}]


def tool_replies(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


def test_a_trace_judge_reads_the_trace_through_tools() -> None:
    """The prompt holds an overview of the trace, not the trace; the judge lists the spans,
    reads one, and answers from what the tools returned."""

    def model(request: dict[str, Any]) -> Any:
        done = len(tool_replies(request))
        if "tools" in request and request.get("tool_choice") == "auto":
            if done == 0:
                return ToolCalls([("list_spans", {})])
            if done == 1:
                return ToolCalls([("get_span", {"span_id": SEARCH_A})])
            return "I have read enough."  # stops calling tools
        return {"rationale": "it searched first", "result": True}

    stub = judge({"⟦tj⟧": model})
    searched = assay.make_judge("searched", "⟦tj⟧ Did the agent search before answering? "
                                "{{ trace }}", feedback_value_type=bool)
    result = evaluate(rows(), scorers=[searched], naming="mlflow")
    score = result.records[0].score_named("searched")
    assert score is not None and score.raw is True and score.rationale == "it searched first"
    first = stub.requests[0]
    prompt = first["messages"][-1]["content"]
    assert "A trace of 3 span(s) (agent, search_a, search_b)" in prompt
    assert "⟦sa-1⟧" not in prompt  # the documents are read through the tools, not pasted
    assert [t["function"]["name"] for t in first["tools"]] == [
        "get_trace_info", "list_spans", "get_root_span", "get_span", "search_trace_regex"]
    listed = json.loads(tool_replies(stub.requests[1])[0])
    assert [s["name"] for s in listed["spans"]] == ["agent", "search_a", "search_b"]
    assert listed["spans"][1]["span_type"] == "RETRIEVER"
    read = json.loads(tool_replies(stub.requests[2])[1])
    assert "⟦sa-1⟧ Paris is the capital of France." in read["content"]
    final = stub.requests[-1]
    assert "response_format" in final and len(tool_replies(final)) == 2
    used = score.details["trace_tools"]  # type: ignore[index]
    assert used["count"] == 2 and used["limit_reached"] is False
    assert [c["name"] for c in used["calls"]] == ["list_spans", "get_span"]
    assert stub.total == 4 and result.rows()[0]["searched/value"] is True
    assert score.usage.calls == 4


def test_a_trace_judge_that_never_stops_calling_tools_is_stopped_at_its_bound() -> None:
    """A model that would search for ever (MLflow made 150 calls on a row without output)
    makes ``max_tool_calls`` calls, is told it has used them all, and must answer."""

    def model(request: dict[str, Any]) -> Any:
        if "tools" in request and request.get("tool_choice") == "auto":
            return ToolCalls([("search_trace_regex", {"pattern": "paris"})])
        return {"rationale": "ran out of calls", "result": False}

    stub = judge({"⟦tj⟧": model})
    searched = assay.make_judge("searched", "⟦tj⟧ Did it search? {{ trace }}",
                                feedback_value_type=bool, max_tool_calls=3)
    result = evaluate(rows(), scorers=[searched], naming="mlflow")
    score = result.records[0].score_named("searched")
    assert score is not None and score.raw is False
    assert score.details["trace_tools"]["limit_reached"] is True  # type: ignore[index]
    assert score.details["trace_tools"]["count"] == 3  # type: ignore[index]
    assert stub.total == 3 + 1  # three rounds of tool calls, then the verdict
    final = stub.requests[-1]["messages"]
    assert "You have used every tool call allowed." in final[-1]["content"]
    found = json.loads(tool_replies(stub.requests[-1])[0])
    assert found["matches"] and found["matches"][0]["matched_text"].lower() == "paris"


def test_a_bad_tool_call_is_the_tools_error_not_the_judges() -> None:
    def model(request: dict[str, Any]) -> Any:
        done = len(tool_replies(request))
        if "tools" in request and request.get("tool_choice") == "auto" and done == 0:
            return ToolCalls([("get_span", {"span_id": "nope"}), ("drop_table", {}),
                              ("search_trace_regex", {"pattern": "(unclosed"})])
        if "tools" in request and request.get("tool_choice") == "auto":
            return "done"
        return {"rationale": "no", "result": False}

    stub = judge({"⟦tj⟧": model})
    searched = assay.make_judge("searched", "⟦tj⟧ Did it search? {{ trace }}",
                                feedback_value_type=bool)
    result = evaluate(rows(), scorers=[searched], naming="mlflow")
    errors = [json.loads(t)["error"] for t in tool_replies(stub.requests[1])]
    assert errors[0].startswith("no span 'nope'")
    assert errors[1].startswith("no tool 'drop_table'")
    assert errors[2].startswith("invalid pattern")
    score = result.records[0].score_named("searched")
    assert score is not None and score.error is None and score.raw is False
