"""The Connexity shorthand of the stub judge, and the answers of the acceptance tests.

``{"scores": [TR, PE, RI, GF, IC, IG, CM, RD], "outcomes": [bool, ...]}`` expands to the full
``judge_metric_scores`` answer: the scores go to the metrics the request's schema asks for, in
its order (or by name, when ``scores`` is a dict); a boolean is a binary metric's ``passed``;
every justification is ``"stub"``, ``failure_code`` is ``"stub_issue"`` for a score of 2 or
less (or a failed binary metric) and null otherwise, ``turns`` is ``[]``; each outcome copies
its number and statement from the prompt's numbered list. ``outcomes`` shorter than the list
answers only those (the judge leaving statements out).
"""

from __future__ import annotations

import re
from typing import Any

from tests.acceptance.stub import INVALID, Raw, StubJudge, message_text

METRICS = ["tool_routing", "parameter_extraction", "result_interpretation",
           "grounding_fidelity", "instruction_compliance", "information_gathering",
           "conversation_management", "response_delivery"]
_OUTCOMES = re.compile(r"<expected_outcomes_[0-9a-f]+>\n(.*?)\n</expected_outcomes_", re.S)


def _schema(request: dict[str, Any]) -> dict[str, Any]:
    return request["response_format"]["json_schema"]["schema"]


def _is_binary(schema: dict[str, Any], prop: dict[str, Any]) -> bool:
    ref = prop.get("$ref", "")
    target = schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1], prop)
    return "passed" in target.get("properties", {})


def statements(request: dict[str, Any]) -> list[tuple[int, str]]:
    """The numbered outcomes of the judge prompt (the first user message; re-asks follow)."""
    users = [message_text(m) for m in request["messages"] if m.get("role") == "user"]
    found = _OUTCOMES.search(users[0]) if users else None
    if not found:
        return []
    return [(int(m.group(1)), m.group(2)) for m in
            re.finditer(r"^(\d+)\. (.*)$", found.group(1), re.M)]


def expand(value: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    if "scores" not in value:
        return value
    schema = _schema(request)
    metrics = [k for k in schema["properties"] if k != "expected_outcomes"]
    scores = value["scores"]
    given = dict(scores) if isinstance(scores, dict) else dict(zip(metrics, scores, strict=True))
    answer: dict[str, Any] = {}
    for metric in metrics:
        score = given[metric]
        low = score is False or (not isinstance(score, bool) and score <= 2)
        entry: dict[str, Any] = {"justification": "stub",
                                 "failure_code": "stub_issue" if low else None, "turns": []}
        if _is_binary(schema, schema["properties"][metric]):
            entry["passed"] = bool(score)
        else:
            entry["score"] = score
        answer[metric] = entry
    if "outcomes" in value:
        listed = statements(request)
        answer["expected_outcomes"] = [
            {"index": index, "statement": text, "passed": passed, "justification": "stub"}
            for (index, text), passed in zip(listed, value["outcomes"], strict=False)]
    return answer


def answer(scores: Any, outcomes: list[bool] | None = None) -> dict[str, Any]:
    value: dict[str, Any] = {"scores": scores}
    if outcomes is not None:
        value["outcomes"] = outcomes
    return value


def same(score: int) -> list[int]:
    return [score] * 8


TABLE: dict[str, Any] = {
    # scoring.yaml
    "⟦C01⟧": answer([5, 4, 3, 5, 2, 4, 3, 5]),
    "⟦C02a⟧": answer(same(3)),
    "⟦C02b⟧": answer(same(5)),
    "⟦C02c⟧": answer(same(0)),
    "⟦C03⟧": answer([5, 5, 5, 5, 0, 5, 5, 5]),
    "⟦C04⟧": answer({"tool_routing": 4, "response_delivery": 2, "task_completion": False},
                    [True, True]),
    "⟦C05a⟧": answer([5, 4, 4]),
    "⟦C05b⟧": answer([1, 2, 2]),
    "⟦C07⟧": answer(same(5), [True, False, True]),
    "⟦C08⟧": answer(same(5), [True, True]),
    "⟦C08b⟧": answer(same(5), []),
    "⟦C10⟧": INVALID,
    # aggregates.yaml
    "⟦R1⟧": answer([5, 5, 5, 5, 5, 0, 5, 5], [True]),
    "⟦R2⟧": answer(same(4)),
    "⟦R3⟧": answer(same(3)),
    "⟦R4⟧": INVALID,
    # compare_base.yaml / compare_cand.yaml
    "⟦A-base⟧": answer([5, 5, 5, 5, 5, 0, 5, 5]),
    "⟦B-base⟧": answer(same(4), [True]),
    "⟦C-base⟧": answer(same(3), [False]),
    "⟦D-base⟧": answer([0, 5, 5, 5, 5, 5, 5, 5]),
    "⟦A-cand⟧": answer([3, 5, 5, 5, 5, 0, 5, 5]),
    "⟦B-cand⟧": answer([1, 5, 5, 1, 5, 5, 5, 5], [False]),
    "⟦C-cand⟧": answer([0, 0, 5, 5, 5, 5, 5, 5], [True]),
    "⟦D-cand⟧": answer([1, 5, 5, 5, 5, 5, 5, 5]),
    # conversation.yaml: the judge (its marker is in each case's evaluation emphasis) and
    # the simulated user (who sees the agent's echo as its last user message)
    "⟦conversation-judge⟧": answer(same(4)),
    "echo:": Raw("more please"),
}


def stub_judge(extra: dict[str, Any] | None = None) -> StubJudge:
    """A stub judge answering :data:`TABLE` (plus ``extra``) with the Connexity shorthand."""
    return StubJudge({**TABLE, **(extra or {})}, expand=expand)
