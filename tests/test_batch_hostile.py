"""What a batch run does with what a broken or hostile provider answers, over real HTTP.

The mock server serves OpenAI's Batch API and Anthropic's Message Batches and, configured,
lays odd fields over its batch objects (``batch_body``) and adds raw lines to a batch's
results (``batch_result_lines``). Whatever comes back, the run keeps every answer it got,
sends live what got none (an error when that fails, never a zero), and says what was wrong:
in the run's notes, or, when it cannot go on, in one message the library, the CLI and the
REST API give alike; never a traceback, a hang or a key.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

import assay
from assay.store.batches import run_batches
from assay.store.runs import RunStore
from assay.types.records import RunStatus

KEY = "sk-batch-hostile-secret-4242"
ROWS = [{"id": f"c{i}", "input": f"what colour is thing {i}",
         "expected_output": f"the thing {i} is blue", "output": f"thing {i} is blue"}
        for i in range(4)]
EVALUATORS: list[Any] = ["semantic_similarity"]
JUDGES = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-3-5-haiku-latest"}


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest, mock_server: Any,
             monkeypatch: pytest.MonkeyPatch) -> str:
    """Each provider's batch API at the mock server; the judge model that uses it."""
    if request.param == "openai":
        monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock_server.url.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return request.param


def _waiting(store: Path, provider: str) -> str:
    waiting = assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model=JUDGES[provider],
                             batch=True, store=store)
    assert waiting.waiting
    return waiting.run_id


def _resumed(store: Path, run_id: str) -> Any:
    return assay.resume(run_id, store=store, data=ROWS)


def _every_score_given(done: Any) -> None:
    scores = [s for r in done.records for s in r.scores]
    assert len(scores) == len(ROWS)
    assert all(s.error is None and s.value is not None for s in scores)


def _notes(done: Any) -> str:
    return " ".join(done.summary.notes)


def _answer_line(provider: str, custom_id: str, outcome: str) -> str:
    """A result line in the provider's shape: an answer saying ``outcome``, or an error."""
    if provider == "openai":
        if outcome == "error":
            return orjson.dumps({"custom_id": custom_id, "response": {
                "status_code": 500, "body": {"error": {"message": "boom"}}}}).decode()
        return orjson.dumps({"custom_id": custom_id, "response": {"status_code": 200, "body": {
            "id": "x", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [{
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": outcome}}]}}}).decode()
    if outcome == "error":
        return orjson.dumps({"custom_id": custom_id, "result": {"type": "errored", "error": {
            "type": "error", "error": {"type": "api_error", "message": "boom"}}}}).decode()
    return orjson.dumps({"custom_id": custom_id, "result": {"type": "succeeded", "message": {
        "id": "msg_x", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": outcome}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}}}}).decode()


@pytest.mark.parametrize(("line", "said"), [
    ("this is {not json", "is not JSON"),
    ("[1, 2, 3]", "is not a JSON object"),
    ('{"result": {"type": "succeeded"}, "response": null}', "names no custom_id"),
    ('{"custom_id": 7}', "names no custom_id"),
    ('{"custom_id": "$custom_id", "custom_id": "other"}',
     "duplicate key 'custom_id' at column"),
])
def test_a_results_line_that_cannot_be_read_loses_no_other_answer_and_is_named(
        provider, mock_server, tmp_path, line, said):
    """A line that is not JSON, not an object or names no request is left out, named in the
    run's notes (the batch and the line), and every other answer of the file is used."""
    mock_server.configure(batch_result_lines=[line])
    store = tmp_path / "runs.db"
    done = _resumed(store, _waiting(store, provider))
    assert done.run.status is RunStatus.COMPLETED
    _every_score_given(done)
    assert mock_server.stats.requests == 0  # every request was answered by the batch
    assert done.summary.usage.batch_calls == len(ROWS)
    [batch] = run_batches(RunStore(f"sqlite:///{store}"), done.run_id)
    assert f"batch {batch.batch_id}" in _notes(done) and "line 5" in _notes(done)
    assert said in _notes(done), done.summary.notes
    assert KEY not in _notes(done)


def test_an_answer_for_a_request_the_batch_was_never_sent_is_named_and_not_used(
        provider, mock_server, tmp_path):
    """An answer whose custom id the batch was never sent is left out and named (a custom id
    that is the key, as a provider echoing its headers gives, is named without it)."""
    mock_server.configure(batch_result_lines=[_answer_line(provider, "nobody-0", "hello"),
                                              _answer_line(provider, KEY, "hello")])
    store = tmp_path / "runs.db"
    done = _resumed(store, _waiting(store, provider))
    assert done.run.status is RunStatus.COMPLETED and mock_server.stats.requests == 0
    _every_score_given(done)
    assert "custom_id 'nobody-0'" in _notes(done) and "never sent" in _notes(done)
    assert _notes(done).count("never sent") == 2 and KEY not in _notes(done)


@pytest.mark.parametrize("again", ["error", "an answer that differs"])
def test_a_request_answered_twice_differently_trusts_neither_and_is_sent_live(
        provider, mock_server, tmp_path, again):
    """A custom id the results give twice, the two differing (an answer and an error, two
    answers): neither is used, the request is sent live, the notes say which and why."""
    mock_server.configure(batch_result_lines=[_answer_line(provider, "$custom_id", again)])
    store = tmp_path / "runs.db"
    done = _resumed(store, _waiting(store, provider))
    assert done.run.status is RunStatus.COMPLETED
    _every_score_given(done)
    assert mock_server.stats.requests == 1  # the request answered twice, live
    assert done.summary.usage.batch_calls == len(ROWS) - 1
    assert "answered 2 times, differently" in _notes(done), done.summary.notes
    assert "sent live" in _notes(done)


def test_an_answer_naming_a_key_twice_is_not_used_and_its_request_is_sent_live(
        provider, mock_server, tmp_path):
    """A results line whose answer names its content's key twice says two things: it is
    that request's error, located (line and column), the request is sent live, and every
    other answer of the file is used."""
    mock_server.configure(batch_repeated_keys=1)
    store = tmp_path / "runs.db"
    done = _resumed(store, _waiting(store, provider))
    assert done.run.status is RunStatus.COMPLETED
    _every_score_given(done)
    assert mock_server.stats.requests == 1  # that request, live
    assert done.summary.usage.batch_calls == len(ROWS) - 1
    key = "choices" if provider == "openai" else "content"
    assert "line 1 of " in _notes(done) and f"duplicate key '{key}' at column" \
        in _notes(done), done.summary.notes
    assert "sent live" in _notes(done) and KEY not in _notes(done)


def test_a_request_the_batch_failed_is_sent_live_and_the_run_says_why(
        provider, mock_server, tmp_path):
    mock_server.configure(batch_errored=1, batch_expired=1)
    store = tmp_path / "runs.db"
    done = _resumed(store, _waiting(store, provider))
    assert done.run.status is RunStatus.COMPLETED and mock_server.stats.requests == 2
    _every_score_given(done)
    notes = _notes(done)
    assert "2 judge request(s) got no usable answer from their batch and were sent live" \
        in notes, notes
    assert "mock: this request errored" in notes and "expired" in notes
    stored = RunStore(f"sqlite:///{tmp_path / 'runs.db'}").run_record(done.run_id)
    assert stored.summary is not None and stored.summary.notes == done.summary.notes


def test_a_whole_batch_that_failed_is_sent_live_and_the_run_says_why(mock_server, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    mock_server.configure(batch_end="failed")
    store = tmp_path / "runs.db"
    done = _resumed(store, _waiting(store, "openai"))
    assert done.run.status is RunStatus.COMPLETED and mock_server.stats.requests == len(ROWS)
    assert "ended (failed) without its answer" in _notes(done)
    assert "mock: the batch failed" in _notes(done)


@pytest.mark.parametrize("errors", [
    {"object": "list", "data": {"code": "odd", "message": "not a list"}},
    {"object": "list", "data": "a string"},
    "just text",
    [1, 2],
])
def test_a_batch_whose_errors_are_oddly_shaped_is_read(mock_server, tmp_path, monkeypatch,
                                                       errors):
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    mock_server.configure(batch_body={"errors": errors})
    store = tmp_path / "runs.db"
    done = _resumed(store, _waiting(store, "openai"))
    assert done.run.status is RunStatus.COMPLETED and mock_server.stats.requests == 0
    _every_score_given(done)


STATE_FIELD = {"openai": "status", "anthropic": "processing_status"}


@pytest.mark.parametrize(("state", "said"), [("paused", "'paused'"), (None, "'unknown'"),
                                             ({"nested": 1}, "nested")])
def test_a_batch_in_a_state_assay_does_not_know_stops_the_resume_saying_so(
        provider, mock_server, tmp_path, state, said):
    """A state that is none of the provider's would leave the run waiting for ever (with
    ``wait``, polling for ever; the check comes before the wait): the resume stops, naming the batch and the state, the run
    kept; once the provider reports a known state again, a resume completes it."""
    store = tmp_path / "runs.db"
    run_id = _waiting(store, provider)
    mock_server.configure(batch_body={STATE_FIELD[provider]: state})
    with pytest.raises(assay.EvaluationError) as stopped:
        assay.resume(run_id, store=store, data=ROWS)
    runs = RunStore(f"sqlite:///{store}")
    [batch] = run_batches(runs, run_id)
    assert runs.run_record(run_id).status is RunStatus.WAITING  # its batch is still there
    runs.close()
    message = stopped.value.message
    assert stopped.value.code == "batch_state_unknown"
    assert batch.batch_id in message and said in message and "none of its provider's" \
        in message, message
    assert KEY not in message
    mock_server.configure(batch_body={})
    done = _resumed(store, run_id)
    assert done.run.status is RunStatus.COMPLETED
    _every_score_given(done)


def _outside(mock_server: Any) -> list[str]:
    """The requests that reached a path that is no batch API's own."""
    return [p for p in mock_server.stats.paths
            if "/models/" in p or ".." in p or "%2F" in p.upper()
            or ("?" in p.split(" ")[1] and "limit=" not in p)]


@pytest.mark.parametrize("field", ["output_file_id", "error_file_id"])
@pytest.mark.parametrize("odd", ["../models/ft:gpt-4o:me", "file-1/../../models/x",
                                 "file-1?x=1", "file-\x1b[2J", ""])
def test_a_file_id_that_is_not_an_id_never_goes_into_a_url(mock_server, tmp_path,
                                                           monkeypatch, field, odd):
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = tmp_path / "runs.db"
    run_id = _waiting(store, "openai")
    mock_server.configure(batch_body={field: odd})
    if not odd:  # an empty id is no file: nothing to read from it
        done = _resumed(store, run_id)
        assert done.run.status is RunStatus.COMPLETED
        return
    with pytest.raises(assay.EvaluationError) as stopped:
        _resumed(store, run_id)
    message = stopped.value.message
    assert "is not an id" in message and field in message, message
    assert "\x1b" not in message and KEY not in message
    assert _outside(mock_server) == [], mock_server.stats.paths
    mock_server.configure(batch_body={})
    assert _resumed(store, run_id).run.status is RunStatus.COMPLETED


@pytest.mark.parametrize("odd", ["batch_1/../../files", "batch_1?x=1", "../models/x"])
def test_a_batch_id_that_is_not_an_id_is_refused_when_it_comes_back(provider, mock_server,
                                                                    tmp_path, odd):
    mock_server.configure(batch_body={"id": odd})
    store = tmp_path / "runs.db"
    with pytest.raises(assay.EvaluationError) as stopped:
        assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model=JUDGES[provider], batch=True,
                       store=store)
    message = stopped.value.message
    assert "is not an id" in message and KEY not in message, message
    assert mock_server.stats.batches == 1
    assert _outside(mock_server) == [], mock_server.stats.paths
    runs = RunStore(f"sqlite:///{store}")
    assert all(b.batch_id != odd for b in run_batches(runs, runs.run_records()[0].id))


def test_the_cli_and_the_rest_api_say_what_the_library_says(mock_server, tmp_path,
                                                            monkeypatch):
    """One message for a resume that cannot go on, from the library, the CLI and the REST
    API, no traceback and no key; once the provider answers again, the CLI completes the run
    and shows the notes the library stored."""
    pytest.importorskip("fastapi")
    from tests.test_batch_submissions import OPENAI, Project

    project = Project(tmp_path, mock_server, OPENAI)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.setenv(name, project.env[name])
    monkeypatch.chdir(tmp_path)
    run_id = assay.evaluate(project.suite, judge_model=OPENAI, batch=True,
                            store=project.db).run_id
    mock_server.configure(batch_errored=1, batch_body={"status": "paused"})
    with pytest.raises(assay.EvaluationError) as stopped:
        assay.resume(run_id, store=project.db)
    project.resume_fails_saying(run_id, stopped.value.message)

    mock_server.configure(batch_body={})  # a known state again; one request errored
    out = project.resume_until_done(run_id)
    assert "got no usable answer from their batch and were sent live" in \
        " ".join(out.split()), out


@pytest.mark.parametrize("lost", ["judge_batch_requests", "judge_batches"])
def test_a_resume_after_the_store_lost_a_batchs_rows_loses_nothing(
        mock_server, tmp_path, monkeypatch, lost):
    """The store lost a batch's requests (its answers then name requests the run does not
    know: said in the notes) or the batch itself: the judgements are asked again in a new
    batch, and the run completes with every score."""
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = tmp_path / "runs.db"
    run_id = _waiting(store, "openai")
    with sqlite3.connect(store) as db:
        db.execute(f"DELETE FROM {lost}")
    again = _resumed(store, run_id)
    assert again.waiting and mock_server.stats.batches == 2  # asked again
    again = _resumed(store, run_id)
    assert again.run.status is RunStatus.COMPLETED
    _every_score_given(again)
    assert mock_server.stats.requests == 0
    assert ("never sent" in _notes(again)) is (lost == "judge_batch_requests")


def test_a_listing_of_batches_that_never_ends_is_refused_not_followed_for_ever():
    """A listing (the look-up of a submission whose batch id was never kept) whose next page
    is one already read would be followed for ever: it is refused, saying so."""
    import asyncio

    from assay.llm.providers.batches import EndlessListing, pages

    asked: list[str] = []

    async def fetch(method: str, url: str) -> dict[str, Any]:
        asked.append(url)
        return {"data": [{"id": "batch_a"}], "has_more": True, "last_id": "batch_a"}

    async def walk() -> list[dict[str, Any]]:
        return [b async for b in pages(fetch, "http://127.0.0.1:9/v1/batches", "after", 100,
                                       0.0, lambda batch: None)]

    with pytest.raises(EndlessListing, match="without end"):
        asyncio.run(asyncio.wait_for(walk(), 10))
    assert len(asked) == 2


def test_a_results_file_larger_than_assay_reads_stops_the_resume_saying_so(
        provider, mock_server, tmp_path, monkeypatch):
    """A results file past the most assay reads (1 GiB; here made small) is not read into
    memory: the resume stops naming the batch and the limit, the run kept, nothing sent
    live (which could cost as much as the whole batch again)."""
    from assay.llm.providers import batches

    store = tmp_path / "runs.db"
    run_id = _waiting(store, provider)
    whole = batches.RESULTS_MAX_BYTES
    monkeypatch.setattr(batches, "RESULTS_MAX_BYTES", 64)
    with pytest.raises(assay.EvaluationError) as stopped:
        _resumed(store, run_id)
    runs = RunStore(f"sqlite:///{store}")
    [batch] = run_batches(runs, run_id)
    assert runs.run_record(run_id).status is RunStatus.WAITING  # its batch is still there
    runs.close()
    message = stopped.value.message
    assert f"reading the results of batch {batch.batch_id}" in message, message
    assert "64" in message and KEY not in message
    assert mock_server.stats.requests == 0
    monkeypatch.setattr(batches, "RESULTS_MAX_BYTES", whole)
    assert _resumed(store, run_id).run.status is RunStatus.COMPLETED


def test_a_batch_whose_results_are_gone_at_the_provider_is_sent_live_saying_so(
        provider, mock_server, tmp_path):
    """A finished batch whose results the provider no longer has (it keeps them for a
    limited time; the run was resumed late) would stop every resume for good: its requests
    are sent live, and the notes say why."""
    gone = {"openai": {"output_file_id": "file-gone"}, "anthropic": {
        "results_url": f"{mock_server.url}/messages/batches/msgbatch_gone/results"}}
    store = tmp_path / "runs.db"
    run_id = _waiting(store, provider)
    mock_server.configure(batch_body=gone[provider])
    done = _resumed(store, run_id)
    assert done.run.status is RunStatus.COMPLETED
    _every_score_given(done)
    assert mock_server.stats.requests == len(ROWS)
    assert "its results are gone at the provider" in _notes(done), done.summary.notes
    assert f"{len(ROWS)} judge request(s) got no usable answer" in _notes(done)


def test_a_results_file_is_read_a_line_at_a_time_never_whole(mock_server, monkeypatch):
    """A results file (up to a gigabyte at the provider) is read a line at a time: reading
    40 MB of results, whose answers are small, holds a few megabytes at most, and every
    answer and every bad line is still read; an over-long line is one bad line."""
    import asyncio
    import tracemalloc

    from assay.llm.batch import BatchStatus
    from assay.llm.build import build_engine
    from assay.llm.providers import batches
    from assay.types.config import RunConfig

    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    padding = "p" * 20_000  # read, then dropped: what a line holds besides the answer
    lines = [orjson.loads(_answer_line("openai", f"c{i}", f"answer {i}")) for i in range(2_000)]
    body = b"".join(orjson.dumps({**line, "padding": padding}) + b"\n" for line in lines)
    body += b"not json\n" + b"x" * 300_000 + b"\n" + orjson.dumps(lines[0])  # no last newline
    mock_server.server.batch_api.files["file-big"] = body
    monkeypatch.setattr(batches, "RESULT_LINE_MAX_BYTES", 100_000, raising=False)
    engine = build_engine(RunConfig(judge_model=JUDGES["openai"]))
    api = engine.resolve(JUDGES["openai"]).batch_api()
    assert api is not None
    status = BatchStatus("batch-big", "completed", True, {}, {"output_file_id": "file-big"})

    async def read() -> list[Any]:
        try:
            return await api.results(status, 60)
        finally:
            await engine.aclose()

    tracemalloc.start()
    try:
        answers = asyncio.run(read())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(body) > 40_000_000 and peak < 12_000_000, f"{peak:,} bytes at the peak"
    assert [a.response["choices"][0]["message"]["content"] for a in answers[:2000]] == [
        f"answer {i}" for i in range(2000)]
    assert [a.error for a in answers[2000:-1]] == [
        f"line 2001 of {mock_server.url}/files/file-big/content is not JSON",
        f"line 2002 of {mock_server.url}/files/file-big/content is longer than 100,000 "
        "bytes"]
    assert answers[-1].custom_id == "c0" and answers[-1].response is not None
