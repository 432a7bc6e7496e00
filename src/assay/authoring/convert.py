"""Suite files from one format to another: EVAL.yaml <-> JSONL (AgentV's ``convert``), and
AgentV 2's EVAL.yaml <-> AgentV 4's (see :mod:`assay.authoring.versions`).

A JSONL suite is one case per line plus a sidecar ``<name>.yaml`` holding the rest of the
suite (``description``, ``dataset``, ``execution``...). Converting keeps every key as written
(prompt file paths included, so the output goes beside the input), and the result is checked
as a suite before it is kept: a conversion never leaves a file assay cannot load. The source
is checked first too, so a broken suite is reported at its own ``file:line:col``.

A results file (rows with ``eval_id`` and ``score``, as ``assay run -o`` writes) converts to
YAML documents, as ``agentv convert`` does for results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from assay._util import jsondata, yaml_text
from assay._util.jsonlines import json_lines
from assay._util.user_paths import user_path
from assay.authoring.versions import CONVERTERS, first_difference, meaning, version_of
from assay.errors import ConfigError
from assay.report.outputs import check_outputs, write_atomic
from assay.suites.model import Suite

CASE_KEYS = ("evalcases", "cases")


class _Dumper(yaml_text.Dumper):
    """YAML as a person writes it: text of several lines as a ``|`` block."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()):
        return yaml_text.text_node(dumper, value, style="|")
    return yaml_text.text_node(dumper, value)


_Dumper.add_representer(str, _text)


def _dump_yaml(data: Any) -> str:
    return yaml_text.dump(data, dumper=_Dumper)


FORMATS = ("v2", "v4", "jsonl")
"""What ``--to`` names: AgentV 2's EVAL.yaml, AgentV 4's, or AgentV 2's JSONL with a
sidecar."""


def default_output(source: Path, to: str | None = None) -> Path:
    """Where a conversion writes by default: ``x.yaml`` -> ``x-cases.jsonl`` (whose sidecar,
    ``x-cases.yaml``, then never replaces the source), ``x.jsonl`` -> ``x.eval.yaml``; to
    another version of the format, ``x.v4.yaml`` or ``x.v2.yaml``."""
    if to in ("v2", "v4") and not (to == "v2" and source.suffix.lower() == ".jsonl"):
        return source.with_name(f"{source.stem}.{to}.yaml")
    if source.suffix.lower() in (".yaml", ".yml"):
        return source.with_name(f"{source.stem}-cases.jsonl")
    return source.with_name(f"{source.stem}.eval.yaml")


def convert(source: Path, output: Path | None = None, force: bool = False,
            to: str | None = None) -> list[Path]:
    """Convert ``source``; returns the files written. ``to`` is the format to write (see
    :data:`FORMATS`; None: YAML to JSONL, JSONL to YAML, AgentV 4's file to AgentV 2's).
    A file the command line did not name (the default output, a sidecar written beside it)
    is never replaced unless ``force``."""
    from assay.suites.evalyaml import check_suite

    source = user_path(source)
    suffix = source.suffix.lower()
    if to is not None and to not in FORMATS:
        raise ConfigError(f"--to {to!r}: expected one of {', '.join(FORMATS)}",
                          code="invalid_output")
    if suffix == ".jsonl" and _looks_like_results(source):
        outputs = _Outputs(user_path(output) if output else default_output(source),
                           named=output is not None, force=force)
        return [_results_to_yaml(source, outputs)]
    suite, problems = check_suite(source, False)
    if problems or suite is None:
        lines = "\n".join(f"  {p}" for p in problems)
        raise ConfigError(f"{source} has {len(problems)} problem(s); fix them before "
                          f"converting:\n{lines}", code="invalid_suite")
    to = to or _default_format(source, suffix)
    outputs = _Outputs(user_path(output) if output else default_output(source, to),
                       named=output is not None, force=force)
    output = outputs.path
    if to == "jsonl":
        if suffix not in (".yaml", ".yml") or suite.metadata.get("format") == "agentv4":
            raise ConfigError(f"{source}: JSONL is written from an AgentV 2 EVAL.yaml; convert "
                              "an AgentV 4 file with --to v2 first", code="invalid_suite")
        if output.suffix.lower() != ".jsonl":
            raise ConfigError(f"{output}: converting YAML writes a .jsonl file",
                              code="invalid_output")
        written = _yaml_to_jsonl(source, outputs, suite.input_files())
    else:
        if output.suffix.lower() not in (".yaml", ".yml"):
            raise ConfigError(f"{output}: converting to {to} writes a .yaml file",
                              code="invalid_output")
        if suffix == ".jsonl" and to == "v2":
            written = _jsonl_to_yaml(source, outputs, suite.input_files())
        else:
            written = _to_version(source, suffix, to, outputs, suite.input_files())
    after, problems = check_suite(written[0], False)
    if problems or after is None:
        _discard(written)
        lines = "\n".join(f"  {p}" for p in problems)
        raise ConfigError(f"the converted suite would not load, so nothing was kept "
                          f"(paths in it are relative to {source.parent}; convert into that "
                          f"directory):\n{lines}", code="invalid_suite")
    if to in ("v2", "v4"):
        _same_meaning(suite, after, written)
    return written


def _default_format(source: Path, suffix: str) -> str:
    if suffix == ".jsonl":
        return "v2"
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    return "v2" if version_of(data) == "v4" else "jsonl"


def _to_version(source: Path, suffix: str, to: str, outputs: _Outputs,
                inputs: Mapping[Path, str]) -> list[Path]:
    """The suite in AgentV 2's or 4's format (see :mod:`assay.authoring.versions`)."""
    data = _document(source, suffix)
    if version_of(data) == to:
        raise ConfigError(f"{source} is already in AgentV {to[1:]}'s format",
                          code="invalid_output")
    outputs.check(inputs)
    converted = CONVERTERS[to](data, source.parent)
    write_atomic(outputs.path, _dump_yaml(converted).encode("utf-8"), outputs.label)
    return [outputs.path]


def _document(source: Path, suffix: str) -> dict[str, Any]:
    """The suite as one YAML document (a JSONL suite's cases under its sidecar's keys)."""
    if suffix != ".jsonl":
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    from assay.suites.evaljsonl import sidecar_of

    sidecar = sidecar_of(source)
    rest = yaml.safe_load(sidecar.read_text(encoding="utf-8")) if sidecar else {}
    return {**(rest or {}), "evalcases": [row for _, row in _rows(source)]}


def _same_meaning(before: Suite, after: Suite, written: list[Path]) -> None:
    """Refuse (keeping nothing) a conversion whose result would judge differently."""
    difference = first_difference(meaning(before), meaning(after))
    if difference is not None:
        _discard(written)
        raise ConfigError(f"the converted suite would not mean what the source means, so "
                          f"nothing was kept: {difference}", code="invalid_suite")


def _discard(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


class _Outputs:
    """Where a conversion writes, and the one check every file it writes goes through."""

    def __init__(self, path: Path, named: bool, force: bool) -> None:
        self.path, self.named, self.force = path, named, force
        self.label = "--out" if named else "the output"

    def check(self, inputs: Mapping[Path, str], sidecar: Path | None = None) -> None:
        """Refuse an output that is a file the suite uses, and one the command line did not
        name (the default output, the sidecar) that exists, unless ``force``."""
        made = ["the sidecar"] + ([] if self.named else [self.label])
        check_outputs({self.label: self.path, "the sidecar": sidecar}, inputs, made=made,
                      force=self.force)


def _yaml_to_jsonl(source: Path, outputs: _Outputs, inputs: Mapping[Path, str]) -> list[Path]:
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    key = next(k for k in CASE_KEYS if k in data)
    output = outputs.path
    sidecar = output.with_suffix(".yaml")
    outputs.check(inputs, sidecar)
    rest = {k: v for k, v in data.items() if k not in CASE_KEYS}
    lines = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in data[key])
    write_atomic(output, lines.encode("utf-8"), outputs.label)
    write_atomic(sidecar, _dump_yaml(rest).encode("utf-8"), "the sidecar")
    return [output, sidecar]


def _jsonl_to_yaml(source: Path, outputs: _Outputs, inputs: Mapping[Path, str]) -> list[Path]:
    outputs.check(inputs)
    write_atomic(outputs.path, _dump_yaml(_document(source, ".jsonl")).encode("utf-8"),
                 outputs.label)
    return [outputs.path]


def _looks_like_results(source: Path) -> bool:
    """Whether the file's first line is a results row (``eval_id`` and ``score``, no
    ``id``); its lines are read as every JSONL file is (:func:`_rows`)."""
    for _, line in json_lines(_text_of(source)):
        try:
            row = jsondata.loads(line)
        except ValueError:
            return False
        return isinstance(row, dict) and "eval_id" in row and "score" in row \
            and "id" not in row
    return False


def _text_of(source: Path) -> str:
    """A file's text, or an error naming it."""
    try:
        return source.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text ({exc.reason})",
                          code="invalid_suite") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot be read: {exc.strerror or exc}",
                          code="invalid_suite") from None


def _rows(source: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, object) for each line of a JSONL file; a line that is not a JSON object is an
    error naming the file and the line."""
    rows = []
    for number, line in json_lines(_text_of(source)):
        try:
            row = jsondata.loads_unique(line)
        except ValueError as exc:  # nesting past the decoder's recursion included
            raise ConfigError(f"{source} line {number}: {jsondata.not_json(exc)}",
                              code="invalid_suite") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{source} line {number}: expected a JSON object, not "
                              f"{type(row).__name__}", code="invalid_suite")
        rows.append((number, row))
    return rows


def _results_to_yaml(source: Path, outputs: _Outputs) -> Path:
    from assay.report.files import row_yaml

    output = outputs.path
    outputs.check({source: "the results file"})
    rows = [row for _, row in _rows(source)]
    write_atomic(output, b"".join(row_yaml(row, i == 0) for i, row in enumerate(rows)),
                 outputs.label)
    return output
