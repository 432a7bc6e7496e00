"""A judge's identity: a hash of the model, prompt and answer schema it would actually use.

A calibration holds for one judge only: change its prompt, its model or what it is asked to
answer, and the agreement measured before says nothing about it. So a calibration is keyed by
what the judge would send, not by what its config says: the judge is run once on a fixed
probe case through an engine that records each request instead of sending it, and the key
hashes every request (model, messages, schema, temperature, every setting that changes an
answer, the way the response cache keys them) together with the evaluator's own settings
(its threshold decides pass and fail). A new system prompt in a new version of assay, a
``--judge-model`` override or a changed rubric all change the key; a renamed evaluator or a
new weight do not.

Evaluators that call no model (deterministic checks, code judges) are keyed by their settings
alone and are never run on the probe.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from assay._util.redact import redact_urls
from assay.judges.base import EvalContext, Evaluator
from assay.llm.cache import request_key
from assay.llm.engine import JudgeEngine
from assay.llm.models import display_model
from assay.llm.types import ChatRequest
from assay.types.case import Case
from assay.types.engine_config import EngineConfig
from assay.types.execution import Execution

PROBE_CASE = Case(
    id="assay-calibration-probe", input="PROBE QUESTION", expected_output="PROBE REFERENCE",
    expected_outcomes=["PROBE OUTCOME"], guidelines=["PROBE GUIDELINE"],
    reference_context=["PROBE CONTEXT"], metadata={"note": "PROBE NOTE"})
PROBE_EXECUTION = Execution(input="PROBE QUESTION", output="PROBE ANSWER")
_NOT_IDENTITY = ("name", "weight", "required")
"""Evaluator settings that change neither what a judge is asked nor its verdict."""


class JudgeIdentity(BaseModel):
    """What a calibration is about: the judge's key and the parts it hashes."""

    model_config = ConfigDict(extra="forbid")

    key: str
    name: str
    type: str
    models: list[str] = Field(default_factory=list)
    prompt_hash: str = ""
    schema_hash: str = ""
    settings_hash: str = ""
    spec: dict[str, Any] = Field(default_factory=dict)
    """The evaluator's settings as a run records them (for reading, not for the key)."""

    def changes_from(self, other: JudgeIdentity) -> list[str]:
        """What differs from ``other``, in words: model, prompt, answer schema, settings."""
        found = []
        if self.models != other.models:
            found.append(f"model {', '.join(other.models) or 'none'} -> "
                         f"{', '.join(self.models) or 'none'}")
        if self.prompt_hash != other.prompt_hash:
            found.append("prompt changed")
        if self.schema_hash != other.schema_hash:
            found.append("answer schema changed")
        if self.settings_hash != other.settings_hash:
            found.append("settings changed")
        return found


class _Recorder(JudgeEngine):
    """An engine in dry-run mode that keeps every request it is asked to make."""

    def __init__(self, default_model: str) -> None:
        super().__init__(EngineConfig(default_model=default_model, cache_mode="off",
                                      dry_run=True))
        self.requests: list[tuple[str, ChatRequest]] = []

    def _estimate(self, provider: Any, request: ChatRequest) -> None:
        self.requests.append((provider.spec.display, request))


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS,
                                       default=str)).hexdigest()


def settings_of(evaluator: Evaluator) -> dict[str, Any]:
    """The evaluator's settings that decide its answers and verdicts, with every URL's
    password hidden (a password is not part of a judge, and is never stored)."""
    dumped = evaluator.model_dump(mode="json",
                                  exclude={*_NOT_IDENTITY, *evaluator.at_default()},
                                  fallback=lambda v: getattr(v, "__qualname__", repr(v)))
    found: dict[str, Any] = _redacted({"type": evaluator.type, **dumped})
    return found


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_urls(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


async def probe_requests(evaluator: Evaluator, *, default_model: str | None = None,
                         judge_model: str | None = None, override_model: str | None = None
                         ) -> list[tuple[str, ChatRequest]]:
    """The requests ``evaluator`` would send for the probe case, each with its model as
    shown; nothing is sent (none for an evaluator that calls no model)."""
    if not evaluator.models():
        return []
    # The recorder opens no connection, so it has nothing to close (closing it would
    # close the loop's shared HTTP session under a run in progress).
    recorder = _Recorder(default_model or EngineConfig().default_model)
    ctx = EvalContext(recorder, judge_model=judge_model, override_model=override_model)
    await evaluator.evaluate(PROBE_CASE, PROBE_EXECUTION, ctx)
    return recorder.requests


async def judge_identity(evaluator: Evaluator, *, default_model: str | None = None,
                         judge_model: str | None = None,
                         override_model: str | None = None) -> JudgeIdentity:
    """The identity of ``evaluator`` as a run with these models would use it: ``judge_model``
    is the run's (or its target's) judge, ``override_model`` the ``--judge-model`` override,
    ``default_model`` the engine's default."""
    settings = settings_of(evaluator)
    requests = await probe_requests(evaluator, default_model=default_model,
                                    judge_model=judge_model, override_model=override_model)
    keys = sorted(request_key(model, request) for model, request in requests)
    prompts = sorted(_digest(request.get("messages")) for _, request in requests)
    schemas = sorted(_digest([request.get(k) for k in ("response_format", "tools",
                                                       "tool_choice")])
                     for _, request in requests)
    settings_hash = _digest(settings)
    return JudgeIdentity(
        key=_digest({"requests": keys, "settings": settings_hash}),
        name=evaluator.name, type=evaluator.type,
        models=sorted({display_model(model) for model, _ in requests}),
        prompt_hash=_digest(prompts), schema_hash=_digest(schemas),
        settings_hash=settings_hash, spec=settings)
