"""A real judgment on the embedded GGUF model (extra ``assay[local]``), fully offline."""

from __future__ import annotations

import pytest

from assay.judges import EvalContext, SemanticSimilarity
from assay.llm import EngineConfig, JudgeEngine
from assay.llm.providers import local_backends
from assay.llm.providers.local import resolve_model_path
from assay.types.case import Case
from assay.types.execution import Execution
from tests.conftest import local_model_available

pytestmark = pytest.mark.skipif(not local_model_available(),
                                reason="needs the 'local' extra (scripts/setup.sh installs it)")


@pytest.mark.slow
@pytest.mark.parametrize("backend", local_backends.installed())
async def test_embedded_model_judges_and_the_result_parses_in_range(tmp_path, monkeypatch,
                                                                   backend):
    monkeypatch.setenv(local_backends.BACKEND_ENV, backend)
    engine = JudgeEngine(EngineConfig(default_model="local:gemma-3-270m",
                                      cache_path=tmp_path / "cache.sqlite"))
    await engine.preflight()
    case = Case(id="fr", expected_output="Paris is the capital of France.")
    execution = Execution(output="The capital city of France is Paris.")
    score = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))
    assert score.error is None, score.error
    assert score.value is not None and 0.0 <= score.value <= 1.0
    assert 0.0 <= score.raw <= 100.0 and score.scale == "0-100"
    assert score.judge_model == "local:gemma-3-270m"
    assert score.usage.prompt_tokens > 50 and score.usage.cost == 0.0
    again = await SemanticSimilarity().evaluate(case, execution, EvalContext(engine))
    assert again.value == score.value and again.usage.cached_calls == 1
    await engine.aclose()


def test_any_gguf_path_is_accepted_and_a_bad_one_is_refused(tmp_path):
    from assay.errors import ConfigError

    packaged = resolve_model_path("gemma-3-270m")
    assert packaged.suffix == ".gguf" and packaged.stat().st_size > 100_000_000
    assert resolve_model_path(str(packaged)) == packaged
    with pytest.raises(ConfigError, match=r"existing \.gguf"):
        resolve_model_path(str(tmp_path / "missing.gguf"))
