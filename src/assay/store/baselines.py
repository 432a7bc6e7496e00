"""Named baselines: the run of a suite (and target) that later runs are compared to.

Setting a baseline replaces the one before it in the same scope; only a completed run can be
one, since an interrupted run has no whole-run figures to compare with.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import and_, delete, select

from assay.errors import ConfigError
from assay.store import schema
from assay.store.runs import RunStore, known_number
from assay.types.records import RunRecord, RunStatus


class Baseline(BaseModel):
    """A scope's baseline run."""

    suite: str
    target: str | None
    run_id: str
    created_at: float | None = Field(description=(
        "when it was set (epoch seconds); null only when the stored value cannot be read, "
        "which ``unreadable`` names"))
    unreadable: str | None = Field(default=None, description="why a stored field cannot be "
                                   "read; the other fields hold what could be")

    @classmethod
    def of(cls, row: Any) -> Baseline:
        """A stored baseline row as read by the store's rule for a stored time
        (:func:`~assay.store.runs.known_number`)."""
        problems: list[str] = []
        created = known_number(row.created_at, "created_at", problems)
        return cls(suite=row.suite, target=row.target or None, run_id=row.run_id,
                   created_at=created, unreadable="; ".join(problems) or None)


def scope_of(run: RunRecord) -> tuple[str, str]:
    """A run's baseline scope: its suite, and the target that ran it (the run's override,
    else the suite's; "" for none)."""
    return run.suite, run.config.target_override or run.config.target or ""


def set_baseline(store: RunStore, run_id: str) -> Baseline:
    """Make ``run_id`` its scope's baseline, replacing any other; ConfigError unless it
    completed."""
    run = store.run_record(run_id)
    if run.status is not RunStatus.COMPLETED:
        raise ConfigError(f"Only completed runs can be marked as baseline "
                          f"(status={run.status.value})", code="run_not_completed")
    suite, target = scope_of(run)
    now = time.time()
    with store.transaction() as conn:
        conn.execute(delete(schema.baselines).where(and_(
            schema.baselines.c.suite == suite, schema.baselines.c.target == target)))
        conn.execute(schema.baselines.insert().values(suite=suite, target=target,
                                                      run_id=run.id, created_at=now))
    return Baseline(suite=suite, target=target or None, run_id=run.id, created_at=now)


def get_baseline(store: RunStore, suite: str, target: str | None = None) -> Baseline | None:
    """The baseline of (suite, target), or None."""
    with store.transaction() as conn:
        row = conn.execute(select(schema.baselines).where(and_(
            schema.baselines.c.suite == suite,
            schema.baselines.c.target == (target or "")))).first()
    return None if row is None else Baseline.of(row)


def baseline_for(store: RunStore, run_id: str) -> Baseline | None:
    """The baseline of the scope ``run_id`` belongs to."""
    return get_baseline(store, *scope_of(store.run_record(run_id)))


def list_baselines(store: RunStore) -> list[Baseline]:
    with store.transaction() as conn:
        rows = conn.execute(select(schema.baselines).order_by(
            schema.baselines.c.suite, schema.baselines.c.target)).fetchall()
    return [Baseline.of(r) for r in rows]


def clear_baseline(store: RunStore, suite: str, target: str | None = None) -> bool:
    """Remove the baseline of (suite, target); False when there was none."""
    with store.transaction() as conn:
        done = conn.execute(delete(schema.baselines).where(and_(
            schema.baselines.c.suite == suite,
            schema.baselines.c.target == (target or ""))))
    return bool(done.rowcount)


def unmark(store: RunStore, run_id: str) -> bool:
    """Stop ``run_id`` being a baseline; False when it was none."""
    with store.transaction() as conn:
        done = conn.execute(delete(schema.baselines).where(
            schema.baselines.c.run_id == run_id)).rowcount
    return bool(done)


def baseline_ids(store: RunStore) -> set[str]:
    """The ids of every scope's baseline run."""
    with store.transaction() as conn:
        return {r.run_id for r in conn.execute(select(schema.baselines.c.run_id))}


__all__ = ["Baseline", "baseline_for", "baseline_ids", "clear_baseline", "get_baseline",
           "list_baselines", "scope_of", "set_baseline", "unmark"]
