"""Fault drills: whole runs against a real OpenAI-compatible server that misbehaves.

Every drill runs a suite whose agent is a Python function (no model) and whose evaluators
include an LLM judge, so every case makes judge calls to the mock server, started as its own
process on 127.0.0.1. Drills go through the real ``assay run`` command where it has the knobs
the drill needs, else through :class:`assay.run.runner.Runner` (``assay run`` has no option for
the engine's retry policy or call timeout). After each drill the SQLite run store is read
directly: every (case, evaluator) pair exactly once, every case with a case row, every score
either right or an explicit error.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from assay.llm import EngineConfig, JudgeEngine, RetryPolicy
from assay.llm.providers.scripted import similarity
from assay.run.runner import Runner
from assay.store.runs import RunStore
from assay.suites.evalyaml import load_suite
from assay.targets.config import build_target, load_targets_for
from assay.types.config import Gates, RunConfig

T = TypeVar("T")

pytestmark = pytest.mark.drill

EVALUATORS = ("similar", "replied")
"""The suite's evaluators: an LLM judge (semantic similarity) and a deterministic check."""

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "sigma")

MIXED_FAULTS = {"429": 0.08, "500": 0.04, "503": 0.04, "drop": 0.04, "invalid_json": 0.03,
                "empty_choices": 0.03, "truncated": 0.03, "hang": 0.01}
"""30% of requests fail, in every way the mock server knows."""

DRILL_ERRORS = {"retries_exhausted", "judge_output_invalid"}
"""The only error codes a drill's judge score may end with."""

AGENT = '''"""The agent under test: echoes the question, and logs each call (the first word is the
case id) so a drill can count how often each case was run. One appending write per call, so
a process killed mid-call never leaves half a line."""

import os

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.log")


def answer(question: str) -> str:
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (question.split()[0] + "\\n").encode())
    finally:
        os.close(fd)
    return "reply " + question
'''

TARGETS = """targets:
  - name: agent
    provider: python
    function: agent:answer
"""


# -- the project a drill runs ------------------------------------------------------------------


@dataclass
class Project:
    """A suite directory: EVAL.yaml, its targets file, the agent, a store and a cache."""

    root: Path
    cases: dict[str, tuple[str, str]]  # case id -> (input, expected output)
    evaluators: tuple[str, ...] = EVALUATORS

    @property
    def db(self) -> Path:
        return self.root / "runs.db"

    @property
    def store_url(self) -> str:
        return f"sqlite:///{self.db}"

    def expected_similarity(self, case_id: str) -> float:
        question, expected = self.cases[case_id]
        return similarity(expected, "reply " + question)

    def calls(self) -> Counter[str]:
        """How many times the agent ran each case."""
        log = self.root / "calls.log"
        if not log.exists():
            return Counter()
        return Counter(line for line in log.read_text(encoding="utf-8").splitlines() if line)


def make_project(root: Path, n: int, *, judge_only: bool = False) -> Project:
    """``n`` cases whose judge scores differ (the token overlap of answer and reference);
    judged by an LLM judge and, unless ``judge_only``, a deterministic check as well."""
    (root / ".assay").mkdir(parents=True)
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / ".assay" / "targets.yaml").write_text(TARGETS, encoding="utf-8")
    cases: dict[str, tuple[str, str]] = {}
    lines = ["description: fault drill", "execution:", "  target: agent", "  evaluators:",
             "    - {name: similar, type: semantic_similarity}"]
    if not judge_only:
        lines.append("    - {name: replied, type: contains, search_text: reply}")
    lines.append("evalcases:")
    for i in range(n):
        case_id = f"c{i:04d}"
        asked = [WORDS[(i + k) % len(WORDS)] for k in range(1 + i % 4)]
        wanted = [WORDS[(i * 5 + k) % len(WORDS)] for k in range(1 + i % 3)]
        question = " ".join([case_id, *asked])
        expected = " ".join(["reply", case_id, *wanted])
        cases[case_id] = (question, expected)
        lines += [f"  - id: {case_id}", f"    input: {question}",
                  f"    expected_output: {expected}"]
    (root / "EVAL.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Project(root, cases, EVALUATORS[:1] if judge_only else EVALUATORS)


# -- the mock server, as its own process ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], T | None], timeout: float, what: str,
              interval: float = 0.02) -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


class MockProcess:
    """``python -m assay.testing.mock_server`` on a free port, with the given options."""

    def __init__(self, log: Path, *options: str) -> None:
        self.port = free_port()
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "assay.testing.mock_server", "--port", str(self.port),
             *options], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._ready, 20, "the mock server to listen")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def model(self) -> str:
        return f"{self.base}/v1#judge"

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the mock server exited with {self.proc.returncode}")
        try:
            with urllib.request.urlopen(f"{self.base}/v1/models", timeout=0.5) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.base}/admin/stats", timeout=5) as resp:
            data: dict[str, Any] = json.load(resp)
        return data

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


StartMock = Callable[..., MockProcess]


@pytest.fixture
def mock_proc(tmp_path: Path) -> Iterator[StartMock]:
    """Start mock servers (``mock_proc("--latency-ms", "100")``); all stop after the test."""
    started: list[MockProcess] = []

    def start(*options: str) -> MockProcess:
        server = MockProcess(tmp_path / f"mock-{len(started)}.log", *options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def fault_options(faults: dict[str, float]) -> list[str]:
    return [f"--fault={kind}={rate}" for kind, rate in faults.items()]


# -- assay run, as a user runs it ---------------------------------------------------------------


def cli_env(project: Project, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ASSAY_JUDGE_MODEL", "ASSAY_STORE_URL", "OPENAI_API_KEY", "COLUMNS",
                        "LINES", "PYTHONPATH")}
    env["ASSAY_CACHE_DIR"] = str(project.root / "cache")
    env.update(extra)
    return env


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test() -> Iterator[None]:
    """A drill that fails half-way must not leave an ``assay run`` behind."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def assay_run(project: Project, *args: str, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen[str]:
    """Start ``assay run ARGS --store <project db>`` (in the project directory unless
    ``cwd`` is given)."""
    out = (project.root / "stdout.txt").open("a", encoding="utf-8")
    err = (project.root / "stderr.txt").open("a", encoding="utf-8")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay", "run", *args, "--store", project.store_url],
            cwd=cwd or project.root, env=env or cli_env(project), stdout=out, stderr=err,
            text=True)
        _STARTED.append(proc)
        return proc
    finally:
        out.close()
        err.close()


def finish(proc: subprocess.Popen[str], project: Project, timeout: float
           ) -> tuple[int, str, str]:
    """Wait for a run; its exit code, and what it printed (this call's output only)."""
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
        raise AssertionError(f"assay run did not finish within {timeout:g}s") from None
    out = (project.root / "stdout.txt").read_text(encoding="utf-8")
    err = (project.root / "stderr.txt").read_text(encoding="utf-8")
    (project.root / "stdout.txt").unlink()
    (project.root / "stderr.txt").unlink()
    return code, out, err


def run_cli(project: Project, *args: str, timeout: float = 60,
            env: dict[str, str] | None = None, cwd: Path | None = None
            ) -> tuple[int, str, str]:
    return finish(assay_run(project, *args, env=env, cwd=cwd), project, timeout)


# -- reading the store directly ---------------------------------------------------------------


@dataclass
class Stored:
    """A run as the SQLite file holds it."""

    runs: list[tuple[str, str]]  # (id, status)
    case_rows: Counter[str]
    executions: Counter[str]
    scores: Counter[tuple[str, str]]
    values: dict[tuple[str, str], tuple[float | None, str | None, dict[str, Any]]]


def read_store(db: Path) -> Stored | None:
    """Everything in the store, or None when it does not exist yet (or has no tables)."""
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(db, timeout=10)
    except sqlite3.Error:
        return None
    try:
        runs = [(r[0], r[1]) for r in conn.execute("SELECT id, status FROM runs")]
        rows = Counter(r[0] for r in conn.execute("SELECT case_id FROM case_results"))
        executions = Counter(r[0] for r in conn.execute("SELECT case_id FROM executions"))
        scores: Counter[tuple[str, str]] = Counter()
        values = {}
        for case_id, evaluator, value, code, score in conn.execute(
                "SELECT case_id, evaluator, value, error_code, score FROM scores"):
            scores[(case_id, evaluator)] += 1
            values[(case_id, evaluator)] = (value, code, json.loads(score))
    except sqlite3.OperationalError:  # created, not migrated yet
        return None
    finally:
        conn.close()
    return Stored(runs, rows, executions, scores, values)


def the_run(project: Project) -> str:
    """The id of the one run in the project's store, once it exists."""
    def run_id() -> str | None:
        stored = read_store(project.db)
        return stored.runs[0][0] if stored and stored.runs else None
    return wait_for(run_id, 30, "the run to be created")


def assert_complete(stored: Stored, project: Project) -> None:
    """Every case has one case row and one execution; every (case, evaluator) one score."""
    ids = set(project.cases)
    missing = sorted(ids - set(stored.case_rows))
    assert not missing and set(stored.case_rows) == ids, f"missing case rows: {missing[:5]}"
    assert set(stored.executions) == ids
    assert set(stored.scores) == {(c, e) for c in ids for e in project.evaluators}
    duplicated = [k for k, n in [*stored.case_rows.items(), *stored.executions.items(),
                                 *stored.scores.items()] if n != 1]
    assert not duplicated, f"stored more than once: {duplicated[:5]}"


def assert_scores_right(stored: Stored, project: Project) -> Counter[str]:
    """Each judge score is the mock's similarity, or an explicit drill error; error counts."""
    errors: Counter[str] = Counter()
    for case_id in project.cases:
        value, code, score = stored.values[(case_id, "similar")]
        if code is not None:
            assert value is None and score["error"]["message"], (case_id, score)
            assert code in DRILL_ERRORS, (case_id, score["error"])
            errors[code] += 1
        else:
            # Rounded to two places, as UiPath reports a similarity.
            assert value == pytest.approx(project.expected_similarity(case_id), abs=5e-3), (
                case_id, score)
        if "replied" in project.evaluators:
            replied, replied_code, _ = stored.values[(case_id, "replied")]
            assert replied == 1.0 and replied_code is None
    return errors


# -- drill 1: a thousand judge calls through 30% mixed faults --------------------------------


def fault_accounting(stored: Stored, stats: dict[str, Any], errors: Counter[str]) -> None:
    """Every failed attempt was retried once, except the last one of an exhausted call; a
    truncated answer is an answer (re-asked, not retried). The scores account for it all."""
    faults = Counter(stats["faults"])
    assert stats["requests"] == stats["completed"] + stats["fault_total"]
    calls = sum(v[2]["usage"]["calls"] for k, v in stored.values.items() if k[1] == "similar")
    # On a machine whose CPU is taken by other work, an attempt can outlast its call timeout
    # through no fault of the server's: a good answer read too late (a completed request to
    # the server, a timed-out attempt to assay, so one completed request that is no call), or
    # a request still unsent when its time ran out (a retry the server never saw). Those are
    # the only ways the counts may part: each accounts for one retry more, and only a few.
    outlasted = stats["completed"] + faults["truncated"] - calls
    expected = stats["fault_total"] - faults["truncated"] - errors["retries_exhausted"]
    late = retries_reported(stored) - expected
    slack = max(3, stats["completed"] // 50)
    assert 0 <= outlasted <= late <= slack, (outlasted, late, calls, stats)


def retries_reported(stored: Stored) -> int:
    return sum(v[2]["usage"]["retries"] for k, v in stored.values.items() if k[1] == "similar")


@pytest.mark.timeout(120)
async def test_judge_calls_through_30_percent_mixed_faults(
        tmp_path: Path, mock_proc: StartMock) -> None:
    """200 cases through the Runner, whose engine counters are checked against the server's:
    429s with Retry-After, 500/503, dropped connections, bodies that are not JSON or have no
    choices, truncated answers, and hangs past the call timeout."""
    n = 200
    server = mock_proc(*fault_options(MIXED_FAULTS), "--retry-after", "0.05",
                       "--hang-s", "1.5", "--seed", "7")
    project = make_project(tmp_path / "project", n)
    suite = load_suite(project.root / "EVAL.yaml")
    targets = load_targets_for(project.root)
    assert targets is not None
    agent = build_target(targets.require("agent"), targets.base_dir)
    policy = RetryPolicy(max_attempts=8, total_timeout_s=30, call_timeout_s=0.5,
                         backoff_base_s=0.01, backoff_max_s=0.1, max_retry_after_s=0.2)
    engine = JudgeEngine(EngineConfig(default_model=server.model, retry=policy,
                                      cache_path=project.root / "cache" / "responses.sqlite"))
    store = RunStore(project.store_url)
    config = RunConfig(concurrency=32, gates=Gates(max_failed=None, max_errors=None))
    runner = Runner(suite, lambda _name: agent, engine, store, config)
    started = time.monotonic()
    try:
        run_id = store.create_run(suite.name, {"run": config.model_dump(mode="json")})
        result = await runner.run(run_id)
    finally:
        await engine.aclose()
        store.close()
    elapsed = time.monotonic() - started

    stored = read_store(project.db)
    assert stored is not None
    assert_complete(stored, project)
    errors = assert_scores_right(stored, project)
    assert project.calls() == Counter({c: 1 for c in project.cases})
    stats = server.stats()
    print(f"\n{n} cases in {elapsed:.1f}s: {stats['requests']} requests, faults "
          f"{stats['faults']} ({stats['fault_total']}), engine retries {engine.usage.retries}, "
          f"calls {engine.usage.calls}, error scores {dict(errors)}")
    assert stats["fault_total"] >= 0.2 * n
    fault_accounting(stored, stats, errors)
    assert retries_reported(stored) == engine.usage.retries
    assert engine.usage.calls == stats["completed"] + stats["faults"].get("truncated", 0)
    assert sum(errors.values()) <= 0.01 * n
    assert result.summary.cases == n
    assert result.summary.evaluator_errors == sum(errors.values())


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_assay_run_1000_judge_calls_through_30_percent_mixed_faults(
        tmp_path: Path, mock_proc: StartMock) -> None:
    """A thousand cases through the real command, with a call timeout the hangs outlast."""
    n = 1000
    server = mock_proc(*fault_options(MIXED_FAULTS), "--retry-after", "0.05",
                       "--hang-s", "1.5", "--seed", "11")
    project = make_project(tmp_path, n)
    started = time.monotonic()
    # 1 s: past what a good answer takes on a loaded two-core machine (at 0.5 s one did not,
    # and its retry was counted against no fault), well short of the 1.5 s hangs
    code, out, err = run_cli(project, "EVAL.yaml", "--judge-model", server.model, "-c", "32",
                             "--call-timeout", "1.0", "--max-attempts", "8",
                             "--total-timeout", "30", "--max-failed", "100000", timeout=280)
    elapsed = time.monotonic() - started
    assert "Traceback" not in err
    stored = read_store(project.db)
    assert stored is not None
    assert_complete(stored, project)
    errors = assert_scores_right(stored, project)
    assert project.calls() == Counter({c: 1 for c in project.cases})
    assert code == (1 if errors else 0), (code, out, err)
    assert stored.runs[0][1] == "completed"
    stats = server.stats()
    print(f"\nassay run, {n} cases in {elapsed:.1f}s: {stats['requests']} requests, faults "
          f"{stats['faults']} ({stats['fault_total']}), retries {retries_reported(stored)}, "
          f"error scores {dict(errors)}")
    assert all(stats["faults"].get(kind) for kind in MIXED_FAULTS), stats["faults"]
    assert stats["fault_total"] >= 0.2 * n
    fault_accounting(stored, stats, errors)
    assert sum(errors.values()) <= 0.01 * n


@pytest.mark.timeout(90)
def test_assay_run_through_mixed_faults(tmp_path: Path, mock_proc: StartMock) -> None:
    """The same faults through the real command, hangs outlasting its call timeout, at most
    three faults per request so that every score comes through."""
    server = mock_proc(*fault_options(MIXED_FAULTS), "--retry-after", "0.05",
                       "--hang-s", "1.5", "--max-faults-per-request", "3", "--seed", "3")
    project = make_project(tmp_path, 120)
    code, out, err = run_cli(project, "EVAL.yaml", "--judge-model", server.model,
                             "-c", "16", "--call-timeout", "0.5", "--max-failed", "1000")
    assert "Traceback" not in err
    stored = read_store(project.db)
    assert stored is not None
    assert_complete(stored, project)
    errors = assert_scores_right(stored, project)
    assert not errors
    assert code == 0, (code, out, err)
    assert stored.runs[0][1] == "completed"
    stats = server.stats()
    print(f"\nassay run: {stats['requests']} requests, faults {stats['faults']}")
    assert stats["fault_total"] >= 0.2 * 120
    fault_accounting(stored, stats, errors)


@pytest.mark.timeout(60)
def test_assay_run_rides_out_an_outage_at_the_start(
        tmp_path: Path, mock_proc: StartMock) -> None:
    """The first 12 requests all fail with 503, then the provider is back."""
    server = mock_proc("--fault=503=1", "--fault-budget", "12")
    project = make_project(tmp_path, 16)
    code, out, err = run_cli(project, "EVAL.yaml", "--judge-model", server.model,
                             "--max-failed", "1000")
    assert code == 0, (out, err)
    stored = read_store(project.db)
    assert stored is not None
    assert_complete(stored, project)
    assert not assert_scores_right(stored, project)
    stats = server.stats()
    assert stats["faults"] == {"503": 12} and stats["completed"] == 16
    assert retries_reported(stored) == 12


# -- drill 2: a provider that answers 429 forever ---------------------------------------------


@pytest.mark.timeout(60)
def test_assay_run_against_429_forever_ends_within_its_time_bound_and_exits_1(
        tmp_path: Path, mock_proc: StartMock) -> None:
    """Every request answered 429 with Retry-After 30 s, a 2 s bound per judge call and no
    practical attempt limit: the run ends in seconds, every judge score is
    ``retries_exhausted``, and the error gate fails the run although each case's
    deterministic check passed."""
    server = mock_proc("--fault=429=1", "--retry-after", "30")
    project = make_project(tmp_path, 8)
    started = time.monotonic()
    code, out, err = run_cli(project, "EVAL.yaml", "--judge-model", server.model, "-c", "4",
                             "--total-timeout", "2", "--max-attempts", "100000",
                             "--max-failed", "1000")
    elapsed = time.monotonic() - started
    stats = server.stats()
    print(f"\nassay run, 429 forever: {elapsed:.1f}s, {stats['requests']} requests")
    assert code == 1, (out, err)
    assert "gate failed" in out and "Traceback" not in err
    # Two waves of four calls, each bounded by 2 s, plus the command's start-up.
    assert elapsed < 2 * 2 + 6
    assert stats["requests"] <= 8  # a 30 s Retry-After does not fit in 2 s: no retry
    stored = read_store(project.db)
    assert stored is not None
    assert_complete(stored, project)
    assert stored.runs[0][1] == "completed"
    assert {stored.values[(c, "similar")][1] for c in project.cases} == {"retries_exhausted"}
    assert {stored.values[(c, "replied")][0] for c in project.cases} == {1.0}


@pytest.mark.timeout(60)
async def test_429_forever_honours_retry_after_within_the_time_bound(
        tmp_path: Path, mock_proc: StartMock) -> None:
    """Retry-After 30 s capped by the policy at 0.5 s, a 2 s bound and no practical attempt
    limit: calls wait as asked, within the bound, and the run ends in about 2 s a wave."""
    server = mock_proc("--fault=429=1", "--retry-after", "30")
    project = make_project(tmp_path, 12)
    suite = load_suite(project.root / "EVAL.yaml")
    targets = load_targets_for(project.root)
    assert targets is not None
    agent = build_target(targets.require("agent"), targets.base_dir)
    policy = RetryPolicy(max_attempts=100_000, total_timeout_s=2, call_timeout_s=1,
                         backoff_base_s=0.01, backoff_max_s=0.05, max_retry_after_s=0.5)
    engine = JudgeEngine(EngineConfig(default_model=server.model, retry=policy,
                                      cache_mode="off"))
    store = RunStore(project.store_url)
    runner = Runner(suite, lambda _name: agent, engine, store, RunConfig(concurrency=4))
    started = time.monotonic()
    try:
        run_id = store.create_run(suite.name, {})
        result = await runner.run(run_id)
    finally:
        await engine.aclose()
        store.close()
    elapsed = time.monotonic() - started
    stats = server.stats()
    print(f"\n429 forever: {elapsed:.1f}s, {stats['requests']} requests, "
          f"{engine.usage.retries} retries")
    # Each case's judge call is bounded by 2 s; four at a time, twelve cases: three waves.
    assert elapsed < 3 * 2 + 3
    stored = read_store(project.db)
    assert stored is not None
    assert_complete(stored, project)
    assert {stored.values[(c, "similar")][1] for c in project.cases} == {"retries_exhausted"}
    assert result.summary.evaluator_errors == 12 and not result.summary.passed
    # Retry-After is honoured (capped at 0.5 s), so the server is not hammered.
    assert stats["requests"] <= 12 * (2 / 0.5 + 2)
    # Every retry is accounted in the scores. (A retry left with almost no time can time out
    # before the server sees it, so the server may count fewer.)
    assert retries_reported(stored) == engine.usage.retries >= stats["requests"] - 12


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_assay_run_against_429_forever_with_the_default_policy(
        tmp_path: Path, mock_proc: StartMock) -> None:
    """The default policy (6 attempts, backoff from 0.5 s, Retry-After 0): the attempt bound
    ends every call; the error gate fails, and everything is stored."""
    server = mock_proc("--fault=429=1", "--retry-after", "0")
    project = make_project(tmp_path, 5, judge_only=True)
    started = time.monotonic()
    code, out, err = run_cli(project, "EVAL.yaml", "--judge-model", server.model,
                             "--max-failed", "1000", timeout=100)
    elapsed = time.monotonic() - started
    stats = server.stats()
    print(f"\nassay run, 429 forever, default policy: {elapsed:.1f}s, "
          f"{stats['requests']} requests")
    assert code == 1, (out, err)
    assert "gate failed" in out and "Traceback" not in err
    # Six attempts per call, then the backoff's worst case: 0.5 + 1 + 2 + 4 + 8 s.
    assert stats["requests"] == 5 * 6
    assert elapsed < 15.5 + 15
    stored = read_store(project.db)
    assert stored is not None
    assert_complete(stored, project)
    assert stored.runs[0][1] == "completed"
    assert {stored.values[(c, "similar")][1] for c in project.cases} == {"retries_exhausted"}
    assert retries_reported(stored) == 5 * 5


# -- drill 3: kill -9 at random points, then resume --------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.timeout(90)
def test_kill_9_then_resume_runs_each_pair_exactly_once(
        tmp_path: Path, mock_proc: StartMock, seed: int) -> None:
    server = mock_proc("--latency-ms", "150")
    project = make_project(tmp_path, 60)
    proc = assay_run(project, "EVAL.yaml", "--judge-model", server.model, "-c", "4",
                     "--max-failed", "1000")
    run_id = the_run(project)
    time.sleep(random.Random(seed).uniform(0.05, 1.6))
    assert proc.poll() is None, "the run finished before the kill; make it longer"
    proc.send_signal(signal.SIGKILL)
    code, _, _ = finish(proc, project, 10)
    assert code == -signal.SIGKILL
    before = read_store(project.db)
    assert before is not None and before.runs == [(run_id, "running")]
    calls_before = project.calls()
    print(f"\nseed {seed}: killed with {len(before.case_rows)} case rows, "
          f"{len(before.executions)} executions, {sum(before.scores.values())} scores stored")

    calls = resume_and_check(project, run_id, before, calls_before)
    # Others ran at most once more (once if the kill came before they were called).
    assert all(calls[c] - calls_before[c] == (0 if c in before.executions else 1)
               for c in project.cases)


@pytest.mark.timeout(90)
def test_kill_9_during_the_first_calls_of_a_new_store_then_resume(
        tmp_path: Path, mock_proc: StartMock) -> None:
    """A new store is created with sqlite3 alone and SQLAlchemy imported while the first
    calls are in flight: killed then, the store is whole, at the current revision, holds the
    run, and the run resumes to the end, each pair judged once."""
    server = mock_proc("--latency-ms", "400")
    project = make_project(tmp_path, 40)
    assert not project.db.exists()
    proc = assay_run(project, "EVAL.yaml", "--judge-model", server.model, "-c", "4",
                     "--max-failed", "1000")
    wait_for(lambda: server.stats()["requests"], 30, "the first judge call")
    assert proc.poll() is None, "the run finished before the kill"
    proc.send_signal(signal.SIGKILL)
    code, _, _ = finish(proc, project, 10)
    assert code == -signal.SIGKILL
    with sqlite3.connect(project.db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        versions = [r[0] for r in conn.execute("SELECT version_num FROM assay_alembic_version")]
    from assay.store.revisions import revisions

    assert versions == [revisions()[-1]]
    before = read_store(project.db)
    assert before is not None and len(before.runs) == 1 and before.runs[0][1] == "running"
    resume_and_check(project, before.runs[0][0], before, project.calls())


def resume_and_check(project: Project, run_id: str, before: Stored,
                     calls_before: Counter[str], cwd: Path | None = None) -> Counter[str]:
    """Resume the run; it completes with every result right and stored once, and the cases
    stored before it stopped (a case row or an execution) were not run again."""
    code, out, err = run_cli(project, "--resume", run_id, cwd=cwd)
    assert code == 0, (out, err)
    after = read_store(project.db)
    assert after is not None and after.runs == [(run_id, "completed")]
    assert_complete(after, project)
    assert not assert_scores_right(after, project)
    calls = project.calls()
    for case_id in set(before.case_rows) | set(before.executions):
        assert calls[case_id] == calls_before[case_id] == 1, case_id
    assert set(calls) == set(project.cases)
    return calls


# -- drill 4: Ctrl-C ----------------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_ctrl_c_stops_cleanly_keeps_results_and_says_how_to_resume(
        tmp_path: Path, mock_proc: StartMock) -> None:
    server = mock_proc("--latency-ms", "150")
    project = make_project(tmp_path / "project", 60)
    proc = assay_run(project, "EVAL.yaml", "--judge-model", server.model, "-c", "4",
                     "--max-failed", "1000")
    run_id = the_run(project)

    def some_done() -> int:
        stored = read_store(project.db)
        return len(stored.case_rows) if stored and len(stored.case_rows) >= 8 else 0

    seen = wait_for(some_done, 30, "eight stored cases")
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    code, _, err = finish(proc, project, 20)
    stopped_in = time.monotonic() - started
    print(f"\nCtrl-C after {seen} stored cases: exit {code} in {stopped_in:.2f}s")
    assert code == 130
    assert stopped_in < 5
    assert "Traceback" not in err
    assert f"assay run --resume {run_id}" in err, err
    before = read_store(project.db)
    assert before is not None and before.runs == [(run_id, "interrupted")]
    assert seen <= len(before.case_rows) < len(project.cases)
    assert all(n == 1 for n in before.scores.values())
    for case_id in before.case_rows:  # a stored case has all of its scores
        assert all((case_id, e) in before.scores for e in EVALUATORS)
    calls_before = project.calls()

    # The run was started as "assay run EVAL.yaml" in the project; resume it from elsewhere.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resume_and_check(project, run_id, before, calls_before, cwd=elsewhere)


# -- drill 5: the store stops taking writes mid-run ---------------------------------------------

STORE_FULL_HOOK = '''"""Loaded at start-up (PYTHONPATH): once the flag file exists, every
database connection caps the database at its current size, as a full disk would: those
SQLAlchemy executes on, and those the store's writer thread takes from the pool."""

import os

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

FLAG = os.environ["DRILL_STORE_FULL_FLAG"]


def _cap(dbapi):
    pages = dbapi.execute("PRAGMA page_count").fetchone()[0]
    dbapi.execute(f"PRAGMA max_page_count={pages}")


@event.listens_for(Engine, "before_cursor_execute")
def _fill_disk(conn, cursor, statement, parameters, context, executemany):
    if os.path.exists(FLAG) and not conn.info.get("drill_full"):
        conn.info["drill_full"] = True
        _cap(conn.connection.dbapi_connection)


@event.listens_for(Pool, "checkout")
def _fill_disk_at_checkout(dbapi, record, proxy):
    if os.path.exists(FLAG):
        _cap(dbapi)
'''


def store_full_run(tmp_path: Path, mock_proc: StartMock
                   ) -> tuple[Project, str, int, str, int]:
    """A run whose store fills up after a few cases: (project, run id, exit code, stderr,
    case rows stored when the store filled)."""
    server = mock_proc("--latency-ms", "100")
    project = make_project(tmp_path / "project", 60)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(STORE_FULL_HOOK, encoding="utf-8")
    flag = tmp_path / "disk-full"
    env = cli_env(project, PYTHONPATH=str(hook), DRILL_STORE_FULL_FLAG=str(flag))
    proc = assay_run(project, "EVAL.yaml", "--judge-model", server.model, "-c", "4",
                     "--max-failed", "1000", env=env)
    run_id = the_run(project)

    def some_done() -> int:
        stored = read_store(project.db)
        return len(stored.case_rows) if stored and len(stored.case_rows) >= 5 else 0

    seen = wait_for(some_done, 30, "five stored cases")
    flag.touch()
    code, _, err = finish(proc, project, 30)
    return project, run_id, code, err, seen


@pytest.mark.timeout(90)
def test_store_full_mid_run_is_a_clear_error_and_what_was_written_stays_readable(
        tmp_path: Path, mock_proc: StartMock) -> None:
    project, run_id, code, err, seen = store_full_run(tmp_path, mock_proc)
    print(f"\nstore full after {seen} cases: exit {code}; stderr: {err.strip()!r}")
    assert code == 2
    assert "Traceback" not in err
    assert "store_error" in err and "full" in err and "kept" in err
    assert f"assay run --resume {run_id}" in err  # on one line, ready to copy
    with sqlite3.connect(project.db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = read_store(project.db)
    assert stored is not None
    assert seen <= len(stored.case_rows) < len(project.cases)
    assert all(n == 1 for n in [*stored.case_rows.values(), *stored.scores.values()])
    for case_id in stored.case_rows:
        assert all((case_id, e) in stored.scores for e in EVALUATORS)
    # assay itself reads what was written ...
    show = subprocess.run([sys.executable, "-m", "assay", "show", run_id, "--json",
                           "--store", project.store_url], capture_output=True, text=True,
                          timeout=60, env=cli_env(project), cwd=project.root)
    assert show.returncode == 0, show.stderr
    rows = [json.loads(line) for line in show.stdout.splitlines() if line.strip()]
    assert {r["eval_id"] for r in rows} == set(stored.case_rows)
    # ... and once the disk has room again, the run resumes to the end.
    code, out, err = run_cli(project, "--resume", run_id)
    assert code == 0, (out, err)
    after = read_store(project.db)
    assert after is not None and after.runs == [(run_id, "completed")]
    assert_complete(after, project)


def test_wait_for_is_bounded() -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError, match="timed out"):
        wait_for(lambda: None, 0.1, "nothing")
    assert time.monotonic() - started < 1
