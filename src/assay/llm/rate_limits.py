"""Per-model rate limits that slow down on 429 and honour Retry-After.

A model's limiter spaces requests to its requests-per-minute budget, keeps a tokens-per-minute
bucket, and when the provider answers 429 it pauses every caller of that model until the
Retry-After time and halves how many calls it lets run at once (recovering one slot per run of
successes). With no limits set and no 429 seen, ``acquire`` costs one comparison.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from typing import Protocol

from assay.types.engine_config import RateLimit


class Admission(Protocol):
    """What the engine asks before and after each call of a model: this process's
    :class:`ModelLimiter`, or one shared by a whole cluster (:mod:`assay.run.ray_executor`)."""

    async def acquire(self, tokens: int, timeout: float | None = None) -> None: ...

    async def release(self, *, throttled: bool = False,
                      retry_after: float | None = None) -> None: ...


class ModelLimiter:
    """Admission control for one model."""

    def __init__(self, limit: RateLimit | None, max_in_flight: int) -> None:
        self.rpm = limit.requests_per_minute if limit else None
        self.tpm = limit.tokens_per_minute if limit else None
        self.ceiling = max_in_flight
        self.allowed = max_in_flight
        self.in_flight = 0
        self.pause_until = 0.0
        self.next_slot = 0.0
        self.tokens = float(self.tpm or 0)
        self.tokens_at = time.monotonic()
        self.successes = 0
        self.throttled = 0
        self._waiters: collections.deque[asyncio.Future[bool]] = collections.deque()
        self._simple = self.rpm is None and self.tpm is None

    async def acquire(self, tokens: int, timeout: float | None = None) -> None:
        """Wait until this model may take one more call estimated at ``tokens`` tokens.

        With ``timeout``, raise :class:`TimeoutError` as soon as it is clear the call cannot
        be admitted within that many seconds (a pause or a budget that ends later), so a
        caller's time bound holds however long a provider asks everyone to wait.
        """
        if self._simple and self.in_flight < self.allowed and time.monotonic() >= self.pause_until:
            self.in_flight += 1
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            now = time.monotonic()
            wait = max(self.pause_until - now, 0.0)
            if self.rpm:
                wait = max(wait, self.next_slot - now)
            if self.tpm:
                self._refill(now)
                need = min(float(tokens), float(self.tpm))
                if self.tokens < need:
                    wait = max(wait, (need - self.tokens) / (self.tpm / 60.0))
            if wait <= 0 and self.in_flight < self.allowed:
                break
            left = None if deadline is None else deadline - now
            if left is not None and (left <= 0 or wait > left):
                if self.in_flight < self.allowed:
                    self._wake(1)  # pass on a wake-up this call cannot use
                raise TimeoutError(f"not admitted within {timeout:g}s")
            await self._park(wait if wait > 0 else left)
        self.in_flight += 1
        if self.rpm:
            self.next_slot = max(self.next_slot, time.monotonic()) + 60.0 / self.rpm
        if self.tpm:
            self.tokens -= min(float(tokens), float(self.tpm))

    async def _park(self, delay: float | None) -> None:
        """Sleep until a release wakes this caller or ``delay`` seconds pass.

        Waiters are plain futures in a queue, with no lock: admission is decided between
        awaits, so nothing can be held across a cancellation. (``asyncio.Condition`` under
        ``wait_for`` could leave its lock held by an orphaned task when a stopped run
        cancelled a waiter twice, and every later call of the model then waited for good.)
        A caller cancelled just after it was woken passes the wake-up on.
        """
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(woken)
        timer = None if delay is None else loop.call_later(delay, _resolve, woken)
        try:
            await woken
        except asyncio.CancelledError:
            if woken.done() and not woken.cancelled():
                self._wake(1)
            raise
        finally:
            if timer is not None:
                timer.cancel()
            if not _popped(woken):
                # Still queued (its timer fired, or it was cancelled): take it out. A waiter
                # that _wake popped is not searched for: a failed ``deque.remove`` scans the
                # whole queue and formats the repr of the future for its error, and that
                # cost showed in profiles at one park per call.
                with contextlib.suppress(ValueError):
                    self._waiters.remove(woken)

    def _wake(self, count: int | None) -> None:
        """Wake the ``count`` longest waiting callers (None: all of them)."""
        while self._waiters and (count is None or count > 0):
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)  # True: popped here, not left in the queue
                if count is not None:
                    count -= 1

    async def release(self, *, throttled: bool = False, retry_after: float | None = None) -> None:
        """Give the slot back; ``throttled`` reports a 429 so the limiter slows down.

        An ordinary release wakes one waiter (two when a slot was just regained): waking
        them all on every call made queued calls cost O(queue) each.
        """
        self.in_flight -= 1
        wake: int | None = 1
        if throttled:
            self.throttled += 1
            self.allowed = max(1, self.allowed // 2)
            self.successes = 0
            pause = retry_after if retry_after is not None else 1.0
            self.pause_until = max(self.pause_until, time.monotonic() + pause)
            self._simple = False
            wake = None  # everyone must see the pause
        elif self.allowed < self.ceiling:
            self.successes += 1
            if self.successes >= self.allowed:
                self.allowed += 1
                self.successes = 0
                wake = 2
        self._wake(wake)

    def _refill(self, now: float) -> None:
        if self.tpm:
            self.tokens = min(float(self.tpm),
                              self.tokens + (now - self.tokens_at) * self.tpm / 60.0)
            self.tokens_at = now


def _resolve(waiter: asyncio.Future[bool]) -> None:
    """A parked caller's timer: wake it, leaving it in the queue (False)."""
    if not waiter.done():
        waiter.set_result(False)


def _popped(waiter: asyncio.Future[bool]) -> bool:
    """Whether :meth:`ModelLimiter._wake` took ``waiter`` off the queue."""
    return waiter.done() and not waiter.cancelled() and waiter.result()
