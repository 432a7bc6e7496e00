"""No secret reaches a store, a file, a message or the terminal.

A hostile judge server echoes the request headers (API keys included) in its error bodies;
credentials are written into judge and store URLs. The keys must never be found in runs.db,
the results JSONL, the JUnit XML, the response cache, or what ``assay`` prints.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import textwrap
from pathlib import Path

import pytest

from assay._util.redact import Secrets, redact_url, scrub, url_secrets
from assay.errors import ConfigError
from assay.judges import EvalContext, SemanticSimilarity
from assay.llm import EngineConfig, JudgeEngine
from assay.store.runs import RunStore, StoreError
from assay.targets.config import build_target
from assay.testing.mock_server import RunningServer, serve_in_thread
from assay.testing.runs import write_run
from assay.types.case import Case
from assay.types.execution import Execution
from tests.assay_process import run_assay
from tests.conftest import fast_retry
from tests.server_support import serve

API_KEY = "sk-assay-test-0123456789abcdef"
OPENAI_KEY = "sk-openai-test-fedcba9876543210"
PASSWORD = "hunter2-Pa55word"

SUITE = """
description: secrets
execution:
  evaluators:
    - name: similar
      type: semantic_similarity
evalcases:
  - id: fr
    input: Capital of France?
    expected_output: Paris is the capital of France.
    metadata: {output: Paris.}
  - id: jp
    input: Capital of Japan?
    expected_output: Tokyo is the capital of Japan.
    metadata: {output: Tokyo.}
"""


def assay(cwd: Path, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache"), **(env or {})}
    for var in ("ASSAY_JUDGE_MODEL", "OPENAI_BASE_URL", "ASSAY_STORE_URL"):
        full_env.pop(var, None)
    return run_assay(args, cwd=cwd, env=full_env, timeout=180)


def everything_written(root: Path) -> bytes:
    """Every byte of every file under ``root`` (stores with their WAL, caches, reports)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def leaks(blob: bytes | str, *secrets: str) -> list[str]:
    data = blob.encode() if isinstance(blob, str) else blob
    found = []
    for secret in secrets:
        forms = {secret, base64.b64encode(f"user:{secret}".encode()).decode()}
        found += [form for form in forms if form.encode() in data]
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "EVAL.yaml").write_text(SUITE)
    return tmp_path


# -- keys echoed back in provider errors ------------------------------------------------------


@pytest.mark.parametrize("status", ["401", "500"])
def test_key_echoed_in_error_bodies_never_reaches_store_files_or_output(
        project: Path, mock_server: RunningServer, status: str) -> None:
    mock_server.configure(faults={status: 1.0}, echo_headers=True)
    env = {"ASSAY_API_KEY": API_KEY, "OPENAI_API_KEY": OPENAI_KEY}
    result = assay(project, "run", "EVAL.yaml", "--judge-model", f"{mock_server.url}#judge",
                   "--store", "sqlite:///runs.db", "-o", "results.jsonl",
                   "--junit", "junit.xml", "--max-attempts", "2", "--max-errors", "100",
                   env=env)
    # Every judgement failed, so no case was scored: that gate fails whatever --max-errors says.
    assert result.returncode == 1, result.stderr
    assert "no case could be scored" in result.stdout
    # The premise: the server did receive the key and did echo it back.
    assert f"Bearer {API_KEY}" in mock_server.stats.authorization
    written = (project / "results.jsonl").read_text()
    assert "request headers were" in written and "${{ ASSAY_API_KEY }}" in written
    assert leaks(everything_written(project), API_KEY) == []
    assert leaks(result.stdout + result.stderr, API_KEY) == []
    run_id = next(x for x in result.stdout.splitlines() if x.startswith("run ")).split()[1]
    shown = assay(project, "show", run_id, "--store", "sqlite:///runs.db")
    assert shown.returncode == 0, shown.stderr
    assert leaks(shown.stdout + shown.stderr, API_KEY) == []

    judged = assay(project, "judge", "-e", "Paris", "-a", "Paris it is", "--max-attempts", "2",
                   "-m", f"{mock_server.url}#judge", env=env)
    assert judged.returncode == 1
    assert "request headers were" in judged.stdout
    assert leaks(judged.stdout + judged.stderr, API_KEY) == []
    as_json = assay(project, "judge", "-e", "Paris", "-a", "Paris it is", "--json",
                    "--max-attempts", "2", "-m", f"{mock_server.url}#judge", env=env)
    assert "request headers were" in as_json.stdout
    assert leaks(as_json.stdout + as_json.stderr, API_KEY) == []


async def test_every_provider_key_is_scrubbed_from_engine_errors(
        engine_factory, mock_server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI, Azure and Anthropic keys, whichever provider echoes them."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", mock_server.url.removesuffix("/v1"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-key-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mock_server.url.removesuffix("/v1"))
    mock_server.configure(faults={"401": 1.0}, echo_headers=True)
    engine = engine_factory(cache_mode="off")
    case, execution = Case(id="c", expected_output="Paris"), Execution(output="Paris")
    for model in ("openai:gpt-4o-mini", "azure:deploy", "anthropic:claude"):
        score = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine, model))
        assert score.error is not None and "request headers were" in score.error.message
        assert leaks(score.model_dump_json(), OPENAI_KEY, "azure-key-0123456789",
                     "anthropic-key-0123456789") == [], model


async def test_http_target_and_judge_share_one_scrub(tmp_path: Path, mock_server: RunningServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_KEY", "agent-token-0123456789")
    mock_server.configure(faults={"500": 1.0}, echo_headers=True)
    target = build_target({"name": "api", "provider": "http", "url": f"{mock_server.url}/chat/"
                           "completions", "headers": {"X-Key": "${{ AGENT_KEY }}"}}, tmp_path)
    execution = await target.run(Case(id="c", input="hi"))
    assert execution.error is not None and "${{ AGENT_KEY }}" in execution.error
    assert "agent-token-0123456789" not in execution.error


async def test_an_agent_printing_the_judge_key_on_stderr_is_scrubbed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent inherits the environment; its error text must not carry the judge's key."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", "service-token-0123456789")
    target = build_target({"name": "leaky", "provider": "cli", "command":
                           "echo \"$OPENAI_API_KEY $MY_SERVICE_TOKEN\" >&2; exit 1"}, tmp_path)
    execution = await target.run(Case(id="c", input="hi"))
    assert execution.error is not None
    assert "${{ OPENAI_API_KEY }} ${{ MY_SERVICE_TOKEN }}" in execution.error
    assert leaks(execution.error, OPENAI_KEY, "service-token-0123456789") == []


def test_scrub_hides_longest_secret_first_and_url_credentials() -> None:
    secrets = Secrets({"abcd1234": "${{ A }}", "abcd1234-long": "${{ B }}", "xy": "short"})
    text = "a abcd1234-long b abcd1234 c xy http://u:pw@h/v1 https://tok@h ?api_key=k1&q=2"
    assert secrets.scrub(text) == ("a ${{ B }} b ${{ A }} c xy http://u:***@h/v1 "
                                   "https://***@h ?api_key=***&q=2")
    assert scrub("see postgresql://me:pw@db:5432/x") == "see postgresql://me:***@db:5432/x"


# -- credentials in URLs ------------------------------------------------------------------


def test_judge_url_password_is_used_but_never_written_or_shown(
        project: Path, mock_server: RunningServer) -> None:
    host = mock_server.url.removeprefix("http://")
    model = f"http://user:{PASSWORD}@{host}#judge"
    result = assay(project, "run", "EVAL.yaml", "--judge-model", model,
                   "--store", "sqlite:///runs.db", "-o", "results.jsonl", "--junit",
                   "junit.xml", "--max-failed", "10")
    assert result.returncode == 0, result.stderr
    token = base64.b64encode(f"user:{PASSWORD}".encode()).decode()
    assert mock_server.stats.authorization == {f"Basic {token}": 2}, "requests authenticate"
    jsonl = (project / "results.jsonl").read_text()
    assert f"http://user:***@{host}#judge" in jsonl
    assert leaks(everything_written(project), PASSWORD) == []
    assert leaks(result.stdout + result.stderr, PASSWORD) == []


async def test_base_url_password_hidden_in_errors_scores_and_cache(
        engine_factory, mock_server: RunningServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    host = mock_server.url.removeprefix("http://")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{PASSWORD}@{host}")
    case, execution = Case(id="c", expected_output="Paris"), Execution(output="Paris")
    engine = engine_factory(default_model="openai:gpt-4o-mini")
    good = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))
    assert good.ok and good.judge_model == "openai:gpt-4o-mini"
    mock_server.configure(faults={"500": 1.0}, echo_headers=True)
    judge_url = f"http://user:{PASSWORD}@{host}#judge"
    for model in (None, judge_url):
        engine = engine_factory(cache_mode="off", retry=fast_retry(max_attempts=2),
                                default_model=model or "openai:gpt-4o-mini")
        score = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))
        assert score.error is not None
        assert leaks(score.model_dump_json(), PASSWORD) == [], score.error.message
    assert "user:***@" in str(score.judge_model)
    engine = engine_factory(default_model=judge_url)
    mock_server.configure(faults={}, echo_headers=False)
    assert (await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))).ok
    await engine.aclose()
    assert leaks((tmp_path / "cache.sqlite").read_bytes(), PASSWORD) == []


async def test_unreachable_url_error_hides_password() -> None:
    engine = JudgeEngine(EngineConfig(default_model=f"http://u:{PASSWORD}@127.0.0.1:9/v1#m",
                                      cache_mode="off"))
    with pytest.raises(ConfigError) as caught:
        await engine.preflight()
    assert "cannot reach" in caught.value.message and PASSWORD not in caught.value.message


def test_a_redacted_model_string_is_refused_clearly() -> None:
    engine = JudgeEngine(EngineConfig(default_model="http://u:***@127.0.0.1:9/v1#m",
                                      cache_mode="off"))
    with pytest.raises(ConfigError, match="password was hidden"):
        engine.resolve()


def test_store_url_password_is_never_shown(tmp_path: Path) -> None:
    url = f"postgresql://me:{PASSWORD}@127.0.0.1:1/assay"
    with pytest.raises(StoreError) as caught:
        RunStore(url)
    assert PASSWORD not in caught.value.message and "me:***@127.0.0.1:1" in caught.value.message
    store = RunStore(f"sqlite:///{tmp_path / 'runs.db'}")
    assert store.display_url == store.url  # nothing to hide
    assert redact_url(url) == "postgresql://me:***@127.0.0.1:1/assay"
    result = assay(tmp_path, "runs", "--store", url)
    assert result.returncode == 2 and "me:***@" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    (tmp_path / "EVAL.yaml").write_text(textwrap.dedent("""
        evalcases:
          - {id: a, input: x, expected_output: x}
    """))
    run = assay(tmp_path, "run", "EVAL.yaml", "--store", url)
    assert run.returncode == 2 and PASSWORD not in run.stdout + run.stderr


# -- keys quoted in answers that succeeded ------------------------------------------------

AGENT_TOKEN = "agent-token-5f4e3d2c1b0a9988"

AGENT_SUITE = "target: echo\n" + SUITE
"""The cases run by an agent that tells its token (the recorded outputs are not used)."""

ECHO_TARGET = """
targets:
  - name: echo
    provider: cli
    command: 'echo "Paris. My token is $MY_TOKEN"'
    env: {MY_TOKEN: "${{ AGENT_TOKEN }}"}
"""


def written_outputs(root: Path) -> bytes:
    """Every byte assay wrote under ``root``: what :func:`everything_written` reads, without
    the ``.env`` file the user keeps the agent's token in."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*"))
                    if p.is_file() and p.name != ".env")


def test_answers_quoting_keys_are_scrubbed_in_the_store_cache_files_and_api(
        tmp_path: Path, mock_server: RunningServer) -> None:
    """A judge answers successfully and quotes its API key; the agent answers with the token
    its targets file gave it (from a .env file, so only the targets file knows it)."""
    project = tmp_path / "project"
    (project / ".assay").mkdir(parents=True)
    (project / "EVAL.yaml").write_text(AGENT_SUITE)
    (project / ".assay" / "targets.yaml").write_text(ECHO_TARGET)
    (project / ".assay" / ".env").write_text(f"AGENT_TOKEN={AGENT_TOKEN}\n")
    mock_server.configure(quote_headers=True)
    env = {"ASSAY_API_KEY": API_KEY}
    result = assay(project, "run", "EVAL.yaml", "--judge-model", f"{mock_server.url}#judge",
                   "--store", "sqlite:///runs.db", "-o", "results.jsonl", "--junit",
                   "junit.xml", "--max-failed", "10", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Bearer {API_KEY}" in mock_server.stats.authorization  # the premise
    row = json.loads((project / "results.jsonl").read_text().splitlines()[0])
    assert "${{ AGENT_TOKEN }}" in row["candidate_answer"], row
    judged = json.dumps(row["evaluator_results"])
    assert "request headers were" in judged and "${{ ASSAY_API_KEY }}" in judged
    run_id = next(x for x in result.stdout.splitlines() if x.startswith("run ")).split()[1]
    shown = assay(project, "report", run_id, "--store", "sqlite:///runs.db", "--html",
                  "report.html", "--markdown", "report.md", env=env)
    assert shown.returncode == 0, shown.stderr
    again = assay(project, "run", "EVAL.yaml", "--judge-model", f"{mock_server.url}#judge",
                  "--store", "sqlite:///runs.db", "--max-failed", "10", env=env)
    assert "(+2 cached" in again.stdout, again.stdout  # the cached answers are replayed
    assert leaks(written_outputs(project), API_KEY, AGENT_TOKEN) == []
    outputs = result.stdout + result.stderr + shown.stdout + again.stdout + again.stderr
    assert leaks(outputs, API_KEY, AGENT_TOKEN) == []
    with serve(f"sqlite:///{project / 'runs.db'}") as served, served.client() as client:
        case = client.get(f"/runs/{run_id}/case", params={"case_id": "fr"})
        cases = client.get(f"/runs/{run_id}/cases")
    assert case.status_code == 200 and "${{ ASSAY_API_KEY }}" in case.text
    assert leaks(case.text + cases.text, API_KEY, AGENT_TOKEN) == []


def test_the_server_never_serves_a_secret_stored_before_it_was_scrubbed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written by an earlier assay holds an answer with a key of the server's
    environment: every JSON answer hides it on the way out."""
    db = tmp_path / "runs.db"
    run_id = write_run(RunStore(f"sqlite:///{db}"), 3)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE executions SET execution = json_set(execution, '$.output', ?)",
                     (f"the key is {OPENAI_KEY}",))
        conn.execute("UPDATE case_search SET text = ?", (f"the key is {OPENAI_KEY}",))
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    with serve(f"sqlite:///{db}") as served, served.client() as client:
        case = client.get(f"/runs/{run_id}/case", params={"case_id": "case-000000"})
        found = client.get(f"/runs/{run_id}/cases", params={"q": "the key"})
        halves = [client.get(f"/runs/{run_id}/case/value", params={
            "case_id": "case-000000", "pointer": "/record/execution/output", "offset": offset,
            "limit": 20}).json()["text"] for offset in (0, 20)]  # slices that cut a key
    assert case.status_code == 200 and found.status_code == 200
    assert "the key is ${{ OPENAI_API_KEY }}" in case.text
    assert "".join(halves) == "the key is ${{ OPENAI_API_KEY }}"
    assert leaks(case.text + found.text, OPENAI_KEY) == []


def test_scrub_json_hides_secrets_string_by_string_and_keeps_the_document() -> None:
    """A secret that reads like a JSON literal, a number or a field name hides inside strings
    only: the document still parses, with the same structure."""
    secrets = Secrets({"true": "***", "12345": "***", "passed": "***",
                       "sk-0123456789": "${{ K }}"})
    text = ('{"passed":true,"n":123456,"note":"sk-0123456789 is true",'
            '"urls":["http://u:pw@h/v1",{"deep":"12345"}]}')
    assert json.loads(secrets.scrub_json(text)) == {
        "passed": True, "n": 123456, "note": "${{ K }} is ***",
        "urls": ["http://u:***@h/v1", {"deep": "***"}]}
    clean = '{"ok":false,"note":"nothing to hide"}'
    assert secrets.scrub_json(clean) is clean
    assert secrets.scrub_json_bytes(b'{"a":"sk-0123456789"}\n') == b'{"a":"${{ K }}"}\n'
    encoded = clean.encode()
    assert secrets.scrub_json_bytes(encoded) is encoded  # nothing to hide: not even decoded


# -- redirects ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [307, 302])
async def test_a_redirect_to_another_origin_is_refused_and_the_key_stays_home(
        engine_factory, mock_server: RunningServer, monkeypatch: pytest.MonkeyPatch,
        status: int) -> None:
    """The judge's server answers with a redirect to a second server: whichever header
    carries the key (Authorization, Azure's api-key, Anthropic's x-api-key), the second
    server never sees a request, and the score says why."""
    elsewhere = serve_in_thread()
    try:
        mock_server.configure(redirect_to=f"{elsewhere.url}/chat/completions",
                              redirect_status=status)
        root = mock_server.url.removesuffix("/v1")
        monkeypatch.setenv("ASSAY_API_KEY", API_KEY)
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", root)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", root)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-key-0123456789")
        engine = engine_factory(cache_mode="off")
        case, execution = Case(id="c", expected_output="Paris"), Execution(output="Paris")
        for model in (f"{mock_server.url}#judge", "azure:deploy", "anthropic:claude"):
            score = await SemanticSimilarity().evaluate(case, execution,
                                                        EvalContext(engine, model))
            assert score.error is not None and score.error.code == "request_rejected", model
            assert "to another origin" in score.error.message
            assert f"127.0.0.1:{elsewhere.port}" in score.error.message
        assert mock_server.stats.requests == 3  # one each: a refusal is not retried
        agent = build_target({"name": "api", "provider": "http", "url": f"{mock_server.url}/"
                              "chat/completions", "headers": {"X-Key": "agent-key-0123456789"}},
                             Path.cwd())
        execution = await agent.run(Case(id="c", input="hi"))
        assert execution.error is not None and "to another origin" in execution.error
        assert elsewhere.stats.arrived == 0 and not elsewhere.stats.credentials
    finally:
        elsewhere.stop()


async def test_a_redirect_within_the_origin_is_followed_as_a_post(
        engine_factory, mock_server: RunningServer) -> None:
    mock_server.configure(redirect_to=f"http://127.0.0.1:{mock_server.port}/chat/completions")
    engine = engine_factory(cache_mode="off")
    score = await SemanticSimilarity().evaluate(
        Case(id="c", expected_output="Paris"), Execution(output="Paris"), EvalContext(engine))
    assert score.ok, score.error
    assert mock_server.stats.arrived == 2 and mock_server.stats.completed == 1


def test_only_credentials_become_secrets_not_the_words_around_them(tmp_path: Path) -> None:
    """A store's user name, a target's harmless header and a short URL user stay readable
    wherever the word appears; a password, a bare token and a header named like a credential
    are hidden everywhere."""
    assert url_secrets("postgresql://assay@db/runs") == {}
    token = "ghp_" + "t" * 20
    assert url_secrets(f"https://{token}@git.example.com") == {token: "***"}
    build_target({"name": "api", "provider": "http", "url": "http://127.0.0.1:9/chat",
                  "headers": {"X-Client": "assay-cli", "X-Api-Key": "literal-key-0123456789"}},
                 tmp_path)
    assert scrub("assay-cli sent literal-key-0123456789") == "assay-cli sent ***"


def test_an_internal_error_quoting_a_key_is_logged_with_it_hidden_by_the_http_server_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn logs the traceback of an error the app answered 500 again, with the error's
    message: the key the message quotes is hidden there as in assay's own log."""
    import logging
    import threading
    import time

    import httpx
    import uvicorn

    from assay.server.app import create_app
    from assay.server.settings import ServerSettings
    from tests.server_support import free_port

    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    app = create_app(ServerSettings(store_url=f"sqlite:///{tmp_path}/runs.db"))

    def failing() -> None:  # an error no handler expects, quoting the key
        raise RuntimeError(f"the provider answered: invalid key {OPENAI_KEY}")

    app.add_api_route("/failing", failing)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    logged: list[str] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(logging.Formatter().format(record))

    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    handlers = [(logging.getLogger(name), Kept()) for name in ("uvicorn.error", "assay.server")]
    for logger, handler in handlers:
        logger.addHandler(handler)
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/failing")
    finally:  # uvicorn logs the error after the answer is sent: once it has stopped
        server.should_exit = True
        thread.join(timeout=30)
        for logger, handler in handlers:
            logger.removeHandler(handler)
    assert answer.status_code == 500 and OPENAI_KEY not in answer.text
    said = "\n".join(logged)
    assert said.count("RuntimeError: the provider answered: invalid key "
                      "${{ OPENAI_API_KEY }}") == 2, said
    assert leaks(said, OPENAI_KEY) == []
