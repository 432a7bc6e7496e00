"""What starting assay costs: the command line and model-free runs import only what they use.

Measured on a 2-core machine, SQLAlchemy takes about 0.3 s to import and aiohttp about 0.25 s;
the command line once imported the run store for every command (``assay --help`` took 0.78 s)
and every run imported aiohttp to close an HTTP session it had never opened.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Each test starts fresh interpreters: what only a new process shows.
pytestmark = pytest.mark.process

HEAVY = ("sqlalchemy", "alembic", "aiohttp", "pandas", "numpy", "fastapi", "llama_cpp",
         "xllamacpp")


def _imported_after(code: str, watched: tuple[str, ...] = HEAVY) -> list[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps([m for m in {watched!r} " \
            "if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_building_the_command_line_imports_no_store_server_or_http_client() -> None:
    assert _imported_after("import assay.cli") == []


def test_a_run_that_calls_no_model_does_not_import_the_http_client(tmp_path) -> None:
    code = (
        "import assay\n"
        "rows = [{'id': 'a', 'input': 'q', 'output': 'x', 'expected_output': 'x'}]\n"
        f"result = assay.evaluate(rows, evaluators=['exact_match'], "
        f"store={str(tmp_path / 'runs.db')!r})\n"
        "assert result.summary.passed_count == 1, result.summary\n"
    )
    assert "aiohttp" not in _imported_after(code)


def test_a_fully_cached_rerun_does_not_import_the_http_client(tmp_path, mock_model,
                                                               mock_server) -> None:
    # The first run asks the judge and fills the cache; the second finds every answer there,
    # so it never needs aiohttp (a fifth of a second of imports and TLS contexts).
    code = (
        "import assay\n"
        "rows = [{'id': str(i), 'input': 'q', 'output': 'Paris', 'expected_output': 'Paris'}"
        " for i in range(3)]\n"
        "result = assay.evaluate(rows, evaluators=['semantic_similarity'], "
        f"judge_model={mock_model!r}, cache='use', store={str(tmp_path / 'runs.db')!r})\n"
        "assert result.summary.evaluator_errors == 0, result.summary\n"
    )
    assert "aiohttp" in _imported_after(code)
    assert mock_server.stats.requests == 3
    assert "aiohttp" not in _imported_after(code)
    assert mock_server.stats.requests == 3


def test_evaluator_classes_build_their_validators_only_when_used() -> None:
    # About fifty evaluator types are imported with assay.judges; a run uses a few. Building
    # every validator at import cost a tenth of a second of each start.
    code = (
        "import json\n"
        "from assay.registry import REGISTRY\n"
        "from assay.judges import Evaluator, ExactMatch\n"
        "REGISTRY.table('evaluator')  # every built-in evaluator module\n"
        "def every(c):\n"
        "    for s in c.__subclasses__():\n"
        "        yield s\n"
        "        yield from every(s)\n"
        "built = sorted(c.__name__ for c in every(Evaluator) if c.__pydantic_complete__)\n"
        "judge = ExactMatch(name='same')\n"
        "print(json.dumps([built, ExactMatch.__pydantic_complete__, judge.name]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    built, complete_after_use, name = json.loads(done.stdout.strip().splitlines()[-1])
    assert built == []
    assert complete_after_use is True and name == "same"


def test_a_run_imports_only_the_evaluators_it_uses(tmp_path, mock_model) -> None:
    # Forty-odd evaluator types in twenty modules, the agent-judge options and the calibration
    # gate took about 0.15 s of every run's start; a run of one judge needs none of the rest.
    unused = ("assay.judges.agent.builtin", "assay.judges.deterministic.tool_calls", "assay.judges.combinators.jury",
              "assay.judges.deterministic.match", "assay.run.policies.databricks.setup", "assay.calibration.gate")
    code = (
        "import assay\n"
        "rows = [{'id': 'a', 'input': 'q', 'output': 'Paris', 'expected_output': 'Paris'}]\n"
        "result = assay.evaluate(rows, evaluators=['semantic_similarity'], "
        f"judge_model={mock_model!r}, cache='off', store={str(tmp_path / 'runs.db')!r})\n"
        "assert result.summary.evaluator_errors == 0, result.summary\n"
    )
    assert _imported_after(code, (*unused, "assay.judges.llm.semantic_similarity")) == [
        "assay.judges.llm.semantic_similarity"]
    gated = code.replace("cache='off'", "cache='off', gates={'calibration': {'min_kappa': 0}}")
    assert "assay.calibration.gate" in _imported_after(gated, unused)
