"""Users' code: importing it by reference, and the one wrapper every call into it goes through.

Agents (``provider: python``), scorers (``type: python``) and UiPath entry points all name a
function as ``module:function`` or ``path/to/file.py:function``, so it is loaded one way: found
in the places given (the suite's or the project's directory) before ``sys.path``, a bare module
beside the suite loaded by its file (so two suites' ``agent.py`` never shadow each other), and
every failure a ConfigError saying what failed, never a traceback.

Every call into user code (agents and other targets, scorers and evaluators, custom LLM
services, plugins as they load and register, imports of users' modules) runs inside
``with user_code():``. A ``BaseException`` that is not an ``Exception`` (``sys.exit()``,
``KeyboardInterrupt`` raised by the code itself, ``SystemExit`` from a library that exits)
would otherwise fly past every ``except Exception`` and end the whole run, or the command,
silently; the wrapper re-raises it as :class:`UserCodeExit`, an ordinary ``Exception``, so it
fails that one call (a case's score or execution, a plugin's load) like any other error. The
run's own stopping passes through untouched: a cancellation, a generator or coroutine being
closed, and a Ctrl-C (outside an event loop, or while the task running the code is being
cancelled, which is how a run is interrupted).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from assay.errors import ConfigError


class UserCodeExit(Exception):
    """User code raised a BaseException that is not an Exception (see the module docstring);
    ``original`` is what it raised."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(raised(original))
        self.original = original


class _UserCode:
    """The context manager :func:`user_code` returns."""

    __slots__ = ("what",)

    def __init__(self, what: str | None) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        if exc is None or isinstance(exc, Exception) or _stopping(exc):
            return
        if self.what is None:
            raise UserCodeExit(exc) from exc
        raise ConfigError(f"{self.what} {raised(exc)}", code="user_code_exited") from exc


_USER_CODE = _UserCode(None)


def user_code(what: str | None = None) -> _UserCode:
    """``with user_code(): ...`` around a call into user code: an exit or other
    BaseException it raises becomes :class:`UserCodeExit` (see the module docstring), or,
    given ``what`` (``"the reporter 'count'"``), a ConfigError naming it: for code called
    while a command loads or finishes (plugins' reporters, suite formats, providers), where
    an error is the command's."""
    return _USER_CODE if what is None else _UserCode(what)


def _stopping(exc: BaseException) -> bool:
    """Whether ``exc`` is the run (or the user at the keyboard) stopping, not user code
    failing: those are never turned into errors."""
    if isinstance(exc, GeneratorExit):
        return True
    asyncio = sys.modules.get("asyncio")  # not imported: no loop, so no cancellation
    if asyncio is not None and isinstance(exc, asyncio.CancelledError):
        return True
    if not isinstance(exc, KeyboardInterrupt):
        return False
    if asyncio is None:
        return True
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no loop running: only a real Ctrl-C stops synchronous code
        return True
    # In a run, Ctrl-C cancels the run's task; a KeyboardInterrupt in a task that is not
    # being cancelled was raised by the code itself.
    return task is None or task.cancelling() > 0


def raised(exc: BaseException) -> str:
    """What user code's exception says, ``called sys.exit(4)`` for an exit."""
    if isinstance(exc, UserCodeExit):
        exc = exc.original
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})" if exc.code is not None else "called sys.exit()"
    return f"raised {type(exc).__name__}: {exc}"


def error_text(exc: BaseException) -> str:
    """``Type: message`` of what user code raised, the exit itself for an exit
    (``SystemExit: called sys.exit(4)``)."""
    if isinstance(exc, UserCodeExit):
        exc = exc.original
    if isinstance(exc, SystemExit):
        return f"SystemExit: {raised(exc)}"
    return f"{type(exc).__name__}: {exc}"


def load_function(reference: str, *places: Path) -> Callable[..., Any]:
    """Import ``module:function`` (``a.b:c.d`` for nested attributes) or ``file.py:function``,
    looking in ``places`` (the suite's directory, the project's) as well as on ``sys.path``.
    Raises ConfigError saying what failed.
    """
    module_name, sep, attribute = reference.rpartition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"function {reference!r}: expected 'module:function'",
                          code="invalid_target")
    module = _import(module_name, list(places) or [Path.cwd()])
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(f"function {reference!r}: {module_name} has no {attribute!r}",
                              code="invalid_target") from None
    if not callable(found):
        raise ConfigError(f"function {reference!r} is not callable", code="invalid_target")
    return typing.cast(Callable[..., Any], found)


def module_file(reference: str, *places: Path) -> Path | None:
    """The file :func:`load_function` imports for ``reference``, found as it finds it but
    without importing anything; None when no file is found (a module importable some other
    way, or none). What a run's outputs must never overwrite."""
    module_name = reference.rpartition(":")[0]
    if not module_name:
        return None
    where = list(places) or [Path.cwd()]
    by_file = _by_file(module_name, where)
    if by_file is not None:
        return by_file
    parts = module_name.split(".")
    for root in [*where, *(Path(p) for p in sys.path if p)]:
        base = root.joinpath(*parts)
        for candidate in (base.with_name(f"{parts[-1]}.py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    return None


def _by_file(module_name: str, places: list[Path]) -> Path | None:
    """The file a ``file.py`` reference names, or a bare module's file beside one of the
    places: both are loaded by file, not by name."""
    if module_name.endswith(".py"):
        found = [p / module_name for p in places if (p / module_name).is_file()]
        return (found[0] if found else places[0] / module_name).resolve()
    if "." not in module_name:
        for place in places:
            beside = place / f"{module_name}.py"
            if beside.is_file():
                return beside.resolve()
    return None


def _import(module_name: str, places: list[Path]) -> ModuleType:
    try:
        with user_code():
            return _import_from(module_name, places)
    except ConfigError:
        raise
    except Exception as exc:  # a module that exits or raises while importing
        looked = ", ".join(str(p) for p in places)
        raise ConfigError(f"cannot import agent module {module_name!r} (looked in {looked} "
                          f"and on sys.path): importing it {raised(exc)}",
                          code="invalid_target") from None


def _import_from(module_name: str, places: list[Path]) -> ModuleType:
    path = _by_file(module_name, places)
    if path is not None:
        # The suite's own agent.py: loaded by file so that another suite's agent.py,
        # already imported under the same name, is never mistaken for it.
        return _import_file(path)
    with contextlib.ExitStack() as stack:
        for place in places:
            stack.enter_context(_on_path(place))
        return importlib.import_module(module_name)


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"agent module file {path} does not exist", code="invalid_target")
    # A name unique to the file, so two suites' agent.py files never shadow each other.
    name = f"_assay_agent_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {path} as a Python module", code="invalid_target")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _on_path(path.parent):
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


@contextlib.contextmanager
def _on_path(directory: Path) -> Iterator[None]:
    entry = str(directory.resolve())
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(entry)
