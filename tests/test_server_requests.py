"""What a request to ``assay serve`` may choose, and how much it gets back: a run request names
only the server's judge models and targets (the server's keys go nowhere else), the bound
loopback address is served, a taken port is one line before any banner, search queries and
every parameter refuse NUL and control characters, request bodies are strict, and a case page
stays small whatever the case holds."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from assay.store.runs import RunStore
from assay.testing import mock_server as mock_module
from assay.testing.mock_server import RunningServer, serve_in_thread
from assay.testing.runs import write_run
from tests.assay_process import run_assay
from tests.server_support import HUGE_OUTPUT, REQUEST, SPANS, events, serve, write_huge_case

pytest.importorskip("fastapi")

KEY = "sk-server-own-key-0123456789abcdef"


def _error(response: httpx.Response, status: int, code: str | None = None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"detail", "code"} and body["detail"], body
    if code is not None:
        assert body["code"] == code, body
    assert "Traceback" not in response.text
    return str(body["detail"])


# -- 1. a run request names only what the server allows ----------------------------------------


@pytest.fixture
def other_server() -> Iterator[RunningServer]:
    """A second mock server: the host a hostile request would have the server's key sent to."""
    server = serve_in_thread()
    yield server
    server.stop()


def _judged_suite(root: Path) -> None:
    (root / ".assay").mkdir()
    (root / "agent.py").write_text("def answer(question: str) -> str:\n"
                                   "    return 'echo ' + question\n")
    (root / "EVAL.yaml").write_text(
        "description: judged\nexecution:\n  target: agent\n  evaluators:\n"
        "    - {name: judged, type: llm_judge, prompt: 'Grade {{candidate_answer}}'}\n"
        "evalcases:\n  - {id: c0, input: q0, expected_outcome: an echo}\n"
        "  - {id: c1, input: q1, expected_outcome: an echo}\n")
    (root / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: 'agent:answer'}\n")


def test_a_run_request_may_name_only_the_servers_judge_models_and_targets(
        tmp_path, monkeypatch, mock_server, other_server):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASSAY_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", other_server.url)
    _judged_suite(tmp_path)
    allowed = f"{mock_server.url}#judge-model"
    elsewhere = f"{other_server.url}#judge-model"
    url = f"sqlite:///{tmp_path}/runs.db"
    with serve(url, suite_roots=[tmp_path]) as served, served.client() as api:
        for body, code in [({"judge_model": elsewhere}, "judge_model_not_allowed"),
                           ({"judge_model": "openai:gpt-4o-mini"}, "judge_model_not_allowed"),
                           ({"target": elsewhere}, "target_not_allowed"),
                           ({"target": "openai:gpt-4o-mini"}, "target_not_allowed")]:
            refused = api.post("/runs", json={"suite": "EVAL.yaml", **body})
            if refused.status_code == 202:  # let it run, to see where the key went
                events(api, refused.json()["stream"])
            assert other_server.stats.requests == 0, "the server's key went to the request's host"
            assert KEY not in _error(refused, 403, code)
        assert "--allow-judge-model" in _error(
            api.post("/runs", json={"suite": "EVAL.yaml", "judge_model": elsewhere}), 403)
        assert api.get("/runs").json()["total"] == 0  # nothing was started
    with serve(url, suite_roots=[tmp_path], allowed_judge_models=[allowed]) as served, \
            served.client() as api:
        started = api.post("/runs", json={"suite": "EVAL.yaml", "judge_model": allowed,
                                          "target": "agent"})
        assert started.status_code == 202, started.text
        assert events(api, started.json()["stream"])[-1][0] == "run_completed"
    assert other_server.stats.requests == 0
    assert mock_server.stats.requests >= 2
    assert dict(mock_server.stats.authorization) == {f"Bearer {KEY}": mock_server.stats.requests}


def test_a_servers_targets_file_names_the_targets_a_request_may_choose(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _judged_suite(tmp_path)
    (tmp_path / "EVAL.yaml").write_text(
        "description: echo\nexecution:\n  target: agent\n  evaluators:\n"
        "    - {name: has_echo, type: contains, search_text: echo}\n"
        "evalcases:\n  - {id: c0, input: q0}\n")
    target = "{provider: python, function: 'agent:answer'}"
    (tmp_path / ".assay" / "targets.yaml").write_text(
        f"targets:\n  - {{name: agent, {target[1:]}\n  - {{name: suites-own, {target[1:]}\n")
    served_targets = tmp_path / "served.yaml"
    served_targets.write_text(
        f"targets:\n  - {{name: agent, {target[1:]}\n  - {{name: served, {target[1:]}\n")
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path],
               targets_file=served_targets) as served, served.client() as api:
        # the suite's own file is not the server's when the server names one
        detail = _error(api.post("/runs", json={"suite": "EVAL.yaml", "target": "suites-own"}),
                        403, "target_not_allowed")
        assert "'agent', 'served'" in detail and str(served_targets) in detail
        started = api.post("/runs", json={"suite": "EVAL.yaml", "target": "served"})
        assert started.status_code == 202, started.text
        assert events(api, started.json()["stream"])[-1][0] == "run_completed"


def test_a_judge_model_the_server_cannot_use_is_refused_when_it_starts(tmp_path):
    done = run_assay(["serve", "--store", f"sqlite:///{tmp_path}/runs.db", "--port", "0",
                      "--allow-judge-model", "nosuch:model"], timeout=60)
    assert done.returncode == 2
    assert "--allow-judge-model 'nosuch:model'" in done.stderr
    assert "Traceback" not in done.stderr and "serving" not in done.stdout


# -- 2. the bound loopback address is served ---------------------------------------------------


def test_a_server_bound_to_another_loopback_address_answers_there(tmp_path):
    with serve(f"sqlite:///{tmp_path}/runs.db", host="127.0.0.2") as served, \
            served.client() as api:
        assert served.url.startswith("http://127.0.0.2:")
        assert api.get("/runs").status_code == 200
        assert api.get("/").status_code == 200
        with served.client(headers={"Host": "attacker.example"}) as rebound:
            _error(rebound.get("/runs"), 421, "host_not_allowed")


# -- 3. ports ----------------------------------------------------------------------------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_assay_serve_on_a_taken_port_says_so_in_one_line_before_any_banner(tmp_path,
                                                                           taken_port):
    done = run_assay(["serve", "--store", f"sqlite:///{tmp_path}/runs.db",
                      "--port", str(taken_port)], timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert f"port {taken_port} on 127.0.0.1 is already in use" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_the_mock_server_on_a_taken_port_says_so_in_one_line_before_any_banner(taken_port,
                                                                               capsys):
    with pytest.raises(SystemExit) as stopped:
        mock_module.main(["--port", str(taken_port)])
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and f"port {taken_port} on 127.0.0.1 is already in use" in err
    assert len(err.strip().splitlines()) == 1


def test_the_server_and_the_mock_server_default_to_different_ports_as_the_guide_says():
    from assay.cli.serve import DEFAULT_PORT

    assert DEFAULT_PORT != mock_module.DEFAULT_PORT
    docs = Path(__file__).resolve().parent.parent / "docs"
    viewer = (docs / "how-to" / "viewer.md").read_text()
    assert re.search(rf"assay serve &? +# http://127\.0\.0\.1:{DEFAULT_PORT}/", viewer)
    development = (docs / "development.md").read_text()
    assert f"mock_server --port {mock_module.DEFAULT_PORT} " in development
    assert f"its default port is {mock_module.DEFAULT_PORT}" in development


# -- 4. NUL and control characters in parameters -----------------------------------------------


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, str]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('requests')}/runs.db"
    store = RunStore(url)
    run = write_run(store, 12, seed=1)
    store.close()
    with serve(url) as served, served.client() as client:
        yield client, run


@pytest.mark.parametrize("query", ["\x00", "case\x00", "\n", "a\tb", "\x1b[2J"])
def test_a_search_with_a_control_character_is_a_400_not_every_case(api, query):
    client, run = api
    detail = _error(client.get(f"/runs/{run}/cases", params={"q": query}), 400,
                    "invalid_parameter")
    assert "'q'" in detail


@pytest.mark.parametrize(("path", "params"), [
    ("/runs", {"suite": "a\x00"}), ("/runs", {"target": "\x00"}),
    ("/runs/{run}/cases", {"evaluator": "\x00"}),
    ("/runs/{run}/case", {"case_id": "case-000001\x00"}),
    ("/runs/baseline", {"suite": "\x00"}),
    ("/runs/compare", {"baseline_run_id": "\x00", "candidate_run_id": "{run}"}),
    ("/runs/a%00b", {}),
])
def test_a_nul_in_any_parameter_is_a_400_naming_it(api, path, params):
    client, run = api
    given = {k: v.replace("{run}", run) for k, v in params.items()}
    detail = _error(client.get(path.replace("{run}", run), params=given), 400,
                    "invalid_parameter")
    assert (next(iter(params)) if params else "path") in detail


@pytest.mark.parametrize(("method", "path", "params", "named", "takes"), [
    ("GET", "/runs", {"suit": "chat"}, "suit", "branch, limit, offset, q, since, status, "
     "suite, tag, target, until"),
    ("GET", "/runs/{run}/cases", {"verdict": "fail", "serch": "x"}, "serch", "evaluator, "
     "evaluator_state, limit, offset, q, score_bin, sort, verdict"),
    ("GET", "/runs/{run}", {"limit": "5"}, "limit", "none"),
    ("GET", "/runs/compare", {"baseline_run_id": "{run}", "candidate_run_id": "{run}",
                              "max_score_drop": "1"}, "max_score_drop", "allow_different_cases"),
    ("DELETE", "/runs/{run}", {"froce": "true"}, "froce", "force"),
    # the export's own option: over HTTP it lifted case_limit to every case in one answer
    ("GET", "/runs/compare", {"baseline_run_id": "{run}", "candidate_run_id": "{run}",
                              "every_case": "true"}, "every_case", "case_limit"),
    ("GET", "/runs/{run}/cases", {"\x1b[2J": "1"}, "\\x1b[2J", "evaluator"),
])
def test_a_query_parameter_the_operation_does_not_take_is_a_400_naming_it(
        api, method, path, params, named, takes):
    client, run = api
    given = {k: v.replace("{run}", run) for k, v in params.items()}
    detail = _error(client.request(method, path.replace("{run}", run), params=given), 400,
                    "invalid_parameter")
    assert detail.startswith(f"query parameter '{named}': not a parameter of "), detail
    assert takes in detail.split("; it takes ")[1], detail
    assert "every_case" not in detail.split("; it takes ")[1]
    assert client.get(f"/runs/{run}").status_code == 200


def test_a_health_probe_with_a_query_string_of_its_own_is_still_answered(api):
    client, _ = api
    probed = client.get("/health", params={"_": "1732700000"})  # a load balancer's buster
    assert probed.status_code == 200, probed.text


def test_a_plain_search_still_finds_its_cases(api):
    client, run = api
    found = client.get(f"/runs/{run}/cases", params={"q": "case-00000"}).json()
    assert 0 < found["total"] < 12


LOOKALIKES = [("c\u0430se-000001", "c\\u0430se-000001"),  # a Cyrillic a
              ("case-000001\u200b", "case-000001\\u200b"),  # a zero-width space
              ("\u202ecase-000001", "\\u202ecase-000001"),  # a right-to-left override
              ("case-00000\uff11", "case-00000\\uff11")]  # a full-width 1


@pytest.mark.parametrize(("given", "shown"), LOOKALIKES)
def test_a_404_shows_a_look_alike_id_escaped_never_as_the_id_that_exists(api, given, shown):
    client, run = api
    answers = [
        (client.get(f"/runs/{run}/case", params={"case_id": given}), "case_not_found"),
        (client.get("/runs/compare/case", params={
            "baseline_run_id": run, "candidate_run_id": run, "case_id": given}),
         "case_not_found"),
        (client.post(f"/runs/{run}/labels", json={
            "case_id": given, "evaluator": "exact", "agrees": True, "author": "me"}),
         "case_not_found"),
        (client.get(f"/runs/{given}"), "run_not_found"),
        (client.get("/runs/compare", params={"baseline_run_id": given,
                                              "candidate_run_id": run}), "run_not_found"),
        (client.get(f"/runs/{run}/case/value", params={
            "case_id": "case-000001", "pointer": f"/{given}"}), "value_not_found"),
    ]
    assert client.get(f"/runs/{run}/case", params={"case_id": "case-000001"}).status_code == 200
    for answer, code in answers:
        detail = _error(answer, 404, code)
        assert detail.isascii(), detail
        if code != "run_not_found" or "compare" not in str(answer.url):
            assert shown in detail, detail


def test_every_echoed_value_is_cut_and_escaped_by_one_rule():
    from assay._util.control_chars import quoted

    assert quoted("plain-id") == "'plain-id'"
    assert quoted("\u0430\u200b\x1b\u202e\U0001f600") == "'\\u0430\\u200b\\x1b\\u202e\\U0001f600'"
    assert quoted("x" * 100) == repr("x" * 80) + "..."
    assert quoted("\u0430" * 100, 3) == "'\\u0430\\u0430\\u0430'..."


# -- 5. strict request bodies ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, None, [True]])
def test_a_baseline_patch_takes_only_a_json_boolean(api, value):
    client, run = api
    detail = _error(client.patch(f"/runs/{run}", json={"is_baseline": value}), 400)
    assert "is_baseline" in detail
    assert client.get(f"/runs/{run}").json()["is_baseline"] is False


@pytest.mark.parametrize(("field", "value"), [("concurrency", True), ("concurrency", "2"),
                                              ("repeat", "1"), ("repeat", 1.5),
                                              ("suite", 5)])
def test_a_run_request_takes_only_json_types(tmp_path, field, value):
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as client:
        body = {"suite": "EVAL.yaml", field: value}
        assert field in _error(client.post("/runs", json=body), 400, "invalid_parameter")


def test_a_suite_path_the_system_cannot_look_up_is_a_404_naming_it(tmp_path):
    """A symlink loop and a name longer than the system takes raised from the path's lookup
    (a 500, and the connection dropped); each is a suite that is not there."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as client:
        for suite in ["loop", "loop/EVAL.yaml", "a" * 300, "a/" * 400]:
            detail = _error(client.post("/runs", json={"suite": suite}), 404, "unknown_suite")
            assert detail.startswith(f"no suite {suite[:80]!r}"), detail
        assert client.get("/runs").json()["total"] == 0


@pytest.mark.parametrize(("content", "content_type", "said"), [
    (b"{not json", "application/json", "is not JSON (Expecting property name enclosed in "
     "double quotes at character 1)"),
    (b'{"name": "x"} trailing', "application/json", "is not JSON (Extra data at character 14)"),
    (b"\xff\xfe", "application/json", "is not JSON (Expecting value at character 0)"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json",  # was the framework's 400, saying
     "is not JSON (nested deeper than the decoder can read)"),  # only "error parsing the body"
    (b'{"repeat": ' + b"9" * 5000 + b"}", "application/json", "is not JSON (Exceeds the "
     "limit (4300 digits) for integer string conversion: value has 5000 digits)"),
    (b"", "application/json", "is empty"),
    (b"[]", "application/json", "is a JSON array"),
    (b"null", "application/json", "is a JSON null"),
    (b'"name"', "application/json", "is a JSON string"),
    (b'{"name": "x"}', "text/plain", "was not sent as JSON"),
    (b'{"name": "x"}', None, "was not sent as JSON"),
])
def test_a_body_that_is_not_a_json_object_is_named_as_the_body_with_what_was_expected(
        api, content, content_type, said):
    client, run = api
    for method, path in [("PATCH", f"/runs/{run}"), ("POST", f"/runs/{run}/labels"),
                         ("POST", "/runs")]:
        headers = {"content-type": content_type} if content_type else {}
        detail = _error(client.request(method, path, content=content, headers=headers), 400,
                        "invalid_parameter")
        assert detail == (f"the request body {said}: expected a JSON object, sent with "
                          "'Content-Type: application/json'"), (method, path, detail)
    assert client.get(f"/runs/{run}").json()["name"] is None


@pytest.mark.parametrize("content", [b'{"name": "a", "name": "b"}',
                                     b'{"suite": "EVAL.yaml", "filter": "x", "filter": "y"}'])
def test_a_body_naming_a_key_twice_is_refused_naming_the_key(api, content):
    """The decoder kept the last of the two values without a word: a run started on one of
    two suites, a run renamed to one of two names."""
    client, run = api
    key = "name" if b'"name"' in content else "filter"
    for method, path in [("PATCH", f"/runs/{run}"), ("POST", "/runs")]:
        detail = _error(client.request(method, path, content=content,
                                       headers={"content-type": "application/json"}),
                        400, "invalid_parameter")
        assert detail.startswith(f"the request body names a key twice (duplicate key "
                                 f"'{key}' at character {content.rindex(key.encode()) - 1})"), \
            (method, path, detail)
    assert client.get(f"/runs/{run}").json()["name"] is None
    assert client.get("/runs").json()["total"] == 1, "no run started"


@pytest.mark.parametrize("change", [{"echo_headers": "yes"}, {"logprobs": 1},
                                    {"seed": "3"}, {"latency_ms": "5"}])
def test_the_mock_servers_config_takes_only_json_types(other_server, change):
    with httpx.Client(base_url=other_server.url.removesuffix("/v1")) as client:
        refused = client.post("/admin/config", json=change)
        assert refused.status_code == 400, refused.text
        assert next(iter(change)) in refused.json()["error"]["message"]
        assert client.post("/admin/config", json={"echo_headers": True}).status_code == 200


# -- 6. a case page of bounded size ------------------------------------------------------------

@pytest.mark.slow  # a run of one 60 MB case is written, then served
def test_a_huge_case_page_is_small_and_says_what_it_cut(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    run = write_huge_case(url)
    with serve(url) as served, served.client() as client:
        started = time.monotonic()
        page = client.get(f"/runs/{run}/case", params={"case_id": "huge"})
        assert page.status_code == 200, page.text[:500]
        assert len(page.content) < 1_200_000  # the whole case is over 60 MB
        assert time.monotonic() - started < 20
        detail = page.json()
        execution = detail["record"]["execution"]
        assert execution["output"].endswith("… [cut: 3,000,000 characters in all]")
        assert execution["output"].startswith("ooo")
        assert 0 < len(execution["trace"]) < SPANS
        [score] = detail["record"]["scores"]  # the small fields are all there, whole
        assert (score["name"], score["value"], score["rationale"]) == ("judged", 0.5, "too long")
        assert detail["record"]["verdict"] == "fail" and detail["record"]["case_id"] == "huge"
        cuts = {c["pointer"]: c for c in detail["cuts"]}
        assert cuts["/record/execution/output"]["total"] == len(HUGE_OUTPUT)
        assert cuts["/record/execution/trace"]["unit"] == "items"
        assert cuts["/record/execution/trace"]["total"] == SPANS
        content = "/record/scores/0/details/judge_request/0/content"
        assert cuts[content]["total"] == len(REQUEST)

        def value(pointer: str, **params: int) -> httpx.Response:
            return client.get(f"/runs/{run}/case/value",
                              params={"case_id": "huge", "pointer": pointer, **params})

        whole = value("/record/execution/output").json()
        assert whole["text"] == HUGE_OUTPUT and whole["length"] == len(HUGE_OUTPUT)
        part = value(content, offset=10, limit=5).json()
        assert part == {"pointer": content, "length": len(REQUEST), "offset": 10,
                        "text": "rrrrr"}
        span = value("/record/execution/trace/4999/attributes/payload").json()
        assert span["text"].startswith("4999:")
        _error(value("/record/nothing"), 404, "value_not_found")
        _error(value("/record/execution/output", limit=10**9), 400, "invalid_parameter")


def test_a_small_case_page_is_whole_with_no_cuts(api):
    client, run = api
    detail = client.get(f"/runs/{run}/case", params={"case_id": "case-000001"}).json()
    assert detail["cuts"] == [] and detail["cuts_not_listed"] == 0
    assert "[cut:" not in str(detail)
