"""AgentV's ``.agentv/config.yaml`` ``guideline_patterns``: input files matching a pattern
(relative to the project root) are guideline files. A code judge reads them in
``guideline_files``, apart from ``input_files``; the agent reads their text in a leading
``[[ ## Guidelines ## ]]`` system message rather than inline in the user's message."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from assay.judges import EvalContext
from assay.suites.agentv_config import glob_regex, load_guideline_config
from assay.suites.evalyaml import SuiteError, load_eval_yaml
from assay.types.execution import Execution

DATA = Path(__file__).parent / "data" / "agentv"
PY = sys.executable


def project(tmp_path: Path, config: str | None) -> Path:
    """A git project with guideline and code files and an EVAL.yaml in ``evals/``."""
    (tmp_path / ".git").mkdir()
    if config is not None:
        (tmp_path / ".agentv").mkdir()
        (tmp_path / ".agentv" / "config.yaml").write_text(textwrap.dedent(config))
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "python.instructions.md").write_text("Always be concise.\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "evals").mkdir()
    suite = tmp_path / "evals" / "EVAL.yaml"
    suite.write_text(textwrap.dedent(f"""
        execution:
          evaluators:
            - {{name: echo, type: code_judge, script: [{PY}, {DATA / 'echo_payload.py'}]}}
        evalcases:
          - id: c
            expected_outcome: Reviews the code
            input_messages:
              - role: user
                content:
                  - {{type: file, value: ../prompts/python.instructions.md}}
                  - {{type: file, value: ../src/main.py}}
                  - {{type: text, value: Review this code}}
        """))
    return suite


async def test_guideline_files_are_apart_from_input_files(tmp_path, engine_factory):
    suite = load_eval_yaml(project(tmp_path, 'guideline_patterns: ["**/*.instructions.md"]\n'))
    case = suite.cases[0].case
    score = await suite.evaluators[0].evaluate(case, Execution(output="ok"),
                                               EvalContext(engine_factory()))
    received = score.details["received"]  # type: ignore[index]
    root = tmp_path.resolve()
    assert received["guideline_files"] == [str(root / "prompts" / "python.instructions.md")]
    assert received["input_files"] == [str(root / "src" / "main.py")]
    # The agent reads the guideline in a system message; the user's message has a marker.
    assert isinstance(case.input, list)
    system, user = case.input
    assert system.role == "system"
    assert system.text() == ("[[ ## Guidelines ## ]]\n\n<file path=\"python.instructions.md\">"
                             "\nAlways be concise.\n</file>")
    assert "Always be concise" not in user.text()
    assert "<Attached: ../prompts/python.instructions.md>" in user.text()
    assert "print('hi')" in user.text()


async def test_without_a_config_every_file_is_an_input_file(tmp_path, engine_factory):
    suite = load_eval_yaml(project(tmp_path, None))
    case = suite.cases[0].case
    score = await suite.evaluators[0].evaluate(case, Execution(output="ok"),
                                               EvalContext(engine_factory()))
    received = score.details["received"]  # type: ignore[index]
    assert received["guideline_files"] == []
    assert len(received["input_files"]) == 2
    assert isinstance(case.input, list) and len(case.input) == 1
    assert "Always be concise" in case.input[0].text()


def test_patterns_match_from_the_project_root_not_the_suite(tmp_path):
    # "prompts/*.md" names <root>/prompts/..., though the suite lives in evals/.
    suite = load_eval_yaml(project(tmp_path, "guideline_patterns: [prompts/*.md]\n"))
    assert len(suite.cases[0].case.metadata["guideline_files"]) == 1
    other = tmp_path / "other"
    other.mkdir()
    suite = load_eval_yaml(project(other, "guideline_patterns: ['*.md']\n"))
    assert "guideline_files" not in suite.cases[0].case.metadata  # *.md: top level only


def test_a_bad_config_is_a_located_problem(tmp_path):
    path = project(tmp_path, "guideline_patterns: '**/*.md'\n")
    with pytest.raises(SuiteError) as info:
        load_eval_yaml(path)
    message = info.value.message
    assert f"{tmp_path / '.agentv' / 'config.yaml'}:1:" in message
    assert "guideline_patterns must be a list of glob patterns" in message


def test_the_nearest_config_below_the_git_root_wins(tmp_path):
    project(tmp_path, "guideline_patterns: ['**/*.py']\n")
    (tmp_path / "evals" / ".agentv").mkdir()
    (tmp_path / "evals" / ".agentv" / "config.yaml").write_text(
        "guideline_patterns: ['**/*.instructions.md']\n")
    config, problems = load_guideline_config(tmp_path / "evals" / "EVAL.yaml")
    assert problems == []
    assert config.patterns == ("**/*.instructions.md",)
    assert config.root == tmp_path.resolve()


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("**/*.instructions.md", "python.instructions.md", True),
    ("**/*.instructions.md", "a/b/python.instructions.md", True),
    ("**/*.instructions.md", "a/.hidden/python.instructions.md", False),
    ("*.md", "a/b.md", False),
    ("prompts/{a,b}.md", "prompts/b.md", True),
    ("prompts/{a,b}.md", "prompts/c.md", False),
    ("docs/**", "docs/x/y.md", True),
    ("f[!ab].md", "fb.md", False),
    ("./x/?.md", "x/y.md", True),
])
def test_glob_patterns_as_agentv_writes_them(pattern, path, matches):
    assert bool(re.fullmatch(glob_regex(pattern), path)) is matches
