"""Outputs recorded elsewhere as the agent: ``provider: recorded`` with ``path: outputs.jsonl``.

For judging what an agent already produced (a production log, another tool's results): each
JSONL row is ``{"id": ..., "output": ...}`` keyed by case id (``eval_id`` and AgentV's
``candidate_answer`` are accepted too), optionally with ``messages``, ``trace``,
``retrieved_context``, ``latency_ms``, ``usage`` or ``error``. Other keys are ignored, so
result files of other tools can be judged again as they are. A later row for the same id
replaces an earlier one (the last attempt wins).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from assay._util import jsondata
from assay._util.jsonlines import json_lines
from assay.errors import ConfigError
from assay.targets.base import RecordedOutput
from assay.targets.config import FieldSpec, TargetConfig
from assay.types.execution import Execution

EXECUTION_KEYS = ("input", "messages", "trace", "retrieved_context", "latency_ms", "usage",
                  "error")


class RecordedTarget(RecordedOutput):
    """Answers each case with its recorded execution, from a JSONL file or the case itself."""

    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "path": FieldSpec((str,), "a JSONL file of {id, output} rows, relative to the suite"),
    }

    @classmethod
    def from_config(cls, config: TargetConfig, base_dir: Path, engine: object = None
                    ) -> RecordedTarget:
        path = config.get("path")
        outputs = load_recorded(base_dir / path) if path else {}
        target = cls(outputs)
        target.name = config.name
        return target


def jsonl_rows(path: Path, what: str) -> Iterator[tuple[str, Any]]:
    """(``file:line``, value) for each non-blank line of a JSONL file a target reads; a file
    that cannot be read or a line that is not JSON is a ConfigError saying where."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{what} {path}: {exc.strerror or exc}",
                          code="invalid_target") from None
    for number, line in json_lines(text):
        try:
            row = jsondata.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: invalid JSON: {exc}",
                              code="invalid_target") from None
        yield f"{path}:{number}", row


def load_recorded(path: Path | str) -> dict[str, Execution]:
    """Executions by case id from a JSONL file; a bad row is a ConfigError at file:line."""
    outputs: dict[str, Execution] = {}
    for where, row in jsonl_rows(Path(path), "recorded outputs"):
        case_id, execution = _row(row, where)
        outputs[case_id] = execution
    return outputs


def _row(row: Any, where: str) -> tuple[str, Execution]:
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: a row must be a JSON object", code="invalid_target")
    case_id = row.get("id", row.get("eval_id"))
    if isinstance(case_id, int) and not isinstance(case_id, bool):
        case_id = str(case_id)
    if not isinstance(case_id, str) or not case_id:
        raise ConfigError(f"{where}: a row needs an 'id' (or 'eval_id')",
                          code="invalid_target")
    fields = {k: row[k] for k in EXECUTION_KEYS if k in row}
    fields["output"] = row["output"] if "output" in row else row.get("candidate_answer")
    if fields["output"] is None and "error" not in fields:
        raise ConfigError(f"{where}: row {case_id!r} has no 'output'", code="invalid_target")
    try:
        return case_id, Execution.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"{where}: {problems}", code="invalid_target") from None
