"""The ``assay`` command's entry point (``python -m assay`` too).

``assay --version`` is answered before the command line framework and the library are
imported: asking which version is installed should not cost a second.

When a command is done, the process leaves without the interpreter's teardown: clearing some
seven hundred modules and a last full garbage collection took about 0.2 s of every command
(a sixth of a one-case run). Everything a normal exit guarantees is still done first: exit
handlers run (run stores close their connections there), every file opened during the
command and the standard streams are flushed, and a thread the user's own code left running
is waited for as usual, as is a profiler, coverage or a debugger that reports when the
program ends.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import io
import os
import sys
import threading

_FILES = (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom, io.FileIO)
"""Open files are found by their concrete types: ``isinstance`` against the ``io.IOBase`` ABC
took 0.1 s over the hundred thousand objects of a run."""


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from assay import __version__

        print(f"assay {__version__}")
        return
    from assay._util.gc_pause import command_process, importing

    command_process()
    with importing():
        from assay.cli import main as run_command

    try:
        run_command()
    except SystemExit as done:
        leave(done.code)
    leave(0)


def leave(code: object) -> None:
    """Exit with ``code`` as ``SystemExit`` would, skipping only the teardown of objects."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if not (code is None or isinstance(code, int)) or any(not t.daemon for t in others) \
            or sys.getprofile() is not None or sys.gettrace() is not None:
        # A message to print, threads to wait for, or a profiler, coverage or a debugger
        # that writes its results once the program has ended: the usual way.
        raise SystemExit(code)
    atexit._run_exitfuncs()
    # Files opened while the command ran (the user's agent may leave one open); what was
    # imported before it is frozen (see gc_pause.importing) and not looked through again: the
    # standard streams are flushed below, and logging's own files by its exit handler.
    for obj in gc.get_objects():
        if isinstance(obj, _FILES) and not obj.closed:
            with contextlib.suppress(OSError, ValueError):
                obj.flush()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    main()
