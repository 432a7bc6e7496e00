"""UiPath's legacy retrieval judges: ContextPrecision (legacy type 8) and Faithfulness (type 9).

``context_precision``
    For each retrieval the agent made (a ``RETRIEVER`` span: its query and documents), the
    judge rates every retrieved chunk's relevance to the query from 0 to 100; a retrieval's
    score is the mean over its chunks, the evaluator's ``raw`` the mean over retrievals
    (UiPath's 0-100 scale), and the value ``raw / 100``. One call per retrieval.
``faithfulness``
    The judge first lists the verifiable claims the agent's answer makes, then says for each
    claim which sources support it and which contradict it. A claim is grounded when at least
    one source supports it and none contradicts it; ``raw`` is grounded claims over all claims
    x 100. The sources are the retrieved documents and the tools' outputs in the trace. Two
    calls.

Both follow UiPath's arithmetic. They differ where UiPath's legacy code reports a 0 that means
"nothing to judge": an execution with no retrieval (or no source) is *not applicable* here
(a skip, outside every mean), not a score of 0; and an answer with no verifiable claim is
faithful (1.0), as in UiPath. UiPath's faithfulness checks the item's expected output rather
than the agent's answer; ``claims_from: expected_output`` keeps that behaviour, the default
checks the answer, which is what the metric is for.

The judges' answers are validated against what was asked (one relevance per chunk, one stance
entry per claim, source numbers that exist) and re-asked within the engine's bounds, then an
error, never a made-up number. These are assay's own small judges in UiPath's shape; they
could later share prompt and answer code with the RAG judges of the Databricks family
(chunk relevance, groundedness).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import AliasChoices, Field, create_model

from assay.errors import EvaluationError
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer, WholeNumber
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.templates import as_text, delimit
from assay.judges.registry import register
from assay.traces.retrieval import Retrieval, retrievals
from assay.traces.tools import tool_calls
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score
from assay.types.usage import Usage

PRECISION_SYSTEM = """You rate how relevant each retrieved chunk is to a search query. {data}

Rate every chunk on its own, from 0 to 100, by how much it helps answer the query:
- 90-100: it contains the answer to the query;
- 70-89: it addresses the query directly but only in part;
- 40-69: it gives useful background or supporting facts;
- 10-39: it is only loosely related (shared terms, a nearby topic);
- 0-9: it is unrelated, empty or unreadable.
When a chunk fits several bands, give the highest that applies. The same chunk and query
must always get the same rating.

Respond with a JSON object: {{"relevances": [{{"reasoning": "<one sentence>", \
"relevance": <integer 0-100>}}]}} with exactly one entry per chunk, in chunk order."""

CLAIMS_SYSTEM = """You list the factual claims a text makes. {data}

A claim is one self-contained, verifiable statement of fact, with pronouns and references
resolved so that it can be checked on its own. Leave out opinions, questions, greetings,
instructions and statements about the conversation itself. Split compound sentences into
separate claims. A text with no verifiable statement has no claims.

Respond with a JSON object: {{"claims": ["<claim>", ...]}}."""

STANCE_SYSTEM = """You check claims against numbered sources. {data}

For each claim, list the numbers of the sources that support it (state it or clearly imply
it) and of those that contradict it. A source that says nothing about the claim is neither.

Respond with a JSON object: {{"verdicts": [{{"reasoning": "<one sentence>", \
"supported_by": [<source numbers>], "contradicted_by": [<source numbers>]}}]}} with exactly \
one entry per claim, in claim order."""


class ChunkRelevance(JudgeAnswer):
    reasoning: str = ""
    relevance: WholeNumber = Field(ge=0, le=100)


class RelevanceAnswer(JudgeAnswer):
    """One rating per chunk, in chunk order (the schema fixes how many)."""

    relevances: list[ChunkRelevance]


class ClaimsAnswer(JudgeAnswer):
    claims: list[str]


class ClaimVerdict(JudgeAnswer):
    reasoning: str = ""
    supported_by: list[WholeNumber] = Field(default_factory=list)
    contradicted_by: list[WholeNumber] = Field(default_factory=list)


class StanceAnswer(JudgeAnswer):
    """One verdict per claim, in claim order, naming sources by number."""

    verdicts: list[ClaimVerdict]


def _exactly(count: int) -> Any:
    return Field(min_length=count, max_length=count,
                 json_schema_extra={"minItems": count, "maxItems": count})


@functools.lru_cache(maxsize=256)
def relevance_answer(chunks: int) -> type[RelevanceAnswer]:
    """The answer for ``chunks`` chunks: exactly that many ratings (built once per size)."""
    model: type[RelevanceAnswer] = create_model(
        "RelevanceAnswer", __base__=RelevanceAnswer,
        relevances=(list[ChunkRelevance], _exactly(chunks)))
    return model


@functools.lru_cache(maxsize=256)
def stance_answer(claims: int, sources: int) -> type[StanceAnswer]:
    """The answer for ``claims`` claims and ``sources`` sources: one verdict per claim, source
    numbers from 1 to ``sources``."""
    number = Annotated[int, Ge(1), Le(sources)]
    verdict: Any = create_model(
        "ClaimVerdict", __base__=ClaimVerdict,
        supported_by=(list[number], Field(default_factory=list)),
        contradicted_by=(list[number], Field(default_factory=list)))
    model: type[StanceAnswer] = create_model(
        "StanceAnswer", __base__=StanceAnswer, verdicts=(list[verdict], _exactly(claims)))
    return model


def _numbered(tag: str, items: list[str]) -> str:
    return "\n\n".join(f"[{tag} {i}]\n{delimit(tag.replace(' ', '_'), item)}"
                       for i, item in enumerate(items, start=1))


@register
class ContextPrecision(LLMEvaluator):
    """Mean relevance (0-100) of the retrieved chunks to their queries."""

    type = "context_precision"
    response_name = "evaluation_response"
    tool_name = "submit_context_precision_evaluation"

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        found = [r for r in retrievals(execution) if r.documents]
        if not found and execution.retrieved_context:
            found = [Retrieval(query=case.question(), documents=execution.retrieved_context)]
        if not found:
            return Score.not_applicable(self.name, "the execution retrieved no documents "
                                        "(no RETRIEVER span and no retrieved_context)")
        usage = Usage()
        per_call: list[dict[str, Any]] = []
        latency = 0.0
        model = ""
        for retrieval in found:
            query = retrieval.query or case.question()
            chunks = [d.content for d in retrieval.documents]
            user = (f"[[ ## query ## ]]\n{delimit('query', query)}\n\n[[ ## chunks ## ]]\n"
                    + _numbered("chunk", chunks))
            result = await self.ask(ctx, PRECISION_SYSTEM.format(data=DATA_NOT_INSTRUCTIONS),
                                    user, relevance_answer(len(chunks)))
            usage = usage + result.usage
            latency += result.latency_ms
            model = result.model
            if result.value is None:
                failed = self.failed(result)
                return failed.model_copy(update={"usage": usage})
            scores = [r.relevance for r in result.value.relevances]
            per_call.append({"query": query, "relevances": scores,
                             "mean": sum(scores) / len(scores)})
        raw = sum(c["mean"] for c in per_call) / len(per_call)
        value = max(0.0, min(1.0, raw / 100.0))
        return Score(name=self.name, value=value, raw=raw, scale="0-100",
                     passed=self.verdict(value),
                     rationale=f"context precision {raw:.1f}/100 over {len(per_call)} "
                     "retrieval(s)", details={"retrievals": per_call}, usage=usage,
                     latency_ms=latency, judge_model=model)


@register
class Faithfulness(LLMEvaluator):
    """Share of the answer's claims that its sources support and none contradicts."""

    type = "faithfulness"
    response_name = "evaluation_response"
    tool_name = "submit_evaluation"
    claims_from: Literal["output", "expected_output"] = Field(
        default="output", validation_alias=AliasChoices("claims_from", "claimsFrom"),
        description="whose claims are checked: the agent's answer, or (as UiPath's legacy "
        "evaluator does) the expected output")

    def sources(self, case: Case, execution: Execution) -> list[str]:
        docs = [d.content for r in retrievals(execution) for d in r.documents]
        docs += [d.content for d in execution.retrieved_context]
        docs += [c.output for c in tool_calls(execution) if c.output]
        return [d for d in dict.fromkeys(docs) if d.strip()]

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        sources = self.sources(case, execution)
        if not sources:
            return Score.not_applicable(self.name, "the execution has no context to check "
                                        "claims against (no retrieved document, no tool output)")
        if self.claims_from == "expected_output":
            if case.expected_output is None:
                raise EvaluationError("missing_expected_output",
                                      f"{self.name}: case {case.id!r} has no expected_output")
            text = as_text(case.expected_output)
        else:
            text = execution.output_text()
        system = CLAIMS_SYSTEM.format(data=DATA_NOT_INSTRUCTIONS)
        claims_result = await self.ask(ctx, system, "[[ ## text ## ]]\n"
                                       + delimit("text", text), ClaimsAnswer)
        if claims_result.value is None:
            return self.failed(claims_result)
        claims = [c.strip() for c in claims_result.value.claims if c.strip()]
        if not claims:
            return Score(name=self.name, value=1.0, raw=100.0, scale="0-100",
                         passed=self.verdict(1.0), rationale="the answer makes no verifiable "
                         "claim", details={"claims": []}, usage=claims_result.usage,
                         latency_ms=claims_result.latency_ms, judge_model=claims_result.model)
        user = ("[[ ## claims ## ]]\n" + _numbered("claim", claims)
                + "\n\n[[ ## sources ## ]]\n" + _numbered("source", sources))
        stance = await self.ask(ctx, STANCE_SYSTEM.format(data=DATA_NOT_INSTRUCTIONS), user,
                                stance_answer(len(claims), len(sources)))
        usage = claims_result.usage + stance.usage
        if stance.value is None:
            return self.failed(stance).model_copy(update={"usage": usage})
        rows: list[dict[str, Any]] = [{"claim": claim, "supported_by": v.supported_by,
                 "contradicted_by": v.contradicted_by, "reasoning": v.reasoning,
                 "grounded": bool(v.supported_by) and not v.contradicted_by}
                for claim, v in zip(claims, stance.value.verdicts, strict=True)]
        grounded = sum(1 for r in rows if r["grounded"])
        raw = grounded / len(rows) * 100.0
        value = raw / 100.0
        return Score(name=self.name, value=value, raw=raw, scale="0-100",
                     passed=self.verdict(value),
                     rationale=f"{grounded} of {len(rows)} claim(s) grounded in the sources",
                     hits=[r["claim"] for r in rows if r["grounded"]],
                     misses=[r["claim"] for r in rows if not r["grounded"]],
                     details={"claims": rows, "sources": len(sources)}, usage=usage,
                     latency_ms=claims_result.latency_ms + stance.latency_ms,
                     judge_model=stance.model)
