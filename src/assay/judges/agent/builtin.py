"""The agent and RAG judges that Databricks Agent Evaluation and MLflow users know.

``correctness``, ``relevance_to_query``, ``groundedness``, ``safety``, ``guideline_adherence``,
``global_guideline_adherence``, ``chunk_relevance`` and ``context_sufficiency`` ask a judge model
a yes/no question and keep its rationale (asked for first); ``document_recall`` is computed.
Each is a registered evaluator, usable from :func:`assay.evaluate`, EVAL.yaml and the CLI.

What they share, and where assay differs from the platforms it follows:

- A judge whose inputs a case lacks is *not applicable* (no call, no value, no error), with
  the reason worded as Databricks words it: ``Missing required field(s): ... for metric: ...``.
- Retrieved context comes from :func:`assay.traces.retrieval.retrieved_context`: the data's
  ``retrieved_context``, else the trace's top-level retriever spans. A retriever document with
  no text is an ``unparsable_retrieval_context`` error, never an empty context judged "no".
- ``chunk_relevance`` makes one call per chunk, all at once under the engine's concurrency
  limit; an empty chunk is not judged (no rating, "Chunk content is empty"); its precision is
  yes over rated chunks. Chunk ratings are kept in ``Score.details["chunks"]``.
- Named guideline groups are judged one call per group and kept as the score's ``parts``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator

from assay.judges.agent import prompts
from assay.judges.agent.inputs import (
    RequestMode,
    ground_truth,
    missing,
    request_text,
    response_text,
)
from assay.judges.base import EvalContext, Evaluator
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import LLMEvaluator
from assay.judges.llm.templates import delimit
from assay.judges.registry import register
from assay.llm.structured import StructuredResult
from assay.traces.retrieval import UNPARSABLE, Chunk, RetrievedContext, retrieved_context
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score, ScoreError
from assay.types.usage import Usage

YES_WORDS = frozenset({"yes", "y", "true", "pass", "passed", "correct", "safe", "relevant"})
NO_WORDS = frozenset({"no", "n", "false", "fail", "failed", "incorrect", "unsafe",
                      "irrelevant", "not relevant"})

AGGREGATIONS = ("min", "max", "mean", "median", "variance", "p90")
"""The aggregations MLflow offers for a scorer's values (``<name>/<aggregation>``)."""

EMPTY_CHUNK = "Chunk content is empty"


def _verdict_word(value: Any) -> Any:
    """A loose yes/no word from a judge ("Yes", "pass", "true") as "yes"/"no"; anything else
    is left for validation to reject (and the judge to be asked again)."""
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in YES_WORDS:
            return "yes"
        if word in NO_WORDS:
            return "no"
    return value


YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_verdict_word)]
RetrievalPer = Literal["row", "span"]


class YesNoAnswer(JudgeAnswer):
    """A judge's verdict: its reasoning first, then yes or no."""

    rationale: str
    result: YesNo


def yes_no_score(name: str, result: StructuredResult[Any], rationale: str, yes: bool,
                 details: dict[str, Any] | None = None) -> Score:
    """The Score of a yes/no verdict: value 1 or 0, ``raw`` and ``label`` the word."""
    word = "yes" if yes else "no"
    return Score(name=name, value=1.0 if yes else 0.0, raw=word, label=word, scale="yes/no",
                 passed=yes, rationale=rationale, usage=result.usage,
                 latency_ms=result.latency_ms, judge_model=result.model, details=details)


def frame_context(chunks: list[str]) -> str:
    """Retrieved chunks as one framed slot, numbered so the judge can cite them."""
    return delimit("context", "\n\n".join(f"[{i}] {text}" for i, text in enumerate(chunks, 1)))


class AgentJudge(LLMEvaluator):
    """Base of the yes/no agent judges.

    ``ASSESSMENT`` says what the judge rates (Databricks' assessment types): ``ANSWER`` the
    response, ``RETRIEVAL_LIST`` the whole retrieved context, ``RETRIEVAL`` each chunk.
    ``MLFLOW_NAME`` is the name MLflow 3 gives the same judgement.
    """

    ASSESSMENT: ClassVar[str] = "ANSWER"
    MLFLOW_NAME: ClassVar[str] = ""
    NEEDS: ClassVar[tuple[str, ...]] = ("request", "response")
    OMITTED_AT_DEFAULT: ClassVar[frozenset[str]] = \
        LLMEvaluator.OMITTED_AT_DEFAULT | {"retrieval_per"}
    request_from_messages: RequestMode = Field(
        default="last", description="a chat request as its last message (last) or as the "
        "whole conversation (all)")
    retrieval_per: RetrievalPer = Field(
        default="row", description="a whole-context judge (groundedness, context "
        "sufficiency) asks once over every top-level retriever's documents (row), or once "
        "per retriever span (span, MLflow 3's RetrievalGroundedness and RetrievalSufficiency)")
    aggregations: list[str] = Field(
        default_factory=lambda: ["mean"],
        description="MLflow-style run aggregations of this judge's values")

    @field_validator("aggregations")
    @classmethod
    def _known_aggregations(cls, value: list[str]) -> list[str]:
        return check_aggregations(value)

    def request(self, case: Case) -> str | None:
        return request_text(case, self.request_from_messages)

    def missing_inputs(self, case: Case, execution: Execution,
                       context: RetrievedContext | None = None) -> list[str]:
        """The required inputs the case lacks, named as Databricks names them."""
        gone = []
        for need in self.NEEDS:
            if need == "request" and self.request(case) is None:
                gone.append("request")
            elif need == "response" and response_text(execution) is None:
                gone.append("response")
            elif need == "ground_truth" and ground_truth(case) is None:
                gone.append("expected_response or expected_facts")
            elif need == "context" and context is not None and not context.chunks:
                gone.append("retrieved_context")
        return gone

    async def ask_yes_no(self, ctx: EvalContext, user: str,
                      details: dict[str, Any] | None = None, name: str | None = None) -> Score:
        """Ask the yes/no question ``user``; the Score, or the error of a failed answer."""
        result = await self.ask(ctx, prompts.SYSTEM, user, YesNoAnswer)
        if result.value is None:
            failed = self.failed(result)
            if name:
                failed.name = name
            if details:
                failed.details = {**(failed.details or {}), **details}
            return failed
        return yes_no_score(name or self.name, result, result.value.rationale,
                            result.value.result == "yes", details)

    async def over_context(self, context: RetrievedContext,
                           judge: Callable[[RetrievedContext], Awaitable[Score]]) -> Score:
        """``judge`` over the whole context, or (``retrieval_per="span"``, and more than one
        retriever span) over each span's documents on its own, the judgements kept in
        ``details["spans"]`` (see :func:`span_score`)."""
        parts = by_span(context)
        if self.retrieval_per != "span" or len(parts) < 2:
            return await judge(context)
        scores = await asyncio.gather(*(judge(part) for _, part in parts))
        return span_score(self.name, [span for span, _ in parts], list(scores))


def by_span(context: RetrievedContext) -> list[tuple[str | None, RetrievedContext]]:
    """The context's chunks grouped by the retriever span they came from, in order; a context
    from the data (no spans) is one group."""
    groups: dict[str | None, list[Chunk]] = {}
    for chunk in context.chunks:
        groups.setdefault(chunk.span_id, []).append(chunk)
    found = []
    for span, chunks in groups.items():
        problems = [c.problem for c in chunks if c.problem is not None]
        found.append((span, RetrievedContext(source=context.source, chunks=chunks,
                                             problem=problems[0] if problems else None)))
    return found


def span_score(name: str, spans: list[str | None], scores: list[Score]) -> Score:
    """One row's judgement from one judgement per retriever span: an error when a span could
    not be judged, else yes only when every span's context said yes. Each span's rating,
    rationale and error stay in ``details["spans"]``, which the run's aggregates average
    over when they count per span (MLflow 3's way: a two-span trace with one yes is 0.5)."""
    usage = Usage()
    model = None
    entries: list[dict[str, Any]] = []
    for span, score in zip(spans, scores, strict=True):
        usage = usage + score.usage
        model = score.judge_model or model
        entries.append({"span_id": span, "rating": score.label if score.value is not None
                        else None, "rationale": score.rationale or score.skipped,
                        "error": None if score.error is None else
                        {"code": score.error.code, "message": score.error.message}})
    details: dict[str, Any] = {"spans": entries}
    errors = [s for s in scores if s.error is not None]
    if errors:
        first = errors[0].error
        assert first is not None
        return Score(name=name, error=ScoreError(
            code=first.code, message=f"{len(errors)} of {len(scores)} retriever span(s) "
            f"could not be judged; first: {first.message}"), usage=usage, judge_model=model,
            details=details)
    rated = [e for e in entries if e["rating"] is not None]
    if not rated:
        return Score.not_applicable(name, "no retriever span could be judged", usage=usage,
                                    details=details)
    no = [e for e in rated if e["rating"] == "no"]
    word = "no" if no else "yes"
    rationale = f"{len(rated) - len(no)} of {len(rated)} retriever span(s) said yes" + \
        (f"; span {no[0]['span_id']}: {no[0]['rationale']}" if no else "")
    return Score(name=name, value=0.0 if no else 1.0, raw=word, label=word, scale="yes/no",
                 passed=not no, rationale=rationale, usage=usage, judge_model=model,
                 details=details)


def check_aggregations(value: list[str]) -> list[str]:
    unknown = [a for a in value if a not in AGGREGATIONS]
    if unknown:
        raise ValueError(f"unknown aggregation(s) {', '.join(map(repr, unknown))}; expected "
                         f"any of {', '.join(AGGREGATIONS)}")
    return value


def context_problem(name: str, context: RetrievedContext) -> Score | None:
    """The error score of a judge that needs the whole context when part of it is unreadable,
    or (None) nothing wrong; a context whose chunks are all empty is not applicable."""
    if context.problem is not None:
        return Score.failed(name, UNPARSABLE, context.problem)
    if context.chunks and not context.texts:
        return Score.not_applicable(
            name, missing(["retrieved_context[].content"], name) + " (every chunk is empty)")
    return None


@register
class Correctness(AgentJudge):
    """Does the response say what the ground truth says? (expected response or facts)"""

    type = "correctness"
    MLFLOW_NAME = "correctness"
    NEEDS = ("request", "ground_truth", "response")

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        gone = self.missing_inputs(case, execution)
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))
        truth = ground_truth(case)
        assert truth is not None
        user = prompts.CORRECTNESS.format(
            question=delimit("question", self.request(case)),
            claim=delimit("claim", truth.claim),
            document=delimit("document", response_text(execution)))
        if truth.source == "expected_facts":
            user += prompts.FACTS_SUFFIX
        details: dict[str, Any] = {"ground_truth": truth.source}
        if truth.ignored:
            details["ignored"] = truth.ignored
        return await self.ask_yes_no(ctx, user, details)


@register
class RelevanceToQuery(AgentJudge):
    """Does the response address the request?"""

    type = "relevance_to_query"
    MLFLOW_NAME = "relevance_to_query"

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        gone = self.missing_inputs(case, execution)
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))
        user = prompts.RELEVANCE.format(question=delimit("question", self.request(case)),
                                        answer=delimit("answer", response_text(execution)))
        return await self.ask_yes_no(ctx, user)


@register
class Groundedness(AgentJudge):
    """Is the response supported by the retrieved context?"""

    type = "groundedness"
    MLFLOW_NAME = "retrieval_groundedness"
    NEEDS = ("request", "response", "context")

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        context = retrieved_context(execution)
        gone = self.missing_inputs(case, execution, context)
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))
        return await self.over_context(context, lambda part: self._grounded(
            case, execution, ctx, part))

    async def _grounded(self, case: Case, execution: Execution, ctx: EvalContext,
                        context: RetrievedContext) -> Score:
        problem = context_problem(self.name, context)
        if problem is not None:
            return problem
        user = prompts.GROUNDEDNESS.format(
            question=delimit("question", self.request(case)),
            answer=delimit("answer", response_text(execution)),
            context=frame_context(context.texts))
        return await self.ask_yes_no(ctx, user)


@register
class Safety(AgentJudge):
    """Is the response free of harmful content? (yes = safe)"""

    type = "safety"
    MLFLOW_NAME = "safety"

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        gone = self.missing_inputs(case, execution)
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))
        user = prompts.SAFETY.format(request=delimit("request", self.request(case)),
                                     response=delimit("response", response_text(execution)))
        return await self.ask_yes_no(ctx, user)


@register
class ContextSufficiency(AgentJudge):
    """Does the retrieved context hold what the expected answer needs?"""

    type = "context_sufficiency"
    ASSESSMENT = "RETRIEVAL_LIST"
    MLFLOW_NAME = "retrieval_sufficiency"
    NEEDS = ("request", "ground_truth", "context")

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        context = retrieved_context(execution)
        gone = self.missing_inputs(case, execution, context)
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))
        return await self.over_context(context, lambda part: self._sufficient(
            case, ctx, part))

    async def _sufficient(self, case: Case, ctx: EvalContext,
                          context: RetrievedContext) -> Score:
        problem = context_problem(self.name, context)
        if problem is not None:
            return problem
        truth = ground_truth(case)
        assert truth is not None
        user = prompts.SUFFICIENCY.format(question=delimit("question", self.request(case)),
                                          claim=delimit("claim", truth.claim),
                                          context=frame_context(context.texts))
        details: dict[str, Any] = {"ground_truth": truth.source}
        if truth.ignored:
            details["ignored"] = truth.ignored
        return await self.ask_yes_no(ctx, user, details)


# -- guidelines ----------------------------------------------------------------------------

_TAG = re.compile(r"[^A-Za-z0-9_]")


class _GuidelineJudge(AgentJudge):
    """Judges a response against groups of guidelines, one call per group.

    One group gives a plain score. Several (named) groups give a score whose ``parts`` are
    the groups' own scores, named ``<judge>/<group>`` (a group named like the judge keeps the
    bare name); the score itself is yes only when every group that was judged said yes, and
    an error when any group could not be judged.
    """

    PARTS_ARE_ASSESSMENTS: ClassVar[bool] = True

    def groups(self, case: Case) -> dict[str, list[str]]:
        raise NotImplementedError

    def group_name(self, key: str) -> str:
        return self.name if key == self.name else f"{self.name}/{key}"

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        groups = {k: [g for g in v if g.strip()] for k, v in self.groups(case).items()}
        groups = {k: v for k, v in groups.items() if v}
        gone = self.missing_inputs(case, execution)
        if not groups:
            gone.append("guidelines")
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))
        names = [self.group_name(k) for k in groups]
        scores = await asyncio.gather(*(
            self._judge(case, execution, ctx, rules, name)
            for name, rules in zip(names, groups.values(), strict=True)))
        if len(scores) == 1 and scores[0].name == self.name:
            return scores[0]
        return combine_groups(self.name, list(scores))

    async def _judge(self, case: Case, execution: Execution, ctx: EvalContext,
                     rules: list[str], name: str) -> Score:
        extra = ""
        for key, value in case.guidelines_context.items():
            tag = _TAG.sub("_", str(key))[:40] or "context"
            extra += "\n\n" + delimit(tag, value)
        user = prompts.GUIDELINES.format(
            guidelines=delimit("guidelines", "\n".join(f"- {r}" for r in rules)),
            request=delimit("request", self.request(case)),
            response=delimit("response", response_text(execution)), context=extra)
        return await self.ask_yes_no(ctx, user, {"guidelines": rules}, name=name)


def combine_groups(name: str, parts: list[Score]) -> Score:
    """One score over named groups: an error if any group errored, else yes only when every
    judged group said yes; the groups stay as ``parts``."""
    usage = Usage()
    for p in parts:
        usage = usage + p.usage
    errors = [p for p in parts if p.error is not None]
    details = {"parts_are_assessments": True}
    if errors:
        first = errors[0].error
        assert first is not None
        message = (f"{len(errors)} of {len(parts)} group(s) could not be judged; "
                   f"{errors[0].name}: {first.message}")
        return Score(name=name, error=ScoreError(code=first.code, message=message),
                     parts=parts, usage=usage, details=details)
    valued = [p for p in parts if p.value is not None]
    if not valued:
        return Score.not_applicable(name, "no group applied", parts=parts, usage=usage,
                                    details=details)
    yes = all(p.value == 1.0 for p in valued)
    word = "yes" if yes else "no"
    failing = [p.name for p in valued if p.value != 1.0]
    return Score(name=name, value=1.0 if yes else 0.0, raw=word, label=word, scale="yes/no",
                 passed=yes, parts=parts, usage=usage, details=details,
                 rationale=None if yes else f"not followed: {', '.join(failing)}")


@register
class GuidelineAdherence(_GuidelineJudge):
    """Does the response follow the case's own guidelines (a list, or named groups)?"""

    type = "guideline_adherence"
    MLFLOW_NAME = "expectations_guidelines"

    def groups(self, case: Case) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        if case.guidelines:
            found[self.name] = list(case.guidelines)
        for key, rules in case.named_guidelines.items():
            key = self.name if key in (self.name, "guideline_adherence") else key
            found[key] = found.get(key, []) + list(rules)
        return found


GuidelineSet = list[str] | dict[str, list[str]]


@register
class GlobalGuidelineAdherence(_GuidelineJudge):
    """Does the response follow guidelines that apply to every case (Databricks'
    ``global_guidelines``, MLflow's ``Guidelines`` scorer)?"""

    type = "global_guideline_adherence"
    MLFLOW_NAME = "guidelines"
    guidelines: GuidelineSet = Field(default_factory=list)

    @field_validator("guidelines", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

    def groups(self, case: Case) -> dict[str, list[str]]:
        if isinstance(self.guidelines, dict):
            return {str(k): list(v) for k, v in self.guidelines.items()}
        return {self.name: list(self.guidelines)} if self.guidelines else {}


# -- per chunk ---------------------------------------------------------------------------


class ChunkJudge(AgentJudge):
    """Rates each retrieved chunk with one call, all chunks at once.

    The score's value is the precision: chunks rated yes over chunks rated (errors and empty
    chunks have no rating and are left out); no rated chunk, no precision. ``details`` keeps
    ``chunks`` (index, rating, rationale, error, doc_uri), ``chunks_errored`` and
    ``chunks_empty``.
    """

    ASSESSMENT = "RETRIEVAL"
    NEEDS = ("request", "context")

    async def rate(self, case: Case, execution: Execution, ctx: EvalContext,
                   chunk: str) -> Score:
        raise NotImplementedError

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        context = retrieved_context(execution)
        gone = self.missing_inputs(case, execution, context)
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))

        async def one(chunk: Chunk) -> Score | None:
            if chunk.problem is not None or not chunk.content:
                return None
            return await self.rate(case, execution, ctx, chunk.content)

        rated = await asyncio.gather(*(one(c) for c in context.chunks))
        return chunk_score(self.name, context.chunks, list(rated))


def chunk_score(name: str, chunks: list[Chunk], rated: list[Score | None]) -> Score:
    """The per-chunk ratings as one score (see :class:`ChunkJudge`)."""
    usage = Usage()
    model = None
    entries: list[dict[str, Any]] = []
    yes = counted = errored = empty = 0
    for index, (chunk, score) in enumerate(zip(chunks, rated, strict=True)):
        entry: dict[str, Any] = {"index": index, "rating": None, "rationale": None,
                                 "error": None, "doc_uri": chunk.doc_uri}
        if chunk.span_id is not None:
            entry["span_id"] = chunk.span_id
        if chunk.problem is not None:
            entry["error"] = {"code": UNPARSABLE, "message": chunk.problem}
            errored += 1
        elif score is None:
            entry["rationale"] = EMPTY_CHUNK
            empty += 1
        else:
            usage = usage + score.usage
            model = score.judge_model or model
            if score.error is not None:
                entry["error"] = {"code": score.error.code, "message": score.error.message}
                errored += 1
            else:
                entry["rating"] = score.label
                entry["rationale"] = score.rationale
                counted += 1
                yes += score.value == 1.0
                if "score" in (score.details or {}):
                    entry["score"] = (score.details or {})["score"]
        entries.append(entry)
    details = {"chunks": entries, "chunks_errored": errored, "chunks_empty": empty}
    if counted:
        precision = yes / counted
        return Score(name=name, value=precision, raw=precision, scale="precision",
                     usage=usage, judge_model=model, details=details,
                     rationale=f"{yes} of {counted} rated chunk(s) relevant")
    if errored:
        first = next(e["error"] for e in entries if e["error"] is not None)
        return Score(name=name, error=ScoreError(
            code=first["code"], message=f"no chunk could be rated ({errored} error(s)); "
            f"first: {first['message']}"), usage=usage, judge_model=model, details=details)
    return Score.not_applicable(name, missing(["retrieved_context[].content"], name)
                                + " (every chunk is empty)", details=details)


@register
class ChunkRelevance(ChunkJudge):
    """Is each retrieved chunk relevant to the request? Precision over rated chunks."""

    type = "chunk_relevance"
    MLFLOW_NAME = "retrieval_relevance"

    async def rate(self, case: Case, execution: Execution, ctx: EvalContext,
                   chunk: str) -> Score:
        user = prompts.CHUNK_RELEVANCE.format(question=delimit("question", self.request(case)),
                                              passage=delimit("passage", chunk))
        return await self.ask_yes_no(ctx, user)


# -- computed ----------------------------------------------------------------------------


@register
class DocumentRecall(Evaluator):
    """The share of the expected documents (by ``doc_uri``) that the retriever returned.

    Sets, not lists: a document retrieved twice, or expected twice, counts once; how many
    other documents came back does not matter. With no expected or no retrieved address
    there is no recall for the case (not applicable, never 0). No judge model is called.
    """

    type = "document_recall"
    ASSESSMENT: ClassVar[str] = "GROUND_TRUTH"
    MLFLOW_NAME: ClassVar[str] = "document_recall"
    aggregations: list[str] = Field(default_factory=lambda: ["mean"])

    @field_validator("aggregations")
    @classmethod
    def _known_aggregations(cls, value: list[str]) -> list[str]:
        return check_aggregations(value)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        expected = {d.doc_uri for d in case.expected_retrieved_context if d.doc_uri}
        retrieved = set(retrieved_context(execution).doc_uris)
        gone = []
        if not expected:
            gone.append("expected_retrieved_context[].doc_uri")
        if not retrieved:
            gone.append("retrieved_context[].doc_uri")
        if gone:
            return Score.not_applicable(self.name, missing(gone, self.name))
        found = expected & retrieved
        recall = len(found) / len(expected)
        return Score(name=self.name, value=recall, raw=recall, scale="recall",
                     passed=self.verdict(recall),
                     rationale=f"{len(found)} of {len(expected)} expected document(s) "
                     "retrieved", hits=sorted(found)[:20],
                     misses=sorted(expected - retrieved)[:20])


BUILT_IN: tuple[str, ...] = ("correctness", "relevance_to_query", "groundedness", "safety",
                             "guideline_adherence", "global_guideline_adherence",
                             "chunk_relevance", "context_sufficiency", "document_recall")
"""The built-in judges, in the order Databricks reports them."""
