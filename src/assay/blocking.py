"""Blocking user code (a sync agent, a sync scorer) runs off the event loop, on threads that
cannot keep the process alive.

``asyncio.to_thread`` uses the loop's default executor, and both ``asyncio.run`` and the
interpreter wait for its threads at exit. A sync agent that overruns its timeout cannot be
stopped (Python has no way to kill a thread), so its case was reported as timed out and then
``assay run`` waited for the agent forever: the summary was never printed, and SIGTERM did not
end the process either. Calls made through :func:`run_blocking` go to daemon threads instead:
a call that never returns is abandoned when its caller stops waiting, and the process exits
when the run is done. (assay's own blocking work, such as the embedded model, stays on
``asyncio.to_thread``: it always returns, and the process should wait for it.)

Threads are started on demand and reused; a thread whose call is still running is never
waited for, so hung calls do not hold back the calls after them (the run's own concurrency
bounds how many calls are made at once).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Item = tuple[concurrent.futures.Future[Any], Callable[[], Any]]


class DaemonExecutor(concurrent.futures.Executor):
    """A thread pool of daemon threads, grown when no thread is idle, never joined at exit."""

    def __init__(self, name: str = "assay-call") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
               ) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            future: concurrent.futures.Future[T] = concurrent.futures.Future()
            self._queue.put((future, functools.partial(fn, *args, **kwargs)))
            if not self._idle.acquire(blocking=False):
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._name}-{len(self._threads)}")
                thread.start()
                self._threads.append(thread)
            return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, call = item
            del item
            if future.set_running_or_notify_cancel():
                try:
                    result = call()
                except BaseException as exc:  # the caller decides what an exception means
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, call
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking calls; idle threads end, busy ones end with their call (or the
        process). ``wait`` joins only threads that finish; a hung call is never waited for."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in threads:
            self._queue.put(None)
        if wait:
            for thread in threads:
                thread.join()


_EXECUTOR: DaemonExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def executor() -> DaemonExecutor:
    """The process's executor for blocking calls, made on first use."""
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = DaemonExecutor()
        return _EXECUTOR


async def run_blocking(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a daemon thread, with the caller's context variables (as
    ``asyncio.to_thread`` passes them). Cancelling the caller (a timeout) abandons the call."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await loop.run_in_executor(executor(), call)
