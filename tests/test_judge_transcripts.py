"""An LLM judge's score keeps what the judge was asked and what it answered, so that a reader
(the case page) can see what the judge saw; long messages are cut, never the score."""

from __future__ import annotations

from assay.judges import EvalContext
from assay.judges.llm.base import TRANSCRIPT_CHARS
from assay.judges.llm.semantic_similarity import SemanticSimilarity
from assay.types.case import Case
from assay.types.execution import Execution


async def test_a_judged_score_keeps_the_request_and_the_answer(engine_factory):
    engine = engine_factory()
    case = Case(id="x", expected_output="Paris")
    score = await SemanticSimilarity().evaluate(
        case, Execution(output="The capital is Paris."), EvalContext(engine))
    assert score.value is not None and score.details is not None
    request = score.details["judge_request"]
    assert [m["role"] for m in request] == ["system", "user"]
    assert "The capital is Paris." in request[1]["content"]
    assert isinstance(score.details["judge_answer"], str) and score.details["judge_answer"]


async def test_long_judge_messages_are_cut_in_the_score(engine_factory):
    engine = engine_factory()
    huge = "y" * (TRANSCRIPT_CHARS * 3)
    score = await SemanticSimilarity().evaluate(
        Case(id="x", expected_output="short"), Execution(output=huge), EvalContext(engine))
    assert score.details is not None
    user = score.details["judge_request"][1]["content"]
    assert len(user) < TRANSCRIPT_CHARS + 100 and "more characters]" in user


async def test_evaluators_that_ask_no_judge_keep_no_transcript(engine_factory):
    from assay.judges import build

    exact = build({"type": "exact_match"}, "test")
    score = await exact.evaluate(Case(id="x", expected_output="a"), Execution(output="a"),
                                 EvalContext(engine_factory()))
    assert "judge_request" not in (score.details or {})
