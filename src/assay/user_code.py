"""Importing users' code by reference: ``module:function`` or ``path/to/file.py:function``.

Agents (``provider: python``), scorers (``type: python``) and UiPath entry points all name a
function this way, so it is loaded one way: found in the places given (the suite's or the
project's directory) before ``sys.path``, a bare module beside the suite loaded by its file
(so two suites' ``agent.py`` never shadow each other), and every failure a ConfigError saying
what failed, never a traceback.
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


def raised(exc: BaseException) -> str:
    """What an agent's exception says, ``called sys.exit(4)`` for an exit."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})" if exc.code is not None else "called sys.exit()"
    return f"raised {type(exc).__name__}: {exc}"


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
        path = _by_file(module_name, places)
        if path is not None:
            # The suite's own agent.py: loaded by file so that another suite's agent.py,
            # already imported under the same name, is never mistaken for it.
            return _import_file(path)
        with contextlib.ExitStack() as stack:
            for place in places:
                stack.enter_context(_on_path(place))
            return importlib.import_module(module_name)
    except (ConfigError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # a module that exits or raises while importing
        looked = ", ".join(str(p) for p in places)
        raise ConfigError(f"cannot import agent module {module_name!r} (looked in {looked} "
                          f"and on sys.path): importing it {raised(exc)}",
                          code="invalid_target") from None


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
