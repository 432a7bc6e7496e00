"""The target proxy a code judge may call (AgentV's ``code_judge`` with ``target: true``).

Some checks need a model's opinion in the middle of a script. Rather than hand the script an
API key, assay starts a small HTTP server for the duration of the script, on 127.0.0.1 only,
and passes its address and a one-time bearer token in the environment
(``AGENTV_TARGET_PROXY_URL`` and ``AGENTV_TARGET_PROXY_TOKEN``, as AgentV names them, and the
same values as ``ASSAY_TARGET_PROXY_URL`` / ``_TOKEN``). Its endpoints are AgentV's:

``POST /invoke`` ``{"question": ..., "systemPrompt"?: ...}``
    asks the judge model through assay's engine (its cache, limits, retries and cost
    accounting) and answers ``{"outputMessages": [{"role": "assistant", "content": ...}],
    "rawText": ...}``
``POST /invokeBatch`` ``{"requests": [...]}``
    the same for several questions, ``{"responses": [...]}``
``GET /info``
    ``{"targetName", "maxCalls", "callCount", "availableTargets"}``

A request without the token gets 401; one past ``max_calls`` (default 50) gets 429; a
``target`` other than the judge gets 400 naming the one available. The server stops when the
script ends, whatever happened.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from assay._util import jsondata
from assay.llm.engine import JudgeEngine
from assay.llm.types import ChatRequest, ProviderError
from assay.types.usage import Usage

MAX_BODY_BYTES = 4 * 1024 * 1024


@dataclass
class ProxyState:
    """What the proxy did: calls made and what they cost."""

    max_calls: int
    target: str
    calls: int = 0
    usage: Usage = field(default_factory=Usage)

    def environment(self, url: str, token: str) -> dict[str, str]:
        return {"AGENTV_TARGET_PROXY_URL": url, "AGENTV_TARGET_PROXY_TOKEN": token,
                "ASSAY_TARGET_PROXY_URL": url, "ASSAY_TARGET_PROXY_TOKEN": token}


@asynccontextmanager
async def target_proxy(engine: JudgeEngine, model: str | None, max_calls: int,
                       sample: int = 0) -> AsyncIterator[tuple[dict[str, str], ProxyState]]:
    """Serve the proxy while the block runs; yields the environment for the script and the
    proxy's running state."""
    token = secrets.token_hex(32)
    name = engine.resolve(model).spec.display
    state = ProxyState(max_calls=max_calls, target=name)

    async def ask(request: dict[str, Any]) -> dict[str, Any]:
        question = request.get("question")
        if not isinstance(question, str) or not question:
            raise _Refused(400, "Missing required field: question")
        wanted = request.get("target")
        if wanted not in (None, name, "judge"):
            raise _Refused(400, f"Unknown target {wanted!r}. Available: {name}")
        if state.calls >= state.max_calls:
            raise _Refused(429, f"Max calls exceeded (limit: {state.max_calls})")
        state.calls += 1
        messages: list[dict[str, Any]] = []
        system = request.get("systemPrompt")
        if isinstance(system, str) and system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": question})
        chat: ChatRequest = {"model": name, "messages": messages, "temperature": 0.0}
        try:
            result = await engine.chat(chat, model, sample=sample)
        except ProviderError as exc:
            raise _Refused(502, engine.scrub(str(exc))) from None
        stats = result.stats
        state.usage = state.usage + Usage(
            calls=0 if stats.cached else 1, cached_calls=1 if stats.cached else 0,
            prompt_tokens=stats.prompt_tokens, completion_tokens=stats.completion_tokens,
            cost=0.0 if stats.cached else stats.cost)
        text = result.text()
        return {"outputMessages": [{"role": "assistant", "content": text}], "rawText": text}

    async def handle(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {token}":
            return web.json_response({"error": "Unauthorized"}, status=401)
        try:
            if request.method == "GET" and request.path == "/info":
                return web.json_response({"targetName": name, "maxCalls": state.max_calls,
                                          "callCount": state.calls, "availableTargets": [name]})
            body = await _body(request)
            if request.path == "/invoke":
                return web.json_response(await ask(body))
            if request.path == "/invokeBatch":
                requests = body.get("requests")
                if not isinstance(requests, list):
                    raise _Refused(400, "Missing required field: requests (array)")
                if state.calls + len(requests) > state.max_calls:
                    raise _Refused(429, f"Batch would exceed max calls (current: "
                                   f"{state.calls}, batch: {len(requests)}, limit: "
                                   f"{state.max_calls})")
                answers = []
                for item in requests:
                    try:
                        answers.append(await ask(item if isinstance(item, dict) else {}))
                    except _Refused as exc:
                        answers.append({"outputMessages": [], "rawText": f"Error: {exc.text}"})
                return web.json_response({"responses": answers})
            return web.json_response({"error": "Not found"}, status=404)
        except _Refused as exc:
            return web.json_response({"error": exc.text}, status=exc.status)

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        port = sockets[0].getsockname()[1]
        yield state.environment(f"http://127.0.0.1:{port}", token), state
    finally:
        await asyncio.shield(runner.cleanup())


class _Refused(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = jsondata.loads(await request.read() or b"{}")
    except (ValueError, web.HTTPRequestEntityTooLarge):
        raise _Refused(400, "the body is not a JSON object") from None
    if not isinstance(body, dict):
        raise _Refused(400, "the body is not a JSON object")
    return body
