"""A real ``assay serve`` application on 127.0.0.1 for the API and browser tests: uvicorn in a
thread of the test process, on a free port, over a real store."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from assay.server.app import create_app
from assay.server.settings import ServerSettings

TLS = ssl.create_default_context()
"""The TLS settings of the tests' HTTP clients. httpx builds them for every client it makes,
loading every CA certificate (27 ms of CPU each), though the test servers speak plain HTTP:
the clients share these."""


@dataclass
class Served:
    url: str
    settings: ServerSettings

    def client(self, token: str | None = None,
               headers: dict[str, str] | None = None) -> httpx.Client:
        sent = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
        return httpx.Client(base_url=self.url, headers=sent, timeout=30.0, verify=TLS)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_until_up(process: subprocess.Popen[Any], url: str, seconds: float,
                  said: Callable[[], Any]) -> None:
    """Wait for a server process to answer ``url`` with 200; fail with what it ``said`` when
    it exits first, and when ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url, timeout=5, verify=TLS).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, said()
        assert time.monotonic() < deadline, f"{url} did not answer in {seconds:g} s"
        time.sleep(0.2)


def stop_process(process: subprocess.Popen[Any], seconds: float = 20) -> None:
    """Terminate a process the test started, killed when it does not end in ``seconds``."""
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def serve(store_url: str, token: str | None = None, suite_roots: list[Path] | None = None,
          max_body_bytes: int | None = None, host: str = "127.0.0.1",
          **options: Any) -> Iterator[Served]:
    """Serve ``store_url`` on ``host`` until the block ends; ``options`` are further
    :class:`ServerSettings` fields."""
    import uvicorn

    settings = ServerSettings(store_url=store_url, token=token, host=host,
                              suite_roots=suite_roots or [Path.cwd()], **options)
    if max_body_bytes is not None:
        settings.max_body_bytes = max_body_bytes
    port = free_port(host)
    config = uvicorn.Config(create_app(settings), host=host, port=port,
                            log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield Served(f"http://{host}:{port}", settings)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def echo_suite(root: Path, cases: int, sleep: float = 0.0, folder: str | None = "echo") -> Path:
    """A suite of ``cases`` cases whose Python agent echoes each question after ``sleep``
    seconds, in ``root/folder`` (``root`` itself for None), with its targets file; its
    EVAL.yaml."""
    suite = root / folder if folder else root
    (suite / ".assay").mkdir(parents=True)
    (suite / "agent.py").write_text(
        "import time\n\ndef answer(question: str) -> str:\n"
        f"    time.sleep({sleep})\n    return 'echo ' + question\n")
    (suite / "EVAL.yaml").write_text(
        "description: echo\nexecution:\n  target: agent\n  evaluators:\n"
        "    - {name: has_echo, type: contains, search_text: echo}\n"
        "evalcases:\n" + "".join(f"  - {{id: c{i}, input: q{i}}}\n" for i in range(cases)))
    (suite / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: 'agent:answer'}\n")
    return suite / "EVAL.yaml"


def events(api: httpx.Client, path: str) -> list[tuple[str, dict[str, Any]]]:
    """Every server-sent event of a stream, until the server closes it."""
    found = []
    with api.stream("GET", path) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name:
                found.append((name, json.loads(line.removeprefix("data: "))))
    return found


HUGE_OUTPUT = "o" * 3_000_000
SPANS = 5_000
REQUEST = "r" * 2_000_000


def write_huge_case(url: str) -> str:
    """A run of one case of over 60 MB: a 3 MB output, 5,000 spans of 10 kB, a judge request
    of 2 MB; its id."""
    from assay.store.runs import RunStore
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.records import CaseRecord, Verdict
    from assay.types.score import Score

    store = RunStore(url)
    run = store.create_run("huge", {"suite_name": "huge"}, run_id="run-huge")
    trace = [{"name": f"step-{i}", "attributes": {"payload": f"{i}:" + "t" * 10_000}}
             for i in range(SPANS)]
    execution = Execution(input="q", output=HUGE_OUTPUT, trace=trace)
    score = Score(name="judged", value=0.5, passed=False, rationale="too long",
                  details={"judge_request": [{"role": "user", "content": REQUEST}]})
    record = CaseRecord(run_id=run, case_id="huge", case=Case(id="huge", input="q"),
                        execution=execution, scores=[score], score=0.5, verdict=Verdict.FAIL)
    store.record_execution(run, "huge", 0, execution)
    store.record_score(run, "huge", 0, score)
    store.record_case(record)
    store.flush()
    store.set_status(run, "completed", {"cases": 1})
    store.close()
    return run
