"""MLflow 3's scorer API and its conversation (session-level) judges, on assay.

The MLflow figures quoted were reported by mlflow 3.17.2 on the same inputs with a judge
server answering as the stub does (``Correctness()(...)`` returned ``Feedback(value="yes",
rationale="stub")``; a ``ConversationSimulator`` whose goal check said no, then yes, played
two turns, asked UserFrustration and ConversationCompleteness once and KnowledgeRetention
once per turn, and reported ``conversation_completeness/mean`` and
``knowledge_retention/mean`` but no mean for the frustration label).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import assay
from assay.errors import ConfigError
from assay.integrations.mlflow_scorers import (
    ConversationCompleteness,
    Correctness,
    KnowledgeRetention,
    RetrievalRelevance,
    UserFrustration,
    make_judge,
)
from assay.judges.feedback import Feedback
from assay.suites.simulation import ConversationSimulator
from tests.acceptance.stub import Raw
from tests.acceptance.test_databricks import DATA, by_id, evaluate, judge

STUB = "custom:stub"

# -- scorers called directly ---------------------------------------------------------------


def test_a_scorer_called_directly_returns_mlflows_feedback() -> None:
    stub = judge({"⟦c-yes⟧": "yes", "⟦c-no⟧": "no", "⟦c-bad⟧": "<<invalid>>"})
    yes = Correctness(model=STUB)(inputs={"question": "⟦c-yes⟧ Capital of France?"},
                                  outputs="Paris", expectations={"expected_response": "Paris"})
    assert isinstance(yes, Feedback)
    assert (yes.value, yes.rationale, yes.error, yes.name) == ("yes", "stub", None, "correctness")
    no = Correctness(model=STUB)(inputs={"question": "⟦c-no⟧ Capital of France?"},
                                 outputs="Lyon", expectations={"expected_facts": ["Paris"]})
    assert no.value == "no" and no.error is None  # type: ignore[union-attr]
    failed = Correctness(model=STUB)(inputs={"question": "⟦c-bad⟧ q"}, outputs="a",
                                     expectations={"expected_response": "b"})
    assert failed.value is None and failed.error_code == "judge_output_invalid"  # type: ignore
    assert failed.error.startswith("judge output invalid after 3 asks")  # type: ignore
    calls = stub.total
    # MLflow raises on a missing expectation; assay says the judge does not apply
    unasked = Correctness(model=STUB)(inputs={"question": "⟦c-yes⟧ q"}, outputs="Paris")
    assert unasked.value is None and unasked.error is None  # type: ignore[union-attr]
    assert unasked.metadata["not_applicable"] == (  # type: ignore[union-attr]
        "Missing required field(s): expected_response or expected_facts for metric: "
        "correctness")
    assert stub.total == calls  # no call for it
    with pytest.raises(ConfigError, match="nothing to judge"):
        Correctness(model=STUB)()


def test_a_chunk_scorer_returns_a_feedback_per_chunk_and_the_precision() -> None:
    judge({"⟦k1⟧": "yes", "⟦k2⟧": "no"})
    found = RetrievalRelevance(model=STUB)(
        inputs="capital of France?",
        trace=json.dumps(json.loads((DATA / "mlflow3_two_retrievers_trace.json").read_text(
            encoding="utf-8")), ensure_ascii=False)
        .replace("⟦sa-1⟧", "⟦k1⟧").replace("⟦sa-2⟧", "⟦k2⟧").replace("⟦sb-1⟧", "⟦k1⟧"))
    assert isinstance(found, list)
    assert [f.value for f in found] == ["yes", "no", "yes", pytest.approx(2 / 3)]
    assert [f.name for f in found][-1] == "retrieval_relevance/precision"
    assert found[0].metadata["doc_uri"] == "a1"


def test_make_judge_is_callable_as_a_scorer_too() -> None:
    judge({"⟦m⟧": {"rationale": "fine", "result": True}})
    good = assay.make_judge("good", "Is this answer good? {{ outputs }}", model=STUB,
                            feedback_value_type=bool)
    assert good(outputs="⟦m⟧ an answer") == Feedback(value=True, rationale="fine",
                                                      name="good")
    assert make_judge is assay.make_judge
    result = evaluate([{"request_id": "x", "inputs": "q", "outputs": "⟦m⟧ a"}],
                      scorers=[good], naming="mlflow")
    assert result.rows()[0]["good/value"] is True


# -- conversation judges -------------------------------------------------------------------

SESSION_TABLE: dict[Any, Any] = {
    # knowledge retention: s1's second reply forgets the allergy; every other reply keeps it
    ("assistant's LAST reply", "⟦s1⟧"): "yes", ("assistant's LAST reply", "⟦s1-r2⟧"): "no",
    ("assistant's LAST reply", "⟦s2⟧"): "yes",
    ("addressed every request the user made", "⟦s1⟧"): "yes",
    ("addressed every request the user made", "⟦s2⟧"): "yes",
    ("how the user's frustration went", "⟦s1⟧"): {"rationale": "calm", "result": "none"},
    ("how the user's frustration went", "⟦s2⟧"): {"rationale": "still angry",
                                                  "result": "unresolved"}}


def session_scorers() -> list[Any]:
    return [ConversationCompleteness(), KnowledgeRetention(), UserFrustration()]


def test_session_judges_over_whole_conversations_in_mlflow_names() -> None:
    """Two conversations (a row's messages and its last answer): knowledge retention asks
    once per assistant reply (2 + 2 calls) and fails s1, whose last reply forgets the
    allergy; completeness and frustration ask once each. ``user_frustration`` is a label:
    no mean (as MLflow), and ``unresolved`` fails the run."""
    stub = judge(SESSION_TABLE)
    result = evaluate(DATA / "m03_sessions.jsonl", naming="mlflow", scorers=session_scorers())
    assert result.metrics == {"conversation_completeness/mean": 1.0,
                              "knowledge_retention/mean": 0.5}
    rows = by_id(result)
    assert rows["s1"]["knowledge_retention/value"] == "no"
    assert "[4] assistant: no" in rows["s1"]["knowledge_retention/rationale"]
    assert rows["s1"]["user_frustration/value"] == "none"
    assert rows["s2"]["user_frustration/value"] == "unresolved"
    assert stub.total == 4 + 2 + 2 and not stub.unmatched
    assert result.passed is False
    assert "knowledge_retention" in result.reason and "unresolved: still angry" in result.reason
    verdicts = {r.case_id: r.verdict.value for r in result.records}
    assert verdicts == {"s1": "fail", "s2": "fail"}


def test_session_judges_in_databricks_names_take_part_in_the_overall_assessment() -> None:
    judge(SESSION_TABLE)
    result = evaluate(DATA / "m03_sessions.jsonl", naming="databricks",
                      evaluators=["conversation_completeness", "knowledge_retention"])
    rows = by_id(result)
    assert rows["s1"]["session/llm_judged/knowledge_retention/rating"] == "no"
    assert rows["s1"]["response/overall_assessment/rating"] == "no"
    assert "knowledge_retention" in rows["s1"]["response/overall_assessment/rationale"]
    assert rows["s2"]["response/overall_assessment/rating"] == "yes"
    assert result.metrics["session/llm_judged/knowledge_retention/rating/percentage"] == 0.5


def test_session_judges_called_with_a_session() -> None:
    judge(SESSION_TABLE)
    session = [{"role": "user", "content": "⟦s2⟧ Where is my order?"},
               {"role": "assistant", "content": "It is late."},
               {"role": "user", "content": "Useless."}, {"role": "assistant", "content": "Sorry."}]
    feedback = UserFrustration(model=STUB)(session=session)
    assert feedback == Feedback(value="unresolved", rationale="still angry",
                                name="user_frustration")
    retained = KnowledgeRetention(model=STUB)(session=session)
    assert retained.value == "yes"  # type: ignore[union-attr]


# -- MLflow's ConversationSimulator ----------------------------------------------------------

SIMULATION_TABLE: dict[Any, Any] = {
    # the simulated user: its opening, then its answer to the agent's first reply
    "conversation has not started": Raw("⟦u1⟧ How do I log a metric?"),
    "answer to ⟦u1⟧": Raw("⟦u2⟧ And a parameter?"),
    # the goal check after each agent turn: no, then yes once the second question is answered
    "the goal has been FULLY achieved": "no",
    ("the goal has been FULLY achieved", "answer to ⟦u2⟧"): "yes",
    "how the user's frustration went": {"rationale": "stub", "result": "resolved"},
    "addressed every request the user made": "yes",
    "assistant's LAST reply": "yes"}


def test_conversation_simulator_stops_when_the_goal_is_achieved() -> None:
    """MLflow's shape: test cases with a goal and persona, predict_fn(input, **context), the
    conversation ending when a goal check says yes (here after the second turn)."""
    stub = judge(SIMULATION_TABLE)
    seen: list[dict[str, Any]] = []

    def predict_fn(input: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        seen.append({"turns": len(input), **kwargs})
        return {"role": "assistant", "content": "answer to " + input[-1]["content"]}

    simulator = ConversationSimulator(
        test_cases=[{"goal": "Learn to log metrics and parameters",
                     "persona": "A data scientist", "context": {"user_id": 7},
                     "simulation_guidelines": ["Ask one thing at a time"]}],
        max_turns=5, user_model=STUB)
    result = evaluate(simulator, predict_fn=predict_fn, naming="mlflow",
                      scorers=session_scorers())
    (record,) = result.records
    info = record.execution.conversation
    assert info is not None
    assert (info.stop_reason, info.agent_turns, info.goal_checks) == \
        ("goal_achieved", 2, ["no", "yes"])
    assert [m.text() for m in record.execution.messages if m.role == "user"] == \
        ["⟦u1⟧ How do I log a metric?", "⟦u2⟧ And a parameter?"]
    assert [s["turns"] for s in seen] == [1, 3]
    assert all(s["user_id"] == 7 and s["mlflow_session_id"] for s in seen)
    assert result.metrics == {"conversation_completeness/mean": 1.0,
                              "knowledge_retention/mean": 1.0}
    assert result.rows()[0]["user_frustration/value"] == "resolved"
    # 2 simulated messages, 2 goal checks, then 1 + 1 + 2 judge calls (as MLflow made)
    assert stub.total == 2 + 2 + 1 + 1 + 2 and not stub.unmatched
    simulated = [r for r in stub.requests if r["messages"][0]["role"] == "system" and
                 "playing the USER" in r["messages"][0]["content"]]
    assert "Ask one thing at a time" in simulated[0]["messages"][0]["content"]
    assert "Never state or summarise your whole goal" in simulated[0]["messages"][0]["content"]


def test_conversation_simulator_refuses_bad_test_cases() -> None:
    for bad, message in (([{"persona": "x"}], "'goal' is required"),
                         ([{"goal": "g", "mood": "x"}], "unknown key\\(s\\) 'mood'"),
                         ([{"goal": "g", "context": {"input": 1}}], "conversation's own"),
                         ([], "test_cases is empty")):
        with pytest.raises(ConfigError, match=message):
            ConversationSimulator(test_cases=bad)
    with pytest.raises(ConfigError, match="max_turns 0"):
        ConversationSimulator(test_cases=[{"goal": "g"}], max_turns=0)
