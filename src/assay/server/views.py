"""What the viewer shows of a run and of a case, built from the typed records.

The API answers with these and the static HTML report embeds them, so the page renders the
same data the same way in both. No FastAPI here: the report uses this module without the
server extra.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from assay.records import CaseRecord, RunRecord
from assay.traces import Retrieval, ToolCallRecord, retrievals, tool_calls


class RunDetail(RunRecord):
    """A run's record, config snapshot included, with what its pages show beside it."""

    target: str | None = None
    pass_rate: float | None = None
    is_baseline: bool = False
    baseline_id: str | None = Field(default=None, description="the baseline run of this "
                                    "run's suite and target, when one is set")
    running_here: bool = Field(default=False, description="started by this server and "
                               "still running (it can be cancelled)")


class CaseDetail(BaseModel):
    """One case with everything stored for it, and the tool calls and retrievals read from
    its trace and messages."""

    model_config = ConfigDict(extra="forbid")

    record: CaseRecord
    tool_calls: list[ToolCallRecord]
    retrievals: list[Retrieval]


def run_detail(run: RunRecord, target: str | None, baseline_id: str | None = None,
               running_here: bool = False) -> RunDetail:
    return RunDetail(**run.model_dump(), target=target,
                     pass_rate=None if run.summary is None else run.summary.pass_rate,
                     is_baseline=baseline_id == run.id, baseline_id=baseline_id,
                     running_here=running_here)


def case_detail(record: CaseRecord) -> CaseDetail:
    return CaseDetail(record=record, tool_calls=tool_calls(record.execution),
                      retrievals=retrievals(record.execution))
