"""``assay generate rubrics``: draft rubric items from a case's expected outcome, with the
judge model (AgentV's ``agentv generate rubrics``).

For each case that has an ``expected_outcome`` and no ``rubrics``, the judge is shown the
question, the expected outcome and the reference answer (as data) and writes a checklist of 2
to 6 items, each ``{id, expected_outcome, weight, required}``. The items are validated (ids
unique slugs, weights above 0) and re-asked within the engine's bounds. They are drafts for a
person to read: the suite file is never edited in place; the items are printed, or written
into a copy of the suite (:func:`with_rubrics`), keeping the rest of the file as written.
A case the judge gives no usable rubrics costs only its own draft: :func:`draft_suite` keeps
every other case's and names each failed case with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from assay._util.redact import scrub_data
from assay.errors import ConfigError
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS
from assay.judges.llm.templates import delimit
from assay.llm.engine import JudgeEngine
from assay.llm.structured import ask_structured
from assay.types.case import Case

SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,40}$")

SYSTEM = """You write grading rubrics for evaluating an AI agent's answer. {data}

From the expected outcome (and the reference answer, if any), write 2 to 6 checklist items a
grader can check one by one in the candidate answer. Each item is one observable requirement,
phrased as what a good answer does. Mark an item required when an answer that misses it fails
whatever else it does well; weight the items by importance (1 is normal, up to 3).

Respond with a JSON object: {{"rubrics": [{{"id": "<short-slug>", "expected_outcome": \
"<requirement>", "weight": <number>, "required": <true|false>}}]}}"""


class DraftItem(JudgeAnswer):
    id: str
    expected_outcome: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0, le=3)
    required: bool = True

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not SLUG.match(value):
            raise ValueError(f"id {value!r} must be a short lower-case slug (a-z, 0-9, - or _)")
        return value


class DraftRubrics(JudgeAnswer):
    rubrics: list[DraftItem] = Field(min_length=1, max_length=8)

    @field_validator("rubrics")
    @classmethod
    def _unique(cls, items: list[DraftItem]) -> list[DraftItem]:
        ids = [i.id for i in items]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"rubric ids must be unique; repeated: {repeated}")
        return items


@dataclass(frozen=True)
class SuiteDrafts:
    """What the judge drafted for a suite's cases: each case's items, or why it has none.

    ``drafted`` and ``failed`` keep the cases' order; a case is in exactly one of them."""

    drafted: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


class DraftFailed(ConfigError):
    """The judge gave no usable rubrics for one case (an error it answered, or answers that
    never validated within the engine's re-asks)."""


async def draft_rubrics(case: Case, engine: JudgeEngine,
                        model: str | None = None) -> list[dict[str, Any]]:
    """Rubric items for ``case``, as suite-file mappings (known secrets a judge's answer
    quotes are hidden: the drafts are written into the suite file); :class:`DraftFailed`
    when the judge gave none that validate."""
    user = (f"[[ ## question ## ]]\n{delimit('question', case.question())}\n\n"
            f"[[ ## expected_outcome ## ]]\n"
            f"{delimit('expected_outcome', chr(10).join(case.expected_outcomes))}\n\n"
            f"[[ ## reference_answer ## ]]\n{delimit('reference_answer', case.expected_output)}")
    messages = [{"role": "system", "content": SYSTEM.format(data=DATA_NOT_INSTRUCTIONS)},
                {"role": "user", "content": user}]
    result = await ask_structured(engine, messages, DraftRubrics, model=model,
                                  name="rubrics")
    if result.value is None:
        assert result.error is not None
        raise DraftFailed(f"case {case.id!r}: the judge gave no usable rubrics: "
                          f"{result.error.message}", code=result.error.code)
    drafted: list[dict[str, Any]] = scrub_data([item.model_dump()
                                                for item in result.value.rubrics])
    return drafted


async def draft_suite(cases: Sequence[Case], engine: JudgeEngine,
                      model: str | None = None) -> SuiteDrafts:
    """Every case's draft, one case at a time; a case whose draft fails is named with the
    reason and the others' drafts are kept, so one bad answer never costs the rest."""
    drafts = SuiteDrafts()
    for case in cases:
        try:
            drafts.drafted[case.id] = await draft_rubrics(case, engine, model)
        except DraftFailed as exc:
            drafts.failed[case.id] = exc.message
    return drafts


def with_rubrics(source: Path, drafts: dict[str, list[dict[str, Any]]]) -> str:
    """The suite file's text with each drafted case given its ``rubrics:``, inserted after the
    case's ``id`` line (so comments and layout stay as written).

    The result must read as the suite with the rubrics added and nothing else changed; where
    lines cannot be inserted so (a case in flow style, ``- {id: x, ...}``; an id whose value
    is on a later line), the whole document is dumped anew instead, comments lost but the
    suite whole."""
    import copy

    from assay._util import yaml_text
    from assay._util.yaml_source import YamlSyntaxError, load_yaml, load_yaml_file

    loaded = load_yaml_file(source)
    data = loaded.data
    key = "evalcases" if "evalcases" in data else "cases"
    wanted = copy.deepcopy(data)
    for raw in wanted[key]:
        if isinstance(raw, dict) and str(raw.get("id")) in drafts:
            raw["rubrics"] = drafts[str(raw.get("id"))]
    text = _inserted(source.read_text(encoding="utf-8"), loaded, key, drafts)
    try:
        kept = text is not None and load_yaml(text, str(source)).data == wanted
    except YamlSyntaxError:
        kept = False
    if kept and text is not None:
        return text
    return yaml_text.dump(wanted)


def _inserted(text: str, loaded: Any, key: str,
              drafts: dict[str, list[dict[str, Any]]]) -> str | None:
    """``text`` with each drafted case's rubrics inserted after its ``id`` line; None where
    a case's id has no line of its own to follow (flow style)."""
    from assay._util import yaml_text

    lines = text.splitlines(keepends=True)
    inserts: list[tuple[int, str]] = []
    for index, case in enumerate(loaded.data[key]):
        items = drafts.get(str(case.get("id"))) if isinstance(case, dict) else None
        if not items:
            continue
        mark = loaded.source.keys.get((key, index, "id"))
        line = lines[mark.line - 1] if mark and mark.line else ""
        if mark is None or mark.line is None or mark.column is None or \
                "{" in line[:mark.column]:
            return None
        indent = " " * (mark.column - 1)
        block = yaml_text.dump({"rubrics": items})
        inserts.append((mark.line, "".join(indent + row + "\n" for row in block.splitlines())))
    for line_number, block in sorted(inserts, reverse=True):
        lines.insert(line_number, block)
    return "".join(lines)
