"""Named baselines in the store: one per (suite, target), completed runs only, on SQLite and
PostgreSQL alike."""

from __future__ import annotations

import pytest

from assay.errors import ConfigError
from assay.store.baselines import (
    baseline_for,
    clear_baseline,
    get_baseline,
    list_baselines,
    set_baseline,
)
from assay.store.runs import RunStore


def _run(store: RunStore, suite: str, target: str | None, status: str = "completed") -> str:
    run_id = store.create_run(suite, {"suite_name": suite, "target": target})
    store.set_status(run_id, status)
    return run_id


def test_one_baseline_per_suite_and_target(store_url):
    store = RunStore(store_url)
    first, second = _run(store, "s", "agent"), _run(store, "s", "agent")
    other_target, other_suite = _run(store, "s", None), _run(store, "t", "agent")
    set_baseline(store, first)
    set_baseline(store, second)
    set_baseline(store, other_target)
    set_baseline(store, other_suite)
    found = get_baseline(store, "s", "agent")
    assert found is not None and found.run_id == second
    assert baseline_for(store, first).run_id == second  # type: ignore[union-attr]
    assert get_baseline(store, "s").run_id == other_target  # type: ignore[union-attr]
    assert [(b.suite, b.target, b.run_id) for b in list_baselines(store)] == [
        ("s", None, other_target), ("s", "agent", second), ("t", "agent", other_suite)]
    assert clear_baseline(store, "s", "agent") is True
    assert clear_baseline(store, "s", "agent") is False
    assert get_baseline(store, "s", "agent") is None


@pytest.mark.parametrize("status", ["running", "interrupted", "failed"])
def test_only_completed_runs_become_baselines(store_url, status):
    store = RunStore(store_url)
    run_id = _run(store, "s", None, status)
    with pytest.raises(ConfigError, match=f"Only completed runs can be marked as baseline "
                                          f"\\(status={status}\\)"):
        set_baseline(store, run_id)
    assert list_baselines(store) == []
