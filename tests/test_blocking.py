"""Blocking user code runs on daemon threads: a sync agent that hangs past its timeout is
abandoned, and the run still ends, prints its summary and exits.

With ``asyncio.to_thread``, ``asyncio.run`` waited at exit for the hung agent's thread, so
``assay run`` never printed its summary, never exited, and ignored SIGTERM.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import subprocess
import threading
import time
from pathlib import Path

import pytest

from assay._util.blocking import DaemonExecutor, _Call, run_blocking
from tests.python_agent import exact_match_suite, run_python_agent

HUNG_AGENT = '''
import time

def answer(question):
    if question == "hang":
        time.sleep(1000)
    return question
'''

SUITE = exact_match_suite(("quick", "quick", "quick"), ("stuck", "hang", "hang"))


def _run_agent(tmp_path: Path, agent: str, suite: str, target_extra: str = "",
               timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``assay run`` on ``suite`` with ``agent`` as its python target, rows in out.jsonl."""
    return run_python_agent(tmp_path, agent, suite, "-o", "out.jsonl", "--max-errors", "1",
                            target_extra=target_extra, timeout=timeout)


@pytest.mark.process
def test_a_run_whose_sync_agent_hangs_past_its_timeout_still_ends(tmp_path: Path) -> None:
    started = time.monotonic()
    try:
        done = _run_agent(tmp_path, HUNG_AGENT, SUITE, ", timeout_s: 1", timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("assay run waited for the hung agent instead of ending")
    assert time.monotonic() - started < 60
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 cases: 1 pass, 0 fail, 0 borderline, 1 error," in done.stdout, done.stdout
    assert "stored in" in done.stdout  # the summary
    rows = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(rows) == 2  # both cases were written, the stuck one as an error
    assert "agent function timed out after 1s" in (tmp_path / "out.jsonl").read_text()


async def test_calls_run_on_reused_daemon_threads_with_the_callers_context() -> None:
    seen = contextvars.ContextVar("seen", default="unset")
    seen.set("caller")

    def work(x: int) -> tuple[int, str, bool, str]:
        thread = threading.current_thread()
        return x * 2, seen.get(), thread.daemon, thread.name

    results = [await run_blocking(work, i) for i in range(20)]
    assert [r[0] for r in results] == [i * 2 for i in range(20)]
    assert {r[1] for r in results} == {"caller"}
    assert all(r[2] for r in results)


def test_threads_are_reused_and_grown_only_when_none_is_idle() -> None:
    pool = DaemonExecutor("reuse")  # its own pool: the shared one holds other tests' threads
    names = {pool.submit(lambda: threading.current_thread().name).result(timeout=5)
             for _ in range(50)}
    # One call after another: a thread is reused once it is idle again (a call may come just
    # before the last one's thread says so, so allow a few).
    assert 1 <= len(names) <= 3, names
    gate = threading.Event()
    busy = [pool.submit(gate.wait) for _ in range(4)]
    more = pool.submit(lambda: "ran")  # every thread busy: a new one takes it
    assert more.result(timeout=5) == "ran"
    gate.set()
    assert all(f.result(timeout=5) for f in busy)
    pool.shutdown()


async def test_exceptions_reach_the_caller_and_a_hung_call_does_not_block_the_next() -> None:
    def fail() -> None:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        await run_blocking(fail)
    release = threading.Event()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(run_blocking(release.wait), 0.05)  # abandoned, still running
    assert await asyncio.wait_for(run_blocking(lambda: "next"), 5) == "next"
    release.set()


def test_shutdown_refuses_new_calls_and_cancels_queued_ones() -> None:
    pool = DaemonExecutor("test")
    gate, started = threading.Event(), threading.Event()

    def running() -> bool:
        started.set()
        return gate.wait()

    busy = pool.submit(running)
    assert started.wait(5)
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
    gate.set()
    assert busy.result(timeout=5) is True  # a running call is not cancelled


def test_shutdown_cancels_calls_still_queued_and_runs_none_of_them() -> None:
    pool = DaemonExecutor("queued")
    gate, started = threading.Event(), threading.Event()
    ran: list[int] = []

    def running() -> bool:
        started.set()
        return gate.wait()

    busy = pool.submit(running)
    assert started.wait(5)
    with pool._ready:  # hold the pool still: the calls below stay queued
        queued = []
        for i in range(3):
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            pool._calls.append(_Call(lambda i=i: ran.append(i), future, None))
            queued.append(future)
    pool.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert busy.result(timeout=5) is True
    assert all(f.cancelled() for f in queued) and ran == []


async def test_a_call_that_raises_stopiteration_fails_instead_of_hanging() -> None:
    # asyncio refuses StopIteration on a future; through run_in_executor the outcome was lost
    # and the caller waited forever (or until its timeout).
    with pytest.raises(RuntimeError, match="StopIteration") as raised:
        await asyncio.wait_for(run_blocking(next, iter([])), 5)
    assert isinstance(raised.value.__cause__, StopIteration)


@pytest.mark.process
def test_a_sync_agent_that_raises_stopiteration_is_that_cases_error(tmp_path: Path) -> None:
    agent = ("def answer(question):\n"
             "    if question == 'empty':\n"
             "        return next(iter([]))\n"
             "    return question\n")
    done = _run_agent(tmp_path, agent,
                      exact_match_suite(("quick", "quick", "quick"), ("stuck", "empty", "empty")))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(rows) == 2
    assert "StopIteration" in rows[1] and "Traceback" not in done.stderr


def test_calls_from_several_loops_each_resolve_on_their_own_loop() -> None:
    def one_loop(offset: int) -> list[int]:
        async def calls() -> list[int]:
            return list(await asyncio.gather(*(run_blocking(lambda i=i: i + offset)
                                               for i in range(200))))
        return asyncio.run(calls())

    results: dict[int, list[int]] = {}
    threads = [threading.Thread(target=lambda o=o: results.__setitem__(o, one_loop(o)))
               for o in (0, 1000, 2000)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert {o: r for o, r in results.items()} == {
        o: [i + o for i in range(200)] for o in (0, 1000, 2000)}


async def test_a_call_cancelled_before_it_begins_is_not_made() -> None:
    from assay._util.blocking import _Inbox

    made: list[str] = []
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    future.cancel()  # a timeout gave up on it while it waited in the queue
    _Call(lambda: made.append("made"), future, _Inbox(loop)).run()
    waiting = loop.create_future()
    _Call(lambda: made.append("waited for"), waiting, _Inbox(loop)).run()
    await asyncio.wait_for(waiting, 5)
    assert made == ["waited for"]


def test_a_call_that_finishes_after_its_loop_closed_is_dropped_quietly() -> None:
    pool = DaemonExecutor("late")
    gate = threading.Event()
    finished = threading.Event()

    def late_call() -> None:
        gate.wait()
        finished.set()

    async def abandon() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(pool.run_on_loop(late_call), 0.05)

    asyncio.run(abandon())  # the loop is closed when the call ends
    gate.set()
    assert finished.wait(5)
    assert pool.submit(lambda: "alive").result(timeout=5) == "alive"  # the thread survived
    pool.shutdown()


def test_quick_calls_queued_together_wake_few_threads_and_slow_ones_fan_out() -> None:
    pool = DaemonExecutor("fan")

    async def quick() -> set[str]:
        names = await asyncio.gather(*(pool.run_on_loop(
            lambda: threading.current_thread().name) for _ in range(200)))
        return set(names)

    # 200 quick calls submitted in one go: a thread per call is not needed. Usually one or
    # two threads run them all; on a busy machine a thread that is descheduled mid-burst lets
    # a few more join (10 at most in 20 tries beside two busy processes on 2 cores).
    assert len(asyncio.run(quick())) <= 25
    # 16 calls that each wait for all the others: each needs a thread of its own, so they
    # only finish if the pool fans out to 16 threads.
    barrier = threading.Barrier(16, timeout=10)

    async def slow() -> list[int]:
        return list(await asyncio.gather(*(pool.run_on_loop(barrier.wait)
                                           for _ in range(16))))

    assert sorted(asyncio.run(slow())) == list(range(16))
    pool.shutdown()


def test_a_burst_of_calls_starts_one_thread_while_the_first_is_still_starting() -> None:
    # A new thread is on its way to the queue until it gets there. Counting only woken idle
    # threads, a burst of calls made while the first new thread waited to be scheduled (a
    # busy core) started a thread per call: 66 threads for 200 quick calls under load.
    pool = DaemonExecutor("burst")
    gate = threading.Event()
    arrive = pool._work

    def late() -> None:
        gate.wait(10)
        arrive()

    pool._work = late  # type: ignore[method-assign]
    futures = [pool.submit(lambda: threading.current_thread().name) for _ in range(50)]
    started = [t.name for t in threading.enumerate() if t.name.startswith("burst-")]
    gate.set()
    names = {f.result(timeout=10) for f in futures}
    pool.shutdown()
    assert started == ["burst-0"]
    assert names <= {f"burst-{i}" for i in range(50)}


def test_a_loop_that_made_blocking_calls_is_not_kept_alive() -> None:
    import gc
    import weakref

    pool = DaemonExecutor("leak")
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def one() -> int:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return await pool.run_on_loop(lambda: 1)

    for _ in range(3):
        assert asyncio.run(one()) == 1
    # The worker drops its call a moment after handing the result over: on a loaded machine
    # the loop can finish first, so give the worker up to two seconds to get there.
    deadline = time.monotonic() + 2
    while True:
        gc.collect()
        alive = [ref() is not None for ref in loops]
        if not any(alive) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert alive == [False, False, False]
    assert len(pool._inboxes) == 0
    pool.shutdown()
