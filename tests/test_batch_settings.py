"""Batch asked for by a suite file (``execution: {batch: true}``) and by the REST API, over the
mock server's batch endpoints and real SQLite files.

The suite's setting and the run's (the CLI's ``--batch/--no-batch``, Python's ``batch=``, a
REST request's ``batch``) merge by the one precedence of run settings
(:func:`assay.types.config.run_else_suite`): the run's when it gives one, else the suite's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import ConfigError
from assay.store.batches import run_batches
from assay.store.runs import RunStore
from assay.suites.evalyaml import SuiteError
from assay.types import numbers
from assay.types.config import RunConfig
from assay.types.records import RunStatus
from tests.assay_process import run_assay
from tests.test_batch_runs import KEY, openai  # noqa: F401  (the fixture)

CASES = 3


def batch_suite(root: Path, batch: str | None = "true", judge: str = "openai:gpt-4o-mini",
                folder: str = "suite", v4: bool = False) -> Path:
    """A suite of a Python agent judged by ``judge`` (its targets file's judge), its
    ``execution`` carrying ``batch: <batch>`` unless None; its EVAL.yaml."""
    suite = root / folder
    (suite / ".assay").mkdir(parents=True)
    (suite / "agent.py").write_text("def answer(question: str) -> str:\n"
                                    "    return question + ' is blue'\n")
    (suite / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: 'agent:answer', "
        "judge_target: judge}\n" f"  - {{name: judge, provider: '{judge}'}}\n")
    setting = "" if batch is None else f"  batch: {batch}\n"
    if v4:
        body = ("execution:\n  target: agent\n" + setting + "assertions:\n"
                "  - {type: contains, value: blue}\n  - {type: llm-grader, name: quality}\n"
                "tests:\n" + "".join(f"  - {{id: c{i}, input: thing {i}, criteria: blue}}\n"
                                     for i in range(CASES)))
    else:
        body = ("description: colours\nexecution:\n  target: agent\n" + setting +
                "  evaluators:\n    - {name: says_blue, type: contains, search_text: blue}\n"
                "    - {name: same_meaning, type: semantic_similarity}\n"
                "evalcases:\n" + "".join(
                    f"  - {{id: c{i}, input: thing {i}, expected_output: thing {i} is blue}}\n"
                    for i in range(CASES)))
    (suite / "EVAL.yaml").write_text(body)
    return suite / "EVAL.yaml"


def _env(openai: Any, tmp_path: Path) -> dict[str, str]:  # noqa: F811
    return {**os.environ, "OPENAI_BASE_URL": openai.url, "OPENAI_API_KEY": KEY,
            "ASSAY_CACHE_DIR": str(tmp_path / "cache")}


# -- the rule ------------------------------------------------------------------------------

@pytest.mark.parametrize(("run", "suite", "expected"), [
    (None, None, False), (None, True, True), (None, False, False),
    (True, None, True), (False, True, False), (True, False, True)])
def test_the_runs_batch_wins_else_the_suites(run, suite, expected):
    settled = RunConfig(batch=run).settled("default", None, batch=suite)
    assert settled.batch is expected


# -- the suite file ------------------------------------------------------------------------

@pytest.mark.parametrize("v4", [False, True], ids=["agentv2", "agentv4"])
def test_a_suite_that_asks_for_batch_waits_and_a_resume_completes_it(openai, tmp_path,  # noqa: F811
                                                                       v4):
    suite = batch_suite(tmp_path, v4=v4)
    store = tmp_path / "runs.db"
    waiting = assay.evaluate(suite, store=store)
    assert waiting.waiting and waiting.run.status is RunStatus.WAITING
    assert waiting.run.config.run.batch is True  # the snapshot says how it was sent
    assert openai.stats.requests == 0 and openai.stats.batch_requests == CASES
    assert run_batches(RunStore(f"sqlite:///{store}"), waiting.run_id)[0].requests == CASES
    done = assay.resume(waiting.run_id, store=store)
    assert done.run.status is RunStatus.COMPLETED
    assert done.summary.usage.batch_calls == CASES and openai.stats.requests == 0


def test_a_suites_null_batch_is_not_set(openai, tmp_path):  # noqa: F811
    done = assay.evaluate(batch_suite(tmp_path, batch="null"), store=tmp_path / "runs.db")
    assert done.run.status is RunStatus.COMPLETED and openai.stats.batches == 0


def test_the_run_says_no_to_a_suites_batch_and_yes_to_a_suites_no(openai, tmp_path):  # noqa: F811
    store = tmp_path / "runs.db"
    live = assay.evaluate(batch_suite(tmp_path), store=store, batch=False, cache="off")
    assert live.run.status is RunStatus.COMPLETED and openai.stats.batches == 0
    assert openai.stats.requests == CASES
    said_no = batch_suite(tmp_path, batch="false", folder="no")
    waiting = assay.evaluate(said_no, store=store, batch=True, cache="off")
    assert waiting.waiting and openai.stats.batches == 1


def test_a_resume_of_a_live_run_stays_live_when_the_suite_later_asks_for_batch(
        openai, tmp_path):  # noqa: F811
    """What a run snapshots decides its resumes: the suite's batch is read when it starts."""
    suite = batch_suite(tmp_path, batch=None)
    store = tmp_path / "runs.db"
    done = assay.evaluate(suite, store=store, cache="off")
    assert done.run.config.run.batch is False
    RunStore(f"sqlite:///{store}").set_status(done.run_id, RunStatus.INTERRUPTED.value)
    suite.write_text(suite.read_text().replace("  target: agent\n",
                                               "  target: agent\n  batch: true\n"))
    again = assay.resume(done.run_id, store=store, retry_errors=True)
    assert again.run.status is RunStatus.COMPLETED and openai.stats.batches == 0


BAD = ['"yes please"', "1", "[true]", '"true"']


@pytest.mark.parametrize("value", BAD)
def test_a_batch_that_is_not_true_or_false_is_located(tmp_path, value):
    suite = batch_suite(tmp_path, batch=value)
    with pytest.raises(SuiteError) as refused:
        assay.evaluate(suite, store=tmp_path / "runs.db")
    message = refused.value.message
    assert f"{suite}:4:" in message, message  # the file and the line of the value
    assert "batch must be true or false" in message and "expected: true" in message
    assert not (tmp_path / "runs.db").exists() or \
        RunStore(f"sqlite:///{tmp_path}/runs.db").run_records() == []


def test_assay_validate_refuses_a_bad_batch_and_accepts_a_good_one(openai, tmp_path):  # noqa: F811
    bad = batch_suite(tmp_path, batch='"yes please"', folder="bad")
    refused = run_assay(["validate", str(bad)], cwd=tmp_path, env=_env(openai, tmp_path))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    shown = refused.stdout + refused.stderr
    assert f"{bad}:4:" in shown and "batch must be true or false, not text ('yes please')" \
        in shown and "Traceback" not in shown, shown
    good = batch_suite(tmp_path, folder="good")
    accepted = run_assay(["validate", str(good)], cwd=tmp_path, env=_env(openai, tmp_path))
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    unbatchable = batch_suite(tmp_path, folder="local", judge="vllm:some-model")
    refused = run_assay(["validate", str(unbatchable)], cwd=tmp_path, env=_env(openai, tmp_path))
    assert refused.returncode == 2 and "have no batch API" in refused.stdout + refused.stderr
    assert openai.stats.requests == 0 and openai.stats.batches == 0


def test_a_suites_batch_with_a_judge_without_a_batch_api_is_refused_before_any_call(
        openai, tmp_path):  # noqa: F811
    suite = batch_suite(tmp_path, judge="vllm:some-model")
    with pytest.raises(ConfigError) as refused:
        assay.evaluate(suite, store=tmp_path / "runs.db")
    assert refused.value.code == "batch_unsupported"
    assert "execution.batch" in refused.value.message and "vllm:some-model" in \
        refused.value.message
    assert openai.stats.arrived == 0
    assert RunStore(f"sqlite:///{tmp_path}/runs.db").run_records() == []


@pytest.mark.parametrize("key", ["batch: true", "agent_timeout_s: 5"])
def test_a_cases_own_execution_cannot_set_a_run_setting(tmp_path, key):
    """``batch`` and ``agent_timeout_s`` are the suite's (the run's): in a case's execution
    they were accepted and did nothing."""
    suite = batch_suite(tmp_path, batch=None)
    suite.write_text(suite.read_text().replace(
        "  - {id: c0, input: thing 0, expected_output: thing 0 is blue}\n",
        f"  - id: c0\n    input: thing 0\n    execution: {{{key}}}\n"))
    with pytest.raises(SuiteError) as refused:
        assay.evaluate(suite, store=tmp_path / "runs.db")
    assert f"unknown key in execution {key.split(':')[0]!r}" in refused.value.message
    assert "one of target, evaluators" in refused.value.message


# -- the CLI -------------------------------------------------------------------------------

def test_the_cli_runs_a_suites_batch_and_no_batch_overrides_it(openai, tmp_path):  # noqa: F811
    suite = batch_suite(tmp_path)
    env = _env(openai, tmp_path)
    common = ["--store", str(tmp_path / "runs.db")]
    first = run_assay(["run", str(suite), *common], cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "waiting for batch" in first.stdout and openai.stats.batches == 1
    live = run_assay(["run", str(suite), "--no-batch", "--cache", "off", *common],
                     cwd=tmp_path, env=env)
    assert live.returncode == 0, live.stdout + live.stderr
    assert "waiting for batch" not in live.stdout and openai.stats.requests == CASES
    waited = run_assay(["run", str(suite), "--wait", "--poll-interval", "0.05", "--cache",
                        "off", *common], cwd=tmp_path, env=env)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert "all gates passed" in waited.stdout and openai.stats.batches == 2
    assert openai.stats.requests == CASES


def test_wait_without_a_batch_run_is_refused(openai, tmp_path):  # noqa: F811
    suite = batch_suite(tmp_path, batch=None)
    env = _env(openai, tmp_path)
    for args in (["--wait"], ["--wait", "--no-batch"]):
        refused = run_assay(["run", str(suite), *args, "--store", str(tmp_path / "runs.db")],
                            cwd=tmp_path, env=env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "--wait" in refused.stderr and "Traceback" not in refused.stderr
    assert openai.stats.arrived == 0


def test_a_dry_run_of_a_suite_that_asks_for_batch_estimates_at_the_batch_price(
        openai, tmp_path, monkeypatch):  # noqa: F811
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": [1.0, 4.0]}))
    monkeypatch.setenv("ASSAY_PRICES", str(prices))
    suite = batch_suite(tmp_path)
    store = tmp_path / "runs.db"
    batched = assay.evaluate(suite, store=store, cache="off", dry_run=True).estimate
    live = assay.evaluate(suite, store=store, cache="off", dry_run=True, batch=False).estimate
    assert live is not None and batched is not None and live.cost > 0
    assert live.calls == batched.calls == CASES
    assert batched.cost == pytest.approx(live.cost / 2)
    env = {**_env(openai, tmp_path), "ASSAY_PRICES": str(prices)}
    shown = run_assay(["run", str(suite), "--dry-run", "--cache", "off", "--store",
                       str(store)], cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    unbatched = run_assay(["run", str(suite), "--dry-run", "--no-batch", "--cache", "off",
                           "--store", str(store)], cwd=tmp_path, env=env)
    for printed, estimate in ((shown, batched), (unbatched, live)):
        assert f"cost {numbers.cost(estimate.cost)};" in printed.stdout, printed.stdout
    assert openai.stats.arrived == 0



def test_assert_case_judges_a_case_of_a_batch_suite_live(openai, tmp_path):  # noqa: F811
    """A test needs its verdict now: a suite's batch would leave it waiting, with no
    verdict, and fail it for nothing the agent did."""
    from assay.integrations.pytest_plugin import assert_case, suite_cases

    suite = batch_suite(tmp_path)
    record = assert_case(suite_cases(suite)[0].values[0], store=tmp_path / "runs.db", cache="off")
    assert record.verdict.value == "pass"
    assert openai.stats.batches == 0 and openai.stats.requests == 1


# -- the REST API --------------------------------------------------------------------------

def test_a_batch_run_launched_over_the_api_waits_and_a_resume_completes_it(openai, tmp_path):  # noqa: F811
    pytest.importorskip("fastapi")
    from tests.server_support import events, serve

    openai.configure(batch_polls=1)
    batch_suite(tmp_path, batch=None)
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as api:
        started = api.post("/runs", json={"suite": "suite/EVAL.yaml", "batch": True})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        name, last = events(api, started.json()["stream"])[-1]
        assert name == "run_waiting" and last["status"] == "waiting"
        assert last["submitted"] == CASES and last["batches"][0]["requests"] == CASES
        assert api.get(f"/runs/{run_id}").json()["status"] == "waiting"
        assert openai.stats.requests == 0 and openai.stats.batches == 1
        # followed through the store by a client of another server, the stream ends too
        assert [n for n, _ in events(api, f"/runs/{run_id}/stream")][-1] == "run_waiting"

        still = api.post(f"/runs/{run_id}/resume")  # the batch is not done yet
        assert still.status_code == 202, still.text
        name, last = events(api, still.json()["stream"])[-1]
        assert name == "run_waiting" and last["batches"][0]["state"] == "in_progress"
        done = api.post(f"/runs/{run_id}/resume")
        assert done.status_code == 202, done.text
        name, last = events(api, done.json()["stream"])[-1]
        assert name == "run_completed" and last["passed"] is True, last
        run = api.get(f"/runs/{run_id}").json()
        assert run["status"] == "completed" and run["summary"]["usage"]["batch_calls"] == CASES
        again = api.post(f"/runs/{run_id}/resume")
        assert again.status_code == 409 and "completed" in again.json()["detail"]
    assert openai.stats.requests == 0


def test_the_api_takes_a_suites_batch_and_a_request_can_say_no(openai, tmp_path):  # noqa: F811
    pytest.importorskip("fastapi")
    from tests.server_support import events, serve

    batch_suite(tmp_path)
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as api:
        asked = api.post("/runs", json={"suite": "suite/EVAL.yaml"})
        assert events(api, asked.json()["stream"])[-1][0] == "run_waiting"
        live = api.post("/runs", json={"suite": "suite/EVAL.yaml", "batch": False})
        assert events(api, live.json()["stream"])[-1][0] == "run_completed"
    assert openai.stats.batches == 1


def test_the_api_refuses_a_bad_batch_before_any_call(openai, tmp_path):  # noqa: F811
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    batch_suite(tmp_path, batch=None, judge="vllm:some-model")
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as api:
        for value in ("yes", 1):  # strict JSON: neither is true
            bad = api.post("/runs", json={"suite": "suite/EVAL.yaml", "batch": value})
            assert bad.status_code == 400, bad.text
            assert bad.json()["detail"].startswith("body field 'batch': Input should be a "
                                                   "valid boolean"), bad.text
        refused = api.post("/runs", json={"suite": "suite/EVAL.yaml", "batch": True})
        assert refused.status_code == 400, refused.text
        body = refused.json()
        assert body["code"] == "batch_unsupported" and body["detail"].startswith("batch:")
        assert "vllm:some-model" in body["detail"]
        assert api.get("/runs").json()["items"] == []
        doc = api.get("/openapi.json").json()
        assert "batch" in doc["components"]["schemas"]["RunRequest"]["properties"]
        assert "/runs/{run_id}/resume" in doc["paths"]
    assert openai.stats.arrived == 0


def test_the_api_resumes_only_a_run_it_could_have_started(openai, tmp_path):  # noqa: F811
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    inside = batch_suite(tmp_path / "served")
    outside = batch_suite(tmp_path / "elsewhere")
    store = tmp_path / "runs.db"
    theirs = assay.evaluate(outside, store=store).run_id
    judged = assay.evaluate(inside, store=store, judge_model="openai:gpt-4o").run_id
    ours = assay.evaluate(inside, store=store).run_id
    before = openai.stats.arrived
    with serve(f"sqlite:///{store}", suite_roots=[tmp_path / "served"]) as served, \
            served.client() as api:
        outside_roots = api.post(f"/runs/{theirs}/resume")
        assert outside_roots.status_code == 404, outside_roots.text
        not_allowed = api.post(f"/runs/{judged}/resume")
        assert not_allowed.status_code == 403, not_allowed.text
        assert not_allowed.json()["code"] == "judge_model_not_allowed"
        assert api.post("/runs/no-such-run/resume").status_code == 404
        assert openai.stats.arrived == before  # nothing was asked of the provider
        assert api.post(f"/runs/{ours}/resume").status_code == 202
    with serve(f"sqlite:///{store}", suite_roots=[tmp_path / "served"],
               allow_runs=False) as served, served.client() as api:
        assert api.post(f"/runs/{ours}/resume").status_code == 403
    with serve(f"sqlite:///{store}", suite_roots=[tmp_path / "served"],
               targets_file=inside.parent / ".assay" / "targets.yaml") as served, \
            served.client() as api:
        other = api.post(f"/runs/{judged}/resume")  # recorded: the file beside its suite
        assert other.status_code == 403, other.text
        assert other.json()["code"] == "targets_file_not_allowed"


def test_the_stream_of_a_waiting_run_the_server_did_not_start_ends(openai, tmp_path):  # noqa: F811
    """A run waiting for its batches is not running: its stream says so and closes (it
    used to send run_progress once a second for ever)."""
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    waiting = assay.evaluate(batch_suite(tmp_path), store=tmp_path / "runs.db")
    assert waiting.waiting
    names: list[str] = []
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as api, \
            api.stream("GET", f"/runs/{waiting.run_id}/stream") as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                names.append(line.removeprefix("event: "))
            if len(names) > 3:
                break
    assert names == ["run_waiting"], names


def test_assay_eval_judges_a_batch_suite_live(openai, tmp_path):  # noqa: F811
    """``assay eval`` (agentv's and uipath's command) collects no batches: a suite's batch
    would leave its run waiting and report it as a run of no case."""
    suite = batch_suite(tmp_path)
    done = run_assay(["eval", str(suite), "--store", str(tmp_path / "runs.db")],
                     cwd=tmp_path, env=_env(openai, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert openai.stats.batches == 0 and openai.stats.requests == CASES
    [run] = RunStore(f"sqlite:///{tmp_path}/runs.db").run_records()
    assert run.status is RunStatus.COMPLETED and run.summary is not None
    assert run.summary.cases == CASES


def test_a_jsonl_suites_sidecar_asks_for_batch(openai, tmp_path):  # noqa: F811
    folder = batch_suite(tmp_path).parent
    (folder / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": f"thing {i}",
                    "expected_output": f"thing {i} is blue"}) + "\n" for i in range(CASES)))
    (folder / "cases.yaml").write_text(
        "execution:\n  target: agent\n  batch: true\n  evaluators:\n"
        "    - {name: same_meaning, type: semantic_similarity}\n")
    waiting = assay.evaluate(folder / "cases.jsonl", store=tmp_path / "runs.db")
    assert waiting.waiting and openai.stats.batch_requests == CASES
    (folder / "cases.yaml").write_text((folder / "cases.yaml").read_text().replace(
        "batch: true", "batch: yes please"))
    with pytest.raises(SuiteError) as refused:
        assay.evaluate(folder / "cases.jsonl", store=tmp_path / "runs.db")
    assert f"{folder / 'cases.yaml'}:3:" in refused.value.message, refused.value.message



def test_the_api_resumes_a_run_whose_judge_url_has_a_password(openai, tmp_path,  # noqa: F811
                                                              monkeypatch):
    """A run records its judge URL without the password; the server's own entry for that
    judge, password and all, is what a resume runs with (it used to be refused as a judge
    the server does not allow)."""
    pytest.importorskip("fastapi")
    import time

    from tests.server_support import echo_suite, serve

    monkeypatch.chdir(tmp_path)
    echo_suite(tmp_path, 20, sleep=0.1)
    judge = f"http://user:s3cret-pw@{openai.url.removeprefix('http://')}#gpt-4o-mini"
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path],
               allowed_judge_models=[judge]) as served, served.client() as api:
        started = api.post("/runs", json={"suite": "echo/EVAL.yaml", "concurrency": 1,
                                          "judge_model": judge})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        time.sleep(0.4)
        assert api.post(f"/runs/{run_id}/cancel").status_code == 200
        recorded = api.get(f"/runs/{run_id}").json()
        assert recorded["status"] == "interrupted" and "s3cret-pw" not in json.dumps(recorded)
        resumed = api.post(f"/runs/{run_id}/resume")
        assert resumed.status_code == 202, resumed.text
        assert "s3cret-pw" not in resumed.text
        with api.stream("GET", f"/runs/{run_id}/stream") as response:
            names = [line.removeprefix("event: ") for line in response.iter_lines()
                     if line.startswith("event: ")]
        assert names[-1] == "run_completed", names
        assert api.get(f"/runs/{run_id}").json()["summary"]["cases"] == 20
