"""What a GitHub Actions job shows of a run: its Markdown in the job's step summary, and an
``::error`` annotation on each case that failed, at the line of the suite that defines it.

``$GITHUB_STEP_SUMMARY`` names the summary file when a step runs under GitHub Actions; every
command that writes Markdown (``assay compare``, ``assay report --markdown``, ``assay run
--report markdown:FILE``) appends it there too when the variable is set, so a workflow needs
no step of its own for it. Annotations are
workflow commands on standard output: their text is escaped as GitHub reads it (``%``, line
breaks, and in properties ``:`` and ``,``), so a case's hostile id or output cannot end a
command early or start another, and other control characters are shown as escapes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from assay._util.control_chars import printable
from assay._util.redact import scrub
from assay.errors import ConfigError
from assay.run.policies.base import Scale
from assay.types.records import CaseRecord, Verdict

SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
MAX_ANNOTATIONS = 50
"""GitHub shows at most 10 error annotations a step and 50 a job: the first of them."""
MESSAGE_CHARS = 1_000


def append_step_summary(markdown: str, inputs: Mapping[Path, str] | None = None) -> bool:
    """Append ``markdown`` to the job's step summary when ``$GITHUB_STEP_SUMMARY`` is set;
    False when it is not. A summary file that is one of the command's ``inputs`` is refused."""
    given = os.environ.get(SUMMARY_VARIABLE, "").strip()
    if not given:
        return False
    path = Path(given)
    for used, what in (inputs or {}).items():
        if path.resolve() == Path(used).resolve():
            raise ConfigError(f"${SUMMARY_VARIABLE} is {path}, which is {what}: the summary "
                              "would write over it", code="output_is_input")
    with path.open("a", encoding="utf-8") as out:
        out.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True


def write_markdown(path: Path | None, markdown: str,
                   inputs: Mapping[Path, str] | None = None) -> None:
    """Write ``markdown`` to ``path`` (None: no file) and append it to the step summary when
    ``$GITHUB_STEP_SUMMARY`` is set: the one way a command writes Markdown. A ``path`` that
    is the summary file itself is appended to once, never replaced: the summary holds what
    the job's earlier steps wrote."""
    from assay.report.outputs import write_atomic

    given = os.environ.get(SUMMARY_VARIABLE, "").strip()
    if path is not None and not (given and Path(given).resolve() == Path(path).resolve()):
        write_atomic(path, markdown.encode("utf-8"), "Markdown report")
    append_step_summary(markdown, inputs)


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub unescapes it, with every other
    control character shown as its escape (``\x1b``) as the terminal shows it: the job's
    log is a terminal too, and an escape sequence or a bidirectional override in a case's
    id or output would act on it."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A workflow command's property value (file, title), escaped as GitHub unescapes it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _reason(record: CaseRecord, scale: Scale) -> str:
    if record.error:
        return f"the agent failed: {record.error}"
    bad = [s for s in record.scores if s.error is not None or s.passed is False]
    if not bad:  # failed by its policy's score alone, shown on the policy's scale
        return f"verdict {record.verdict.value}, {scale.name} {scale.shown(record.score)}"
    return "; ".join(f"{s.name}: " + (f"error {s.error.code}" if s.error else
                                      s.rationale or "failed") for s in bad[:3])


def failure_annotations(records: Iterable[CaseRecord], root: Path | None = None,
                limit: int = MAX_ANNOTATIONS, scale: Scale | None = None) -> list[str]:
    """An ``::error`` workflow command for each case that failed or errored
    (:attr:`~assay.types.records.CaseRecord.failed_or_errored`: an evaluator error too; the first
    ``limit``), at the suite file and line that define it (relative to ``root``, the
    workspace, when inside it); a case score is shown on ``scale``, the run's policy's
    (:func:`assay.run.display.scale_for`), as every surface shows it."""
    scale = scale or Scale()
    found = []
    for record in records:
        if not record.failed_or_errored:
            continue
        title = f"case {record.case_id} {record.verdict.value}"
        if record.verdict not in (Verdict.FAIL, Verdict.ERROR):
            title += " (an evaluator error)"
        properties = [f"title={escape_property(title)}"]
        source = record.source
        if source is not None:
            path = Path(source.file)
            if root is not None:
                with contextlib.suppress(ValueError):
                    path = path.resolve().relative_to(root.resolve())
            properties.insert(0, f"file={escape_property(path.as_posix())}")
            if source.line is not None:
                properties.insert(1, f"line={source.line}")
        message = scrub(_reason(record, scale))[:MESSAGE_CHARS]
        found.append(f"::error {','.join(properties)}::{escape_data(message)}")
        if len(found) >= limit:
            break
    return found


__all__ = [
    "SUMMARY_VARIABLE",
    "append_step_summary",
    "escape_data",
    "escape_property",
    "failure_annotations",
    "write_markdown",
]
