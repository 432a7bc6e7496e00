"""The team drill: several ``assay run`` processes and ``assay serve`` (starting a run of its
own) write one store at once, while clients read it through the API. Every run completes with
all its cases, and no reader sees an error or a count go backwards. Runs on SQLite and on a
real PostgreSQL server (the ``store_url`` fixture)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.server_support import echo_suite, free_port

pytestmark = pytest.mark.slow
pytest.importorskip("fastapi")

ROOT = Path(__file__).resolve().parents[1]
CASES = 12
WRITERS = 4


def test_runs_and_the_server_share_one_store(store_url, tmp_path):
    echo_suite(tmp_path, CASES, sleep=0.05, folder=None)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ASSAY_CACHE_DIR": str(tmp_path / "c")}
    env.pop("ASSAY_SERVER_TOKEN", None)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "assay", "serve", "--store", store_url, "--port", str(port),
         "--suites", str(tmp_path)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    writers: list[subprocess.Popen[str]] = []
    try:
        base = f"http://127.0.0.1:{port}"
        client = httpx.Client(base_url=base, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        writers = [subprocess.Popen(
            [sys.executable, "-m", "assay", "run", "EVAL.yaml", "--store", store_url,
             "--concurrency", "2"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True) for _ in range(WRITERS)]
        launched = client.post("/runs", json={"suite": "EVAL.yaml", "concurrency": 2})
        assert launched.status_code == 202, launched.text
        seen: dict[str, int] = {}
        statuses: list[int] = []
        while any(w.poll() is None for w in writers) or \
                client.get(f"/runs/{launched.json()['run_id']}").json()["status"] == "running":
            page = client.get("/runs", params={"limit": 50})
            statuses.append(page.status_code)
            for run in page.json()["items"]:
                cases = client.get(f"/runs/{run['id']}/cases", params={"limit": 1})
                statuses.append(cases.status_code)
                total = cases.json()["total"]
                assert total >= seen.get(run["id"], 0), "a count went backwards"
                seen[run["id"]] = total
            time.sleep(0.1)
        for writer in writers:
            out, err = writer.communicate(timeout=300)
            assert writer.returncode == 0, out + err
        assert set(statuses) == {200}
        runs = client.get("/runs").json()["items"]
        assert len(runs) == WRITERS + 1
        assert {r["status"] for r in runs} == {"completed"}
        for run in runs:
            assert client.get(f"/runs/{run['id']}/cases").json()["total"] == CASES
            assert run["summary"]["cases"] == CASES and run["pass_rate"] == 1.0
    finally:
        for proc in [*writers, server]:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
