"""AgentV's JSONL suites: one case per line, plus a sidecar ``<name>.yaml``.

``math.jsonl`` holds one JSON case object per line (the same keys as an EVAL.yaml case) and
``math.yaml`` beside it, when present, holds what applies to all of them: ``description``,
``name``, ``dataset``, ``execution`` (target, evaluators), ``evaluator``. The two are joined
into one document that the EVAL.yaml checker validates, so both formats report the same
problems; a problem in a case is located at ``file:line``, one in the sidecar at
``sidecar:line:col``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.suites.yaml_source import (
    Loaded,
    Mark,
    Problem,
    SourceMap,
    YamlSyntaxError,
    load_yaml_file,
)

SIDECAR_SUFFIXES = (".yaml", ".yml")


def sidecar_of(path: Path) -> Path | None:
    """The ``<name>.yaml`` (or ``.yml``) beside a JSONL file, if there is one."""
    for suffix in SIDECAR_SUFFIXES:
        candidate = path.with_suffix(suffix)
        if candidate.is_file():
            return candidate
    return None


def read_eval_jsonl(path: Path) -> Loaded:
    """The JSONL cases and their sidecar as one EVAL.yaml-shaped document.

    ``data`` is None only when the JSONL file cannot be read at all; otherwise every line
    that parses becomes a case and every line that does not is a problem.
    """
    file = str(path)
    source = SourceMap(Mark(file, None, None))
    problems: list[Problem] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        return Loaded(None, source, [Problem(file, None, None, f"cannot read file: {reason}")])
    document: dict[str, Any] = _sidecar(path, source, problems)
    cases: list[Any] = []
    source.keys[("evalcases",)] = source.values[("evalcases",)] = Mark(file, None, None)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(file, number, exc.colno, f"invalid JSON: {exc.msg}",
                                    "one JSON object per line"))
            continue
        mark = Mark(file, number, None)
        index = len(cases)
        source.keys[("evalcases", index)] = source.values[("evalcases", index)] = mark
        cases.append(case)
    document["evalcases"] = cases
    return Loaded(document, source, problems)


def _sidecar(path: Path, source: SourceMap, problems: list[Problem]) -> dict[str, Any]:
    sidecar = sidecar_of(path)
    if sidecar is None:
        return {}
    try:
        loaded = load_yaml_file(sidecar)
    except YamlSyntaxError as exc:
        problems.append(exc.problem)
        return {}
    problems.extend(loaded.problems)
    if loaded.data is None:
        return {}
    if not isinstance(loaded.data, dict):
        problems.append(Problem.at(loaded.source.root, "a sidecar file must be a mapping",
                                   "description, execution, ..."))
        return {}
    document = dict(loaded.data)
    for key in ("evalcases", "cases"):
        if key in document:
            problems.append(Problem.at(loaded.source.locate((key,)),
                                       f"{key} in a sidecar file are ignored",
                                       f"cases as lines of {path.name}"))
            del document[key]
    for where, mark in loaded.source.keys.items():
        if where:
            source.keys[where] = mark
    for where, mark in loaded.source.values.items():
        if where:
            source.values[where] = mark
    return document
