"""A chat model as the agent: ``provider`` is a judge-engine model string.

``openai:gpt-4o-mini``, ``fake:x``, ``local:gemma-3-270m`` or ``http://host/v1#model`` (or
AgentV's ``provider: openai`` with ``model: gpt-4o-mini``). The case's messages go through
:meth:`JudgeEngine.chat`, so the model gets the engine's rate limits, bounded retries, timeouts
and response cache like any judge call; the answer's latency and tokens are recorded on the
execution. An optional ``system_prompt`` is put before the case's messages.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from assay.errors import ConfigError
from assay.llm.build import build_engine
from assay.llm.engine import JudgeEngine
from assay.llm.types import ChatRequest, ProviderError
from assay.targets.base import Target, current_sample
from assay.targets.config import FieldSpec, TargetConfig
from assay.targets.inputs import assistant_message, elapsed_ms, input_messages
from assay.types.case import Case
from assay.types.execution import Execution, TokenUsage


class ChatModelTarget(Target):
    """Asks a chat model, through the judge engine, to answer each case."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "model": FieldSpec((str,), "the model name, with a provider such as openai"),
        "temperature": FieldSpec((int, float), "a number from 0 to 2"),
        "max_tokens": FieldSpec((int,), "a whole number of tokens"),
        "max_output_tokens": FieldSpec((int,), "a whole number of tokens"),
        "system_prompt": FieldSpec((str,), "text sent as the system message"),
        # AgentV's spelling of a model's own endpoint and key (Azure, OpenAI-compatible, ...)
        "endpoint": FieldSpec((str,), "the endpoint URL (Azure: https://NAME.openai.azure.com)"),
        "resource": FieldSpec((str,), "the Azure resource name"),
        "api_key": FieldSpec((str,), "the key, usually ${{ ENV_VAR }}"),
        "api_version": FieldSpec((str,), "the Azure API version"),
        "version": FieldSpec((str,), "the Azure API version"),
        "deployment": FieldSpec((str,), "the Azure deployment (AgentV: model)"),
        "base_url": FieldSpec((str,), "an OpenAI-compatible base URL"),
    }

    def __init__(self, model: str, engine: JudgeEngine | None = None, *,
                 name: str = "chat_model", temperature: float | None = None,
                 max_tokens: int | None = None, system_prompt: str | None = None) -> None:
        self.model = model
        self.owns_engine = engine is None
        self.engine = engine or build_engine()
        self.name = name
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self.engine.resolve(model)  # an unknown model fails now, not in the first case

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path,
                    engine: JudgeEngine | None = None) -> ChatModelTarget:
        model = config.model_string()
        if model is None:
            raise ConfigError(f"target {config.name!r}: provider {config.provider!r} names "
                              "no model", code="unknown_provider")
        return cls(model, engine, name=config.name, temperature=config.get("temperature"),
                   max_tokens=config.get("max_tokens", config.get("max_output_tokens")),
                   system_prompt=config.get("system_prompt"))

    async def preflight(self) -> None:
        await self.engine.preflight(self.model)

    def request(self, case: Case) -> ChatRequest:
        messages: list[dict[str, Any]] = input_messages(case)
        if self.system_prompt:
            messages = [{"role": "system", "content": self.system_prompt}, *messages]
        request: ChatRequest = {"model": self.engine.spec(self.model).model,
                                "messages": messages}
        if self.temperature is not None:
            request["temperature"] = float(self.temperature)
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        return request

    async def run(self, case: Case) -> Execution:
        started = time.perf_counter()
        try:
            # each repeat of a case is its own draw, not the first answer from the cache
            result = await self.engine.chat(self.request(case), self.model,
                                            sample=current_sample())
        except ProviderError as exc:
            return Execution(input=case.input, latency_ms=elapsed_ms(started),
                             error=self.engine.scrub(f"model {self.model} failed: {exc}"))
        except Exception as exc:  # a per-case failure must not stop the run
            return Execution(input=case.input, latency_ms=elapsed_ms(started),
                             error=self.engine.scrub(
                                 f"model {self.model} failed: {type(exc).__name__}: {exc}"))
        latency = elapsed_ms(started)
        message = assistant_message(result.message())
        if message is None:
            return Execution(input=case.input, latency_ms=latency, error=self.engine.scrub(
                f"model {self.model} answered without a usable message"))
        stats = result.stats
        request = self.request(case)
        return Execution(
            input=case.input, output=result.text(), messages=[message], latency_ms=latency,
            usage=TokenUsage(prompt_tokens=stats.prompt_tokens,
                             completion_tokens=stats.completion_tokens, cost=stats.cost),
            provider_request={"kind": "lm", "model": self.engine.spec(self.model).display,
                              **{k: v for k, v in request.items() if k != "model"}})

    async def aclose(self) -> None:
        if self.owns_engine:
            await self.engine.aclose()
