"""Calibrations in the run store: one row per calibration, found again by the judge's key.

The row keeps the figures a gate reads (kappa, accuracy, the number of items) in columns and
the whole :class:`CalibrationReport` as JSON, next to the run that produced it; the table is
created by the store's migration ``0004_calibrations``. Nothing here holds a secret: the
judge's models are kept as they may be shown (a password in a URL is hidden).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from assay.calibration.report import CalibrationReport
from assay.store import schema
from assay.store.errors import StoreError
from assay.store.runs import RunStore, encode, known_number, not_number_sql


class StoredCalibration(BaseModel):
    """A calibration as the store lists it: its headline figures and the report."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    id: str
    judge_key: str
    judge_name: str
    judge_type: str
    set_name: str
    kind: str
    items: int
    kappa: float | None = None
    accuracy: float | None = None
    run_id: str | None = None
    created_at: float | None = Field(description=(
        "when it was made (epoch seconds); null only when the stored value cannot be read, "
        "which ``unreadable`` names"))
    report: CalibrationReport
    unreadable: str | None = Field(default=None, description="why a stored field cannot be "
                                   "read; the other fields hold what could be")


def save(store: RunStore, report: CalibrationReport) -> None:
    """Store ``report`` (its id must be new)."""
    kappa = report.kappa
    accuracy = report.accuracy
    with store.transaction() as conn:
        conn.execute(schema.calibrations.insert().values(
            id=report.id, judge_key=report.judge.key, judge_name=report.judge.name[:200],
            judge_type=report.judge.type[:100], set_name=report.set.name[:200],
            kind=report.set.kind, items=report.counts.scored,
            kappa=kappa.value if kappa is not None else None,
            accuracy=accuracy.value if accuracy is not None else None,
            run_id=report.run_id, created_at=report.created_at, report=encode(report)))


def find(store: RunStore, *, key: str | None = None, name: str | None = None,
         judge_type: str | None = None, set_name: str | None = None,
         limit: int = 20) -> list[StoredCalibration]:
    """Calibrations matching every filter given, newest first; one whose time cannot be
    read (:func:`~assay.store.runs.known_number`) is not known to be newer than any, and
    comes after those that can (SQLite sorts text above every number)."""
    table = schema.calibrations
    newest = table.c.created_at.desc()
    order = [not_number_sql(table.c.created_at, "sqlite"), newest] \
        if store.dialect == "sqlite" else [newest]  # PostgreSQL's numbers are numbers
    query = select(table).order_by(*order).limit(limit)
    if key is not None:
        query = query.where(table.c.judge_key == key)
    if name is not None:
        query = query.where(table.c.judge_name == name)
    if judge_type is not None:
        query = query.where(table.c.judge_type == judge_type)
    if set_name is not None:
        query = query.where(table.c.set_name == set_name)
    with store.transaction() as conn:
        rows = [dict(r._mapping) for r in conn.execute(query).fetchall()]
    found = []
    for row in rows:
        problems: list[str] = []
        row["created_at"] = known_number(row["created_at"], "created_at", problems)
        try:
            found.append(StoredCalibration.model_validate(
                {**row, "unreadable": "; ".join(problems) or None}))
        except ValidationError as exc:
            raise StoreError(f"the run store {store.display_url}: calibration {row.get('id')!r} "
                             f"cannot be read ({exc.errors()[0]['msg']}); it was written by "
                             "another version of assay") from None
    return found


def latest(store: RunStore, key: str, set_name: str | None = None) -> StoredCalibration | None:
    """The newest calibration of the judge with ``key`` (on ``set_name`` when given)."""
    found = find(store, key=key, set_name=set_name, limit=1)
    return found[0] if found else None
