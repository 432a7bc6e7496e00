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
import collections
import concurrent.futures
import contextlib
import contextvars
import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class _Call:
    """One queued call and where its outcome goes: a ``concurrent.futures.Future``
    (:meth:`DaemonExecutor.submit`) or an asyncio future on a loop (:func:`run_blocking`)."""

    __slots__ = ("call", "future", "inbox")

    def __init__(self, call: Callable[[], Any],
                 future: concurrent.futures.Future[Any] | asyncio.Future[Any],
                 inbox: _Inbox | None) -> None:
        self.call = call
        self.future = future
        self.inbox = inbox

    def run(self) -> None:
        """Make the call unless its caller already gave up, and hand over the outcome."""
        future, inbox = self.future, self.inbox
        if inbox is None:
            assert isinstance(future, concurrent.futures.Future)
            if not future.set_running_or_notify_cancel():
                return
        elif future.cancelled():  # the caller stopped waiting before the call began
            return
        try:
            result = self.call()
        except BaseException as exc:  # the caller decides what an exception means
            self._finish(None, exc)
        else:
            self._finish(result, None)

    def _finish(self, result: Any, exc: BaseException | None) -> None:
        if self.inbox is not None:
            self.inbox.put(self.future, result, exc)  # type: ignore[arg-type]
            return
        future: concurrent.futures.Future[Any] = self.future  # type: ignore[assignment]
        if exc is None:
            future.set_result(result)
        else:
            future.set_exception(exc)


class _Inbox:
    """Outcomes of blocking calls waiting to be set on one event loop's futures.

    ``loop.run_in_executor`` chains a ``concurrent.futures.Future`` to an asyncio future and
    wakes the loop once per finished call. Here a finished call appends its outcome and wakes
    the loop only when no wake-up is pending, and the loop sets every outcome waiting in one
    callback: about a third of the cost per call when many calls finish close together.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weak: the executor keeps an inbox per loop, keyed weakly by the loop, so a strong
        # reference here would keep every loop that ever made a call alive.
        self._loop = weakref.ref(loop)
        self._lock = threading.Lock()
        self._waiting: collections.deque[tuple[asyncio.Future[Any], Any,
                                               BaseException | None]] = collections.deque()
        self._woken = False

    def put(self, future: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
        """From any thread: hand over one outcome."""
        with self._lock:
            self._waiting.append((future, result, exc))
            if self._woken:
                return
            self._woken = True
        loop = self._loop()
        # A loop that is gone or closed (RuntimeError) has nobody waiting for this call.
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, collections.deque()
            self._woken = False
        for future, result, exc in waiting:
            if future.done():  # cancelled: a timeout abandoned the call
                continue
            if exc is None:
                future.set_result(result)
            elif isinstance(exc, StopIteration):
                # asyncio refuses StopIteration on a future (the await would look like a
                # generator's end), which left the caller waiting until its timeout.
                error = RuntimeError(f"the call raised StopIteration: {exc}")
                error.__cause__ = exc
                future.set_exception(error)
            else:
                future.set_exception(exc)


class DaemonExecutor(concurrent.futures.Executor):
    """A thread pool of daemon threads, grown when no thread is idle, never joined at exit.

    Threads take calls as leader and followers: a new call wakes one idle thread only when
    no thread is already on its way to the queue, and a thread that takes a call while more
    are waiting wakes the next before it runs its own. Quick calls queued together are then
    run back to back by one or two threads, where waking a thread per call cost a few
    context switches each (most of the hand-off on a busy core); slow calls still fan out
    to a thread each, one wake-up after another.
    """

    def __init__(self, name: str = "assay-call") -> None:
        self._name = name
        self._calls: collections.deque[_Call] = collections.deque()
        self._ready = threading.Condition(threading.Lock())
        self._idle = 0  # threads waiting for a call
        self._woken = 0  # idle threads woken that have not yet reached the queue
        self._starting = 0  # new threads that have not yet reached the queue
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox] = (
            weakref.WeakKeyDictionary())

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
               ) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._enqueue(_Call(functools.partial(fn, *args, **kwargs), future, None))
        return future

    def run_on_loop(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """``call()`` on a daemon thread, as a future of the running loop; cancelling the
        future abandons the call (or skips it, if it has not begun)."""
        loop = asyncio.get_running_loop()
        inbox = self._inboxes.get(loop)
        if inbox is None:
            with self._ready:
                inbox = self._inboxes.setdefault(loop, _Inbox(loop))
        future: asyncio.Future[T] = loop.create_future()
        self._enqueue(_Call(call, future, inbox))
        return future

    def _enqueue(self, item: _Call) -> None:
        with self._ready:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._calls.append(item)
            if not (self._woken or self._starting):
                self._summon()

    def _summon(self) -> None:
        """Get one more thread to the queue: an idle one, else a new one (lock held). A
        thread is on its way until it reaches the queue, new ones included: counting only
        woken ones let a burst of calls start a thread per call while the first new thread
        waited to be scheduled."""
        if self._idle > self._woken:
            self._woken += 1
            self._ready.notify()
            return
        self._starting += 1
        thread = threading.Thread(target=self._work, daemon=True,
                                  name=f"{self._name}-{len(self._threads)}")
        thread.start()
        self._threads.append(thread)

    def _work(self) -> None:
        ready = self._ready
        with ready:
            self._starting -= 1  # arrived
        while True:
            with ready:
                while not self._calls and not self._closed:
                    self._idle += 1
                    ready.wait()
                    self._idle -= 1
                    if self._woken:
                        self._woken -= 1
                if not self._calls:
                    return  # shut down, nothing left to run
                item = self._calls.popleft()
                if self._calls and not (self._woken or self._starting):
                    self._summon()  # more are waiting: the next thread takes the next one
            item.run()
            del item

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking calls; idle threads end, busy ones end with their call (or the
        process), and calls still queued are run first unless ``cancel_futures``."""
        with self._ready:
            self._closed = True
            threads = list(self._threads)
            if cancel_futures:
                while self._calls:
                    self._calls.popleft().future.cancel()
            self._ready.notify_all()
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
    context = contextvars.copy_context()
    return await executor().run_on_loop(functools.partial(context.run, fn, *args, **kwargs))
