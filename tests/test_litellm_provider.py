"""The LiteLLM provider (extra ``assay[litellm]``) against the real local server."""

from __future__ import annotations

import os

import pytest

from assay.judges import EvalContext, SemanticSimilarity
from assay.llm import EngineConfig, JudgeEngine
from assay.llm.providers.inline import InlineProvider
from assay.llm.providers.litellm_provider import LiteLLMProvider
from assay.targets.config import read_targets
from assay.types.case import Case
from assay.types.execution import Execution
from tests.test_agentv_providers import targets

# Set before LiteLLM is imported (by the fixture below): tell it, as the provider does, to use the
# price map it ships instead of fetching one from GitHub.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True, scope="module")
def _litellm_installed() -> None:
    """Import LiteLLM (seconds) only where these tests run, not in every test worker that
    collects them."""
    pytest.importorskip("litellm", reason="the litellm extra is installed by setup")


async def test_litellm_routes_to_an_openai_compatible_server(mock_server, monkeypatch,
                                                              tmp_path):
    monkeypatch.setenv("OPENAI_API_BASE", mock_server.url)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    engine = JudgeEngine(EngineConfig(default_model="litellm:openai/judge-model",
                                      cache_path=tmp_path / "c.db"))
    score = await SemanticSimilarity().evaluate(Case(id="a", expected_output="green tea"),
                                                Execution(output="green tea"),
                                                EvalContext(engine))
    assert score.ok, score.error
    assert score.value == pytest.approx(1.0)
    assert mock_server.stats.requests == 1
    assert mock_server.stats.models == {"judge-model": 1}


async def test_litellm_rate_limit_maps_to_a_retryable_error(mock_server, monkeypatch,
                                                             tmp_path):
    from tests.conftest import fast_retry

    mock_server.configure(faults={"429": 1.0}, max_faults_per_request=1, retry_after_s=0.0)
    monkeypatch.setenv("OPENAI_API_BASE", mock_server.url)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    engine = JudgeEngine(EngineConfig(default_model="litellm:openai/judge-model",
                                      cache_mode="off", retry=fast_retry()))
    score = await SemanticSimilarity().evaluate(Case(id="a", expected_output="x"),
                                                Execution(output="x"), EvalContext(engine))
    assert score.ok and score.usage.retries == 1


NO_FETCH = r"""
import socket, sys
attempts = []
real_connect = socket.socket.connect

def connect(self, address):
    attempts.append(address)
    raise OSError("no network in this test")

socket.socket.connect = connect
socket.create_connection = lambda address, *a, **k: connect(None, address)
from assay.llm import EngineConfig, JudgeEngine
JudgeEngine(EngineConfig(default_model="litellm:openai/judge-model")).resolve()
import litellm  # noqa: F401
print(len(attempts), attempts[:3])
"""


@pytest.mark.process
def test_choosing_the_litellm_provider_downloads_nothing(tmp_path):
    """LiteLLM fetched its price map from GitHub on import (three attempts when offline)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    done = subprocess.run([sys.executable, "-c", NO_FETCH], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == "0", done.stdout + done.stderr[-1000:]


def test_gemini_and_others_go_through_litellm(tmp_path):
    file = targets(tmp_path, """
        targets:
          - {name: gem, provider: gemini, api_key: g-key}
          - {name: router, provider: openrouter, model: meta/llama-3, base_url: "http://x/api"}
          - {name: plain, provider: google, model: gemini-2.0-flash}
        """)
    found = read_targets(file)
    plain = found.require("plain").model_string()
    assert plain == "litellm:gemini/gemini-2.0-flash"  # no key of its own: the environment's
    engine = JudgeEngine(EngineConfig(cache_path=tmp_path / "c.db"))
    gem = engine.resolve(found.require("gem").model_string())
    assert isinstance(gem, InlineProvider) and isinstance(gem.inner, LiteLLMProvider)
    assert gem.inner.spec.model == "gemini/gemini-2.5-flash"  # AgentV's default model
    assert gem.inner.extra == {"api_key": "g-key"}
    router = engine.resolve(found.require("router").model_string())
    assert router.inner.spec.model == "openrouter/meta/llama-3"  # type: ignore[attr-defined]
    assert router.inner.extra == {"api_base": "http://x/api"}  # type: ignore[attr-defined]
