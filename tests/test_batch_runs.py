"""Judge calls through the providers' batch APIs (``assay run --batch``), over real HTTP.

The mock server speaks OpenAI's Files and Batch API and Anthropic's Message Batches; every test
runs the whole path: the agent runs, the judge requests are submitted, the run waits, a later
resume (another process in the CLI test) collects the answers and completes the run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import ConfigError
from assay.llm.batch import BatchLimits
from assay.llm.models import ModelSpec
from assay.llm.providers.batches import OpenAIBatches
from assay.llm.providers.openai_http import OpenAIHTTPProvider
from assay.store.batches import batch_requests, run_batches
from assay.store.runs import RunStore
from assay.types.records import RunStatus
from tests.assay_process import run_assay

KEY = "sk-batch-test-secret-4242"
ROWS = [{"id": f"c{i}", "input": f"what colour is thing {i}",
         "expected_output": f"the thing {i} is blue", "output": f"thing {i} is blue"}
        for i in range(4)]
EVALUATORS: list[Any] = ["semantic_similarity",
                         {"type": "contains", "name": "says_blue", "search_text": "blue"}]


@pytest.fixture
def openai(mock_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return mock_server


@pytest.fixture
def anthropic(mock_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mock_server.url.removesuffix("/v1"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return mock_server


def _batch(store: Path, judge: str = "openai:gpt-4o-mini", **options: Any) -> Any:
    return assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model=judge, batch=True,
                          store=store, **options)


def _values(result: Any) -> dict[tuple[str, str], float | None]:
    return {(r.case_id, s.name): s.value for r in result.records for s in r.scores}


def test_a_batch_run_waits_then_a_resume_completes_it_and_a_rerun_is_free(openai, tmp_path):
    store = tmp_path / "runs.db"
    waiting = _batch(store)
    assert waiting.waiting and waiting.run.status is RunStatus.WAITING
    assert openai.stats.requests == 0  # no judge call was made live
    assert (openai.stats.batches, openai.stats.batch_requests) == (1, len(ROWS))
    runs = RunStore(f"sqlite:///{store}")
    [batch] = run_batches(runs, waiting.run_id)
    assert batch.model == "openai:gpt-4o-mini" and batch.requests == len(ROWS)
    mapped = batch_requests(runs, waiting.run_id, batch.batch_id)
    assert sorted((r.case_id, r.repeat, r.evaluator) for r in mapped) == \
        [(f"c{i}", 0, "semantic_similarity") for i in range(len(ROWS))]
    assert len({r.custom_id for r in mapped}) == len(ROWS)
    assert all(len(r.cache_key) == 64 for r in mapped)
    assert runs.case_records(waiting.run_id) == []  # no case is decided while it waits
    assert runs.score_count(waiting.run_id) == len(ROWS)  # the deterministic scores are kept

    done = assay.resume(waiting.run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert openai.stats.requests == 0
    usage = done.summary.usage
    assert (usage.calls, usage.batch_calls, usage.cached_calls) == (len(ROWS), len(ROWS), 0)
    assert all(s.error is None for r in done.records for s in r.scores)
    assert run_batches(runs, done.run_id, open_only=True) == []

    again = assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model="openai:gpt-4o-mini",
                           store=store)
    assert openai.stats.requests == 0  # every answer came from the cache
    assert again.summary.usage.cached_calls == len(ROWS)
    assert _values(again) == _values(done)

    live = assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model="openai:gpt-4o-mini",
                          store=store, cache="off")
    assert openai.stats.requests == len(ROWS)
    assert _values(live) == _values(done)  # a batch answer judges as a live one does
    compared = assay.compare(live.run_id, done.run_id, store=store)  # how the calls were sent changes no result
    assert compared.differences == [] and not compared.exit_code()
    assert compared.config_diff.run_config_changes == []


def test_a_resume_before_the_batch_ends_says_so_and_loses_nothing(openai, tmp_path):
    openai.configure(batch_polls=2)
    store = tmp_path / "runs.db"
    calls: list[str] = []

    def agent(question: str) -> str:
        calls.append(question)
        return question.replace("what colour is", "").strip() + " is blue"

    rows = [{k: v for k, v in row.items() if k != "output"} for row in ROWS]
    first = assay.evaluate(rows, target=agent, evaluators=EVALUATORS, batch=True,
                           judge_model="openai:gpt-4o-mini", store=store)
    assert first.waiting and len(calls) == len(ROWS)
    for _ in range(2):
        still = assay.resume(first.run_id, store=store, data=rows, target=agent)
        assert still.waiting and still.batch is not None
        assert [b.state for b in still.batch.batches] == ["in_progress"]
        assert "in_progress" in still.batch.lines()[0]
    done = assay.resume(first.run_id, store=store, data=rows, target=agent)
    assert done.run.status is RunStatus.COMPLETED
    assert len(calls) == len(ROWS)  # the agent ran once per case, before the batch
    assert openai.stats.requests == 0 and openai.stats.batches == 1


def test_wait_polls_until_the_batch_ends_and_completes_the_run(openai, tmp_path):
    openai.configure(batch_polls=3)
    done = _batch(tmp_path / "runs.db", batch_wait=True, batch_poll_s=0.01)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert done.summary.usage.batch_calls == len(ROWS) and openai.stats.requests == 0


def test_a_request_that_errored_in_the_batch_is_sent_again_live(openai, tmp_path):
    openai.configure(batch_errored=1, batch_expired=1)
    store = tmp_path / "runs.db"
    done = assay.resume(_batch(store).run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert openai.stats.requests == 2  # the errored one and the expired one, live
    usage = done.summary.usage
    assert (usage.calls, usage.batch_calls) == (len(ROWS), len(ROWS) - 2)
    assert all(s.error is None for r in done.records for s in r.scores)
    [batch] = run_batches(RunStore(f"sqlite:///{store}"), done.run_id)
    made = openai.server.batch_api.batches[batch.batch_id].body
    files = [made["input_file_id"], made["output_file_id"], made["error_file_id"]]
    assert batch.input_file == files[0] and all(files)
    assert sorted(openai.stats.files_deleted) == sorted(files)  # the run needs them no more
    assert not set(files) & set(openai.server.batch_api.files)


def test_a_run_stopped_once_its_batch_files_were_deleted_completes_on_resume(openai,
                                                                             tmp_path):
    """The process died after the files were deleted, before the run was stored complete:
    its cases are stored, so the resume completes it, the files' absence no failure."""
    store = tmp_path / "runs.db"
    done = assay.resume(_batch(store).run_id, store=store, data=ROWS)
    assert len(openai.stats.files_deleted) == 2
    RunStore(f"sqlite:///{store}").set_status(done.run_id, RunStatus.INTERRUPTED.value)
    again = assay.resume(done.run_id, store=store, data=ROWS)
    assert again.run.status is RunStatus.COMPLETED and again.passed
    assert _values(again) == _values(done)
    assert openai.stats.requests == 0 and openai.stats.batches == 1


def test_a_file_that_cannot_be_deleted_is_a_note_never_a_lost_result(openai, tmp_path):
    openai.configure(file_delete_status=403)
    store = tmp_path / "runs.db"
    done = assay.resume(_batch(store).run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert done.summary.usage.batch_calls == len(ROWS)
    assert all(s.error is None for r in done.records for s in r.scores)
    [batch] = run_batches(RunStore(f"sqlite:///{store}"), done.run_id)
    made = openai.server.batch_api.batches[batch.batch_id].body
    [note] = [n for n in done.summary.notes if "could not be deleted" in n]
    assert made["input_file_id"] in note and made["output_file_id"] in note
    assert "HTTP 403" in note and KEY not in note
    assert note in RunStore(f"sqlite:///{store}").run_record(done.run_id).summary.notes
    assert openai.stats.files_deleted == []


@pytest.mark.parametrize("end", ["expired", "failed", "cancelled"])
def test_a_whole_batch_that_ended_without_answers_is_sent_again_live(openai, tmp_path, end):
    openai.configure(batch_end=end)
    store = tmp_path / "runs.db"
    done = assay.resume(_batch(store).run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert openai.stats.requests == len(ROWS)
    assert done.summary.usage.batch_calls == 0
    assert [b.state for b in run_batches(RunStore(f"sqlite:///{store}"), done.run_id)] == [end]


def test_a_resend_that_fails_is_an_error_never_a_zero(openai, tmp_path):
    openai.configure(batch_errored=1)
    store = tmp_path / "runs.db"
    waiting = _batch(store)
    openai.configure(batch_errored=1, faults={"401": 1.0})
    done = assay.resume(waiting.run_id, store=store, data=ROWS)
    errors = [(r.case_id, s) for r in done.records for s in r.scores if s.error is not None]
    assert len(errors) == 1 and errors[0][1].value is None
    assert errors[0][1].error.code in ("request_rejected", "retries_exhausted")
    assert done.summary.evaluator_errors == 1
    assert not done.passed  # the error gate: an error, counted as one


def test_anthropic_message_batches_complete_a_run(anthropic, tmp_path):
    anthropic.configure(batch_errored=1)
    store = tmp_path / "runs.db"
    waiting = _batch(store, judge="anthropic:claude-3-5-haiku-latest")
    assert waiting.waiting and anthropic.stats.requests == 0
    [batch] = waiting.batch.batches
    assert batch.batch_id.startswith("msgbatch_")
    done = assay.resume(waiting.run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert anthropic.stats.requests == 1  # the errored request, through /v1/messages
    assert done.summary.usage.batch_calls == len(ROWS) - 1
    again = assay.evaluate(ROWS, evaluators=EVALUATORS,
                           judge_model="anthropic:claude-3-5-haiku-latest", store=store)
    assert anthropic.stats.requests == 1 and again.summary.usage.cached_calls == len(ROWS)


@pytest.mark.parametrize("end", ["expired", "cancelled"])
def test_an_anthropic_batch_that_ended_without_answers_is_sent_again_live(anthropic,
                                                                          tmp_path, end):
    anthropic.configure(batch_end=end)
    store = tmp_path / "runs.db"
    done = assay.resume(_batch(store, judge="anthropic:claude-3-5-haiku-latest").run_id,
                        store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert anthropic.stats.requests == len(ROWS)


def test_a_batched_call_costs_half_a_live_one(openai, tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": [1.0, 4.0]}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    store = tmp_path / "runs.db"
    done = assay.resume(_batch(store).run_id, store=store, data=ROWS)
    live = assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model="openai:gpt-4o-mini",
                          store=store, cache="off")
    batch_usage, live_usage = done.summary.usage, live.summary.usage
    assert batch_usage.prompt_tokens == live_usage.prompt_tokens > 0
    assert batch_usage.cost == pytest.approx(live_usage.cost / 2)
    score_costs = [s.usage.cost for r in done.records for s in r.scores if s.usage.calls]
    assert len(score_costs) == len(ROWS) and all(c > 0 for c in score_costs)


def test_a_cached_answer_never_goes_into_a_batch(openai, tmp_path):
    store = tmp_path / "runs.db"
    assay.evaluate(ROWS[:2], evaluators=EVALUATORS, judge_model="openai:gpt-4o-mini",
                   store=store)
    assert openai.stats.requests == 2
    waiting = _batch(store)
    assert waiting.waiting and openai.stats.batch_requests == len(ROWS) - 2
    openai.stats.batches = openai.stats.batch_requests = 0
    cached = assay.evaluate(ROWS[:2], evaluators=EVALUATORS, judge_model="openai:gpt-4o-mini",
                            batch=True, store=store)
    assert cached.run.status is RunStatus.COMPLETED and openai.stats.batches == 0


def test_requests_are_split_by_the_providers_limits(openai, tmp_path, monkeypatch):
    monkeypatch.setattr(OpenAIBatches, "limits", BatchLimits(requests=3, bytes=10**9))
    store = tmp_path / "runs.db"
    waiting = _batch(store)
    assert [b.requests for b in waiting.batch.batches] == [3, 1]
    monkeypatch.setattr(OpenAIBatches, "limits", BatchLimits(requests=100, bytes=3000))
    assert len(_batch(tmp_path / "other.db", cache="off").batch.batches) == len(ROWS)
    done = assay.resume(waiting.run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.summary.usage.batch_calls == 4


@pytest.mark.slow
async def test_the_mock_takes_a_batch_file_past_64_mb_as_openai_does(openai):
    """A batch of 5,000 answers of 20 KB is a file of about 100 MB: OpenAI takes up to
    200 MB (assay splits there), so the mock server must not refuse it (it answered 413
    past 64 MB, and no batch run of that size could be measured against it)."""
    provider = OpenAIHTTPProvider(ModelSpec("openai", "gpt-4o-mini"), openai.url, KEY, None)
    entry = {"custom_id": "big", "method": "POST", "url": "/v1/chat/completions",
             "body": {"model": "gpt-4o-mini",
                      "messages": [{"role": "user", "content": "x" * (70 << 20)}]}}
    file_id = await OpenAIBatches(provider).upload([entry], "big", timeout=120)
    assert file_id and openai.stats.files_uploaded == 1


@pytest.mark.parametrize("judge", ["mock", "vllm:some-model", "fake:judge"])
def test_a_judge_without_a_batch_api_is_refused_before_any_call(openai, tmp_path, mock_model,
                                                               judge):
    model = mock_model if judge == "mock" else judge
    store = tmp_path / "runs.db"
    with pytest.raises(ConfigError) as refused:
        _batch(store, judge=model)
    assert refused.value.code == "batch_unsupported"
    assert "has no batch API" in refused.value.message or "have no batch API" in \
        refused.value.message
    assert (judge if judge != "mock" else "http://127.0.0.1") in refused.value.message
    assert openai.stats.arrived == 0 and RunStore(f"sqlite:///{store}").run_records() == []


def test_no_key_reaches_the_store_and_batch_requests_carry_it(openai, tmp_path):
    store = tmp_path / "runs.db"
    assay.resume(_batch(store).run_id, store=store, data=ROWS)
    assert openai.stats.credentials[f"Authorization: Bearer {KEY}"] >= 3
    RunStore(f"sqlite:///{store}").close()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def _quickstart(where: Path) -> Path:
    """The README's quickstart suite (an agent of its own, five cases) copied to ``where``."""
    example = Path(__file__).resolve().parent.parent / "examples" / "quickstart"
    (where / ".assay").mkdir()
    for name in ("EVAL.yaml", "agent.py", ".assay/targets.yaml"):
        (where / name).write_text((example / name).read_text())
    return where / "EVAL.yaml"


def _submitted(openai: Any, tmp_path: Path) -> tuple[dict[str, str], list[str], str]:
    """The quickstart submitted with ``assay run --batch``: the environment and options the
    later commands share, and the waiting run's id."""
    suite = _quickstart(tmp_path)
    env = {**__import__("os").environ, "OPENAI_BASE_URL": openai.url, "OPENAI_API_KEY": KEY,
           "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    common = ["--judge-model", "openai:gpt-4o-mini", "--store", str(tmp_path / "runs.db")]
    first = run_assay(["run", str(suite), "--batch", *common], cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "waiting for batch" in first.stdout and "assay run --resume" in first.stdout
    return env, common, first.stdout.split("assay run --resume ")[1].split()[0]


def test_the_cli_submits_exits_zero_and_a_later_process_collects(openai, tmp_path):
    openai.configure(batch_polls=1)
    env, common, run_id = _submitted(openai, tmp_path)
    listed = run_assay(["runs", "--store", str(tmp_path / "runs.db")], cwd=tmp_path, env=env)
    assert "waiting for batch" in listed.stdout
    waiting = run_assay(["run", "--resume", run_id, *common], cwd=tmp_path, env=env)
    assert waiting.returncode == 75, waiting.stdout + waiting.stderr
    assert "in_progress" in waiting.stdout and "waiting for batch" in waiting.stdout
    shown = run_assay(["show", run_id, "--store", str(tmp_path / "runs.db")], cwd=tmp_path,
                      env=env)
    assert "waiting for batch" in shown.stdout and "in_progress" in shown.stdout
    done = run_assay(["run", "--resume", run_id, *common], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "through batch APIs at the batch rate" in done.stdout
    assert "all gates passed" in done.stdout
    assert openai.stats.requests == 0


@pytest.mark.timeout(60)
def test_a_resume_waits_checking_as_often_as_its_poll_interval_says(openai, tmp_path):
    """How often to check the batches is the invocation's: `--resume RUN --wait
    --poll-interval S` was refused as a new run's option, and beside it the run's recorded
    60 s was used (the Python `poll_s` the same)."""
    openai.configure(batch_polls=3)
    env, common, run_id = _submitted(openai, tmp_path)
    done = run_assay(["run", "--resume", run_id, "--wait", "--poll-interval", "0.05",
                      *common], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all gates passed" in done.stdout and openai.stats.requests == 0
    openai.configure(batch_polls=3)
    store = tmp_path / "rows.db"
    waiting = _batch(store)
    assert waiting.waiting
    finished = assay.resume(waiting.run_id, store=store, data=ROWS, wait=True, poll_s=0.01)
    assert finished.run.status is RunStatus.COMPLETED and finished.passed


def test_the_api_shows_a_waiting_run(openai, tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    waiting = _batch(tmp_path / "runs.db")
    with serve(f"sqlite:///{tmp_path}/runs.db") as served, served.client() as api:
        found = api.get(f"/runs/{waiting.run_id}")
        assert found.status_code == 200, found.text
        assert found.json()["status"] == "waiting"
        listed = api.get("/runs", params={"status": "waiting"})
        assert [r["id"] for r in listed.json()["items"]] == [waiting.run_id]


def _previous_revision(url: str) -> None:
    """The store at ``url`` as the previous assay left it: no batch tables, at 0009."""
    from sqlalchemy import create_engine, text

    from tests.test_store_migrations import back_to

    engine = create_engine(url)
    with engine.begin() as conn:
        for table in ("judge_batches", "judge_batch_requests"):
            conn.execute(text(f"DROP TABLE {table}"))
        back_to(conn, "0009_run_identity_labels")
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/runs.db"
        return
    from tests.postgres_support import fresh_database, postgres_url

    with fresh_database(postgres_url()) as url:
        yield url


def test_an_existing_store_is_upgraded_and_runs_a_batch(openai, store_url):
    from assay.testing.runs import write_run

    store = RunStore(store_url)
    old = write_run(store, 3)
    store.close()
    _previous_revision(store_url)
    waiting = _batch(store_url)  # type: ignore[arg-type]
    assert waiting.waiting
    store = RunStore(store_url)
    assert len(store.case_records(old)) == 3
    assert run_batches(store, waiting.run_id)[0].requests == len(ROWS)
    done = assay.resume(waiting.run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert run_batches(store, done.run_id)[0].collected
    from assay.store.queries import delete_run

    assert delete_run(store, done.run_id)
    assert run_batches(store, done.run_id) == []
    store.close()


def _at(url: str, revision: str) -> None:
    """The store at ``url`` as assay left it at ``revision``: batches without a token
    (0010) or without an input file (0010, 0011)."""
    from sqlalchemy import create_engine, text

    from tests.test_store_migrations import back_to

    dropped = {"0010_judge_batches": ("input_file", "token"),
               "0011_judge_batch_tokens": ("input_file",)}[revision]
    engine = create_engine(url)
    with engine.begin() as conn:
        for column in dropped:
            conn.execute(text(f"ALTER TABLE judge_batches DROP COLUMN {column}"))
        back_to(conn, revision)
    engine.dispose()


@pytest.mark.parametrize("revision", ["0010_judge_batches", "0011_judge_batch_tokens"])
def test_a_run_waiting_in_an_older_store_is_collected_after_the_upgrade(openai, store_url,
                                                                        revision):
    """A batch kept before submissions had tokens (0010) or input files (0011) is a known
    batch: the upgrade adds the columns, and the resume collects the batch as before and
    deletes the files the provider names (its output), its input file not being known."""
    waiting = _batch(store_url)  # type: ignore[arg-type]
    assert waiting.waiting
    _at(store_url, revision)
    done = assay.resume(waiting.run_id, store=store_url, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and done.passed
    assert openai.stats.batches == 1 and openai.stats.requests == 0
    store = RunStore(store_url)
    [batch] = run_batches(store, done.run_id)
    store.close()
    assert batch.known and batch.collected and batch.input_file is None
    assert (batch.token is None) == (revision == "0010_judge_batches")
    made = openai.server.batch_api.batches[batch.batch_id].body
    assert openai.stats.files_deleted == [made["output_file_id"]]


def test_the_sqlite_file_holds_no_request_body(openai, tmp_path):
    store = tmp_path / "runs.db"
    waiting = _batch(store)
    with sqlite3.connect(store) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(judge_batch_requests)")}
        assert columns == {"run_id", "batch_id", "custom_id", "case_id", "repeat",
                           "evaluator", "cache_key"}
        count = conn.execute("SELECT count(*) FROM judge_batch_requests WHERE run_id = ?",
                             (waiting.run_id,)).fetchone()[0]
    assert count == len(ROWS)


def test_a_reask_of_an_invalid_batch_answer_goes_in_the_next_batch(openai, tmp_path):
    """A judge's second ask (here, the re-ask of an answer that does not validate) is
    collected in a second batch round: the resume that judges round one leaves the run
    waiting again, and the next completes it, every call at the batch rate."""
    good = json.dumps({"score": 90, "justification": "same meaning"})
    rows = [{**ROWS[0], "output": f"blue <<mock-seq:{json.dumps(['not json', good])}>>"},
            *ROWS[1:]]
    store = tmp_path / "runs.db"
    waiting = assay.evaluate(rows, evaluators=EVALUATORS, judge_model="openai:gpt-4o-mini",
                             batch=True, store=store)
    again = assay.resume(waiting.run_id, store=store, data=rows)
    assert again.waiting and again.batch is not None and again.batch.submitted == 1
    assert openai.stats.files_deleted == []  # the next round reads round one's answers again
    done = assay.resume(waiting.run_id, store=store, data=rows)
    assert done.run.status is RunStatus.COMPLETED
    first = next(r for r in done.records if r.case_id == "c0")
    [similarity] = [s for s in first.scores if s.name == "semantic_similarity"]
    assert similarity.raw == 90 and similarity.usage.batch_calls == 2  # both asks
    assert openai.stats.requests == 0 and openai.stats.batches == 2
    assert done.summary.usage.batch_calls == len(ROWS) + 1
    assert len(openai.stats.files_deleted) == 4  # each round's input and output, at the end


@pytest.mark.drill
def test_a_run_killed_while_it_waits_for_its_batch_is_resumed_later(openai, tmp_path):
    """``assay run --batch --wait`` killed outright (SIGKILL) while its batch is in progress:
    the batch and its requests are in the store, the run reads as interrupted once its lease
    runs out, and a later resume collects the batch and completes the run."""
    import os
    import subprocess
    import sys
    import time

    openai.configure(batch_polls=1_000_000)
    suite = _quickstart(tmp_path)
    env = {**os.environ, "OPENAI_BASE_URL": openai.url, "OPENAI_API_KEY": KEY,
           "ASSAY_CACHE_DIR": str(tmp_path / "cache"), "ASSAY_RUN_LEASE_S": "1"}
    common = ["--judge-model", "openai:gpt-4o-mini", "--store", str(tmp_path / "runs.db")]
    process = subprocess.Popen([sys.executable, "-m", "assay", "run", str(suite), "--batch",
                                "--wait", "--poll-interval", "0.05", *common], cwd=tmp_path,
                               env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "err.txt").open("w"))
    deadline = time.monotonic() + 60
    while openai.stats.batches == 0 or openai.stats.arrived < 3:
        assert time.monotonic() < deadline and process.poll() is None, \
            (tmp_path / "err.txt").read_text()
        time.sleep(0.05)
    process.kill()
    process.wait(10)
    time.sleep(1.5)  # its lease runs out: the run reads as interrupted
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    [run] = store.run_records()
    assert run.status is RunStatus.INTERRUPTED and run.abandoned
    assert run_batches(store, run.id)[0].requests == 5  # the quickstart's cases
    store.close()
    openai.configure(batch_polls=0)
    done = run_assay(["run", "--resume", run.id, *common], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all gates passed" in done.stdout and openai.stats.requests == 0


def test_a_dry_run_of_a_batch_run_estimates_at_the_batch_price(openai, tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": [1.0, 4.0]}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    estimates = [assay.evaluate(ROWS, evaluators=EVALUATORS, judge_model="openai:gpt-4o-mini",
                                store=tmp_path / "runs.db", cache="off", dry_run=True,
                                batch=batch).estimate for batch in (False, True)]
    live, batched = estimates
    assert live is not None and batched is not None
    assert live.calls == batched.calls == len(ROWS) and live.cost > 0
    assert batched.cost == pytest.approx(live.cost / 2)
    assert openai.stats.requests == 0 and openai.stats.batch_requests == 0



@pytest.mark.timeout(60)
def test_a_budget_is_refused_for_a_batch_run_before_anything_is_spent(openai, tmp_path,
                                                                       monkeypatch):
    """A batch is billed for every request it is given, so a budget cannot bound one: it is
    refused at once, for a new batch run and for the resume of a waiting one. (It used to
    hang: the budget waited for the first case's cost, which a case waiting for its batch
    never reports.)"""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": [300.0, 300.0]}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    store = tmp_path / "runs.db"
    with pytest.raises(ConfigError, match="--budget-usd cannot bound a batch run"):
        _batch(store, concurrency=1, budget_usd=0.01)
    assert openai.stats.batches == 0 and openai.stats.files_uploaded == 0
    waiting = _batch(store)
    with pytest.raises(ConfigError, match="--budget-usd cannot bound a batch run"):
        assay.resume(waiting.run_id, store=store, data=ROWS, budget_usd=0.01)
    done = assay.resume(waiting.run_id, store=store, data=ROWS)
    assert done.run.status is RunStatus.COMPLETED and len(done.records) == len(ROWS)
