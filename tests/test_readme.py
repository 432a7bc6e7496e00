"""The README works as written: it opens with the setup and the CI command, and its tour runs
from the directories it names, against the mock server as the OpenAI endpoint. The rules for
every block (run, a file shown, or marked not run) are tests/docblocks.py's, shared with the
guide's tests in tests/test_docs.py."""

from __future__ import annotations

import pytest

from tests.docblocks import ROOT, Reader, copy_examples, env_for, read_blocks

BLOCKS = read_blocks(ROOT / "README.md")


def test_the_first_two_commands_are_the_setup_and_the_ci_command():
    bash = [b.code.strip() for b in BLOCKS if b.language == "bash"]
    assert bash[0] == (
        "bash scripts/setup.sh && cd examples/quickstart && ../../.venv/bin/assay run EVAL.yaml")
    assert bash[1] == "bash scripts/test.sh"
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_is_a_short_door_into_the_guide():
    """The README keeps what a newcomer needs first and links into the guide for the rest."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 200
    for page in ("docs/tutorial.md", "docs/concepts/runs.md", "docs/reference/cli.md",
                 "docs/reference/api.md", "docs/development.md"):
        assert f"]({page}" in text, page
    assert ".venv/bin/mkdocs serve" in text


@pytest.mark.process
def test_the_tour_runs_as_written(tmp_path, mock_server):
    """Every block of the README not marked otherwise, in order, in one copy of examples/."""
    reader = Reader(copy_examples(tmp_path), env_for(mock_server.url))
    ran = [block for block in BLOCKS if block.kind == "run"]
    try:
        for block in ran:
            reader.run(block)
    finally:
        reader.close()
    assert {b.language for b in ran} == {"bash", "python"}
    suite = tmp_path / "examples" / "suite"
    assert (suite / "results.jsonl").exists() and (suite / "report.xml").exists()
