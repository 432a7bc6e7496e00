"""Suite files from one format to another: EVAL.yaml <-> JSONL (AgentV's ``convert``).

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

from assay._util.user_paths import user_path
from assay.errors import ConfigError
from assay.report.outputs import check_outputs, write_atomic

CASE_KEYS = ("evalcases", "cases")


def _dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def default_output(source: Path) -> Path:
    """Where a conversion writes by default: ``x.yaml`` -> ``x-cases.jsonl`` (whose sidecar,
    ``x-cases.yaml``, then never replaces the source), ``x.jsonl`` -> ``x.eval.yaml``."""
    if source.suffix.lower() in (".yaml", ".yml"):
        return source.with_name(f"{source.stem}-cases.jsonl")
    return source.with_name(f"{source.stem}.eval.yaml")


def convert(source: Path, output: Path | None = None, force: bool = False) -> list[Path]:
    """Convert ``source``; returns the files written. A file the command line did not name
    (the default output, a sidecar written beside it) is never replaced unless ``force``."""
    from assay.suites.evalyaml import check_suite

    source = user_path(source)
    outputs = _Outputs(user_path(output) if output else default_output(source),
                       named=output is not None, force=force)
    output = outputs.path
    suffix = source.suffix.lower()
    if suffix == ".jsonl" and _looks_like_results(source):
        return [_results_to_yaml(source, outputs)]
    suite, problems = check_suite(source, False)
    if problems or suite is None:
        lines = "\n".join(f"  {p}" for p in problems)
        raise ConfigError(f"{source} has {len(problems)} problem(s); fix them before "
                          f"converting:\n{lines}", code="invalid_suite")
    if suffix in (".yaml", ".yml"):
        if output.suffix.lower() != ".jsonl":
            raise ConfigError(f"{output}: converting YAML writes a .jsonl file",
                              code="invalid_output")
        written = _yaml_to_jsonl(source, outputs, suite.input_files())
    elif suffix == ".jsonl":
        if output.suffix.lower() not in (".yaml", ".yml"):
            raise ConfigError(f"{output}: converting JSONL writes a .yaml file",
                              code="invalid_output")
        written = _jsonl_to_yaml(source, outputs, suite.input_files())
    else:
        raise ConfigError(f"{source}: expected an EVAL.yaml or a JSONL suite",
                          code="invalid_suite")
    _, after = check_suite(written[0], False)
    if after:
        for path in written:
            path.unlink(missing_ok=True)
        lines = "\n".join(f"  {p}" for p in after)
        raise ConfigError(f"the converted suite would not load, so nothing was kept "
                          f"(paths in it are relative to {source.parent}; convert into that "
                          f"directory):\n{lines}", code="invalid_suite")
    return written


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
    from assay.suites.evaljsonl import sidecar_of

    output = outputs.path
    outputs.check(inputs)
    sidecar = sidecar_of(source)
    rest = yaml.safe_load(sidecar.read_text(encoding="utf-8")) if sidecar else {}
    cases = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    write_atomic(output, _dump_yaml({**(rest or {}), "evalcases": cases}).encode("utf-8"),
                 outputs.label)
    return [output]


def _looks_like_results(source: Path) -> bool:
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError:
                return False
            return isinstance(row, dict) and "eval_id" in row and "score" in row \
                and "id" not in row
    return False


def _results_to_yaml(source: Path, outputs: _Outputs) -> Path:
    from assay.report.files import row_yaml

    output = outputs.path
    outputs.check({source: "the results file"})
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    write_atomic(output, b"".join(row_yaml(row, i == 0) for i, row in enumerate(rows)),
                 outputs.label)
    return output
