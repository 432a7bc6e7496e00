"""AgentV's ``mock`` provider: a target that answers every case with a canned response.

::

    - name: dry
      provider: mock
      response: '{"answer": "42"}'   # optional; AgentV's default text otherwise
      delay_ms: 50                   # or delay_min_ms / delay_max_ms for a random delay

It is for trying a suite's plumbing (files, evaluators, reports) without an agent. The answer
is the response text, as AgentV gives it (an evaluator that reads JSON parses it).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import ClassVar

from assay.targets.base import Target
from assay.targets.config import DELAY_MS_FIELD, FieldSpec, TargetConfig
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.messages import Message

DEFAULT_RESPONSE = ('{"answer":"Mock provider response. Configure targets.yaml to supply a '
                    'custom value."}')


class MockTarget(Target):
    """Answers ``response`` after an optional delay."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "response": FieldSpec((str,), "the text every case is answered with"),
        "delay_ms": DELAY_MS_FIELD,
        "delay_min_ms": DELAY_MS_FIELD,
        "delay_max_ms": DELAY_MS_FIELD,
    }

    def __init__(self, response: str = DEFAULT_RESPONSE, *, name: str = "mock",
                 delay_ms: float = 0.0, delay_min_ms: float = 0.0,
                 delay_max_ms: float = 0.0) -> None:
        self.response = response
        self.name = name
        self.delay_ms = max(0.0, delay_ms)
        self.delay_range = (max(0.0, delay_min_ms), max(delay_min_ms, delay_max_ms))

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> MockTarget:
        return cls(config.get("response", DEFAULT_RESPONSE), name=config.name,
                   delay_ms=float(config.get("delay_ms", 0)),
                   delay_min_ms=float(config.get("delay_min_ms", 0)),
                   delay_max_ms=float(config.get("delay_max_ms", 0)))

    def delay(self) -> float:
        low, high = self.delay_range
        return random.uniform(low, high) if high > 0 else self.delay_ms

    async def run(self, case: Case) -> Execution:
        pause = self.delay()
        if pause > 0:
            await asyncio.sleep(pause / 1000)
        return Execution(input=case.input, output=self.response,
                         messages=[Message(role="assistant", content=self.response)],
                         latency_ms=pause, provider_request={"kind": "mock",
                                                             "target": self.name})
