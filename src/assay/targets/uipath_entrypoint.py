"""A UiPath project's agent, found from its entry points when no target is named.

``uipath eval`` runs the project's own agent: ``uipath.json`` maps entry-point names to Python
functions (``{"functions": {"main": "main.py:main"}}``) and ``entry-points.json`` lists the
entry points with their input schemas. :func:`entrypoint_target` builds the Python target for
the named entry point, or for the only one there is; several without a name, or none, is an
error that lists what there is. The input schema is kept for generated inputs (input mocking).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay._util import jsondata
from assay.errors import ConfigError


@dataclass
class EntryPoint:
    """One entry point: its name, the ``file.py:function`` it runs, its input schema."""

    name: str
    function: str
    input_schema: dict[str, Any] = field(default_factory=dict)


def _read(path: Path) -> Any:
    try:
        return jsondata.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}", code="invalid_project") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}",
                          code="invalid_project") from None


def find_entrypoints(project: Path) -> dict[str, EntryPoint]:
    """The project's entry points by name (empty when it declares none)."""
    config = _read(project / "uipath.json") or {}
    functions = config.get("functions") if isinstance(config, dict) else None
    functions = functions if isinstance(functions, dict) else {}
    listed = _read(project / "entry-points.json") or {}
    entries = listed.get("entryPoints") if isinstance(listed, dict) else None
    schemas: dict[str, dict[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("filePath"), str):
            schema = entry.get("input")
            schemas[entry["filePath"]] = schema if isinstance(schema, dict) else {}
    found: dict[str, EntryPoint] = {}
    for name, target in functions.items():
        if isinstance(target, str) and ":" in target:
            found[str(name)] = EntryPoint(str(name), target, schemas.get(str(name), {}))
    for name, schema in schemas.items():  # listed without a function: file.py's main()
        if name not in found and name.endswith(".py"):
            found[name] = EntryPoint(name, f"{name}:main", schema)
    return found


def choose(project: Path, name: str | None) -> EntryPoint | None:
    """The entry point to run: ``name``, else the only one; None when there is none."""
    found = find_entrypoints(project)
    if name is not None:
        key = name if name in found else next(
            (k for k, e in found.items() if e.function.split(":")[0] == name), None)
        if key is None:
            raise ConfigError(f"entry point {name!r} is not declared in {project}/uipath.json "
                              f"(declared: {', '.join(found) or 'none'})",
                              code="unknown_target")
        return found[key]
    if not found:
        return None
    if len(found) > 1:
        raise ConfigError(f"{project} declares several entry points ({', '.join(found)}); "
                          "name one (assay eval ENTRYPOINT EVAL_SET) or pass --target",
                          code="unknown_target")
    return next(iter(found.values()))


def entrypoint_target(project: Path, name: str | None = None) -> Any:
    """The Python target running the project's entry point; None when it declares none."""
    entry = choose(project, name)
    if entry is None:
        return None
    from assay.targets.callable import CallableTarget, load_function

    return CallableTarget(load_function(entry.function, project), name=entry.name)
