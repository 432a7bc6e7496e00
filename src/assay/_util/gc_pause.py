"""Keep the cyclic garbage collector out of the way of the bulk jobs: importing, loading and
running.

Importing: ``importing`` around a command's imports. Importing the libraries a run needs
(typer, pydantic, SQLAlchemy, assay's own models) creates tens of thousands of objects that
live as long as the process; the collector walked them some 170 times during a one-case
``assay run`` (35-43 ms of its 0.7 s). They are frozen afterwards, so no later collection
walks them either.

Loading: ``gc_paused`` for a whole document built in memory: an EVAL.yaml, rows given as a
list or a DataFrame, a JSONL suite small enough that its cases are kept.

Parsing a large suite creates hundreds of thousands of small objects that are all kept, none
of them garbage and almost none in cycles, and each allocation burst triggers a collection
that walks them again: on a 10,000-case EVAL.yaml the collector took 0.9 s of 2.1 s. What is
built is held anyway, so pausing costs no memory; objects freed meanwhile go by reference
counting as always, and any cycle left over is collected once the collector is back on.
Never wrap a stream (a JSONL suite read while it runs) in this.

Running: ``gc_relaxed`` while cases are in flight. Each case allocates a few hundred short-lived
objects (requests, records, rows), so at the default threshold of 700 allocations the collector
ran 517 young and 47 middle collections over 2,000 cases, about a tenth of the client's CPU.
The young threshold is raised for the run and put back after; nothing is disabled.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

RUN_THRESHOLD = 10_000
"""Allocations between young collections while a run is in flight (Python's default: 700)."""

_lock = threading.Lock()
_runs = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block; restore its previous state after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def gc_relaxed() -> Iterator[None]:
    """Collect less often while a run is in flight; runs may nest or overlap (the server runs
    several at once): the first to start raises the threshold, the last to end restores it."""
    global _runs, _saved
    with _lock:
        if _runs == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(max(_saved[0], RUN_THRESHOLD), *_saved[1:])
        _runs += 1
    try:
        yield
    finally:
        with _lock:
            _runs -= 1
            if _runs == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None


_command_process = False


def command_process() -> None:
    """Declare this process a one-shot ``assay`` command (its entry point does), so that
    :func:`importing` may freeze what it imported."""
    global _command_process
    _command_process = True


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """Pause the collector while modules are imported; in the ``assay`` command's own
    process, then move everything alive into the permanent generation (``gc.freeze``).

    Freezing is for a process that lives for one command: whatever garbage is pending at
    that moment is never collected. A command invoked inside a longer-lived process (a
    test, a notebook) only pauses.
    """
    with gc_paused():
        yield
        if _command_process:
            # before the collector is back on, or its first young collection would walk
            # everything imported here
            gc.freeze()
