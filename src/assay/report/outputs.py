"""Output files that cannot destroy an input, and never show half their content.

Every file assay writes (results JSONL, JUnit XML, UiPath output, any later report) goes
through :class:`AtomicOutput`: the bytes go to a temporary file beside the final path, which is
renamed over it only when the content is whole. A crash leaves the previous file as it was; a
reader never sees a half-written line. :func:`check_outputs` runs before any case: it refuses an
output that is a file the command uses (by path, symbolic link or hard link; see
:data:`Inputs`) or another output, and one that cannot be written. It is the one rule every
command that writes files goes through; what a run uses is gathered by the library
(:func:`assay.run.evaluate.run_inputs`, and a run's ``on_inputs``), each part naming its own
files (the suite, its evaluators, the targets file and its targets, the store, the cache).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from types import TracebackType

from assay._util.user_paths import user_path
from assay.errors import ConfigError, ErrorCategory, EvaluationError


class OutputWriteError(EvaluationError):
    """Writing an output file failed part way (a full disk, a vanished directory). The file
    keeps only whole content; the message says what was kept."""

    def __init__(self, message: str) -> None:
        super().__init__("output_write_failed", message, ErrorCategory.SYSTEM)


Inputs = Mapping[Path, str]
"""The files a command uses besides its outputs, each with what it is to the command (``the
suite file``, ``the Python module of target 'x'``): what no output may be."""


def _identity(path: Path) -> tuple[str, tuple[int, int] | None]:
    """What makes two paths the same file: the resolved path, and the (device, inode) of a
    file that exists (which also catches hard links)."""
    real = os.path.realpath(user_path(path))
    try:
        st = os.stat(real)
    except OSError:
        return real, None
    return real, (st.st_dev, st.st_ino)


def _same(a: tuple[str, tuple[int, int] | None], b: tuple[str, tuple[int, int] | None]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def check_outputs(outputs: Mapping[str, Path | None], inputs: Iterable[Path] | Inputs = (),
                  *, made: Collection[str] = (), force: bool = False) -> None:
    """Refuse, with a :class:`ConfigError`, outputs that would overwrite a file the command
    uses or another output, outputs that cannot be written, and (unless ``force``) outputs
    the user did not name that would replace a file.

    ``outputs`` maps the option that named each output (``"--output"``) to its path (None for
    one not asked for); ``inputs`` are the files the command reads or writes otherwise,
    mapped to what they are (see :data:`Inputs`; a plain list is "an input file" each).
    ``made`` lists the outputs the command chose itself (a sidecar written beside
    ``--out``): one of those that exists is replaced only with ``force``. Call it before
    anything runs: an output found unwritable afterwards would cost the whole run.
    """
    described: Inputs = (
        inputs if isinstance(inputs, Mapping) else dict.fromkeys(inputs, "an input file"))
    known = [(_identity(source), source, what) for source, what in described.items()]
    seen: list[tuple[str, Path, tuple[str, tuple[int, int] | None]]] = []
    for option, path in outputs.items():
        if path is None:
            continue
        ident = _identity(path)
        for other, source, what in known:
            if _same(ident, other):
                raise ConfigError(f"{_named(option, path)} is {what}{_also(path, source)}; "
                                  "write the output to another path: assay never writes over "
                                  "a file the command uses", code="output_is_input")
        for other_option, other_path, other in seen:
            if _same(ident, other):
                raise ConfigError(f"{_named(option, path)} and "
                                  f"{_named(other_option, other_path)} are the same file; "
                                  "give each output its own path", code="output_collision")
        if option in made and not force and ident[1] is not None:
            raise ConfigError(f"{_named(option, path)} exists and was not named on the "
                              "command line; move it away, or give --force to replace it",
                              code="output_exists")
        seen.append((option, path, ident))
        check_writable(path, option)


def _named(option: str, path: Path) -> str:
    """An output as the command line gave it: ``--junit x.xml``; ``--report html:x.html``
    names its path already."""
    return option if option.endswith(f":{path}") else f"{option} {path}"


def _also(path: Path, source: Path) -> str:
    """`` (the file)`` when the input is another path than the output (a link to it, a
    hard link), so the message shows which file both are."""
    same = os.path.abspath(user_path(path)) == os.path.abspath(user_path(source))
    return "" if same else f" ({source})"


def check_writable(path: Path, label: str = "output") -> None:
    """Raise :class:`ConfigError` unless a file can be created beside ``path`` and renamed
    onto it (creating missing directories, as writing it would)."""
    AtomicOutput(path, label).discard()


BUFFER_BYTES = 1 << 16
"""Bytes of whole units gathered before they are written to a temporary file."""


class AtomicOutput:
    """One output file, written to a temporary file in the same directory and renamed into
    place by :meth:`commit`.

    :meth:`write` takes whole units (a JSONL line, a document): if one fails half way, the
    temporary file is cut back to the end of the last whole unit, so :meth:`commit` can still
    keep everything written before. A symbolic link at ``path`` is followed: the file it points
    to is replaced, the link stays.

    With ``gather``, units bound for a temporary file are gathered up to
    :data:`BUFFER_BYTES` and written together: nobody reads that file before it is renamed,
    and a run killed outright leaves it unrenamed whether each unit had reached it or not,
    so a system call per result row (some 4% of a cached re-run) bought nothing.
    A failure while writing them is raised by the :meth:`write` or :meth:`commit` that
    wrote them; :meth:`commit` still puts the whole units that landed in place first. A
    terminal, pipe or device gets each unit at once, for whoever reads it as it comes.
    """

    def __init__(self, path: Path, label: str = "output", gather: bool = False) -> None:
        self.path = user_path(path)
        self.label = label
        self.gather = gather
        self.target = Path(os.path.realpath(self.path))
        self.written = 0
        self._units: list[bytes] = []  # whole units not yet written to the temporary file
        self._pending = 0  # their bytes
        self._failed: OutputWriteError | None = None
        self._done = False
        self.tmp: Path | None = None
        try:
            existing = os.stat(self.target)
        except OSError:
            existing = None
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise ConfigError(f"{label} {self.path} is a directory; give a file path",
                              code="unwritable_output")
        try:
            if existing is not None and not stat.S_ISREG(existing.st_mode):
                # A terminal, pipe or device (/dev/stdout): written in place, never replaced.
                self._fd = os.open(self.target, os.O_WRONLY | os.O_APPEND)
                return
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = self.target.with_name(f"{self.target.name}.{secrets.token_hex(4)}.tmp")
            # O_EXCL: never follow or reuse someone else's file; 0o666 lets the umask decide.
            self._fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise ConfigError(f"cannot write {label} {self.path}: "
                              f"{exc.strerror or exc}", code="unwritable_output") from None
        if existing is not None:  # keep the replaced file's permissions
            with contextlib.suppress(OSError):
                os.chmod(self.tmp, existing.st_mode & 0o7777)

    def write(self, data: bytes) -> None:
        """Append ``data`` whole, or not at all (then raise :class:`OutputWriteError`)."""
        if self._failed is not None:
            raise self._failed
        self._units.append(data)
        self._pending += len(data)
        if not self.gather or self.tmp is None or self._pending >= BUFFER_BYTES:
            self._drain()

    def _drain(self) -> None:
        """Write the gathered units; on a failure keep those that landed whole, drop the
        rest, and raise :class:`OutputWriteError` (every later write raises it again)."""
        if not self._units:
            return
        units, self._units, self._pending = self._units, [], 0
        data = units[0] if len(units) == 1 else b"".join(units)
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            landed = self.written + len(data) - len(view)
            for unit in units:
                if self.written + len(unit) > landed:
                    break
                self.written += len(unit)
            if self.tmp is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self.written)
            self._failed = OutputWriteError(
                f"writing {self.label} {self.path} failed: {exc.strerror or exc}. It keeps "
                "what was written whole before the failure")
            raise self._failed from None
        self.written += len(data)

    def commit(self) -> None:
        """Make the content written so far the file at ``path``."""
        if self._done:
            return
        failure: OutputWriteError | None = None
        try:
            self._drain()
        except OutputWriteError as exc:  # what landed whole is still put in place
            failure = exc
        self._done = True
        if self.tmp is None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            if failure is not None:
                raise failure
            return
        try:
            try:
                os.fsync(self._fd)
            finally:
                os.close(self._fd)
            os.replace(self.tmp, self.target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            raise OutputWriteError(f"writing {self.label} {self.path} failed: "
                                   f"{exc.strerror or exc}") from None
        if failure is not None:
            raise failure

    def discard(self) -> None:
        """Drop what was written; the file at ``path`` stays as it was."""
        if self._done:
            return
        self._done = True
        self._units, self._pending = [], 0
        with contextlib.suppress(OSError):
            os.close(self._fd)
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)

    def __enter__(self) -> AtomicOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def write_atomic(path: Path, data: bytes, label: str = "output") -> None:
    """Write a whole file at once through :class:`AtomicOutput`."""
    with AtomicOutput(path, label) as out:
        out.write(data)
