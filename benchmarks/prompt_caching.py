"""How much of each built-in judge's prompt a provider's prompt cache can reuse, and what that
saves on a 1,000-case run at published prices.

Each built-in LLM judge judges the same few generated cases (different questions, answers,
references, retrieved context and tool calls) through a recording service; nothing is sent
anywhere. For every judge the script sets the requests of the cases side by side as a provider
sees them (the structured-output schema, then each message's role and text, in order) and finds
the part every case shares from the first byte: the shared prefix, which OpenAI's automatic
prefix caching and an Anthropic ``cache_control`` breakpoint can reuse from the second case on.

Tokens are counted as characters / 4 (no tokenizer is installed); prices are the current ones
of the maintained table (genai-prices), per million tokens. A provider caches only a prefix of
at least its minimum (OpenAI: 1,024 tokens, then in steps of 128; Anthropic: 1,024 tokens for
Sonnet, 4,096 for Haiku 4.5 and Opus 4.5), so a judge whose shared prefix is shorter saves
nothing however it is ordered. Anthropic bills writing the prefix to its cache at 1.25 times
the prompt rate: once per five minutes of run here (the cache's lifetime), one write for the
run. Output tokens are the judge's answer (about 60 tokens for every judge here). The last
column of each model is the same run through the providers' batch APIs (``assay run
--batch``): every call at half the live price.

::

    python benchmarks/prompt_caching.py
    python benchmarks/prompt_caching.py --cases 1000 --models openai:gpt-4o-mini,anthropic:claude-sonnet-4-5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table

from assay.judges.base import EvalContext
from assay.judges.registry import build
from assay.llm.batch import BATCH_PRICE_FACTOR
from assay.llm.engine import JudgeEngine
from assay.llm.pricing import PriceSource, published_price
from assay.llm.providers.custom import register_service
from assay.llm.providers.scripted import answer
from assay.types.case import Case
from assay.types.engine_config import EngineConfig
from assay.types.execution import Execution

JUDGES: dict[str, dict[str, Any]] = {
    "semantic_similarity": {},
    "strict_json_similarity": {"json": True},
    "llm_judge": {},
    "rubric": {"rubrics": [
        {"id": "accurate", "outcome": "The answer states the correct facts", "weight": 2},
        {"id": "complete", "outcome": "The answer covers every part of the question"},
        {"id": "concise", "outcome": "The answer has no filler"}]},
    "rating": {},
    "pairwise": {},
    "llm_judge_trajectory": {"expected_agent_behavior": "It searches, then answers."},
    "llm_judge_trajectory_simulation": {"expected_agent_behavior": "It searches, then answers."},
    "context_precision": {},
    "faithfulness": {},
    "connexity_judge": {},
    "correctness": {},
    "relevance_to_query": {},
    "groundedness": {},
    "safety": {},
    "context_sufficiency": {},
    "chunk_relevance": {},
    "guideline_adherence": {},
    "global_guideline_adherence": {"guidelines": ["Answer politely", "Cite the source"]},
    "custom_judge": {"instructions": "Is {{ response }} a good answer to {{ request }}?"},
    "make_judge": {"instructions": "Is {{ outputs }} a good answer to {{ inputs }}?"},
    "conversation_completeness": {},
    "knowledge_retention": {},
    "user_frustration": {},
}
"""Every built-in LLM judge, with the least configuration it needs (``json``: the cases' answers
and references are JSON objects)."""

MINIMUM_TOKENS = {"openai": 1024, "anthropic-sonnet": 1024, "anthropic-haiku": 4096}
OUTPUT_TOKENS = 60


def cases(n: int, as_json: bool = False) -> list[tuple[Case, Execution]]:
    """``n`` different cases, each with everything some judge reads (``as_json``: the answer
    and the reference are JSON objects whose values differ)."""
    subjects = ["the capital of France", "the boiling point of water", "who wrote Hamlet",
                "the speed of light", "the largest planet", "the year the Berlin wall fell"]
    made = []
    for i in range(n):
        subject = subjects[i % len(subjects)]
        question = f"Question {i}: what is {subject}? Answer briefly and cite a source."
        context = [f"Document {i}.{k}: a passage about {subject}, version {k}." for k in range(3)]
        expected: Any = f"The reference answer about {subject} ({i})."
        output = f"My answer {i}: {subject} is well known; see document {i}.0."
        if as_json:
            expected = {"answer": expected, "source": f"document {i}.1"}
            output = json.dumps({"answer": output, "source": f"document {i}.0"})
        case = Case(id=f"c{i}", input=question, expected_output=expected,
                    guidelines=["Answer politely", "Cite the source"],
                    metadata={"retrieved_context": context})
        execution = Execution(
            input=question, output=output, retrieved_context=context,
            messages=[{"role": "user", "content": question},
                      {"role": "assistant", "content": "",
                       "tool_calls": [{"id": f"t{i}", "type": "function", "function": {
                           "name": "search", "arguments": json.dumps({"q": subject})}}]},
                      {"role": "tool", "tool_call_id": f"t{i}", "content": context[0]},
                      {"role": "assistant", "content": output}])
        made.append((case, execution))
    return made


def prompt_parts(request: dict[str, Any]) -> list[str]:
    """A request as the provider reads it, in order: the schema asked for (response format
    or forced tool), then each message's role and text."""
    parts = []
    fmt = request.get("response_format")
    if fmt:
        parts.append(json.dumps(fmt, sort_keys=True))
    for tool in request.get("tools") or []:
        parts.append(json.dumps(tool, sort_keys=True))
    for message in request["messages"]:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        parts.append(f"<{message['role']}>{text}")
    return parts


def shared_prefix(texts: list[str]) -> int:
    """Characters every text shares from its first."""
    first = texts[0]
    length = len(first)
    for other in texts[1:]:
        i = 0
        limit = min(length, len(other))
        while i < limit and first[i] == other[i]:
            i += 1
        length = i
    return length


@dataclass
class JudgePrompt:
    judge: str
    requests: int
    prompt_chars: float
    prefix_chars: int
    problem: str = ""

    @property
    def prompt_tokens(self) -> float:
        return self.prompt_chars / 4

    @property
    def prefix_tokens(self) -> float:
        return self.prefix_chars / 4

    @property
    def share(self) -> float:
        return self.prefix_chars / self.prompt_chars if self.prompt_chars else 0.0


async def measure(judge: str, config: dict[str, Any], n: int) -> JudgePrompt:
    """Judge ``n`` cases with ``judge``; its first request of each case, side by side."""
    seen: list[dict[str, Any]] = []

    async def service(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return answer(request)

    model = register_service(f"prompt-caching-{judge}", service)
    engine = JudgeEngine(EngineConfig(default_model=model, cache_mode="off"))
    as_json = bool(config.get("json"))
    evaluator = build({"type": judge, **{k: v for k, v in config.items() if k != "json"}})
    first: list[str] = []
    try:
        for case, execution in cases(n, as_json):
            before = len(seen)
            await evaluator.evaluate(case, execution, EvalContext(engine))
            if len(seen) > before:
                first.append("".join(prompt_parts(seen[before])))
    finally:
        await engine.aclose()
    if len(first) < 2:
        return JudgePrompt(judge, len(seen), 0.0, 0, "made fewer than two requests")
    return JudgePrompt(judge, len(seen), sum(map(len, first)) / len(first),
                       shared_prefix(first))


def cached_tokens(prefix_tokens: float, minimum: int, step: int) -> float:
    """How many prompt tokens a provider reads from its cache for a prefix of that length."""
    if prefix_tokens < minimum:
        return 0.0
    return minimum + (prefix_tokens - minimum) // step * step


def run_cost(prompt: JudgePrompt, model: str, cases_run: int) -> tuple[str, str, str, str]:
    """(without caching, with caching, saved, through the batch API) for ``cases_run`` cases
    at ``model``'s price. A batched call is billed at ``BATCH_PRICE_FACTOR`` of the live
    price (``assay run --batch``; the prompt cache is not counted on, as the providers apply
    it to batches on a best-effort basis only)."""
    provider, _, name = model.partition(":")
    price = published_price(name, PriceSource(provider_id=provider))
    if price is None:
        return "unknown", "unknown", "-", "unknown"
    calls = cases_run * max(1, round(prompt.requests / max(1, OPTIONS.cases)))
    tokens = prompt.prompt_tokens
    plain = calls * price.cost(round(tokens), OUTPUT_TOKENS)
    if provider == "anthropic":
        minimum = MINIMUM_TOKENS["anthropic-haiku" if "haiku" in name else "anthropic-sonnet"]
        cached = cached_tokens(prompt.prefix_tokens, minimum, 1)
        written = price.cost(round(tokens), OUTPUT_TOKENS, 0, round(cached) if cached else 0)
        later = price.cost(round(tokens), OUTPUT_TOKENS, round(cached))
        with_cache = written + (calls - 1) * later
    else:
        cached = cached_tokens(prompt.prefix_tokens, MINIMUM_TOKENS["openai"], 128)
        with_cache = price.cost(round(tokens), OUTPUT_TOKENS) + (calls - 1) * price.cost(
            round(tokens), OUTPUT_TOKENS, round(cached))
    return (f"${plain:.3f}", f"${with_cache:.3f}", f"{1 - with_cache / plain:.0%}",
            f"${plain * BATCH_PRICE_FACTOR:.3f}")


OPTIONS = argparse.Namespace(cases=6)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=6, help="cases each judge sees")
    parser.add_argument("--run-cases", type=int, default=1000, help="cases priced")
    parser.add_argument("--models", default="openai:gpt-4o-mini,anthropic:claude-sonnet-4-5")
    parser.add_argument("--judges", default=",".join(JUDGES))
    args = parser.parse_args(argv, namespace=OPTIONS)
    os.environ.pop("ASSAY_PRICES", None)
    models = [m for m in args.models.split(",") if m]
    rows = []
    for judge in [j for j in args.judges.split(",") if j]:
        try:
            found = asyncio.run(measure(judge, JUDGES.get(judge, {}), args.cases))
        except Exception as exc:  # a judge that cannot run here is a row that says why
            rows.append([judge, "-", "-", "-", "-", f"FAILED: {type(exc).__name__}: {exc}"]
                        + ["-"] * 4 * len(models))
            continue
        costs = [cell for m in models for cell in run_cost(found, m, args.run_cases)]
        rows.append([judge, f"{found.requests / args.cases:g}", f"{found.prompt_tokens:.0f}",
                     f"{found.prefix_tokens:.0f}", f"{found.share:.0%}", found.problem,
                     *costs])
    headers = ["judge", "requests/case", "prompt tokens", "shared prefix tokens",
               "shared share", "note"]
    for m in models:
        headers += [f"{m}: {args.run_cases} cases", "with caching", "saved", "with --batch"]
    print(markdown_table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
