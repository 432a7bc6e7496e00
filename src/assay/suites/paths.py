"""What ``assay eval``'s arguments name: suite files and globs (``agentv eval a.yaml
'evals/**/*.yaml'``), or a UiPath entry point and eval set (``uipath eval main.py
evaluations/eval-sets/default.json``), and UiPath's ``--eval-ids`` list."""

from __future__ import annotations

import ast
import glob
from pathlib import Path
from typing import Any

from assay._util import jsondata
from assay._util.user_paths import user_path
from assay.errors import ConfigError

GLOB_CHARS = frozenset("*?[")


def _is_glob(text: str) -> bool:
    return any(c in text for c in GLOB_CHARS)


def expand(arguments: list[str], cwd: Path | None = None) -> tuple[str | None, list[Path]]:
    """(the UiPath entry point named, if any; the suite paths in order, globs expanded).

    A first argument that is a Python file, or a name that is not a file, is UiPath's
    ENTRYPOINT. With no suite, a UiPath project's only eval set is used, as ``uipath eval``
    finds it. A glob that matches nothing, or a path that does not exist, is an error.
    """
    here = cwd or Path.cwd()
    entrypoint: str | None = None
    suites: list[Path] = []
    for index, text in enumerate(arguments):
        text = str(user_path(text)) if text.startswith("~") else text
        if _is_glob(text):
            pattern = text if Path(text).is_absolute() else str(here / text)
            found = sorted(Path(p) for p in glob.glob(pattern, recursive=True))
            if not found:
                raise ConfigError(f"{text!r} matches no file", code="missing_suite")
            suites.extend(found)
            continue
        path = Path(text) if Path(text).is_absolute() else here / text
        if index == 0 and (text.endswith(".py") or (not path.exists() and "/" not in text
                                                    and "." not in Path(text).name)):
            entrypoint = text
            continue
        if not path.exists():
            raise ConfigError(f"{text}: no such file or directory", code="missing_suite")
        suites.append(path)
    if not suites:
        suites = [discover_eval_set(here)]
    return entrypoint, list(dict.fromkeys(suites))


def discover_eval_set(project: Path) -> Path:
    """A UiPath project's only eval set (``evaluations/eval-sets/*.json``)."""
    found = sorted((project / "evaluations" / "eval-sets").glob("*.json"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(f"no suite given and no UiPath eval set in {project}/evaluations/"
                          "eval-sets; give suite files or globs", code="missing_suite")
    raise ConfigError(f"several eval sets in {project}/evaluations/eval-sets ("
                      + ", ".join(p.name for p in found) + "); name one",
                      code="missing_suite")


def parse_eval_ids(text: str) -> list[str]:
    """UiPath's ``--eval-ids "['id1','id2']"`` (a Python list literal), or ``id1,id2``."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError):
            raise ConfigError(f"--eval-ids {text!r}: expected a list such as "
                              "\"['id1', 'id2']\" or id1,id2", code="invalid_option") from None
        if not isinstance(value, list) or not all(isinstance(v, str | int) for v in value):
            raise ConfigError(f"--eval-ids {text!r}: expected a list of ids",
                              code="invalid_option")
        return [str(v) for v in value]
    ids = [part.strip() for part in stripped.split(",") if part.strip()]
    if not ids:
        raise ConfigError("--eval-ids is empty", code="invalid_option")
    return ids


def parse_input_overrides(text: str) -> dict[str, dict[str, Any]]:
    """UiPath's ``--input-overrides '{"eval-1": {"operator": "*"}}'``: case id -> the fields
    to deep-merge into its input. JSON, or a Python dict literal as UiPath's own parser
    (``ast.literal_eval``) also takes."""
    value: Any
    try:
        value = jsondata.loads_unique(text)
    except jsondata.DuplicateKey as exc:
        raise ConfigError(f"--input-overrides {text!r}: {exc}", code="invalid_option") from None
    except ValueError:
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            raise ConfigError(f"--input-overrides {text!r}: expected an object such as "
                              "'{\"eval-1\": {\"operator\": \"*\"}}'",
                              code="invalid_option") from None
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, dict) for k, v in value.items()):
        raise ConfigError(f"--input-overrides {text!r}: expected an object of case id -> an "
                          "object of input fields", code="invalid_option")
    return value
