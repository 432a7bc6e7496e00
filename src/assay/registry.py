"""One registry for every extension point: evaluators, providers, targets, suite formats and
reporters, each with a decorator, and third-party plugins through the ``assay`` entry points.

A plugin is an installed package that declares, in its ``pyproject.toml``::

    [project.entry-points.assay]
    my_plugin = "my_plugin"            # a module whose decorators register what it defines

or ``"my_plugin:register"``, a function that is called with the :data:`REGISTRY`. Plugins are
loaded the first time a name is not found among the built-ins (or when every name is listed),
never at start-up, so an installed plugin costs nothing to a run that does not use it. A
plugin that fails to import (raising, or calling ``sys.exit()``) is an error naming it, not a
missing name or a silent exit.

Built-in names are reserved: registering one from outside assay (a plugin, or any user code)
is refused with a :class:`ReservedName` error, and a plugin that does so fails to load with a
message naming the plugin and the name. What ``exact_match`` (or ``openai``, ``python``,
``eval_yaml``, ``junit``) means never depends on which names a process looked up first.

Built-ins register the same way, on first use of their kind, so the ``assay`` command does not
import every evaluator and provider to print its version. Evaluators and providers go further:
a catalog (:mod:`assay.judges.catalog`, :mod:`assay.llm.providers.catalog`) says which module
defines each built-in name, so asking for one name imports that module only: a run of one
evaluator type does not import forty, and a provider's optional backend is imported only when
a model string names it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal, TypeVar

from assay._util.user_code import error_text, user_code
from assay.errors import ConfigError

Kind = Literal["evaluator", "provider", "target", "suite_format", "reporter", "scoring_policy"]
KINDS: tuple[Kind, ...] = ("evaluator", "provider", "target", "suite_format", "reporter",
                           "scoring_policy")
ENTRY_POINT_GROUP = "assay"

T = TypeVar("T")

_BUILTINS: dict[Kind, Callable[[], None]] = {}
"""How each kind's built-ins get registered: importing the modules that define them."""

_CATALOGS: dict[Kind, str] = {"evaluator": "assay.judges.catalog",
                              "provider": "assay.llm.providers.catalog",
                              "scoring_policy": "assay.run.policies.catalog"}
"""Kinds whose built-ins are imported one name at a time: a module with a ``MODULES`` dict
(name -> the module that registers it)."""

_UNREGISTERED: dict[Kind, tuple[str, str]] = {"target": ("assay.targets.config",
                                                         "builtin_kinds")}
"""Kinds whose built-in names never pass through the registry (the targets file resolves
its own kinds first): the module and function that name them."""


def _catalog(kind: Kind) -> dict[str, str]:
    """The built-in names of a kind that are imported on demand, with their modules."""
    module = _CATALOGS.get(kind)
    if module is None:
        return {}
    modules: dict[str, str] = importlib.import_module(module).MODULES
    return modules


def _is_builtin(obj: Any) -> bool:
    """Whether ``obj`` is part of assay itself (defined in one of its modules)."""
    module = getattr(obj, "__module__", None) or ""
    return module == "assay" or module.startswith("assay.")


class PluginError(ConfigError):
    """An ``assay`` plugin that could not be loaded."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="plugin_failed")


class ReservedName(ConfigError):
    """Code outside assay registering a built-in name, which only assay may give a meaning."""

    def __init__(self, kind: Kind, name: str) -> None:
        super().__init__(f"{kind.replace('_', ' ')} name {name!r} is a built-in's, and "
                         "built-in names are reserved; register yours under another name",
                         code="reserved_name")
        self.kind = kind
        self.name = name


class Registry:
    """Names -> objects, per kind."""

    def __init__(self) -> None:
        self._tables: dict[Kind, dict[str, Any]] = {kind: {} for kind in KINDS}
        self._builtins: set[Kind] = set()
        self._plugins_loaded = False

    def add(self, kind: Kind, name: str, obj: Any) -> None:
        """Register ``obj`` under ``name``; a later registration of a name replaces it, but
        a built-in name is reserved: registering one from outside assay raises
        :class:`ReservedName`."""
        if not _is_builtin(obj) and name in self.builtin_names(kind):
            raise ReservedName(kind, name)
        self._tables[kind][name] = obj

    def builtin_names(self, kind: Kind) -> set[str]:
        """Every name assay itself gives a meaning to, for one kind (reserved). A catalogue
        lists them all, so only a kind without one has its built-ins loaded here."""
        names = set(_catalog(kind))
        if not names:
            self._load_builtins(kind)
        names.update(n for n, obj in self._tables[kind].items() if _is_builtin(obj))
        source = _UNREGISTERED.get(kind)
        if source is not None:
            names.update(getattr(importlib.import_module(source[0]), source[1])())
        return names

    def table(self, kind: Kind) -> dict[str, Any]:
        """The live table of a kind, built-ins loaded (plugins only once looked for)."""
        self._load_builtins(kind)
        return self._tables[kind]

    def get(self, kind: Kind, name: str) -> Any | None:
        """The object named ``name``: built-ins first, then installed plugins; None if none."""
        table = self._tables[kind]
        found = table.get(name)
        if found is None:
            module = _catalog(kind).get(name)
            if module is not None:  # only its own module, not the whole kind
                importlib.import_module(module)
                found = table.get(name)
        if found is None:
            self._load_builtins(kind)
            found = table.get(name)
        if found is None and not self._plugins_loaded:
            self.load_plugins()
            found = table.get(name)
        return found

    def require(self, kind: Kind, name: str, where: str = "") -> Any:
        """Like :meth:`get`, raising a ConfigError that lists every registered name."""
        found = self.get(kind, name)
        if found is None:
            prefix = f"{where}: " if where else ""
            raise ConfigError(f"{prefix}unknown {kind.replace('_', ' ')} {name!r}; known: "
                              f"{', '.join(self.names(kind)) or 'none'}",
                              code=f"unknown_{kind}")
        return found

    def names(self, kind: Kind) -> list[str]:
        """Every registered name of a kind, plugins included."""
        self.load_plugins()
        return sorted({*self.table(kind), *_catalog(kind)})

    def load_plugins(self) -> None:
        """Import every installed ``assay`` plugin (once), after the built-ins of every kind
        that has a loader. A plugin that registers a built-in name, or raises or exits while
        loading or registering, is a :class:`PluginError` naming it."""
        if self._plugins_loaded:
            return
        for kind in KINDS:
            self._load_builtins(kind)
        self._plugins_loaded = True
        for point in entry_points(group=ENTRY_POINT_GROUP):
            loaded = _plugin_step(point, "load", point.load)
            if callable(loaded) and not isinstance(loaded, type):
                _plugin_step(point, "register", functools.partial(loaded, self))

    def _load_builtins(self, kind: Kind) -> None:
        if kind not in self._builtins:
            self._builtins.add(kind)
            loader = _BUILTINS.get(kind)
            if loader is not None:
                loader()


def _plugin_step(point: EntryPoint, step: str, call: Callable[[], Any]) -> Any:
    """One step of loading a plugin (its import, its register function), run as user code:
    what goes wrong, an exit too, is a PluginError naming the plugin."""
    plugin = f"the assay plugin {point.name!r} ({point.value})"
    try:
        with user_code():
            return call()
    except ReservedName as exc:
        raise PluginError(f"{plugin} registers the built-in {exc.kind.replace('_', ' ')} name "
                          f"{exc.name!r}; built-in names are reserved, so the plugin must "
                          "register it under another name") from None
    except Exception as exc:
        raise PluginError(f"{plugin} failed to {step}: {error_text(exc)}") from None


REGISTRY = Registry()


def builtins(kind: Kind) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Declare how a kind's built-ins are registered (called once, on first use)."""

    def decorate(loader: Callable[[], None]) -> Callable[[], None]:
        _BUILTINS[kind] = loader
        return loader

    return decorate


# -- one decorator per kind -------------------------------------------------------------------


def evaluator(cls: type[T]) -> type[T]:
    """Class decorator: an :class:`~assay.judges.Evaluator` buildable by its ``type`` name
    (from suite files, ``assay.evaluate(evaluators=["name"])`` and the CLI)."""
    REGISTRY.add("evaluator", cls.type, cls)  # type: ignore[attr-defined]
    return cls


def provider(*names: str) -> Callable[[T], T]:
    """Register a provider factory (``ModelSpec -> Provider``) under model-string prefixes:
    ``@provider("myllm")`` makes ``myllm:model-name`` a judge model."""

    def decorate(factory: T) -> T:
        for name in names:
            REGISTRY.add("provider", name, factory)
        return factory

    return decorate


def target_kind(*names: str) -> Callable[[T], T]:
    """Register a Target class under the ``provider:`` names a targets file uses for it."""

    def decorate(cls: T) -> T:
        for name in names:
            REGISTRY.add("target", name, cls)
        return cls

    return decorate


def suite_format(name: str) -> Callable[[T], T]:
    """Register a suite format: an object with ``matches(path) -> bool`` and
    ``load(path, targets_file) -> Suite`` (and optionally ``check(path, targets_file) ->
    (Suite | None, problems)``)."""

    def decorate(fmt: T) -> T:
        REGISTRY.add("suite_format", name, fmt)
        return fmt

    return decorate


def scoring_policy(cls: type[T]) -> type[T]:
    """Class decorator: a :class:`~assay.run.policies.base.ScoringPolicy` chosen by its
    ``name`` (``scoring: NAME`` in a suite, ``--scoring NAME``, ``RunConfig(scoring=...)``)."""
    REGISTRY.add("scoring_policy", cls.name, cls)  # type: ignore[attr-defined]
    return cls


def reporter(name: str) -> Callable[[T], T]:
    """Register a reporter: ``write(result, path)`` renders an evaluation result to a file
    (``assay run --report NAME:PATH``, ``assay report``)."""

    def decorate(fn: T) -> T:
        REGISTRY.add("reporter", name, fn)
        return fn

    return decorate


@builtins("evaluator")
def _evaluators() -> None:
    import pkgutil

    judges = importlib.import_module("assay.judges")
    # A new module is found here; the names it registers go in judges/catalog.py too (a
    # test checks the catalog against what this loads).
    for module in pkgutil.walk_packages(judges.__path__, "assay.judges."):
        importlib.import_module(module.name)


@builtins("scoring_policy")
def _policies() -> None:
    for module in set(_catalog("scoring_policy").values()):
        importlib.import_module(module)


@builtins("suite_format")
def _formats() -> None:
    importlib.import_module("assay.suites.formats")


@builtins("reporter")
def _reporters() -> None:
    importlib.import_module("assay.report.reporters")


__all__ = ["KINDS", "REGISTRY", "Kind", "PluginError", "Registry", "ReservedName", "evaluator",
           "provider", "reporter", "scoring_policy", "suite_format", "target_kind"]
