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


def test_importing_pauses_and_freezes_only_in_the_command_process(monkeypatch) -> None:
    """The ``assay`` command freezes what its imports built (no collection walks it again);
    a command run inside a longer-lived process (this test, a notebook) only pauses, since a
    freeze would keep whatever garbage is pending there for ever."""
    import subprocess
    import sys

    from assay import gc_pause

    monkeypatch.setattr(gc_pause, "_command_process", False)
    frozen = gc.get_freeze_count()
    with gc_pause.importing():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen

    script = ("import gc\n"
              "from assay.gc_pause import command_process, importing\n"
              "command_process()\n"
              "before = gc.get_freeze_count()\n"
              "with importing():\n"
              "    import json, decimal\n"
              "print(gc.isenabled(), gc.get_freeze_count() > before, gc.get_count()[0] < 700)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr
