"""A batch is paid for once, and a deleted run leaves no batch running (``assay run --batch``).

Every submission is kept in the run store before its provider is asked; a process killed
between the provider's answer and the store's record (here killed outright, SIGKILL, by a
start-up hook at that very point) leaves a submission whose batch id is not known, which the
resume looks for at the provider (the mock server, over real HTTP, counting the batches it is
given) before anything is sent again. Deleting a run that waits for batch cancels its batches
at the provider, through the library the CLI and the REST API share.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest

import assay
from assay.llm.providers.batches import OpenAIBatches
from assay.llm.types import ConnectionFailed
from assay.store.batches import run_batches
from assay.store.runs import RunStore
from assay.types.records import RunStatus
from tests.assay_process import run_assay
from tests.test_batch_runs import EVALUATORS, KEY, ROWS, _quickstart

OPENAI, ANTHROPIC = "openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"
CASES = 5
"""The quickstart suite's cases: one judge request each."""

KILL_HOOK = '''"""Loaded at start-up (PYTHONPATH): the process kills itself (SIGKILL) at a request to the
provider's batch API: the first it sends (BATCH_KILL=before: the upload of OpenAI's file, the
creation of Anthropic's batch), the creation of the batch once the upload answered
(BATCH_KILL=uploaded, OpenAI's) or just after that creation answered, before the store records
the batch id (BATCH_KILL=after)."""

import os
import signal

from assay.llm.providers import batches

WHEN = os.environ["BATCH_KILL"]
exchange = batches.exchange


async def killing(method, url, *args, **kwargs):
    creates = method == "POST" and url.endswith("/batches")
    if method == "POST" and (WHEN == "before" or (WHEN == "uploaded" and creates)):
        os.kill(os.getpid(), signal.SIGKILL)
    answer = await exchange(method, url, *args, **kwargs)
    if WHEN == "after" and creates:
        os.kill(os.getpid(), signal.SIGKILL)
    return answer


batches.exchange = killing
'''


class Project:
    """The quickstart suite in a folder, the environment pointing both providers at the mock
    server, and the arguments every ``assay run`` of it takes."""

    def __init__(self, tmp_path: Path, server: Any, judge: str) -> None:
        self.root, self.server, self.judge = tmp_path, server, judge
        self.suite = _quickstart(tmp_path)
        self.db = tmp_path / "runs.db"
        self.env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY,
                    "ANTHROPIC_BASE_URL": server.url.removesuffix("/v1"),
                    "ANTHROPIC_API_KEY": KEY, "ASSAY_CACHE_DIR": str(tmp_path / "cache"),
                    "ASSAY_RUN_LEASE_S": "1"}
        self.common = ["--judge-model", judge, "--store", str(self.db)]
        server.server.batch_api.batches.clear()  # the session's server: no batch of another test
        server.server.batch_api.files.clear()

    def killed(self, when: str) -> str:
        """Start ``assay run --batch`` as a process of its own, killed at the submit
        (``when``: before or after the provider's answer); the run's id, once its lease ran
        out."""
        hook = self.root / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(KILL_HOOK)
        env = {**self.env, "PYTHONPATH": os.pathsep.join(
            [str(hook), *filter(None, [os.environ.get("PYTHONPATH")])]), "BATCH_KILL": when}
        process = subprocess.run([sys.executable, "-m", "assay", "run", str(self.suite),
                                  "--batch", *self.common], cwd=self.root, env=env,
                                 capture_output=True, text=True, timeout=120)
        assert process.returncode == -signal.SIGKILL, process.stdout + process.stderr
        time.sleep(1.5)  # its lease runs out: the run reads as interrupted
        store = RunStore(f"sqlite:///{self.db}")
        try:
            [run] = store.run_records()
            assert run.status is RunStatus.INTERRUPTED
            [batch] = run_batches(store, run.id)
            assert not batch.known and batch.token == batch.batch_id  # the intent, kept
            assert batch.requests == CASES and batch.model == self.judge
        finally:
            store.close()
        return run.id

    def resume(self, run_id: str, expect: int) -> str:
        done = run_assay(["run", "--resume", run_id, *self.common], cwd=self.root,
                         env=self.env)
        assert done.returncode == expect, done.stdout + done.stderr
        assert KEY not in done.stdout + done.stderr
        return done.stdout

    def resume_until_done(self, run_id: str) -> str:
        """Resume until the run completes (at most three times); the last output."""
        for _ in range(3):
            done = run_assay(["run", "--resume", run_id, *self.common], cwd=self.root,
                             env=self.env)
            assert done.returncode in (0, 75), done.stdout + done.stderr
            if done.returncode == 0:
                return done.stdout
        raise AssertionError("the run still waits after three resumes")

    def resume_fails_saying(self, run_id: str, message: str) -> None:
        """``assay run --resume`` and the REST API's resume of ``run_id`` both fail with
        ``message`` (what the library said), no traceback and no key."""
        from tests.server_support import events, serve

        resumed = run_assay(["run", "--resume", run_id, *self.common], cwd=self.root,
                            env=self.env)
        assert resumed.returncode != 0 and "Traceback" not in resumed.stderr
        assert message in " ".join((resumed.stdout + resumed.stderr).split())
        assert KEY not in resumed.stdout + resumed.stderr
        with serve(f"sqlite:///{self.db}", suite_roots=[self.root],
                   allowed_judge_models=[self.judge]) as served, served.client() as api:
            launched = api.post(f"/runs/{run_id}/resume")
            assert launched.status_code == 202, launched.text
            name, last = events(api, launched.json()["stream"])[-1]
            assert name == "run_failed" and last["error_message"] == message

    def scores(self, run_id: str) -> list[Any]:
        store = RunStore(f"sqlite:///{self.db}")
        try:
            records = store.case_records(run_id)
            assert store.run_record(run_id).status is RunStatus.COMPLETED
        finally:
            store.close()
        assert len(records) == CASES
        return [s for r in records for s in r.scores]


def _every_score(scores: list[Any]) -> None:
    assert len(scores) == 2 * CASES
    assert all(s.error is None and s.value is not None for s in scores)


@pytest.mark.drill
@pytest.mark.parametrize("judge", [OPENAI, ANTHROPIC])
def test_a_process_killed_once_the_provider_took_its_batch_never_pays_twice(
        mock_server, tmp_path, judge):
    """Killed after the provider took the batch and before the store kept its id: the resume
    finds the batch at the provider (OpenAI: by the token in its metadata; Anthropic: the
    batch created since, of as many requests, whose results' custom ids are the
    submission's) and collects it; no second batch, no live call."""
    project = Project(tmp_path, mock_server, judge)
    run_id = project.killed("after")
    assert mock_server.stats.batches == 1
    out = project.resume(run_id, 0)
    assert "all gates passed" in out
    assert mock_server.stats.batches == 1 and mock_server.stats.requests == 0
    _every_score(project.scores(run_id))
    store = RunStore(f"sqlite:///{project.db}")
    [batch] = run_batches(store, run_id)
    store.close()
    assert batch.known and batch.batch_id in mock_server.server.batch_api.batches


@pytest.mark.drill
@pytest.mark.parametrize("judge", [OPENAI, ANTHROPIC])
def test_a_process_killed_before_the_provider_call_submits_once_on_resume(
        mock_server, tmp_path, judge):
    project = Project(tmp_path, mock_server, judge)
    run_id = project.killed("before")
    assert mock_server.stats.batches == 0
    out = project.resume(run_id, 75)  # the submission was never taken: sent now, once
    assert "waiting for batch" in out
    assert mock_server.stats.batches == 1 and mock_server.stats.batch_requests == CASES
    assert "all gates passed" in project.resume(run_id, 0)
    assert mock_server.stats.batches == 1 and mock_server.stats.requests == 0
    _every_score(project.scores(run_id))


@pytest.mark.drill
def test_a_process_killed_after_its_upload_makes_the_batch_of_that_file_on_resume(
        mock_server, tmp_path):
    """Killed once OpenAI's upload of the requests answered, before the batch was created:
    the file's id is in the store, so the resume makes the batch of that file; one upload,
    one batch in all, the run's answers right, and once it completes the input and output
    files are deleted at the provider."""
    project = Project(tmp_path, mock_server, OPENAI)
    run_id = project.killed("uploaded")
    files = mock_server.server.batch_api.files
    [uploaded] = files
    assert (mock_server.stats.files_uploaded, mock_server.stats.batches) == (1, 0)
    assert "all gates passed" in project.resume_until_done(run_id)
    assert (mock_server.stats.files_uploaded, mock_server.stats.batches) == (1, 1)
    assert mock_server.stats.batch_requests == CASES and mock_server.stats.requests == 0
    _every_score(project.scores(run_id))
    [made] = mock_server.server.batch_api.batches.values()
    assert made.body["input_file_id"] == uploaded
    output = made.body["output_file_id"]
    assert sorted(mock_server.stats.files_deleted) == sorted([uploaded, output])
    assert files == {}  # nothing left at the provider
    store = RunStore(f"sqlite:///{project.db}")
    [batch] = run_batches(store, run_id)
    store.close()
    assert batch.known and batch.input_file == uploaded and batch.collected


def test_a_server_that_lists_no_batches_stops_the_resume_saying_what_to_do(
        mock_server, tmp_path, monkeypatch):
    """The batch was made but its id never came back, and the server answers 404 to the
    listing of batches: nothing tells whether it made the batch, so nothing is sent again
    (the run stops, the submission kept), with one message, from the library, the CLI and
    the REST API alike: the run, the server, what could not be confirmed and what to do.
    Once the server lists its batches, the resume finds the batch: one batch in all."""
    pytest.importorskip("fastapi")
    project = Project(tmp_path, mock_server, OPENAI)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.setenv(name, project.env[name])
    monkeypatch.chdir(tmp_path)
    mock_server.configure(batch_listing=False)
    original = OpenAIBatches.submit

    async def lost(self: OpenAIBatches, *args: Any, **kwargs: Any) -> str:
        await original(self, *args, **kwargs)
        raise ConnectionFailed("the connection dropped before the answer")

    monkeypatch.setattr(OpenAIBatches, "submit", lost)
    with pytest.raises(assay.EvaluationError) as stopped:
        assay.evaluate(project.suite, judge_model=OPENAI, batch=True, store=project.db)
    monkeypatch.setattr(OpenAIBatches, "submit", original)
    assert stopped.value.code == "batch_unconfirmed"
    message = stopped.value.message
    [run_id] = _run_ids(project)
    for said in (f"run {run_id}", "could not be confirmed", f"{mock_server.url}/batches",
                 "HTTP 404", "Nothing was sent again", f"assay run --resume {run_id}",
                 f"assay delete {run_id} --force"):
        assert said in message, message
    assert KEY not in message and mock_server.stats.batches == 1

    project.resume_fails_saying(run_id, message)
    assert mock_server.stats.batches == 1  # never sent again
    store = RunStore(f"sqlite:///{project.db}")
    [batch] = run_batches(store, run_id)
    store.close()
    assert not batch.known  # the submission is kept

    mock_server.configure(batch_listing=True)  # (its stats start again)
    assert "all gates passed" in project.resume_until_done(run_id)
    assert mock_server.stats.batches == 0 and mock_server.stats.requests == 0
    assert len(mock_server.server.batch_api.batches) == 1
    _every_score(project.scores(run_id))


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, orjson.dumps(body), method="POST", headers={
        "content-type": "application/json", "x-api-key": KEY})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return orjson.loads(answer.read())


@pytest.mark.drill
def test_an_anthropic_batch_of_the_same_size_that_is_not_the_runs_is_never_adopted(
        mock_server, tmp_path):
    """Another batch of as many requests, created after the submission was kept: while it
    runs, the resume cannot tell whether it is the run's and sends nothing (the run waits);
    once it ended and its custom ids are not the run's, the run's requests are sent again."""
    mock_server.configure(batch_polls=1)
    project = Project(tmp_path, mock_server, ANTHROPIC)
    run_id = project.killed("before")
    other = _post(f"{mock_server.url}/messages/batches", {"requests": [
        {"custom_id": f"other-{i}", "params": {"model": "claude-3-5-haiku-latest",
                                               "max_tokens": 10, "messages": [
                                                   {"role": "user", "content": "hi"}]}}
        for i in range(CASES)]})["id"]
    out = project.resume(run_id, 75)
    assert "its batch id not known yet" in out
    assert mock_server.stats.batches == 1  # only the other one: nothing sent while unsure
    project.resume(run_id, 75)  # the other one ended, not the run's: the run's sent now
    assert mock_server.stats.batches == 2
    project.resume(run_id, 75)  # the run's batch, in progress
    assert "all gates passed" in project.resume(run_id, 0)
    assert mock_server.stats.batches == 2 and mock_server.stats.requests == 0
    _every_score(project.scores(run_id))
    store = RunStore(f"sqlite:///{project.db}")
    assert other not in {b.batch_id for b in run_batches(store, run_id)}
    store.close()


def test_a_submit_whose_answer_was_lost_is_found_not_sent_again(mock_server, tmp_path,
                                                                 monkeypatch):
    """The provider took the batch but its answer never arrived (a dropped connection):
    before trying again, the provider is asked, and the batch it holds is the run's."""
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    original = OpenAIBatches.submit

    async def lost(self: OpenAIBatches, *args: Any, **kwargs: Any) -> str:
        await original(self, *args, **kwargs)
        raise ConnectionFailed("the connection dropped before the answer")

    monkeypatch.setattr(OpenAIBatches, "submit", lost)
    store = tmp_path / "runs.db"
    waiting = assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model=OPENAI, batch=True,
                             store=store)
    assert waiting.waiting and mock_server.stats.batches == 1
    [batch] = waiting.batch.batches
    assert batch.known and batch.batch_id.startswith("batch_")
    monkeypatch.setattr(OpenAIBatches, "submit", original)
    done = assay.resume(waiting.run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and mock_server.stats.batches == 1


# -- deleting a run that waits for batch --------------------------------------------------


def _waiting(project: Project, *options: str) -> str:
    """A run of the project left waiting for its batch, still in progress at the provider
    (``options``: more of ``assay run``'s)."""
    project.server.configure(batch_polls=1_000_000)
    first = run_assay(["run", str(project.suite), "--batch", *project.common, *options],
                      cwd=project.root, env=project.env)
    assert first.returncode == 0, first.stdout + first.stderr
    return first.stdout.split("assay run --resume ")[1].split()[0]


def _cancelled(server: Any) -> list[str]:
    return [b for b, found in server.server.batch_api.batches.items() if found.cancelled]


def _run_ids(project: Project) -> list[str]:
    store = RunStore(f"sqlite:///{project.db}")
    try:
        return [r.id for r in store.run_records()]
    finally:
        store.close()


@pytest.mark.parametrize("judge", [OPENAI, ANTHROPIC])
def test_assay_delete_cancels_the_batches_of_a_waiting_run(mock_server, tmp_path, judge):
    project = Project(tmp_path, mock_server, judge)
    run_id = _waiting(project)
    [batch_id] = mock_server.server.batch_api.batches
    deleted = run_assay(["delete", run_id, "--store", str(project.db)], cwd=tmp_path,
                        env=project.env)
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert f"cancelled batch {batch_id}" in deleted.stderr
    assert f"deleted run {run_id}" in deleted.stdout
    assert _cancelled(mock_server) == [batch_id] and _run_ids(project) == []
    if judge == OPENAI:  # the file its requests were uploaded in is deleted too
        uploaded = mock_server.server.batch_api.batches[batch_id].body["input_file_id"]
        assert mock_server.stats.files_deleted == [uploaded]


def test_a_cancel_that_fails_stops_the_delete_until_forced(mock_server, tmp_path):
    """The provider is down (503 to every batch API request): the delete, trying as often
    as the run's retry policy says, names the batch it could not cancel (never the key) and
    keeps the run, the batch's only record; ``--force`` deletes it, naming the batch left
    running."""
    project = Project(tmp_path, mock_server, OPENAI)
    run_id = _waiting(project, "--max-attempts", "2")
    [batch_id] = mock_server.server.batch_api.batches
    mock_server.configure(batch_unavailable=True)
    args = ["delete", run_id, "--store", str(project.db)]
    refused = run_assay(args, cwd=tmp_path, env=project.env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert mock_server.stats.batch_unavailable == 2  # the cancel, tried twice
    said = " ".join((refused.stdout + refused.stderr).split())
    assert "batches_not_cancelled" in said and batch_id in said and "--force" in said
    assert "HTTP 503" in said and KEY not in said and _run_ids(project) == [run_id]
    forced = run_assay([*args, "--force"], cwd=tmp_path, env=project.env)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert mock_server.stats.batch_unavailable == 4
    assert f"batch {batch_id} could not be cancelled" in " ".join(forced.stderr.split())
    assert KEY not in forced.stdout + forced.stderr
    assert _run_ids(project) == [] and _cancelled(mock_server) == []
    assert mock_server.stats.files_deleted == []  # a batch left running keeps its file


def test_a_run_without_batches_is_deleted_without_a_judge_engine(tmp_path, monkeypatch):
    """Nothing to cancel: no judge engine is built, so no judge setting of the environment
    is read (a cache mode that is none would refuse one) and no response cache opened."""
    from assay.run.delete import delete_run
    from assay.testing.runs import write_run

    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    run_id = write_run(store, 3)
    monkeypatch.setenv("ASSAY_CACHE", "not-a-mode")
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    deleted = delete_run(store, run_id)
    assert deleted.deleted and deleted.lines() == [] and store.run_records() == []
    store.close()
    assert not (tmp_path / "cache").exists()


def test_the_rest_api_delete_cancels_the_batches_and_refuses_when_it_cannot(
        mock_server, tmp_path, monkeypatch):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    project = Project(tmp_path, mock_server, ANTHROPIC)
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(name, project.env[name])
    kept, gone = (_waiting(project, "--max-attempts", "2") for _ in range(2))
    first, second = mock_server.server.batch_api.batches
    with serve(f"sqlite:///{project.db}") as served, served.client() as api:
        deleted = api.delete(f"/runs/{gone}")
        assert deleted.status_code == 200, deleted.text
        assert _cancelled(mock_server) == [second]
        assert deleted.json()["cancelled"] == [second] and deleted.json()["not_cancelled"] == {}
        assert deleted.json()["lines"] == [f"cancelled batch {second}"]
        monkeypatch.setenv("ANTHROPIC_BASE_URL", _down().removesuffix("/v1"))
        refused = api.delete(f"/runs/{kept}")
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "batches_not_cancelled"
        assert first in refused.json()["detail"] and KEY not in refused.text
        assert api.get(f"/runs/{kept}").status_code == 200
        forced = api.delete(f"/runs/{kept}", params={"force": "true"})
        assert forced.status_code == 200, forced.text
        assert list(forced.json()["not_cancelled"]) == [first]  # left running, and said so
        assert any(first in line and "runs to its end" in line
                   for line in forced.json()["lines"]) and KEY not in forced.text
    assert _run_ids(project) == [] and _cancelled(mock_server) == [second]


def _down() -> str:
    """The address of a port nothing listens on (bound, then closed): a provider that is
    down."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.mark.drill
def test_deleting_a_run_killed_before_its_batch_id_was_kept_cancels_that_batch(
        mock_server, tmp_path):
    """The store has the submission but not its batch id: the delete finds the batch at
    the provider by its token, as a resume would, and cancels it."""
    mock_server.configure(batch_polls=1_000_000)
    project = Project(tmp_path, mock_server, OPENAI)
    run_id = project.killed("after")
    [batch_id] = mock_server.server.batch_api.batches
    deleted = run_assay(["delete", run_id, "--store", str(project.db)], cwd=tmp_path,
                        env=project.env)
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert f"cancelled batch {batch_id}" in deleted.stderr
    assert _cancelled(mock_server) == [batch_id] and _run_ids(project) == []
    uploaded = mock_server.server.batch_api.batches[batch_id].body["input_file_id"]
    assert mock_server.stats.files_deleted == [uploaded]  # kept before the batch was made
