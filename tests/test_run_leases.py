"""A run whose process dies without a word (``kill -9``, a machine gone) is not left
``running`` for ever: the process renews a lease in the store while it runs, and once the
lease runs out every reader (``assay runs``, the API, its stream) reads the run as
interrupted, with the command that resumes it, and it can be deleted. A rescore that did not
complete keeps its source run from being deleted, so it can still resume. On SQLite and
PostgreSQL (the ``store_url`` fixture)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import update

import assay
from assay.store import queries, schema
from assay.store.runs import RunStore
from assay.testing.runs import write_run
from assay.types.config import Gates
from assay.types.records import RunStatus
from tests.assay_process import run_assay

ROOT = Path(__file__).resolve().parents[1]
ROWS = [{"id": f"c{i}", "input": f"q{i}", "output": "x", "expected_output": "x"}
        for i in range(4)]


def _expire(store: RunStore, run_id: str) -> None:
    """What a killed process leaves: the run marked running, its lease run out."""
    with store.transaction() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(
            status="running", lease_expires_at=time.time() - 1))


def test_the_default_lease_shows_a_dead_run_within_90_seconds(monkeypatch):
    from assay.store.runs import DEFAULT_LEASE_S, lease_seconds

    assert lease_seconds() == DEFAULT_LEASE_S <= 90
    assert 10 <= DEFAULT_LEASE_S / 4 <= 20  # renewed every 10-20 s
    monkeypatch.setenv("ASSAY_RUN_LEASE_S", "soon")
    with pytest.raises(assay.ConfigError, match="ASSAY_RUN_LEASE_S"):
        lease_seconds()


def test_a_live_run_renews_its_lease_and_a_dead_one_reads_as_interrupted(store_url,
                                                                           monkeypatch):
    from assay.store.runs import RunLease

    monkeypatch.setenv("ASSAY_RUN_LEASE_S", "1")
    store = RunStore(store_url)
    run_id = store.create_run("suite", {})
    lease = store.hold_lease(run_id)
    assert isinstance(lease, RunLease)
    time.sleep(3)  # three lease lengths: renewed, so still running
    assert store.find(run_id).status is RunStatus.RUNNING
    lease.release()  # as a killed process stops renewing
    time.sleep(1.5)
    run = store.find(run_id)
    assert run.status is RunStatus.INTERRUPTED and run.abandoned
    assert queries.list_runs(store, queries.RunFilter(status=RunStatus.RUNNING))[1] == 0
    assert [i.id for i in queries.list_runs(
        store, queries.RunFilter(status=RunStatus.INTERRUPTED))[0]] == [run_id]
    assert queries.delete_run(store, run_id)
    store.close()


def test_the_api_shows_a_dead_run_as_interrupted_and_deletes_it(store_url):
    pytest.importorskip("fastapi")
    from tests.server_support import events, serve

    store = RunStore(store_url)
    dead = write_run(store, 3, seed=1, status=RunStatus.RUNNING)
    alive = write_run(store, 2, seed=2, status=RunStatus.RUNNING)
    _expire(store, dead)
    store.close()
    with serve(store_url) as served, served.client() as api:
        run = api.get(f"/runs/{dead}").json()
        assert run["status"] == "interrupted" and run["abandoned"] is True
        assert run["resume_command"].startswith(f"assay run --resume {dead} --store ")
        assert api.get(f"/runs/{alive}").json()["status"] == "running"
        assert [r["id"] for r in api.get("/runs", params={"status": "interrupted"}).json()[
            "items"]] == [dead]
        assert events(api, f"/runs/{dead}/stream")[-1][0] == "run_cancelled"
        cancel = api.post(f"/runs/{dead}/cancel")
        assert cancel.status_code == 409 and "assay run --resume" in cancel.json()["detail"]
        refused = api.delete(f"/runs/{alive}")
        assert refused.status_code == 409 and refused.json()["code"] == "run_in_use"
        assert api.delete(f"/runs/{dead}").status_code == 200
        assert api.get(f"/runs/{dead}").status_code == 404


def test_the_source_of_an_unfinished_rescore_is_kept_until_the_rescore_is_done(store_url):
    first = assay.evaluate(ROWS, evaluators=["exact_match"], store=store_url)
    rescored = assay.rescore(first.run_id, store=store_url, gates=Gates(max_failed=None))
    store = RunStore(store_url)
    store.set_status(rescored.run_id, "interrupted")  # stopped
    with store.transaction() as conn:  # before its last case was stored
        for table in (schema.case_results, schema.scores):
            conn.execute(table.delete().where(table.c.run_id == rescored.run_id,
                                              table.c.case_id == "c3"))
    assert store.run_record(rescored.run_id).status is RunStatus.INTERRUPTED
    with pytest.raises(assay.EvaluationError, match=f"{rescored.run_id} \\(interrupted\\)"):
        queries.delete_run(store, first.run_id)
    resumed = assay.resume(rescored.run_id, store=store)  # its source is still there
    assert resumed.run.status is RunStatus.COMPLETED and resumed.summary.cases == 4
    assert queries.delete_run(store, first.run_id)  # now nothing needs it
    assert len(store.case_records(rescored.run_id)) == 4
    store.close()


@pytest.mark.drill
def test_a_run_killed_with_sigkill_reads_as_interrupted_and_can_be_deleted(store_url,
                                                                            tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_support import echo_suite, events, serve

    lease = 2.0  # the default is 60 s: the drill shortens it rather than wait
    echo_suite(tmp_path, 60, sleep=0.2, folder=None)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ASSAY_RUN_LEASE_S": str(lease),
           "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "assay", "run", "EVAL.yaml", "--store",
                             store_url, "--concurrency", "1"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = RunStore(store_url)
    try:
        deadline = time.monotonic() + 60
        while not (runs := store.run_records()) or not store.case_keys(runs[0].id):
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.1)
        run_id = runs[0].id
        time.sleep(3 * lease)  # alive for several leases: it renews, and reads as running
        assert proc.poll() is None, "the run finished before the kill; make it longer"
        with serve(store_url) as served, served.client() as api:
            assert api.get(f"/runs/{run_id}").json()["status"] == "running"
            assert api.delete(f"/runs/{run_id}").status_code == 409
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
            killed = time.monotonic()
            while (run := api.get(f"/runs/{run_id}").json())["status"] == "running":
                assert time.monotonic() - killed < lease + 10, "still running after its lease"
                time.sleep(0.1)
            assert run["status"] == "interrupted" and run["abandoned"] is True
            assert time.monotonic() - killed <= lease + 10
            assert run["resume_command"].startswith(f"assay run --resume {run_id}")
            assert events(api, f"/runs/{run_id}/stream")[-1][0] == "run_cancelled"
            listed = run_assay(["runs", "--store", store_url], cwd=tmp_path,
                               env={**os.environ, "COLUMNS": "250"}, timeout=120)
            assert "interrupted" in listed.stdout
            assert f"its process stopped: resume with assay run --resume {run_id}" in \
                listed.stdout, listed.stdout
            assert api.delete(f"/runs/{run_id}").status_code == 200
        assert store.run_records() == []
    finally:
        if proc.poll() is None:
            proc.kill()
        store.close()
