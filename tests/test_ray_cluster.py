"""Runs on a real local Ray cluster: a head and a worker started as separate processes with
``ray start``, both on 127.0.0.1 so every byte stays on loopback. Cases run on both nodes,
the records are what a local run stores, a worker node killed mid-run loses and duplicates
nothing, the judge's limit holds across the cluster, and a driver killed with kill -9
resumes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.types.config import RayOptions

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parent.parent
RAY = Path(sys.executable).parent / "ray"
NODES = "ASSAY_TEST_NODES_DIR"
"""Where the agents note the node they ran on (an ASSAY_ variable: workers get it)."""


@dataclass
class Cluster:
    address: str
    env: dict[str, str]
    temp: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run([str(RAY), *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def _processes() -> dict[int, tuple[int, bytes]]:
    """Every process: its parent and its command line."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = (Path("/proc") / pid / "stat").read_text()
            command = (Path("/proc") / pid / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        found[int(pid)] = (int(stat.rsplit(")", 1)[1].split()[1]), command)
    return found


def _kill(matching: str, *, with_children: bool = False) -> int:
    """SIGKILL every process whose command line holds ``matching`` (and with ``with_children``
    what they started: Ray's agents rename themselves, and outlive a killed raylet); how many
    were matched."""
    processes = _processes()
    matched = {pid for pid, (_, command) in processes.items()
               if matching.encode() in command and pid != os.getpid()}
    doomed = set(matched)
    while with_children:
        children = {pid for pid, (parent, _) in processes.items()
                    if parent in doomed and pid not in doomed}
        if not children:
            break
        doomed |= children
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(matched)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    if not RAY.exists():
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed: pip install 'assay[ray]'")
        pytest.skip("Ray is not installed: pip install 'assay[ray]'")
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # unix sockets want a short path
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": str(ROOT), "RAY_health_check_period_ms": "500",
           "RAY_health_check_failure_threshold": "4", "RAY_health_check_timeout_ms": "1000"}
    port, client_port = _free_port(), _free_port()
    address = f"127.0.0.1:{port}"
    try:
        # the head's Ray Client server: a port of its own (not 10001, which another
        # cluster on the host may hold), by which it is found to be stopped
        _ray(["start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
              "--num-cpus", "1", "--include-dashboard=false", "--disable-usage-stats",
              "--ray-client-server-port", str(client_port), "--temp-dir", temp], env)
        _ray(["start", "--address", address, "--node-ip-address", "127.0.0.1", "--num-cpus",
              "1", "--node-name", "worker-b", "--resources", '{"agent_box": 1}',
              "--disable-usage-stats"], env)
        yield Cluster(address, env, temp)
    finally:
        _kill(temp, with_children=True)
        _kill(f"--port={client_port} ")  # it outlives the head, and names no temp dir


@pytest.fixture
def on_cluster(cluster: Cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cluster:
    """This test's process joins the cluster; its agents note their node under tmp_path."""
    for key in ("RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED"):
        monkeypatch.setenv(key, cluster.env[key])
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    (tmp_path / "nodes").mkdir()
    monkeypatch.setenv(NODES, str(tmp_path / "nodes"))
    return cluster


def _note(question: str, node: str) -> None:
    """Note where a case ran, whole or not at all: the test reads the notes while cases still
    run, and a half-written file would read as empty."""
    noted = Path(os.environ[NODES]) / f"{question}.json"
    partial = noted.with_suffix(f".{os.getpid()}.part")
    partial.write_text(json.dumps({"node": node, "pid": os.getpid()}))
    partial.replace(noted)


def noted_agent(question: str) -> str:
    """An agent that takes a moment and notes the node and process it ran on."""
    import ray

    time.sleep(0.3)
    _note(question, ray.get_runtime_context().get_node_id())
    return f"answer to {question}"


def _rows(count: int) -> list[dict[str, Any]]:
    return [{"id": f"q{i:03d}", "input": f"q{i:03d}", "expected_output": f"answer to q{i:03d}"}
            for i in range(count)]


def _nodes(tmp_path: Path) -> set[str]:
    return {json.loads(p.read_text())["node"] for p in (tmp_path / "nodes").glob("*.json")}


def _stored(store: str, run_id: str) -> tuple[int, int, int]:
    """(case rows, distinct cases, executions) the store holds for a run."""
    with sqlite3.connect(store.removeprefix("sqlite:///")) as db:
        cases = db.execute("SELECT count(*), count(DISTINCT case_id) FROM case_results "
                           "WHERE run_id = ?", (run_id,)).fetchone()
        executions = db.execute("SELECT count(*) FROM executions WHERE run_id = ?",
                                (run_id,)).fetchone()[0]
    return int(cases[0]), int(cases[1]), int(executions)


def test_cases_run_on_both_nodes_and_are_stored_as_a_local_run_stores_them(on_cluster,
                                                                           tmp_path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    rows = _rows(12)
    local = assay.evaluate(rows, target=noted_agent, evaluators=["exact_match"],
                           store=store, cache="off")
    (tmp_path / "nodes").mkdir(exist_ok=True)
    for noted in (tmp_path / "nodes").glob("*.json"):
        noted.unlink()
    on_ray = assay.evaluate(rows, target=noted_agent, evaluators=["exact_match"],
                            store=store, cache="off", executor="ray")
    assert len(_nodes(tmp_path)) == 2  # the head and worker-b both ran cases

    def shown(result: Any) -> list[Any]:
        return [(r.case_id, r.repeat, r.output, r.verdict, r.score,
                 [(s.name, s.value, s.error) for s in r.scores]) for r in result.records]

    assert shown(on_ray) == shown(local) and local.passed
    assert on_ray.summary.cases == local.summary.cases == 12 and on_ray.passed
    assert _stored(store, on_ray.run_id) == (12, 12, 12)
    assert assay.compare(local.run_id, on_ray.run_id, store=store).exit_code() == 0


@pytest.mark.timeout(120)
def test_a_target_that_asks_for_a_resource_no_node_has_fails_clearly_never_hangs(
        on_cluster, tmp_path):
    """Ray keeps an actor no node can host pending for ever: the run would wait for ever
    (and a Ctrl-C or a timeout then hung while closing, waiting for that actor)."""
    from assay.errors import EvaluationError

    (tmp_path / "targets.yaml").write_text(
        "targets:\n  - name: boxed\n    provider: python\n"
        f"    function: {Path(__file__).with_suffix('.py')}:noted_agent\n"
        "    resources: {no_such_box: 1}\n")
    started = time.monotonic()
    with pytest.raises(EvaluationError, match=r"no live node of the Ray cluster offers "
                       r"\{CPU: 1, no_such_box: 1\}|no live node of the Ray cluster offers "
                       r"\{no_such_box: 1\}") as raised:
        assay.evaluate(_rows(3), target="boxed", evaluators=["exact_match"],
                       targets_file=str(tmp_path / "targets.yaml"), cache="off",
                       store=f"sqlite:///{tmp_path / 'runs.db'}", executor="ray")
    assert raised.value.code == "ray_resources"
    assert time.monotonic() - started < 60 and _nodes(tmp_path) == set()


@pytest.mark.timeout(120)
def test_a_target_that_asks_for_a_resource_runs_where_it_is(on_cluster, tmp_path):
    """One case a batch, so every worker of the pool is sent one: the cluster's one
    ``agent_box`` hosts one worker, and a second one would wait (with its batches) for ever."""
    (tmp_path / "targets.yaml").write_text(
        "targets:\n  - name: boxed\n    provider: python\n"
        f"    function: {Path(__file__).with_suffix('.py')}:noted_agent\n"
        "    resources: {agent_box: 1, CPU: 0.5}\n")
    result = assay.evaluate(_rows(6), target="boxed", evaluators=["exact_match"],
                            targets_file=str(tmp_path / "targets.yaml"), cache="off",
                            store=f"sqlite:///{tmp_path / 'runs.db'}", executor="ray",
                            concurrency=1)
    assert result.passed and result.summary.cases == 6
    import ray

    ray.init(address=on_cluster.address, ignore_reinit_error=True, log_to_driver=False)
    boxes = {n["NodeID"] for n in ray.nodes() if n["Alive"] and "agent_box" in n["Resources"]}
    ray.shutdown()
    assert _nodes(tmp_path) == boxes  # every case ran on the node that has the resource


def test_the_embedded_judge_runs_on_the_workers(on_cluster, tmp_path):
    rows = [{**row, "output": row["expected_output"]} for row in _rows(2)]
    result = assay.evaluate(rows, evaluators=["semantic_similarity"],
                            judge_model="local:gemma-3-270m", cache="off", executor="ray",
                            store=f"sqlite:///{tmp_path / 'runs.db'}")
    assert result.summary.evaluator_errors == 0 and result.summary.scored == 2


def test_the_judges_limit_holds_across_the_cluster(on_cluster, tmp_path, mock_server):
    from assay.testing.mock_server import MockConfig

    mock_server.server.configure(MockConfig(latency_ms=200))
    rows = [{**row, "output": row["expected_output"]} for row in _rows(16)]
    result = assay.evaluate(rows, evaluators=["semantic_similarity"],
                            judge_model=f"{mock_server.url}#judge", concurrency=16,
                            store=f"sqlite:///{tmp_path / 'runs.db'}", cache="off",
                            executor="ray", ray=RayOptions(judge_concurrency=2, batch_size=4))
    assert result.summary.evaluator_errors == 0 and result.summary.cases == 16
    assert mock_server.stats.requests == 16
    assert 1 <= mock_server.stats.max_in_flight <= 2


def test_a_driver_killed_with_kill_9_resumes_on_the_cluster(on_cluster, tmp_path):
    (tmp_path / "agent.py").write_text(
        "import json, os, time\n"
        "def agent(question):\n"
        "    time.sleep(0.5)\n"
        "    return 'answer to ' + question\n")
    (tmp_path / "targets.yaml").write_text(
        "targets:\n  - name: agent\n    provider: python\n    function: agent.py:agent\n")
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in _rows(30)))
    (tmp_path / "suite.yaml").write_text("evaluators:\n  - {type: exact_match}\n")
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {**on_cluster.env, "RAY_ADDRESS": on_cluster.address,
           "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    command = [sys.executable, "-m", "assay", "run", str(suite), "--target", "agent",
               "--targets", str(tmp_path / "targets.yaml"), "--store", store, "--cache",
               "off", "--executor", "ray", "--no-results-file"]
    first = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    run_id = None
    while time.monotonic() < deadline:
        if (tmp_path / "runs.db").exists():
            with sqlite3.connect(tmp_path / "runs.db") as db:
                try:
                    found = db.execute("SELECT run_id, count(*) FROM case_results "
                                       "GROUP BY run_id").fetchall()
                except sqlite3.OperationalError:
                    found = []
            if found and found[0][1] >= 5:
                run_id = found[0][0]
                break
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    assert run_id is not None
    stored_before = _stored(store, run_id)[0]
    assert 5 <= stored_before < 30
    resumed = subprocess.run([sys.executable, "-m", "assay", "run", "--resume", run_id,
                              "--store", store], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert _stored(store, run_id) == (30, 30, 30)


def test_a_worker_node_killed_mid_run_loses_and_duplicates_nothing(on_cluster, tmp_path):
    _ray(["start", "--address", on_cluster.address, "--node-ip-address", "127.0.0.1",
          "--num-cpus", "1", "--node-name", "victim-node", "--disable-usage-stats"],
         on_cluster.env)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    rows = _rows(24)
    done: dict[str, Any] = {}

    def run() -> None:
        done["result"] = assay.evaluate(
            rows, target=noted_agent, evaluators=["exact_match"], store=store, cache="off",
            executor="ray", ray=RayOptions(resources={"CPU": 0.5}, batch_size=2))

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 240
    while len(list((tmp_path / "nodes").glob("*.json"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _kill("--node-name=victim-node") > 0  # its raylet, and with it its workers
    thread.join(timeout=600)
    assert not thread.is_alive()
    result = done["result"]
    assert result.summary.cases == 24 and result.passed
    assert _stored(store, result.run_id) == (24, 24, 24)


def patient_agent(question: str) -> str:
    """An agent that takes up to a second, until the test has seen what it waits for (a
    file ``enough`` beside the notes), and notes the node and process it ran on."""
    import ray

    enough = Path(os.environ[NODES]) / "enough"
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and not enough.exists():
        time.sleep(0.05)
    _note(question, ray.get_runtime_context().get_node_id())
    return f"answer to {question}"


def _late_node(deadline: float) -> str | None:
    """The id of the live node named late-node, once the run's Ray sees it."""
    import ray

    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # Ray not joined yet, or already left
            for node in ray.nodes():
                if node.get("Alive") and node.get("NodeName") == "late-node":
                    return str(node["NodeID"])
        time.sleep(0.2)
    return None


@pytest.mark.timeout(300)
def test_a_run_grows_onto_a_node_that_joins_while_it_runs(on_cluster, tmp_path, monkeypatch):
    """A node started with ``ray start --address`` mid-run gets workers of the run's pool,
    the run keeps more cases in flight, and cases run on it; nothing is lost or doubled."""
    from assay.run.ray_executor import RayExecutor

    seen: dict[str, Any] = {}
    close = RayExecutor.close

    async def noted_close(self: RayExecutor) -> None:  # what the run had, before it stops
        seen["where"], seen["capacity"] = await self.where(), self.capacity()
        await close(self)

    monkeypatch.setattr(RayExecutor, "close", noted_close)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    rows = _rows(400)
    done: dict[str, Any] = {}

    def run() -> None:
        done["result"] = assay.evaluate(rows, target=patient_agent, evaluators=["exact_match"],
                                        store=store, cache="off", executor="ray",
                                        concurrency=2)

    thread = threading.Thread(target=run)
    thread.start()
    late = None
    try:
        deadline = time.monotonic() + 120
        while not list((tmp_path / "nodes").glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.2)  # the run is running on the head and worker-b
        _ray(["start", "--address", on_cluster.address, "--node-ip-address", "127.0.0.1",
              "--num-cpus", "2", "--node-name", "late-node", "--disable-usage-stats"],
             on_cluster.env)
        deadline = time.monotonic() + 120
        late = _late_node(deadline)
        while late is not None and late not in _nodes(tmp_path) and \
                time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        (tmp_path / "nodes" / "enough").touch()  # the rest of the cases run at once
        thread.join(timeout=240)
        _kill("--node-name=late-node", with_children=True)
    assert not thread.is_alive()
    result = done["result"]
    assert result.summary.cases == 400 and result.passed
    assert _stored(store, result.run_id) == (400, 400, 400)
    assert late is not None and late in _nodes(tmp_path)  # cases ran on the new node
    # the pool grew: a worker on each of the head and worker-b, two on the new node
    assert len(seen["where"]) == 4
    assert sum(w["node"] == late for w in seen["where"]) == 2
    assert seen["capacity"] == 4 * 2
