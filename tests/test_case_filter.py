"""A case filter that cannot select what it says is refused before a run starts, with the
same words from ``assay run --filter``, ``assay eval --eval-id`` and ``POST /runs``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import assay
from assay._util.case_filter import case_filter_problem
from assay.cli.app import app
from assay.errors import ConfigError
from tests.server_support import serve

SUITE = """evalcases:
  - id: case-1
    input: hi
    expected_output: hi
    evaluators:
      - {name: same, type: exact_match}
"""

BAD = [("[[[", "the '[' at character 1 opens a class that is never closed"),
       ("case-[0-9", "the '[' at character 6 opens a class that is never closed"),
       ("case-[9-0]", "the class at character 6 has the range 9-0, which runs backwards")]


@pytest.mark.parametrize(("pattern", "said"), BAD)
def test_a_bad_filter_is_a_400_naming_the_field_and_no_run(tmp_path: Path, pattern: str,
                                                           said: str) -> None:
    (tmp_path / "EVAL.yaml").write_text(SUITE)
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as client:
        refused = client.post("/runs", json={"suite": "EVAL.yaml", "filter": pattern})
        assert refused.status_code == 400, refused.text
        body = refused.json()
        assert body["code"] == "invalid_parameter"
        assert body["detail"].startswith("body field 'filter': "), body
        assert said in body["detail"] and "[[] for a literal [" in body["detail"]
        assert client.get("/runs").json()["total"] == 0


@pytest.mark.parametrize(("pattern", "said"), BAD)
@pytest.mark.parametrize("command", [["run", "--filter"], ["eval", "--eval-id"]])
def test_a_bad_filter_is_the_same_located_error_on_the_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], pattern: str,
        said: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "EVAL.yaml").write_text(SUITE)
    result = CliRunner().invoke(app, [command[0], "EVAL.yaml", command[1], pattern,
                                      "--store", f"sqlite:///{tmp_path / 'runs.db'}"])
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert f"{command[1]} '{pattern}': {said}" in flat, flat
    assert case_filter_problem(pattern) is not None and said in case_filter_problem(pattern)
    assert "Traceback" not in result.output
    assert not (tmp_path / "runs.db").exists() or "case-1" not in (
        tmp_path / "runs.db").read_bytes().decode("latin-1")


@pytest.mark.parametrize(("pattern", "said"), BAD)
def test_a_bad_filter_given_to_the_library_is_the_same_error(tmp_path: Path, pattern: str,
                                                             said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        assay.evaluate([{"id": "case-1", "input": "hi", "output": "hi",
                         "expected_output": "hi"}], evaluators=["exact_match"],
                       filter=pattern, store=tmp_path / "runs.db")
    assert str(raised.value).startswith(f"filter '{pattern}': {said}")
    assert raised.value.code == "invalid_option"


@pytest.mark.parametrize("pattern", ["case-*", "case-[0-9]", "[[]x", "[]]", "[!a-c]*", "?"])
def test_a_glob_fnmatch_reads_as_meant_is_taken(pattern: str) -> None:
    assert case_filter_problem(pattern) is None
