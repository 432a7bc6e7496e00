"""Structured judge output: ask for a schema the strongest way, validate, re-ask, or say why not.

The request uses the provider's strongest mode (``response_format`` JSON schema, else a forced
tool call, else the schema in the prompt with lenient JSON extraction) and steps down a mode
when a server refuses the stronger one. A judge may ask for ``strict`` output: the JSON schema
is then sent with ``"strict": true`` in the form strict decoding requires (:func:`strict_schema`:
every property required, no other property, no defaults), as Connexity's judge sends it. The answer is validated with pydantic, ranges included;
an invalid answer is re-asked with the validation error at most ``reasks`` times. After that
the result is an error (``judge_output_invalid``) that keeps the raw text: never a silent 0.

Only an answer that validated is cached, so a re-run (``--retry-errors``) asks again where the
judge failed before; a cached answer that no longer validates is dropped and asked for afresh.
What is echoed back in a re-ask and what is kept of a raw answer are bounded in size.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from assay._util import jsondata
from assay._util.jsondata import DuplicateKey, UniqueDecoder
from assay.llm.engine import JudgeEngine
from assay.llm.providers.base import StructuredMode
from assay.llm.types import (
    ChatRequest,
    ChatResult,
    ProviderError,
    RequestRejected,
    RetriesExhausted,
)
from assay.types.score import ScoreError
from assay.types.usage import Usage

T = TypeVar("T", bound=BaseModel)

_MODES: tuple[StructuredMode, ...] = ("json_schema", "tools", "prompt")
_FENCE = re.compile(r"```(?:json)?(.*?)```", re.S)
"""A fenced block. No ``\\s*`` before the body: it and the lazy body both match whitespace,
so an opening fence followed by a long run of it and no closing fence took quadratic time
(a minute for 100,000 spaces, with the event loop blocked); the body is stripped instead."""
_OBJECT_START = re.compile(r"\{(?=\s*[\"}])")
"""Where a JSON object can start: ``{`` before a key or a ``}``, as the decoder requires."""
MAX_OBJECT_STARTS = 100
"""How many such places the lenient search tries in one candidate. Each try may read to the
end of the text or down to the decoder's recursion limit, so an answer of nested ``{"a":``
without end took seconds per 100 KB; an answer whose object is not among the first hundred
is asked for again."""
REASK_ECHO_CHARS = 4000
"""How much of an invalid answer a re-ask quotes back: enough to correct it, never a flood."""
RAW_KEPT_CHARS = 8000
"""How much of a raw answer an error keeps (in the score's details, the store, the files)."""


@dataclass
class StructuredResult(Generic[T]):
    """A validated answer, or the error that explains why there is none."""

    value: T | None
    raw_text: str
    error: ScoreError | None
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    model: str = ""
    asks: int = 0
    logprobs: list[dict[str, Any]] | None = None
    """The answer's token log-probabilities (``choices[0].logprobs.content``), when they were
    asked for and the provider returned them; None otherwise."""


async def ask_structured(
    engine: JudgeEngine,
    messages: list[dict[str, Any]],
    schema: type[T],
    *,
    model: str | None = None,
    name: str = "evaluation_response",
    temperature: float = 0.0,
    max_tokens: int | None = None,
    seed: int | None = None,
    sample: int = 0,
    tool_name: str | None = None,
    top_logprobs: int | None = None,
    strict: bool = False,
) -> StructuredResult[T]:
    """Get an instance of ``schema`` from the judge model, within the engine's rules.

    ``sample`` numbers independent draws of the same question (repeats of a case); each is
    called and cached on its own. ``name`` names the JSON schema of a ``response_format``
    request, ``tool_name`` (default: ``name``) the function of a forced tool call.
    ``top_logprobs`` asks for the log-probabilities of that many alternatives at each token
    of the answer (where the provider offers them). ``strict`` sends the JSON schema with
    ``"strict": true`` (see :func:`strict_schema`); the answer is validated the same way.
    """
    provider = engine.resolve(model)
    shown = provider.spec.display
    json_schema = json_schema_of(schema, strict)
    conversation = [dict(m) for m in messages]
    spent: list[Usage] = []  # per ask, summed once at the end
    started = time.perf_counter()
    raw_text = ""
    problem = ""
    asks = 0
    dropped = 0
    while asks < engine.config.reasks + 1:
        asks += 1
        try:
            result = await _ask_any_mode(engine, provider.spec.name, conversation, json_schema,
                                         name, temperature, max_tokens, seed, sample,
                                         tool_name, top_logprobs, strict)
        except ProviderError as exc:
            if isinstance(exc, RetriesExhausted):  # the failed attempts are accounted too
                spent.append(Usage(retries=max(0, exc.attempts - 1)))
            return StructuredResult(
                None, _kept(engine, raw_text), ScoreError(code=exc.code, message=str(exc)),
                Usage.total(spent), (time.perf_counter() - started) * 1000, shown, asks)
        spent.append(_usage_of(result))
        raw_text, payload = _payload(result)
        try:
            if result.finish_reason() == "length":
                raise ValueError("the answer was cut off at max_tokens")
            value = schema.model_validate(payload if payload is not None else
                                          extract_json(raw_text))
        except (ValueError, ValidationError) as exc:
            problem = _describe(exc)
            if result.stats.cached and dropped <= engine.config.reasks:
                # Cached before answers were checked, or checked against another schema:
                # drop it and ask the model itself, without spending a re-ask on it.
                engine.forget(result)
                dropped += 1
                asks -= 1
                continue
        else:
            engine.remember(result)
            return StructuredResult(value, raw_text, None, Usage.total(spent),
                                    (time.perf_counter() - started) * 1000, shown, asks,
                                    _logprobs(result) if top_logprobs else None)
        conversation = [*conversation, {"role": "assistant",
                                        "content": bounded(raw_text, REASK_ECHO_CHARS)},
                        {"role": "user", "content": _reask(problem, json_schema)}]
    return StructuredResult(
        None, _kept(engine, raw_text),
        ScoreError(code="judge_output_invalid",
                   message=engine.scrub(f"judge output invalid after {asks} asks: {problem}")),
        Usage.total(spent), (time.perf_counter() - started) * 1000, shown, asks)


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters not shown]"


def _kept(engine: JudgeEngine, raw_text: str) -> str:
    """What an error keeps of a raw answer: bounded, with any known secret hidden."""
    return engine.scrub(bounded(raw_text, RAW_KEPT_CHARS)) if raw_text else ""


async def _ask_any_mode(engine: JudgeEngine, model: str, messages: list[dict[str, Any]],
                        json_schema: dict[str, Any], name: str, temperature: float,
                        max_tokens: int | None, seed: int | None, sample: int,
                        tool_name: str | None = None,
                        top_logprobs: int | None = None, strict: bool = False) -> ChatResult:
    provider = engine.resolve(model)
    while True:
        mode = provider.structured_mode
        request = build_request(mode, provider.spec.model, messages, json_schema, name,
                                temperature, max_tokens, seed, tool_name,
                                top_logprobs=top_logprobs, strict=strict)
        try:
            return await engine.chat(request, model, sample=sample, remember=False)
        except RequestRejected as exc:
            text = str(exc).lower()
            refused = ("response_format" in text or "json_schema" in text or "tool" in text)
            if not refused or mode == "prompt":
                raise
            provider.structured_mode = _MODES[_MODES.index(mode) + 1]


@functools.lru_cache(maxsize=512)
def json_schema_of(schema: type[BaseModel], strict: bool = False) -> dict[str, Any]:
    """A model's JSON schema (in strict form with ``strict``), built once per class
    (building it costs more than a call's whole HTTP round trip). Callers must treat the
    result as read-only."""
    found = schema.model_json_schema()
    return strict_schema(found) if strict else found


def strict_schema(schema: Any) -> Any:
    """``schema`` as strict structured output takes it: every object lists all its
    properties as required and allows no other (``additionalProperties: false``), and no
    ``default`` is given (an optional field is still nullable where its type says so). The
    answer is validated by the model as before, so nothing it accepts changes."""
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    found = {k: strict_schema(v) for k, v in schema.items() if k != "default"}
    if found.get("type") == "object" and isinstance(found.get("properties"), dict):
        found["required"] = list(found["properties"])
        found["additionalProperties"] = False
    return found


def build_request(mode: StructuredMode, model: str, messages: list[dict[str, Any]],
                  json_schema: dict[str, Any], name: str, temperature: float,
                  max_tokens: int | None, seed: int | None,
                  tool_name: str | None = None, *,
                  top_logprobs: int | None = None, strict: bool = False) -> ChatRequest:
    """The chat request that asks for ``json_schema`` in the given mode (``tool_name``, when
    given, names the function of a forced tool call instead of ``name``; ``strict`` marks a
    ``response_format`` schema ``"strict": true``)."""
    request: ChatRequest = {"model": model, "messages": messages, "temperature": temperature}
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    if seed is not None:
        request["seed"] = seed
    if top_logprobs:
        request["logprobs"] = True
        request["top_logprobs"] = top_logprobs
    if mode == "json_schema":
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": json_schema,
                            **({"strict": True} if strict else {})},
        }
    elif mode == "tools":
        function = tool_name or name
        request["tools"] = [{"type": "function", "function": {
            "name": function, "description": "Submit the evaluation.",
            "parameters": json_schema}}]
        request["tool_choice"] = {"type": "function", "function": {"name": function}}
    else:
        instruction = ("Respond with only a JSON object, no other text, that matches this "
                       f"JSON schema:\n{json.dumps(json_schema)}")
        request["messages"] = _with_instruction(messages, instruction)
    return request


def _with_instruction(messages: list[dict[str, Any]], instruction: str
                      ) -> list[dict[str, Any]]:
    """``messages`` with ``instruction`` at the end of the leading system message (a new one
    when there is none): before the case's data, with the rest of what every case shares,
    so a provider's prompt cache can reuse it (see :mod:`assay.llm.prompt_cache`)."""
    first = messages[0] if messages else None
    if first is not None and first.get("role") == "system" and isinstance(
            first.get("content"), str):
        return [{**first, "content": f"{first['content']}\n\n{instruction}"}, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def extract_json(text: str) -> Any:
    """The first JSON object in ``text``: fenced, bare, or surrounded by prose.

    An object that names a key twice (``{"score": 5, "score": 1}``) is ambiguous, not the
    last value: :class:`~assay._util.jsondata.DuplicateKey` (a ValueError naming the key), so
    the answer is asked for again and then is an error, never a verdict.

    Bounded in time whatever the text: linear in its length, with at most
    :data:`MAX_OBJECT_STARTS` places tried per candidate. Nesting deeper than the decoder can
    go is no object (a ValueError, as for any other text that holds none)."""
    try:
        return jsondata.loads_unique(text)  # the common case: the whole answer is the JSON
    except DuplicateKey:
        raise
    except ValueError:
        pass
    stripped = text.strip()
    fenced = _FENCE.search(stripped)
    candidates = [fenced.group(1).strip()] if fenced else []
    candidates.append(stripped)
    decoder = UniqueDecoder(strict=False)  # tolerate raw newlines inside strings
    for candidate in candidates:
        try:
            return decoder.decode(candidate)
        except DuplicateKey:
            raise
        except (ValueError, RecursionError):
            pass
        for start in itertools.islice(_OBJECT_START.finditer(candidate), MAX_OBJECT_STARTS):
            try:
                value, _ = decoder.raw_decode(candidate, start.start())
                return value
            except DuplicateKey:
                raise
            except (ValueError, RecursionError):  # the decoder recurses: no object here
                continue
    raise ValueError(f"no JSON object found in the answer: {text[:200]!r}")


def _payload(result: ChatResult) -> tuple[str, Any]:
    """The answer's text and, when a tool call carried parsed arguments, those arguments.

    A tool call's arguments are read from ``function.arguments`` (OpenAI) or from
    ``arguments`` on the call itself (the shape UiPath's LLM gateway returns), as a JSON
    string or an already parsed object.
    """
    message = result.message()
    calls = message.get("tool_calls") or []
    if calls and isinstance(calls[0], dict):
        call = calls[0]
        function = call.get("function")
        args = function.get("arguments") if isinstance(function, dict) else \
            call.get("arguments")
        if isinstance(args, dict):
            return json.dumps(args), args
        return str(args or ""), None
    return result.text(), None


def _logprobs(result: ChatResult) -> list[dict[str, Any]] | None:
    """``choices[0].logprobs.content`` of a response, when it is a list; else None (a
    provider that ignores the request, or an answer given as a tool call)."""
    choices = result.response.get("choices") or []
    found = choices[0].get("logprobs") if choices and isinstance(choices[0], dict) else None
    content = found.get("content") if isinstance(found, dict) else None
    if not isinstance(content, list) or result.message().get("tool_calls"):
        return None
    return [token for token in content if isinstance(token, dict)]


def _usage_of(result: ChatResult) -> Usage:
    stats = result.stats
    if stats.cached:
        return Usage(cached_calls=1, cost=0.0)
    return Usage(calls=1, retries=max(0, stats.attempts - 1), cached_calls=0,
                 prompt_tokens=stats.prompt_tokens, completion_tokens=stats.completion_tokens,
                 cached_prompt_tokens=stats.cached_prompt_tokens,
                 cache_write_tokens=stats.cache_write_tokens, cost=stats.cost,
                 batch_calls=1 if stats.batch else 0)


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err["loc"]) or "answer"
            parts.append(f"{where}: {err['msg']}")
        return "; ".join(parts)
    return str(exc)


def _reask(problem: str, json_schema: dict[str, Any]) -> str:
    return (f"Your previous answer was not valid: {problem}. Answer again with only a JSON "
            f"object that matches this JSON schema:\n{json.dumps(json_schema)}")
