"""What the viewer shows of a run and of a case, built from the typed records.

The API answers with these and the static HTML report embeds them, so the page renders the
same data the same way in both. Every figure a page shows comes with its text in a
``display`` field, made by :mod:`assay.types.numbers` (a run's by
:func:`assay.run.display.run_display`, a case score on its run's policy's scale): the page
shows those strings and formats no number itself, so the browser, the terminal and the
reports never disagree. No FastAPI here: the report uses this module without the server
extra.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, computed_field

from assay._util.times import iso_utc
from assay.report.family import CaseFamily, RunFamily, case_family
from assay.report.text_diff import DIFF_LINES, DiffLine, as_text, text_diff
from assay.report.trace_view import ToolMatchView, TraceView, tool_matches, trace_view
from assay.run.display import RunDisplay, execution_name, run_display, scale_for
from assay.run.policies.base import Scale
from assay.store.queries import CaseRow, RunItem
from assay.traces.retrieval import Retrieval, retrievals
from assay.traces.tools import ToolCallRecord, tool_calls
from assay.types import numbers
from assay.types.records import CaseRecord, RunRecord
from assay.types.score import Score


def _display(run: RunRecord | RunItem) -> RunDisplay | None:
    return None if run.summary is None else run_display(run.summary)


class _Times(BaseModel):
    """A run's times in ISO 8601 (UTC) beside its epoch seconds."""

    created_at: float | None
    finished_at: float | None = None

    @computed_field(description="created_at in ISO 8601, UTC")  # type: ignore[prop-decorator]
    @property
    def created(self) -> str | None:
        return iso_utc(self.created_at)

    @computed_field(description="finished_at in ISO 8601, UTC")  # type: ignore[prop-decorator]
    @property
    def finished(self) -> str | None:
        return iso_utc(self.finished_at)


class RunDetail(RunRecord, _Times):
    """A run's record, config snapshot included, with what its pages show beside it."""

    target: str | None = None
    pass_rate: float | None = None
    display: RunDisplay | None = Field(default=None, description="the run's figures, shown "
                                       "(None before it has a summary)")
    duration: str = Field(default=numbers.MISSING, description="how long the run took, shown")
    is_baseline: bool = False
    baseline_id: str | None = Field(default=None, description="the baseline run of this "
                                    "run's suite and target, when one is set")
    running_here: bool = Field(default=False, description="started by this server and "
                               "still running (it can be cancelled)")
    resume_command: str | None = Field(default=None, description="the command that finishes "
                                       "the run, when it stopped before completing")
    family: RunFamily | None = Field(default=None, description="the run as its family's "
                                     "tools show it (Databricks' or MLflow's names, "
                                     "Connexity's metrics and dimensions)")


MAX_CUTS = 100
"""The most cuts a case page lists (each is a line; a list of thousands would fill the page)."""


class Cut(BaseModel):
    """A value of a case page shown in part; the whole is at ``GET /runs/{id}/case/value``
    with this ``pointer``."""

    pointer: str = Field(description="where the value is in the page (a JSON pointer, RFC 6901)")
    unit: Literal["characters", "items", "members"]
    total: int = Field(description="how many the whole value has")
    shown: int = Field(description="how many of them the page shows")


class RunListItem(RunItem, _Times):
    """A run in a list of runs, with its figures shown."""

    display: RunDisplay | None = None


def list_item(item: RunItem) -> RunListItem:
    """A run of a list (:func:`assay.store.queries.list_runs`), with its figures shown."""
    return RunListItem(**dict(item), display=_display(item))


class CaseRowDisplay(BaseModel):
    """A case row's figures, shown."""

    name: str = Field(default="", description="the execution as every surface names it: its "
                      "case id, and '#' and its repeat when not the first ('c1#1')")
    score: str = Field(description="the case score, on its run's policy's scale")
    latency: str
    scores: dict[str, str] = Field(default_factory=dict,
                                   description="each evaluator's outcome: its value (0-1), "
                                   "'error CODE' or 'n/a'")


class ShownCaseRow(CaseRow):
    """A case in a page of cases, with its figures shown."""

    display: CaseRowDisplay


def shown_rows(rows: list[CaseRow], scale: Scale) -> list[ShownCaseRow]:
    """A page of cases with their figures shown, case scores on ``scale`` (the run's)."""
    return [ShownCaseRow(**dict(row), display=CaseRowDisplay(
        name=execution_name(row.case_id, row.repeat), score=scale.shown(row.score), latency=numbers.milliseconds(row.latency_ms),
        scores={name: cell.shown for name, cell in row.scores.items()}))
        for row in rows]


class ScoreDisplay(BaseModel):
    """A score's figures, shown, and its parts' (a multi-metric judge's metrics)."""

    value: str
    state: str = Field(default="scored", description="what became of the evaluator "
                       "(Score.outcome): error, measured, not applicable, failed, passed or "
                       "scored (a value no threshold held)")
    latency: str
    parts: list[ScoreDisplay] = Field(default_factory=list)


class CaseDisplay(BaseModel):
    """A case page's figures, shown."""

    name: str = Field(default="", description="the execution as every surface names it "
                      "(CaseRowDisplay.name)")
    score: str = Field(description="the case score, on its run's policy's scale")
    latency: str
    scores: list[ScoreDisplay] = Field(default_factory=list,
                                       description="one per score, in the record's order")
    tool_calls: list[str] = Field(default_factory=list,
                                  description="each tool call's duration, in order")
    turn_latencies: list[str] = Field(
        default_factory=list, description="each transcript message's turn latency, in order "
        "('-' on a message that records none)")
    cause_cost: str = Field(default=numbers.MISSING,
                            description="what the case's cause analysis cost")


def _score_display(score: Score) -> ScoreDisplay:
    return ScoreDisplay(value=score.shown, state=score.outcome,
                        latency=numbers.milliseconds(score.latency_ms),
                        parts=[_score_display(part) for part in score.parts])


class CaseDetail(BaseModel):
    """One case with everything stored for it, and the tool calls and retrievals read from
    its trace and messages."""

    model_config = ConfigDict(extra="forbid")

    record: CaseRecord
    tool_calls: list[ToolCallRecord]
    retrievals: list[Retrieval]
    display: CaseDisplay | None = None
    cuts: list[Cut] = Field(default_factory=list, description=(
        "the values this page shows in part (a text cut ends with a marker saying how long "
        "it is); empty when the case is shown whole"))
    cuts_not_listed: int = Field(default=0, description="cuts made beyond those listed")
    family: CaseFamily | None = Field(default=None, description="the case as its family's "
                                      "tools show it: its row in the run's naming, each "
                                      "multi-metric judge's metrics and outcomes")
    trace: TraceView | None = Field(default=None, description="the agent's trace as a span "
                                    "tree and a timing waterfall")
    tool_matches: list[ToolMatchView] = Field(
        default_factory=list, description="each tool evaluator's expected calls and the "
        "actual calls they matched, or why not")
    expected_diff: list[DiffLine] | None = Field(
        default=None, description="the line diff of the expected output (removed) and the "
        "agent's output (added); null when the case expects none or the agent gave none")
    expected_diff_cut: bool = Field(default=False, description=(
        f"an output had more lines than the diff compares ({DIFF_LINES:,}); the diff covers "
        "the first ones"))


def run_detail(run: RunRecord, target: str | None, baseline_id: str | None = None,
               running_here: bool = False, resume_command: str | None = None,
               family: RunFamily | None = None) -> RunDetail:
    took = None if run.finished_at is None or run.created_at is None else \
        (run.finished_at - run.created_at) * 1000
    return RunDetail(**run.model_dump(), target=target,
                     pass_rate=None if run.summary is None else run.summary.pass_rate,
                     display=_display(run), duration=numbers.milliseconds(took),
                     is_baseline=baseline_id == run.id, baseline_id=baseline_id,
                     running_here=running_here, resume_command=resume_command,
                     family=family)


def _turn_latency(extra: dict[str, Any] | None) -> float | None:
    """The latency a transcript message records of its turn (a conversation's last message
    of a turn has one), None when it records none."""
    value = (extra or {}).get("latency_ms")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def case_detail(record: CaseRecord, run: RunRecord | None = None) -> CaseDetail:
    """A case page; its score on ``run``'s policy's scale (assay's 0-1 when not given)."""
    calls = tool_calls(record.execution)
    display = CaseDisplay(
        name=execution_name(record.case_id, record.repeat),
        score=scale_for(run).shown(record.score),
        latency=numbers.milliseconds(record.execution.latency_ms),
        scores=[_score_display(score) for score in record.scores],
        tool_calls=[numbers.milliseconds(call.duration_ms) for call in calls],
        turn_latencies=[numbers.milliseconds(_turn_latency(m.model_extra))
                        for m in record.execution.messages or []],
        cause_cost=numbers.MISSING if record.cause_analysis is None
        else numbers.cost(record.cause_analysis.usage.cost))
    diff, cut = _expected_diff(record)
    return CaseDetail(record=record, tool_calls=calls,
                      retrievals=retrievals(record.execution), display=display,
                      family=case_family(record, run), trace=trace_view(record.execution),
                      tool_matches=tool_matches(record.scores), expected_diff=diff,
                      expected_diff_cut=cut)


def _expected_diff(record: CaseRecord) -> tuple[list[DiffLine] | None, bool]:
    """How the agent's output differs from the case's expected output, line by line (the
    diff the side-by-side view of two runs uses); none when either is missing."""
    expected, output = record.case.expected_output, record.execution.output
    if expected is None or output is None:
        return None, False
    return text_diff(as_text(expected), as_text(output))


def has_metric_judge(run: RunRecord) -> bool:
    """Whether a run's cases may hold a multi-metric (Connexity) judge's verdicts."""
    return run.config.run.scoring == "connexity" or any(
        "connexity" in spec.type for spec in run.config.evaluators)


# -- a case page of bounded size -------------------------------------------------------------

CASE_PAGE_BYTES = 1_000_000
"""About the most a case page holds (JSON bytes): a case whose output, trace or judge
transcripts are larger is cut to fit, every cut listed in ``cuts``."""
TEXT_CHARS = 50_000
"""The most of one text a case page shows, however much room the page has."""
MIN_TEXT_CHARS = 64
"""The least of a text that is shown when it is cut (with its marker)."""
MIN_ITEM_BYTES = 2_000
"""The least room an item of a list is given: a list with more items than fit at this size
shows its first items only."""
MIN_MEMBER_BYTES = 32
"""The least room a member of a mapping is given: a mapping with more members than fit at
this size shows its first members only."""


def cut_marker(total: int) -> str:
    """What ends a text that was cut: it says so, and how long the whole text is."""
    return f"… [cut: {total:,} characters in all]"


def pointer_part(key: str | int) -> str:
    """One step of a JSON pointer (``~`` and ``/`` escaped, RFC 6901)."""
    return "/" + str(key).replace("~", "~0").replace("/", "~1")


def fit(data: Any, limit: int = CASE_PAGE_BYTES) -> tuple[Any, list[Cut]]:
    """``data`` (JSON data) cut to about ``limit`` bytes of JSON, and the cuts made.

    Room is shared out like water: the members or items smaller than their share are kept
    whole, and what is left is shared among the larger ones, so that a huge output or trace
    never crowds out the small fields (a score, a verdict) beside it. A text is cut to its
    share (at most :data:`TEXT_CHARS`) and ends with :func:`cut_marker`; a list or mapping
    too long for its members to have room keeps its first ones. Keys and types never change,
    so the page reads as the whole would. The cuts come largest first (by the whole value's
    size)."""
    fitter = _Fitter()
    fitted = fitter.fit(data, limit, "")
    return fitted, [cut for _, cut in sorted(fitter.cuts, key=lambda c: -c[0])]


def bounded_case(detail: CaseDetail, limit: int = CASE_PAGE_BYTES) -> dict[str, Any]:
    """A case page (JSON data) of about ``limit`` bytes at most, whatever the case holds:
    :func:`fit`, with the first :data:`MAX_CUTS` cuts listed."""
    data, cuts = fit(orjson.loads(detail.model_dump_json(exclude={"cuts"})), limit)
    data["cuts"] = [c.model_dump() for c in cuts[:MAX_CUTS]]
    data["cuts_not_listed"] = max(0, len(cuts) - MAX_CUTS)
    return data


class _Fitter:
    def __init__(self) -> None:
        self.cuts: list[tuple[int, Cut]] = []
        """Each cut with the size of the whole value."""
        self.sizes: dict[int, int] = {}

    def size(self, value: Any) -> int:
        """The JSON size of ``value`` in bytes, each container's computed once."""
        if not isinstance(value, dict | list):
            return len(orjson.dumps(value))
        found = self.sizes.get(id(value))
        if found is None:
            members = value.items() if isinstance(value, dict) else enumerate(value)
            found = 2 + sum(self.size(v) + (self.size(k) + 2 if isinstance(value, dict)
                                             else 1) for k, v in members)
            self.sizes[id(value)] = found
        return found

    def cut(self, whole: Any, cut: Cut) -> None:
        self.cuts.append((self.size(whole), cut))

    def fit(self, value: Any, limit: int, pointer: str) -> Any:
        if self.size(value) <= limit and not (isinstance(value, str)
                                              and len(value) > TEXT_CHARS):
            return value
        if isinstance(value, str):
            return self._text(value, limit, pointer)
        if isinstance(value, dict):
            return self._mapping(value, limit, pointer)
        if isinstance(value, list):
            return self._items(value, limit, pointer)
        return value  # a number, a boolean or null: never large

    def _text(self, text: str, limit: int, pointer: str) -> str:
        keep = max(MIN_TEXT_CHARS, min(TEXT_CHARS, limit - 48))
        encoded = self.size(text[:keep])
        if encoded > limit and keep > MIN_TEXT_CHARS:  # not ASCII: fewer characters fit
            keep = max(MIN_TEXT_CHARS, keep * limit // encoded)
        self.cut(text, Cut(pointer=pointer, unit="characters", total=len(text), shown=keep))
        return text[:keep] + cut_marker(len(text))

    def _mapping(self, mapping: dict[str, Any], limit: int, pointer: str) -> dict[str, Any]:
        keys = list(mapping)
        room = limit - 2 - sum(self.size(k) + 2 for k in keys)
        fits = max(1, limit // MIN_MEMBER_BYTES)
        if len(keys) > fits:
            self.cut(mapping, Cut(pointer=pointer, unit="members", total=len(keys), shown=fits))
            keys = keys[:fits]
            room = limit - 2 - sum(self.size(k) + 2 for k in keys)
        shares = self._shares([mapping[k] for k in keys], room)
        return {k: self.fit(mapping[k], share, pointer + pointer_part(k))
                for k, share in zip(keys, shares, strict=True)}

    def _items(self, items: list[Any], limit: int, pointer: str) -> list[Any]:
        fits = max(1, limit // MIN_ITEM_BYTES)
        kept = items
        if len(items) > fits and self.size(items) > limit:
            self.cut(items, Cut(pointer=pointer, unit="items", total=len(items), shown=fits))
            kept = items[:fits]
        shares = self._shares(kept, limit - 2 - len(kept))
        return [self.fit(item, share, pointer + pointer_part(i))
                for i, (item, share) in enumerate(zip(kept, shares, strict=True))]

    def _shares(self, values: list[Any], room: int) -> list[int]:
        """Each value's room: its whole size when that is under an equal share of what is
        left, the smallest first; the rest share equally."""
        shares = [0] * len(values)
        left = max(0, room)
        order = sorted(range(len(values)), key=lambda i: self.size(values[i]))
        for done, i in enumerate(order):
            share = left // (len(values) - done)
            shares[i] = min(self.size(values[i]), share)
            left -= shares[i]
        return shares


def value_at(data: Any, pointer: str) -> Any:
    """The value a JSON pointer names in ``data``; KeyError when there is none."""
    if pointer == "":
        return data
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    found = data
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(found, dict) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            raise KeyError(pointer)
    return found
