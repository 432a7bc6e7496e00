"""Runs collect garbage less often while in flight, and leave the collector as they found it."""

from __future__ import annotations

import asyncio
import gc

import assay
from assay.gc_pause import RUN_THRESHOLD


def _rows(n: int) -> list[dict[str, str]]:
    return [{"id": f"c{i}", "input": f"q{i}", "expected_output": f"a{i}"} for i in range(n)]


def test_a_run_raises_the_young_threshold_and_puts_it_back() -> None:
    before = gc.get_threshold()
    seen: list[int] = []

    def agent(question: str) -> str:
        seen.append(gc.get_threshold()[0])
        return "a" + question[1:]

    result = assay.evaluate(_rows(5), target=agent, evaluators=["exact_match"])
    assert result.summary.passed_count == 5
    assert seen and min(seen) >= RUN_THRESHOLD
    assert gc.get_threshold() == before
    assert gc.isenabled()


async def test_overlapping_runs_restore_the_threshold_only_when_the_last_ends() -> None:
    before = gc.get_threshold()
    release = asyncio.Event()
    during: list[int] = []

    async def slow(question: str) -> str:
        await release.wait()
        return "a" + question[1:]

    async def fast(question: str) -> str:
        return "a" + question[1:]

    first = asyncio.ensure_future(assay.evaluate_async(_rows(2), target=slow,
                                                       evaluators=["exact_match"]))
    second = await assay.evaluate_async(_rows(2), target=fast, evaluators=["exact_match"])
    assert second.summary.passed_count == 2
    during.append(gc.get_threshold()[0])  # the first run is still waiting on its agent
    release.set()
    assert (await first).summary.passed_count == 2
    assert during[0] >= RUN_THRESHOLD
    assert gc.get_threshold() == before


async def test_a_stopped_run_puts_the_threshold_back() -> None:
    before = gc.get_threshold()
    started = asyncio.Event()

    async def stuck(question: str) -> str:
        started.set()
        await asyncio.sleep(3600)
        return question

    run = asyncio.ensure_future(assay.evaluate_async(_rows(3), target=stuck,
                                                     evaluators=["exact_match"]))
    await asyncio.wait_for(started.wait(), 30)
    assert gc.get_threshold()[0] >= RUN_THRESHOLD
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)
    assert gc.get_threshold() == before
