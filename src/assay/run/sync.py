"""Run assay's async core from synchronous code, including inside a running event loop.

With no loop running (scripts, the CLI) this is ``asyncio.run``. Inside a running loop (a
notebook cell) the coroutine runs to completion on a private loop in a worker thread while the
caller waits: no patching of asyncio, and the notebook's own loop is left alone. Either way the
private loop's pooled HTTP session is closed before the loop ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def _then_close(coro: Coroutine[Any, Any, T], out: list[T]) -> None:
    """Await ``coro`` into ``out``, then close the loop's HTTP session.

    The result is handed over in ``out``, not as the task's result: ``asyncio.run`` restores
    its Ctrl-C handler through ``signal.signal``, which (Python 3.11) builds the repr of the
    handler it replaces, a partial holding the finished main task, whose repr holds its
    result. A suite of 10,000 cases took a third of a second to be printed into that unused
    text."""
    from assay.llm.providers import close_http_session

    try:
        out.append(await coro)
    finally:
        await close_http_session()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` and return its result, wherever it is called from."""
    out: list[T] = []
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_then_close(coro, out))
        return out[0]
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="assay-sync") as pool:
        pool.submit(asyncio.run, _then_close(coro, out)).result()
    return out[0]
