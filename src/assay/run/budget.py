"""A run's money budget (``--budget-usd``, AgentV 4's option): stop before it is spent.

AgentV stops dispatching once the cost so far reaches the budget, so the cases in flight when it
is reached overspend it, and it records every case it did not run as an error. Here a case is
started only when the cost so far, plus what the cases in flight and this one may cost, stays
within the budget; what a case may cost is the most any case of this run has cost so far, and
until one case has finished (and said what a case costs) cases run one at a time. When the
next case would not fit, the run stops starting cases: those in flight finish and are stored,
the others are simply not run (never counted as errors), and the run is left interrupted, so
``assay run --resume RUN_ID`` (with a new ``--budget-usd``, or none) runs exactly them.

What a case costs is its judges' calls, the simulated user's calls, the call that analysed
its failure (``--cause-analysis``), and what its agent reported. A cost that is unknown (a model without a price, an agent that reported tokens but
no cost) cannot be kept within a budget: the run stops there and says so, since an unknown
cost is not a free one (give prices with ``$ASSAY_PRICES``).
"""

from __future__ import annotations

import asyncio

from assay.types.numbers import usd
from assay.types.records import CaseRecord


def record_cost(record: CaseRecord) -> float | None:
    """What a case cost in USD (judges, simulated user, cause analysis, the agent's reported
    cost); None when any part of it is unknown."""
    total = 0.0
    usage = record.execution.usage
    if usage is not None and (usage.prompt_tokens or usage.completion_tokens or
                              usage.cost is not None):
        if usage.cost is None:
            return None
        total += usage.cost
    conversation = record.execution.conversation
    parts = [s.usage for s in record.scores]
    if conversation is not None:
        parts.append(conversation.simulator_usage)
    if record.cause_analysis is not None:
        parts.append(record.cause_analysis.usage)
    for part in parts:
        if part.cost is None:
            return None
        total += part.cost
    return total


class Budget:
    """Admits cases while what they may cost fits in ``limit`` (USD); see the module."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.spent = 0.0
        self.largest: float | None = None
        """The most one case has cost so far (None until one has finished)."""
        self.in_flight = 0
        self.stopped: str | None = None
        """Why no more cases are started, once none may be."""
        self.unrun = 0
        self._finished = asyncio.Event()

    async def admit(self) -> bool:
        """Whether one more case may start now (waiting, before the first case has finished,
        for the case in flight to say what a case costs)."""
        while self.stopped is None and self.largest is None and self.in_flight:
            self._finished.clear()
            await self._finished.wait()
        if self.stopped is None and self.largest is not None and \
                self.spent + (self.in_flight + 1) * self.largest > self.limit:
            self.stopped = (f"a case costs up to {usd(self.largest)}, so the next one could "
                            "pass it")
        if self.stopped is not None:
            self.unrun += 1
            return False
        self.in_flight += 1
        return True

    def done(self, cost: float | None) -> None:
        """A case that was admitted finished, having cost ``cost`` (None: unknown)."""
        self.in_flight -= 1
        if cost is None:
            self.stopped = self.stopped or ("a case's cost is unknown (a model without a "
                                            "price, or an agent that reported no cost), so "
                                            "the budget cannot be kept; give prices with "
                                            "$ASSAY_PRICES")
        else:
            self.spent += cost
            self.largest = max(self.largest or 0.0, cost)
        self._finished.set()

    def failure(self) -> str | None:
        """The run's gate failure when it stopped with cases not run; None otherwise."""
        if self.stopped is None or not self.unrun:
            return None
        return (f"the budget of {usd(self.limit)} stopped the run with {self.unrun} case(s) "
                f"not run ({usd(self.spent)} spent; {self.stopped}); they run when the run "
                "is resumed (--resume, with a new --budget-usd or none)")
