"""The synchronous API (also inside a running loop) and ``assay judge`` as a user runs it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import assay
from assay import Case, EngineConfig, Execution, JudgeEngine, SemanticSimilarity
from tests.assay_process import run_assay


def test_sync_score_in_a_script(mock_model, mock_server, tmp_path):
    engine = JudgeEngine(EngineConfig(default_model=mock_model, cache_path=tmp_path / "c.db"))
    score = assay.score(SemanticSimilarity(), Case(id="a", expected_output="red apple"),
                        Execution(output="a red apple"), engine=engine)
    assert score.ok and 0 < score.value <= 1


async def test_sync_score_inside_a_running_event_loop(mock_model, mock_server, tmp_path):
    """As in a notebook cell: a loop is running, and the synchronous call still works."""
    asyncio.get_running_loop()
    engine = JudgeEngine(EngineConfig(default_model=mock_model, cache_path=tmp_path / "c.db"))
    score = assay.score(SemanticSimilarity(), Case(id="a", expected_output="red apple"),
                        Execution(output="a red apple"), engine=engine)
    assert score.ok
    assert mock_server.stats.requests == 1


def test_score_takes_a_dict_for_a_case_and_names_an_argument_it_cannot_take():
    """A dict case was an AttributeError; an answer given where the Execution goes was a
    pydantic error about a SuiteCase; None was judged as an error score of a target that
    'failed' (no recorded output), an error never made by the agent."""
    import pytest

    from assay.errors import ConfigError

    judged = assay.score(assay.ExactMatch(), {"id": "a", "expected_output": "Paris"},
                         {"output": "Paris"})
    assert judged.value == 1.0 and judged.verdict.value == "pass"
    for execution, said in (("Paris", "execution: a str is not an Execution"),
                            (None, "execution: a NoneType is not an Execution"),
                            ({"output": "x", "latency": "soon"}, "execution: latency")):
        with pytest.raises(ConfigError, match=re.escape(said)) as raised:
            assay.score(assay.ExactMatch(), Case(id="a", expected_output="Paris"), execution)
        assert raised.value.code == "invalid_argument"
    with pytest.raises(ConfigError, match=re.escape("case: id: Input should be a valid string")):
        assay.score(assay.ExactMatch(), {"id": 5}, Execution(output="Paris"))


def _run(args: list[str], env_extra: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env_extra or {})}
    return run_assay(args, env=env, cwd=cwd, timeout=120)


def test_cli_judge_prints_score_rationale_tokens_and_cost(mock_server, tmp_path):
    """OpenAI's model (here answered by the mock) at its published price: a few hundred
    tokens cost a few hundred-thousandths of a dollar, never shown as $0.0000; the
    same model name on a server of one's own has no published price: unknown."""
    env = {"ASSAY_CACHE_DIR": str(tmp_path), "OPENAI_BASE_URL": mock_server.url,
           "OPENAI_API_KEY": "sk-test"}
    out = _run(["judge", "-e", "Paris is the capital", "-a", "the capital is Paris",
                "--model", "openai:gpt-4o-mini"], env)
    assert out.returncode == 0, out.stderr
    assert "score     1.000 (raw 100.0 on 0-100) pass" in out.stdout
    assert "rationale" in out.stdout and "prompt +" in out.stdout
    assert re.search(r"cost \$0\.\d*[1-9]", out.stdout), out.stdout  # priced, not $0
    model = f"{mock_server.url}#gpt-4o-mini"
    own = _run(["judge", "-e", "Paris is the capital", "-a", "the capital is Paris",
                "--model", model, "--cache", "off"], {"ASSAY_CACHE_DIR": str(tmp_path)})
    assert "cost unknown" in own.stdout, own.stdout
    as_json = _run(["judge", "-e", "a", "-a", "b", "--model", model, "--json"],
                   {"ASSAY_CACHE_DIR": str(tmp_path)})
    data = json.loads(as_json.stdout)
    assert data["scale"] == "0-100" and data["usage"]["prompt_tokens"] > 0


def test_cli_judge_counts_its_tokens_as_a_runs_summary_does(mock_server, tmp_path):
    """Tokens are counts with thousands separated (``2,024 prompt``), as the run summary's
    ``judge 4,250``; the judge's line printed ``2024``."""
    env = {"ASSAY_CACHE_DIR": str(tmp_path), "OPENAI_BASE_URL": mock_server.url,
           "OPENAI_API_KEY": "sk-test"}
    out = _run(["judge", "-e", "Paris is the capital. " * 300, "-a", "Paris",
                "--model", "openai:gpt-4o-mini"], env)
    assert out.returncode == 0, out.stderr
    assert re.search(r"tokens +\d,\d{3} prompt \+ \d+ completion;", out.stdout), out.stdout


def test_cli_judge_bounds_its_retries_as_assay_run_does(mock_server, tmp_path):
    """A failing endpoint costs ``--max-attempts`` calls, not the default six and their
    backoff; the score is an error (exit 1), not a zero."""
    mock_server.configure(faults={"500": 1.0})
    out = _run(["judge", "-e", "a", "-a", "b", "--model", f"{mock_server.url}#m",
                "--max-attempts", "2", "--cache", "off"], {"ASSAY_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 1, out.stderr
    assert out.stdout.startswith("error ") and "score " not in out.stdout
    assert mock_server.stats.requests == 2
    zero = _run(["judge", "-e", "a", "-a", "b", "--model", f"{mock_server.url}#m",
                 "--max-attempts", "0"], {"ASSAY_CACHE_DIR": str(tmp_path)})
    assert zero.returncode == 2 and "--max-attempts" in zero.stderr


def test_cli_judge_bad_input_is_one_clear_line_and_exit_2(tmp_path):
    env = {"ASSAY_CACHE_DIR": str(tmp_path)}
    out = _run(["judge", "-e", "a", "-a", "b", "--model", "nope:model"], env)
    assert out.returncode == 2
    assert "unknown provider 'nope'" in out.stderr and "Traceback" not in out.stderr
    env.pop("OPENAI_API_KEY", None)
    clean = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    missing = run_assay(["judge", "-e", "a", "-a", "b", "--model", "openai:gpt-4o-mini"],
                        env={**clean, **env}, timeout=60)
    assert missing.returncode == 2 and "OPENAI_API_KEY" in missing.stderr
    prompt = tmp_path / "p.md"
    prompt.write_text("Compare {{ActualOutput}} with {{Gold}}")
    bad = _run(["judge", "-e", "a", "-a", "b", "--prompt", str(prompt), "--model",
                "fake:x"], env)
    assert bad.returncode == 2 and "{{Gold}}" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("data", ["", "  "])
def test_an_empty_suite_path_is_no_data_not_the_current_directory(tmp_path, monkeypatch, data):
    """``evaluate("")`` searched the current directory for suites (``Path("")`` is ``.``) and
    said "no eval sets found" there."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(assay.ConfigError) as refused:
        assay.evaluate(data, evaluators=["exact_match"], store=tmp_path / "runs.db")
    assert refused.value.code == "missing_suite"
    assert "the path given is empty" in refused.value.message
