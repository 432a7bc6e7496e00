"""People's labels of judges' scores: a reviewer reads a case, agrees with a judge's verdict
or says what it should have been, with a comment; the label is kept with who gave it and when.

Labels are only ever added (migration ``0008``): a later label of the same score (run, case,
repeat, evaluator) is the one that counts, and the earlier ones stay as its history. Each
label keeps the judge's value and verdict as they were when it was given, so that what the
reviewer agreed with is never lost to a later rescore. ``assay calibrate --run RUN`` reads
them as the human labels of that run (:func:`human_value`), with no file in between.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field
from sqlalchemy import select

from assay._util import jsondata
from assay._util.control_chars import quoted
from assay._util.redact import scrub
from assay._util.times import iso_utc
from assay.errors import ConfigError
from assay.store import schema
from assay.store.runs import RunStore
from assay.types import numbers
from assay.types.score import Score

MAX_COMMENT = 5_000
MAX_AUTHOR = 200


class HumanLabel(BaseModel):
    """A reviewer's label of one judge's score on one case."""

    model_config = ConfigDict(extra="forbid")

    id: str
    run_id: str
    case_id: str
    repeat: int = 0
    evaluator: str
    agrees: bool = Field(description="the reviewer agrees with the judge's verdict")
    value: Any = Field(default=None, description="what the verdict should have been, when "
                       "the reviewer disagrees: true (pass) or false (fail), a 0-1 score or a "
                       "label")
    judge_value: float | None = Field(default=None, description="the judge's value (0-1) "
                                      "when the label was given")
    judge_passed: bool | None = Field(default=None, description="the judge's verdict when "
                                      "the label was given")
    comment: str = ""
    author: str
    created_at: float

    @computed_field(description="'value', shown: pass or fail, a 0-1 score by "  # type: ignore[prop-decorator]
                    "assay.types.numbers, or the label")
    @property
    def value_shown(self) -> str | None:
        value = self.value
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "pass" if value else "fail"
        return numbers.score(float(value)) if isinstance(value, int | float) else str(value)

    @computed_field(description="created_at in ISO 8601, UTC")  # type: ignore[prop-decorator]
    @property
    def created(self) -> str | None:
        return iso_utc(self.created_at)


def human_value(label: HumanLabel) -> Any:
    """What the reviewer says the score should be: the judge's own verdict when they agree
    (its pass or fail, else its value), else the value they gave, else the opposite of the
    judge's pass or fail; None when nothing can be said."""
    if label.agrees:
        return label.judge_passed if label.judge_passed is not None else label.judge_value
    if label.value is not None:
        return label.value
    return None if label.judge_passed is None else not label.judge_passed


def _checked(author: str, comment: str, value: Any, agrees: bool) -> tuple[str, str]:
    author = author.strip()
    if not author or len(author) > MAX_AUTHOR or any(ord(c) < 32 for c in author):
        raise ConfigError(f"a label needs its author: one line of 1 to {MAX_AUTHOR} "
                          "characters", code="invalid_label")
    if len(comment) > MAX_COMMENT:
        raise ConfigError(f"a label's comment is at most {MAX_COMMENT:,} characters",
                          code="invalid_label")
    if agrees and value is not None:
        # human_value takes the judge's verdict for a label that agrees: a value beside it
        # would be stored and shown, yet never counted.
        raise ConfigError(f"a label that agrees with the judge takes no value (got "
                          f"{quoted(str(value), 60)}): to say what the score should have "
                          "been, send agrees false with the value", code="invalid_label")
    if value is not None and not isinstance(value, bool | int | float | str):
        raise ConfigError("a label's value is true or false, a number or a label",
                          code="invalid_label")
    if isinstance(value, int | float) and not isinstance(value, bool) and \
            not 0 <= value <= 1:
        raise ConfigError(f"a label's score is 0 to 1, not {value}", code="invalid_label")
    return author, comment


def add_label(store: RunStore, run_id: str, case_id: str, repeat: int, evaluator: str, *,
              agrees: bool, author: str, value: Any = None, comment: str = "") -> HumanLabel:
    """Label a judge's score on a case (the score must exist); the label as stored."""
    author, comment = _checked(author, comment, value, agrees)
    from assay.store.queries import case_record

    record = case_record(store, run_id, case_id, repeat)
    if record is None:
        raise ConfigError(f"run {quoted(run_id)} has no case {quoted(case_id)} (repeat "
                          f"{repeat})",
                          code="case_not_found")
    score: Score | None = record.score_named(evaluator)
    if score is None:
        names = ", ".join(s.name for s in record.scores) or "none"
        raise ConfigError(f"case {quoted(case_id)} has no score from {quoted(evaluator)} (its "
                          f"scores: "
                          f"{names})", code="score_not_found")
    if score.value is None and (agrees or value is None):
        state = f"an error ({score.error.code})" if score.error is not None else "skipped"
        raise ConfigError(f"the score from {quoted(evaluator)} of case {quoted(case_id)} is "
                          f"{state}: it "
                          "has no verdict to agree or disagree with; give the value it should "
                          "have had (agrees false, with value)", code="invalid_label")
    label = HumanLabel(
        id=time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(4),
        run_id=run_id, case_id=case_id, repeat=repeat, evaluator=evaluator, agrees=agrees,
        value=value, judge_value=score.value,
        judge_passed=score.passed if score.value is not None else None,
        comment=scrub(comment), author=scrub(author), created_at=time.time())
    with store.transaction() as conn:
        conn.execute(schema.human_labels.insert().values(
            **{**label.model_dump(exclude={"value_shown", "created"}),
               "value": json.dumps(label.value)}))
    return label


def labels(store: RunStore, run_id: str, case_id: str | None = None,
           repeat: int | None = None) -> list[HumanLabel]:
    """Every label of a run (or of one case), oldest first."""
    hl = schema.human_labels
    where = [hl.c.run_id == run_id]
    if case_id is not None:
        where.append(hl.c.case_id == case_id)
    if repeat is not None:
        where.append(hl.c.repeat == repeat)
    with store.transaction() as conn:
        rows = conn.execute(select(hl).where(*where).order_by(hl.c.created_at, hl.c.id))
        return [HumanLabel.model_validate({**r._mapping, "value": jsondata.loads(r.value)
                                           if r.value else None}) for r in rows]


def current_labels(store: RunStore, run_id: str,
                   evaluator: str | None = None) -> list[HumanLabel]:
    """The label that counts for each labelled score of a run (the latest), by case."""
    latest: dict[tuple[str, int, str], HumanLabel] = {}
    for label in labels(store, run_id):
        if evaluator is None or label.evaluator == evaluator:
            latest[(label.case_id, label.repeat, label.evaluator)] = label
    return sorted(latest.values(), key=lambda x: (x.case_id, x.repeat, x.evaluator))


class LabelAgreement(BaseModel):
    """How often a judge's verdicts agree with the people who labelled them, in a run."""

    evaluator: str
    labelled: int = Field(description="labelled scores that had a verdict: what the share "
                          "is of")
    agreed: int
    without_verdict: int = Field(default=0, description="labelled scores that were errors or "
                                 "skips: no verdict to agree with, so not in the share")
    agreement: float | None = None
    agreement_text: str = "-"


def agreement(store: RunStore, run_id: str) -> list[LabelAgreement]:
    """Per evaluator: the labelled scores and the share the reviewers agreed with."""
    from assay.types import numbers

    tally: dict[str, list[int]] = {}
    for label in current_labels(store, run_id):
        counts = tally.setdefault(label.evaluator, [0, 0, 0])
        if label.judge_value is None and label.judge_passed is None:
            counts[2] += 1  # an error or a skip: never an agreement, never a disagreement
            continue
        counts[0] += 1
        counts[1] += label.agrees
    found = []
    for name, (labelled, agreed, without) in sorted(tally.items()):
        share = agreed / labelled if labelled else None
        found.append(LabelAgreement(evaluator=name, labelled=labelled, agreed=agreed,
                                    without_verdict=without, agreement=share,
                                    agreement_text=numbers.percent(share)))
    return found


__all__ = ["HumanLabel", "LabelAgreement", "add_label", "agreement", "current_labels",
           "human_value", "labels"]
