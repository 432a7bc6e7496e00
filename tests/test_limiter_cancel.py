"""A model's limiter stays usable however its waiters are cancelled.

A stopped run cancels its workers twice (once through ``gather``, once by hand). A waiter
whose timed wait on the limiter was cancelled twice could leave the limiter's lock held by an
orphaned task, so every later call of that model, and the event loop's own shutdown, waited
forever (a stopped calibration hung its test's teardown).
"""

from __future__ import annotations

import asyncio
import collections
import random

import pytest

from assay.llm.rate_limits import ModelLimiter


async def _user(limiter: ModelLimiter, rng: random.Random) -> None:
    """Take a slot (with a time bound), hold it a moment, give it back."""
    try:
        await limiter.acquire(1, timeout=rng.choice([None, 0.002, 0.01, 5]))
    except TimeoutError:
        return
    try:
        for _ in range(rng.randrange(3)):
            await asyncio.sleep(0)
    finally:
        await limiter.release()


async def test_waiters_cancelled_twice_at_any_moment_leave_the_limiter_usable() -> None:
    rng = random.Random(7)
    limiter = ModelLimiter(None, max_in_flight=2)
    for _round in range(60):
        users = [asyncio.ensure_future(_user(limiter, rng)) for _ in range(8)]
        for _ in range(rng.randrange(4)):
            await asyncio.sleep(0)
        for task in rng.sample(users, 4):
            task.cancel()
            if rng.random() < 0.7:
                for _ in range(rng.randrange(2)):
                    await asyncio.sleep(0)
                task.cancel()  # the second cancellation a stopped run sends
        await asyncio.wait_for(asyncio.gather(*users, return_exceptions=True), 5)
        # the limiter still admits a call at once
        await asyncio.wait_for(limiter.acquire(1, timeout=5), 2)
        await limiter.release()
    assert limiter.in_flight == 0
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert left == [], left


class _CountingQueue(collections.deque):  # type: ignore[type-arg]
    """The limiter's waiter queue, counting searches for a waiter."""

    removes = 0

    def remove(self, value: object) -> None:
        type(self).removes += 1
        super().remove(value)


async def test_a_woken_waiter_is_not_searched_for_in_the_queue() -> None:
    """Every call parked behind a full limiter used to end with a ``deque.remove`` that
    scanned the queue and failed (formatting the future's repr): O(queue) per call."""
    limiter = ModelLimiter(None, max_in_flight=1)
    limiter._waiters = _CountingQueue()
    _CountingQueue.removes = 0

    async def call() -> None:
        await limiter.acquire(1)
        await asyncio.sleep(0)
        await limiter.release()

    await asyncio.wait_for(asyncio.gather(*(call() for _ in range(50))), 5)
    assert limiter.in_flight == 0 and not limiter._waiters
    assert _CountingQueue.removes == 0


async def test_a_waiter_whose_timer_fired_leaves_the_queue() -> None:
    limiter = ModelLimiter(None, max_in_flight=1)
    await limiter.acquire(1)
    try:
        with pytest.raises(TimeoutError):
            await limiter.acquire(1, timeout=0.01)
    finally:
        await limiter.release()
    assert not limiter._waiters
