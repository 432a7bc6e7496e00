"""No output of a command may be a file the command uses, whatever that file is to it.

Through the real ``assay`` command: the run store, the targets file and its ``.env``, Python
modules of targets and scorers, code-judge scripts, prompt files, recorded outputs, sidecars,
the response cache, labels, another output; for ``run``, ``rescore``, ``eval``, ``report``,
``calibrate``, ``convert`` and ``generate rubrics`` alike. Each is refused before anything runs
(exit 2), naming the option and what the file is, and the file is left as it was. Also here:
``convert`` replaces no file the command line did not name without ``--force``, an output that
cannot be written once the run is done is reported after the results, and ``~`` in a path is
the home directory.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.assay_process import run_assay

SUITE = """\
execution:
  target: x
  evaluators:
    - {name: same, type: exact_match}
    - {name: code, type: code_judge, script: [python3, judge.py]}
    - {name: by_file, type: python, function: scorer.py:same}
    - {name: by_name, type: python, function: scoring:same}
    - {name: quality, type: llm_judge, prompt: prompts/quality.md, model: "fake:judge"}
evalcases:
  - {id: a, input: hi, expected_output: hi}
"""


def project(root: Path) -> Path:
    """A project whose run reads every kind of file an output could be."""
    (root / ".assay").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "pkg").mkdir()
    files = {
        "agent.py": "def answer(q):\n    return q\n",
        "scorer.py": "def same(outputs):\n    return True\n",
        "scoring.py": "def same(outputs):\n    return True\n",
        "judge.py": "import json\nprint(json.dumps({'score': 1}))\n",
        "prompts/quality.md": "Is {{candidate_answer}} right for {{question}}?\n",
        "outputs.jsonl": json.dumps({"id": "a", "output": "hi"}) + "\n",
        ".env": "UNUSED=1\n",
        "s.yaml": SUITE,
        ".assay/targets.yaml": "targets:\n"
                               "  - {name: x, provider: python, function: agent:answer}\n"
                               "  - {name: rec, provider: recorded, path: outputs.jsonl}\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def assay(root: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(root / "cache"), "ASSAY_CACHE": "use"}
    env.pop("ASSAY_STORE_URL", None)
    if home is not None:
        env["HOME"] = str(home)
    return run_assay(args, cwd=root, env=env, timeout=120)


def runs_in(store: Path) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])


STORE = ("--store", "sqlite:///.assay/runs.db")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one stored run (and a cache file, from the judge's answer)."""
    root = project(tmp_path_factory.mktemp("outputs") / "p")
    done = assay(root, "run", "s.yaml", *STORE)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def first_run(root: Path) -> str:
    with sqlite3.connect(root / ".assay" / "runs.db") as conn:
        return str(conn.execute("SELECT id FROM runs ORDER BY created_at").fetchone()[0])


def refused(root: Path, done: subprocess.CompletedProcess[str], said: str,
            file: str) -> None:
    """Exit 2 before anything ran, the message naming the output and what the file is, and
    the file, the store and its runs as they were."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "error [output_is_input]: " + said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert (root / file).read_bytes() == BEFORE[file]
    assert runs_in(root / ".assay" / "runs.db") == 1


BEFORE: dict[str, bytes] = {}


@pytest.fixture(autouse=True)
def _remember(request: pytest.FixtureRequest) -> None:
    if "stored" in request.fixturenames:
        root = request.getfixturevalue("stored")
        for path in root.rglob("*"):
            if path.is_file() and "cache" not in path.parts:
                BEFORE[str(path.relative_to(root))] = path.read_bytes()


@pytest.mark.parametrize(("args", "said", "file"), [
    (["-o", ".assay/runs.db"], "--output .assay/runs.db is the run store", ".assay/runs.db"),
    (["--report", "html:.assay/runs.db"], "--report html:.assay/runs.db is the run store",
     ".assay/runs.db"),
    (["--junit", "agent.py"], "--junit agent.py is the Python module of target 'x'",
     "agent.py"),
    (["-o", "agent.py"], "--output agent.py is the Python module of target 'x'", "agent.py"),
    (["--report", "markdown:agent.py"],
     "--report markdown:agent.py is the Python module of target 'x'", "agent.py"),
    (["--junit", "./scorer.py"], "--junit scorer.py is the Python module of scorer 'by_file'",
     "scorer.py"),
    (["--junit", "scoring.py"], "--junit scoring.py is the Python module of scorer 'by_name'",
     "scoring.py"),
    (["--uipath-output", "judge.py"],
     "--uipath-output judge.py is the code-judge script of evaluator 'code'", "judge.py"),
    (["--junit", "prompts/quality.md"],
     "--junit prompts/quality.md is the prompt file of evaluator 'quality'",
     "prompts/quality.md"),
    (["--junit", ".env"], "--junit .env is the .env file of the targets file", ".env"),
    (["--junit", ".assay/targets.yaml"], "--junit .assay/targets.yaml is the targets file",
     ".assay/targets.yaml"),
    (["-o", "outputs.jsonl"], "--output outputs.jsonl is the recorded outputs of target 'rec'",
     "outputs.jsonl"),
    (["--junit", "s.yaml"], "--junit s.yaml is the suite file", "s.yaml"),
])
def test_run_refuses_an_output_that_is_a_file_the_run_uses(stored, args, said, file):
    refused(stored, assay(stored, "run", "s.yaml", *STORE, *args), said, file)


def test_a_link_to_a_file_the_run_uses_is_that_file(stored):
    link = stored / "link.py"
    link.symlink_to(stored / "agent.py")
    try:
        done = assay(stored, "run", "s.yaml", *STORE, "--junit", "link.py")
        refused(stored, done, f"--junit link.py is the Python module of target 'x' "
                f"({stored / 'agent.py'})", "agent.py")
    finally:
        link.unlink()


def test_the_response_cache_and_another_output_are_refused(stored):
    cache = next((stored / "cache").glob("*.sqlite"))
    before = cache.read_bytes()
    done = assay(stored, "run", "s.yaml", *STORE, "--junit", str(cache))
    assert done.returncode == 2 and f"--junit {cache} is the response cache" in done.stderr
    assert cache.read_bytes() == before
    done = assay(stored, "run", "s.yaml", *STORE, "-o", "out.xml", "--junit", "./out.xml")
    assert done.returncode == 2 and "error [output_collision]" in done.stderr
    assert not (stored / "out.xml").exists()


def test_resume_rescore_eval_and_report_refuse_the_run_files_too(stored):
    run = first_run(stored)
    refused(stored, assay(stored, "run", "--resume", run, *STORE, "--junit", "s.yaml"),
            "--junit s.yaml is the suite file", "s.yaml")
    refused(stored, assay(stored, "rescore", run, *STORE, "-o", ".assay/runs.db"),
            "--output .assay/runs.db is the run store", ".assay/runs.db")
    refused(stored, assay(stored, "rescore", run, *STORE, "--junit", "judge.py"),
            "--junit judge.py is the code-judge script of evaluator 'code'", "judge.py")
    refused(stored, assay(stored, "eval", "s.yaml", *STORE, "--out", "agent.py"),
            "--out agent.py is the Python module of target 'x'", "agent.py")
    refused(stored, assay(stored, "eval", "s.yaml", *STORE, "--output-file", "scoring.py"),
            "--output-file scoring.py is the Python module of scorer 'by_name'", "scoring.py")
    refused(stored, assay(stored, "report", run, *STORE, "--html", ".assay/runs.db"),
            "--html .assay/runs.db is the run store", ".assay/runs.db")


def test_calibrate_convert_and_rubrics_refuse_the_files_they_use(stored):
    (stored / "labels.csv").write_text("case_id,label\na,1\n")
    BEFORE["labels.csv"] = (stored / "labels.csv").read_bytes()
    run = first_run(stored)
    refused(stored, assay(stored, "calibrate", "--run", run, "--labels", "labels.csv",
                          "--evaluator", "quality", *STORE, "-o", "labels.csv"),
            "--output labels.csv is the labels file", "labels.csv")
    refused(stored, assay(stored, "calibrate", "--run", run, "--labels", "labels.csv",
                          "--evaluator", "quality", *STORE, "-o", ".assay/runs.db"),
            "--output .assay/runs.db is the run store", ".assay/runs.db")
    refused(stored, assay(stored, "convert", "s.yaml", "-o", "s.jsonl"),
            "the sidecar s.yaml is the suite file", "s.yaml")
    (stored / "r.yaml").write_text(SUITE.replace("expected_output: hi}",
                                                 "expected_outcome: says hi}"))
    BEFORE["r.yaml"] = (stored / "r.yaml").read_bytes()
    refused(stored, assay(stored, "generate", "rubrics", "r.yaml", "--out", "judge.py"),
            "--out judge.py is the code-judge script of evaluator 'code'", "judge.py")


def test_an_output_no_run_uses_is_written(stored):
    done = assay(stored, "run", "s.yaml", *STORE, "-o", "rows.jsonl", "--junit", "j.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (stored / "rows.jsonl").read_text().count("\n") == 1
    assert (stored / "j.xml").read_text().startswith("<?xml")


# -- convert replaces no file it was not told to ----------------------------------------------


def test_convert_keeps_a_sidecar_it_was_not_named_unless_forced(tmp_path):
    (tmp_path / "suite.yaml").write_text(
        "evaluator: exact_match\nevalcases:\n  - {id: a, input: hi, expected_output: hi}\n")
    (tmp_path / "cases.yaml").write_text("mine: true\n")
    done = assay(tmp_path, "convert", "suite.yaml", "-o", "cases.jsonl")
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("error [output_exists]: the sidecar cases.yaml exists and was not named on the "
            "command line") in done.stderr
    assert (tmp_path / "cases.yaml").read_text() == "mine: true\n"
    assert not (tmp_path / "cases.jsonl").exists()
    forced = assay(tmp_path, "convert", "suite.yaml", "-o", "cases.jsonl", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "evaluator: exact_match" in (tmp_path / "cases.yaml").read_text()


def test_convert_keeps_an_existing_default_output(tmp_path):
    (tmp_path / "suite.yaml").write_text(
        "evaluator: exact_match\nevalcases:\n  - {id: a, input: hi, expected_output: hi}\n")
    (tmp_path / "suite-cases.jsonl").write_text("mine\n")
    done = assay(tmp_path, "convert", "suite.yaml")
    assert done.returncode == 2
    assert "the output suite-cases.jsonl exists and was not named" in done.stderr
    assert (tmp_path / "suite-cases.jsonl").read_text() == "mine\n"
    named = assay(tmp_path, "convert", "suite.yaml", "-o", "suite-cases.jsonl")
    assert named.returncode == 0, named.stdout + named.stderr  # named: replaced


# -- an output that fails after the run -------------------------------------------------------


def test_an_output_that_fails_after_the_run_is_reported_after_the_results(tmp_path):
    # The agent turns the report's folder into a file while the run goes on: the report
    # cannot be written once the run is done, after it passed the check before the run.
    root = project(tmp_path / "p")
    (root / "agent.py").write_text(
        "import shutil\nfrom pathlib import Path\n"
        "def answer(q):\n"
        "    shutil.rmtree('reports', ignore_errors=True)\n"
        "    Path('reports').write_text('not a folder')\n"
        "    return q\n")
    (root / "s.yaml").write_text(
        "execution:\n  target: x\n  evaluators: [{name: same, type: exact_match}]\n"
        "evalcases:\n  - {id: a, input: hi, expected_output: hi}\n")
    done = assay(root, "run", "s.yaml", *STORE, "--junit", "reports/j.xml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1 case: " in done.stdout
    assert "stored in sqlite:///.assay/runs.db" in done.stdout
    assert "all gates passed" in done.stdout
    assert "error [unwritable_output]: cannot write --junit reports/j.xml" in done.stderr
    assert runs_in(root / ".assay" / "runs.db") == 1


# -- ~ is the home directory ------------------------------------------------------------------


def test_a_store_and_outputs_under_tilde_go_home(tmp_path):
    root = project(tmp_path / "p")
    home = tmp_path / "home"
    home.mkdir()
    (root / "s.yaml").write_text(
        "execution:\n  target: x\n  evaluators: [{name: same, type: exact_match}]\n"
        "evalcases:\n  - {id: a, input: hi, expected_output: hi}\n")
    done = assay(root, "run", "s.yaml", "--store=~/runs.db", "--junit=~/j.xml",
                 "--report", "markdown:~/r.md", home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert runs_in(home / "runs.db") == 1
    assert (home / "j.xml").is_file() and (home / "r.md").is_file()
    assert not (root / "~").exists()
    url = assay(root, "runs", "--store", "sqlite:///~/runs.db", home=home)
    assert url.returncode == 0 and "s" in url.stdout
    assert not (root / "~").exists()


def test_the_python_api_expands_tilde_in_a_store_path(tmp_path, monkeypatch):
    import assay as api

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = api.evaluate([{"id": "a", "input": "hi", "expected_output": "hi"}],
                          target=lambda q: q, evaluators=["exact_match"], store="~/x.db")
    assert result.summary.cases == 1
    assert runs_in(tmp_path / "home" / "x.db") == 1
    assert not (tmp_path / "~").exists()
