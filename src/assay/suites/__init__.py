"""Suite files in and out: EVAL.yaml, UiPath eval sets, JSONL; all load into :class:`Suite`.

:func:`load_any` and :func:`check_any` are the one way in, for every command: ``assay run``
runs what ``assay validate`` accepts, and ``validate`` reports what ``run`` would refuse, for
every format. The format is chosen from the path: a directory or a ``.json`` file is a UiPath
project or eval set, ``.yaml``/``.yml`` an EVAL.yaml, ``.jsonl`` a JSONL file of cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.suites.model import Suite, SuiteCase

if TYPE_CHECKING:
    from assay._util.yaml_source import Problem
    from assay.suites.evalyaml import Targets

__all__ = ["Suite", "SuiteCase", "check_any", "find_format", "is_uipath", "load_any"]


def is_uipath(path: Path) -> bool:
    """Whether ``path`` names a UiPath project (a directory) or eval set (a ``.json`` file)."""
    return path.is_dir() or path.suffix.lower() == ".json"


def find_format(path: Path) -> Any:
    """The registered suite format that reads ``path``, or a ConfigError naming them all."""
    return _find_format(path)[1]


def _checked(path: Path, targets: Targets) -> tuple[Suite | None, list[Problem]]:
    """The format that reads ``path`` checks it (as user code: a plugin's format may exit)."""
    from assay._util.user_code import user_code

    name, fmt = _find_format(path)
    with user_code(f"the suite format {name!r}"):
        suite, problems = fmt.check(path, targets)
    return suite, list(problems)


def _find_format(path: Path) -> tuple[str, Any]:
    from assay._util.user_code import user_code
    from assay.errors import ConfigError
    from assay.registry import REGISTRY

    for plugins in (False, True):
        if plugins:
            REGISTRY.load_plugins()
        for name, fmt in REGISTRY.table("suite_format").items():
            with user_code(f"the suite format {name!r}"):
                if fmt.matches(path):
                    return name, fmt
    raise ConfigError(f"{path}: no suite format reads this file ({path.suffix or 'no suffix'});"
                      " expected an EVAL.yaml (.yaml, .yml), a JSONL file, a CSV or Parquet "
                      "file of rows, or a UiPath project (a directory or an eval-set .json)",
                      code="invalid_suite")


def load_any(path: Path | str, targets: Targets = None) -> Suite:
    """The suite at ``path``, of any format; raises an error naming every problem.

    ``targets`` is the targets file to check target names against (None: the nearest
    ``.assay/targets.yaml`` above the suite, as ``assay run`` uses).
    """
    from assay.errors import ConfigError
    from assay.suites.evalyaml import SuiteError

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory", code="missing_suite")
    suite, problems = _checked(path, targets)
    if problems or suite is None:
        raise SuiteError(str(path), problems)
    return suite


def check_any(path: Path | str, targets: Targets = None) -> tuple[Suite | None, list[Problem]]:
    """The suite at ``path`` (None when it cannot be built) and every problem found in it.

    Nothing runs and nothing raises for a bad file: each problem is located (``file:line:col``
    for YAML and JSONL, ``file: $.json.path`` for UiPath JSON).
    """
    from assay._util.yaml_source import Problem
    from assay.errors import EvaluationError

    path = Path(path)
    if not path.exists():
        return None, [Problem(str(path), None, None, "no such file or directory",
                              "an EVAL.yaml, a JSONL file of cases, or a UiPath project")]
    try:
        return _checked(path, targets)
    except EvaluationError as exc:
        return None, [problem_of(exc, path)]


def problem_of(exc: Exception, path: Path) -> Problem:
    """An error raised while loading, as a problem. UiPath's errors start with their location
    (``file: $.evaluations[2]...`` or ``file:line:col``); others belong to ``path``."""
    import re

    from assay._util.yaml_source import Problem
    from assay.errors import EvaluationError

    message = exc.message if isinstance(exc, EvaluationError) else str(exc)
    where, sep, rest = message.partition(": ")
    located = re.fullmatch(r"(.+?)(?::(\d+):(\d+))?", where)
    if sep and located and Path(located.group(1)).exists():
        line, column = located.group(2), located.group(3)
        return Problem(located.group(1), int(line) if line else None,
                       int(column) if column else None, rest)
    return Problem(str(path), None, None, message)
