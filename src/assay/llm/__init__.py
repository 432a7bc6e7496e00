"""The judge engine: providers, structured output, cache, retries, rate limits, usage and cost."""

from assay.llm.build import build_engine, engine_config
from assay.llm.engine import DryRunSkipped, JudgeEngine
from assay.llm.models import ModelSpec, is_demo_model, parse_model
from assay.llm.providers.custom import register_service
from assay.llm.structured import StructuredResult, ask_structured, extract_json
from assay.llm.types import ChatRequest, ChatResult, ProviderError
from assay.types.engine_config import EngineConfig, RateLimit, RetryPolicy

__all__ = [
    "ChatRequest",
    "ChatResult",
    "DryRunSkipped",
    "EngineConfig",
    "JudgeEngine",
    "ModelSpec",
    "ProviderError",
    "RateLimit",
    "RetryPolicy",
    "StructuredResult",
    "ask_structured",
    "build_engine",
    "engine_config",
    "extract_json",
    "is_demo_model",
    "parse_model",
    "register_service",
]
