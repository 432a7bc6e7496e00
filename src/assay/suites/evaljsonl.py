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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay._util.jsondata import DuplicateKey, UniqueDecoder
from assay._util.jsonlines import json_lines
from assay._util.limits import DEPTH_EXPECTED, depth_message, json_surrogate_problem, too_deep
from assay._util.yaml_source import (
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


CHUNK_CASES = 2000


def parse_case_line(line: str, file: str, number: int) -> tuple[Any, Problem | None]:
    """One line's JSON value, or the located problem that stops it being a case."""
    try:
        case = json.loads(line, cls=UniqueDecoder)
    except DuplicateKey as exc:
        return None, Problem(file, number, exc.colno, exc.what,
                             "each key once in an object")
    except json.JSONDecodeError as exc:
        return None, Problem(file, number, exc.colno, f"invalid JSON: {exc.msg}",
                             "one JSON object per line")
    except RecursionError:  # the decoder recurses, and gives up long past the bound
        return None, Problem(file, number, None, depth_message(), DEPTH_EXPECTED)
    if too_deep(case):
        return None, Problem(file, number, None, depth_message(), DEPTH_EXPECTED)
    unpaired = json_surrogate_problem(line, case)
    if unpaired is not None:
        return None, Problem(file, number, None, *unpaired)
    return case, None


def iter_eval_jsonl(path: Path, chunk: int = CHUNK_CASES) -> Iterator[Loaded]:
    """The file as a sequence of documents of at most ``chunk`` cases each, read lazily.

    Each document carries the sidecar and its own cases with their line numbers, so a large
    dataset is validated and run without ever holding all of its cases in memory.
    """
    file = str(path)
    sidecar_source = SourceMap(Mark(file, None, None))
    sidecar_problems: list[Problem] = []
    sidecar = _sidecar(path, sidecar_source, sidecar_problems)
    first = True

    def document(cases: list[Any], marks: list[Mark], problems: list[Problem]) -> Loaded:
        source = SourceMap(Mark(file, None, None))
        source.keys.update(sidecar_source.keys)
        source.values.update(sidecar_source.values)
        source.keys[("evalcases",)] = source.values[("evalcases",)] = Mark(file, None, None)
        for index, mark in enumerate(marks):
            source.keys[("evalcases", index)] = source.values[("evalcases", index)] = mark
        return Loaded({**sidecar, "evalcases": cases}, source, problems)

    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        yield Loaded(None, sidecar_source,
                     [Problem(file, None, None, f"cannot read file: {exc.strerror}")])
        return
    with handle:
        cases: list[Any] = []
        marks: list[Mark] = []
        problems: list[Problem] = list(sidecar_problems)
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                case, problem = parse_case_line(line, file, number)
                if problem is not None:
                    problems.append(problem)
                else:
                    cases.append(case)
                    marks.append(Mark(file, number, None))
                if len(cases) >= chunk:
                    yield document(cases, marks, problems)
                    first = False
                    cases, marks, problems = [], [], []
        except UnicodeDecodeError:
            problems.append(Problem(file, None, None, "cannot read file: not UTF-8 text"))
        if cases or problems or first:
            yield document(cases, marks, problems)


def iter_case_ids(path: Path) -> Iterator[tuple[str, int]]:
    """(case id, line number) for each line holding a case with an id, read lightly."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            case, problem = parse_case_line(line, str(path), number)
            if problem is None and isinstance(case, dict) and case.get("id") is not None:
                yield str(case["id"]), number


def read_eval_jsonl(path: Path) -> Loaded:
    """The JSONL cases and their sidecar as one EVAL.yaml-shaped document.

    ``data`` is None only when the JSONL file cannot be read at all; otherwise every line
    that parses becomes a case and every line that does not is a problem.
    """
    file = str(path)
    source = SourceMap(Mark(file, None, None))
    problems: list[Problem] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        return Loaded(None, source, [Problem(file, None, None, f"cannot read file: {reason}")])
    document: dict[str, Any] = _sidecar(path, source, problems)
    cases: list[Any] = []
    source.keys[("evalcases",)] = source.values[("evalcases",)] = Mark(file, None, None)
    for number, line in json_lines(text):
        case, problem = parse_case_line(line, file, number)
        if problem is not None:
            problems.append(problem)
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
