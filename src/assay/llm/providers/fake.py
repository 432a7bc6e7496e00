"""``fake:NAME``: a real, registered provider that answers deterministically in-process.

It goes through the same engine path as every other provider (cache, limits, usage), so tests
and demos exercise production code; only the model is stood in for. Its answers come from
:mod:`assay.llm.providers.scripted`, the same ones the HTTP mock server gives.
"""

from __future__ import annotations

import copy

from assay.llm.models import ModelSpec
from assay.llm.providers.base import Provider, register_provider
from assay.llm.providers.scripted import answer
from assay.llm.types import ChatRequest, ChatResponse


class FakeProvider(Provider):
    price_free = True

    async def complete(self, request: ChatRequest, timeout: float) -> ChatResponse:
        return answer(copy.deepcopy(dict(request)))


@register_provider("fake")
def _fake(spec: ModelSpec) -> Provider:
    return FakeProvider(spec)
